//! A controller's writes never drop what it does not know: a field another writer (a newer revision
//! of the provider, or the tenant) set after the controller read the object survives the
//! controller's spec apply and status patch, and each write is recorded under the provider's field
//! manager. On the embedded kcp, through the export's virtual workspace as a provider reaches its
//! tenants.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::{Kcp, WAIT, note, provider_and_tenant};
use faros_sdk::controller::{Action, Controller, Endpoints};
use faros_sdk::reconcile::{self, Outcome};
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::json;
use tokio::sync::mpsc;

const MANAGER: &str = "notes-provider";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_fields_written_by_others_survive_the_controllers_writes() {
    let kcp = Kcp::start().await;
    let (url, _) = provider_and_tenant(&kcp, "provider", "tenant").await;
    let tenant_notes: Api<DynamicObject> = Api::namespaced_with(kcp.client("root:tenant").await, "default", &note());

    let (endpoints_tx, endpoints) = Endpoints::manual(vec![url]);
    let (done_tx, mut done) = mpsc::unbounded_channel();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let controller = Controller::new(kcp.factory().await, endpoints, note()).field_manager(MANAGER);
    let newer = tenant_notes.clone();
    let run = tokio::spawn(controller.run(
        move |obj: Arc<DynamicObject>, tenant| {
            let (newer, done_tx) = (newer.clone(), done_tx.clone());
            async move {
                if obj.data.pointer("/status/reply").is_some() {
                    return Ok(Action::AwaitChange);
                }
                // After the controller read `obj`, someone else writes fields it does not know.
                let spec = json!({"apiVersion": obj.types.as_ref().unwrap().api_version, "kind": "Note",
                    "metadata": {"name": "n"}, "spec": {"color": "blue"}});
                newer
                    .patch("n", &PatchParams::apply("newer-revision"), &Patch::Apply(&spec))
                    .await
                    .map_err(|e| e.to_string())?;
                newer
                    .patch_status(
                        "n",
                        &PatchParams::default(),
                        &Patch::Merge(json!({"status": {"shade": "dark"}})),
                    )
                    .await
                    .map_err(|e| e.to_string())?;
                // The controller writes from the object it read, now stale.
                let applied = reconcile::apply(
                    &tenant,
                    &obj,
                    json!({"metadata": {"labels": {"seen": "yes"}}, "spec": {"text": "1"}}),
                    true,
                )
                .await
                .map_err(|e| e.to_string())?;
                let patched = reconcile::update_status(&tenant, &obj, json!({"reply": "noted"}))
                    .await
                    .map_err(|e| e.to_string())?;
                let _ = done_tx.send((applied, patched));
                Ok::<_, String>(Action::AwaitChange)
            }
        },
        async move {
            let _ = stopped.await;
        },
    ));
    let outcomes = tokio::time::timeout(WAIT, done.recv())
        .await
        .expect("a reconcile")
        .unwrap();
    assert_eq!(outcomes, (Outcome::Updated, Outcome::Updated));
    let _ = stop.send(());
    run.await.unwrap().unwrap();
    drop(endpoints_tx);

    let stored = tenant_notes.get("n").await.unwrap();
    assert_eq!(
        (
            stored.data.pointer("/spec/text"),
            stored.data.pointer("/spec/color"),
            stored.data.pointer("/status/reply"),
            stored.data.pointer("/status/shade"),
        ),
        (
            Some(&json!("1")),
            Some(&json!("blue")),
            Some(&json!("noted")),
            Some(&json!("dark"))
        ),
        "the other writer's fields survive: {}",
        stored.data
    );
    assert_eq!(
        stored
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("seen"))
            .map(String::as_str),
        Some("yes")
    );
    let managers: Vec<(String, String, Option<String>)> = stored
        .metadata
        .managed_fields
        .unwrap_or_default()
        .into_iter()
        .map(|m| {
            (
                m.manager.unwrap_or_default(),
                m.operation.unwrap_or_default(),
                m.subresource,
            )
        })
        .filter(|(manager, _, _)| manager == MANAGER)
        .collect();
    assert_eq!(
        managers,
        vec![
            (MANAGER.to_string(), "Apply".to_string(), None),
            (MANAGER.to_string(), "Update".to_string(), Some("status".to_string())),
        ],
        "the spec is applied and the status patched as the provider"
    );
}
