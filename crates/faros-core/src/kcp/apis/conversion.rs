//! APIExport and APIBinding conversion between v1alpha1 and v1alpha2, as kcp does it (SDK
//! `apis/v1alpha2/types_apiexport_conversion.go`, `types_apibinding_conversion.go`).
//!
//! The two versions do not carry the same information, so kcp parks what one side cannot express
//! in annotations on the other side and restores it on the way back:
//!
//! - v1alpha2 → v1alpha1: non-CRD resources go to [`RESOURCE_SCHEMAS_ANNOTATION`] (with their
//!   index); export claims whose verbs are not exactly `["*"]` go to
//!   [`PERMISSION_CLAIMS_ANNOTATION`]; binding claims that are not (`["*"]` and `matchAll`) go to
//!   [`ACCEPTABLE_PERMISSION_CLAIMS_ANNOTATION`]; status claims likewise; a non-default binding
//!   `deletionPolicy` goes to [`DELETION_POLICY_ANNOTATION`].
//! - v1alpha1 → v1alpha2: `latestResourceSchemas` become CRD resources (name parsed from the
//!   schema name); claims gain `verbs: ["*"]` and `all` becomes `selector.matchAll`; the original
//!   v1alpha1 claims (`all`, `resourceSelector`) are parked in the `v1alpha1-*` annotations.
//!
//! The annotation payloads are the same JSON kcp writes, so objects converted here and by kcp can
//! be mixed. As in kcp, v1alpha1 → v1alpha2 → v1alpha1 is exact, while v1alpha2 → v1alpha1 →
//! v1alpha2 is exact except that it leaves the `v1alpha1-*` annotations describing the claims.
//! Unknown fields (`extra`) are carried across unchanged.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::v1alpha1 as v1;
use super::v1alpha2 as v2;
use super::v1alpha2::is_all_verbs;

/// v1alpha2 resources that v1alpha1 cannot express (non-CRD storage), with their index.
pub const RESOURCE_SCHEMAS_ANNOTATION: &str = "apis.v1alpha2.kcp.io/resource-schemas";
/// v1alpha2 export claims whose verbs are not `["*"]`.
pub const PERMISSION_CLAIMS_ANNOTATION: &str = "apis.v1alpha2.kcp.io/permission-claims";
/// The original v1alpha1 claims (`all`, `resourceSelector`), on the v1alpha2 object.
pub const V1ALPHA1_PERMISSION_CLAIMS_ANNOTATION: &str = "apis.v1alpha2.kcp.io/v1alpha1-permission-claims";
/// v1alpha2 binding claims that are not (`verbs: ["*"]` and `matchAll`).
pub const ACCEPTABLE_PERMISSION_CLAIMS_ANNOTATION: &str = "apis.v1alpha2.kcp.io/acceptable-permission-claims";
/// v1alpha2 `status.exportPermissionClaims` whose verbs are not `["*"]`.
pub const STATUS_EXPORT_PERMISSION_CLAIMS_ANNOTATION: &str = "apis.v1alpha2.kcp.io/status-export-permission-claims";
/// v1alpha2 `status.appliedPermissionClaims` that are not (`["*"]` and `matchAll`).
pub const STATUS_APPLIED_PERMISSION_CLAIMS_ANNOTATION: &str = "apis.v1alpha2.kcp.io/status-applied-permission-claims";
/// The original v1alpha1 `status.exportPermissionClaims`.
pub const V1ALPHA1_STATUS_EXPORT_PERMISSION_CLAIMS_ANNOTATION: &str =
    "apis.v1alpha2.kcp.io/v1alpha1-status-export-permission-claims";
/// v1alpha1 `status.appliedPermissionClaims` with a `resourceSelector`.
pub const V1ALPHA1_STATUS_APPLIED_PERMISSION_CLAIMS_ANNOTATION: &str =
    "apis.v1alpha2.kcp.io/v1alpha1-status-applied-permission-claims";
/// A binding `deletionPolicy` other than `Delete`.
pub const DELETION_POLICY_ANNOTATION: &str = "apis.v1alpha2.kcp.io/deletion-policy";

/// Why a conversion failed.
#[derive(Debug, thiserror::Error)]
pub enum ConversionError {
    #[error(
        "invalid schema {schema:?} in spec.latestResourceSchemas: must have at least 3 dot-separated segments \
         (<prefix>.<resource>.<group>)"
    )]
    InvalidSchemaName { schema: String },
    #[error("annotation {key} does not hold the JSON kcp writes there: {source}")]
    BadAnnotation {
        key: &'static str,
        #[source]
        source: serde_json::Error,
    },
    #[error("cannot encode annotation {key}: {source}")]
    Encode {
        key: &'static str,
        #[source]
        source: serde_json::Error,
    },
}

/// A v1alpha2 resource parked in [`RESOURCE_SCHEMAS_ANNOTATION`]; `index` puts it back in place.
#[derive(Serialize, Deserialize)]
struct OverhangingResourceSchema {
    #[serde(flatten)]
    schema: v2::ResourceSchema,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    index: Option<usize>,
}

fn set_annotation<T: Serialize + ?Sized>(
    meta: &mut ObjectMeta,
    key: &'static str,
    value: &T,
) -> Result<(), ConversionError> {
    let encoded = serde_json::to_string(value).map_err(|source| ConversionError::Encode { key, source })?;
    meta.annotations.get_or_insert_default().insert(key.to_owned(), encoded);
    Ok(())
}

/// Reads and decodes `key` from `from` (the input object's metadata).
fn read_annotation<T: DeserializeOwned>(from: &ObjectMeta, key: &'static str) -> Result<Option<T>, ConversionError> {
    let Some(raw) = from.annotations.as_ref().and_then(|a| a.get(key)) else {
        return Ok(None);
    };
    serde_json::from_str(raw)
        .map(Some)
        .map_err(|source| ConversionError::BadAnnotation { key, source })
}

fn remove_annotation(meta: &mut ObjectMeta, key: &str) {
    if let Some(annotations) = meta.annotations.as_mut() {
        annotations.remove(key);
        if annotations.is_empty() {
            meta.annotations = None;
        }
    }
}

/// Reads the parked list under `key` from `from`, removes it from `out`, and returns it.
fn take_parked<T: DeserializeOwned>(
    from: &ObjectMeta,
    out: &mut ObjectMeta,
    key: &'static str,
) -> Result<Option<Vec<T>>, ConversionError> {
    let parked = read_annotation::<Vec<T>>(from, key)?;
    if parked.is_some() {
        remove_annotation(out, key);
    }
    Ok(parked)
}

fn all_verbs() -> Vec<String> {
    vec![v2::ALL_VERBS.to_owned()]
}

fn claim_v1_to_v2(c: &v1::PermissionClaim) -> v2::PermissionClaim {
    v2::PermissionClaim {
        group: c.group.clone(),
        resource: c.resource.clone(),
        verbs: Vec::new(),
        identity_hash: c.identity_hash.clone(),
        default_selector: None,
        extra: c.extra.clone(),
    }
}

fn claim_v2_to_v1(c: &v2::PermissionClaim) -> v1::PermissionClaim {
    v1::PermissionClaim {
        group: c.group.clone(),
        resource: c.resource.clone(),
        all: false,
        resource_selector: None,
        identity_hash: c.identity_hash.clone(),
        extra: c.extra.clone(),
    }
}

fn scoped_v2_to_v1(c: &v2::ScopedPermissionClaim) -> v1::PermissionClaim {
    v1::PermissionClaim {
        group: c.group.clone(),
        resource: c.resource.clone(),
        all: c.selector.match_all,
        resource_selector: None,
        identity_hash: c.identity_hash.clone(),
        extra: c.extra.clone(),
    }
}

fn claim_v1_to_scoped(c: &v1::PermissionClaim) -> v2::ScopedPermissionClaim {
    v2::ScopedPermissionClaim {
        group: c.group.clone(),
        resource: c.resource.clone(),
        verbs: Vec::new(),
        identity_hash: c.identity_hash.clone(),
        selector: v2::PermissionClaimSelector {
            match_all: c.all,
            ..Default::default()
        },
        extra: c.extra.clone(),
    }
}

/// Restores v1alpha1-only claim fields (`all`, `resourceSelector`) onto `out` from parked claims.
fn restore_v1_claim_fields(out: &mut [v1::PermissionClaim], parked: &[v1::PermissionClaim]) {
    for p in parked {
        for c in out
            .iter_mut()
            .filter(|c| c.same_gri(&p.group, &p.resource, &p.identity_hash))
        {
            c.all = p.all;
            c.resource_selector = p.resource_selector.clone();
        }
    }
}

/// kcp's v1alpha1 → v1alpha2 defaults for scoped claims: all verbs, and `matchAll` when no selector.
fn default_scoped(verbs: &mut Vec<String>, selector: &mut v2::PermissionClaimSelector) {
    if verbs.is_empty() {
        *verbs = all_verbs();
    }
    if selector.is_empty() {
        selector.match_all = true;
    }
}

/// Converts a stored v1alpha2 APIExport to v1alpha1, parking what v1alpha1 cannot express.
pub fn export_to_v1alpha1(input: &v2::APIExport) -> Result<v1::APIExport, ConversionError> {
    let mut meta = input.metadata.clone();
    let spec = &input.spec;

    let mut latest = Vec::new();
    let mut overhanging = Vec::new();
    for (index, resource) in spec.resources.iter().flatten().enumerate() {
        if resource.is_crd() {
            latest.push(resource.schema.clone());
        } else {
            overhanging.push(OverhangingResourceSchema {
                schema: resource.clone(),
                index: Some(index),
            });
        }
    }
    if !overhanging.is_empty() {
        set_annotation(&mut meta, RESOURCE_SCHEMAS_ANNOTATION, &overhanging)?;
    }

    let non_wildcard: Vec<&v2::PermissionClaim> = spec
        .permission_claims
        .iter()
        .flatten()
        .filter(|c| !is_all_verbs(&c.verbs))
        .collect();
    if !non_wildcard.is_empty() {
        set_annotation(&mut meta, PERMISSION_CLAIMS_ANNOTATION, &non_wildcard)?;
    }

    let mut claims: Option<Vec<v1::PermissionClaim>> = spec
        .permission_claims
        .as_ref()
        .map(|cs| cs.iter().map(claim_v2_to_v1).collect());
    if let Some(parked) =
        take_parked::<v1::PermissionClaim>(&input.metadata, &mut meta, V1ALPHA1_PERMISSION_CLAIMS_ANNOTATION)?
    {
        restore_v1_claim_fields(claims.as_deref_mut().unwrap_or_default(), &parked);
    }

    Ok(v1::APIExport {
        metadata: meta,
        spec: v1::APIExportSpec {
            latest_resource_schemas: (!latest.is_empty()).then_some(latest),
            identity: spec.identity.clone(),
            maximal_permission_policy: spec.maximal_permission_policy.clone(),
            permission_claims: claims,
            extra: spec.extra.clone(),
        },
        status: input.status.clone(),
    })
}

/// Converts a v1alpha1 APIExport to v1alpha2 (the storage version), restoring parked fields.
pub fn export_to_v1alpha2(input: &v1::APIExport) -> Result<v2::APIExport, ConversionError> {
    let mut meta = input.metadata.clone();
    let spec = &input.spec;

    let mut resources = match &spec.latest_resource_schemas {
        None => None,
        Some(names) => Some(
            names
                .iter()
                .map(|name| {
                    let (resource, group) = v1::split_schema_name(name)
                        .ok_or_else(|| ConversionError::InvalidSchemaName { schema: name.clone() })?;
                    Ok(v2::ResourceSchema::crd(group, resource, name))
                })
                .collect::<Result<Vec<_>, ConversionError>>()?,
        ),
    };
    let mut claims: Option<Vec<v2::PermissionClaim>> = spec
        .permission_claims
        .as_ref()
        .map(|cs| cs.iter().map(claim_v1_to_v2).collect());

    if let Some(original) = spec.permission_claims.as_ref().filter(|c| !c.is_empty()) {
        set_annotation(&mut meta, V1ALPHA1_PERMISSION_CLAIMS_ANNOTATION, original)?;
    }

    if let Some(parked) =
        take_parked::<OverhangingResourceSchema>(&input.metadata, &mut meta, RESOURCE_SCHEMAS_ANNOTATION)?
        && !parked.is_empty()
    {
        let out = resources.get_or_insert_default();
        for p in parked {
            // An index that no longer fits (the CRD entries changed meanwhile) falls back to appending.
            match p.index {
                Some(i) if i <= out.len() => out.insert(i, p.schema),
                _ => out.push(p.schema),
            }
        }
    }

    if let Some(parked) = take_parked::<v2::PermissionClaim>(&input.metadata, &mut meta, PERMISSION_CLAIMS_ANNOTATION)?
    {
        for p in &parked {
            for c in claims
                .iter_mut()
                .flatten()
                .filter(|c| c.same_gri(&p.group, &p.resource, &p.identity_hash))
            {
                c.verbs = p.verbs.clone();
                c.default_selector = p.default_selector.clone();
            }
        }
    }
    for c in claims.iter_mut().flatten().filter(|c| c.verbs.is_empty()) {
        c.verbs = all_verbs();
    }

    Ok(v2::APIExport {
        metadata: meta,
        spec: v2::APIExportSpec {
            resources,
            identity: spec.identity.clone(),
            maximal_permission_policy: spec.maximal_permission_policy.clone(),
            permission_claims: claims,
            extra: spec.extra.clone(),
        },
        status: input.status.clone(),
    })
}

/// Converts a stored v1alpha2 APIBinding to v1alpha1, parking what v1alpha1 cannot express.
pub fn binding_to_v1alpha1(input: &v2::APIBinding) -> Result<v1::APIBinding, ConversionError> {
    let mut meta = input.metadata.clone();
    let spec = &input.spec;

    let overhanging: Vec<&v2::AcceptablePermissionClaim> = spec
        .permission_claims
        .iter()
        .flatten()
        .filter(|c| !(is_all_verbs(&c.verbs) && c.selector.match_all))
        .collect();
    if !overhanging.is_empty() {
        set_annotation(&mut meta, ACCEPTABLE_PERMISSION_CLAIMS_ANNOTATION, &overhanging)?;
    }
    if let Some(policy) = spec
        .deletion_policy
        .as_deref()
        .filter(|p| !p.is_empty() && *p != "Delete")
    {
        meta.annotations
            .get_or_insert_default()
            .insert(DELETION_POLICY_ANNOTATION.to_owned(), policy.to_owned());
    }

    let mut claims: Option<Vec<v1::AcceptablePermissionClaim>> = spec.permission_claims.as_ref().map(|cs| {
        cs.iter()
            .map(|c| v1::AcceptablePermissionClaim {
                group: c.group.clone(),
                resource: c.resource.clone(),
                all: c.selector.match_all,
                resource_selector: None,
                identity_hash: c.identity_hash.clone(),
                state: c.state.clone(),
                extra: c.extra.clone(),
            })
            .collect()
    });
    if let Some(parked) =
        take_parked::<v1::AcceptablePermissionClaim>(&input.metadata, &mut meta, V1ALPHA1_PERMISSION_CLAIMS_ANNOTATION)?
    {
        for p in &parked {
            for c in claims
                .iter_mut()
                .flatten()
                .filter(|c| c.group == p.group && c.resource == p.resource && c.identity_hash == p.identity_hash)
            {
                c.all = p.all;
                c.resource_selector = p.resource_selector.clone();
            }
        }
    }

    let status = match &input.status {
        None => None,
        Some(status) => {
            let export_overhanging: Vec<&v2::PermissionClaim> = status
                .export_permission_claims
                .iter()
                .flatten()
                .filter(|c| !is_all_verbs(&c.verbs))
                .collect();
            if !export_overhanging.is_empty() {
                set_annotation(
                    &mut meta,
                    STATUS_EXPORT_PERMISSION_CLAIMS_ANNOTATION,
                    &export_overhanging,
                )?;
            }
            let applied_overhanging: Vec<&v2::ScopedPermissionClaim> = status
                .applied_permission_claims
                .iter()
                .flatten()
                .filter(|c| !(is_all_verbs(&c.verbs) && c.selector.match_all))
                .collect();
            if !applied_overhanging.is_empty() {
                set_annotation(
                    &mut meta,
                    STATUS_APPLIED_PERMISSION_CLAIMS_ANNOTATION,
                    &applied_overhanging,
                )?;
            }
            let mut export: Option<Vec<v1::PermissionClaim>> = status
                .export_permission_claims
                .as_ref()
                .map(|cs| cs.iter().map(claim_v2_to_v1).collect());
            let mut applied: Option<Vec<v1::PermissionClaim>> = status
                .applied_permission_claims
                .as_ref()
                .map(|cs| cs.iter().map(scoped_v2_to_v1).collect());
            if let Some(parked) = read_annotation::<Vec<v1::PermissionClaim>>(
                &input.metadata,
                V1ALPHA1_STATUS_EXPORT_PERMISSION_CLAIMS_ANNOTATION,
            )? {
                restore_v1_claim_fields(export.as_deref_mut().unwrap_or_default(), &parked);
            }
            if let Some(parked) = read_annotation::<Vec<v1::PermissionClaim>>(
                &input.metadata,
                V1ALPHA1_STATUS_APPLIED_PERMISSION_CLAIMS_ANNOTATION,
            )? {
                restore_v1_claim_fields(applied.as_deref_mut().unwrap_or_default(), &parked);
            }
            Some(v1::APIBindingStatus {
                api_export_cluster_name: status.api_export_cluster_name.clone(),
                bound_resources: status.bound_resources.clone(),
                phase: status.phase.clone(),
                conditions: status.conditions.clone(),
                applied_permission_claims: applied,
                export_permission_claims: export,
                extra: status.extra.clone(),
            })
        }
    };
    remove_annotation(&mut meta, V1ALPHA1_STATUS_EXPORT_PERMISSION_CLAIMS_ANNOTATION);
    remove_annotation(&mut meta, V1ALPHA1_STATUS_APPLIED_PERMISSION_CLAIMS_ANNOTATION);

    Ok(v1::APIBinding {
        metadata: meta,
        spec: v1::APIBindingSpec {
            reference: spec.reference.clone(),
            permission_claims: claims,
            extra: spec.extra.clone(),
        },
        status,
    })
}

/// Converts a v1alpha1 APIBinding to v1alpha2 (the storage version), restoring parked fields.
pub fn binding_to_v1alpha2(input: &v1::APIBinding) -> Result<v2::APIBinding, ConversionError> {
    let mut meta = input.metadata.clone();
    let spec = &input.spec;

    let deletion_policy = input
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(DELETION_POLICY_ANNOTATION))
        .cloned();
    if deletion_policy.is_some() {
        remove_annotation(&mut meta, DELETION_POLICY_ANNOTATION);
    }

    let with_selector: Vec<&v1::AcceptablePermissionClaim> = spec
        .permission_claims
        .iter()
        .flatten()
        .filter(|c| c.has_resource_selector())
        .collect();
    if !with_selector.is_empty() {
        set_annotation(&mut meta, V1ALPHA1_PERMISSION_CLAIMS_ANNOTATION, &with_selector)?;
    }

    let mut claims: Option<Vec<v2::AcceptablePermissionClaim>> = spec.permission_claims.as_ref().map(|cs| {
        cs.iter()
            .map(|c| claim_v1_to_scoped(&c.claim()).with_state(c.state.clone()))
            .collect()
    });
    if let Some(parked) = take_parked::<v2::AcceptablePermissionClaim>(
        &input.metadata,
        &mut meta,
        ACCEPTABLE_PERMISSION_CLAIMS_ANNOTATION,
    )? {
        for p in &parked {
            for c in claims
                .iter_mut()
                .flatten()
                .filter(|c| c.same_gri(&p.group, &p.resource, &p.identity_hash))
            {
                c.verbs = p.verbs.clone();
                c.selector = p.selector.clone();
            }
        }
    }
    for c in claims.iter_mut().flatten() {
        default_scoped(&mut c.verbs, &mut c.selector);
    }

    let status = match &input.status {
        None => None,
        Some(status) => {
            if let Some(original) = status.export_permission_claims.as_ref().filter(|c| !c.is_empty()) {
                set_annotation(&mut meta, V1ALPHA1_STATUS_EXPORT_PERMISSION_CLAIMS_ANNOTATION, original)?;
            }
            let applied_with_selector: Vec<&v1::PermissionClaim> = status
                .applied_permission_claims
                .iter()
                .flatten()
                .filter(|c| c.has_resource_selector())
                .collect();
            if !applied_with_selector.is_empty() {
                set_annotation(
                    &mut meta,
                    V1ALPHA1_STATUS_APPLIED_PERMISSION_CLAIMS_ANNOTATION,
                    &applied_with_selector,
                )?;
            }
            let mut export: Option<Vec<v2::PermissionClaim>> = status
                .export_permission_claims
                .as_ref()
                .map(|cs| cs.iter().map(claim_v1_to_v2).collect());
            let mut applied: Option<Vec<v2::ScopedPermissionClaim>> = status
                .applied_permission_claims
                .as_ref()
                .map(|cs| cs.iter().map(claim_v1_to_scoped).collect());
            if let Some(parked) = read_annotation::<Vec<v2::PermissionClaim>>(
                &input.metadata,
                STATUS_EXPORT_PERMISSION_CLAIMS_ANNOTATION,
            )? {
                for p in &parked {
                    for c in export
                        .iter_mut()
                        .flatten()
                        .filter(|c| c.same_gri(&p.group, &p.resource, &p.identity_hash))
                    {
                        c.verbs = p.verbs.clone();
                    }
                }
            }
            if let Some(parked) = read_annotation::<Vec<v2::ScopedPermissionClaim>>(
                &input.metadata,
                STATUS_APPLIED_PERMISSION_CLAIMS_ANNOTATION,
            )? {
                for p in &parked {
                    for c in applied
                        .iter_mut()
                        .flatten()
                        .filter(|c| c.same_gri(&p.group, &p.resource, &p.identity_hash))
                    {
                        c.verbs = p.verbs.clone();
                        c.selector = p.selector.clone();
                    }
                }
            }
            for c in export.iter_mut().flatten().filter(|c| c.verbs.is_empty()) {
                c.verbs = all_verbs();
            }
            for c in applied.iter_mut().flatten() {
                default_scoped(&mut c.verbs, &mut c.selector);
            }
            Some(v2::APIBindingStatus {
                api_export_cluster_name: status.api_export_cluster_name.clone(),
                bound_resources: status.bound_resources.clone(),
                phase: status.phase.clone(),
                conditions: status.conditions.clone(),
                applied_permission_claims: applied,
                export_permission_claims: export,
                extra: status.extra.clone(),
            })
        }
    };
    remove_annotation(&mut meta, STATUS_EXPORT_PERMISSION_CLAIMS_ANNOTATION);
    remove_annotation(&mut meta, STATUS_APPLIED_PERMISSION_CLAIMS_ANNOTATION);

    Ok(v2::APIBinding {
        metadata: meta,
        spec: v2::APIBindingSpec {
            reference: spec.reference.clone(),
            permission_claims: claims,
            deletion_policy,
            extra: spec.extra.clone(),
        },
        status,
    })
}

impl TryFrom<&v1::APIExport> for v2::APIExport {
    type Error = ConversionError;
    fn try_from(input: &v1::APIExport) -> Result<Self, Self::Error> {
        export_to_v1alpha2(input)
    }
}

impl TryFrom<&v2::APIExport> for v1::APIExport {
    type Error = ConversionError;
    fn try_from(input: &v2::APIExport) -> Result<Self, Self::Error> {
        export_to_v1alpha1(input)
    }
}

impl TryFrom<&v1::APIBinding> for v2::APIBinding {
    type Error = ConversionError;
    fn try_from(input: &v1::APIBinding) -> Result<Self, Self::Error> {
        binding_to_v1alpha2(input)
    }
}

impl TryFrom<&v2::APIBinding> for v1::APIBinding {
    type Error = ConversionError;
    fn try_from(input: &v2::APIBinding) -> Result<Self, Self::Error> {
        binding_to_v1alpha1(input)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::{Value, json};

    fn from<T: DeserializeOwned>(v: Value) -> T {
        serde_json::from_value(v).unwrap()
    }

    fn to(v: &impl Serialize) -> Value {
        serde_json::to_value(v).unwrap()
    }

    fn annotation<'a>(meta: &'a ObjectMeta, key: &str) -> Option<&'a str> {
        meta.annotations.as_ref()?.get(key).map(String::as_str)
    }

    fn without_annotation(mut v: Value, key: &str) -> Value {
        if let Some(a) = v["metadata"]["annotations"].as_object_mut() {
            a.remove(key);
            if a.is_empty() {
                v["metadata"].as_object_mut().unwrap().remove("annotations");
            }
        }
        v
    }

    fn export_v2() -> Value {
        json!({"apiVersion":"apis.kcp.io/v1alpha2","kind":"APIExport",
          "metadata":{"name":"example.kcp.io","annotations":{"kcp.io/path":"root:api-provider"}},
          "spec":{"resources":[
              {"name":"widgets","group":"example.io","schema":"v1.widgets.example.io","storage":{"crd":{}}},
              {"name":"things","group":"example.com","schema":"v1.things.example.com",
               "storage":{"virtual":{"reference":{"apiGroup":"example.com","kind":"MyEndpointSlice","name":"vr"},
                 "identityHash":"123abc"}}},
              {"name":"configmaps","group":"","schema":"v1.configmaps.core","storage":{"crd":{}}}],
            "maximalPermissionPolicy":{"local":{}},
            "permissionClaims":[{"resource":"configmaps","verbs":["get","list"],
                "defaultSelector":{"matchLabels":{"env":"prod"}}},
              {"group":"somegroup.kcp.io","resource":"things","verbs":["*"],"identityHash":"5fdf7c7a"}]},
          "status":{"identityHash":"abcd"}})
    }

    #[test]
    fn export_v2_to_v1_parks_what_v1_cannot_express() {
        let v1 = export_to_v1alpha1(&from(export_v2())).unwrap();
        assert_eq!(
            to(&v1.spec),
            json!({"latestResourceSchemas":["v1.widgets.example.io","v1.configmaps.core"],
              "maximalPermissionPolicy":{"local":{}},
              "permissionClaims":[{"resource":"configmaps"},
                {"group":"somegroup.kcp.io","resource":"things","identityHash":"5fdf7c7a"}]})
        );
        assert_eq!(
            annotation(&v1.metadata, RESOURCE_SCHEMAS_ANNOTATION),
            Some(
                r#"[{"name":"things","group":"example.com","schema":"v1.things.example.com","storage":{"virtual":{"reference":{"apiGroup":"example.com","kind":"MyEndpointSlice","name":"vr"},"identityHash":"123abc"}},"index":1}]"#
            )
        );
        assert_eq!(
            annotation(&v1.metadata, PERMISSION_CLAIMS_ANNOTATION),
            Some(
                r#"[{"resource":"configmaps","verbs":["get","list"],"defaultSelector":{"matchLabels":{"env":"prod"}}}]"#
            )
        );
        assert_eq!(annotation(&v1.metadata, "kcp.io/path"), Some("root:api-provider"));
        assert_eq!(v1.status.unwrap().identity_hash.as_deref(), Some("abcd"));
    }

    #[test]
    fn export_v2_v1_v2_roundtrip_keeps_order_verbs_and_default_selector() {
        let original = export_v2();
        let v1 = export_to_v1alpha1(&from(original.clone())).unwrap();
        let back = export_to_v1alpha2(&v1).unwrap();
        // Like kcp, the way back records the v1alpha1 claims; everything else is the original.
        assert!(annotation(&back.metadata, V1ALPHA1_PERMISSION_CLAIMS_ANNOTATION).is_some());
        assert_eq!(
            without_annotation(to(&back), V1ALPHA1_PERMISSION_CLAIMS_ANNOTATION),
            original
        );
    }

    fn export_v1() -> Value {
        json!({"apiVersion":"apis.kcp.io/v1alpha1","kind":"APIExport",
          "metadata":{"name":"example.kcp.io"},
          "spec":{"latestResourceSchemas":["v1.foo.org","v2.bar.example.io"],
            "identity":{"secretRef":{"namespace":"kcp-system","name":"example.kcp.io"}},
            "permissionClaims":[{"resource":"configmaps","all":true},
              {"group":"somegroup.kcp.io","resource":"things","resourceSelector":[{"name":"a","namespace":"ns"}],
               "identityHash":"5fdf7c7a"}]}})
    }

    #[test]
    fn export_v1_to_v2_maps_schemas_and_claims() {
        let v2 = export_to_v1alpha2(&from(export_v1())).unwrap();
        assert_eq!(
            to(&v2.spec),
            json!({"resources":[{"name":"foo","group":"org","schema":"v1.foo.org","storage":{"crd":{}}},
                {"name":"bar","group":"example.io","schema":"v2.bar.example.io","storage":{"crd":{}}}],
              "identity":{"secretRef":{"namespace":"kcp-system","name":"example.kcp.io"}},
              "permissionClaims":[{"resource":"configmaps","verbs":["*"]},
                {"group":"somegroup.kcp.io","resource":"things","verbs":["*"],"identityHash":"5fdf7c7a"}]})
        );
        assert_eq!(
            annotation(&v2.metadata, V1ALPHA1_PERMISSION_CLAIMS_ANNOTATION),
            Some(
                r#"[{"resource":"configmaps","all":true},{"group":"somegroup.kcp.io","resource":"things","resourceSelector":[{"name":"a","namespace":"ns"}],"identityHash":"5fdf7c7a"}]"#
            )
        );
        let typed: v2::APIExport = (&from::<v1::APIExport>(export_v1())).try_into().unwrap();
        assert_eq!(typed, v2);
    }

    #[test]
    fn export_v1_v2_v1_roundtrip_is_exact() {
        for original in [
            export_v1(),
            json!({"apiVersion":"apis.kcp.io/v1alpha1","kind":"APIExport","metadata":{"name":"e"},"spec":{}}),
            json!({"apiVersion":"apis.kcp.io/v1alpha1","kind":"APIExport","metadata":{"name":"e"},
              "spec":{"latestResourceSchemas":["v1.configmaps.core"],"futureField":true}}),
        ] {
            let v2 = export_to_v1alpha2(&from(original.clone())).unwrap();
            let back = export_to_v1alpha1(&v2).unwrap();
            assert_eq!(to(&back), original);
        }
    }

    #[test]
    fn export_core_group_and_bad_schema_names() {
        let v2 = export_to_v1alpha2(&from(json!({"apiVersion":"apis.kcp.io/v1alpha1","kind":"APIExport",
            "metadata":{"name":"e"},"spec":{"latestResourceSchemas":["v1.configmaps.core"]}})))
        .unwrap();
        assert_eq!(v2.spec.resources.unwrap()[0].group, "");
        let err = export_to_v1alpha2(&from(json!({"apiVersion":"apis.kcp.io/v1alpha1","kind":"APIExport",
            "metadata":{"name":"e"},"spec":{"latestResourceSchemas":["v1.widgets"]}})))
        .unwrap_err();
        assert!(
            matches!(&err, ConversionError::InvalidSchemaName { schema } if schema == "v1.widgets"),
            "{err}"
        );
        assert!(err.to_string().contains("\"v1.widgets\""));
    }

    #[test]
    fn malformed_park_annotation_is_an_error_naming_the_key() {
        let err = export_to_v1alpha2(&from(json!({"apiVersion":"apis.kcp.io/v1alpha1","kind":"APIExport",
            "metadata":{"name":"e","annotations":{"apis.v1alpha2.kcp.io/resource-schemas":"not json"}},"spec":{}})))
        .unwrap_err();
        assert!(matches!(
            err,
            ConversionError::BadAnnotation {
                key: RESOURCE_SCHEMAS_ANNOTATION,
                ..
            }
        ));
    }

    #[test]
    fn stale_resource_index_appends() {
        let v1: v1::APIExport = from(json!({"apiVersion":"apis.kcp.io/v1alpha1","kind":"APIExport",
            "metadata":{"name":"e","annotations":{"apis.v1alpha2.kcp.io/resource-schemas":
              "[{\"name\":\"t\",\"group\":\"g\",\"schema\":\"v1.t.g\",\"storage\":{\"virtual\":{\"reference\":{\"kind\":\"K\",\"name\":\"n\"}}},\"index\":7},{\"name\":\"u\",\"group\":\"g\",\"schema\":\"v1.u.g\",\"storage\":{\"virtual\":{\"reference\":{\"kind\":\"K\",\"name\":\"n\"}}}}]"}},
            "spec":{"latestResourceSchemas":["v1.a.g"]}}));
        let v2 = export_to_v1alpha2(&v1).unwrap();
        let names: Vec<_> = v2.spec.resources.unwrap().into_iter().map(|r| r.name).collect();
        assert_eq!(names, vec!["a", "t", "u"]);
        assert_eq!(v2.metadata.annotations, None);
    }

    fn binding_v2() -> Value {
        json!({"apiVersion":"apis.kcp.io/v1alpha2","kind":"APIBinding",
          "metadata":{"name":"example.kcp.io"},
          "spec":{"reference":{"export":{"path":"root:api-provider","name":"example.kcp.io"}},
            "permissionClaims":[
              {"resource":"configmaps","verbs":["get","list","create"],"selector":{"matchAll":true},"state":"Accepted"},
              {"group":"somegroup.kcp.io","resource":"things","verbs":["*"],"identityHash":"5fdf7c7a",
               "selector":{"matchLabels":{"env":"prod"}},"state":"Accepted"},
              {"resource":"secrets","verbs":["*"],"selector":{"matchAll":true},"state":"Rejected"}],
            "deletionPolicy":"WaitForSuccessor"},
          "status":{"apiExportClusterName":"1q5b9ya3dnzyt2ct","phase":"Bound",
            "boundResources":[{"group":"example.io","resource":"widgets",
              "schema":{"name":"v1.widgets.example.io","UID":"u1","identityHash":"h1"},"storageVersions":["v1"]}],
            "exportPermissionClaims":[{"resource":"configmaps","verbs":["get","list","create"]},
              {"resource":"secrets","verbs":["*"]}],
            "appliedPermissionClaims":[{"resource":"configmaps","verbs":["get","list","create"],"selector":{"matchAll":true}}],
            "conditions":[{"type":"Ready","status":"True","lastTransitionTime":"2026-01-01T00:00:00Z"}]}})
    }

    #[test]
    fn binding_v2_to_v1_parks_verbs_selectors_and_policy() {
        let v1 = binding_to_v1alpha1(&from(binding_v2())).unwrap();
        assert_eq!(
            to(&v1.spec),
            json!({"reference":{"export":{"path":"root:api-provider","name":"example.kcp.io"}},
              "permissionClaims":[{"resource":"configmaps","all":true,"state":"Accepted"},
                {"group":"somegroup.kcp.io","resource":"things","identityHash":"5fdf7c7a","state":"Accepted"},
                {"resource":"secrets","all":true,"state":"Rejected"}]})
        );
        assert_eq!(
            annotation(&v1.metadata, ACCEPTABLE_PERMISSION_CLAIMS_ANNOTATION),
            Some(
                r#"[{"resource":"configmaps","verbs":["get","list","create"],"selector":{"matchAll":true},"state":"Accepted"},{"group":"somegroup.kcp.io","resource":"things","verbs":["*"],"identityHash":"5fdf7c7a","selector":{"matchLabels":{"env":"prod"}},"state":"Accepted"}]"#
            )
        );
        assert_eq!(
            annotation(&v1.metadata, DELETION_POLICY_ANNOTATION),
            Some("WaitForSuccessor")
        );
        assert_eq!(
            annotation(&v1.metadata, STATUS_EXPORT_PERMISSION_CLAIMS_ANNOTATION),
            Some(r#"[{"resource":"configmaps","verbs":["get","list","create"]}]"#)
        );
        assert_eq!(
            annotation(&v1.metadata, STATUS_APPLIED_PERMISSION_CLAIMS_ANNOTATION),
            Some(r#"[{"resource":"configmaps","verbs":["get","list","create"],"selector":{"matchAll":true}}]"#)
        );
        let status = to(&v1.status);
        assert_eq!(
            status["exportPermissionClaims"],
            json!([{"resource":"configmaps"},{"resource":"secrets"}])
        );
        assert_eq!(
            status["appliedPermissionClaims"],
            json!([{"resource":"configmaps","all":true}])
        );
        assert_eq!(status["boundResources"][0]["schema"]["UID"], "u1");
    }

    #[test]
    fn binding_v2_v1_v2_roundtrip() {
        let original = binding_v2();
        let v1 = binding_to_v1alpha1(&from(original.clone())).unwrap();
        let back = binding_to_v1alpha2(&v1).unwrap();
        assert!(annotation(&back.metadata, V1ALPHA1_STATUS_EXPORT_PERMISSION_CLAIMS_ANNOTATION).is_some());
        assert_eq!(
            without_annotation(to(&back), V1ALPHA1_STATUS_EXPORT_PERMISSION_CLAIMS_ANNOTATION),
            original
        );
    }

    fn binding_v1() -> Value {
        json!({"apiVersion":"apis.kcp.io/v1alpha1","kind":"APIBinding",
          "metadata":{"name":"b","labels":{"internal.apis.kcp.io/export":"xyz"}},
          "spec":{"reference":{"export":{"path":"root:api-provider","name":"example.kcp.io"}},
            "permissionClaims":[{"resource":"configmaps","all":true,"state":"Accepted"},
              {"group":"somegroup.kcp.io","resource":"things","resourceSelector":[{"namespace":"prod"}],
               "identityHash":"5fdf7c7a","state":"Accepted"}]},
          "status":{"phase":"Binding",
            "exportPermissionClaims":[{"resource":"configmaps","all":true},
              {"group":"somegroup.kcp.io","resource":"things","identityHash":"5fdf7c7a"}],
            "appliedPermissionClaims":[{"resource":"configmaps","all":true},
              {"group":"somegroup.kcp.io","resource":"things","resourceSelector":[{"namespace":"prod"}],"identityHash":"5fdf7c7a"}]}})
    }

    #[test]
    fn binding_v1_to_v2_defaults_verbs_and_match_all() {
        let v2 = binding_to_v1alpha2(&from(binding_v1())).unwrap();
        assert_eq!(
            to(&v2.spec)["permissionClaims"],
            json!([{"resource":"configmaps","verbs":["*"],"selector":{"matchAll":true},"state":"Accepted"},
              {"group":"somegroup.kcp.io","resource":"things","verbs":["*"],"identityHash":"5fdf7c7a",
               "selector":{"matchAll":true},"state":"Accepted"}])
        );
        assert_eq!(
            annotation(&v2.metadata, V1ALPHA1_PERMISSION_CLAIMS_ANNOTATION),
            Some(
                r#"[{"group":"somegroup.kcp.io","resource":"things","resourceSelector":[{"namespace":"prod"}],"identityHash":"5fdf7c7a","state":"Accepted"}]"#
            )
        );
        let status = to(&v2.status);
        assert_eq!(
            status["appliedPermissionClaims"],
            json!([{"resource":"configmaps","verbs":["*"],"selector":{"matchAll":true}},
              {"group":"somegroup.kcp.io","resource":"things","verbs":["*"],"identityHash":"5fdf7c7a","selector":{"matchAll":true}}])
        );
        assert_eq!(
            status["exportPermissionClaims"],
            json!([{"resource":"configmaps","verbs":["*"]},
              {"group":"somegroup.kcp.io","resource":"things","verbs":["*"],"identityHash":"5fdf7c7a"}])
        );
        assert!(annotation(&v2.metadata, V1ALPHA1_STATUS_EXPORT_PERMISSION_CLAIMS_ANNOTATION).is_some());
        assert_eq!(
            annotation(&v2.metadata, V1ALPHA1_STATUS_APPLIED_PERMISSION_CLAIMS_ANNOTATION),
            Some(
                r#"[{"group":"somegroup.kcp.io","resource":"things","resourceSelector":[{"namespace":"prod"}],"identityHash":"5fdf7c7a"}]"#
            )
        );
        assert_eq!(v2.spec.deletion_policy, None);
    }

    #[test]
    fn binding_v1_v2_v1_roundtrip_is_exact() {
        for original in [
            binding_v1(),
            json!({"apiVersion":"apis.kcp.io/v1alpha1","kind":"APIBinding","metadata":{"name":"b"},
              "spec":{"reference":{"export":{"name":"e"}}}}),
        ] {
            let v2 = binding_to_v1alpha2(&from(original.clone())).unwrap();
            let back: v1::APIBinding = (&v2).try_into().unwrap();
            assert_eq!(to(&back), original);
        }
    }
}
