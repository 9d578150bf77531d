//! The tenant lifecycle (scenario in `scenarios/lifecycle.rs`), against the platform `FAROS_E2E_*` names: in-process by
//! default, an installed platform with `FAROS_E2E_TARGET=external`.

mod scenarios;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_enables_uses_and_disables_quickstart() {
    let p = faros_e2e::Platform::start().await.expect("starting the platform");
    scenarios::lifecycle::run(&p).await;
    p.stop().await;
}
