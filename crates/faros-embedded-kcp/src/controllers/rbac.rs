//! Keeps the in-memory RBAC index in step with stored RBAC objects.

use std::sync::RwLock;

use crate::auth::{RbacIndex, RbacKind};
use crate::state::ServerState;
use crate::store::{Event, EventType};

fn kind(resource: &str) -> Option<RbacKind> {
    match resource {
        "roles" => Some(RbacKind::Role),
        "clusterroles" => Some(RbacKind::ClusterRole),
        "rolebindings" => Some(RbacKind::RoleBinding),
        "clusterrolebindings" => Some(RbacKind::ClusterRoleBinding),
        _ => None,
    }
}

pub fn apply_event(index: &RwLock<RbacIndex>, event: &Event) {
    let Some(kind) = kind(&event.key.resource) else { return };
    let mut index = index.write().unwrap_or_else(|p| p.into_inner());
    match event.event_type {
        EventType::Deleted => index.remove(&event.key.cluster, kind, &event.key.namespace, &event.key.name),
        _ => {
            if let Err(e) = index.upsert(&event.key.cluster, kind, &event.object) {
                tracing::warn!(error = %e, name = %event.key.name, "ignoring malformed RBAC object");
            }
        }
    }
}

/// Loads every stored RBAC object into the index (startup).
pub fn rebuild(state: &ServerState) {
    let mut index = state.rbac.write().unwrap_or_else(|p| p.into_inner());
    for resource in ["clusterroles", "roles", "clusterrolebindings", "rolebindings"] {
        let Some(kind) = kind(resource) else { continue };
        for obj in super::list_all(state, "rbac.authorization.k8s.io", resource, None, None) {
            let key = super::key_of("rbac.authorization.k8s.io", resource, &obj);
            if let Err(e) = index.upsert(&key.cluster, kind, &obj) {
                tracing::warn!(error = %e, name = %key.name, "ignoring malformed RBAC object");
            }
        }
    }
}
