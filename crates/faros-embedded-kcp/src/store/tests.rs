//! Store tests against a real redb file in a temporary directory.

use std::sync::Arc;

use futures::{FutureExt, StreamExt};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::*;

const G: &str = "example.io";
const R: &str = "widgets";

fn opts(dir: &tempfile::TempDir, history: usize) -> StoreOptions {
    StoreOptions {
        history_capacity: history,
        cache_bytes: 4 << 20,
        ..StoreOptions::new(dir.path().join("kcp.redb"))
    }
}

fn open(dir: &tempfile::TempDir, history: usize) -> Store {
    Store::open(opts(dir, history)).unwrap()
}

fn key(cluster: &str, ns: &str, name: &str) -> ObjectKey {
    ObjectKey::new(G, R, cluster, ns, name)
}

fn obj(name: &str, v: i64) -> Value {
    json!({"apiVersion": "example.io/v1", "kind": "Widget", "metadata": {"name": name}, "spec": {"v": v}})
}

fn stored(name: &str, v: i64, rv: u64) -> Value {
    let mut o = obj(name, v);
    o["metadata"]["resourceVersion"] = json!(rv.to_string());
    o
}

async fn create(store: &Store, k: ObjectKey, v: i64) -> u64 {
    let object = obj(&k.name, v);
    store.write(vec![WriteOp::Create { key: k, object }]).await.unwrap()[0].rv
}

async fn update(store: &Store, k: ObjectKey, v: i64) -> u64 {
    let object = obj(&k.name, v);
    store
        .write(vec![WriteOp::Update {
            key: k,
            object,
            expected_rv: None,
        }])
        .await
        .unwrap()[0]
        .rv
}

async fn delete(store: &Store, k: ObjectKey) -> u64 {
    store
        .write(vec![WriteOp::Delete {
            key: k,
            expected_rv: None,
        }])
        .await
        .unwrap()[0]
        .rv
}

fn names(page: &ListPage) -> Vec<String> {
    page.items
        .iter()
        .map(|o| {
            let m = &o["metadata"];
            let ns = m["namespace"].as_str().unwrap_or("");
            format!(
                "{}{}",
                if ns.is_empty() { String::new() } else { format!("{ns}/") },
                m["name"].as_str().unwrap()
            )
        })
        .collect()
}

fn query(cluster: Option<&str>, ns: Option<&str>) -> ListQuery {
    ListQuery {
        group: G.into(),
        resource: R.into(),
        cluster: cluster.map(Into::into),
        namespace: ns.map(Into::into),
        ..Default::default()
    }
}

fn filter(cluster: Option<&str>) -> WatchFilter {
    WatchFilter {
        group: G.into(),
        resource: R.into(),
        cluster: cluster.map(Into::into),
        namespace: None,
    }
}

/// (rv, type, cluster/name) of an event.
fn summary(e: &Event) -> (u64, EventType, String) {
    (e.rv, e.event_type, format!("{}/{}", e.key.cluster, e.key.name))
}

#[tokio::test]
async fn crud_and_errors() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir, 100);
    let a = key("c1", "", "a");

    let events = store
        .write(vec![WriteOp::Create {
            key: a.clone(),
            object: obj("a", 1),
        }])
        .await
        .unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(
        (events[0].rv, events[0].event_type, events[0].prev.clone()),
        (1, EventType::Added, None)
    );
    assert_eq!(*events[0].object, stored("a", 1, 1));
    assert_eq!(store.get(&a).unwrap(), Some(stored("a", 1, 1)));
    assert_eq!(store.current_rv(), 1);

    let err = store
        .write(vec![WriteOp::Create {
            key: a.clone(),
            object: obj("a", 9),
        }])
        .await
        .unwrap_err();
    assert_eq!(err, StoreError::AlreadyExists(Box::new(a.clone())));
    assert_eq!(err.to_status().code, 409);

    let err = store
        .write(vec![WriteOp::Update {
            key: a.clone(),
            object: obj("a", 2),
            expected_rv: Some(7),
        }])
        .await
        .unwrap_err();
    assert_eq!(
        err,
        StoreError::Conflict {
            key: Box::new(a.clone()),
            expected: 7,
            actual: 1
        }
    );

    let events = store
        .write(vec![WriteOp::Update {
            key: a.clone(),
            object: obj("a", 2),
            expected_rv: Some(1),
        }])
        .await
        .unwrap();
    assert_eq!((events[0].rv, events[0].event_type), (2, EventType::Modified));
    assert_eq!(events[0].prev.as_deref(), Some(&stored("a", 1, 1)));
    assert_eq!(store.get(&a).unwrap(), Some(stored("a", 2, 2)));

    let missing = key("c1", "", "zz");
    let err = store
        .write(vec![WriteOp::Update {
            key: missing.clone(),
            object: obj("zz", 1),
            expected_rv: None,
        }])
        .await
        .unwrap_err();
    assert_eq!(err, StoreError::NotFound(Box::new(missing.clone())));
    assert_eq!(err.to_status().code, 404);

    let err = store
        .write(vec![WriteOp::Delete {
            key: a.clone(),
            expected_rv: Some(1),
        }])
        .await
        .unwrap_err();
    assert_eq!(
        err,
        StoreError::Conflict {
            key: Box::new(a.clone()),
            expected: 1,
            actual: 2
        }
    );

    // The delete event carries the last state with the deletion RV.
    let events = store
        .write(vec![WriteOp::Delete {
            key: a.clone(),
            expected_rv: Some(2),
        }])
        .await
        .unwrap();
    assert_eq!((events[0].rv, events[0].event_type), (3, EventType::Deleted));
    assert_eq!(*events[0].object, stored("a", 2, 3));
    assert_eq!(events[0].prev.as_deref(), Some(&stored("a", 2, 2)));
    assert_eq!(store.get(&a).unwrap(), None);

    let err = store
        .write(vec![WriteOp::Delete {
            key: a.clone(),
            expected_rv: None,
        }])
        .await
        .unwrap_err();
    assert_eq!(err, StoreError::NotFound(Box::new(a.clone())));
    // Failed writes do not consume RVs.
    assert_eq!(store.current_rv(), 3);
}

#[tokio::test]
async fn resource_version_reads_the_stored_rv_without_the_object() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir, 100);
    let a = key("c1", "", "a");
    assert_eq!(store.resource_version(&a).unwrap(), None);
    let created = create(&store, a.clone(), 1).await;
    assert_eq!(store.resource_version(&a).unwrap(), Some(created));
    let updated = update(&store, a.clone(), 2).await;
    assert!(updated > created);
    assert_eq!(store.resource_version(&a).unwrap(), Some(updated));
    // The same RV the parsed object carries.
    assert_eq!(store.get(&a).unwrap(), Some(stored("a", 2, updated)));
    delete(&store, a.clone()).await;
    assert_eq!(store.resource_version(&a).unwrap(), None);
}

#[tokio::test]
async fn a_call_is_atomic() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir, 100);
    create(&store, key("c1", "", "a"), 1).await;
    let err = store
        .write(vec![
            WriteOp::Create {
                key: key("c1", "", "b"),
                object: obj("b", 1),
            },
            WriteOp::Create {
                key: key("c1", "", "a"),
                object: obj("a", 2),
            },
        ])
        .await
        .unwrap_err();
    assert_eq!(err, StoreError::AlreadyExists(Box::new(key("c1", "", "a"))));
    assert_eq!(store.get(&key("c1", "", "b")).unwrap(), None);
    assert_eq!(store.current_rv(), 1);

    let events = store
        .write(vec![
            WriteOp::Create {
                key: key("c1", "", "b"),
                object: obj("b", 1),
            },
            WriteOp::Delete {
                key: key("c1", "", "a"),
                expected_rv: Some(1),
            },
        ])
        .await
        .unwrap();
    let got: Vec<_> = events.iter().map(summary).collect();
    assert_eq!(
        got,
        vec![
            (2, EventType::Added, "c1/b".to_string()),
            (3, EventType::Deleted, "c1/a".to_string())
        ]
    );
}

#[tokio::test]
async fn rv_is_monotonic_across_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = open(&dir, 100);
        create(&store, key("c1", "", "a"), 1).await;
        create(&store, key("c2", "", "b"), 1).await;
        delete(&store, key("c1", "", "a")).await;
        assert_eq!(store.current_rv(), 3);
    }
    let store = open(&dir, 100);
    assert_eq!(store.current_rv(), 3);
    assert_eq!(store.get(&key("c2", "", "b")).unwrap(), Some(stored("b", 1, 2)));
    // The deleted object's RV is not reused either.
    assert_eq!(create(&store, key("c1", "", "a"), 5).await, 4);
    // History starts empty after a restart: older RVs are too old, the current one is fine.
    assert_eq!(store.oldest_rv(), 3);
    assert_eq!(
        store.watch(2, filter(None)).unwrap_err(),
        StoreError::TooOld {
            requested: 2,
            oldest: 3
        }
    );
    let mut w = store.watch(3, filter(None)).unwrap();
    assert_eq!(
        summary(&w.next().await.unwrap().unwrap()),
        (4, EventType::Added, "c1/a".to_string())
    );
    // Resources are rediscovered from the file.
    assert_eq!(store.scan_cluster("c2").unwrap(), vec![key("c2", "", "b")]);
}

#[tokio::test]
async fn prefix_scans_per_cluster_namespace_and_wildcard() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir, 100);
    for (c, ns, n) in [
        ("c2", "x", "b"),
        ("c1", "y", "a"),
        ("c1", "x", "b"),
        ("c1", "x", "a"),
        ("c10", "x", "a"),
    ] {
        let mut o = obj(n, 0);
        o["metadata"]["namespace"] = json!(ns);
        store
            .write(vec![WriteOp::Create {
                key: key(c, ns, n),
                object: o,
            }])
            .await
            .unwrap();
    }
    // Same names in another resource and another group must never show up.
    let other = ObjectKey::new(G, "gadgets", "c1", "x", "a");
    store
        .write(vec![WriteOp::Create {
            key: other.clone(),
            object: obj("a", 0),
        }])
        .await
        .unwrap();
    let other = ObjectKey::new("other.io", R, "c1", "x", "a");
    store
        .write(vec![WriteOp::Create {
            key: other,
            object: obj("a", 0),
        }])
        .await
        .unwrap();

    let cases = [
        (Some("c1"), None, vec!["x/a", "x/b", "y/a"]),
        (Some("c1"), Some("x"), vec!["x/a", "x/b"]),
        (Some("c1"), Some("z"), vec![]),
        (Some("c"), None, vec![]),
        (None, None, vec!["x/a", "x/b", "y/a", "x/a", "x/b"]),
        (None, Some("x"), vec!["x/a", "x/b", "x/a", "x/b"]),
    ];
    for (c, ns, want) in cases {
        let page = store.list(&query(c, ns)).unwrap();
        assert_eq!(names(&page), want, "cluster {c:?} namespace {ns:?}");
        assert_eq!(
            (page.resource_version, page.continue_token, page.remaining_item_count),
            (7, None, None)
        );
    }
    // Wildcard order is by cluster then namespace then name.
    let clusters: Vec<String> = store
        .list(&query(None, Some("x")))
        .unwrap()
        .items
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(clusters, vec!["a", "b", "a", "b"]);

    let keys = store.scan_cluster("c1").unwrap();
    assert_eq!(
        keys,
        vec![
            ObjectKey::new(G, "gadgets", "c1", "x", "a"),
            key("c1", "x", "a"),
            key("c1", "x", "b"),
            key("c1", "y", "a"),
            ObjectKey::new("other.io", R, "c1", "x", "a"),
        ]
    );
}

#[tokio::test]
async fn a_pinned_name_reads_only_its_key() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir, 100);
    // "a" and "ab" share a prefix: the pinned range must end at the name's separator.
    for (cluster, ns, name) in [("c1", "", "a"), ("c1", "", "ab"), ("c1", "x", "a"), ("c2", "", "a")] {
        create(&store, key(cluster, ns, name), 1).await;
    }
    let pinned = |cluster: &str, ns: &str, name: &str| ListQuery {
        name: Some(name.into()),
        ..query(Some(cluster), Some(ns))
    };
    let cases = [
        (pinned("c1", "", "a"), vec!["a"]),
        (pinned("c1", "", "ab"), vec!["ab"]),
        (pinned("c1", "x", "a"), vec!["a"]),
        (pinned("c1", "", "b"), vec![]),
        (pinned("c3", "", "a"), vec![]),
    ];
    for (q, expected) in cases {
        let page = store.list(&q).unwrap();
        assert_eq!(names(&page), expected, "{q:?}");
        assert_eq!((page.continue_token, page.remaining_item_count), (None, None), "{q:?}");
    }
}

#[tokio::test]
async fn pagination_is_consistent_under_interleaved_writes() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir, 100);
    for (i, n) in ["a", "b", "c", "d", "e"].iter().enumerate() {
        create(&store, key("c1", "", n), i as i64).await;
    }
    let q = ListQuery {
        limit: Some(2),
        ..query(Some("c1"), None)
    };
    let page1 = store.list(&q).unwrap();
    assert_eq!(page1.items, vec![stored("a", 0, 1), stored("b", 1, 2)]);
    assert_eq!((page1.resource_version, page1.remaining_item_count), (5, Some(3)));

    // Writes between pages: none of them may show up in pages 2 and 3.
    delete(&store, key("c1", "", "c")).await; // 6
    create(&store, key("c1", "", "bb"), 9).await; // 7
    update(&store, key("c1", "", "d"), 9).await; // 8
    update(&store, key("c1", "", "d"), 10).await; // 9
    create(&store, key("c1", "", "f"), 9).await; // 10
    delete(&store, key("c1", "", "a")).await; // 11
    create(&store, key("c2", "", "c"), 9).await; // 12 (other cluster, ignored)

    let page2 = store
        .list(&ListQuery {
            continue_token: page1.continue_token.clone(),
            ..q.clone()
        })
        .unwrap();
    assert_eq!(page2.items, vec![stored("c", 2, 3), stored("d", 3, 4)]);
    assert_eq!((page2.resource_version, page2.remaining_item_count), (5, Some(1)));
    let page3 = store
        .list(&ListQuery {
            continue_token: page2.continue_token.clone(),
            ..q.clone()
        })
        .unwrap();
    assert_eq!(page3.items, vec![stored("e", 4, 5)]);
    assert_eq!(
        (page3.resource_version, page3.continue_token, page3.remaining_item_count),
        (5, None, None)
    );

    // A fresh list sees the new state.
    let fresh = store.list(&query(Some("c1"), None)).unwrap();
    assert_eq!(names(&fresh), vec!["b", "bb", "d", "e", "f"]);
    assert_eq!(fresh.resource_version, 12);

    // The filter applies before the limit; with a filter there is no remaining count.
    let odd: Arc<dyn Fn(&Value) -> bool + Send + Sync> = Arc::new(|o: &Value| o["spec"]["v"].as_i64() == Some(9));
    let q = ListQuery {
        limit: Some(1),
        filter: Some(odd),
        ..query(None, None)
    };
    let p1 = store.list(&q).unwrap();
    assert_eq!((names(&p1), p1.remaining_item_count), (vec!["bb".to_string()], None));
    let p2 = store
        .list(&ListQuery {
            continue_token: p1.continue_token.clone(),
            ..q.clone()
        })
        .unwrap();
    assert_eq!(names(&p2), vec!["f"]);
    let p3 = store
        .list(&ListQuery {
            continue_token: p2.continue_token.clone(),
            ..q.clone()
        })
        .unwrap();
    assert_eq!((names(&p3), p3.continue_token), (vec!["c".to_string()], None));
}

#[tokio::test]
async fn remaining_item_count_is_capped() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir, 10);
    let ops = (0..1003).map(|i| WriteOp::Create {
        key: key("c1", "", &format!("o{i:04}")),
        object: obj("o", 0),
    });
    store.write(ops.collect()).await.unwrap();
    for (limit, want) in [(1, None), (2, None), (3, Some(1000)), (1002, Some(1)), (1003, None)] {
        let page = store
            .list(&ListQuery {
                limit: Some(limit),
                ..query(Some("c1"), None)
            })
            .unwrap();
        assert_eq!(
            (page.items.len(), page.remaining_item_count),
            (limit, want),
            "limit {limit}"
        );
        assert_eq!(page.continue_token.is_some(), limit < 1003);
    }
}

#[tokio::test]
async fn continue_tokens_expire_and_are_validated() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir, 2);
    for n in ["a", "b", "c"] {
        create(&store, key("c1", "", n), 0).await;
    }
    let q = ListQuery {
        limit: Some(1),
        ..query(Some("c1"), None)
    };
    let page1 = store.list(&q).unwrap();
    // No writes since: the token still works although the history is short.
    let page2 = store
        .list(&ListQuery {
            continue_token: page1.continue_token.clone(),
            ..q.clone()
        })
        .unwrap();
    assert_eq!(names(&page2), vec!["b"]);

    for v in 1..=3 {
        update(&store, key("c1", "", "a"), v).await;
    }
    let err = store
        .list(&ListQuery {
            continue_token: page2.continue_token.clone(),
            ..q.clone()
        })
        .unwrap_err();
    assert_eq!(
        err,
        StoreError::Expired {
            requested: 3,
            oldest: 4
        }
    );
    assert_eq!(err.to_status().code, 410);
    assert_eq!(err.to_status().reason, "Expired");

    // A token of another list, and garbage, are rejected.
    let other = ListQuery {
        continue_token: page1.continue_token.clone(),
        ..query(Some("c2"), None)
    };
    assert!(matches!(store.list(&other), Err(StoreError::InvalidContinue(_))));
    let garbage = ListQuery {
        continue_token: Some("%%".into()),
        ..q.clone()
    };
    assert!(matches!(store.list(&garbage), Err(StoreError::InvalidContinue(_))));
}

#[tokio::test]
async fn watch_from_rv_yields_exact_sequence() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir, 100);
    create(&store, key("c1", "", "a"), 0).await; // 1
    let mut all = store.watch(1, filter(None)).unwrap();
    let mut c1 = store.watch(1, filter(Some("c1"))).unwrap();
    let mut ns = store
        .watch(
            0,
            WatchFilter {
                namespace: Some("team".into()),
                ..filter(None)
            },
        )
        .unwrap();
    assert!(all.next().now_or_never().is_none(), "nothing after rv 1 yet");

    create(&store, key("c2", "", "b"), 0).await; // 2
    update(&store, key("c1", "", "a"), 1).await; // 3
    let other = ObjectKey::new(G, "gadgets", "c1", "", "a");
    store
        .write(vec![WriteOp::Create {
            key: other,
            object: obj("a", 0),
        }])
        .await
        .unwrap(); // 4
    delete(&store, key("c1", "", "a")).await; // 5
    let mut o = obj("t", 0);
    o["metadata"]["namespace"] = json!("team");
    store
        .write(vec![WriteOp::Create {
            key: key("c2", "team", "t"),
            object: o,
        }])
        .await
        .unwrap(); // 6

    let mut got = Vec::new();
    for _ in 0..4 {
        got.push(summary(&all.next().await.unwrap().unwrap()));
    }
    assert_eq!(
        got,
        vec![
            (2, EventType::Added, "c2/b".to_string()),
            (3, EventType::Modified, "c1/a".to_string()),
            (5, EventType::Deleted, "c1/a".to_string()),
            (6, EventType::Added, "c2/t".to_string()),
        ]
    );
    assert!(all.next().now_or_never().is_none());
    assert_eq!(all.bookmark_rv(), 6);

    let mut got = Vec::new();
    for _ in 0..2 {
        got.push(summary(&c1.next().await.unwrap().unwrap()));
    }
    assert_eq!(
        got,
        vec![
            (3, EventType::Modified, "c1/a".to_string()),
            (5, EventType::Deleted, "c1/a".to_string())
        ]
    );
    assert!(c1.next().now_or_never().is_none());

    let first = ns.next().await.unwrap().unwrap();
    assert_eq!(summary(&first), (6, EventType::Added, "c2/t".to_string()));

    // Live delivery: a pending watcher is woken by a later write.
    let waiter = tokio::spawn(async move { all.next().await.unwrap().unwrap().rv });
    create(&store, key("c1", "", "z"), 0).await; // 7
    assert_eq!(waiter.await.unwrap(), 7);
}

#[tokio::test]
async fn watch_too_old_and_lagging_watcher() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir, 3);
    let mut lagging = store.watch(0, filter(None)).unwrap();
    let mut keeping_up = store.watch(0, filter(None)).unwrap();
    for i in 0..3 {
        create(&store, key("c1", "", &format!("o{i}")), 0).await;
        assert_eq!(keeping_up.next().await.unwrap().unwrap().rv, i + 1);
    }
    for i in 3..10 {
        create(&store, key("c1", "", &format!("o{i}")), 0).await;
        assert_eq!(keeping_up.next().await.unwrap().unwrap().rv, i + 1);
    }
    // History holds rv 8..=10: resuming from 7 works, from 6 does not.
    assert_eq!(store.oldest_rv(), 7);
    assert_eq!(
        store.watch(6, filter(None)).unwrap_err(),
        StoreError::TooOld {
            requested: 6,
            oldest: 7
        }
    );
    let mut resumed = store.watch(7, filter(None)).unwrap();
    assert_eq!(resumed.next().await.unwrap().unwrap().rv, 8);

    // The watcher that never read ends with TooOld instead of skipping rv 1..=7.
    assert_eq!(
        lagging.next().await.unwrap().unwrap_err(),
        StoreError::TooOld {
            requested: 0,
            oldest: 7
        }
    );
    assert!(lagging.next().await.is_none());
    assert_eq!(
        StoreError::TooOld {
            requested: 0,
            oldest: 7
        }
        .to_status()
        .message,
        "too old resource version: 0 (7)"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn group_commit_with_concurrent_writers() {
    let dir = tempfile::tempdir().unwrap();
    const CLIENTS: usize = 8;
    const PER_CLIENT: usize = 40;
    {
        let store = open(&dir, 1000);
        let mut tasks = Vec::new();
        for c in 0..CLIENTS {
            let store = store.clone();
            tasks.push(tokio::spawn(async move {
                let mut rvs = Vec::new();
                for i in 0..PER_CLIENT {
                    rvs.push(create(&store, key("c1", "", &format!("w{c}-{i}")), i as i64).await);
                }
                rvs
            }));
        }
        let mut rvs: Vec<u64> = Vec::new();
        for t in tasks {
            rvs.extend(t.await.unwrap());
        }
        rvs.sort_unstable();
        assert_eq!(rvs, (1..=(CLIENTS * PER_CLIENT) as u64).collect::<Vec<_>>());
        assert!(store.commits() <= (CLIENTS * PER_CLIENT) as u64);
    }
    let store = open(&dir, 1000);
    assert_eq!(store.current_rv(), (CLIENTS * PER_CLIENT) as u64);
    let page = store.list(&query(Some("c1"), None)).unwrap();
    assert_eq!(page.items.len(), CLIENTS * PER_CLIENT);
    for c in 0..CLIENTS {
        for i in 0..PER_CLIENT {
            assert!(
                store.get(&key("c1", "", &format!("w{c}-{i}"))).unwrap().is_some(),
                "w{c}-{i}"
            );
        }
    }
}

#[tokio::test]
async fn one_transaction_keeps_calls_independent() {
    // Drives the writer's batch step directly so the batch composition is deterministic.
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir, 100);
    create(&store, key("c1", "", "a"), 0).await;
    let commits_before = store.commits();
    let mut watch = store.watch(1, filter(None)).unwrap();

    let mut answers = Vec::new();
    let mut batch = Vec::new();
    for ops in [
        vec![WriteOp::Create {
            key: key("c1", "", "b"),
            object: obj("b", 0),
        }],
        vec![
            WriteOp::Create {
                key: key("c1", "", "c"),
                object: obj("c", 0),
            },
            WriteOp::Create {
                key: key("c1", "", "a"),
                object: obj("a", 0),
            },
        ],
        vec![WriteOp::Update {
            key: key("c1", "", "b"),
            object: obj("b", 1),
            expected_rv: Some(2),
        }],
    ] {
        let (reply, answer) = tokio::sync::oneshot::channel();
        batch.push(writer::Request { ops, reply });
        answers.push(answer);
    }
    writer::process_batch(store.shared(), batch).unwrap();
    let mut results = Vec::new();
    for a in answers {
        results.push(
            a.await
                .unwrap()
                .map(|committed| committed.iter().map(|c| summary(&c.event)).collect::<Vec<_>>()),
        );
    }
    assert_eq!(
        results,
        vec![
            Ok(vec![(2, EventType::Added, "c1/b".to_string())]),
            Err(StoreError::AlreadyExists(Box::new(key("c1", "", "a")))),
            Ok(vec![(3, EventType::Modified, "c1/b".to_string())]),
        ]
    );
    assert_eq!(store.commits(), commits_before + 1);
    assert_eq!(store.get(&key("c1", "", "c")).unwrap(), None);
    assert_eq!(summary(&watch.next().await.unwrap().unwrap()).0, 2);
    assert_eq!(summary(&watch.next().await.unwrap().unwrap()).0, 3);
    drop(store);
    let store = open(&dir, 100);
    assert_eq!(store.get(&key("c1", "", "b")).unwrap(), Some(stored("b", 1, 3)));
}

#[tokio::test]
async fn without_group_commit_every_call_commits() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(StoreOptions {
        group_commit: false,
        ..opts(&dir, 10)
    })
    .unwrap();
    let writes: Vec<_> = (0..5)
        .map(|i| create(&store, key("c1", "", &format!("o{i}")), 0))
        .collect();
    let mut rvs = futures::future::join_all(writes).await;
    rvs.sort_unstable();
    assert_eq!(rvs, vec![1, 2, 3, 4, 5]);
    assert_eq!(store.commits(), 5);
}

/// Acknowledged writes survive SIGKILL: a child process (this test binary, running `sigkill_child`) writes
/// with 8 concurrent clients and prints each acknowledged name; the parent kills it mid-stream and reopens.
#[test]
fn acknowledged_writes_survive_sigkill() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};

    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "store::tests::sigkill_child",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(SIGKILL_DIR_ENV, dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut acked = Vec::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        if let Some(name) = line.unwrap().strip_prefix("acked ") {
            acked.push(name.to_string());
            if acked.len() == 300 {
                break;
            }
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(acked.len(), 300, "the child stopped early");

    let store = Store::open(StoreOptions::new(dir.path().join("kcp.redb"))).unwrap();
    assert!(store.current_rv() >= 300, "rv {}", store.current_rv());
    let missing: Vec<&String> = acked
        .iter()
        .filter(|n| store.get(&key("c1", "", n)).unwrap().is_none())
        .collect();
    assert_eq!(missing, Vec::<&String>::new());
}

const SIGKILL_DIR_ENV: &str = "FAROS_STORE_SIGKILL_CHILD_DIR";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "child process of acknowledged_writes_survive_sigkill"]
async fn sigkill_child() {
    let Some(dir) = std::env::var_os(SIGKILL_DIR_ENV) else {
        return;
    };
    let store = Store::open(StoreOptions::new(std::path::Path::new(&dir).join("kcp.redb"))).unwrap();
    let mut tasks = Vec::new();
    for c in 0..8 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            // Bounded so that an orphaned child ends by itself.
            for i in 0..100_000 {
                let name = format!("w{c}-{i}");
                create(&store, key("c1", "", &name), i).await;
                println!("acked {name}");
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
}

/// Rough numbers for the store alone; run with
/// `cargo test --release -p faros-embedded-kcp --lib store::tests::perf -- --ignored --nocapture`.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "measurement, not a check"]
async fn perf() {
    use std::time::Instant;
    let dir = tempfile::tempdir().unwrap();
    let payload = "x".repeat(900);
    let one_kib = move |name: &str| {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"},
               "data": {"payload": payload}})
    };

    // Raw redb durable commit rate, one small insert per commit.
    let raw_path = dir.path().join("raw.redb");
    let raw = redb::Database::create(&raw_path).unwrap();
    let started = Instant::now();
    let n = 200;
    for i in 0..n {
        let txn = raw.begin_write().unwrap();
        txn.open_table(OBJECTS)
            .unwrap()
            .insert(format!("k{i}").as_bytes(), vec![0u8; 1024].as_slice())
            .unwrap();
        txn.commit().unwrap();
    }
    let raw_rate = n as f64 / started.elapsed().as_secs_f64();
    drop(raw);

    let cache: usize = std::env::var("PERF_CACHE_MIB").map_or(32, |v| v.parse().unwrap()) << 20;
    let history: usize = std::env::var("PERF_HISTORY").map_or(4096, |v| v.parse().unwrap());
    let store = Store::open(StoreOptions {
        history_capacity: history,
        cache_bytes: cache,
        ..StoreOptions::new(dir.path().join("s.redb"))
    })
    .unwrap();
    rss("after open");
    let started = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..8 {
        let store = store.clone();
        let one_kib = one_kib.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..250 {
                let name = format!("c{c}-{i}");
                let k = ObjectKey::new("", "configmaps", "root", "default", &name);
                store
                    .write(vec![WriteOp::Create {
                        key: k,
                        object: one_kib(&name),
                    }])
                    .await
                    .unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let rate = 2000.0 / started.elapsed().as_secs_f64();
    println!(
        "raw commits/s {raw_rate:.0}, store creates/s (8 clients) {rate:.0}, ratio {:.2}, commits {}",
        rate / raw_rate,
        store.commits()
    );

    // Bulk load to 100k objects in large calls, then measure lists and RSS.
    for chunk in 0..98 {
        let ops = (0..1000)
            .map(|i| {
                let name = format!("bulk-{chunk:03}-{i:04}");
                WriteOp::Create {
                    key: ObjectKey::new("", "configmaps", format!("k{}", chunk % 10), "default", &name),
                    object: one_kib(&name),
                }
            })
            .collect();
        store.write(ops).await.unwrap();
    }
    rss("after bulk load");
    {
        let started = Instant::now();
        let read = store.shared().db.begin_read().unwrap();
        let table = read.open_table(OBJECTS).unwrap();
        let (start, end) = key::prefix_range(&["", "configmaps", "k3"]).unwrap();
        let mut bytes = 0;
        let mut parse = std::time::Duration::ZERO;
        for entry in table.range::<&[u8]>(start.as_slice()..end.as_slice()).unwrap() {
            let (_, v) = entry.unwrap();
            bytes += v.value().len();
            let t = Instant::now();
            let _ = key::decode_value(v.value()).unwrap();
            parse += t.elapsed();
        }
        println!("raw scan of {bytes} bytes: {:?} (parse {parse:?})", started.elapsed());
    }
    let started = Instant::now();
    let page = store
        .list(&ListQuery {
            cluster: Some("k3".into()),
            ..ListQuery {
                group: "".into(),
                resource: "configmaps".into(),
                ..Default::default()
            }
        })
        .unwrap();
    println!("list {} objects: {:?}", page.items.len(), started.elapsed());
    let started = Instant::now();
    let page = store
        .list(&ListQuery {
            limit: Some(500),
            group: "".into(),
            resource: "configmaps".into(),
            ..Default::default()
        })
        .unwrap();
    println!(
        "list page of {} of 100k (remaining {:?}): {:?}",
        page.items.len(),
        page.remaining_item_count,
        started.elapsed()
    );
    rss("after lists");
    println!(
        "{} objects, file {} MiB",
        store.current_rv(),
        std::fs::metadata(dir.path().join("s.redb")).unwrap().len() >> 20
    );
}

fn rss(when: &str) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    println!("{when}: {}", status.lines().find(|l| l.starts_with("VmRSS")).unwrap());
}

#[tokio::test]
async fn raw_lists_match_parsed_lists_across_pages() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir, 100);
    for i in 0..5 {
        create(&store, key("c1", "", &format!("o{i}")), i).await;
    }
    let mut q = query(Some("c1"), None);
    q.limit = Some(3);
    let parsed = store.list(&q).unwrap();
    let raw = store.list_raw(&q).unwrap();
    assert!(raw.items.is_empty());
    let reparsed: Vec<Value> = raw
        .raw_items
        .iter()
        .map(|r| serde_json::from_slice(r.json()).unwrap())
        .collect();
    assert_eq!(reparsed, parsed.items);
    assert_eq!(raw.continue_token, parsed.continue_token);
    // A later page after a concurrent update shows the first page's state, from history, in raw form too.
    update(&store, key("c1", "", "o4"), 40).await;
    q.continue_token = raw.continue_token.clone();
    let parsed = store.list(&q).unwrap();
    let raw = store.list_raw(&q).unwrap();
    let reparsed: Vec<Value> = raw
        .raw_items
        .iter()
        .map(|r| serde_json::from_slice(r.json()).unwrap())
        .collect();
    assert_eq!(reparsed, parsed.items);
    assert_eq!(reparsed.len(), 2);
}

fn creates(names: impl Iterator<Item = String>) -> Vec<WriteOp> {
    names
        .map(|n| WriteOp::Create {
            key: key("c1", "", &n),
            object: obj(&n, 0),
        })
        .collect()
}

/// Pages take only the entries they use and count the rest; with writes between pages a continued
/// page takes what undoing them needs (a few writes) or reads without a bound (many), and every page
/// still shows the first page's state.
#[tokio::test]
async fn bounded_pages_of_a_big_collection_match_unbounded_reads() {
    let deletes = |range: std::ops::RangeInclusive<usize>| -> Vec<WriteOp> {
        range
            .map(|i| WriteOp::Delete {
                key: key("c1", "", &format!("o{i:04}")),
                expected_rv: None,
            })
            .collect()
    };
    // Writes after the first page, in batches: (what, batches).
    let cases: [(&str, Vec<Vec<WriteOp>>); 3] = [
        ("none", vec![]),
        (
            "a few, inside and after the pages",
            vec![
                deletes(1..=3),
                creates(["o0500a", "o1098a", "p0000"].map(String::from).into_iter()),
            ],
        ),
        (
            "many: 1100 after every old object, 100 old ones deleted",
            vec![creates((0..1100).map(|i| format!("p{i:04}"))), deletes(1..=100)],
        ),
    ];
    for (what, batches) in cases {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir, 10_000);
        store
            .write(creates((0..1100).map(|i| format!("o{i:04}"))))
            .await
            .unwrap();
        let mut q = query(Some("c1"), None);
        // First pages around the remaining count's cap: (limit, remaining).
        for (limit, remaining) in [(100, Some(1000)), (99, None), (97, None), (90, None), (1100, None)] {
            q.limit = Some(limit);
            let page = store.list_raw(&q).unwrap();
            assert_eq!(
                (page.raw_items.len(), page.remaining_item_count),
                (limit, remaining),
                "{what}: limit {limit}"
            );
            assert_eq!(page.continue_token.is_some(), limit < 1100, "{what}: limit {limit}");
        }
        q.limit = Some(1);
        let first = store.list_raw(&q).unwrap();
        for batch in batches {
            store.write(batch).await.unwrap();
        }
        q.continue_token = first.continue_token.clone();
        // (limit, expected remaining): the state of the first page has 1099 objects after it.
        for (limit, remaining) in [(1, None), (98, None), (99, Some(1000)), (1099, None), (5000, None)] {
            q.limit = Some(limit);
            for page in [store.list(&q).unwrap(), store.list_raw(&q).unwrap()] {
                // `list` parses its items, `list_raw` hands over their text.
                let raw = page.raw_items.iter().map(|i| {
                    let item: Value = serde_json::from_slice(i.json()).unwrap();
                    item["metadata"]["name"].as_str().unwrap().to_string()
                });
                let got: Vec<String> = names(&page).into_iter().chain(raw).collect();
                let want: Vec<String> = (1..=limit.min(1099)).map(|i| format!("o{i:04}")).collect();
                assert_eq!(got, want, "{what}: limit {limit}");
                assert_eq!(page.remaining_item_count, remaining, "{what}: limit {limit}");
                assert_eq!(page.continue_token.is_some(), limit < 1099, "{what}: limit {limit}");
                assert_eq!(page.resource_version, first.resource_version, "{what}: limit {limit}");
            }
        }
    }
}

#[tokio::test]
async fn objects_containing_a_needle_are_found_by_their_text() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir, 100);
    let with = |name: &str, extra: Value| {
        let mut o = obj(name, 0);
        o["metadata"]["ownerReferences"] = extra;
        o
    };
    let ops = vec![
        WriteOp::Create {
            key: key("c1", "", "owned"),
            object: with("owned", json!([{"uid": "u"}])),
        },
        WriteOp::Create {
            key: key("c1", "", "plain"),
            object: obj("plain", 0),
        },
        WriteOp::Create {
            key: key("c2", "", "owned"),
            object: with("owned", json!([])),
        },
        WriteOp::Create {
            key: key("c2", "", "mentions"),
            object: json!({"metadata": {"name": "mentions"}, "spec": {"note": "\"ownerReferences\""}}),
        },
    ];
    store.write(ops).await.unwrap();
    let found = |cluster: Option<&str>, needle: &str| -> Vec<String> {
        let mut names: Vec<String> = store
            .objects_containing(G, R, cluster, needle)
            .unwrap()
            .iter()
            .map(|o| o["metadata"]["name"].as_str().unwrap().to_string())
            .collect();
        names.sort();
        names
    };
    // (cluster, needle, expected names)
    let cases: [(Option<&str>, &str, Vec<&str>); 4] = [
        (None, "\"ownerReferences\"", vec!["owned", "owned"]),
        (Some("c1"), "\"ownerReferences\"", vec!["owned"]),
        (None, "ownerReferences", vec!["mentions", "owned", "owned"]),
        (Some("c2"), "\"deletionTimestamp\"", vec![]),
    ];
    for (cluster, needle, want) in cases {
        assert_eq!(found(cluster, needle), want, "{cluster:?} {needle}");
    }
}

/// A writer hears of each state its commit stored with the stored text, which is exactly the
/// serialization of the event's object (answers send it instead of serializing again); a state a
/// later write of the same commit replaced, and a deletion, have none.
#[tokio::test]
async fn committed_states_carry_the_text_they_were_stored_as() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir, 100);
    let (a, b) = (key("c1", "", "a"), key("c1", "", "b"));
    let ops = vec![
        WriteOp::Create {
            key: a.clone(),
            object: obj("a", 1),
        },
        WriteOp::Create {
            key: b.clone(),
            object: obj("b", 1),
        },
        WriteOp::Update {
            key: b.clone(),
            object: obj("b", 2),
            expected_rv: None,
        },
    ];
    let first = store.write_committed(ops).await.unwrap();
    let second = store
        .write_committed(vec![WriteOp::Delete {
            key: a.clone(),
            expected_rv: None,
        }])
        .await
        .unwrap();
    // (name, has text): b's first state was replaced within the commit.
    let want = [("a", true), ("b", false), ("b", true), ("a", false)];
    let got: Vec<(&str, bool)> = first
        .iter()
        .chain(&second)
        .map(|c| (c.event.key.name.as_str(), c.json().is_some()))
        .collect();
    assert_eq!(got, want);
    for c in first.iter().chain(&second) {
        if let Some(json) = c.json() {
            assert_eq!(json, serde_json::to_vec(&*c.event.object).unwrap(), "{:?}", c.event.key);
        }
    }
}
