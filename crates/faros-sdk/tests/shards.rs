//! A controller follows the endpoint slice's URL set: one watch per URL, started when a URL appears
//! and stopped when it goes, the others untouched. Two exports of the same resource in one embedded
//! kcp stand in for two shards: each has its own virtual workspace URL and its own tenant, so a
//! tenant is seen only through "its" URL, as on a sharded kcp.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::{Kcp, WAIT, note, provider_and_tenant, put_note};
use faros_sdk::controller::{Action, Controller, Endpoints};
use kube::api::{Api, DynamicObject};
use tokio::sync::mpsc;

/// The next reconcile: (tenant cluster, spec.text, URL it came through).
async fn next(log: &mut mpsc::UnboundedReceiver<(String, String, String)>) -> (String, String, String) {
    tokio::time::timeout(WAIT, log.recv())
        .await
        .expect("a reconcile")
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn controllers_watch_every_url_and_follow_the_slice() {
    let kcp = Kcp::start().await;
    let (url_a, tenant_a) = provider_and_tenant(&kcp, "provider-a", "tenant-a").await;
    let (url_b, tenant_b) = provider_and_tenant(&kcp, "provider-b", "tenant-b").await;
    assert_ne!(url_a, url_b);

    let (urls, endpoints) = Endpoints::manual(vec![url_a.clone()]);
    let (log_tx, mut log) = mpsc::unbounded_channel();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let controller = Controller::new(kcp.factory().await, endpoints, note());
    let run = tokio::spawn(controller.run(
        move |obj: Arc<DynamicObject>, tenant| {
            let log_tx = log_tx.clone();
            async move {
                let text = obj.data["spec"]["text"].as_str().unwrap_or_default().to_string();
                // The tenant's client works: it reads the object back through the same URL.
                let api: Api<DynamicObject> = Api::namespaced_with(tenant.client.clone(), "default", &tenant.resource);
                api.get("n").await.map_err(|e| e.to_string())?;
                let _ = log_tx.send((tenant.key.cluster.clone(), text, tenant.url.to_string()));
                Ok::<_, String>(Action::AwaitChange)
            }
        },
        async move {
            let _ = stopped.await;
        },
    ));

    // One URL: only its tenant.
    assert_eq!(next(&mut log).await, (tenant_a.clone(), "1".into(), url_a.clone()));
    // The slice gains the second shard's URL: its tenant is reconciled, the first one is not again.
    urls.send(vec![url_a.clone(), url_b.clone()]).unwrap();
    assert_eq!(next(&mut log).await, (tenant_b.clone(), "1".into(), url_b.clone()));
    put_note(&kcp, "tenant-a", "2").await;
    assert_eq!(next(&mut log).await, (tenant_a.clone(), "2".into(), url_a.clone()));
    // The slice loses the first URL: tenant-a's changes are no longer seen, tenant-b's are.
    urls.send(vec![url_b.clone()]).unwrap();
    put_note(&kcp, "tenant-a", "3").await;
    put_note(&kcp, "tenant-b", "3").await;
    assert_eq!(next(&mut log).await, (tenant_b.clone(), "3".into(), url_b.clone()));
    // And regains it: tenant-a is relisted with its newest object.
    urls.send(vec![url_b.clone(), url_a.clone()]).unwrap();
    assert_eq!(next(&mut log).await, (tenant_a.clone(), "3".into(), url_a.clone()));

    let _ = stop.send(());
    run.await.unwrap().unwrap();
    assert!(log.try_recv().is_err(), "nothing reconciled twice");
}
