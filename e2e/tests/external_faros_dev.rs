//! Every scenario through the external target, against `faros dev` started as a separate process
//! (the binary `cargo build -p faros` built): the scenarios reach it only through its admin
//! kubeconfig, hub URL, CA and token file, exactly as they reach an installed platform. They share
//! the one platform, so this also proves they pick unique names and clean up after themselves; the
//! destructive one (provider deletion) runs last.
//!
//! With `FAROS_E2E_TARGET=external` the scenario files already run against a platform of the
//! caller's; this test then stays out of the way.

mod scenarios;

use std::panic::AssertUnwindSafe;

use faros_e2e::{Platform, Target, devproc};
use futures::FutureExt;
use futures::future::BoxFuture;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_scenario_passes_against_a_separate_faros_dev() {
    if Target::from_env().expect("FAROS_E2E_* variables") != Target::InProcess {
        eprintln!("FAROS_E2E_TARGET names a platform already: not starting faros dev");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let dev = devproc::start(&dir.path().join("state")).await.unwrap();
    let p = Platform::external(&devproc::target(&dev, true)).await.unwrap();

    let steps: Vec<(&str, BoxFuture<'_, ()>)> = vec![
        ("tenant lifecycle", scenarios::lifecycle::run(&p).boxed()),
        ("membership matrix", scenarios::tenancy::run(&p).boxed()),
        ("MCP federation", scenarios::mcp::run(&p).boxed()),
        ("security", scenarios::security::run(&p).boxed()),
        ("GitOps", scenarios::gitops::run(&p).boxed()),
        ("the clients users bring", scenarios::clients::run(&p).boxed()),
        ("provider deletion", scenarios::provider_deletion::run(&p).boxed()),
    ];
    for (name, scenario) in steps {
        let started = std::time::Instant::now();
        if let Err(panic) = AssertUnwindSafe(scenario).catch_unwind().await {
            eprintln!("scenario `{name}` failed; faros dev's log ends:\n{}", dev.log_tail());
            std::panic::resume_unwind(panic);
        }
        eprintln!("scenario `{name}` passed in {:.1?}", started.elapsed());
    }
    p.stop().await;
}
