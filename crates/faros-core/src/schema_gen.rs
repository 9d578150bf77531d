//! Turns a `CustomResourceDefinition` (as `Kind::crd()` produces it) into a kcp `APIResourceSchema`.
//!
//! kcp serves APIs from APIResourceSchemas referenced by an APIExport rather than from CRDs. The
//! schema's spec is a CRD spec with one difference per version: `schema` holds the openAPIV3Schema
//! itself instead of wrapping it. Its name is `<prefix>.<plural>.<group>` and, since schemas are
//! immutable, a changed schema needs a new prefix.
//!
//! Output is a `serde_json::Value` (apply it as a DynamicObject, or write it as YAML); it is
//! deterministic for a given CRD, so generated files diff cleanly.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, CustomResourceDefinitionVersion,
};
use kube::CustomResourceExt;
use serde_json::{Map, Value, json};

use crate::{catalog::CatalogEntry, names, provider::Provider, provider_revision::ProviderRevision};

/// `apiVersion` of APIResourceSchema.
pub const API_RESOURCE_SCHEMA_API_VERSION: &str = "apis.kcp.io/v1alpha1";
/// `kind` of APIResourceSchema.
pub const API_RESOURCE_SCHEMA_KIND: &str = "APIResourceSchema";

/// Why a CRD could not be converted.
#[derive(Debug, thiserror::Error)]
pub enum SchemaGenError {
    #[error("schema prefix {0:?} must match ^[a-z]([-a-z0-9]*[a-z0-9])?$")]
    InvalidPrefix(String),
    #[error("CRD {crd} version {version} has no openAPIV3Schema; kcp requires one")]
    MissingSchema { crd: String, version: String },
    #[error("CRD {0} has no versions")]
    NoVersions(String),
    #[error("serializing CRD {crd}: {source}")]
    Serialize {
        crd: String,
        #[source]
        source: serde_json::Error,
    },
}

/// `<prefix>.<plural>.<group>`, with `core` standing in for the empty group, as kcp's admission
/// requires.
pub fn schema_name(prefix: &str, plural: &str, group: &str) -> String {
    let group = if group.is_empty() { "core" } else { group };
    format!("{prefix}.{plural}.{group}")
}

/// kcp's rule for the prefix part of a schema name: `^[a-z]([-a-z0-9]*[a-z0-9])?$`.
pub fn is_valid_prefix(prefix: &str) -> bool {
    let b = prefix.as_bytes();
    let inner = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-';
    match (b.first(), b.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_lowercase() && (last.is_ascii_lowercase() || last.is_ascii_digit()) && b.iter().all(inner)
        }
        _ => false,
    }
}

/// Converts `crd` into an APIResourceSchema named `<prefix>.<plural>.<group>`.
pub fn api_resource_schema(crd: &CustomResourceDefinition, prefix: &str) -> Result<Value, SchemaGenError> {
    if !is_valid_prefix(prefix) {
        return Err(SchemaGenError::InvalidPrefix(prefix.to_string()));
    }
    let crd_name = crd.metadata.name.clone().unwrap_or_default();
    let spec = &crd.spec;
    if spec.versions.is_empty() {
        return Err(SchemaGenError::NoVersions(crd_name));
    }

    let mut versions = Vec::with_capacity(spec.versions.len());
    for v in &spec.versions {
        versions.push(version(v, &crd_name)?);
    }

    let mut out_spec = Map::new();
    out_spec.insert("group".into(), json!(spec.group));
    // A CRD gets `listKind`/`singular` defaulted by the apiextensions server; an APIResourceSchema
    // is stored as sent, so fill them in here.
    let mut crd_names = spec.names.clone();
    crd_names
        .list_kind
        .get_or_insert_with(|| format!("{}List", crd_names.kind));
    crd_names.singular.get_or_insert_with(|| crd_names.kind.to_lowercase());
    out_spec.insert("names".into(), to_json(&crd_name, &crd_names)?);
    out_spec.insert("scope".into(), json!(spec.scope));
    out_spec.insert("versions".into(), Value::Array(versions));
    // kcp requires a conversion strategy once there is more than one version; faros types have
    // one, and a webhook would need a URL kcp can reach, so only `None` is produced.
    if spec.versions.len() > 1 {
        let strategy = spec.conversion.as_ref().map_or("None", |c| c.strategy.as_str());
        out_spec.insert("conversion".into(), json!({"strategy": strategy}));
    }

    Ok(json!({
        "apiVersion": API_RESOURCE_SCHEMA_API_VERSION,
        "kind": API_RESOURCE_SCHEMA_KIND,
        "metadata": {"name": schema_name(prefix, &spec.names.plural, &spec.group)},
        "spec": Value::Object(out_spec),
    }))
}

fn version(v: &CustomResourceDefinitionVersion, crd_name: &str) -> Result<Value, SchemaGenError> {
    let schema = v
        .schema
        .as_ref()
        .and_then(|s| s.open_api_v3_schema.as_ref())
        .ok_or_else(|| SchemaGenError::MissingSchema {
            crd: crd_name.to_string(),
            version: v.name.clone(),
        })?;

    let mut out = Map::new();
    out.insert("name".into(), json!(v.name));
    out.insert("served".into(), json!(v.served));
    out.insert("storage".into(), json!(v.storage));
    if let Some(deprecated) = v.deprecated {
        out.insert("deprecated".into(), json!(deprecated));
    }
    if let Some(warning) = &v.deprecation_warning {
        out.insert("deprecationWarning".into(), json!(warning));
    }
    out.insert("schema".into(), to_json(crd_name, schema)?);
    if let Some(sub) = &v.subresources {
        out.insert("subresources".into(), to_json(crd_name, sub)?);
    }
    if let Some(cols) = v.additional_printer_columns.as_ref().filter(|c| !c.is_empty()) {
        out.insert("additionalPrinterColumns".into(), to_json(crd_name, cols)?);
    }
    if let Some(fields) = v.selectable_fields.as_ref().filter(|f| !f.is_empty()) {
        out.insert("selectableFields".into(), to_json(crd_name, fields)?);
    }
    Ok(Value::Object(out))
}

fn to_json<T: serde::Serialize>(crd: &str, part: &T) -> Result<Value, SchemaGenError> {
    serde_json::to_value(part).map_err(|source| SchemaGenError::Serialize {
        crd: crd.to_string(),
        source,
    })
}

/// The CRDs of faros' own types, in a fixed order (`Provider`, `CatalogEntry`, `ProviderRevision`).
pub fn faros_crds() -> Vec<CustomResourceDefinition> {
    vec![Provider::crd(), CatalogEntry::crd(), ProviderRevision::crd()]
}

/// APIResourceSchemas of faros' own types with [`names::SCHEMA_PREFIX`], in [`faros_crds`] order.
/// The reconciler applies these in `root:faros:system:controllers`.
pub fn faros_api_resource_schemas() -> Result<Vec<Value>, SchemaGenError> {
    faros_crds()
        .iter()
        .map(|crd| api_resource_schema(crd, names::SCHEMA_PREFIX))
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn names() {
        assert_eq!(schema_name("v1", "widgets", "example.io"), "v1.widgets.example.io");
        assert_eq!(schema_name("v1", "configmaps", ""), "v1.configmaps.core");
        for (prefix, ok) in [
            ("v1alpha1", true),
            ("today", true),
            ("v250421-25d98218b", true),
            ("a", true),
            ("", false),
            ("1v", false),
            ("v1-", false),
            ("V1", false),
            ("v1.2", false),
        ] {
            assert_eq!(is_valid_prefix(prefix), ok, "{prefix:?}");
        }
    }

    #[test]
    fn provider_schema_shape() {
        let ars = api_resource_schema(&Provider::crd(), "v1alpha1").unwrap();
        assert_eq!(ars["apiVersion"], "apis.kcp.io/v1alpha1");
        assert_eq!(ars["kind"], "APIResourceSchema");
        assert_eq!(ars["metadata"], json!({"name": "v1alpha1.providers.admin.faros.sh"}));
        let spec = &ars["spec"];
        assert_eq!(spec["group"], "admin.faros.sh");
        assert_eq!(spec["scope"], "Cluster");
        assert_eq!(spec["names"]["kind"], "Provider");
        assert_eq!(spec["names"]["listKind"], "ProviderList");
        assert_eq!(spec["names"]["shortNames"], json!(["prov"]));
        assert_eq!(spec["names"]["singular"], "provider");
        assert!(spec.get("conversion").is_none());
        let v = &spec["versions"][0];
        assert_eq!(v["name"], "v1alpha1");
        assert_eq!(v["served"], true);
        assert_eq!(v["storage"], true);
        assert_eq!(v["subresources"], json!({"status": {}}));
        // The schema is the openAPIV3Schema itself, not wrapped.
        assert!(v["schema"].get("openAPIV3Schema").is_none());
        assert_eq!(v["schema"]["type"], "object");
        assert!(v["schema"]["properties"]["spec"].is_object());
        let cols: Vec<&str> = v["additionalPrinterColumns"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(cols, ["Workspace", "Secret", "Revision", "Ready", "Age"]);
    }

    #[test]
    fn catalog_entry_schema_name() {
        let ars = api_resource_schema(&CatalogEntry::crd(), "v1alpha1").unwrap();
        assert_eq!(ars["metadata"]["name"], "v1alpha1.catalogentries.providers.faros.sh");
        assert_eq!(ars["spec"]["names"]["shortNames"], json!(["ce"]));
    }

    #[test]
    fn deterministic() {
        let a = serde_json::to_string(&faros_api_resource_schemas().unwrap()).unwrap();
        let b = serde_json::to_string(&faros_api_resource_schemas().unwrap()).unwrap();
        assert_eq!(a, b);
    }

    #[test]
    fn errors() {
        assert!(matches!(
            api_resource_schema(&Provider::crd(), "V1"),
            Err(SchemaGenError::InvalidPrefix(_))
        ));
        let mut crd = Provider::crd();
        crd.spec.versions[0].schema = None;
        match api_resource_schema(&crd, "v1") {
            Err(SchemaGenError::MissingSchema { crd, version }) => {
                assert_eq!(
                    (crd.as_str(), version.as_str()),
                    ("providers.admin.faros.sh", "v1alpha1")
                );
            }
            other => panic!("unexpected {other:?}"),
        }
        crd.spec.versions.clear();
        assert!(matches!(
            api_resource_schema(&crd, "v1"),
            Err(SchemaGenError::NoVersions(_))
        ));
    }

    #[test]
    fn multiple_versions_get_conversion_none() {
        let mut crd = Provider::crd();
        crd.spec.names.singular = None;
        let mut v2 = crd.spec.versions[0].clone();
        v2.name = "v1alpha2".into();
        v2.storage = false;
        crd.spec.versions.push(v2);
        let ars = api_resource_schema(&crd, "v2").unwrap();
        assert_eq!(ars["spec"]["conversion"], json!({"strategy": "None"}));
        assert_eq!(ars["spec"]["names"]["singular"], "provider");
        assert_eq!(ars["spec"]["versions"][1]["name"], "v1alpha2");
        assert_eq!(ars["spec"]["versions"][1]["storage"], false);
    }
}
