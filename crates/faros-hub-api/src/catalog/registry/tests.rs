use std::time::Duration;

use faros_core::catalog::{BackendSpec, CatalogEntry, CatalogEntrySpec, CatalogEntryStatus, UiSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use pretty_assertions::assert_eq;

use super::*;
use crate::catalog::clock::ManualClock;

const T0: &str = "2026-01-01T00:00:00Z";

fn ts(s: &str) -> Timestamp {
    s.parse().unwrap()
}

fn setup() -> (Arc<ManualClock>, Registry) {
    let clock = Arc::new(ManualClock::new(ts(T0)));
    let reg = Registry::new(clock.clone(), RegistrySettings::default());
    (clock, reg)
}

fn entry(name: &str, ui: &str) -> CatalogEntry {
    let mut e = CatalogEntry::new(
        name,
        CatalogEntrySpec {
            display_name: name.to_uppercase(),
            ui: Some(UiSpec {
                url: Some(ui.into()),
                ..Default::default()
            }),
            ..Default::default()
        },
    );
    e.metadata.generation = Some(1);
    e
}

fn cand(name: &str, cluster: &str, path: Option<&str>, ui: &str) -> Candidate {
    Candidate {
        cluster: cluster.into(),
        path: path.map(String::from),
        source: "vw".into(),
        entry: entry(name, ui),
    }
}

fn ui_of(reg: &Registry, name: &str) -> Option<String> {
    reg.get(name)
        .and_then(|p| p.endpoints.ui.as_ref().map(ToString::to_string))
}

#[test]
fn spoofed_and_conflicting_entries_cannot_take_a_route() {
    let (_, reg) = setup();
    // A tenant and another provider register "q" first; neither counts.
    reg.upsert(cand(
        "q",
        "c-tenant",
        Some("root:faros:tenants:acme:dev"),
        "http://evil/1",
    ));
    reg.upsert(cand("q", "c-evil", Some("root:faros:providers:evil"), "http://evil/2"));
    assert!(reg.get("q").is_none());
    // The admin entry wins over them.
    reg.upsert(cand(
        "q",
        "c-admin",
        Some("root:faros:system:providers"),
        "http://admin/",
    ));
    assert_eq!(ui_of(&reg, "q").as_deref(), Some("http://admin/"));
    assert_eq!(reg.get("q").unwrap().provider_cluster, None);
    // The provider's own entry wins over the admin one...
    reg.upsert(cand("q", "c-own", Some("root:faros:providers:q"), "http://own/"));
    let p = reg.get("q").unwrap();
    assert_eq!(
        (p.authority, p.provider_cluster.as_deref()),
        (Authority::ProviderWorkspace, Some("c-own"))
    );
    assert_eq!(ui_of(&reg, "q").as_deref(), Some("http://own/"));
    // ...and a later spoof update does not change that.
    reg.upsert(cand(
        "q",
        "c-tenant",
        Some("root:faros:tenants:acme:dev"),
        "http://evil/3",
    ));
    assert_eq!(ui_of(&reg, "q").as_deref(), Some("http://own/"));
    // Deleting the own entry falls back to the admin one; deleting that deregisters.
    reg.remove("c-own", "q");
    assert_eq!(ui_of(&reg, "q").as_deref(), Some("http://admin/"));
    reg.set_provider_cluster("q", "c-own2");
    assert_eq!(reg.get("q").unwrap().provider_cluster.as_deref(), Some("c-own2"));
    reg.remove("c-admin", "q");
    assert!(reg.get("q").is_none());
    // Statuses: the spoofs are told why they are ignored.
    let work = reg.desired_statuses("q", ts(T0));
    let reasons: Vec<(String, String)> = work
        .iter()
        .map(|w| {
            let c = faros_core::conditions::get(&w.desired.conditions, "Ready").unwrap();
            (w.cluster.clone(), c.reason.clone())
        })
        .collect();
    assert_eq!(
        reasons,
        vec![
            ("c-evil".to_string(), "NotAuthoritative".to_string()),
            ("c-tenant".to_string(), "NotAuthoritative".to_string())
        ]
    );
}

#[test]
fn loser_status_reports_the_conflict() {
    let (_, reg) = setup();
    reg.upsert(cand(
        "q",
        "c-admin",
        Some("root:faros:system:providers"),
        "http://admin/",
    ));
    reg.upsert(cand("q", "c-own", Some("root:faros:providers:q"), "http://own/"));
    let work = reg.desired_statuses("q", ts(T0));
    let summary: Vec<(String, String, Option<String>)> = work
        .iter()
        .map(|w| {
            let c = faros_core::conditions::get(&w.desired.conditions, "Ready").unwrap();
            (
                w.cluster.clone(),
                c.reason.clone(),
                w.desired.endpoints.as_ref().and_then(|e| e.ui.clone()),
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            ("c-admin".into(), "Conflict".into(), None),
            ("c-own".into(), "EndpointsResolved".into(), Some("http://own/".into())),
        ]
    );
    assert!(work.iter().all(StatusWork::needs_write));
    // Once written, nothing is rewritten.
    for w in &work {
        reg.written(&w.name, &w.cluster, w.desired.clone());
    }
    assert!(reg.desired_statuses("q", ts(T0)).iter().all(|w| !w.needs_write()));
}

/// A beat naming a new revision is persisted at once, inside the throttle (the reconciler's health
/// gate waits for it); a beat naming none keeps the last one.
#[test]
fn a_new_revision_is_persisted_at_once() {
    let (clock, reg) = setup();
    reg.upsert(cand("q", "c", Some("root:faros:providers:q"), "http://q/"));
    let rev = |r: &str| Reported {
        version: None,
        revision: Some(r.into()),
    };
    assert_eq!(reg.heartbeat("q", rev("q-0000000001"), clock.now()), Ok(true));
    clock.advance(Duration::from_secs(1));
    assert_eq!(
        reg.heartbeat("q", rev("q-0000000001"), clock.now()),
        Ok(false),
        "same revision: throttled"
    );
    assert_eq!(
        reg.heartbeat("q", rev("q-0000000002"), clock.now()),
        Ok(true),
        "new revision: at once"
    );
    assert_eq!(reg.heartbeat("q", Reported::default(), clock.now()), Ok(false));
    assert_eq!(
        reg.view("q").unwrap().reported_revision.as_deref(),
        Some("q-0000000002")
    );
    let work = reg.desired_statuses("q", clock.now());
    assert_eq!(work[0].desired.reported_revision.as_deref(), Some("q-0000000002"));
}

#[test]
fn heartbeats_ttl_and_persist_throttle() {
    let (clock, reg) = setup();
    assert_eq!(
        reg.heartbeat("q", Reported::default(), clock.now()),
        Err(RegistryError::UnknownProvider("q".into()))
    );
    reg.upsert(cand("q", "c", Some("root:faros:providers:q"), "http://q/"));
    assert!(
        reg.view("q").unwrap().readiness.ready,
        "never beaten: ready on endpoints"
    );
    // First beat persists; the next within 15 s does not; after 15 s it does again.
    assert_eq!(
        reg.heartbeat(
            "q",
            Reported {
                version: Some("1.0".into()),
                revision: None
            },
            clock.now()
        ),
        Ok(true)
    );
    clock.advance(Duration::from_secs(10));
    assert_eq!(reg.heartbeat("q", Reported::default(), clock.now()), Ok(false));
    clock.advance(Duration::from_secs(5));
    assert_eq!(reg.heartbeat("q", Reported::default(), clock.now()), Ok(true));
    let v = reg.view("q").unwrap();
    assert_eq!((v.readiness.ready, v.reported_version.as_deref()), (true, Some("1.0")));
    // 91 s of silence: stale.
    clock.advance(Duration::from_secs(91));
    let v = reg.view("q").unwrap();
    assert_eq!((v.readiness.ready, v.readiness.reason), (false, "HeartbeatStale"));
    assert_eq!(reg.reevaluate(clock.now()), 0);
    // One beat brings it back.
    reg.heartbeat(
        "q",
        Reported {
            version: Some("1.1".into()),
            revision: None,
        },
        clock.now(),
    )
    .unwrap();
    let v = reg.view("q").unwrap();
    assert_eq!((v.readiness.ready, v.reported_version.as_deref()), (true, Some("1.1")));
    assert_eq!(reg.reevaluate(clock.now()), 1);
    let work = reg.desired_statuses("q", clock.now());
    assert_eq!(work[0].desired.reported_version.as_deref(), Some("1.1"));
    assert_eq!(
        work[0].desired.last_heartbeat.as_ref().map(|t| t.0),
        Some(ts("2026-01-01T00:01:46Z"))
    );
}

#[test]
fn liveness_is_recovered_from_status_but_never_from_the_future_or_a_loser() {
    let (clock, reg) = setup();
    let mut own = cand("q", "c", Some("root:faros:providers:q"), "http://q/");
    own.entry.status = Some(CatalogEntryStatus {
        last_heartbeat: Some(Time(ts("2025-12-31T23:59:00Z"))),
        reported_version: Some("0.9".into()),
        ..Default::default()
    });
    reg.upsert(own.clone());
    let v = reg.view("q").unwrap();
    assert_eq!(v.last_beat, Some(ts("2025-12-31T23:59:00Z")));
    assert_eq!(v.reported_version.as_deref(), Some("0.9"));
    assert!(v.readiness.ready);
    // Restart: a new registry rebuilds the same state from the same status.
    clock.advance(Duration::from_secs(31));
    let (_, fresh) = setup();
    fresh.replace_source("vw", vec![own.clone()]);
    assert_eq!(fresh.view("q").unwrap().last_beat, Some(ts("2025-12-31T23:59:00Z")));
    // A forged far-future beat is clamped to now, so it goes stale like any other.
    let mut forged = own.clone();
    forged.entry.status.as_mut().unwrap().last_heartbeat = Some(Time(ts("2030-01-01T00:00:00Z")));
    reg.upsert(forged);
    assert_eq!(reg.view("q").unwrap().last_beat, Some(clock.now()));
    clock.advance(Duration::from_secs(91));
    assert!(!reg.view("q").unwrap().readiness.ready);
    // A losing spoof's beats are ignored.
    let (_, reg) = setup();
    reg.upsert(cand("q", "c", Some("root:faros:providers:q"), "http://q/"));
    let mut spoof = cand("q", "s", Some("root:faros:tenants:a:b"), "http://evil/");
    spoof.entry.status = Some(CatalogEntryStatus {
        last_heartbeat: Some(Time(ts(T0))),
        ..Default::default()
    });
    reg.upsert(spoof);
    assert_eq!(reg.view("q").unwrap().last_beat, None);
}

#[test]
fn backend_health_gates_readiness_and_resets_on_url_change() {
    let (_, reg) = setup();
    let mut c = cand("q", "c", Some("root:faros:providers:q"), "http://q/");
    c.entry.spec.backend = Some(BackendSpec {
        url: "http://b:1".into(),
        health_path: Some("/live".into()),
    });
    reg.upsert(c.clone());
    assert_eq!(reg.unprobed(), vec!["q".to_string()]);
    assert_eq!(
        reg.backends(),
        vec![(
            "q".to_string(),
            "http://b:1".parse::<http::Uri>().unwrap(),
            "/live".to_string()
        )]
    );
    assert_eq!(reg.view("q").unwrap().readiness.reason, "BackendUnhealthy");
    reg.set_health("q", "http://b:1/", BackendHealth::Healthy);
    assert!(reg.view("q").unwrap().readiness.ready);
    reg.set_health("q", "http://b:1/", BackendHealth::Unhealthy("503".into()));
    assert!(!reg.view("q").unwrap().readiness.ready);
    c.entry.spec.backend.as_mut().unwrap().url = "http://b:2".into();
    reg.upsert(c);
    assert_eq!(reg.unprobed(), vec!["q".to_string()]);
}

#[test]
fn synced_after_every_source_listed() {
    let (_, reg) = setup();
    assert!(!reg.is_synced());
    reg.expect_sources(2);
    reg.replace_source("a", vec![]);
    assert!(!reg.is_synced());
    let mut q = cand("q", "c", Some("root:faros:providers:q"), "http://q/");
    q.source = "b".into();
    reg.replace_source("b", vec![q]);
    assert!(reg.is_synced());
    // A relist of "b" without q removes it.
    reg.replace_source("b", vec![]);
    assert!(reg.get("q").is_none());
}

#[test]
fn formats_as_compares_without_building_the_string() {
    let uri: http::Uri = "http://b:1/x?y=1".parse().unwrap();
    assert!(formats_as(&uri, "http://b:1/x?y=1"));
    for other in ["http://b:1/x?y=", "http://b:1/x?y=12", "", "http://b:2/x?y=1"] {
        assert!(!formats_as(&uri, other), "{other}");
    }
}

#[test]
fn a_beat_asks_for_a_probe_while_the_backend_is_not_known_healthy() {
    let (clock, reg) = setup();
    let mut c = cand("q", "c", Some("root:faros:providers:q"), "http://q/");
    c.entry.spec.backend = Some(BackendSpec {
        url: "http://b:1".into(),
        health_path: None,
    });
    reg.upsert(c);
    let beat = || reg.heartbeat("q", Reported::default(), clock.now()).unwrap();
    let cases: [(&str, Option<BackendHealth>, bool); 3] = [
        ("never probed", None, true),
        (
            "last probe failed",
            Some(BackendHealth::Unhealthy("refused".into())),
            true,
        ),
        ("healthy", Some(BackendHealth::Healthy), false),
    ];
    for (name, health, want) in cases {
        if let Some(h) = health {
            reg.set_health("q", "http://b:1/", h);
        }
        beat();
        let requested = reg.take_probe_requests();
        assert_eq!(requested.contains("q"), want, "{name}");
        assert!(reg.take_probe_requests().is_empty(), "{name}: taken once");
    }
}
