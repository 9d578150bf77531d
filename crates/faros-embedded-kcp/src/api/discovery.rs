//! Legacy discovery (`/api`, `/apis`, per group-version resource lists), per logical cluster, and `/version`.

use std::collections::BTreeMap;

use axum::response::Response;
use faros_core::status::Status;
use serde_json::{Value, json};

use super::ok;
use crate::state::ServerState;

/// The Kubernetes version this server reports (the k8s-openapi version faros builds against).
pub const KUBE_MINOR: &str = "36";

pub fn version() -> Response {
    ok(&json!({
        "major": "1", "minor": KUBE_MINOR,
        "gitVersion": format!("v1.{KUBE_MINOR}.0+faros-embedded-kcp"),
        "gitCommit": "", "gitTreeState": "clean", "buildDate": "",
        "goVersion": "", "compiler": "rustc", "platform": format!("{}/{}", std::env::consts::OS, std::env::consts::ARCH)
    }))
}

pub fn legacy_versions() -> Response {
    ok(
        &json!({"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": ""}]}),
    )
}

/// group → versions served in `cluster`, in registration order.
fn group_versions(state: &ServerState, cluster: &str) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for def in state.registry.resources(cluster) {
        if def.group.is_empty() {
            continue;
        }
        let versions = out.entry(def.group.clone()).or_default();
        if !versions.contains(&def.version) {
            versions.push(def.version.clone());
        }
    }
    out
}

fn api_group(name: &str, versions: &[String]) -> Value {
    let vs: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{name}/{v}"), "version": v}))
        .collect();
    json!({"name": name, "versions": vs, "preferredVersion": vs.first().cloned().unwrap_or(Value::Null)})
}

pub fn groups(state: &ServerState, cluster: &str) -> Response {
    let groups: Vec<Value> = group_versions(state, cluster)
        .iter()
        .map(|(g, v)| api_group(g, v))
        .collect();
    ok(&json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}))
}

pub fn group(state: &ServerState, cluster: &str, name: &str) -> Result<Response, Status> {
    let all = group_versions(state, cluster);
    let versions = all
        .get(name)
        .ok_or_else(|| Status::not_found_message("the server could not find the requested resource"))?;
    let mut g = api_group(name, versions);
    g["kind"] = json!("APIGroup");
    g["apiVersion"] = json!("v1");
    Ok(ok(&g))
}

pub fn resources(state: &ServerState, cluster: &str, group: &str, version: &str) -> Result<Response, Status> {
    let defs: Vec<_> = state
        .registry
        .resources(cluster)
        .into_iter()
        .filter(|d| d.group == group && d.version == version)
        .collect();
    if defs.is_empty() {
        return Err(Status::not_found_message(
            "the server could not find the requested resource",
        ));
    }
    let mut resources = Vec::new();
    for d in &defs {
        let mut r = json!({"name": d.resource, "singularName": d.singular, "namespaced": d.namespaced, "kind": d.kind, "verbs": d.verbs()});
        if !d.short_names.is_empty() {
            r["shortNames"] = json!(d.short_names);
        }
        if !d.categories.is_empty() {
            r["categories"] = json!(d.categories);
        }
        if let Some(hash) = &d.storage_version_hash {
            r["storageVersionHash"] = json!(hash);
        }
        resources.push(r);
        if d.status_subresource {
            resources.push(json!({"name": format!("{}/status", d.resource), "singularName": "", "namespaced": d.namespaced, "kind": d.kind, "verbs": ["get", "patch", "update"]}));
        }
        if d.group.is_empty() && d.resource == "namespaces" {
            resources.push(json!({"name": "namespaces/finalize", "singularName": "", "namespaced": false, "kind": "Namespace", "verbs": ["update"]}));
        }
    }
    let gv = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Ok(ok(
        &json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}),
    ))
}
