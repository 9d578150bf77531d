//! MCP federation (scenario in `scenarios/mcp.rs`), against the platform `FAROS_E2E_*` names: in-process by
//! default, an installed platform with `FAROS_E2E_TARGET=external`.

mod scenarios;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quickstart_tools_federate_into_the_workspaces_that_enabled_it() {
    let p = faros_e2e::Platform::start().await.expect("starting the platform");
    scenarios::mcp::run(&p).await;
    p.stop().await;
}
