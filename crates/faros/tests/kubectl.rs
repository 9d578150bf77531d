//! The installed kubectl against `faros dev`'s admin kubeconfig and against a static-token user.
#![allow(clippy::unwrap_used, clippy::expect_used)] // Tests fail loudly by design.

mod devproc;

use std::path::Path;
use std::process::{Command, Output, Stdio};

use faros_test_support::users::{static_token, write_token_file};
use serde_json::Value;

struct Kubectl<'a> {
    kubeconfig: &'a Path,
    cache: &'a Path,
    token: Option<&'a str>,
}

impl Kubectl<'_> {
    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new("kubectl");
        c.arg("--kubeconfig")
            .arg(self.kubeconfig)
            .arg("--cache-dir")
            .arg(self.cache);
        if let Some(t) = self.token {
            c.arg("--token").arg(t).arg("--user").arg("");
        }
        c.args(args);
        c
    }

    fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().expect("kubectl runs")
    }

    /// Runs and expects success; returns stdout.
    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "kubectl {args:?} failed:\nstdout: {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).to_string()
    }

    fn apply_stdin(&self, args: &[&str], yaml: &str) -> String {
        use std::io::Write;
        let mut child = self
            .cmd(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(yaml.as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "kubectl {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).to_string()
    }
}

#[test]
fn kubectl_session() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens.csv");
    let carol_token = static_token("carol-token-0123456789", "carol", "carol-uid", &["viewers"]);
    write_token_file(&tokens, &[carol_token]).unwrap();
    let dev = devproc::launch(&dir.path().join("state"))
        .token_file(&tokens)
        .start_blocking()
        .unwrap();
    let cache = dir.path().join("kubectl-cache");
    let k = Kubectl {
        kubeconfig: &dev.kubeconfig,
        cache: &cache,
        token: None,
    };

    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: demo\ndata:\n  greeting: hello\n";
    assert_eq!(
        k.apply_stdin(&["apply", "-f", "-"], cm).trim(),
        "configmap/demo created"
    );
    assert_eq!(
        k.apply_stdin(&["apply", "-f", "-"], cm).trim(),
        "configmap/demo unchanged"
    );
    let changed = cm.replace("hello", "bonjour");
    assert_eq!(
        k.apply_stdin(&["apply", "-f", "-"], &changed).trim(),
        "configmap/demo configured"
    );
    let ssa = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\ndata:\n  a: b\n";
    assert_eq!(
        k.apply_stdin(&["apply", "--server-side", "-f", "-"], ssa).trim(),
        "configmap/ssa serverside-applied"
    );

    let json: Value = serde_json::from_str(&k.ok(&["get", "configmap", "demo", "-o", "json"])).unwrap();
    assert_eq!(json["data"]["greeting"], "bonjour");
    assert!(json["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"].is_string());
    assert!(k.ok(&["get", "configmap", "demo", "-o", "yaml"]).contains("name: demo"));
    let table = k.ok(&["get", "configmaps"]);
    assert!(
        table.starts_with("NAME") && table.contains("demo") && table.contains("ssa"),
        "{table}"
    );

    assert_eq!(
        k.ok(&["label", "configmap", "demo", "env=dev"]).trim(),
        "configmap/demo labeled"
    );
    assert_eq!(
        k.ok(&["annotate", "configmap", "demo", "note=x"]).trim(),
        "configmap/demo annotated"
    );
    assert_eq!(
        k.ok(&[
            "patch",
            "configmap",
            "demo",
            "--type",
            "merge",
            "-p",
            r#"{"data":{"m":"1"}}"#
        ])
        .trim(),
        "configmap/demo patched"
    );
    assert_eq!(
        k.ok(&[
            "patch",
            "configmap",
            "demo",
            "--type",
            "json",
            "-p",
            r#"[{"op":"add","path":"/data/j","value":"2"}]"#
        ])
        .trim(),
        "configmap/demo patched"
    );
    assert_eq!(
        k.ok(&[
            "patch",
            "configmap",
            "demo",
            "--type",
            "strategic",
            "-p",
            r#"{"data":{"s":"3"}}"#
        ])
        .trim(),
        "configmap/demo patched"
    );
    let json: Value = serde_json::from_str(&k.ok(&["get", "configmap", "demo", "-o", "json"])).unwrap();
    assert_eq!(json["metadata"]["labels"]["env"], "dev");
    assert_eq!(json["metadata"]["annotations"]["note"], "x");
    for (key, value) in [("m", "1"), ("j", "2"), ("s", "3")] {
        assert_eq!(json["data"][key], value);
    }

    // get -w ends when its request times out, after printing the current state.
    let watched = k.run(&["get", "configmaps", "--watch", "--request-timeout=2s"]);
    let out = String::from_utf8_lossy(&watched.stdout);
    assert!(out.contains("demo"), "{out}");

    // wait --for=delete with a concurrent delete.
    let waiter = k
        .cmd(&["wait", "--for=delete", "configmap/ssa", "--timeout=30s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    assert_eq!(
        k.ok(&["delete", "configmap", "ssa", "--wait"]).trim(),
        "configmap \"ssa\" deleted"
    );
    let waited = waiter.wait_with_output().unwrap();
    assert!(
        waited.status.success(),
        "wait failed: {}",
        String::from_utf8_lossy(&waited.stderr)
    );
    assert_eq!(
        k.ok(&["delete", "configmap", "demo", "--wait"]).trim(),
        "configmap \"demo\" deleted"
    );

    // kubectl's generators post protobuf bodies.
    assert_eq!(k.ok(&["create", "namespace", "team"]).trim(), "namespace/team created");
    assert_eq!(
        k.ok(&["-n", "team", "create", "configmap", "lit", "--from-literal=a=b"])
            .trim(),
        "configmap/lit created"
    );
    assert_eq!(
        k.ok(&["-n", "team", "create", "secret", "generic", "s", "--from-literal=k=v"])
            .trim(),
        "secret/s created"
    );
    assert_eq!(
        k.ok(&["-n", "team", "create", "serviceaccount", "robot"]).trim(),
        "serviceaccount/robot created"
    );
    assert_eq!(
        k.ok(&[
            "-n",
            "team",
            "create",
            "role",
            "r",
            "--verb=get",
            "--resource=configmaps"
        ])
        .trim(),
        "role.rbac.authorization.k8s.io/r created"
    );
    assert_eq!(
        k.ok(&[
            "-n",
            "team",
            "create",
            "rolebinding",
            "rb",
            "--role=r",
            "--serviceaccount=team:robot"
        ])
        .trim(),
        "rolebinding.rbac.authorization.k8s.io/rb created"
    );
    let secret: Value = serde_json::from_str(&k.ok(&["-n", "team", "get", "secret", "s", "-o", "json"])).unwrap();
    assert_eq!(secret["data"]["k"], "dg==");
    let lit: Value = serde_json::from_str(&k.ok(&["-n", "team", "get", "configmap", "lit", "-o", "json"])).unwrap();
    assert_eq!(lit["data"]["a"], "b");
    let rb: Value = serde_json::from_str(&k.ok(&["-n", "team", "get", "rolebinding", "rb", "-o", "json"])).unwrap();
    assert_eq!(rb["subjects"][0]["name"], "robot");
    assert_eq!(rb["roleRef"]["name"], "r");
    assert_eq!(
        k.ok(&["delete", "namespace", "team", "--wait"]).trim(),
        "namespace \"team\" deleted"
    );

    assert_eq!(k.ok(&["auth", "can-i", "create", "secrets"]).trim(), "yes");
    let resources = k.ok(&["api-resources"]);
    for r in ["configmaps", "namespaces", "clusterrolebindings", "leases"] {
        assert!(resources.contains(r), "api-resources lacks {r}:\n{resources}");
    }

    // A static-token user without bindings is denied with Kubernetes' text.
    let carol = Kubectl {
        kubeconfig: &dev.kubeconfig,
        cache: &cache,
        token: Some("carol-token-0123456789"),
    };
    let denied = carol.run(&["get", "configmaps"]);
    assert!(!denied.status.success());
    let stderr = String::from_utf8_lossy(&denied.stderr);
    assert!(
        stderr.contains("configmaps is forbidden: User \"carol\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"default\""),
        "{stderr}"
    );
    // kubectl prints the review's reason after "no": kcp's authorizer gives "access denied".
    let can = carol.run(&["auth", "can-i", "list", "configmaps"]);
    assert_eq!(String::from_utf8_lossy(&can.stdout).trim(), "no - access denied");
    assert_eq!(
        k.ok(&[
            "create",
            "clusterrolebinding",
            "viewers",
            "--clusterrole=view",
            "--group=viewers"
        ])
        .trim(),
        "clusterrolebinding.rbac.authorization.k8s.io/viewers created"
    );
    assert_eq!(carol.ok(&["auth", "can-i", "list", "configmaps"]).trim(), "yes");
    carol.ok(&["get", "configmaps"]);
}
