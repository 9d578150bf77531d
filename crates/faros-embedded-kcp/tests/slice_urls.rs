//! kcp 0.32 publishes a shard's URL in an endpoint slice only when a tenant binds the export the way
//! the slice names it (its index key: the reference's path, or the referring object's own logical
//! cluster when it names none). A slice that leaves its export's workspace implicit gets no URL from
//! tenants that bind by path, as on real kcp (where quickstart saw no Greeting until its slice named
//! the path).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::TestServer;
use common::kcp::*;
use faros_core::kcp::apis::{v1alpha1, v1alpha2};
use faros_core::wait::wait_for;
use kube::api::{Api, PostParams};
use serde_json::json;

const EXPORT: &str = "widgets.example.io";
const WAIT: Duration = Duration::from_secs(30);

fn slice(name: &str, path: Option<&str>) -> v1alpha1::APIExportEndpointSlice {
    let export = match path {
        Some(p) => json!({"path": p, "name": EXPORT}),
        None => json!({"name": EXPORT}),
    };
    serde_json::from_value(
        json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIExportEndpointSlice",
        "metadata": {"name": name}, "spec": {"export": export}}),
    )
    .unwrap()
}

fn valid(s: Option<&v1alpha1::APIExportEndpointSlice>) -> bool {
    s.and_then(|s| s.status.as_ref())
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| {
            c.iter()
                .any(|c| c.type_ == "APIExportValid" && c.status == "True".into())
        })
}

#[tokio::test]
async fn slice_urls_follow_the_path_tenants_bind_with() {
    let t = TestServer::start().await;
    // Not in root, whose logical cluster name and path are both `root`: there the two keys agree.
    make_cluster(&t, "provider").await;
    let provider = admin_in(&t, "provider").await;
    create_schema(&provider, widget_schema("v1.widgets.example.io", "Widget", "widgets")).await;
    create_export(&provider, EXPORT, "v1.widgets.example.io", json!([])).await;
    let slices: Api<v1alpha1::APIExportEndpointSlice> = Api::all(provider.clone());
    for (name, path) in [("by-path", Some("root:provider")), ("implicit", None)] {
        slices.create(&PostParams::default(), &slice(name, path)).await.unwrap();
        wait_for(slices.clone(), name, valid, WAIT).await.unwrap();
    }

    // A tenant binds by path: the slice naming that path gets the URL, the implicit one does not
    // (both are reconciled in the same pass, so the implicit one's status is final here).
    make_cluster(&t, "tenant").await;
    let bindings: Api<v1alpha2::APIBinding> = Api::all(admin_in(&t, "tenant").await);
    bindings
        .create(
            &PostParams::default(),
            &binding("widgets", "root:provider", EXPORT, json!([])),
        )
        .await
        .unwrap();
    wait_bound(&bindings, "widgets").await;
    let by_path = wait_for(
        slices.clone(),
        "by-path",
        |s| s.is_some_and(|s| !s.urls().is_empty()),
        WAIT,
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(by_path.urls().len(), 1);
    let implicit = slices.get("implicit").await.unwrap();
    assert!(valid(Some(&implicit)), "{implicit:?}");
    assert!(implicit.urls().is_empty(), "{implicit:?}");

    // A binding in the export's own workspace that names no path has the implicit slice's key.
    let own: Api<v1alpha2::APIBinding> = Api::all(provider.clone());
    own.create(&PostParams::default(), &binding("own", "", EXPORT, json!([])))
        .await
        .unwrap();
    wait_bound(&own, "own").await;
    let implicit = wait_for(
        slices.clone(),
        "implicit",
        |s| s.is_some_and(|s| !s.urls().is_empty()),
        WAIT,
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(implicit.urls(), by_path.urls());
}
