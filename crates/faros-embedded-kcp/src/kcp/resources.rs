//! kcp's own resources (tenancy, core and apis groups) as served resource definitions, derived from
//! the hand-written types in `faros_core::kcp` so the schemas cannot drift from the client side.
//! APIExport and APIBinding are stored as v1alpha2 and also served as v1alpha1, converted both ways
//! with kcp's own rules (`faros_core::kcp::apis::conversion`).

use faros_core::kcp::apis::{conversion, v1alpha1, v1alpha2};
use faros_core::kcp::core::LogicalCluster;
use faros_core::kcp::tenancy::{Workspace, WorkspaceType};
use kube::CustomResourceExt;
use serde_json::Value;

use crate::registry::{Conversion, ResourceDef};

fn def_from<K: CustomResourceExt>() -> ResourceDef {
    let crd = serde_json::to_value(K::crd()).unwrap_or_default();
    let spec = crd.get("spec").cloned().unwrap_or_default();
    let version = spec.pointer("/versions/0").cloned().unwrap_or_default();
    match ResourceDef::from_crd_like(&spec, &version, "/schema/openAPIV3Schema") {
        Ok(def) => def,
        // The CRDs come from our own types and are covered by tests; a failure is a programming error.
        Err(e) => unreachable!("kcp type {} has an invalid CRD: {e}", K::crd_name()),
    }
}

fn convert<From, To>(obj: &Value, f: fn(&From) -> Result<To, conversion::ConversionError>) -> Result<Value, String>
where
    From: serde::de::DeserializeOwned,
    To: serde::Serialize,
{
    // kcp's CRDs do not require `spec` on exports; Go decodes a missing one as empty.
    let mut obj = obj.clone();
    if let Some(map) = obj.as_object_mut()
        && map.get("spec").is_none_or(Value::is_null)
    {
        map.insert("spec".into(), Value::Object(Default::default()));
    }
    let typed: From = serde_json::from_value(obj).map_err(|e| e.to_string())?;
    let converted = f(&typed).map_err(|e| e.to_string())?;
    serde_json::to_value(converted).map_err(|e| e.to_string())
}

fn export_to_storage(obj: &Value) -> Result<Value, String> {
    convert::<v1alpha1::APIExport, v1alpha2::APIExport>(obj, conversion::export_to_v1alpha2)
}
fn export_to_served(obj: &Value) -> Result<Value, String> {
    convert::<v1alpha2::APIExport, v1alpha1::APIExport>(obj, conversion::export_to_v1alpha1)
}
fn binding_to_storage(obj: &Value) -> Result<Value, String> {
    convert::<v1alpha1::APIBinding, v1alpha2::APIBinding>(obj, conversion::binding_to_v1alpha2)
}
fn binding_to_served(obj: &Value) -> Result<Value, String> {
    convert::<v1alpha2::APIBinding, v1alpha1::APIBinding>(obj, conversion::binding_to_v1alpha1)
}

/// Every kcp resource the embedded server serves in every logical cluster. Storage versions come
/// first so discovery prefers them.
pub fn kcp_resources() -> Vec<ResourceDef> {
    let mut export_v1 = def_from::<v1alpha1::APIExport>();
    export_v1.conversion = Some(Conversion {
        storage_version: "v1alpha2",
        to_storage: export_to_storage,
        to_served: export_to_served,
    });
    let mut binding_v1 = def_from::<v1alpha1::APIBinding>();
    binding_v1.conversion = Some(Conversion {
        storage_version: "v1alpha2",
        to_storage: binding_to_storage,
        to_served: binding_to_served,
    });
    let mut defs = vec![
        def_from::<Workspace>(),
        def_from::<WorkspaceType>(),
        def_from::<LogicalCluster>(),
        def_from::<v1alpha2::APIExport>(),
        def_from::<v1alpha2::APIBinding>(),
        def_from::<v1alpha1::APIResourceSchema>(),
        def_from::<v1alpha1::APIExportEndpointSlice>(),
        export_v1,
        binding_v1,
    ];
    // Served natively in root only (the registry keeps them there); elsewhere through bindings.
    defs.extend(
        super::root_apis::root_resources()
            .into_iter()
            .filter(|d| d.group == "topology.kcp.io"),
    );
    for d in &mut defs {
        d.categories = vec!["kcp".into()];
        // Our Rust types make `spec` required where kcp's CRDs do not: an object without it must
        // be accepted as kcp accepts it.
        if let Some(schema) = std::sync::Arc::get_mut(&mut d.schema) {
            if !SPEC_REQUIRED.contains(&d.resource.as_str()) {
                schema.required.retain(|f| f != "spec");
            }
            // kcp's WorkspaceType CRD defaults a type's child type to root:universal.
            if d.resource == "workspacetypes"
                && let Some(field) = schema
                    .properties
                    .get_mut("spec")
                    .and_then(|spec| spec.properties.get_mut("defaultChildWorkspaceType"))
            {
                field.default = Some(serde_json::json!({"name": "universal", "path": "root"}));
            }
            if d.resource == "apiresourceschemas" {
                schema_crd_rules(schema);
            }
            // Required, but defaulted first: created without `spec`, it is accepted.
            if SPEC_DEFAULTED.contains(&d.resource.as_str())
                && let Some(spec) = schema.properties.get_mut("spec")
            {
                spec.default = Some(serde_json::json!({}));
            }
        }
    }
    defs
}

/// What kcp's APIResourceSchema CRD (`config/crds`) declares beyond our Rust type: the enums, the
/// Kubernetes version pattern, at least one version, and the fields a version must have.
fn schema_crd_rules(schema: &mut crate::schema::Schema) {
    let Some(spec) = schema.properties.get_mut("spec") else {
        return;
    };
    let strings = |values: &[&str]| values.iter().map(|v| serde_json::json!(v)).collect();
    if let Some(field) = spec.properties.get_mut("nameValidation") {
        field.enum_ = strings(&["DNS1123Subdomain", "PathSegmentName"]);
    }
    if let Some(field) = spec
        .properties
        .get_mut("conversion")
        .and_then(|c| c.properties.get_mut("strategy"))
    {
        field.enum_ = strings(&["None", "Webhook"]);
    }
    if let Some(versions) = spec.properties.get_mut("versions") {
        versions.min_items = Some(1);
        if let Some(version) = versions.items.as_deref_mut() {
            version.required = ["name", "schema", "served", "storage"].map(String::from).to_vec();
            if let Some(name) = version.properties.get_mut("name") {
                name.min_length = Some(1);
                name.pattern = Some("^v[1-9][0-9]*([a-z]+[1-9][0-9]*)?$".into());
            }
        }
    }
}

/// The kcp resources whose CRD requires `spec` (kcp `config/crds`).
const SPEC_REQUIRED: &[&str] = &["workspaces", "apibindings", "partitions", "partitionsets"];
/// Those of them whose CRD defaults `spec` to `{}` (kcp `config/crds`: the Workspace).
const SPEC_DEFAULTED: &[&str] = &["workspaces"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serves_every_kcp_kind_with_schemas_and_conversions() {
        let defs = kcp_resources();
        let names: Vec<String> = defs
            .iter()
            .map(|d| format!("{}/{}/{}", d.group, d.version, d.resource))
            .collect();
        assert_eq!(
            names,
            [
                "tenancy.kcp.io/v1alpha1/workspaces",
                "tenancy.kcp.io/v1alpha1/workspacetypes",
                "core.kcp.io/v1alpha1/logicalclusters",
                "apis.kcp.io/v1alpha2/apiexports",
                "apis.kcp.io/v1alpha2/apibindings",
                "apis.kcp.io/v1alpha1/apiresourceschemas",
                "apis.kcp.io/v1alpha1/apiexportendpointslices",
                "apis.kcp.io/v1alpha1/apiexports",
                "apis.kcp.io/v1alpha1/apibindings",
                "topology.kcp.io/v1alpha1/partitions",
                "topology.kcp.io/v1alpha1/partitionsets",
            ]
        );
        assert!(defs.iter().all(|d| !d.namespaced && d.generation));
        let mut workspace_type = serde_json::json!({"spec": {}});
        defs[1].schema.apply_defaults(&mut workspace_type);
        assert_eq!(
            workspace_type["spec"]["defaultChildWorkspaceType"],
            serde_json::json!({"name": "universal", "path": "root"}),
            "kcp's CRD default"
        );
        // Top-level required fields as kcp's CRDs declare them.
        for d in &defs {
            let want: &[&str] = if SPEC_REQUIRED.contains(&d.resource.as_str()) {
                &["spec"]
            } else {
                &[]
            };
            let got: Vec<&str> = d
                .schema
                .required
                .iter()
                .map(String::as_str)
                .filter(|f| *f != "metadata")
                .collect();
            assert_eq!(got, want, "{}/{}", d.version, d.resource);
        }
        let ws = &defs[0];
        assert!(ws.status_subresource);
        assert!(ws.schema.field("spec").is_some());
        // v1alpha1 exports convert to the stored v1alpha2 shape and back.
        let v1 = serde_json::json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIExport", "metadata": {"name": "e"},
            "spec": {"latestResourceSchemas": ["v1.widgets.example.io"]}});
        let stored = defs[7].stored(v1.clone()).unwrap();
        assert_eq!(stored["apiVersion"], "apis.kcp.io/v1alpha2");
        let back = defs[7].served(stored).unwrap();
        assert_eq!(
            back["spec"]["latestResourceSchemas"],
            v1["spec"]["latestResourceSchemas"]
        );
    }
}
