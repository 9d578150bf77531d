//! The GitOps flow (scenario in `scenarios/gitops.rs`), against the platform `FAROS_E2E_*` names: in-process by
//! default, an installed platform with `FAROS_E2E_TARGET=external`.

mod scenarios;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn providers_are_managed_with_kubectl_apply_diff_and_prune() {
    let p = faros_e2e::Platform::start().await.expect("starting the platform");
    scenarios::gitops::run(&p).await;
    p.stop().await;
}
