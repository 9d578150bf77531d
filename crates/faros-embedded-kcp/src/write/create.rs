//! Create: metadata rules, admission, namespace check, managedFields, kcp admission, commit.

use faros_core::status::Status;
use serde_json::Value;

use super::checks::{check_namespace, kcp_admit, prune_and_validate, stamp_cluster};
use super::{Stored, Writer};
use crate::kcp::admission::Operation;
use crate::objects;
use crate::objects::meta;
use crate::patch;
use crate::registry::ResourceDef;
use crate::store::WriteOp;

/// How many times a create whose name the server generates is tried, each with a new name, while
/// the generated name is taken: kube-apiserver's `maxNameGenerationCreateAttempts` (RetryGenerateName,
/// on in every kube that kcp builds on), enough for a million names per prefix with about a 0.1 %
/// chance of any of them colliding.
pub const GENERATED_NAME_ATTEMPTS: usize = 8;

/// Creates `obj` (already decoded). `managed`: the field manager to record; None when the caller
/// (server-side apply) computed managedFields itself. Returns the stored object (the admitted one
/// on a dry run) and warnings.
///
/// An object with `generateName` and no name is created as kube-apiserver does: when the name
/// generated for it is taken, the whole create runs again from the object as sent, with a new name,
/// up to [`GENERATED_NAME_ATTEMPTS`] times in all.
pub async fn create(
    w: &Writer<'_>,
    def: &ResourceDef,
    ns: Option<&str>,
    obj: Value,
    managed: Option<&str>,
) -> Result<(Stored, Vec<String>), Status> {
    if objects::generate_name(&obj).is_none() {
        return create_once(w, def, ns, obj, managed).await;
    }
    while_name_taken(|| create_once(w, def, ns, obj.clone(), managed)).await
}

/// Runs `attempt` again while it fails with AlreadyExists, [`GENERATED_NAME_ATTEMPTS`] times at most.
async fn while_name_taken<T, F, Fut>(mut attempt: F) -> Result<T, Status>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, Status>>,
{
    let mut attempts = 1;
    loop {
        match attempt().await {
            Err(e) if e.reason == "AlreadyExists" && attempts < GENERATED_NAME_ATTEMPTS => attempts += 1,
            done => return done,
        }
    }
}

async fn create_once(
    w: &Writer<'_>,
    def: &ResourceDef,
    ns: Option<&str>,
    mut obj: Value,
    managed: Option<&str>,
) -> Result<(Stored, Vec<String>), Status> {
    let now = objects::now_rfc3339();
    // Server-side apply computed managedFields already; metadata rules would otherwise drop them.
    let applied_fields = if managed.is_none() {
        obj.pointer("/metadata/managedFields").cloned()
    } else {
        None
    };
    if def.terminating {
        // As kube-apiserver for a terminating CRD (kcp: the binding's bound CRD).
        return Err(Status::forbidden(format!(
            "{} is forbidden: create not allowed while custom resource definition is terminating",
            faros_core::status::qualified(&def.group, &def.resource)
        )));
    }
    objects::prepare_create(def, ns, &mut obj, &now)?;
    if let Some(fields) = applied_fields {
        meta::meta_mut(&mut obj).insert("managedFields".into(), fields);
    }
    if let Some(guard) = w.claim {
        guard.admit(def, &mut obj)?;
    }
    let warnings = prune_and_validate(w, def, &mut obj)?;
    let name = meta::name(&obj).unwrap_or_default().to_string();
    if def.namespaced {
        check_namespace(w, def, ns.unwrap_or_default(), &name)?;
    }
    if let Some(m) = managed {
        let baseline = objects::create_baseline(def);
        patch::managed_fields::update_managed_fields(
            Some(&baseline),
            &mut obj,
            m,
            &def.schema,
            None,
            &def.api_version(),
            &now,
        );
    }
    kcp_admit(w, def, Operation::Create, None, None, &mut obj)?;
    // kcp's storage adds the cluster annotation on the way in and out of etcd; a dry run never
    // gets there.
    if w.dry_run.clone()? {
        return Ok((Stored::new(obj), warnings));
    }
    stamp_cluster(&mut obj, w.cluster);
    let key = w.key(def, ns, &name);
    let stored = w.commit(def, &name, WriteOp::Create { key, object: obj }).await?;
    Ok((stored, warnings))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn only_a_nameless_object_with_a_generate_name_is_named_by_the_server() {
        let cases = [
            (serde_json::json!({"metadata": {"generateName": "g-"}}), true),
            (
                serde_json::json!({"metadata": {"generateName": "g-", "name": ""}}),
                true,
            ),
            (
                serde_json::json!({"metadata": {"generateName": "g-", "name": "n"}}),
                false,
            ),
            (serde_json::json!({"metadata": {"generateName": ""}}), false),
            (serde_json::json!({"metadata": {"name": "n"}}), false),
            (serde_json::json!({}), false),
        ];
        for (obj, want) in cases {
            assert_eq!(objects::generate_name(&obj).is_some(), want, "{obj}");
        }
    }

    #[tokio::test]
    async fn a_taken_generated_name_is_tried_again_eight_times_in_all() {
        let taken = || Status::already_exists("", "configmaps", "g-abcde");
        // (failures before the outcome, the outcome, expected attempts, expected reason or success)
        type Case = (usize, Result<(), Status>, usize, Option<&'static str>);
        let cases: [Case; 5] = [
            (0, Ok(()), 1, None),
            (3, Ok(()), 4, None),
            (7, Ok(()), 8, None),
            (8, Ok(()), 8, Some("AlreadyExists")),
            // Only a taken name is tried again.
            (0, Err(Status::bad_request("bad")), 1, Some("BadRequest")),
        ];
        for (failures, outcome, want_attempts, want_reason) in cases {
            let mut attempts = 0;
            let got = while_name_taken(|| {
                attempts += 1;
                let result = match attempts <= failures {
                    true => Err(taken()),
                    false => outcome.clone(),
                };
                async move { result }
            })
            .await;
            let reason = got.err().map(|e| e.reason);
            assert_eq!(
                (attempts, reason.as_deref()),
                (want_attempts, want_reason),
                "{failures} taken before {outcome:?}"
            );
        }
    }
}
