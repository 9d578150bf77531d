//! The decisions of the export/binding controller, IO-free: the callers read the store and the
//! registry, hand the facts here, and write what comes back. Tested as tables.
//!
//! - `bind`: a binding's conditions, bound resources and phase from its export and the export's
//!   schemas (claim acceptance and verb intersection are `claims::evaluate`, tested there).
//! - `identity`: an export's `IdentityValid` and identity hash from its secret.
//! - `slice`: an endpoint slice's `APIExportValid` and endpoints.
//! - `deletion_*`: the steps of a binding's deletion.
//!
//! What it must not do: read or write anything.

use std::collections::{BTreeMap, BTreeSet};

use faros_core::kcp::apis::v1alpha2::{APIBinding, BoundAPIResource, BoundAPIResourceSchema};

use super::{
    API_EXPORT_VALID, BINDING_RESOURCE_DELETE_SUCCESS, BINDING_UP_TO_DATE, IDENTITY_VALID, INITIAL_BINDING_COMPLETED,
};
use crate::kcp::apis::conditions::{Mark, SEVERITY_ERROR, SEVERITY_INFO, SEVERITY_WARNING};

/// One CRD-like resource of an export, from its APIResourceSchema.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Wanted {
    /// The schema's name in the export's workspace.
    pub schema: String,
    pub uid: String,
    pub group: String,
    pub resource: String,
    /// The storage version.
    pub storage: String,
    /// Its bound copy (kcp's bound CRD, named by the schema's UID) exists: the resource can be
    /// served from it. A schema without one is bound once the caller has created it.
    pub established: bool,
}

/// Why an export's schema cannot be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SchemaProblem {
    /// The schema does not exist (the export is invalid).
    NotFound(String),
    /// The schema exists but cannot be served.
    Invalid(String),
}

/// What the binding reconciler found about the export a binding refers to.
#[derive(Clone, Debug)]
pub enum BindInput<'a> {
    /// The binding names no export.
    NoReference,
    /// No export at `path`|`name` (path as shown: the binding's own workspace when empty).
    ExportNotFound { path: &'a str, name: &'a str },
    /// The export has no identity hash yet.
    NoIdentity { path: &'a str, name: &'a str },
    /// The export, its identity and its CRD-like resources in order.
    Export {
        identity: &'a str,
        schemas: Vec<Result<Wanted, SchemaProblem>>,
        /// Group/resources other bindings of the cluster already hold, with the holder's name.
        taken: &'a BTreeMap<(String, String), String>,
        /// `InitialBindingCompleted` was True already.
        initial_done: bool,
        /// The binding's `status.boundResources` so far.
        current: &'a [BoundAPIResource],
    },
}

/// What binding does to the binding's status.
#[derive(Clone, Debug, PartialEq)]
pub struct BindDecision {
    /// Conditions to set, in order.
    pub marks: Vec<Mark>,
    /// The resources to bind (`status.boundResources`); None leaves them as they are.
    pub bound: Option<Vec<BoundAPIResource>>,
    /// Schemas whose bound copy the caller creates (the binding waits for them).
    pub establish: Vec<Wanted>,
    /// The binding is Bound.
    pub phase_bound: bool,
    /// Permission claims are evaluated next.
    pub claims: bool,
}

impl BindDecision {
    fn stop(marks: Vec<Mark>) -> Self {
        Self {
            marks,
            bound: None,
            establish: Vec::new(),
            phase_bound: false,
            claims: false,
        }
    }
}

/// kcp's binding reconciler for phases Binding and Bound.
///
/// Bound resources are upserted by group/resource, never dropped: a resource the export no longer
/// lists stays bound (and served), and one whose export names a new schema keeps the old schema
/// until the new one's bound copy is established (`BindingUpToDate` False, `WaitingForEstablished`
/// meanwhile). Storage versions are the union of the new schema's and those recorded before, so
/// they never shrink: objects stored in an older version stay readable.
pub fn bind(input: BindInput<'_>) -> BindDecision {
    let (identity, schemas, taken, initial_done, current) = match input {
        BindInput::NoReference => {
            return BindDecision::stop(vec![Mark::false_(
                API_EXPORT_VALID,
                "APIExportInvalidReference",
                SEVERITY_ERROR,
                "Missing APIExport reference",
            )]);
        }
        BindInput::ExportNotFound { path, name } => {
            return BindDecision::stop(vec![Mark::false_(
                API_EXPORT_VALID,
                "APIExportNotFound",
                SEVERITY_ERROR,
                format!("APIExport {path}|{name} not found"),
            )]);
        }
        BindInput::NoIdentity { path, name } => {
            return BindDecision::stop(vec![Mark::false_(
                API_EXPORT_VALID,
                "MissingIdentityHash",
                SEVERITY_WARNING,
                format!("APIExport {path}|{name} is missing status.identityHash"),
            )]);
        }
        BindInput::Export {
            identity,
            schemas,
            taken,
            initial_done,
            current,
        } => (identity, schemas, taken, initial_done, current),
    };
    let fail_binding = |marks: &mut Vec<Mark>, reason: &str, message: String| {
        marks.push(Mark::false_(
            BINDING_UP_TO_DATE,
            reason,
            SEVERITY_ERROR,
            message.clone(),
        ));
        if !initial_done {
            marks.push(Mark::false_(INITIAL_BINDING_COMPLETED, reason, SEVERITY_ERROR, message));
        }
    };
    let mut wanted = Vec::new();
    for schema in schemas {
        match schema {
            Ok(w) => wanted.push(w),
            Err(SchemaProblem::NotFound(e)) => {
                return BindDecision::stop(vec![Mark::false_(
                    API_EXPORT_VALID,
                    "InternalError",
                    SEVERITY_ERROR,
                    format!("Invalid APIExport. Please contact the APIExport owner to resolve: {e}"),
                )]);
            }
            Err(SchemaProblem::Invalid(e)) => {
                let mut marks = vec![Mark::true_(API_EXPORT_VALID)];
                fail_binding(
                    &mut marks,
                    "APIResourceSchemaInvalid",
                    format!("Unable to bind APIs: {e}"),
                );
                return BindDecision::stop(marks);
            }
        }
    }
    let mut skipped = BTreeMap::new();
    let mut bound = current.to_vec();
    let mut establish = Vec::new();
    for w in wanted {
        if let Some(holder) = taken.get(&(w.group.clone(), w.resource.clone())) {
            skipped.insert(format!("{}.{}", w.resource, w.group), holder.clone());
            continue;
        }
        if !w.established {
            establish.push(w);
            continue;
        }
        let existing = bound
            .iter()
            .position(|b| b.group == w.group && b.resource == w.resource);
        let mut storage: BTreeSet<String> = existing
            .and_then(|i| bound[i].storage_versions.clone())
            .unwrap_or_default()
            .into_iter()
            .collect();
        storage.insert(w.storage);
        let entry = BoundAPIResource {
            group: w.group,
            resource: w.resource,
            schema: BoundAPIResourceSchema {
                name: w.schema,
                uid: w.uid,
                identity_hash: identity.to_string(),
            },
            storage_versions: Some(storage.into_iter().collect()),
            extra: Default::default(),
        };
        match existing {
            Some(i) => bound[i] = entry,
            None => bound.push(entry),
        }
    }
    let mut marks = vec![Mark::true_(API_EXPORT_VALID)];
    let phase_bound = skipped.is_empty() && establish.is_empty();
    if !establish.is_empty() {
        let mut names: Vec<&str> = establish.iter().map(|w| w.schema.as_str()).collect();
        names.sort_unstable();
        let message = format!("Waiting for API(s) to be established: {}", names.join(", "));
        marks.push(Mark::false_(
            BINDING_UP_TO_DATE,
            "WaitingForEstablished",
            SEVERITY_INFO,
            message.clone(),
        ));
        if !initial_done {
            marks.push(Mark::false_(
                INITIAL_BINDING_COMPLETED,
                "WaitingForEstablished",
                SEVERITY_INFO,
                message,
            ));
        }
    } else if phase_bound {
        marks.push(Mark::true_(INITIAL_BINDING_COMPLETED));
        marks.push(Mark::true_(BINDING_UP_TO_DATE));
    } else {
        let locks: Vec<String> = skipped
            .iter()
            .map(|(gr, holder)| format!("{gr}:{{{holder} false}}"))
            .collect();
        fail_binding(
            &mut marks,
            "NamingConflicts",
            format!(
                "Unable to bind APIs because they are bound by other APIBindings or CRDs: map[{}]",
                locks.join(" ")
            ),
        );
    }
    BindDecision {
        marks,
        bound: Some(bound),
        establish,
        phase_bound,
        claims: true,
    }
}

/// An export's `IdentityValid` from its identity secret (`secret_found`, the hash of its key if it
/// has one) and the hash already in its status; and the hash to record.
pub fn identity(
    secret_name: &str,
    secret_found: bool,
    hash: Option<&str>,
    current: Option<&str>,
) -> (Mark, Option<String>) {
    let failed = |message: String| Mark::false_(IDENTITY_VALID, "IdentityVerificationFailed", SEVERITY_ERROR, message);
    match (hash, current) {
        (None, _) if !secret_found => (failed(format!("secrets \"{secret_name}\" not found")), None),
        (None, _) => (failed("secret is missing data.key".into()), None),
        (Some(h), Some(cur)) if h != cur => (
            failed(format!(
                "hash mismatch: identity secret hash {h} must match status.identityHash {cur}"
            )),
            None,
        ),
        (Some(h), _) => (Mark::true_(IDENTITY_VALID), Some(h.to_string())),
    }
}

/// kcp's index key of an export reference (`APIExportEndpointSliceByAPIExport`,
/// `APIBindingsByAPIExport`): the reference's path as written, or the referring object's own
/// logical cluster when it names none, then `|name`.
///
/// kcp 0.32 re-reconciles an endpoint slice when a tenant binds only if the slice's key equals the
/// binding's: the same export named by path in one and left implicit (or named by cluster) in the
/// other are two keys, and the slice never gets that tenant's shard URL. So a slice publishes URLs
/// only for bindings that name the export the way it does.
pub fn export_key(path: Option<&str>, own_cluster: &str, name: &str) -> String {
    let path = path.filter(|p| !p.is_empty()).unwrap_or(own_cluster);
    format!("{path}|{name}")
}

/// An endpoint slice's status.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SliceDecision {
    pub mark: Mark,
    /// `status.endpoints` URLs; None when there are none.
    pub endpoints: Option<Vec<String>>,
    /// Consumers exist but the server URL is not known yet: look again later.
    pub waiting: bool,
}

/// `APIExportValid` and the virtual workspace URL: published while the export exists and has a
/// Bound binding.
pub fn slice(
    export_exists: bool,
    consumers: bool,
    url: Option<String>,
    shown_path: &str,
    export_name: &str,
) -> SliceDecision {
    let mark = if export_exists {
        Mark::true_(API_EXPORT_VALID)
    } else {
        Mark::false_(
            API_EXPORT_VALID,
            "APIExportNotFound",
            SEVERITY_ERROR,
            format!("APIExport {shown_path}|{export_name} not found"),
        )
    };
    let waiting = consumers && url.is_none();
    let endpoints = match url {
        Some(url) if consumers && export_exists => Some(vec![url]),
        _ => None,
    };
    SliceDecision {
        mark,
        endpoints,
        waiting,
    }
}

/// Whether another (not deleting) binding of the cluster serves the same schema with the same
/// identity: its instances then stay when this binding goes.
pub fn deletion_adopted(bound: &BoundAPIResource, others: &[APIBinding]) -> bool {
    others.iter().any(|o| {
        o.status
            .as_ref()
            .and_then(|s| s.bound_resources.as_ref())
            .is_some_and(|rs| {
                rs.iter().any(|r| {
                    r.group == bound.group
                        && r.resource == bound.resource
                        && r.schema.uid == bound.schema.uid
                        && r.schema.identity_hash == bound.schema.identity_hash
                })
            })
    })
}

/// `BindingResourceDeleteSuccess` from what is left: instances per `resource.group` and their
/// finalizers (finalizer → instances). True once nothing is left.
pub fn deletion_progress(remaining: &BTreeMap<String, usize>, finalizers: &BTreeMap<String, usize>) -> Mark {
    if !finalizers.is_empty() {
        let list: Vec<String> = finalizers
            .iter()
            .map(|(f, n)| format!("{f} in {n} resource instances"))
            .collect();
        Mark::false_(
            BINDING_RESOURCE_DELETE_SUCCESS,
            "SomeFinalizersRemain",
            SEVERITY_ERROR,
            format!(
                "Some content in the workspace has finalizers remaining: {}",
                list.join(", ")
            ),
        )
    } else if !remaining.is_empty() {
        let list: Vec<String> = remaining
            .iter()
            .map(|(gr, n)| format!("{gr} has {n} resource instances"))
            .collect();
        Mark::false_(
            BINDING_RESOURCE_DELETE_SUCCESS,
            "SomeResourcesRemain",
            SEVERITY_ERROR,
            format!("Some resources are remaining: {}", list.join(", ")),
        )
    } else {
        Mark::true_(BINDING_RESOURCE_DELETE_SUCCESS)
    }
}

#[cfg(test)]
mod tests {
    use faros_core::kcp::ConditionStatus;
    use serde_json::json;

    use super::*;

    fn wanted(group: &str, resource: &str) -> Wanted {
        Wanted {
            schema: format!("v1.{resource}.{group}"),
            uid: format!("uid-{resource}"),
            group: group.into(),
            resource: resource.into(),
            storage: "v1".into(),
            established: true,
        }
    }

    /// (type, status, reason) of each mark, in order.
    fn summary(marks: &[Mark]) -> Vec<(&'static str, bool, Option<String>)> {
        marks
            .iter()
            .map(|m| (m.type_, m.status == ConditionStatus::True, m.reason.clone()))
            .collect()
    }

    #[test]
    fn binding_table() {
        let none = BTreeMap::new();
        let held = BTreeMap::from([(("example.io".to_string(), "widgets".to_string()), "other".to_string())]);
        let t = |type_: &'static str| (type_, true, None);
        let f = |type_: &'static str, reason: &str| (type_, false, Some(reason.to_string()));
        type Row<'a> = (
            &'a str,
            BindInput<'a>,
            Vec<(&'static str, bool, Option<String>)>,
            Option<usize>,
            bool,
        );
        let rows: Vec<Row<'_>> = vec![
            (
                "no reference",
                BindInput::NoReference,
                vec![f(API_EXPORT_VALID, "APIExportInvalidReference")],
                None,
                false,
            ),
            (
                "export not found",
                BindInput::ExportNotFound {
                    path: "root",
                    name: "x",
                },
                vec![f(API_EXPORT_VALID, "APIExportNotFound")],
                None,
                false,
            ),
            (
                "no identity yet",
                BindInput::NoIdentity {
                    path: "root",
                    name: "x",
                },
                vec![f(API_EXPORT_VALID, "MissingIdentityHash")],
                None,
                false,
            ),
            (
                "schema missing: the export is invalid",
                BindInput::Export {
                    identity: "h",
                    schemas: vec![Err(SchemaProblem::NotFound("APIResourceSchema \"s\" not found".into()))],
                    taken: &none,
                    initial_done: false,
                    current: &[],
                },
                vec![f(API_EXPORT_VALID, "InternalError")],
                None,
                false,
            ),
            (
                "schema invalid before the first binding",
                BindInput::Export {
                    identity: "h",
                    schemas: vec![
                        Ok(wanted("example.io", "widgets")),
                        Err(SchemaProblem::Invalid("bad".into())),
                    ],
                    taken: &none,
                    initial_done: false,
                    current: &[],
                },
                vec![
                    t(API_EXPORT_VALID),
                    f(BINDING_UP_TO_DATE, "APIResourceSchemaInvalid"),
                    f(INITIAL_BINDING_COMPLETED, "APIResourceSchemaInvalid"),
                ],
                None,
                false,
            ),
            (
                "schema invalid after the first binding leaves InitialBindingCompleted",
                BindInput::Export {
                    identity: "h",
                    schemas: vec![Err(SchemaProblem::Invalid("bad".into()))],
                    taken: &none,
                    initial_done: true,
                    current: &[],
                },
                vec![t(API_EXPORT_VALID), f(BINDING_UP_TO_DATE, "APIResourceSchemaInvalid")],
                None,
                false,
            ),
            (
                "all resources free: Bound",
                BindInput::Export {
                    identity: "h",
                    schemas: vec![Ok(wanted("example.io", "widgets")), Ok(wanted("example.io", "gadgets"))],
                    taken: &none,
                    initial_done: false,
                    current: &[],
                },
                vec![t(API_EXPORT_VALID), t(INITIAL_BINDING_COMPLETED), t(BINDING_UP_TO_DATE)],
                Some(2),
                true,
            ),
            (
                "a resource held by another binding: naming conflict, the rest bound",
                BindInput::Export {
                    identity: "h",
                    schemas: vec![Ok(wanted("example.io", "widgets")), Ok(wanted("example.io", "gadgets"))],
                    taken: &held,
                    initial_done: false,
                    current: &[],
                },
                vec![
                    t(API_EXPORT_VALID),
                    f(BINDING_UP_TO_DATE, "NamingConflicts"),
                    f(INITIAL_BINDING_COMPLETED, "NamingConflicts"),
                ],
                Some(1),
                false,
            ),
            (
                "an export without CRD-like resources binds nothing and is Bound",
                BindInput::Export {
                    identity: "h",
                    schemas: vec![],
                    taken: &none,
                    initial_done: false,
                    current: &[],
                },
                vec![t(API_EXPORT_VALID), t(INITIAL_BINDING_COMPLETED), t(BINDING_UP_TO_DATE)],
                Some(0),
                true,
            ),
        ];
        for (what, input, marks, bound, phase_bound) in rows {
            let d = bind(input);
            assert_eq!(summary(&d.marks), marks, "{what}");
            assert_eq!(d.bound.as_ref().map(Vec::len), bound, "{what}");
            assert_eq!(d.phase_bound, phase_bound, "{what}");
            assert_eq!(
                d.claims,
                bound.is_some(),
                "{what}: claims follow a completed evaluation"
            );
        }
    }

    #[test]
    fn bound_resources_carry_schema_identity_and_storage() {
        let none = BTreeMap::new();
        let d = bind(BindInput::Export {
            identity: "hash",
            schemas: vec![Ok(wanted("example.io", "widgets"))],
            taken: &none,
            initial_done: false,
            current: &[],
        });
        let br = &d.bound.unwrap()[0];
        assert_eq!((br.group.as_str(), br.resource.as_str()), ("example.io", "widgets"));
        assert_eq!(br.schema.name, "v1.widgets.example.io");
        assert_eq!(br.schema.uid, "uid-widgets");
        assert_eq!(br.schema.identity_hash, "hash");
        assert_eq!(br.storage_versions, Some(vec!["v1".to_string()]));
    }

    fn bound(schema: &str, uid: &str, storage: &[&str]) -> BoundAPIResource {
        let (_, rest) = schema.split_once('.').unwrap();
        let (resource, group) = rest.split_once('.').unwrap();
        BoundAPIResource {
            group: group.into(),
            resource: resource.into(),
            schema: BoundAPIResourceSchema {
                name: schema.into(),
                uid: uid.into(),
                identity_hash: "h".into(),
            },
            storage_versions: Some(storage.iter().map(|v| v.to_string()).collect()),
            extra: Default::default(),
        }
    }

    fn schema(name: &str, uid: &str, storage: &str, established: bool) -> Wanted {
        let (_, rest) = name.split_once('.').unwrap();
        let (resource, group) = rest.split_once('.').unwrap();
        Wanted {
            schema: name.into(),
            uid: uid.into(),
            group: group.into(),
            resource: resource.into(),
            storage: storage.into(),
            established,
        }
    }

    /// An export that moves on: kcp's upsert of bound resources (what `bound` ends as, whether the
    /// binding is up to date, which copies are made, the waiting message).
    #[test]
    fn upgrade_table() {
        let none = BTreeMap::new();
        type Row = (
            &'static str,
            Vec<BoundAPIResource>,
            Vec<Wanted>,
            Vec<BoundAPIResource>,
            Vec<&'static str>,
            Option<&'static str>,
        );
        let rows: Vec<Row> = vec![
            (
                "first binding: the copy is made, nothing bound yet",
                vec![],
                vec![schema("r1.widgets.example.io", "u1", "v1", false)],
                vec![],
                vec!["u1"],
                Some("Waiting for API(s) to be established: r1.widgets.example.io"),
            ),
            (
                "a new schema not yet established keeps the old one bound",
                vec![bound("r1.widgets.example.io", "u1", &["v1"])],
                vec![schema("r2.widgets.example.io", "u2", "v2", false)],
                vec![bound("r1.widgets.example.io", "u1", &["v1"])],
                vec!["u2"],
                Some("Waiting for API(s) to be established: r2.widgets.example.io"),
            ),
            (
                "an established new schema replaces it; storage versions are a union",
                vec![bound("r1.widgets.example.io", "u1", &["v1"])],
                vec![schema("r2.widgets.example.io", "u2", "v2", true)],
                vec![bound("r2.widgets.example.io", "u2", &["v1", "v2"])],
                vec![],
                None,
            ),
            (
                "storage versions never shrink",
                vec![bound("r2.widgets.example.io", "u2", &["v1", "v2"])],
                vec![schema("r3.widgets.example.io", "u3", "v1", true)],
                vec![bound("r3.widgets.example.io", "u3", &["v1", "v2"])],
                vec![],
                None,
            ),
            (
                "a resource the export dropped stays bound",
                vec![
                    bound("r1.widgets.example.io", "u1", &["v1"]),
                    bound("r1.gadgets.example.io", "g1", &["v1"]),
                ],
                vec![schema("r1.widgets.example.io", "u1", "v1", true)],
                vec![
                    bound("r1.widgets.example.io", "u1", &["v1"]),
                    bound("r1.gadgets.example.io", "g1", &["v1"]),
                ],
                vec![],
                None,
            ),
            (
                "waiting names every schema not established, sorted",
                vec![],
                vec![
                    schema("r1.widgets.example.io", "u1", "v1", false),
                    schema("r1.gadgets.example.io", "g1", "v1", false),
                ],
                vec![],
                vec!["u1", "g1"],
                Some("Waiting for API(s) to be established: r1.gadgets.example.io, r1.widgets.example.io"),
            ),
        ];
        for (what, current, schemas, want_bound, want_copies, waiting) in rows {
            let d = bind(BindInput::Export {
                identity: "h",
                schemas: schemas.into_iter().map(Ok).collect(),
                taken: &none,
                initial_done: true,
                current: &current,
            });
            assert_eq!(d.bound.as_deref(), Some(want_bound.as_slice()), "{what}");
            let copies: Vec<&str> = d.establish.iter().map(|w| w.uid.as_str()).collect();
            assert_eq!(copies, want_copies, "{what}");
            assert_eq!(d.phase_bound, waiting.is_none(), "{what}");
            let up_to_date = d.marks.iter().find(|m| m.type_ == BINDING_UP_TO_DATE).unwrap();
            match waiting {
                None => assert_eq!(up_to_date.status, ConditionStatus::True, "{what}"),
                Some(message) => {
                    assert_eq!(up_to_date.reason.as_deref(), Some("WaitingForEstablished"), "{what}");
                    assert_eq!(up_to_date.message.as_deref(), Some(message), "{what}");
                    assert!(
                        d.marks.iter().all(|m| m.type_ != INITIAL_BINDING_COMPLETED),
                        "{what}: a completed initial binding stays completed"
                    );
                }
            }
        }
    }

    #[test]
    fn naming_conflict_message_names_the_holder() {
        let held = BTreeMap::from([(("example.io".to_string(), "widgets".to_string()), "other".to_string())]);
        let d = bind(BindInput::Export {
            identity: "h",
            schemas: vec![Ok(wanted("example.io", "widgets"))],
            taken: &held,
            initial_done: true,
            current: &[],
        });
        assert_eq!(d.marks.len(), 2, "InitialBindingCompleted stays as it was");
        assert_eq!(
            d.marks[1].message.as_deref(),
            Some(
                "Unable to bind APIs because they are bound by other APIBindings or CRDs: map[widgets.example.io:{other false}]"
            )
        );
    }

    #[test]
    fn identity_table() {
        let rows = [
            (
                "no secret",
                false,
                None,
                None,
                false,
                Some("secrets \"x\" not found"),
                None,
            ),
            (
                "secret without key",
                true,
                None,
                None,
                false,
                Some("secret is missing data.key"),
                None,
            ),
            (
                "hash differs from status",
                true,
                Some("a"),
                Some("b"),
                false,
                Some("hash mismatch: identity secret hash a must match status.identityHash b"),
                None,
            ),
            ("first hash", true, Some("a"), None, true, None, Some("a")),
            ("same hash", true, Some("a"), Some("a"), true, None, Some("a")),
        ];
        for (what, found, hash, current, valid, message, recorded) in rows {
            let (mark, got) = identity("x", found, hash, current);
            assert_eq!(mark.type_, IDENTITY_VALID, "{what}");
            assert_eq!(mark.status == ConditionStatus::True, valid, "{what}");
            assert_eq!(mark.message.as_deref(), message, "{what}");
            assert_eq!(got.as_deref(), recorded, "{what}");
        }
    }

    #[test]
    fn slices_and_bindings_match_by_kcps_index_key() {
        // (slice path, slice cluster, binding path, binding cluster, same key)
        let cases = [
            (Some("root:p"), "pc", Some("root:p"), "tc", true),
            // the slice leaves its own workspace implicit; tenants name it by path
            (None, "pc", Some("root:p"), "tc", false),
            (Some(""), "pc", Some("root:p"), "tc", false),
            // a binding in the export's own workspace with no path matches a path-less slice there
            (None, "pc", None, "pc", true),
            // by cluster name in both
            (Some("pc"), "x", Some("pc"), "tc", true),
            // the same workspace by cluster name and by path: two keys
            (Some("pc"), "x", Some("root:p"), "tc", false),
        ];
        for (sp, sc, bp, bc, same) in cases {
            assert_eq!(
                export_key(sp, sc, "e") == export_key(bp, bc, "e"),
                same,
                "{sp:?}@{sc} vs {bp:?}@{bc}"
            );
        }
        assert_ne!(
            export_key(Some("root:p"), "x", "e"),
            export_key(Some("root:p"), "x", "f")
        );
    }

    #[test]
    fn slice_table() {
        let url = || Some("https://k/services/apiexport/root/x".to_string());
        let rows = [
            ("export and consumers and URL", true, true, url(), true, Some(1), false),
            ("no consumers: no endpoint", true, false, url(), true, None, false),
            ("consumers, URL unknown: wait", true, true, None, true, None, true),
            (
                "export gone: invalid, no endpoint",
                false,
                true,
                url(),
                false,
                None,
                false,
            ),
        ];
        for (what, exists, consumers, url, valid, endpoints, waiting) in rows {
            let d = slice(exists, consumers, url, "root", "x");
            assert_eq!(d.mark.status == ConditionStatus::True, valid, "{what}");
            assert_eq!(d.endpoints.as_ref().map(Vec::len), endpoints, "{what}");
            assert_eq!(d.waiting, waiting, "{what}");
        }
        assert_eq!(
            slice(false, false, None, "root:a", "x").mark.message.as_deref(),
            Some("APIExport root:a|x not found")
        );
    }

    #[test]
    fn deletion_progress_table() {
        let counts = |pairs: &[(&str, usize)]| -> BTreeMap<String, usize> {
            pairs.iter().map(|(k, n)| (k.to_string(), *n)).collect()
        };
        let rows = [
            ("nothing left", counts(&[]), counts(&[]), None),
            (
                "instances left",
                counts(&[("widgets.example.io", 2)]),
                counts(&[]),
                Some((
                    "SomeResourcesRemain",
                    "Some resources are remaining: widgets.example.io has 2 resource instances",
                )),
            ),
            (
                "finalizers hold them",
                counts(&[("widgets.example.io", 1)]),
                counts(&[("example.io/keep", 1)]),
                Some((
                    "SomeFinalizersRemain",
                    "Some content in the workspace has finalizers remaining: example.io/keep in 1 resource instances",
                )),
            ),
        ];
        for (what, remaining, finalizers, want) in rows {
            let mark = deletion_progress(&remaining, &finalizers);
            assert_eq!(mark.type_, BINDING_RESOURCE_DELETE_SUCCESS, "{what}");
            match want {
                None => assert_eq!(mark.status, ConditionStatus::True, "{what}"),
                Some((reason, message)) => {
                    assert_eq!(mark.status, ConditionStatus::False, "{what}");
                    assert_eq!(mark.reason.as_deref(), Some(reason), "{what}");
                    assert_eq!(mark.message.as_deref(), Some(message), "{what}");
                }
            }
        }
    }

    #[test]
    fn deletion_adoption_table() {
        let binding = |resources: serde_json::Value| -> APIBinding {
            serde_json::from_value(json!({
                "apiVersion": "apis.kcp.io/v1alpha2", "kind": "APIBinding", "metadata": {"name": "o"},
                "spec": {"reference": {"export": {"name": "x"}}},
                "status": {"boundResources": resources}
            }))
            .unwrap()
        };
        let br = |uid: &str, hash: &str| {
            json!({"group": "example.io", "resource": "widgets",
                   "schema": {"name": "s", "UID": uid, "identityHash": hash}})
        };
        let mine: BoundAPIResource = serde_json::from_value(br("u1", "h1")).unwrap();
        let rows = [
            ("no other binding", vec![], false),
            ("same schema and identity", vec![binding(json!([br("u1", "h1")]))], true),
            ("another schema", vec![binding(json!([br("u2", "h1")]))], false),
            ("another identity", vec![binding(json!([br("u1", "h2")]))], false),
        ];
        for (what, others, adopted) in rows {
            assert_eq!(deletion_adopted(&mine, &others), adopted, "{what}");
        }
    }
}
