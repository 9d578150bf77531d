//! The clients users bring, against a tenant workspace through the hub: kubectl's declarative
//! workflow (`apply -k`, `wait`, `diff`, server-side apply, `--prune`), helm as a client (install,
//! upgrade, rollback, uninstall of a chart of Greetings), the official Python `kubernetes` client,
//! and the official MCP SDKs (Python and TypeScript) on the workspace's MCP endpoint. Each uses
//! only what the hub hands a tenant: the workspace kubeconfig, the MCP URL, a token and the CA.
//!
//! Needs kubectl, helm 3 (`FAROS_HELM` or on PATH), python3 with `kubernetes` and `mcp`, and
//! `npm ci --prefix e2e/mcp-sdk`: `.ci/run` installs them all. Runs on every target.

use std::path::Path;

use faros_e2e::mcp_sdk::{Sdk, SdkClient};
use faros_e2e::{Platform, WAIT, eventually, kubectl, tool};
use serde_json::json;

const GROUP: &str = "quickstart.providers.faros.sh";
const HELM_HINT: &str = "helm 3 on PATH or FAROS_HELM; .ci/run installs it";
const PYTHON_HINT: &str = "python3 with `pip install kubernetes==<the version .ci/run pins>`";

fn greeting(name: &str, who: &str, run: &str) -> String {
    format!(
        "apiVersion: {GROUP}/v1alpha1\nkind: Greeting\nmetadata:\n  name: {name}\n  namespace: default\n  \
         labels:\n    e2e.faros.sh/run: {run}\nspec:\n  name: {who}\n"
    )
}

fn ok(what: &str, out: &std::process::Output) {
    assert!(
        out.status.success(),
        "{what}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The quickstart controller's reply to Greeting `name`, once it is `want`.
async fn reply_is(kubeconfig: &Path, name: &str, want: &str) {
    eventually(&format!("greeting {name} to reply {want:?}"), WAIT, || async {
        let out = kubectl(
            kubeconfig,
            &[
                "get",
                "greeting",
                name,
                "-n",
                "default",
                "-o",
                "jsonpath={.status.reply}",
            ],
            None,
        )
        .await?;
        Ok((String::from_utf8_lossy(&out.stdout) == want).then_some(()))
    })
    .await
    .unwrap();
}

async fn gone(kubeconfig: &Path, name: &str) {
    eventually(&format!("greeting {name} to be gone"), WAIT, || async {
        let out = kubectl(kubeconfig, &["get", "greeting", name, "-n", "default"], None).await?;
        Ok(String::from_utf8_lossy(&out.stderr).contains("NotFound").then_some(()))
    })
    .await
    .unwrap();
}

pub async fn run(p: &Platform) {
    p.provider_ready("quickstart").await.unwrap();
    let carol = p.add_user("carol").await.unwrap();
    let org = p.unique("clients");
    p.org_with_workspace(&carol, &org, "dev").await.unwrap();
    let enabled = p
        .enable(
            &carol,
            &org,
            "dev",
            "quickstart",
            json!([{"group": "", "resource": "configmaps"}]),
        )
        .await
        .unwrap();
    assert_eq!(enabled.status, 200, "{}", enabled.text);
    let kubeconfig = p.tenant_kubeconfig(&org, "dev", &carol).await.unwrap();
    let run = p.unique("run");

    kubectl_declarative(p, &kubeconfig, &run).await;
    helm_client(p, &kubeconfig, &run).await;
    python_client(&kubeconfig).await;
    mcp_sdks(p, &org, &carol.token).await;

    p.delete_org(&org, &carol).await.unwrap();
}

/// A kustomization of two Greetings: applied, waited for, diffed, changed server-side, pruned.
async fn kubectl_declarative(p: &Platform, kubeconfig: &Path, run: &str) {
    let dir = p.dir().join(format!("{run}-kustomize"));
    std::fs::create_dir_all(&dir).unwrap();
    let write = |file: &str, text: &str| std::fs::write(dir.join(file), text).unwrap();
    let dir_arg = dir.to_str().unwrap();
    write("a.yaml", &greeting("kust-a", "Ada", run));
    write("b.yaml", &greeting("kust-b", "Babbage", run));
    write("kustomization.yaml", "resources:\n- a.yaml\n- b.yaml\n");

    ok(
        "kubectl apply -k",
        &kubectl(kubeconfig, &["apply", "-k", dir_arg], None).await.unwrap(),
    );
    // `kubectl wait` on a field the provider's controller writes, through the hub's pass-through.
    let waited = kubectl(
        kubeconfig,
        &[
            "wait",
            "greeting/kust-a",
            "greeting/kust-b",
            "-n",
            "default",
            "--for=jsonpath={.status.reply}",
            "--timeout=60s",
        ],
        None,
    )
    .await
    .unwrap();
    ok("kubectl wait", &waited);
    reply_is(kubeconfig, "kust-a", "Hello, Ada!").await;

    let same = kubectl(kubeconfig, &["diff", "-k", dir_arg], None).await.unwrap();
    assert_eq!(same.status.code(), Some(0), "diff of what was applied: {same:?}");
    write("b.yaml", &greeting("kust-b", "Lovelace", run));
    let changed = kubectl(kubeconfig, &["diff", "-k", dir_arg], None).await.unwrap();
    assert_eq!(
        changed.status.code(),
        Some(1),
        "diff of a changed manifest: {changed:?}"
    );
    assert!(String::from_utf8_lossy(&changed.stdout).contains("Lovelace"));
    ok(
        "kubectl apply -k --server-side",
        &kubectl(
            kubeconfig,
            &["apply", "-k", dir_arg, "--server-side", "--force-conflicts"],
            None,
        )
        .await
        .unwrap(),
    );
    reply_is(kubeconfig, "kust-b", "Hello, Lovelace!").await;

    // One manifest leaves the kustomization: prune deletes its object, and only it.
    write("kustomization.yaml", "resources:\n- a.yaml\n");
    let selector = format!("e2e.faros.sh/run={run}");
    let allow = format!("{GROUP}/v1alpha1/Greeting");
    ok(
        "kubectl apply -k --prune",
        &kubectl(
            kubeconfig,
            &[
                "apply",
                "-k",
                dir_arg,
                "--prune",
                "-l",
                &selector,
                "--prune-allowlist",
                &allow,
            ],
            None,
        )
        .await
        .unwrap(),
    );
    gone(kubeconfig, "kust-b").await;
    ok(
        "kubectl delete -k",
        &kubectl(kubeconfig, &["delete", "-k", dir_arg], None).await.unwrap(),
    );
    gone(kubeconfig, "kust-a").await;
}

/// helm as a client of the workspace: its release records are Secrets there, its objects Greetings.
async fn helm_client(p: &Platform, kubeconfig: &Path, run: &str) {
    let helm = std::env::var("FAROS_HELM").unwrap_or_else(|_| "helm".into());
    let chart = p.dir().join(format!("{run}-chart"));
    std::fs::create_dir_all(chart.join("templates")).unwrap();
    std::fs::write(
        chart.join("Chart.yaml"),
        "apiVersion: v2\nname: greetings\nversion: 0.1.0\ndescription: Greetings for the clients scenario.\n",
    )
    .unwrap();
    std::fs::write(chart.join("values.yaml"), "who: Hopper\n").unwrap();
    std::fs::write(
        chart.join("templates/greeting.yaml"),
        format!(
            "apiVersion: {GROUP}/v1alpha1\nkind: Greeting\nmetadata:\n  name: {{{{ .Release.Name }}}}\n  \
             labels:\n    e2e.faros.sh/run: {run}\nspec:\n  name: {{{{ .Values.who }}}}\n"
        ),
    )
    .unwrap();
    let (kc, chart) = (kubeconfig.to_str().unwrap(), chart.to_str().unwrap());
    helm_ok(&helm, kc, "helm install", &["install", "helmed", chart]).await;
    reply_is(kubeconfig, "helmed", "Hello, Hopper!").await;
    helm_ok(
        &helm,
        kc,
        "helm upgrade",
        &["upgrade", "helmed", chart, "--set", "who=Grace"],
    )
    .await;
    reply_is(kubeconfig, "helmed", "Hello, Grace!").await;
    helm_ok(&helm, kc, "helm rollback", &["rollback", "helmed", "1"]).await;
    reply_is(kubeconfig, "helmed", "Hello, Hopper!").await;
    let history = tool(
        &helm,
        &["--kubeconfig", kc, "-n", "default", "history", "helmed", "-o", "json"],
        None,
        HELM_HINT,
    )
    .await
    .unwrap();
    ok("helm history", &history);
    let revisions: serde_json::Value = serde_json::from_slice(&history.stdout).unwrap();
    assert_eq!(revisions.as_array().map(Vec::len), Some(3), "{revisions}");
    helm_ok(&helm, kc, "helm uninstall", &["uninstall", "helmed", "--wait"]).await;
    gone(kubeconfig, "helmed").await;
}

/// `helm --kubeconfig <kc> -n default <args>`, which must succeed.
async fn helm_ok(helm: &str, kc: &str, what: &str, args: &[&str]) {
    let mut all = vec!["--kubeconfig", kc, "-n", "default"];
    all.extend_from_slice(args);
    ok(what, &tool(helm, &all, None, HELM_HINT).await.unwrap());
}

/// The official Python client: create a Greeting, read the controller's reply, delete it.
async fn python_client(kubeconfig: &Path) {
    let script = format!(
        r#"
import sys, time
from kubernetes import client, config
config.load_kube_config(config_file=sys.argv[1])
api = client.CustomObjectsApi()
args = ("{GROUP}", "v1alpha1", "default", "greetings")
api.create_namespaced_custom_object(*args, {{
    "apiVersion": "{GROUP}/v1alpha1", "kind": "Greeting",
    "metadata": {{"name": "from-python"}}, "spec": {{"name": "Turing"}}}})
names = [g["metadata"]["name"] for g in api.list_namespaced_custom_object(*args)["items"]]
assert "from-python" in names, names
deadline = time.monotonic() + 60
while True:
    reply = api.get_namespaced_custom_object(*args, "from-python").get("status", {{}}).get("reply")
    if reply == "Hello, Turing!":
        break
    if time.monotonic() > deadline:
        sys.exit(f"no reply within 60 s: {{reply!r}}")
    # The client has no watch helper for one object's field; a short poll with a deadline.
    time.sleep(0.2)
api.delete_namespaced_custom_object(*args, "from-python")
print("ok")
"#
    );
    let out = tool(
        "python3",
        &["-c", &script, kubeconfig.to_str().unwrap()],
        None,
        PYTHON_HINT,
    )
    .await
    .unwrap();
    ok("the Python kubernetes client", &out);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "ok");
}

/// Both official MCP SDKs on the workspace's MCP endpoint: quickstart's tools listed and called.
async fn mcp_sdks(p: &Platform, org: &str, token: &str) {
    let url = p.hub(&faros_core::names::mcp_path(org, "dev"));
    for sdk in Sdk::ALL {
        let client = SdkClient::start(sdk, &url, token, p.hub_ca(), p.dir()).await.unwrap();
        let tools = client.list().await.unwrap();
        assert!(
            tools.iter().any(|t| t == "quickstart__create_greeting"),
            "{}: {tools:?}",
            sdk.name()
        );
        let who = format!("{sdk:?}").to_lowercase();
        client
            .call("quickstart__create_greeting", json!({"name": format!("mcp-{who}")}))
            .await
            .unwrap();
        let listed = client.call("quickstart__list_greetings", json!({})).await.unwrap();
        assert!(listed.contains(&format!("mcp-{who}")), "{}: {listed}", sdk.name());
        client.close().await.unwrap();
    }
}
