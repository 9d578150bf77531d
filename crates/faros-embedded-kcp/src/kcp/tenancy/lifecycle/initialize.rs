//! Phase `Initializing`: the Workspace mirrors the LogicalCluster's initializers, the built-in ones
//! run, and once none are left both become Ready.

use serde_json::{Value, json};

use super::super::deletion;
use super::super::status::{Cond, initializers, set_condition, set_status_phase};
use super::create::default_bindings;
use super::plan::{self, InitializeStep, Initializer};
use super::{Next, WsKey, lc_key, mirror_initializers, trim_owner, update, workspace_type};
use crate::state::ServerState;

pub(super) async fn initialize(state: &ServerState, key: &WsKey, ws: &Value) -> Next {
    let object_key = key.object_key();
    let Some(cluster) = deletion::cluster_of_workspace(ws) else {
        return Next::Idle;
    };
    let Ok(Some(lc)) = state.store.get(&lc_key(&cluster)) else {
        return Next::Idle;
    };
    let now = crate::objects::now_rfc3339();
    let inits = initializers(&lc);
    let lc_phase = lc.pointer("/status/phase").and_then(Value::as_str).unwrap_or_default();
    let mut mirrored = ws.clone();
    mirror_initializers(&mut mirrored, &inits, &now);
    match plan::initialize_step(lc_phase, &inits, mirrored != *ws) {
        InitializeStep::WorkspaceReady => {
            // In kcp's order: the status turns Ready here; the metadata (the phase label, the
            // trimmed creator) follows in a write of its own (`PhaseStep::ReadyMetadata`). One
            // update of both would write the metadata first (`Client::update` writes the main
            // part first): a trimmed creator on a workspace not yet Ready.
            let mut ready = ws.clone();
            mirror_initializers(&mut ready, &[], &now);
            let cond = Cond {
                type_: "WorkspaceInitialized",
                status: true,
                reason: "",
                message: "",
                severity: "",
            };
            set_condition(&mut ready, &cond, &now);
            set_status_phase(&mut ready, "Ready");
            // Only the status differs, so `update` writes the status alone.
            update(state, &object_key, ws, ready, Next::Now).await
        }
        InitializeStep::MirrorInitializers => update(state, &object_key, ws, mirrored, Next::Now).await,
        InitializeStep::LogicalClusterReady => {
            let mut ready = lc.clone();
            if !ready.get("status").is_some_and(Value::is_object) {
                ready["status"] = json!({});
            }
            ready["status"]["phase"] = json!("Ready");
            if let Some(status) = ready["status"].as_object_mut() {
                status.remove("initializers");
            }
            trim_owner(&mut ready);
            update(state, &lc_key(&cluster), &lc, ready, Next::Now).await
        }
        InitializeStep::RunInitializers(inits) => run_initializers(state, ws, &cluster, &lc, &inits).await,
    }
}

/// Runs the first built-in initializer that completes and removes it from the LogicalCluster.
async fn run_initializers(state: &ServerState, ws: &Value, cluster: &str, lc: &Value, inits: &[String]) -> Next {
    let aliases = workspace_type(state, ws).map(|(_, a)| a).unwrap_or_default();
    for init in inits {
        let done = match plan::initializer(init) {
            // kcp's universal initializer creates namespaces `default` and `kube-system`, marked as
            // its bootstrap objects that are created once and then left to the workspace's owners.
            Initializer::Universal => {
                let mut done = true;
                for name in ["default", "kube-system"] {
                    let ns = json!({"apiVersion": "v1", "kind": "Namespace",
                        "metadata": {"name": name, "annotations": {"bootstrap.kcp.io/create-only": "true"}},
                        "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}});
                    done &= match crate::client::Client::system(state)
                        .create(cluster, "", "namespaces", ns)
                        .await
                    {
                        Ok(_) => true,
                        Err(e) => e.code == 409,
                    };
                }
                done
            }
            Initializer::DefaultBindings => {
                let outcome = default_bindings(state, cluster, &aliases, plan::binding_creator(lc)).await;
                if !outcome.errors.is_empty() {
                    return report_binding_errors(state, cluster, lc, &outcome.errors).await;
                }
                outcome.complete
            }
            Initializer::Foreign => false,
        };
        if done {
            let mut updated = lc.clone();
            let rest: Vec<&String> = inits.iter().filter(|i| *i != init).collect();
            updated["status"]["initializers"] = json!(rest);
            return update(state, &lc_key(cluster), lc, updated, Next::Now).await;
        }
    }
    Next::Idle
}

/// kcp's `APIBindingsInitialized=False` on the LogicalCluster when default APIBindings could not be
/// created (the creator may not bind an export): the workspace stays Initializing, and says why.
async fn report_binding_errors(state: &ServerState, cluster: &str, lc: &Value, errors: &[String]) -> Next {
    let message = match errors {
        [one] => format!("encountered errors: {one}"),
        many => format!("encountered errors: [{}]", many.join(", ")),
    };
    let mut updated = lc.clone();
    let cond = Cond {
        type_: "APIBindingsInitialized",
        status: false,
        reason: "APIBindingErrors",
        message: &message,
        severity: "Error",
    };
    set_condition(&mut updated, &cond, &crate::objects::now_rfc3339());
    update(state, &lc_key(cluster), lc, updated, Next::Idle).await
}
