//! A restarted server serves bound resources from its first request: `start` registers them before
//! the listener takes requests (the race this closes made `faros dev` fail to restart now and then).

use faros_core::kcp::Workspace;
use faros_core::wait::wait_for;
use kube::api::{Api, PostParams};
use serde_json::json;

use crate::{Config, Server};

#[tokio::test]
async fn bound_resources_are_served_before_the_first_request_after_a_restart() {
    faros_core::telemetry::install_crypto_provider();
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(Config::new(dir.path())).await.unwrap();
    let workspaces: Api<Workspace> = Api::all(
        faros_core::client::ClientFactory::new(server.admin_config("root").await.unwrap())
            .unwrap()
            .cluster("root")
            .unwrap(),
    );
    let ws: Workspace = serde_json::from_value(json!({"apiVersion": "tenancy.kcp.io/v1alpha1",
        "kind": "Workspace", "metadata": {"name": "a"}, "spec": {}}))
    .unwrap();
    workspaces.create(&PostParams::default(), &ws).await.unwrap();
    let ready = wait_for(
        workspaces,
        "a",
        |w| w.is_some_and(Workspace::is_ready),
        std::time::Duration::from_secs(20),
    )
    .await
    .unwrap()
    .unwrap();
    let cluster = ready.spec.cluster.unwrap();
    // Inside root:a, Workspaces are a bound resource (root's tenancy.kcp.io export), not a built-in.
    let served = |server: &Server| {
        server
            .state()
            .registry
            .lookup(&cluster, "tenancy.kcp.io", "v1alpha1", "workspaces")
            .is_some()
    };
    assert!(served(&server));
    server.shutdown().await;

    // No await between the start and the check: nothing spawned has had a chance to run.
    let server = Server::start(Config::new(dir.path())).await.unwrap();
    assert!(
        served(&server),
        "root:a's Workspaces were not served right after the restart"
    );
    server.shutdown().await;
}
