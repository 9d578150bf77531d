//! What Enable, Disable and the enabled list decide, without IO: the request, the checks, the
//! APIBinding the workspace should hold, and the RBAC objects that go with it.
//!
//! Everything here is a function of the CatalogEntry, the request and the workspace's current
//! APIBindings, so the rules (verbs from the catalog only, claims not declared are refused,
//! dependencies must be Bound) are table-tested without a kcp.

use std::collections::{BTreeMap, BTreeSet};

use faros_core::catalog::CatalogEntrySpec;
use faros_core::kcp::Condition;
use faros_core::kcp::apis::v1alpha2::{
    APIBinding, APIBindingPhase, APIBindingSpec, AcceptablePermissionClaim, AcceptablePermissionClaimState,
    BindingReference, BoundAPIResource, PermissionClaimSelector,
};
use faros_core::names;
use faros_core::status::{Status, qualified};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};

use crate::tenancy::rbac::RBAC_GROUP;

/// Largest Enable body read.
pub const BODY_LIMIT: usize = 64 * 1024;

/// A claim by group and resource, as tenants name it.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ClaimRef {
    /// `""` (or absent) is the core group.
    #[serde(default)]
    pub group: String,
    pub resource: String,
}

impl ClaimRef {
    fn display(&self) -> String {
        qualified(&self.group, &self.resource)
    }
}

/// `POST …/enable` body. Anything else a client sends (verbs, selectors) is ignored on purpose:
/// what a claim grants is the provider's declaration, never the tenant's request.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EnableRequest {
    #[serde(default)]
    pub accepted_claims: Vec<ClaimRef>,
}

/// Why an Enable cannot go ahead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    #[error("invalid JSON body: {0}; send {{\"acceptedClaims\":[{{\"group\":\"\",\"resource\":\"configmaps\"}}]}}")]
    InvalidBody(String),
    #[error("provider {0:?} declares no APIExport, so there is nothing to enable in a workspace")]
    NoApiExport(String),
    #[error("provider {provider:?} requires provider(s) to be enabled first: {}", missing.join(", "))]
    MissingDependencies { provider: String, missing: Vec<String> },
    #[error(
        "provider {provider:?} does not declare the permission claim(s) {}; it declares: {}",
        claims.join(", "),
        if declared.is_empty() { "none".to_string() } else { declared.join(", ") }
    )]
    UndeclaredClaims {
        provider: String,
        claims: Vec<String>,
        declared: Vec<String>,
    },
    #[error(
        "APIBinding {name:?} already exists in this workspace and binds {bound}; delete or rename it to enable provider {provider:?}"
    )]
    BindingTaken {
        provider: String,
        name: String,
        bound: String,
    },
    #[error(
        "provider {provider:?} is being disabled (APIBinding {name:?} is terminating); enable it again once it is gone"
    )]
    Terminating { provider: String, name: String },
    #[error("provider {0:?} requests edge proxy access but its workspace is not provisioned yet; retry shortly")]
    ProviderNotProvisioned(String),
    #[error("APIBinding {name:?} of provider {provider:?} does not work: {problem}; {}", problem.remedy())]
    BindingBroken {
        provider: String,
        name: String,
        problem: BindingProblem,
    },
}

/// kcp's APIBinding condition types (apis.kcp.io).
const CONDITION_API_EXPORT_VALID: &str = "APIExportValid";
const CONDITION_INITIAL_BINDING_COMPLETED: &str = "InitialBindingCompleted";
const CONDITION_BINDING_UP_TO_DATE: &str = "BindingUpToDate";

/// The binding condition types whose `False` means the workspace does not (or no longer) get the
/// provider's APIs, in the order they are reported.
const BINDING_HEALTH: [&str; 3] = [
    CONDITION_API_EXPORT_VALID,
    CONDITION_INITIAL_BINDING_COMPLETED,
    CONDITION_BINDING_UP_TO_DATE,
];

/// kcp's reason while an export's identity is still being published: it passes by itself.
const REASON_MISSING_IDENTITY: &str = "MissingIdentityHash";

/// Why a binding does not work, from its first failing condition (kcp's reason and message).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BindingProblem {
    pub condition: String,
    pub reason: String,
    pub message: String,
}

impl std::fmt::Display for BindingProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} is False ({}", self.condition, self.reason)?;
        if !self.message.is_empty() {
            write!(f, ": {}", self.message)?;
        }
        f.write_str(")")
    }
}

impl BindingProblem {
    /// The export is gone or was replaced: nothing but a new binding helps.
    fn export_gone(&self) -> bool {
        self.condition == CONDITION_API_EXPORT_VALID && self.reason != REASON_MISSING_IDENTITY
    }

    /// Whether Enable must not go ahead on this binding: patching it cannot repair it.
    fn blocks_enable(&self) -> bool {
        self.reason != REASON_MISSING_IDENTITY
    }

    /// What the tenant can do about it.
    pub fn remedy(&self) -> &'static str {
        if self.export_gone() {
            "the provider's APIExport was deleted (a provider deleted and registered again publishes a new one, \
             which an existing binding cannot follow); disable the provider in this workspace (this deletes the \
             workspace's objects of its resources) and enable it again"
        } else {
            "Enable cannot change that; resolve what kcp reports, or disable the provider in this workspace (this \
             deletes the workspace's objects of its resources) and enable it again"
        }
    }
}

/// The first failing health condition of a binding that is not being deleted.
pub fn binding_problem(binding: &APIBinding) -> Option<BindingProblem> {
    if is_terminating(binding) {
        return None;
    }
    let conditions = binding.status.as_ref().and_then(|s| s.conditions.as_deref());
    BINDING_HEALTH.iter().find_map(|t| {
        let c = Condition::find(conditions, t)?;
        (c.status == faros_core::kcp::ConditionStatus::False).then(|| BindingProblem {
            condition: (*t).to_string(),
            reason: c.reason.clone().unwrap_or_default(),
            message: c.message.clone().unwrap_or_default(),
        })
    })
}

/// Bound, not being deleted, and no failing health condition: the workspace has the provider's APIs.
pub fn works(binding: &APIBinding) -> bool {
    is_bound(binding) && binding_problem(binding).is_none()
}

impl From<PlanError> for Status {
    fn from(e: PlanError) -> Self {
        let message = e.to_string();
        match e {
            PlanError::InvalidBody(_) | PlanError::NoApiExport(_) | PlanError::UndeclaredClaims { .. } => {
                Status::bad_request(message)
            }
            PlanError::MissingDependencies { .. }
            | PlanError::BindingTaken { .. }
            | PlanError::Terminating { .. }
            | PlanError::BindingBroken { .. } => Status::conflict_message(message),
            PlanError::ProviderNotProvisioned(_) => Status::unavailable(message),
        }
    }
}

/// An empty body (or `null`) accepts no claims.
pub fn parse_request(body: &[u8]) -> Result<EnableRequest, PlanError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(EnableRequest::default());
    }
    serde_json::from_slice::<Option<EnableRequest>>(body)
        .map(Option::unwrap_or_default)
        .map_err(|e| PlanError::InvalidBody(e.to_string()))
}

/// The provider a binding binds, when it binds exactly `root:faros:providers:<name>`.
pub fn bound_provider(binding: &APIBinding) -> Option<&str> {
    let export = binding.spec.reference.export.as_ref()?;
    names::provider_from_workspace_path(export.path.as_deref()?)
}

pub fn is_bound(binding: &APIBinding) -> bool {
    binding.phase() == Some(&APIBindingPhase::Bound) && binding.metadata.deletion_timestamp.is_none()
}

fn is_terminating(binding: &APIBinding) -> bool {
    binding.metadata.deletion_timestamp.is_some()
}

fn binding_name(binding: &APIBinding) -> &str {
    binding.metadata.name.as_deref().unwrap_or_default()
}

/// The workspace's binding of `provider`: the one named like it if several exist (someone bound
/// the export by hand as well), else the first by name.
pub fn binding_of<'a>(bindings: &'a [APIBinding], provider: &str) -> Option<&'a APIBinding> {
    let mut of: Vec<&APIBinding> = bindings
        .iter()
        .filter(|b| bound_provider(b) == Some(provider))
        .collect();
    of.sort_by_key(|b| (binding_name(b) != provider, binding_name(b).to_string()));
    of.into_iter().next()
}

/// What Enable needs to know besides the request.
pub struct EnableInput<'a> {
    pub provider: &'a str,
    pub spec: &'a CatalogEntrySpec,
    pub request: &'a EnableRequest,
    /// Every APIBinding in the tenant workspace.
    pub bindings: &'a [APIBinding],
    /// True for a dependency that is a registered provider without an APIExport: there is nothing
    /// to bind, so it counts as present.
    pub exportless: &'a dyn Fn(&str) -> bool,
    /// Logical cluster of the provider's workspace, when known (needed for edge proxy access).
    pub provider_cluster: Option<&'a str>,
}

/// What Enable writes.
#[derive(Clone, Debug, PartialEq)]
pub struct EnablePlan {
    /// The desired APIBinding (name, labels, reference, claims).
    pub binding: APIBinding,
    /// A binding of this provider exists already (update instead of create).
    pub exists: bool,
    /// ClusterRole and ClusterRoleBinding of edge proxy access, when the provider asks for it.
    pub edges: Option<(ClusterRole, ClusterRoleBinding)>,
}

/// Decides Enable: the checks in the order clients see their errors, then the binding.
pub fn plan_enable(input: &EnableInput<'_>) -> Result<EnablePlan, PlanError> {
    let provider = input.provider;
    let export = input
        .spec
        .api_export
        .as_ref()
        .ok_or_else(|| PlanError::NoApiExport(provider.to_string()))?;

    let missing: BTreeSet<String> = input
        .spec
        .dependency_names()
        .filter(|d| !d.trim().is_empty() && *d != provider)
        .filter(|d| !(input.exportless)(d) && !binding_of(input.bindings, d).is_some_and(works))
        .map(str::to_string)
        .collect();
    if !missing.is_empty() {
        return Err(PlanError::MissingDependencies {
            provider: provider.to_string(),
            missing: missing.into_iter().collect(),
        });
    }

    let claims = binding_claims(input.spec, &input.request.accepted_claims).map_err(|undeclared| {
        PlanError::UndeclaredClaims {
            provider: provider.to_string(),
            claims: undeclared,
            declared: declared(input.spec).iter().map(ClaimRef::display).collect(),
        }
    })?;

    let existing = binding_of(input.bindings, provider);
    if let Some(b) = existing.filter(|b| is_terminating(b)) {
        return Err(PlanError::Terminating {
            provider: provider.to_string(),
            name: binding_name(b).to_string(),
        });
    }
    if let Some((b, problem)) = existing.and_then(|b| Some((b, binding_problem(b)?)))
        && problem.blocks_enable()
    {
        return Err(PlanError::BindingBroken {
            provider: provider.to_string(),
            name: binding_name(b).to_string(),
            problem,
        });
    }
    let name = match existing {
        Some(b) => binding_name(b).to_string(),
        None => {
            if let Some(other) = input.bindings.iter().find(|b| binding_name(b) == provider) {
                return Err(PlanError::BindingTaken {
                    provider: provider.to_string(),
                    name: provider.to_string(),
                    bound: describe_reference(other),
                });
            }
            provider.to_string()
        }
    };

    let edges = if input.spec.edge_proxy_access() {
        let cluster = input
            .provider_cluster
            .filter(|c| !c.is_empty())
            .ok_or_else(|| PlanError::ProviderNotProvisioned(provider.to_string()))?;
        Some(edges_grant(provider, cluster, &edges_groups(input.bindings)))
    } else {
        None
    };

    let mut binding = APIBinding::new(
        &name,
        APIBindingSpec {
            reference: BindingReference::export(names::provider_workspace_path(provider), export.name.clone()),
            permission_claims: Some(claims),
            ..Default::default()
        },
    );
    binding.metadata.labels = Some(names::managed_labels(provider));
    Ok(EnablePlan {
        binding,
        exists: existing.is_some(),
        edges,
    })
}

fn describe_reference(b: &APIBinding) -> String {
    match &b.spec.reference.export {
        Some(e) => match e.path.as_deref() {
            Some(p) if !p.is_empty() => format!("export {p}:{}", e.name),
            _ => format!("export {} of this workspace", e.name),
        },
        None => "something else".to_string(),
    }
}

/// The provider's declared claims by group and resource, deduplicated, in declaration order.
fn declared(spec: &CatalogEntrySpec) -> Vec<ClaimRef> {
    let mut seen = BTreeSet::new();
    spec.permission_claims()
        .iter()
        .map(|c| ClaimRef {
            group: c.group.clone().unwrap_or_default(),
            resource: c.resource.clone(),
        })
        .filter(|r| seen.insert(r.clone()))
        .collect()
}

/// Every claim the CatalogEntry declares, verbs and identity hash from the entry, `Accepted` when
/// the tenant named it and `Rejected` otherwise. `Err` lists accepted claims the entry lacks.
pub fn binding_claims(
    spec: &CatalogEntrySpec,
    accepted: &[ClaimRef],
) -> Result<Vec<AcceptablePermissionClaim>, Vec<String>> {
    let declared_refs: BTreeSet<ClaimRef> = declared(spec).into_iter().collect();
    let accepted: BTreeSet<&ClaimRef> = accepted.iter().collect();
    let undeclared: Vec<String> = accepted
        .iter()
        .filter(|a| !declared_refs.contains(**a))
        .map(|a| a.display())
        .collect();
    if !undeclared.is_empty() {
        return Err(undeclared);
    }
    // kcp keys binding claims by (group, resource, identityHash): a duplicate would be rejected.
    let mut keys = BTreeSet::new();
    Ok(spec
        .permission_claims()
        .iter()
        .filter_map(|c| {
            let group = c.group.clone().unwrap_or_default();
            let identity_hash = c.identity_hash.clone().unwrap_or_default();
            if !keys.insert((group.clone(), c.resource.clone(), identity_hash.clone())) {
                return None;
            }
            let key = ClaimRef {
                group: group.clone(),
                resource: c.resource.clone(),
            };
            let state = if accepted.contains(&key) {
                AcceptablePermissionClaimState::Accepted
            } else {
                AcceptablePermissionClaimState::Rejected
            };
            Some(AcceptablePermissionClaim {
                group,
                resource: c.resource.clone(),
                verbs: c.verbs.clone(),
                identity_hash,
                selector: PermissionClaimSelector::all(),
                state,
                extra: Default::default(),
            })
        })
        .collect())
}

fn strings<'a>(items: impl IntoIterator<Item = &'a str>) -> Option<Vec<String>> {
    Some(items.into_iter().map(str::to_string).collect())
}

/// ClusterRole aggregated into `faros:workspace:member`: full rights on the provider's bound
/// resources, so members can use what an admin enabled. `None` when nothing is bound yet.
pub fn member_role(provider: &str, bound: &[BoundAPIResource]) -> Option<ClusterRole> {
    let mut by_group: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for r in bound {
        by_group
            .entry(r.group.as_str())
            .or_default()
            .insert(r.resource.as_str());
    }
    if by_group.is_empty() {
        return None;
    }
    let rules = by_group
        .into_iter()
        .map(|(group, resources)| PolicyRule {
            api_groups: strings([group]),
            resources: strings(resources),
            verbs: vec!["*".into()],
            ..Default::default()
        })
        .collect();
    let mut labels = names::managed_labels(provider);
    labels.insert(names::LABEL_AGGREGATE_TO_MEMBER.into(), "true".into());
    Some(ClusterRole {
        metadata: ObjectMeta {
            name: Some(names::provider_member_role(provider)),
            labels: Some(labels),
            ..Default::default()
        },
        rules: Some(rules),
        ..Default::default()
    })
}

/// API groups of the `edges` resource: those the workspace's binding of the edges provider serves,
/// or `*` while that is not known (edges not enabled yet, or not bound).
pub fn edges_groups(bindings: &[APIBinding]) -> Vec<String> {
    let groups: BTreeSet<String> = binding_of(bindings, names::EDGES_PROVIDER)
        .filter(|b| is_bound(b))
        .and_then(|b| b.status.as_ref()?.bound_resources.as_ref())
        .into_iter()
        .flatten()
        .filter(|r| r.resource == names::EDGES_RESOURCE)
        .map(|r| r.group.clone())
        .collect();
    if groups.is_empty() {
        vec!["*".into()]
    } else {
        groups.into_iter().collect()
    }
}

/// ClusterRole + ClusterRoleBinding `faros:provider:<name>:edges-proxy`: the provider's
/// ServiceAccount, named in kcp's cross-workspace form, may enter the workspace and `proxy` to
/// edges, nothing else.
pub fn edges_grant(provider: &str, provider_cluster: &str, groups: &[String]) -> (ClusterRole, ClusterRoleBinding) {
    let name = names::edges_proxy_grant(provider);
    let meta = ObjectMeta {
        name: Some(name.clone()),
        labels: Some(names::managed_labels(provider)),
        ..Default::default()
    };
    let role = ClusterRole {
        metadata: meta.clone(),
        rules: Some(vec![
            PolicyRule {
                non_resource_urls: strings(["/"]),
                verbs: vec!["access".into()],
                ..Default::default()
            },
            PolicyRule {
                api_groups: Some(groups.to_vec()),
                resources: strings([names::EDGES_RESOURCE]),
                verbs: vec![names::EDGE_PROXY_VERB.into()],
                ..Default::default()
            },
        ]),
        ..Default::default()
    };
    let binding = ClusterRoleBinding {
        metadata: meta,
        role_ref: RoleRef {
            api_group: Some(RBAC_GROUP.into()),
            kind: "ClusterRole".into(),
            name,
        },
        subjects: Some(vec![Subject {
            api_group: Some(RBAC_GROUP.into()),
            kind: "User".into(),
            name: names::provider_global_user(provider_cluster),
            namespace: None,
        }]),
    };
    (role, binding)
}

/// One provider enabled in a workspace (`GET …/providers/enabled`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Enabled {
    #[serde(rename = "name")]
    pub provider: String,
    pub binding_name: String,
    /// kcp's phase (`Binding`, `Bound`), `""` before kcp picked the binding up.
    pub phase: String,
    /// Phase `Bound`, not being deleted, and no failing condition ([`works`]).
    pub bound: bool,
    /// Why the binding does not work (its first failing condition), when it does not.
    pub problem: Option<BindingProblem>,
    pub accepted_claims: Vec<ClaimRef>,
    /// What the binding serves here (kcp's `boundResources`), as kubectl names them:
    /// `<resource>.<group>`, sorted. Empty until kcp has bound it.
    pub resources: Vec<String>,
    pub terminating: bool,
    /// Why deletion does not finish (kcp's `BindingResourceDeleteSuccess` message), when it does not.
    pub deletion_blocked: Option<String>,
    /// The provider is Ready in the catalog and its binding here has no failing condition.
    pub ready: bool,
}

/// Phase as a string, `""` when kcp has not set one.
pub fn phase_of(binding: &APIBinding) -> String {
    binding.phase().map(|p| p.as_str().to_string()).unwrap_or_default()
}

fn deletion_blocked(binding: &APIBinding) -> Option<String> {
    if !is_terminating(binding) {
        return None;
    }
    let conditions = binding.status.as_ref().and_then(|s| s.conditions.as_deref());
    let c = Condition::find(conditions, names::CONDITION_BINDING_RESOURCE_DELETE_SUCCESS)?;
    if c.is_true() {
        return None;
    }
    Some(
        c.message
            .clone()
            .or_else(|| c.reason.clone())
            .unwrap_or_else(|| "deletion is not progressing".into()),
    )
}

/// The providers enabled in the workspace (`rows`, not being deleted) that declare `provider` as a
/// dependency: Disable refuses while there are any, as Enable refuses without the dependency.
pub fn dependents(rows: &[Enabled], provider: &str, dependencies_of: &dyn Fn(&str) -> Vec<String>) -> Vec<String> {
    rows.iter()
        .filter(|r| r.provider != provider && !r.terminating)
        .filter(|r| dependencies_of(&r.provider).iter().any(|d| d == provider))
        .map(|r| r.provider.clone())
        .collect()
}

/// The enabled list of a workspace from its bindings, one row per provider, sorted by name.
pub fn enabled_rows(bindings: &[APIBinding], ready: &dyn Fn(&str) -> bool) -> Vec<Enabled> {
    let providers: BTreeSet<&str> = bindings.iter().filter_map(bound_provider).collect();
    providers
        .into_iter()
        .filter_map(|p| binding_of(bindings, p))
        .filter_map(|b| {
            let provider = bound_provider(b)?.to_string();
            let accepted_claims = b
                .spec
                .permission_claims
                .iter()
                .flatten()
                .filter(|c| c.state == AcceptablePermissionClaimState::Accepted)
                .map(|c| ClaimRef {
                    group: c.group.clone(),
                    resource: c.resource.clone(),
                })
                .collect();
            let problem = binding_problem(b);
            let mut resources: Vec<String> = b
                .status
                .as_ref()
                .and_then(|s| s.bound_resources.as_deref())
                .unwrap_or_default()
                .iter()
                .map(|r| match r.group.as_str() {
                    "" => r.resource.clone(),
                    group => format!("{}.{group}", r.resource),
                })
                .collect();
            resources.sort();
            Some(Enabled {
                ready: ready(&provider) && problem.is_none(),
                provider,
                binding_name: binding_name(b).to_string(),
                phase: phase_of(b),
                bound: is_bound(b) && problem.is_none(),
                problem,
                accepted_claims,
                resources,
                terminating: is_terminating(b),
                deletion_blocked: deletion_blocked(b),
            })
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use faros_core::catalog::{ApiExportRef, Dependency, PermissionClaim};
    use faros_core::kcp::ConditionStatus;
    use faros_core::kcp::apis::v1alpha2::{APIBindingStatus, BoundAPIResourceSchema};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn claim(group: &str, resource: &str, verbs: &[&str]) -> PermissionClaim {
        PermissionClaim {
            group: (!group.is_empty()).then(|| group.to_string()),
            resource: resource.into(),
            verbs: verbs.iter().map(|v| (*v).to_string()).collect(),
            ..Default::default()
        }
    }

    fn spec(claims: Vec<PermissionClaim>, deps: &[&str]) -> CatalogEntrySpec {
        CatalogEntrySpec {
            display_name: "Q".into(),
            api_export: Some(ApiExportRef {
                name: "q.faros.sh".into(),
                permission_claims: Some(claims),
            }),
            dependencies: Some(deps.iter().map(|d| Dependency { name: (*d).into() }).collect()),
            ..Default::default()
        }
    }

    fn cref(group: &str, resource: &str) -> ClaimRef {
        ClaimRef {
            group: group.into(),
            resource: resource.into(),
        }
    }

    fn binding(name: &str, provider: &str, phase: Option<APIBindingPhase>) -> APIBinding {
        let mut b = APIBinding::new(
            name,
            APIBindingSpec {
                reference: BindingReference::export(names::provider_workspace_path(provider), format!("{provider}.x")),
                ..Default::default()
            },
        );
        b.status = Some(APIBindingStatus {
            phase,
            ..Default::default()
        });
        b
    }

    fn bound_resource(group: &str, resource: &str) -> BoundAPIResource {
        BoundAPIResource {
            group: group.into(),
            resource: resource.into(),
            schema: BoundAPIResourceSchema::default(),
            ..Default::default()
        }
    }

    fn never(_: &str) -> bool {
        false
    }

    fn input<'a>(
        spec: &'a CatalogEntrySpec,
        request: &'a EnableRequest,
        bindings: &'a [APIBinding],
    ) -> EnableInput<'a> {
        EnableInput {
            provider: "q",
            spec,
            request,
            bindings,
            exportless: &never,
            provider_cluster: Some("pc"),
        }
    }

    #[test]
    fn parses_requests() {
        for (body, want) in [
            ("", Ok(vec![])),
            ("  \n", Ok(vec![])),
            ("null", Ok(vec![])),
            ("{}", Ok(vec![])),
            (r#"{"acceptedClaims":[]}"#, Ok(vec![])),
            (
                r#"{"acceptedClaims":[{"resource":"configmaps","verbs":["*"]},{"group":"g","resource":"r"}]}"#,
                Ok(vec![cref("", "configmaps"), cref("g", "r")]),
            ),
            ("{", Err(())),
            (r#"{"acceptedClaims":"all"}"#, Err(())),
            (r#"{"acceptedClaims":[{"group":"g"}]}"#, Err(())),
        ] {
            let got = parse_request(body.as_bytes()).map(|r| r.accepted_claims).map_err(|e| {
                assert!(matches!(e, PlanError::InvalidBody(_)), "{body}: {e}");
                assert_eq!(Status::from(e).code, 400);
            });
            assert_eq!(got, want, "{body:?}");
        }
    }

    #[test]
    fn claims_take_verbs_from_the_catalog_and_state_from_the_request() {
        let s = spec(
            vec![
                claim("", "configmaps", &["get", "list"]),
                claim("", "secrets", &["get"]),
                claim("edges.faros.sh", "edges", &["*"]),
                // Duplicate declaration: kcp would reject two claims with the same key.
                claim("", "configmaps", &["*"]),
            ],
            &[],
        );
        let got = binding_claims(&s, &[cref("", "configmaps"), cref("edges.faros.sh", "edges")]).unwrap();
        assert_eq!(
            serde_json::to_value(&got).unwrap(),
            json!([
                {"resource":"configmaps","verbs":["get","list"],"selector":{"matchAll":true},"state":"Accepted"},
                {"resource":"secrets","verbs":["get"],"selector":{"matchAll":true},"state":"Rejected"},
                {"group":"edges.faros.sh","resource":"edges","verbs":["*"],"selector":{"matchAll":true},"state":"Accepted"},
            ])
        );
        // Request verbs cannot reach the binding: the request type has nowhere to keep them.
        let req = parse_request(br#"{"acceptedClaims":[{"resource":"secrets","verbs":["*","delete"]}]}"#).unwrap();
        let got = binding_claims(&s, &req.accepted_claims).unwrap();
        assert_eq!(got[1].verbs, vec!["get".to_string()]);
        assert_eq!(got[1].state, AcceptablePermissionClaimState::Accepted);
        assert_eq!(got[0].state, AcceptablePermissionClaimState::Rejected);
        // Identity hashes come from the catalog as well.
        let mut hashed = claim("other.faros.sh", "things", &["get"]);
        hashed.identity_hash = Some("abc".into());
        let got = binding_claims(&spec(vec![hashed], &[]), &[]).unwrap();
        assert_eq!(got[0].identity_hash, "abc");
        assert_eq!(got[0].state, AcceptablePermissionClaimState::Rejected);
    }

    #[test]
    fn undeclared_claims_are_named() {
        let s = spec(vec![claim("", "configmaps", &["get"])], &[]);
        for (accepted, want) in [
            (vec![cref("", "secrets")], vec!["secrets"]),
            (vec![cref("apps", "configmaps")], vec!["configmaps.apps"]),
            (
                vec![cref("", "configmaps"), cref("x.io", "b"), cref("", "a")],
                vec!["a", "b.x.io"],
            ),
        ] {
            assert_eq!(binding_claims(&s, &accepted).unwrap_err(), want, "{accepted:?}");
        }
        let req = EnableRequest {
            accepted_claims: vec![cref("", "secrets")],
        };
        let err = plan_enable(&input(&s, &req, &[])).unwrap_err();
        let status = Status::from(err);
        assert_eq!(status.code, 400);
        assert_eq!(
            status.message,
            "provider \"q\" does not declare the permission claim(s) secrets; it declares: configmaps"
        );
    }

    #[test]
    fn checks_in_order() {
        let none = EnableRequest::default();
        let mut no_export = spec(vec![], &["dep"]);
        no_export.api_export = None;
        let err = plan_enable(&input(&no_export, &none, &[])).unwrap_err();
        assert_eq!(err, PlanError::NoApiExport("q".into()));
        assert_eq!(Status::from(err).code, 400);

        // Dependencies are checked before claims; a binding counts only when Bound.
        let s = spec(vec![], &["b-dep", "a-dep", "bound-dep", "ui-only"]);
        let bad = EnableRequest {
            accepted_claims: vec![cref("", "nope")],
        };
        let bindings = [
            binding("b-dep", "b-dep", Some(APIBindingPhase::Binding)),
            binding("whatever", "bound-dep", Some(APIBindingPhase::Bound)),
        ];
        let ui_only = |d: &str| d == "ui-only";
        let mut i = input(&s, &bad, &bindings);
        i.exportless = &ui_only;
        let err = plan_enable(&i).unwrap_err();
        assert_eq!(
            err,
            PlanError::MissingDependencies {
                provider: "q".into(),
                missing: vec!["a-dep".into(), "b-dep".into()],
            }
        );
        let status = Status::from(err);
        assert_eq!(status.code, 409);
        assert_eq!(
            status.message,
            "provider \"q\" requires provider(s) to be enabled first: a-dep, b-dep"
        );

        // A terminating dependency does not count.
        let mut terminating = binding("a-dep", "a-dep", Some(APIBindingPhase::Bound));
        terminating.metadata.deletion_timestamp = Some(Time(jiff::Timestamp::UNIX_EPOCH));
        let s = spec(vec![], &["a-dep"]);
        let err = plan_enable(&input(&s, &none, std::slice::from_ref(&terminating))).unwrap_err();
        assert!(matches!(err, PlanError::MissingDependencies { .. }), "{err}");
    }

    #[test]
    fn binding_names_and_conflicts() {
        let s = spec(vec![claim("", "configmaps", &["get"])], &[]);
        let none = EnableRequest::default();

        let fresh = plan_enable(&input(&s, &none, &[])).unwrap();
        assert!(!fresh.exists);
        assert_eq!(fresh.edges, None);
        assert_eq!(
            serde_json::to_value(&fresh.binding).unwrap(),
            json!({"apiVersion":"apis.kcp.io/v1alpha2","kind":"APIBinding",
              "metadata":{"name":"q","labels":{"app.kubernetes.io/managed-by":"faros","providers.faros.sh/provider":"q"}},
              "spec":{"reference":{"export":{"path":"root:faros:providers:q","name":"q.faros.sh"}},
                "permissionClaims":[{"resource":"configmaps","verbs":["get"],"selector":{"matchAll":true},"state":"Rejected"}]}})
        );

        // A binding of this export under another name is reused, not duplicated.
        let by_hand = [binding("my-q", "q", Some(APIBindingPhase::Bound))];
        let reuse = plan_enable(&input(&s, &none, &by_hand)).unwrap();
        assert!(reuse.exists);
        assert_eq!(reuse.binding.metadata.name.as_deref(), Some("my-q"));

        // The name is taken by a binding of something else.
        let mut foreign = binding("q", "other", None);
        foreign.spec.reference = BindingReference::export("root:elsewhere", "e");
        let err = plan_enable(&input(&s, &none, std::slice::from_ref(&foreign))).unwrap_err();
        let status = Status::from(err);
        assert_eq!(status.code, 409);
        assert!(
            status.message.contains("binds export root:elsewhere:e"),
            "{}",
            status.message
        );

        // Being disabled: retry later.
        let mut going = binding("q", "q", Some(APIBindingPhase::Bound));
        going.metadata.deletion_timestamp = Some(Time(jiff::Timestamp::UNIX_EPOCH));
        let err = plan_enable(&input(&s, &none, std::slice::from_ref(&going))).unwrap_err();
        assert_eq!(Status::from(err).code, 409);
    }

    #[test]
    fn edge_proxy_access() {
        let mut s = spec(vec![], &[]);
        s.edge_proxy_access = Some(true);
        let none = EnableRequest::default();
        let mut i = input(&s, &none, &[]);
        i.provider_cluster = None;
        let err = plan_enable(&i).unwrap_err();
        assert_eq!(Status::from(err).code, 503);

        let (role, crb) = plan_enable(&input(&s, &none, &[])).unwrap().edges.unwrap();
        assert_eq!(role.metadata.name.as_deref(), Some("faros:provider:q:edges-proxy"));
        assert_eq!(
            serde_json::to_value(&role.rules).unwrap(),
            json!([{"nonResourceURLs":["/"],"verbs":["access"]},
                   {"apiGroups":["*"],"resources":["edges"],"verbs":["proxy"]}])
        );
        assert_eq!(crb.role_ref.name, "faros:provider:q:edges-proxy");
        assert_eq!(
            serde_json::to_value(&crb.subjects).unwrap(),
            json!([{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"system:kcp:serviceaccount:pc:default:provider"}])
        );

        // With the edges provider bound, its group replaces the wildcard.
        let mut edges = binding("edges", "edges", Some(APIBindingPhase::Bound));
        edges.status.as_mut().unwrap().bound_resources = Some(vec![
            bound_resource("edges.faros.sh", "edges"),
            bound_resource("edges.faros.sh", "sites"),
        ]);
        assert_eq!(
            edges_groups(std::slice::from_ref(&edges)),
            vec!["edges.faros.sh".to_string()]
        );
        edges.status.as_mut().unwrap().phase = Some(APIBindingPhase::Binding);
        assert_eq!(edges_groups(std::slice::from_ref(&edges)), vec!["*".to_string()]);
        assert_eq!(edges_groups(&[]), vec!["*".to_string()]);
    }

    #[test]
    fn member_roles_cover_bound_resources() {
        assert_eq!(member_role("q", &[]), None);
        let role = member_role(
            "q",
            &[
                bound_resource("b.io", "widgets"),
                bound_resource("a.io", "greetings"),
                bound_resource("b.io", "gadgets"),
            ],
        )
        .unwrap();
        assert_eq!(role.metadata.name.as_deref(), Some("faros:provider:q:member"));
        assert_eq!(
            role.metadata
                .labels
                .as_ref()
                .unwrap()
                .get(names::LABEL_AGGREGATE_TO_MEMBER)
                .map(String::as_str),
            Some("true")
        );
        assert_eq!(
            serde_json::to_value(&role.rules).unwrap(),
            json!([{"apiGroups":["a.io"],"resources":["greetings"],"verbs":["*"]},
                   {"apiGroups":["b.io"],"resources":["gadgets","widgets"],"verbs":["*"]}])
        );
    }

    #[test]
    fn dependents_table() {
        let row = |p: &str, terminating: bool| Enabled {
            provider: p.into(),
            binding_name: p.into(),
            phase: "Bound".into(),
            bound: !terminating,
            problem: None,
            accepted_claims: vec![],
            resources: vec![],
            terminating,
            deletion_blocked: None,
            ready: true,
        };
        let deps = |p: &str| match p {
            "fan" | "dash" => vec!["greeter".to_string()],
            "greeter" => vec!["base".to_string()],
            _ => vec![],
        };
        let rows = [
            row("base", false),
            row("dash", true),
            row("fan", false),
            row("greeter", false),
        ];
        for (provider, want) in [
            ("greeter", vec!["fan"]),
            ("base", vec!["greeter"]),
            ("fan", vec![]),
            ("unknown", vec![]),
        ] {
            assert_eq!(dependents(&rows, provider, &deps), want, "{provider}");
        }
    }

    #[test]
    fn enabled_rows_table() {
        let mut q = binding("q", "q", Some(APIBindingPhase::Bound));
        q.spec.permission_claims = Some(
            binding_claims(
                &spec(
                    vec![claim("", "configmaps", &["get"]), claim("", "secrets", &["get"])],
                    &[],
                ),
                &[cref("", "secrets")],
            )
            .unwrap(),
        );
        // Out of order, the core group among them: sorted, core resources without a group.
        if let Some(status) = q.status.as_mut() {
            status.bound_resources = Some(vec![
                bound_resource("q.io", "widgets"),
                bound_resource("", "configmaps"),
                bound_resource("q.io", "gadgets"),
            ]);
        }
        let mut gone = binding("a", "a", Some(APIBindingPhase::Bound));
        gone.metadata.deletion_timestamp = Some(Time(jiff::Timestamp::UNIX_EPOCH));
        let mut cond = Condition::new(
            names::CONDITION_BINDING_RESOURCE_DELETE_SUCCESS,
            ConditionStatus::False,
            Time(jiff::Timestamp::UNIX_EPOCH),
        );
        cond.reason = Some("SomeFinalizersRemain".into());
        cond.message = Some("Some content in the workspace has finalizers remaining: x in 1 resource instances".into());
        gone.status.as_mut().unwrap().conditions = Some(vec![cond]);
        let pending = binding("b", "b", None);
        let mut not_ours = binding("local", "x", None);
        not_ours.spec.reference = BindingReference::export("root:faros:providers:x:y", "e");
        let also_q = binding("another-q", "q", Some(APIBindingPhase::Binding));

        let ready = |p: &str| p == "q";
        let rows = enabled_rows(&[q, gone, pending, not_ours, also_q], &ready);
        assert_eq!(
            serde_json::to_value(&rows).unwrap(),
            json!([
              {"name":"a","bindingName":"a","phase":"Bound","bound":false,"problem":null,"acceptedClaims":[],"resources":[],"terminating":true,
               "deletionBlocked":"Some content in the workspace has finalizers remaining: x in 1 resource instances","ready":false},
              {"name":"b","bindingName":"b","phase":"","bound":false,"problem":null,"acceptedClaims":[],"resources":[],"terminating":false,
               "deletionBlocked":null,"ready":false},
              {"name":"q","bindingName":"q","phase":"Bound","bound":true,"problem":null,"acceptedClaims":[{"group":"","resource":"secrets"}],
               "resources":["configmaps","gadgets.q.io","widgets.q.io"],"terminating":false,"deletionBlocked":null,"ready":true},
            ])
        );
    }

    fn failing(mut b: APIBinding, condition: &str, reason: &str, message: &str) -> APIBinding {
        let mut c = Condition::new(condition, ConditionStatus::False, Time(jiff::Timestamp::UNIX_EPOCH));
        c.reason = Some(reason.into());
        c.message = Some(message.into());
        let mut ok = Condition::new(
            CONDITION_BINDING_UP_TO_DATE,
            ConditionStatus::True,
            Time(jiff::Timestamp::UNIX_EPOCH),
        );
        ok.reason = None;
        let status = b.status.get_or_insert_with(Default::default);
        status.conditions = Some(if condition == CONDITION_BINDING_UP_TO_DATE {
            vec![c]
        } else {
            vec![ok, c]
        });
        b
    }

    /// A provider deleted (and perhaps registered again) leaves tenants a binding whose export is
    /// gone while its phase still says Bound: the enabled list says so, and Enable says what to do
    /// instead of answering `Bound` and fixing nothing.
    #[test]
    fn broken_bindings_are_reported_and_enable_says_what_to_do() {
        let bound = || binding("q", "q", Some(APIBindingPhase::Bound));
        let gone = failing(
            bound(),
            CONDITION_API_EXPORT_VALID,
            "APIExportNotFound",
            "APIExport root:faros:providers:q|q.x not found",
        );
        let conflict = failing(
            bound(),
            CONDITION_BINDING_UP_TO_DATE,
            "NamingConflicts",
            "Unable to bind APIs",
        );
        let publishing = failing(
            binding("q", "q", Some(APIBindingPhase::Binding)),
            CONDITION_API_EXPORT_VALID,
            "MissingIdentityHash",
            "APIExport root:faros:providers:q|q.x is missing status.identityHash",
        );
        let s = spec(vec![], &[]);
        let none = EnableRequest::default();
        let ready = |_: &str| true;
        for (b, want_problem, want_enable) in [
            (bound(), None, Ok(())),
            (
                gone,
                Some(("APIExportValid", "APIExportNotFound")),
                Err(
                    "APIBinding \"q\" of provider \"q\" does not work: APIExportValid is False (APIExportNotFound: \
                     APIExport root:faros:providers:q|q.x not found); the provider's APIExport was deleted",
                ),
            ),
            (
                conflict,
                Some(("BindingUpToDate", "NamingConflicts")),
                Err(
                    "APIBinding \"q\" of provider \"q\" does not work: BindingUpToDate is False (NamingConflicts: \
                     Unable to bind APIs); Enable cannot change that",
                ),
            ),
            // Transient while the export's identity is published: reported, but Enable goes ahead.
            (publishing, Some(("APIExportValid", "MissingIdentityHash")), Ok(())),
        ] {
            let rows = enabled_rows(std::slice::from_ref(&b), &ready);
            let row = &rows[0];
            let got = row.problem.as_ref().map(|p| (p.condition.as_str(), p.reason.as_str()));
            assert_eq!(got, want_problem);
            assert_eq!((row.bound, row.ready), (want_problem.is_none(), want_problem.is_none()));
            let enable = plan_enable(&input(&s, &none, std::slice::from_ref(&b)));
            match (enable, want_enable) {
                (Ok(plan), Ok(())) => assert!(plan.exists),
                (Err(e), Err(prefix)) => {
                    let status = Status::from(e);
                    assert_eq!(status.code, 409);
                    assert!(status.message.starts_with(prefix), "{}", status.message);
                    assert!(status.message.contains("disable the provider"), "{}", status.message);
                }
                (got, want) => panic!("{got:?}, want {want:?}"),
            }
        }
        // A broken dependency does not count as enabled.
        let dep = failing(
            binding("d", "d", Some(APIBindingPhase::Bound)),
            CONDITION_API_EXPORT_VALID,
            "APIExportNotFound",
            "",
        );
        let needs_d = spec(vec![], &["d"]);
        let err = plan_enable(&input(&needs_d, &none, std::slice::from_ref(&dep))).unwrap_err();
        assert!(matches!(err, PlanError::MissingDependencies { .. }), "{err}");
    }
}
