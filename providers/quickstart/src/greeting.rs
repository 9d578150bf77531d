//! The Greeting API and its controller: every Greeting in every bound tenant gets
//! `status.reply = "Hello, <name>!"`, `observedGeneration` and a `Ready` condition.

use std::sync::Arc;

use faros_sdk::prelude::*;
use faros_sdk::{kube, schemars, serde, serde_json, tracing};

/// API group (and APIExport name) of the quickstart provider.
pub const GROUP: &str = "quickstart.providers.faros.sh";
pub const VERSION: &str = "v1alpha1";
pub const KIND: &str = "Greeting";
pub const PLURAL: &str = "greetings";
/// Reason of `Ready=True`.
pub const REASON_REPLIED: &str = "Replied";

/// The Greeting resource for dynamic clients.
pub fn api_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(GROUP, VERSION, KIND), PLURAL)
}

/// The reply for `name`, with `message` appended when given.
pub fn reply(name: &str, message: Option<&str>) -> String {
    match message.map(str::trim).filter(|m| !m.is_empty()) {
        Some(m) => format!("Hello, {name}! {m}"),
        None => format!("Hello, {name}!"),
    }
}

/// The status `obj` should have, or `None` when it already has it. `now` (RFC 3339) is written as
/// `observedAt` and as the condition's transition time, but is not compared, so the controller's
/// own write does not trigger another one.
pub fn desired_status(obj: &DynamicObject, now: &str) -> Option<Value> {
    let spec = reconcile::spec_of(obj);
    let name = spec.get("name").and_then(Value::as_str).unwrap_or_default();
    let (reply, ready) = if name.is_empty() {
        (
            String::new(),
            Condition::new("Ready", false, "InvalidSpec", "spec.name is required"),
        )
    } else {
        let message = spec.get("message").and_then(Value::as_str);
        (reply(name, message), Condition::new("Ready", true, REASON_REPLIED, ""))
    };
    let status = json!({
        "reply": reply,
        "observedAt": now,
        "observedGeneration": obj.metadata.generation.unwrap_or(0),
        "conditions": reconcile::set_condition(obj, ready, now),
    });
    (!reconcile::unchanged(reconcile::status_of(obj), &status)).then_some(status)
}

/// Reconciles one Greeting through its tenant's virtual-workspace client. No finalizer: a Greeting
/// holds nothing outside kcp, and a finalizer would outlive a deleted provider and keep the tenant's
/// Disable from removing its binding ([`faros_sdk::finalizer`]).
pub async fn reconcile(obj: Arc<DynamicObject>, tenant: Tenant) -> Result<Action, kube::Error> {
    if let Some(status) = desired_status(&obj, &reconcile::now())
        && reconcile::patch_status(&tenant, &obj, json!({"status": status})).await? == Outcome::Updated
    {
        tracing::info!(greeting = %tenant.key, "replied");
    }
    Ok(Action::AwaitChange)
}

/// A Greeting as the backend and the MCP tools present it.
pub fn summary(obj: &DynamicObject) -> Value {
    json!({
        "namespace": obj.namespace(),
        "name": obj.name_any(),
        "spec": reconcile::spec_of(obj),
        "status": reconcile::status_of(obj),
    })
}

/// Every Greeting in the tenant `client` targets.
pub async fn list(client: Client) -> Result<Vec<Value>, Status> {
    let api: Api<DynamicObject> = Api::all_with(client, &api_resource());
    let list = api.list(&ListParams::default()).await?;
    Ok(list.items.iter().map(summary).collect())
}

/// What to create.
#[derive(Clone, Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(crate = "faros_sdk::serde", rename_all = "camelCase")]
#[schemars(crate = "faros_sdk::schemars")]
pub struct NewGreeting {
    /// Who to greet.
    pub name: String,
    /// Optional text appended to the reply.
    #[serde(default)]
    pub message: Option<String>,
    /// Namespace; `default` when omitted.
    #[serde(default)]
    pub namespace: Option<String>,
}

/// Creates a Greeting (generated name `greeting-…`) in the tenant `client` targets.
pub async fn create(client: Client, new: &NewGreeting) -> Result<Value, Status> {
    if new.name.trim().is_empty() {
        return Err(Status::bad_request("name is required"));
    }
    let ns = new
        .namespace
        .clone()
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "default".into());
    let api: Api<DynamicObject> = Api::namespaced_with(client, &ns, &api_resource());
    let mut spec = json!({"name": new.name});
    if let Some(m) = new.message.as_ref().filter(|m| !m.is_empty()) {
        spec["message"] = json!(m);
    }
    let obj: DynamicObject = serde_json::from_value(json!({
        "apiVersion": format!("{GROUP}/{VERSION}"),
        "kind": KIND,
        "metadata": {"generateName": "greeting-", "namespace": ns},
        "spec": spec,
    }))
    .map_err(|e| Status::internal(e.to_string()))?;
    let created = api.create(&PostParams::default(), &obj).await?;
    Ok(summary(&created))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn greeting(spec: Value, status: Value, generation: i64) -> DynamicObject {
        let mut o = DynamicObject::new("g", &api_resource()).within("default");
        o.metadata.generation = Some(generation);
        o.data = json!({"spec": spec, "status": status});
        o
    }

    #[test]
    fn replies() {
        assert_eq!(reply("World", None), "Hello, World!");
        assert_eq!(reply("World", Some("  ")), "Hello, World!");
        assert_eq!(reply("World", Some("Nice day.")), "Hello, World! Nice day.");
    }

    #[test]
    fn status_is_written_once_per_generation() {
        let now = "2026-11-29T12:00:00Z";
        let fresh = greeting(json!({"name": "World"}), Value::Null, 1);
        let status = desired_status(&fresh, now).unwrap();
        assert_eq!(
            status,
            json!({"reply": "Hello, World!", "observedAt": now, "observedGeneration": 1,
                "conditions": [{"type": "Ready", "status": "True", "reason": "Replied", "message": "",
                    "lastTransitionTime": now, "observedGeneration": 1}]})
        );
        let done = greeting(json!({"name": "World"}), status.clone(), 1);
        assert_eq!(
            desired_status(&done, "2026-11-29T12:00:05Z"),
            None,
            "own write is a no-op"
        );
        let edited = greeting(json!({"name": "Moon"}), status, 2);
        let next = desired_status(&edited, now).unwrap();
        assert_eq!(next["reply"], "Hello, Moon!");
        assert_eq!(next["observedGeneration"], 2);
        let invalid = greeting(json!({}), Value::Null, 1);
        assert_eq!(
            desired_status(&invalid, now).unwrap()["conditions"][0]["reason"],
            "InvalidSpec"
        );
    }
}
