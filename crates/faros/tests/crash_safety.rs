//! SIGKILL a `faros dev` process mid-stream of writes, 20 times; every acknowledged write must be
//! there after restart and the resourceVersion must never go backwards.
#![allow(clippy::unwrap_used, clippy::expect_used)] // Tests fail loudly by design.

mod devproc;

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, PostParams};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_writes_survive_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let acked: Arc<Mutex<BTreeSet<String>>> = Arc::default();
    let progress = Arc::new(tokio::sync::Notify::new());
    let mut last_rv = 0u64;
    for round in 0..20 {
        let mut dev = devproc::launch(&state).start().await.unwrap();
        let client = dev.client().await.unwrap();
        let cms: Api<ConfigMap> = Api::namespaced(client, "default");
        // Everything acknowledged before must be present, and the RV must not have gone back.
        let list = cms.list(&ListParams::default()).await.unwrap();
        let rv: u64 = list.metadata.resource_version.unwrap().parse().unwrap();
        assert!(
            rv >= last_rv,
            "round {round}: resourceVersion went backwards ({rv} < {last_rv})"
        );
        let present: BTreeSet<String> = list.items.into_iter().filter_map(|c| c.metadata.name).collect();
        let missing: Vec<_> = acked.lock().unwrap().difference(&present).cloned().collect();
        assert!(
            missing.is_empty(),
            "round {round}: acknowledged writes lost: {missing:?}"
        );

        // Four concurrent writers; kill the process while they are mid-stream.
        let mut writers = Vec::new();
        for w in 0..4 {
            let cms = cms.clone();
            let acked = acked.clone();
            let progress = progress.clone();
            writers.push(tokio::spawn(async move {
                let mut max_rv = 0u64;
                for i in 0.. {
                    let name = format!("r{round}-w{w}-{i}");
                    let obj: ConfigMap =
                        serde_json::from_value(json!({"metadata": {"name": name}, "data": {"i": i.to_string()}}))
                            .unwrap();
                    match cms.create(&PostParams::default(), &obj).await {
                        Ok(c) => {
                            acked.lock().unwrap().insert(name);
                            progress.notify_one();
                            max_rv = max_rv.max(c.metadata.resource_version.unwrap().parse().unwrap());
                        }
                        Err(_) => break,
                    }
                }
                max_rv
            }));
        }
        // Let some writes land, then pull the plug without warning.
        let target = acked.lock().unwrap().len() + 10 + (round * 7) % 40;
        while acked.lock().unwrap().len() < target {
            progress.notified().await;
        }
        dev.kill();
        for w in writers {
            last_rv = last_rv.max(w.await.unwrap());
        }
    }
    let dev = devproc::launch(&state).start().await.unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(dev.client().await.unwrap(), "default");
    let present: BTreeSet<String> = cms
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .collect();
    let acked = acked.lock().unwrap();
    assert!(acked.len() >= 200, "only {} writes were acknowledged", acked.len());
    assert!(acked.is_subset(&present));
}
