//! The clients users bring (scenario in `scenarios/clients.rs`): kubectl, helm, the Python
//! `kubernetes` client and the official MCP SDKs against a tenant workspace, on the platform
//! `FAROS_E2E_*` names: in-process by default, an installed platform with `FAROS_E2E_TARGET=external`.

mod scenarios;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_helm_python_and_mcp_sdks_work_through_the_hub() {
    let p = faros_e2e::Platform::start().await.expect("starting the platform");
    scenarios::clients::run(&p).await;
    p.stop().await;
}
