//! Where WorkspaceTypes come from: the stored objects of each workspace, and kcp's built-in types
//! `root:root` and `root:universal`, which are created in `root` at startup (with root's exports
//! they default-bind) and are known to admission even before that write lands.

use serde_json::{Value, json};

use super::types::TypeInfo;
use crate::client::landed;
use crate::clusters::{LOGICAL_CLUSTER_GROUP, LOGICAL_CLUSTER_RESOURCE, PATH_ANNOTATION};
use crate::state::ServerState;
use crate::store::ObjectKey;

pub const GROUP: &str = "tenancy.kcp.io";
pub const TYPES: &str = "workspacetypes";
/// LogicalCluster annotation naming the workspace's type (`<path>:<name>`).
pub const TYPE_ANNOTATION: &str = "internal.tenancy.kcp.io/type";
/// The type of the root workspace.
pub const ROOT_TYPE: &str = "root:root";
/// kcp's ClusterRole letting every authenticated user `use` the generic types in root.
const USE_ROLE: &str = "system:kcp:universal-workspacetype-use";

/// The specs of kcp's built-in types in `root`. `universal` default-binds root's `tenancy.kcp.io`
/// and `topology.kcp.io` exports: only workspaces of types extending it serve those APIs.
fn builtin_specs() -> [(&'static str, Value); 2] {
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
    let name = obj.pointer("/metadata/name")?.as_str()?.to_string();
    let canonical = obj
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(PATH_ANNOTATION))
        .and_then(Value::as_str)
        .unwrap_or(path)
        .to_string();
    let spec = serde_json::from_value(obj.get("spec").cloned().unwrap_or_else(|| json!({}))).ok()?;
    let cluster = obj
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(crate::objects::CLUSTER_ANNOTATION))
        .and_then(Value::as_str)
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
    let annotated = crate::kcp::clusters::logical_cluster(state, cluster).and_then(|lc| {
        lc.pointer("/metadata/annotations")
            .and_then(|a| a.get(TYPE_ANNOTATION))
            .and_then(Value::as_str)
            .map(String::from)
    });
    annotated.or_else(|| (cluster == "root").then(|| ROOT_TYPE.to_string()))
}

/// Creates the built-in types, the `use` grant for them, and root's type annotation (idempotent).
pub async fn ensure_builtins(state: &ServerState) {
    crate::kcp::root_apis::ensure(state).await;
    for (name, spec) in builtin_specs() {
        let key = ObjectKey::new(GROUP, TYPES, "root", "", name);
        if let Ok(Some(stored)) = state.store.get(&key) {
            // kcp re-applies its built-in types at start (root's is create-only): a state directory
            // from an older version gets the current `universal`.
            if name == "universal" && stored.get("spec") != Some(&spec) {
                let mut updated = stored.clone();
                updated["spec"] = spec;
                landed(
                    crate::client::Client::system(state)
                        .update(GROUP, TYPES, &stored, updated)
                        .await,
                );
            }
            continue;
        }
        let obj = json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "WorkspaceType",
            "metadata": {"name": name, "annotations": {PATH_ANNOTATION: "root"}}, "spec": spec});
        if let Err(e) = crate::client::Client::system(state)
            .create("root", GROUP, TYPES, obj)
            .await
        {
            tracing::debug!(error = %e, name, "built-in workspace type not created");
        }
    }
    let rbac = "rbac.authorization.k8s.io";
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": USE_ROLE},
        "rules": [{"apiGroups": [GROUP], "resources": [TYPES], "resourceNames": ["universal"], "verbs": ["use"]}]});
    let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": USE_ROLE},
        "roleRef": {"apiGroup": rbac, "kind": "ClusterRole", "name": USE_ROLE},
        "subjects": [{"apiGroup": rbac, "kind": "Group", "name": crate::auth::GROUP_AUTHENTICATED}]});
    for (resource, obj) in [("clusterroles", role), ("clusterrolebindings", binding)] {
        let key = ObjectKey::new(rbac, resource, "root", "", USE_ROLE);
        if matches!(state.store.get(&key), Ok(Some(_))) {
            continue;
        }
        if let Err(e) = crate::client::Client::system(state)
            .create("root", rbac, resource, obj)
            .await
        {
            tracing::debug!(error = %e, resource, "workspace type use grant not created");
        }
    }
    if let Some(mut lc) = crate::kcp::clusters::logical_cluster(state, "root") {
        let annotated = lc
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(TYPE_ANNOTATION))
            .is_some();
        if !annotated {
            let old = lc.clone();
            let meta = crate::objects::meta_mut(&mut lc);
            let ann = meta.entry("annotations").or_insert_with(|| json!({}));
            ann[TYPE_ANNOTATION] = json!(ROOT_TYPE);
            landed(
                crate::client::Client::system(state)
                    .update(LOGICAL_CLUSTER_GROUP, LOGICAL_CLUSTER_RESOURCE, &old, lc)
                    .await,
            );
        }
    }
}
