//! What root holds from the start: kcp's built-in WorkspaceTypes (`root:root`, `root:universal`),
//! the grant to `use` the generic one, every authenticated user's read grant on root's workspaces,
//! root's own type annotation, and root's `tenancy.kcp.io` and `topology.kcp.io` exports with their
//! schemas and bind grants. Written through the in-process
//! client; the readers of these types are in `workspace_types`.

use serde_json::{Value, json};

use super::workspace_types::{self, GROUP, ROOT_TYPE, TYPE_ANNOTATION, TYPES};
use crate::client::landed;
use crate::clusters::{LOGICAL_CLUSTER_GROUP, LOGICAL_CLUSTER_RESOURCE, PATH_ANNOTATION};
use crate::kcp::root_apis;
use crate::objects::meta;
use crate::state::ServerState;
use crate::store::ObjectKey;

/// kcp's ClusterRole letting every authenticated user `use` the generic types in root, and its
/// binding.
const USE_ROLE: &str = "system:kcp:universal-workspacetype-use";
const USE_BINDING: &str = "system:kcp:authenticated:universal-workspacetype-use";

/// kcp's binding in root (its `config/root`) of the bootstrap ClusterRole `system:kcp:tenancy:reader`
/// (get, list and watch workspaces, workspacetypes and logicalclusters) to every authenticated
/// user: anyone may enter root (`system:kcp:workspace:access`) and see which workspaces it holds.
const READER_BINDING: &str = "system:kcp:authenticated:tenancy:reader";
const READER_ROLE: &str = "system:kcp:tenancy:reader";

/// Creates the built-in types, the `use` grant for them, the read grant on root's workspaces, and
/// root's type annotation (idempotent).
pub async fn ensure_builtins(state: &ServerState) {
    ensure_root_apis(state).await;
    for (name, spec) in workspace_types::builtin_specs() {
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
    let annotations = json!({crate::kcp::root_apis::REPLICATE_ANNOTATION: GROUP});
    // kcp's role names its organization and team types too, which this server does not have.
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": USE_ROLE, "annotations": annotations},
        "rules": [{"apiGroups": [GROUP], "resources": [TYPES], "resourceNames": ["universal", "organization", "team"], "verbs": ["use"]}]});
    let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": USE_BINDING, "annotations": annotations},
        "roleRef": {"apiGroup": rbac, "kind": "ClusterRole", "name": USE_ROLE},
        "subjects": [{"apiGroup": rbac, "kind": "Group", "name": crate::auth::GROUP_AUTHENTICATED}]});
    // The reader role is one of kcp's bootstrap ClusterRoles (`auth::bootstrap_roles`): bound, not
    // created, as kcp does.
    let reader = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": READER_BINDING},
        "roleRef": {"apiGroup": rbac, "kind": "ClusterRole", "name": READER_ROLE},
        "subjects": [{"apiGroup": rbac, "kind": "Group", "name": crate::auth::GROUP_AUTHENTICATED}]});
    for (resource, obj) in [
        ("clusterroles", role),
        ("clusterrolebindings", binding),
        ("clusterrolebindings", reader),
    ] {
        let key = ObjectKey::new(rbac, resource, "root", "", meta::name(&obj).unwrap_or_default());
        if matches!(state.store.get(&key), Ok(Some(_))) {
            continue;
        }
        if let Err(e) = crate::client::Client::system(state)
            .create("root", rbac, resource, obj)
            .await
        {
            tracing::debug!(error = %e, resource, "root grant not created");
        }
    }
    if let Some(mut lc) = crate::kcp::clusters::logical_cluster(state, "root") {
        let annotated = meta::annotations(&lc).is_some_and(|a| a.contains_key(TYPE_ANNOTATION));
        if !annotated {
            let old = lc.clone();
            let meta = meta::meta_mut(&mut lc);
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

/// Creates root's schemas, exports and bind grants that are missing (idempotent).
async fn ensure_root_apis(state: &ServerState) {
    let client = crate::client::Client::system(state);
    let mut objects: Vec<(&str, &str, Value)> = Vec::new();
    objects.extend(
        root_apis::schemas()
            .into_iter()
            .map(|s| ("apis.kcp.io", "apiresourceschemas", s)),
    );
    objects.extend(
        root_apis::exports()
            .into_iter()
            .map(|e| ("apis.kcp.io", "apiexports", e)),
    );
    objects.extend(
        root_apis::bind_grants()
            .into_iter()
            .map(|(r, o)| ("rbac.authorization.k8s.io", r, o)),
    );
    for (group, resource, obj) in objects {
        let name = meta::name(&obj).unwrap_or_default();
        let key = crate::store::ObjectKey::new(group, resource, "root", "", name);
        if matches!(state.store.get(&key), Ok(Some(_))) {
            continue;
        }
        if let Err(e) = client.create("root", group, resource, obj.clone()).await
            && e.code != 409
        {
            tracing::warn!(error = %e, resource, name, "root API object not created");
        }
    }
}
