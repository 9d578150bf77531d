//! The APIExport virtual workspace:
//! `/services/apiexport/<export cluster>/<export name>/clusters/{*|<cluster>}/...`.
//!
//! A provider sees, through one URL, the exported resources of every workspace that bound its export
//! (wildcard list and watch in one resourceVersion space, objects carrying `kcp.io/cluster`), can read
//! and write them per workspace, and can use the resources its consumers accepted as permission claims
//! (filtered by the claim's selector, limited to the effective verbs; writes stay inside the selector,
//! whose `matchLabels` are stamped on). Authorization is the same verb
//! on `apiexports/content` in the export's workspace; the consumers' own RBAC does not apply.

use std::collections::BTreeSet;
use std::sync::Arc;

use axum::body::Body;
use axum::response::Response;
use faros_core::status::Status;
use serde_json::{Value, json};

use super::params::Params;
use super::read::ObjectFilter;
use super::request::{self, ResourcePath, Target};
use super::{RequestContext, ok, serve_resource};
use crate::auth::Verb;
use crate::auth::{Attributes, UserInfo};
use crate::kcp::apis::LiveExport;
use crate::kcp::apis::view::{AcceptedClaim, ExportView};
use crate::objects::meta;
use crate::registry::ResourceDef;
use crate::state::ServerState;
use crate::write::claim::ClaimGuard;

pub const PREFIX: &str = "/services/apiexport/";

fn not_found() -> Status {
    Status::not_found_message("the server could not find the requested resource")
}

/// What a request through the virtual workspace may reach.
enum Served {
    /// An exported resource.
    Exported(Arc<ResourceDef>),
    /// A claimed resource of the consumers.
    Claimed(Arc<ResourceDef>),
    /// The consumers' APIBindings to this export (read-only).
    Bindings(Arc<ResourceDef>),
}

pub async fn serve(
    state: &Arc<ServerState>,
    user: UserInfo,
    rest: String,
    parts: http::request::Parts,
    body: Body,
) -> Result<Response, Status> {
    // <export cluster>/<export name>/clusters/<c>/...
    let mut segments = rest.splitn(3, '/');
    let (Some(export_cluster), Some(export_name), Some(tail)) = (segments.next(), segments.next(), segments.next())
    else {
        return Err(not_found());
    };
    let export_cluster = {
        let clusters = state.clusters.read().unwrap_or_else(|p| p.into_inner());
        clusters
            .resolve(export_cluster)
            .map(String::from)
            .ok_or_else(not_found)?
    };
    // kcp's virtual workspace has no handler for an export that does not exist.
    let Some(view) = crate::kcp::apis::export_view(state, &export_cluster, export_name) else {
        return Ok(super::page_not_found());
    };
    let path = request::parse(&format!("/{tail}"))?;
    if !path.explicit_cluster {
        return Err(not_found());
    }
    let cluster = path.cluster.clone();
    let params = Params::parse(parts.uri.query());
    let wildcard = cluster == "*";
    if !wildcard && !view.bindings.contains_key(&cluster) {
        let verb = if parts.method == http::Method::GET {
            Verb::Get
        } else {
            Verb::Update
        };
        return Err(Status::forbidden(format!(
            "{} is forbidden: User \"{}\" cannot {verb} workspace {cluster:?} through APIExport {}:{}: the workspace has no binding to it",
            faros_core::status::qualified("apis.kcp.io", "apiexports"),
            user.username,
            export_cluster,
            export_name
        )));
    }
    match path.target {
        Target::LegacyVersions => {
            authorize_content(state, &view, &user, Verb::Get)?;
            Ok(ok(
                &json!({"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": ""}]}),
            ))
        }
        Target::Groups => {
            authorize_content(state, &view, &user, Verb::Get)?;
            Ok(discovery_groups(state, &view))
        }
        Target::ResourceList { group, version } => {
            authorize_content(state, &view, &user, Verb::Get)?;
            discovery_resources(state, &view, &group, &version)
        }
        Target::Group(g) => {
            authorize_content(state, &view, &user, Verb::Get)?;
            let versions: BTreeSet<String> = served_defs(state, &view)
                .into_iter()
                .filter(|(d, _)| d.group == g)
                .map(|(d, _)| d.version.clone())
                .collect();
            let vs: Vec<Value> = versions
                .iter()
                .map(|v| json!({"groupVersion": format!("{g}/{v}"), "version": v}))
                .collect();
            if vs.is_empty() {
                return Err(not_found());
            }
            Ok(ok(
                &json!({"kind": "APIGroup", "apiVersion": "v1", "name": g, "versions": vs, "preferredVersion": vs[0]}),
            ))
        }
        Target::Resource(rp) => {
            let verb = super::verb(&parts.method, &rp, &params)?;
            // kcp's virtual workspace decides on `apiexports/content` but refuses in terms of the
            // request, as any authorizer of a resource request does.
            authorize_content(state, &view, &user, verb).map_err(|status| match status.code {
                403 => crate::auth::forbidden_status(
                    &Attributes {
                        subresource: rp.subresource.as_deref().unwrap_or_default(),
                        name: rp.name.as_deref().unwrap_or_default(),
                        namespace: rp.namespace.as_deref().unwrap_or_default(),
                        ..Attributes::resource(&user, verb.as_str(), &rp.group, &rp.resource)
                    },
                    crate::auth::authorize::ACCESS_DENIED,
                ),
                _ => status,
            })?;
            let Some(served) = find(state, &view, &rp) else {
                // A resource the export does not serve (one it dropped, say) in a group of custom
                // resources is a path no handler claims: kube's plain 404, as kcp answers.
                let builtin_group = crate::builtin::builtin_resources().iter().any(|d| d.group == rp.group);
                return match builtin_group {
                    true => Err(not_found()),
                    false => Ok(super::page_not_found()),
                };
            };
            let live = crate::kcp::apis::live_export(state, &export_cluster, export_name).ok_or_else(not_found)?;
            let (def, visible, claim) = scope(&view, live, &served, &cluster, verb)?;
            // kcp's virtual workspace forwards the request to the shard with its own client, so a
            // write without `fieldManager` is recorded as kcp's (its user agent), not the caller's.
            let mut headers = parts.headers;
            headers.insert(http::header::USER_AGENT, http::HeaderValue::from_static("kcp"));
            let ctx = RequestContext {
                state: state.clone(),
                user,
                cluster,
                params,
                headers,
                method: parts.method,
                visible: Some(visible),
                claim,
            };
            serve_resource(ctx, def, rp, body, false).await
        }
        _ => Err(not_found()),
    }
}

/// The same verb on `apiexports/content` of the export, in the export's workspace (kcp's VW authorizer).
fn authorize_content(state: &ServerState, view: &ExportView, user: &UserInfo, verb: Verb) -> Result<(), Status> {
    let attrs = Attributes {
        subresource: "content",
        name: &view.export_name,
        ..Attributes::resource(user, verb.as_str(), "apis.kcp.io", "apiexports")
    };
    crate::auth::authorize(state, &view.export_cluster, &attrs)
}

/// Every definition reachable through the view, with the verbs it offers.
fn served_defs(state: &ServerState, view: &ExportView) -> Vec<(Arc<ResourceDef>, Vec<String>)> {
    let all_verbs = || crate::registry::ALL_VERBS.map(|v| v.as_str().to_string()).to_vec();
    let mut out: Vec<(Arc<ResourceDef>, Vec<String>)> =
        view.resources.iter().map(|d| (d.clone(), all_verbs())).collect();
    let mut claimed: Vec<(String, String, BTreeSet<String>)> = Vec::new();
    // kcp serves what the export claims even before any consumer accepted (as empty lists).
    for (group, resource, verbs) in exported_claims(state, view) {
        match claimed.iter_mut().find(|(g, r, _)| *g == group && *r == resource) {
            Some((_, _, vs)) => vs.extend(verbs),
            None => claimed.push((group, resource, verbs.into_iter().collect())),
        }
    }
    for consumer in view.bindings.values() {
        for c in &consumer.claims {
            match claimed.iter_mut().find(|(g, r, _)| *g == c.group && *r == c.resource) {
                Some((_, _, verbs)) => verbs.extend(c.verbs.iter().cloned()),
                None => claimed.push((c.group.clone(), c.resource.clone(), c.verbs.iter().cloned().collect())),
            }
        }
    }
    let all = state.registry.all_resources();
    for (group, resource, verbs) in claimed {
        // Bindings are served below (read-only); a claim on them widens what is visible.
        if group == "apis.kcp.io" && resource == "apibindings" {
            continue;
        }
        if let Some(def) = all
            .iter()
            .find(|d| d.group == group && d.resource == resource && d.conversion.is_none())
        {
            out.push((def.clone(), verbs.into_iter().collect()));
        }
    }
    // Both served versions of APIBinding, the stored v1alpha2 first (discovery prefers it).
    let mut bindings: Vec<Arc<ResourceDef>> = all
        .iter()
        .filter(|d| d.group == "apis.kcp.io" && d.resource == "apibindings")
        .cloned()
        .collect();
    bindings.sort_by_key(|d| d.conversion.is_some());
    for b in bindings {
        out.push((
            b,
            [Verb::Get, Verb::List, Verb::Watch]
                .map(|v| v.as_str().to_string())
                .to_vec(),
        ));
    }
    out
}

/// The claims of the export itself: `(group, resource, verbs)`.
fn exported_claims(state: &ServerState, view: &ExportView) -> Vec<(String, String, Vec<String>)> {
    let key = crate::store::ObjectKey::new("apis.kcp.io", "apiexports", &view.export_cluster, "", &view.export_name);
    let Ok(Some(export)) = state.store.get(&key) else {
        return Vec::new();
    };
    let strs = |v: &Value| -> Vec<String> {
        v.as_array()
            .map(|a| a.iter().filter_map(|x| x.as_str().map(String::from)).collect())
            .unwrap_or_default()
    };
    export
        .pointer("/spec/permissionClaims")
        .and_then(Value::as_array)
        .map(|claims| {
            claims
                .iter()
                .map(|c| {
                    let s = |f: &str| c.get(f).and_then(Value::as_str).unwrap_or_default().to_string();
                    (s("group"), s("resource"), strs(c.get("verbs").unwrap_or(&Value::Null)))
                })
                .collect()
        })
        .unwrap_or_default()
}

fn find(state: &ServerState, view: &ExportView, rp: &ResourcePath) -> Option<Served> {
    let matches = |d: &ResourceDef| d.group == rp.group && d.version == rp.version && d.resource == rp.resource;
    if let Some(d) = view.resources.iter().find(|d| matches(d)) {
        return Some(Served::Exported(d.clone()));
    }
    for (d, _) in served_defs(state, view) {
        if matches(&d) {
            return Some(if d.group == "apis.kcp.io" && d.resource == "apibindings" {
                Served::Bindings(d)
            } else {
                Served::Claimed(d)
            });
        }
    }
    None
}

fn claim_for<'a>(view: &'a ExportView, cluster: &str, def: &ResourceDef) -> Option<&'a AcceptedClaim> {
    view.bindings
        .get(cluster)?
        .claims
        .iter()
        .find(|c| c.group == def.group && c.resource == def.resource)
}

/// The definition to serve, the objects a request may see, and the selector its writes must stay in.
type Scoped = (Arc<ResourceDef>, ObjectFilter, Option<Arc<ClaimGuard>>);

/// The definition to serve, the objects the request may see, and the selector its writes must stay
/// in, after the claim verb checks. The visibility filters read the export's bindings live, so a
/// watch sees workspaces bound after it began.
fn scope(view: &ExportView, live: LiveExport, served: &Served, cluster: &str, verb: Verb) -> Result<Scoped, Status> {
    let bound =
        move |live: &LiveExport, o: &Value| live.with(|v| v.is_some_and(|v| v.bindings.contains_key(meta::cluster(o))));
    let reading = verb.is_read();
    // Claims list verbs as text, and a claim's `*` covers every verb.
    let verb = verb.as_str();
    match served {
        Served::Exported(def) => Ok((def.clone(), Arc::new(move |o: &Value| bound(&live, o)), None)),
        Served::Bindings(def) => {
            if !reading {
                return Err(Status::method_not_allowed(
                    "apibindings are read-only in the APIExport virtual workspace",
                ));
            }
            let (ec, en) = (view.export_cluster.clone(), view.export_name.clone());
            let (group, resource, verb) = (def.group.clone(), def.resource.clone(), verb.to_string());
            Ok((
                def.clone(),
                Arc::new(move |o: &Value| {
                    // A bound binding is the export's by its own content (kcp indexes bindings by
                    // the export they reference), not by the export's live set: that set forgets a
                    // workspace as its binding goes, and a watcher reaching the deletion later
                    // must still get its DELETED event.
                    let names_export =
                        o.pointer("/spec/reference/export/name").and_then(Value::as_str) == Some(en.as_str());
                    let own = names_export
                        && match o.pointer("/status/apiExportClusterName").and_then(Value::as_str) {
                            Some(c) => c == ec,
                            None => bound(&live, o),
                        };
                    // An accepted claim on apibindings shows the consumer's other bindings too.
                    own || claim_admits(&live, o, &group, &resource, &verb)
                }),
                None,
            ))
        }
        Served::Claimed(def) => {
            let mut guard = None;
            if cluster != "*" {
                match claim_for(view, cluster, def) {
                    Some(claim) => {
                        if !claim.verbs.iter().any(|v| v == verb || v == "*") {
                            return Err(Status::forbidden(format!(
                                "{} is forbidden: the permission claim accepted by workspace {cluster:?} does not include verb {verb:?}",
                                faros_core::status::qualified(&def.group, &def.resource)
                            )));
                        }
                        guard = claim.selector.clone().map(|selector| {
                            Arc::new(ClaimGuard {
                                selector,
                                match_labels: claim.match_labels.clone(),
                            })
                        });
                    }
                    // Not accepted (yet, or rejected): reads see nothing, as in kcp; writes are refused.
                    None if reading => {}
                    None => {
                        return Err(Status::forbidden(format!(
                            "{} is forbidden: workspace {cluster:?} did not accept a permission claim for them",
                            faros_core::status::qualified(&def.group, &def.resource)
                        )));
                    }
                }
            }
            // Per consumer: the claim's verbs must include this verb and the object must match its selector.
            let (group, resource, verb) = (def.group.clone(), def.resource.clone(), verb.to_string());
            Ok((
                def.clone(),
                Arc::new(move |o: &Value| claim_admits(&live, o, &group, &resource, &verb)),
                guard,
            ))
        }
    }
}

/// Whether the consumer `o` lives in accepted a claim on `group/resource` with `verb` whose
/// selector `o` matches.
fn claim_admits(live: &LiveExport, o: &Value, group: &str, resource: &str, verb: &str) -> bool {
    live.with(|v| {
        let Some(consumer) = v.and_then(|v| v.bindings.get(meta::cluster(o))) else {
            return false;
        };
        consumer.claims.iter().any(|claim| {
            claim.group == group
                && claim.resource == resource
                && claim.verbs.iter().any(|x| x == verb || x == "*")
                && claim.selector.as_ref().is_none_or(|s| s.matches(meta::labels(o)))
        })
    })
}

fn discovery_groups(state: &ServerState, view: &ExportView) -> Response {
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for (d, _) in served_defs(state, view) {
        if d.group.is_empty() {
            continue;
        }
        match groups.iter_mut().find(|(g, _)| *g == d.group) {
            Some((_, vs)) if !vs.contains(&d.version) => vs.push(d.version.clone()),
            Some(_) => {}
            None => groups.push((d.group.clone(), vec![d.version.clone()])),
        }
    }
    let groups: Vec<Value> = groups
        .iter()
        .map(|(g, vs)| {
            let versions: Vec<Value> = vs
                .iter()
                .map(|v| json!({"groupVersion": format!("{g}/{v}"), "version": v}))
                .collect();
            json!({"name": g, "versions": versions, "preferredVersion": versions[0]})
        })
        .collect();
    ok(&json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}))
}

fn discovery_resources(state: &ServerState, view: &ExportView, group: &str, version: &str) -> Result<Response, Status> {
    let mut resources = Vec::new();
    for (d, verbs) in served_defs(state, view) {
        if d.group != group || d.version != version {
            continue;
        }
        resources.push(json!({"name": d.resource, "singularName": d.singular, "namespaced": d.namespaced, "kind": d.kind, "verbs": verbs}));
        if d.status_subresource && verbs.iter().any(|v| v == "update" || v == "patch") {
            resources.push(json!({"name": format!("{}/status", d.resource), "singularName": "", "namespaced": d.namespaced, "kind": d.kind, "verbs": ["get", "patch", "update"]}));
        }
    }
    if resources.is_empty() {
        return Err(not_found());
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
