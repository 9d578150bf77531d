//! The membership matrix (scenario in `scenarios/tenancy.rs`), against the platform `FAROS_E2E_*` names: in-process by
//! default, an installed platform with `FAROS_E2E_TARGET=external`.

mod scenarios;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn membership_decides_every_tenant_route() {
    let p = faros_e2e::Platform::start().await.expect("starting the platform");
    scenarios::tenancy::run(&p).await;
    p.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn membership_index_answers_without_reviews() {
    let p = faros_e2e::Platform::start().await.expect("starting the platform");
    scenarios::membership_index::run(&p).await;
    p.stop().await;
}
