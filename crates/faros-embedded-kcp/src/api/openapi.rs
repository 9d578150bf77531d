//! OpenAPI v3 documents, per logical cluster, good enough for kubectl's server-side field
//! validation (`kubectl apply`/`create` without `--validate=false`) and `kubectl explain`; the
//! v2 document ([`v2`]) is built from the same schemas.

use axum::response::Response;
use faros_core::status::Status;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::ok;
use crate::registry::ResourceDef;
use crate::state::ServerState;

pub mod v2;

fn gv_path(def: &ResourceDef) -> String {
    if def.group.is_empty() {
        format!("api/{}", def.version)
    } else {
        format!("apis/{}/{}", def.group, def.version)
    }
}

/// `/openapi/v3`: one entry per group-version with a content hash, as kube-apiserver serves it.
pub fn index(state: &ServerState, cluster: &str, prefix_cluster: Option<&String>) -> Response {
    let mut paths = Map::new();
    let prefix = prefix_cluster.map(|c| format!("/clusters/{c}")).unwrap_or_default();
    let mut gvs: Vec<String> = Vec::new();
    for def in state.registry.resources(cluster) {
        let gv = gv_path(&def);
        if !gvs.contains(&gv) {
            gvs.push(gv);
        }
    }
    for gv in gvs {
        let hash = document_value(state, cluster, &gv)
            .map(|d| hash(&d))
            .unwrap_or_default();
        paths.insert(
            gv.clone(),
            json!({"serverRelativeURL": format!("{prefix}/openapi/v3/{gv}?hash={hash}")}),
        );
    }
    ok(&json!({"paths": paths}))
}

fn hash(v: &Value) -> String {
    let digest = Sha256::digest(serde_json::to_vec(v).unwrap_or_default());
    digest.iter().take(32).map(|b| format!("{b:02X}")).collect()
}

pub fn document(state: &ServerState, cluster: &str, gv: &str) -> Result<Response, Status> {
    document_value(state, cluster, gv)
        .map(|d| ok(&d))
        .ok_or_else(|| Status::not_found_message("the server could not find the requested resource"))
}

/// The name of a kind's schema in both documents' definitions.
fn schema_name(def: &ResourceDef) -> String {
    let group = if def.group.is_empty() {
        "core".to_string()
    } else {
        def.group.clone()
    };
    format!("{group}.{}.{}", def.version, def.kind)
}

fn document_value(state: &ServerState, cluster: &str, gv: &str) -> Option<Value> {
    let defs: Vec<_> = state
        .registry
        .resources(cluster)
        .into_iter()
        .filter(|d| gv_path(d) == gv)
        .collect();
    if defs.is_empty() {
        return None;
    }
    let mut paths = Map::new();
    let mut schemas = Map::new();
    for def in &defs {
        let gvk = json!([{"group": def.group, "version": def.version, "kind": def.kind}]);
        let mut schema = def.schema.to_openapi_v3();
        schema["x-kubernetes-group-version-kind"] = gvk.clone();
        let name = schema_name(def);
        schemas.insert(name.clone(), schema);
        let reference = json!({"$ref": format!("#/components/schemas/{name}")});
        let body = |_: &str| json!({"content": {"application/json": {"schema": reference}}});
        let params = json!([
            {"name": "dryRun", "in": "query", "schema": {"type": "string"}},
            {"name": "fieldManager", "in": "query", "schema": {"type": "string"}},
            {"name": "fieldValidation", "in": "query", "schema": {"type": "string"}},
        ]);
        let op = |verb: &str| {
            json!({
                "operationId": format!("{verb}{}", def.kind),
                "parameters": params,
                "requestBody": body(verb),
                "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": reference}}}},
                "x-kubernetes-action": verb,
                "x-kubernetes-group-version-kind": gvk[0],
            })
        };
        let (collection, item) = operation_paths(def);
        paths.insert(collection, json!({"post": op("post")}));
        if let Some(item) = item {
            paths.insert(item, json!({"put": op("put"), "patch": op("patch")}));
        }
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": format!("v1.{}.0", super::discovery::KUBE_MINOR)},
        "paths": paths,
        "components": {"schemas": schemas}
    }))
}

/// The paths a kind's writes go to: its collection (create) and, unless it is create-only, one
/// object (update, patch).
fn operation_paths(def: &ResourceDef) -> (String, Option<String>) {
    let base = if def.group.is_empty() {
        format!("/api/{}", def.version)
    } else {
        format!("/apis/{}/{}", def.group, def.version)
    };
    let collection = if def.namespaced {
        format!("{base}/namespaces/{{namespace}}/{}", def.resource)
    } else {
        format!("{base}/{}", def.resource)
    };
    let item = (!def.create_only).then(|| format!("{collection}/{{name}}"));
    (collection, item)
}
