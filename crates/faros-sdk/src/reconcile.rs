//! The chores every reconcile repeats: build the status an object should have, write it only when it
//! differs from what the object already has, keep conditions' transition times, and treat an object
//! deleted meanwhile as done.
//!
//! ```no_run
//! use std::sync::Arc;
//!
//! use faros_sdk::prelude::*;
//!
//! async fn reconcile(obj: Arc<DynamicObject>, tenant: Tenant) -> Result<Action, kube::Error> {
//!     let ready = Condition::new("Ready", true, "Replied", "");
//!     let now = reconcile::now();
//!     let status = json!({"reply": "…", "observedAt": now,
//!         "conditions": reconcile::set_condition(&obj, ready, &now)});
//!     reconcile::update_status(&tenant, &obj, json!({"status": status})).await?;
//!     Ok(Action::AwaitChange)
//! }
//! ```
//!
//! "Differs" ignores [`VOLATILE_FIELDS`] (timestamps a reconcile writes each time it runs), so the
//! controller's own write, which comes back as a watch event, does not cause another write.
//!
//! No write here replaces a whole object: spec and metadata go by server-side apply ([`apply`]),
//! status by a merge patch of the status subresource ([`patch_status`]), both under the provider's
//! field manager ([`Tenant::field_manager`]). A provider's older revision may still run while a newer
//! one serves (or a tenant may write fields the controller does not know): a full replace from the
//! object it read would drop what it does not know, a patch sends only what it sets.

use kube::ResourceExt;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};

use crate::controller::Tenant;

/// Status fields (at any depth) that [`unchanged`] does not compare: they record when, not what.
pub const VOLATILE_FIELDS: &[&str] = &["observedAt", "lastTransitionTime", "lastUpdateTime"];

/// What [`update_status`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The status was patched.
    Updated,
    /// The object already had this status (ignoring [`VOLATILE_FIELDS`]); nothing was written.
    Unchanged,
    /// The object was deleted meanwhile (404); its delete event drops it from the queue.
    Gone,
}

/// The current time, RFC 3339 to the second, as Kubernetes writes timestamps.
pub fn now() -> String {
    let now = jiff::Timestamp::now();
    now.round(jiff::Unit::Second).unwrap_or(now).to_string()
}

/// `obj.status`, or `null`.
pub fn status_of(obj: &DynamicObject) -> &Value {
    obj.data.get("status").unwrap_or(&Value::Null)
}

/// `obj.spec`, or `null`.
pub fn spec_of(obj: &DynamicObject) -> &Value {
    obj.data.get("spec").unwrap_or(&Value::Null)
}

/// Whether `current` and `desired` say the same, ignoring [`VOLATILE_FIELDS`] at any depth.
pub fn unchanged(current: &Value, desired: &Value) -> bool {
    strip_volatile(current) == strip_volatile(desired)
}

fn strip_volatile(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| !VOLATILE_FIELDS.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), strip_volatile(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(strip_volatile).collect()),
        other => other.clone(),
    }
}

/// A status condition (`type`, `status`, `reason`, `message`, `observedGeneration`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Condition {
    pub type_: String,
    pub status: bool,
    pub reason: String,
    pub message: String,
    /// The generation it was computed for; [`set_condition`] fills it from the object when `None`.
    pub observed_generation: Option<i64>,
}

impl Condition {
    pub fn new(type_: &str, status: bool, reason: &str, message: &str) -> Self {
        Self {
            type_: type_.into(),
            status,
            reason: reason.into(),
            message: message.into(),
            observed_generation: None,
        }
    }
}

/// The status value of condition `type_` in `status.conditions` (`"True"`, `"False"`, `"Unknown"`).
pub fn condition_status<'a>(status: &'a Value, type_: &str) -> Option<&'a str> {
    find_condition(status, type_).and_then(|c| c.get("status").and_then(Value::as_str))
}

fn find_condition<'a>(status: &'a Value, type_: &str) -> Option<&'a Value> {
    status
        .get("conditions")
        .and_then(Value::as_array)?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(type_))
}

/// `obj`'s `status.conditions` with `condition` set: other types are kept, and
/// `lastTransitionTime` is `now` only when the condition's status changes (else the old one).
pub fn set_condition(obj: &DynamicObject, mut condition: Condition, now: &str) -> Value {
    let status = status_of(obj);
    let generation = condition
        .observed_generation
        .take()
        .unwrap_or(obj.metadata.generation.unwrap_or(0));
    let value = if condition.status { "True" } else { "False" };
    let since = find_condition(status, &condition.type_)
        .filter(|c| c.get("status").and_then(Value::as_str) == Some(value))
        .and_then(|c| c.get("lastTransitionTime").cloned())
        .unwrap_or_else(|| json!(now));
    let mut conditions: Vec<Value> = status
        .get("conditions")
        .and_then(Value::as_array)
        .map(|cs| {
            cs.iter()
                .filter(|c| c.get("type").and_then(Value::as_str) != Some(condition.type_.as_str()))
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    conditions.push(json!({
        "type": condition.type_,
        "status": value,
        "reason": condition.reason,
        "message": condition.message,
        "lastTransitionTime": since,
        "observedGeneration": generation,
    }));
    Value::Array(conditions)
}

/// Writes `desired` as `obj`'s status (a merge patch of the status subresource) through the tenant's
/// client, unless [`unchanged`]; a 404 (deleted meanwhile) is [`Outcome::Gone`], not an error.
pub async fn update_status(tenant: &Tenant, obj: &DynamicObject, desired: Value) -> Result<Outcome, kube::Error> {
    if unchanged(status_of(obj), &desired) {
        return Ok(Outcome::Unchanged);
    }
    patch_status(tenant, obj, json!({ "status": desired })).await
}

/// Merge-patches `obj`'s status subresource with `patch` (`{"status": …}`) through the tenant's
/// client, tolerating 404. Status fields the patch does not name stay as they are.
pub async fn patch_status(tenant: &Tenant, obj: &DynamicObject, patch: Value) -> Result<Outcome, kube::Error> {
    let params = PatchParams {
        field_manager: Some(tenant.field_manager.to_string()),
        ..PatchParams::default()
    };
    ignore_not_found(
        api_of(tenant, obj)
            .patch_status(&obj.name_any(), &params, &Patch::Merge(&patch))
            .await
            .map(|_| Outcome::Updated),
    )
}

/// Server-side applies `fields` (e.g. `{"spec": {…}}` or `{"metadata": {"labels": {…}}}`) to `obj`
/// as the provider's field manager, through the tenant's client, tolerating 404. The applied
/// configuration is the set of fields the controller owns: fields others own, and fields the
/// controller does not know, stay. `force` takes over fields another manager set (a controller
/// that owns a field says so); without it such a field is a 409 conflict.
pub async fn apply(tenant: &Tenant, obj: &DynamicObject, fields: Value, force: bool) -> Result<Outcome, kube::Error> {
    let mut body = json!({
        "apiVersion": tenant.resource.api_version,
        "kind": tenant.resource.kind,
        "metadata": {"name": obj.name_any()},
    });
    if let Some(ns) = obj.namespace() {
        body["metadata"]["namespace"] = json!(ns);
    }
    if let Value::Object(map) = fields {
        for (k, v) in map {
            match (k.as_str(), v) {
                ("metadata", Value::Object(meta)) => {
                    for (mk, mv) in meta {
                        body["metadata"][mk] = mv;
                    }
                }
                (_, v) => body[k] = v,
            }
        }
    }
    let mut params = PatchParams::apply(&tenant.field_manager);
    params.force = force;
    ignore_not_found(
        api_of(tenant, obj)
            .patch(&obj.name_any(), &params, &Patch::Apply(&body))
            .await
            .map(|_| Outcome::Updated),
    )
}

fn api_of(tenant: &Tenant, obj: &DynamicObject) -> Api<DynamicObject> {
    match obj.namespace() {
        Some(ns) => Api::namespaced_with(tenant.client.clone(), &ns, &tenant.resource),
        None => Api::all_with(tenant.client.clone(), &tenant.resource),
    }
}

/// `Ok(Outcome::Gone)` for a 404, else `result` unchanged.
pub fn ignore_not_found(result: Result<Outcome, kube::Error>) -> Result<Outcome, kube::Error> {
    match result {
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(Outcome::Gone),
        other => other,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    use kube::api::ApiResource;

    fn object(status: Value, generation: i64) -> DynamicObject {
        let ar = ApiResource {
            group: "notes.providers.faros.sh".into(),
            version: "v1alpha1".into(),
            api_version: "notes.providers.faros.sh/v1alpha1".into(),
            kind: "Note".into(),
            plural: "notes".into(),
        };
        let mut o = DynamicObject::new("n", &ar).within("default");
        o.metadata.generation = Some(generation);
        o.data = json!({"spec": {}, "status": status});
        o
    }

    #[test]
    fn unchanged_ignores_timestamps_only() {
        let a = json!({"words": 2, "observedAt": "t1", "conditions": [{"type": "Ready", "lastTransitionTime": "t1"}]});
        let b = json!({"words": 2, "observedAt": "t2", "conditions": [{"type": "Ready", "lastTransitionTime": "t2"}]});
        let c = json!({"words": 3, "observedAt": "t1", "conditions": [{"type": "Ready", "lastTransitionTime": "t1"}]});
        for (current, desired, want) in [(&a, &b, true), (&a, &c, false), (&Value::Null, &a, false)] {
            assert_eq!(unchanged(current, desired), want, "{current} vs {desired}");
        }
    }

    #[test]
    fn conditions_keep_their_transition_time_while_the_status_holds() {
        let fresh = object(Value::Null, 1);
        let set = set_condition(&fresh, Condition::new("Ready", true, "Counted", ""), "t1");
        assert_eq!(
            set,
            json!([{"type": "Ready", "status": "True", "reason": "Counted", "message": "",
                "lastTransitionTime": "t1", "observedGeneration": 1}])
        );
        let other = json!({"type": "Synced", "status": "True"});
        let ready = object(json!({"conditions": [other.clone(), set[0].clone()]}), 2);
        let again = set_condition(&ready, Condition::new("Ready", true, "Counted", ""), "t2");
        assert_eq!(again[0], other, "other types are kept");
        assert_eq!(
            (
                again[1]["lastTransitionTime"].as_str(),
                again[1]["observedGeneration"].as_i64()
            ),
            (Some("t1"), Some(2))
        );
        let flipped = set_condition(&ready, Condition::new("Ready", false, "Empty", "no text"), "t3");
        assert_eq!(flipped[1]["lastTransitionTime"], "t3");
        assert_eq!(
            condition_status(&json!({"conditions": flipped}), "Ready"),
            Some("False")
        );
    }

    #[test]
    fn not_found_is_gone() {
        let gone = kube::Error::Api(
            kube::core::Status::failure("not found", "NotFound")
                .with_code(404)
                .boxed(),
        );
        assert_eq!(ignore_not_found(Err(gone)).unwrap(), Outcome::Gone);
    }
}
