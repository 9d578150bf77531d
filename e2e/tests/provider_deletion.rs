//! Provider deletion (scenario in `scenarios/provider_deletion.rs`), against the platform `FAROS_E2E_*` names: in-process by
//! default, an installed platform with `FAROS_E2E_TARGET=external`.

mod scenarios;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_an_enabled_provider_keeps_tenant_data_until_disable() {
    let p = faros_e2e::Platform::start().await.expect("starting the platform");
    scenarios::provider_deletion::run(&p).await;
    p.stop().await;
}
