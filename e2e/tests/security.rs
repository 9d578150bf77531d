//! The security regressions (scenario in `scenarios/security.rs`), against the platform `FAROS_E2E_*`
//! names: in-process by default, an installed platform with `FAROS_E2E_TARGET=external`.

mod scenarios;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_accounts_and_removed_creators_stay_out() {
    let p = faros_e2e::Platform::start().await.expect("starting the platform");
    scenarios::security::run(&p).await;
    p.stop().await;
}
