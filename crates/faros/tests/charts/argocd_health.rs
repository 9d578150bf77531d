//! The Argo CD health check for `Provider` (charts/faros/argocd/provider-health.lua), run by Debian's
//! Lua interpreter (`lua5.4`, which `.ci/run` installs) on a Provider in each state, the way Argo CD
//! runs it: `obj` set to the object, the script's returned table read.

use serde_json::{Value, json};

use super::root;

/// `value` as a Lua table constructor (JSON objects and arrays become tables, null nil).
fn lua(value: &Value) -> String {
    match value {
        Value::Null => "nil".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        // JSON string escapes are valid Lua escapes for what Kubernetes objects hold here.
        Value::String(s) => serde_json::to_string(s).unwrap(),
        Value::Array(items) => format!("{{{}}}", items.iter().map(lua).collect::<Vec<_>>().join(", ")),
        Value::Object(fields) => format!(
            "{{{}}}",
            fields
                .iter()
                .map(|(k, v)| format!("[{}] = {}", serde_json::to_string(k).unwrap(), lua(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// `(status, message)` the health check returns for `provider`.
fn health(provider: &Value) -> (String, String) {
    let script = root().join("charts/faros/argocd/provider-health.lua");
    let program = format!(
        "obj = {}\nlocal hs = assert(loadfile({}))()\nio.write(hs.status, \"\\n\", hs.message or \"\")",
        lua(provider),
        serde_json::to_string(&script.display().to_string()).unwrap()
    );
    let out = std::process::Command::new("lua5.4")
        .args(["-e", &program])
        .output()
        .unwrap_or_else(|e| panic!("running lua5.4 (apt-get install lua5.4; .ci/run does): {e}"));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let (status, message) = text.split_once('\n').unwrap();
    (status.to_string(), message.to_string())
}

fn provider(generation: u64, status: Value, deleting: bool) -> Value {
    let mut p = json!({
        "apiVersion": "admin.faros.sh/v1alpha1",
        "kind": "Provider",
        "metadata": {"name": "quickstart", "generation": generation},
        "spec": {},
    });
    if !status.is_null() {
        p["status"] = status;
    }
    if deleting {
        p["metadata"]["deletionTimestamp"] = json!("2025-01-01T00:00:00Z");
    }
    p
}

fn ready(status: &str, reason: &str, message: &str, observed: u64) -> Value {
    json!({
        "observedGeneration": observed,
        "conditions": [
            {"type": "EndpointsResolved", "status": "True", "reason": "EndpointsResolved", "message": ""},
            {"type": "Ready", "status": status, "reason": reason, "message": message},
        ],
        "secretRef": {"namespace": "default", "name": "quickstart-kubeconfig"},
    })
}

#[test]
fn provider_health_in_each_state() {
    let cases = [
        (
            "just applied",
            provider(1, Value::Null, false),
            "Progressing",
            "Waiting for the reconciler",
        ),
        (
            "provisioned",
            provider(1, ready("True", "Provisioned", "workspace ready", 1), false),
            "Healthy",
            "Provisioned: workspace ready",
        ),
        (
            "spec changed, not yet observed",
            provider(2, ready("True", "Provisioned", "workspace ready", 1), false),
            "Progressing",
            "Waiting for the reconciler to observe generation 2",
        ),
        (
            "status without observedGeneration",
            provider(1, json!({"conditions": []}), false),
            "Progressing",
            "Waiting for the reconciler to observe generation 1",
        ),
        (
            "no Ready condition yet",
            provider(1, json!({"observedGeneration": 1, "conditions": []}), false),
            "Progressing",
            "Waiting for the Ready condition",
        ),
        (
            "Ready unknown",
            provider(1, ready("Unknown", "Reconciling", "creating the workspace", 1), false),
            "Progressing",
            "creating the workspace",
        ),
        (
            "a failing step",
            provider(
                1,
                ready("False", "WorkspaceError", "workspace not Ready after 60s", 1),
                false,
            ),
            "Degraded",
            "WorkspaceError: workspace not Ready after 60s",
        ),
        (
            "an invalid name",
            provider(1, ready("False", "InvalidName", "not a DNS label", 1), false),
            "Degraded",
            "InvalidName: not a DNS label",
        ),
        (
            "tearing down (Ready reason Deleting)",
            provider(1, ready("False", "Deleting", "removing the workspace", 1), false),
            "Progressing",
            "Deleting: removing the workspace",
        ),
        (
            "deletionTimestamp set",
            provider(1, ready("True", "Provisioned", "", 1), true),
            "Progressing",
            "Being deleted: the reconciler tears down the provider workspace",
        ),
    ];
    for (name, p, status, message) in cases {
        assert_eq!(health(&p), (status.to_string(), message.to_string()), "{name}");
    }
}
