//! Where WorkspaceTypes come from: the stored objects of each workspace, and kcp's built-in types
//! `root:root` and `root:universal`, which are created in `root` at startup (with root's exports
//! they default-bind) and are known to admission even before that write lands.

use serde_json::{Value, json};

use super::types::TypeInfo;
use crate::clusters::PATH_ANNOTATION;
use crate::objects::meta;
use crate::state::ServerState;
use crate::store::ObjectKey;

pub const GROUP: &str = "tenancy.kcp.io";
pub const TYPES: &str = "workspacetypes";
/// LogicalCluster annotation naming the workspace's type (`<path>:<name>`).
pub const TYPE_ANNOTATION: &str = "internal.tenancy.kcp.io/type";
/// The type of the root workspace.
pub const ROOT_TYPE: &str = "root:root";

/// The specs of kcp's built-in types in `root`. `universal` default-binds root's `tenancy.kcp.io`
/// and `topology.kcp.io` exports: only workspaces of types extending it serve those APIs.
pub(super) fn builtin_specs() -> [(&'static str, Value); 2] {
    [
        (
            "universal",
            json!({"initializer": true,
                   "defaultAPIBindings": [{"path": "root", "export": crate::kcp::root_apis::TENANCY_EXPORT},
                                          {"path": "root", "export": crate::kcp::root_apis::TOPOLOGY_EXPORT}],
                   "defaultChildWorkspaceType": {"name": "universal", "path": "root"}}),
        ),
        (
            "root",
            json!({"limitAllowedParents": {"none": true},
                   "extend": {"with": [{"name": "universal", "path": "root"}]},
                   "defaultChildWorkspaceType": {"name": "universal", "path": "root"}}),
        ),
    ]
}

fn builtin(name: &str) -> Option<TypeInfo> {
    builtin_specs()
        .into_iter()
        .find(|(n, _)| *n == name)
        .and_then(|(n, spec)| {
            Some(TypeInfo {
                path: "root".into(),
                cluster: "root".into(),
                name: n.into(),
                spec: serde_json::from_value(spec).ok()?,
            })
        })
}

/// kcp grants `use` of `root:universal` to every authenticated user (ClusterRole
/// `system:kcp:universal-workspacetype-use`). The grant is also created as RBAC objects, but
/// admission honours it without them so the first requests after startup need not race the
/// controller that writes them.
pub fn usable_by_everyone(t: &TypeInfo) -> bool {
    t.path == "root" && t.name == "universal"
}

fn type_info(path: &str, cluster: &str, obj: &Value) -> Option<TypeInfo> {
    let name = meta::name(obj)?.to_string();
    let canonical = meta::annotation(obj, PATH_ANNOTATION).unwrap_or(path).to_string();
    let spec = serde_json::from_value(obj.get("spec").cloned().unwrap_or_else(|| json!({}))).ok()?;
    let cluster = meta::annotation(obj, meta::CLUSTER_ANNOTATION)
        .unwrap_or(cluster)
        .to_string();
    Some(TypeInfo {
        path: canonical,
        cluster,
        name,
        spec,
    })
}

/// The logical cluster name of a workspace path (or of a name given as is).
pub fn cluster_of_path(state: &ServerState, path: &str) -> Option<String> {
    let index = state.clusters.read().unwrap_or_else(|p| p.into_inner());
    index.resolve(path).map(String::from)
}

/// The canonical path of a logical cluster.
pub fn path_of_cluster(state: &ServerState, cluster: &str) -> Option<String> {
    let index = state.clusters.read().unwrap_or_else(|p| p.into_inner());
    index.get(cluster).map(|c| c.path.clone())
}

/// Looks a WorkspaceType up by workspace path and name.
pub fn lookup(state: &ServerState, path: &str, name: &str) -> Option<TypeInfo> {
    let stored = cluster_of_path(state, path).and_then(|cluster| {
        let key = ObjectKey::new(GROUP, TYPES, cluster.as_str(), "", name);
        state.store.get(&key).ok().flatten().map(|obj| (cluster, obj))
    });
    match stored {
        Some((cluster, obj)) => type_info(path, &cluster, &obj),
        None if path == "root" => builtin(name),
        None => None,
    }
}

/// The `<path>:<name>` type of a logical cluster; root's is `root:root` even before it is annotated.
pub fn cluster_type(state: &ServerState, cluster: &str) -> Option<String> {
    let annotated = crate::kcp::clusters::logical_cluster(state, cluster)
        .and_then(|lc| meta::annotation(&lc, TYPE_ANNOTATION).map(String::from));
    annotated.or_else(|| (cluster == "root").then(|| ROOT_TYPE.to_string()))
}
