//! `GET /api/providers`: the catalog as the portal sees it.

use std::collections::BTreeSet;
use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use faros_core::catalog::{Dependency, PermissionClaim, UiChild};
use faros_core::names;
use serde::Serialize;

use crate::catalog::registry::{Registry, View};

/// One provider in the list.
#[derive(Clone, Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ProviderItem {
    pub name: String,
    pub display_name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vendor: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    #[serde(rename = "iconURL", skip_serializing_if = "Option::is_none")]
    pub icon_url: Option<String>,
    pub ready: bool,
    /// The readiness reason when not Ready (a fixed vocabulary, no upstream error text).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_ready_reason: Option<String>,
    #[serde(rename = "hasUI")]
    pub has_ui: bool,
    pub has_backend: bool,
    pub dependencies: Vec<Dependency>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_export_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_export_path: Option<String>,
    pub permission_claims: Vec<PermissionClaim>,
    pub edge_proxy_access: bool,
    pub children: Vec<UiChild>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_heartbeat: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reported_version: Option<String>,
}

/// A side-nav category.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct Category {
    pub name: String,
    pub icon: String,
    pub order: u32,
}

/// The response body.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct ProviderList {
    pub items: Vec<ProviderItem>,
    pub categories: Vec<Category>,
}

/// Categories the portal knows icons for; others get a generic icon after them.
const KNOWN_CATEGORIES: &[(&str, &str, u32)] =
    &[("Edges", "Server", 10), ("AI", "Sparkles", 20), ("Demo", "Package", 90)];

pub fn item(view: &View) -> ProviderItem {
    let p = &view.provider;
    let spec = &p.spec;
    let has_ui = p.endpoints.ui.is_some();
    let icon_url = spec
        .icon_url
        .clone()
        .or_else(|| has_ui.then(|| format!("{}/icon.svg", names::ui_proxy_prefix(&p.name))));
    ProviderItem {
        name: p.name.clone(),
        display_name: if spec.display_name.is_empty() {
            p.name.clone()
        } else {
            spec.display_name.clone()
        },
        description: spec.description.clone(),
        vendor: spec.vendor.clone(),
        version: spec.version.clone(),
        category: spec.category.clone(),
        icon_url,
        ready: view.readiness.ready,
        not_ready_reason: (!view.readiness.ready).then(|| view.readiness.reason.to_string()),
        has_ui,
        has_backend: p.endpoints.backend.is_some(),
        dependencies: spec.dependencies.clone().unwrap_or_default(),
        api_export_name: spec.api_export.as_ref().map(|e| e.name.clone()),
        api_export_path: spec
            .api_export
            .as_ref()
            .map(|_| names::provider_workspace_path(&p.name)),
        permission_claims: spec.permission_claims().to_vec(),
        edge_proxy_access: spec.edge_proxy_access(),
        children: spec.ui.as_ref().and_then(|u| u.children.clone()).unwrap_or_default(),
        last_heartbeat: view
            .last_beat
            .map(|t| jiff::Timestamp::from_second(t.as_second()).unwrap_or(t).to_string()),
        reported_version: view.reported_version.clone(),
    }
}

/// The list for `views` (already sorted by name).
pub fn provider_list(views: &[View]) -> ProviderList {
    let items: Vec<ProviderItem> = views.iter().map(item).collect();
    let used: BTreeSet<&str> = items.iter().filter_map(|i| i.category.as_deref()).collect();
    let mut categories: Vec<Category> = KNOWN_CATEGORIES
        .iter()
        .map(|(n, i, o)| Category {
            name: (*n).into(),
            icon: (*i).into(),
            order: *o,
        })
        .collect();
    categories.extend(
        used.iter()
            .filter(|u| !KNOWN_CATEGORIES.iter().any(|(n, _, _)| n == *u))
            .map(|u| Category {
                name: (*u).into(),
                icon: "Folder".into(),
                order: 100,
            }),
    );
    ProviderList { items, categories }
}

pub async fn list(State(registry): State<Arc<Registry>>) -> Json<ProviderList> {
    Json(provider_list(&registry.list()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::catalog::clock::{Clock, ManualClock};
    use crate::catalog::registry::{Candidate, Registry, RegistrySettings, Reported};
    use faros_core::catalog::{ApiExportRef, BackendSpec, CatalogEntry, CatalogEntrySpec, UiSpec};
    use pretty_assertions::assert_eq;
    use serde_json::json;
    use std::sync::Arc;

    #[test]
    fn list_wire_shape() {
        let clock = Arc::new(ManualClock::new("2026-01-01T00:00:00Z".parse().unwrap()));
        let reg = Registry::new(clock.clone(), RegistrySettings::default());
        let q = CatalogEntry::new(
            "quickstart",
            CatalogEntrySpec {
                display_name: "Quickstart".into(),
                category: Some("Demo".into()),
                ui: Some(UiSpec {
                    url: Some("http://q:8081/ui".into()),
                    children: Some(vec![UiChild {
                        display_name: "Greetings".into(),
                        builtin_route: "greetings".into(),
                    }]),
                    ..Default::default()
                }),
                backend: Some(BackendSpec {
                    url: "http://q:8081".into(),
                    health_path: None,
                }),
                api_export: Some(ApiExportRef {
                    name: "quickstart.faros.sh".into(),
                    permission_claims: Some(vec![PermissionClaim {
                        resource: "configmaps".into(),
                        verbs: vec!["get".into()],
                        ..Default::default()
                    }]),
                }),
                ..Default::default()
            },
        );
        let a = CatalogEntry::new(
            "alpha",
            CatalogEntrySpec {
                display_name: "Alpha".into(),
                category: Some("Tools".into()),
                api_export: Some(ApiExportRef {
                    name: "alpha.faros.sh".into(),
                    permission_claims: None,
                }),
                ..Default::default()
            },
        );
        for (name, e) in [("quickstart", q), ("alpha", a)] {
            reg.upsert(Candidate {
                cluster: format!("c-{name}"),
                path: Some(names::provider_workspace_path(name)),
                source: "vw".into(),
                entry: e,
            });
        }
        reg.heartbeat(
            "quickstart",
            Reported {
                version: Some("0.1.0".into()),
                revision: None,
            },
            clock.now(),
        )
        .unwrap();
        let body = serde_json::to_value(provider_list(&reg.list())).unwrap();
        assert_eq!(
            body,
            json!({
                "items": [
                    {"name": "alpha", "displayName": "Alpha", "category": "Tools", "ready": true, "hasUI": false,
                     "hasBackend": false, "dependencies": [], "apiExportName": "alpha.faros.sh",
                     "apiExportPath": "root:faros:providers:alpha", "permissionClaims": [], "edgeProxyAccess": false,
                     "children": []},
                    {"name": "quickstart", "displayName": "Quickstart", "category": "Demo",
                     "iconURL": "/ui/providers/quickstart/icon.svg", "ready": false,
                     "notReadyReason": "BackendUnhealthy", "hasUI": true, "hasBackend": true, "dependencies": [],
                     "apiExportName": "quickstart.faros.sh", "apiExportPath": "root:faros:providers:quickstart",
                     "permissionClaims": [{"resource": "configmaps", "verbs": ["get"]}], "edgeProxyAccess": false,
                     "children": [{"displayName": "Greetings", "builtinRoute": "greetings"}],
                     "lastHeartbeat": "2026-01-01T00:00:00Z", "reportedVersion": "0.1.0"}
                ],
                "categories": [
                    {"name": "Edges", "icon": "Server", "order": 10},
                    {"name": "AI", "icon": "Sparkles", "order": 20},
                    {"name": "Demo", "icon": "Package", "order": 90},
                    {"name": "Tools", "icon": "Folder", "order": 100}
                ]
            })
        );
    }
}
