//! client-go against the embedded kcp: kubectl 1.32 (whose typed clients speak protobuf) runs
//! get, create, apply and delete of built-in kinds at `--v=8`, and its log must show protobuf
//! answers where it asked for them and no fallback or decode trouble anywhere; its typed Events
//! watch reads a protobuf watch stream.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::PathBuf;

use common::TestServer;

/// Lines of a `--v=8` log that mean client-go had to fall back or could not decode an answer.
fn trouble(log: &str) -> Vec<&str> {
    const SIGNS: &[&str] = &[
        "falling back",
        "fallback",
        "failed to decode",
        "unable to decode",
        "decoding error",
        "couldn't get",
        "unable to retrieve",
        "error:",
        "response status: 406",
        "response status: 415",
    ];
    log.lines()
        // Bodies are printed verbatim and may contain anything.
        .filter(|l| !l.contains("Response Body") && !l.contains("Request Body") && !l.starts_with('\t'))
        .filter(|l| {
            let l = l.to_ascii_lowercase();
            SIGNS.iter().any(|s| l.contains(s))
        })
        .collect()
}

/// The `Content-Type` of every answer in a `--v=8` log, in order.
fn answer_types(log: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_response = false;
    for l in log.lines() {
        if l.contains("Response Headers:") {
            in_response = true;
        } else if l.contains("Request Headers:") || l.contains("Response Body") {
            in_response = false;
        } else if in_response && let Some((_, v)) = l.split_once("Content-Type: ") {
            out.push(v.trim().to_string());
        }
    }
    out
}

struct Kubectl {
    kubeconfig: PathBuf,
}

impl Kubectl {
    /// Runs kubectl at `--v=8` off the runtime (the server answers on it); returns stdout and the log.
    async fn run(&self, args: &[&str], stdin: Option<&str>) -> (String, String) {
        let mut cmd = tokio::process::Command::new("kubectl");
        cmd.arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--v=8")
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = cmd.spawn().expect("kubectl is installed");
        if let Some(input) = stdin {
            use tokio::io::AsyncWriteExt;
            child.stdin.take().unwrap().write_all(input.as_bytes()).await.unwrap();
        }
        drop(child.stdin.take());
        let out = child.wait_with_output().await.unwrap();
        let (stdout, log) = (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        );
        assert!(out.status.success(), "kubectl {args:?} failed:\n{stdout}\n{log}");
        let bad = trouble(&log);
        assert!(
            bad.is_empty(),
            "kubectl {args:?} fell back or failed to decode:\n{}",
            bad.join("\n")
        );
        (stdout, log)
    }
}

const MANIFEST: &str = "apiVersion: v1
kind: ConfigMap
metadata: {name: applied, namespace: go}
data: {a: b}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: applied, namespace: go}
rules: [{apiGroups: [\"\"], resources: [configmaps], verbs: [get]}]
---
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: applied, namespace: go}
spec: {holderIdentity: me, leaseDurationSeconds: 15, renewTime: \"2026-01-02T03:04:05.123456Z\"}
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_uses_protobuf_for_built_in_kinds_without_falling_back() {
    let srv = TestServer::start().await;
    let kubeconfig = srv.dir.path().join("admin.kubeconfig");
    std::fs::write(&kubeconfig, srv.server.admin_kubeconfig()).unwrap();
    let k = Kubectl { kubeconfig };

    // Typed clients: protobuf bodies in, protobuf answers out.
    let typed: &[&[&str]] = &[
        &["create", "namespace", "go"],
        &["create", "configmap", "cm", "-n", "go", "--from-literal=k=v"],
        &["create", "secret", "generic", "s", "-n", "go", "--from-literal=k=v"],
        &["create", "serviceaccount", "sa", "-n", "go"],
        &["create", "role", "r", "-n", "go", "--verb=get", "--resource=configmaps"],
        &[
            "create",
            "rolebinding",
            "rb",
            "-n",
            "go",
            "--role=r",
            "--serviceaccount=go:sa",
        ],
        &["create", "clusterrole", "cr", "--verb=get", "--resource=secrets"],
        &[
            "create",
            "clusterrolebinding",
            "crb",
            "--clusterrole=cr",
            "--user=alice",
        ],
    ];
    for args in typed {
        let (_, log) = k.run(args, None).await;
        assert!(
            answer_types(&log)
                .iter()
                .any(|t| t == "application/vnd.kubernetes.protobuf"),
            "kubectl {args:?} got no protobuf answer: {:?}",
            answer_types(&log)
        );
    }
    let (out, _) = k.run(&["auth", "can-i", "get", "configmaps", "-n", "go"], None).await;
    assert_eq!(out.trim(), "yes");
    // SelfSubjectReview and SelfSubjectRulesReview, posted as protobuf by kubectl.
    let (out, _) = k
        .run(&["auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"], None)
        .await;
    assert_eq!(out.trim(), "admin");
    let (out, _) = k.run(&["auth", "can-i", "--list", "-n", "go"], None).await;
    assert!(
        out.contains("Resources") && out.contains("*.*"),
        "kubectl auth can-i --list: {out}"
    );

    // Unstructured clients (apply, get, delete): JSON, and nothing falls back either.
    k.run(&["apply", "-f", "-"], Some(MANIFEST)).await;
    k.run(&["apply", "--server-side", "-f", "-"], Some(MANIFEST)).await;
    let (out, _) = k
        .run(
            &["get", "configmap", "applied", "-n", "go", "-o", "jsonpath={.data.a}"],
            None,
        )
        .await;
    assert_eq!(out, "b");
    let (out, _) = k
        .run(
            &[
                "get",
                "lease",
                "applied",
                "-n",
                "go",
                "-o",
                "jsonpath={.spec.renewTime}",
            ],
            None,
        )
        .await;
    assert_eq!(out, "2026-01-02T03:04:05.123456Z");
    let (out, _) = k
        .run(&["get", "configmaps,secrets,roles,rolebindings", "-n", "go"], None)
        .await;
    assert!(out.contains("configmap/cm") && out.contains("secret/s"), "{out}");
    for args in [
        &["delete", "-f", "-"][..],
        &["delete", "configmap", "cm", "-n", "go"],
        &["delete", "secret", "s", "-n", "go"],
        &["delete", "clusterrolebinding", "crb"],
        &["delete", "clusterrole", "cr"],
    ] {
        let stdin = (args[1] == "-f").then_some(MANIFEST);
        k.run(args, stdin).await;
    }
    // (`-o name` would ask for plain JSON and then log that its printer could not read a Table: a
    // kubectl-side message whatever the server, so a JSONPath it is.)
    let (out, _) = k
        .run(
            &[
                "get",
                "configmaps",
                "-n",
                "go",
                "-o",
                "jsonpath={.items[*].metadata.name}",
            ],
            None,
        )
        .await;
    let left: Vec<&str> = out.split_whitespace().collect();
    assert!(
        !left.contains(&"cm") && !left.contains(&"applied"),
        "deleted ConfigMaps remain: {left:?}"
    );
}

const EVENT: &str = "apiVersion: v1
kind: Event
metadata: {name: NAME, namespace: default}
involvedObject: {kind: ConfigMap, name: x, namespace: default}
reason: Tested
message: MESSAGE
type: Normal
count: 1
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_events_watch_reads_a_protobuf_watch_stream() {
    use tokio::io::AsyncBufReadExt;
    let srv = TestServer::start().await;
    let kubeconfig = srv.dir.path().join("admin.kubeconfig");
    std::fs::write(&kubeconfig, srv.server.admin_kubeconfig()).unwrap();
    let k = Kubectl {
        kubeconfig: kubeconfig.clone(),
    };
    let event = |name: &str, message: &str| EVENT.replace("NAME", name).replace("MESSAGE", message);
    k.run(&["apply", "-f", "-"], Some(&event("first", "before-the-watch")))
        .await;
    let log = srv.dir.path().join("watch.log");
    let mut watch = tokio::process::Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args(["events", "-n", "default", "--watch", "--v=8"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::fs::File::create(&log).unwrap())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(watch.stdout.take().unwrap()).lines();
    let mut next_line = async || {
        tokio::time::timeout(std::time::Duration::from_secs(20), lines.next_line())
            .await
            .expect("kubectl events printed a line in time")
            .unwrap()
            .expect("kubectl events is still running")
    };
    while !next_line().await.contains("before-the-watch") {}
    // An event created after the list arrives through the watch.
    k.run(&["apply", "-f", "-"], Some(&event("second", "through-the-watch")))
        .await;
    while !next_line().await.contains("through-the-watch") {}
    watch.kill().await.unwrap();
    let log = std::fs::read_to_string(&log).unwrap();
    assert!(
        answer_types(&log)
            .iter()
            .any(|t| t == "application/vnd.kubernetes.protobuf;stream=watch"),
        "the watch was not protobuf: {:?}",
        answer_types(&log)
    );
    let bad = trouble(&log);
    assert!(
        bad.is_empty(),
        "kubectl events fell back or failed to decode:\n{}",
        bad.join("\n")
    );
}
