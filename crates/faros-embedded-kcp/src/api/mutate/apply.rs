//! Server-side apply: merges the applied configuration into the live object with field ownership,
//! then creates or updates through the write pipeline (managedFields computed here).

use axum::response::Response;
use faros_core::status::Status;
use http::StatusCode;
use serde_json::Value;

use super::{PATCH_RETRIES, respond};
use crate::api::RequestContext;
use crate::objects;
use crate::objects::meta;
use crate::patch;
use crate::registry::ResourceDef;
use crate::write::store_status;

pub(super) async fn apply(
    ctx: &RequestContext,
    def: &ResourceDef,
    ns: Option<&str>,
    name: &str,
    sub: Option<&str>,
    applied: Value,
) -> Result<Response, Status> {
    let Some(manager) = ctx.params.field_manager().map(String::from) else {
        return Err(Status::invalid(
            "meta.k8s.io",
            "PatchOptions",
            "",
            vec![faros_core::status::StatusCause {
                reason: "FieldValueRequired".into(),
                message: "Required value: is required for apply patch".into(),
                field: "fieldManager".into(),
            }],
        ));
    };
    let api_version = def.api_version();
    if applied.get("apiVersion").and_then(Value::as_str) != Some(api_version.as_str()) {
        return Err(Status::bad_request(format!(
            "Incorrect version specified in apply patch. Specified patch version: {}, expected: {api_version}",
            applied.get("apiVersion").and_then(Value::as_str).unwrap_or_default()
        )));
    }
    if applied.get("kind").and_then(Value::as_str) != Some(def.kind.as_str()) {
        return Err(Status::bad_request(format!(
            "Incorrect kind specified in apply patch. Specified patch kind: {}, expected: {}",
            applied.get("kind").and_then(Value::as_str).unwrap_or_default(),
            def.kind
        )));
    }
    if let Some(n) = meta::name(&applied).filter(|n| *n != name) {
        return Err(Status::bad_request(format!(
            "the name of the object ({n}) does not match the name on the URL ({name})"
        )));
    }
    // Read once from the whole body: an apply through `/status` keeps only `.status` of the
    // configuration, but kube-apiserver still compares the body's resourceVersion.
    let wanted_rv = meta::resource_version(&applied)
        .filter(|rv| !rv.is_empty())
        .map(String::from);
    let w = ctx.writer();
    let mut attempt = 0;
    loop {
        attempt += 1;
        let now = objects::now_rfc3339();
        let key = w.key(def, ns, name);
        let live = ctx.state.store.get(&key).map_err(|e| store_status(e, def, name))?;
        // A bound resource's object as this version reads it (see `ResourceDef::served`).
        let live = live.map(|o| def.served(o)).transpose()?;
        let opts = patch::apply::ApplyOptions {
            manager: &manager,
            force: ctx.params.force(),
            schema: &def.schema,
            subresource: sub,
            api_version: &api_version,
            now: &now,
        };
        let mut merged = patch::apply::server_side_apply(live.as_ref(), &applied, &opts).map_err(|e| match e {
            patch::apply::ApplyError::Conflicts(c) => patch::apply::conflict_status(&c),
            other => Status::failure(422, "Invalid", other.to_string()),
        })?;
        let live_rv = live.as_ref().map(|o| meta::resource_version(o).unwrap_or_default());
        let plan = plan(live_rv, wanted_rv.as_deref(), sub);
        let retry = plan.retries();
        let result = match (&live, plan) {
            (_, Plan::NotFound) => return Err(Status::not_found(&def.group, &def.resource, name)),
            (None, Plan::Create) => {
                let m = meta::meta_mut(&mut merged);
                m.insert("name".into(), Value::String(name.into()));
                // The body's resourceVersion, if any, is no precondition on a create (see `plan`).
                m.remove("resourceVersion");
                crate::write::create::create(&w, def, ns, merged, None)
                    .await
                    .map(|(stored, warnings)| respond(StatusCode::CREATED, &stored, &warnings))
            }
            (Some(old), Plan::Update { expected_rv, .. }) => {
                // The version the merge read, or the body's precondition: either way the write
                // pipeline refuses with 409 Conflict when the stored object is at another one.
                meta::meta_mut(&mut merged).insert("resourceVersion".into(), Value::String(expected_rv));
                crate::write::update::update(&w, def, old, merged, sub, false, None)
                    .await
                    .map(|u| respond(StatusCode::OK, &u.object, &u.warnings))
            }
            (_, plan) => unreachable!("plan {plan:?} does not fit the live object"),
        };
        match result {
            Err(s)
                if s.code == 409
                    && (s.reason == "Conflict" || s.reason == "AlreadyExists")
                    && retry
                    && attempt < PATCH_RETRIES =>
            {
                continue;
            }
            other => return other,
        }
    }
}

/// How an apply commits, decided from the live object's resourceVersion (None: it does not exist),
/// the body's (None or empty: no precondition) and the subresource.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Plan {
    /// Create the object (apply-as-create).
    Create,
    /// Update the object, expecting it at `expected_rv`. `explicit`: the body asked for that
    /// version, so a conflict is the client's answer and is not retried; otherwise it is the
    /// version this merge read, and a concurrent write means merging again.
    Update { expected_rv: String, explicit: bool },
    /// 404: a subresource of a missing object.
    NotFound,
}

impl Plan {
    fn retries(&self) -> bool {
        match self {
            Plan::Create => true,
            Plan::Update { explicit, .. } => !explicit,
            Plan::NotFound => false,
        }
    }
}

fn plan(live_rv: Option<&str>, wanted_rv: Option<&str>, sub: Option<&str>) -> Plan {
    match (live_rv, wanted_rv) {
        // A subresource cannot create its object.
        (None, _) if sub.is_some() => Plan::NotFound,
        // Apply-as-create ignores the body's resourceVersion: kcp v0.32.3 answers 201 and
        // creates the object (`cargo xtask kcp diff`, core-objects "server-side apply creating
        // with a resourceVersion"), so refusing it would only be stricter than kcp.
        (None, _) => Plan::Create,
        // The body's resourceVersion is a precondition, as in an update.
        (Some(_), Some(wanted)) => Plan::Update {
            expected_rv: wanted.to_string(),
            explicit: true,
        },
        (Some(live), None) => Plan::Update {
            expected_rv: live.to_string(),
            explicit: false,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Live resourceVersion, the body's, the subresource: the plan, and whether it is retried.
    type Case<'a> = (Option<&'a str>, Option<&'a str>, Option<&'a str>, Plan, bool);

    #[test]
    fn plans() {
        let update = |rv: &str, explicit| Plan::Update {
            expected_rv: rv.into(),
            explicit,
        };
        #[rustfmt::skip]
        let cases: &[Case] = &[
            (None, None, None, Plan::Create, true),
            (None, None, Some("status"), Plan::NotFound, false),
            (None, Some("5"), None, Plan::Create, true),
            (None, Some("5"), Some("status"), Plan::NotFound, false),
            (Some("7"), None, None, update("7", false), true),
            (Some("7"), None, Some("status"), update("7", false), true),
            (Some("7"), Some("7"), None, update("7", true), false),
            (Some("7"), Some("5"), None, update("5", true), false),
            (Some("7"), Some("5"), Some("status"), update("5", true), false),
        ];
        for (live, wanted, sub, want, retries) in cases {
            let got = plan(*live, *wanted, *sub);
            assert_eq!(&got, want, "{live:?} {wanted:?} {sub:?}");
            assert_eq!(got.retries(), *retries, "{live:?} {wanted:?} {sub:?}");
        }
    }
}
