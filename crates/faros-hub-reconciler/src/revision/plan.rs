//! The revision decisions, without IO: which revision a provider moves to, what the gate's findings
//! mean for it, when it serves, and which old revisions go.

use faros_core::catalog::CatalogEntryStatus;
use faros_core::conditions;
use faros_core::provider::{Activation, ProviderSpec};
use faros_core::provider_revision::{ProviderRevision, RevisionPhase};
use faros_core::revision::compat::{self, Finding, Verdict};
use k8s_openapi::jiff::{SignedDuration, Timestamp};

/// How old the provider's last heartbeat may be for its revision to count as up.
pub const HEARTBEAT_FRESH: SignedDuration = SignedDuration::from_secs(120);

/// The revision the provider should move to: `spec.revision` when set; else, automatically, the
/// newest published one; under `activation: Manual` the current one stays until the admin names
/// another (the first revision of a provider serves without being named: nothing served before).
pub fn target<'a>(spec: &'a ProviderSpec, current: Option<&'a str>, published: &'a str) -> &'a str {
    if let Some(pin) = spec.revision.as_deref() {
        return pin;
    }
    match (spec.activation(), current) {
        (Activation::Manual, Some(current)) => current,
        _ => published,
    }
}

/// What the offline gate's findings ask for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Gate {
    /// Switch the export now.
    Switch,
    /// Refused, whatever tenants store.
    Refuse,
    /// Switch only if no live object of these resources (`<plural>.<group>`) is refused.
    LiveCheck(Vec<String>),
}

/// The gate's verdict on the schema findings (claims need consent, which never blocks the switch:
/// kcp grants a new claim only to tenants that accept it).
pub fn gate(findings: &[Finding]) -> Gate {
    match compat::overall(findings) {
        Verdict::Incompatible | Verdict::NeedsMigration => Gate::Refuse,
        Verdict::NeedsLiveCheck => Gate::LiveCheck(compat::needs_live_check(findings).into_iter().collect()),
        Verdict::Compatible | Verdict::NeedsConsent => Gate::Switch,
    }
}

/// Whether the provider's heartbeats say this revision runs and its backend is healthy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Health {
    Up,
    /// Not yet: reason and message for `BackendHealthy=False`.
    Waiting(&'static str, String),
}

/// The health gate: the CatalogEntry's status (written by the hub API from heartbeats and probes)
/// shows a heartbeat within [`HEARTBEAT_FRESH`] reporting `revision` (or, from a provider that does
/// not report revisions yet, its version), and `Ready=True` (endpoints valid, backend healthy).
pub fn health(revision: &ProviderRevision, entry: Option<&CatalogEntryStatus>, now: Timestamp) -> Health {
    let Some(status) = entry else {
        return Health::Waiting("NoHeartbeat", "the hub has recorded no heartbeat".into());
    };
    let Some(beat) = status.last_heartbeat.as_ref() else {
        return Health::Waiting("NoHeartbeat", "the hub has recorded no heartbeat".into());
    };
    if now.duration_since(beat.0) > HEARTBEAT_FRESH {
        return Health::Waiting("HeartbeatStale", format!("the last heartbeat was at {}", beat.0));
    }
    let name = revision.metadata.name.as_deref().unwrap_or_default();
    let reports_it = match (&status.reported_revision, &revision.spec.catalog.version) {
        (Some(reported), _) => reported == name,
        (None, Some(version)) => status.reported_version.as_deref() == Some(version.as_str()),
        (None, None) => true,
    };
    if !reports_it {
        return Health::Waiting(
            "OtherRevision",
            format!(
                "heartbeats report revision {:?} version {:?}, not {name}",
                status.reported_revision, status.reported_version
            ),
        );
    }
    if !conditions::is_true(&status.conditions, "Ready") {
        let why = conditions::get(&status.conditions, "Ready")
            .map(|c| format!("{}: {}", c.reason, c.message))
            .unwrap_or_else(|| "no Ready condition yet".into());
        return Health::Waiting("NotReady", format!("CatalogEntry not Ready: {why}"));
    }
    Health::Up
}

/// Revisions to delete: beyond `limit`, the oldest of those that are neither `keep` nor Pending or
/// Verifying (work in progress is never dropped). `revisions` in any order.
pub fn to_prune(revisions: &[ProviderRevision], keep: &[&str], limit: usize) -> Vec<String> {
    let mut old: Vec<&ProviderRevision> = revisions
        .iter()
        .filter(|r| !keep.contains(&r.metadata.name.as_deref().unwrap_or_default()))
        .filter(|r| {
            matches!(
                r.status.as_ref().and_then(|s| s.phase),
                Some(RevisionPhase::Retired | RevisionPhase::Failed)
            )
        })
        .collect();
    // Newest first; the name breaks ties so the choice is stable.
    old.sort_by(|a, b| {
        (b.metadata.creation_timestamp.as_ref().map(|t| t.0), &b.metadata.name)
            .cmp(&(a.metadata.creation_timestamp.as_ref().map(|t| t.0), &a.metadata.name))
    });
    old.into_iter()
        .skip(limit)
        .filter_map(|r| r.metadata.name.clone())
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use faros_core::catalog::CatalogEntrySpec;
    use faros_core::conditions::ConditionStatus;
    use faros_core::provider_revision::{ProviderRevisionSpec, ProviderRevisionStatus};
    use faros_core::revision::compat::Rule;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    #[test]
    fn target_table() {
        let spec = |activation: Option<Activation>, pin: Option<&str>| ProviderSpec {
            activation,
            revision: pin.map(str::to_string),
            ..Default::default()
        };
        for (name, s, current, want) in [
            ("automatic moves to the newest", spec(None, None), Some("p-1"), "p-2"),
            ("first revision", spec(Some(Activation::Manual), None), None, "p-2"),
            ("manual stays", spec(Some(Activation::Manual), None), Some("p-1"), "p-1"),
            ("pin wins (rollback)", spec(None, Some("p-0")), Some("p-1"), "p-0"),
            (
                "pin activates under manual",
                spec(Some(Activation::Manual), Some("p-2")),
                Some("p-1"),
                "p-2",
            ),
        ] {
            assert_eq!(target(&s, current, "p-2"), want, "{name}");
        }
    }

    fn finding(rule: Rule, verdict: Verdict, resource: &str) -> Finding {
        Finding {
            rule,
            verdict,
            resource: resource.into(),
            version: None,
            field: String::new(),
            message: String::new(),
            workspaces: Default::default(),
        }
    }

    #[test]
    fn gate_table() {
        use Rule::*;
        use Verdict::*;
        for (name, findings, want) in [
            ("nothing", vec![], Gate::Switch),
            ("compatible", vec![finding(FieldAdded, Compatible, "a.q")], Gate::Switch),
            (
                "consent never blocks",
                vec![finding(ClaimAdded, NeedsConsent, "x")],
                Gate::Switch,
            ),
            (
                "live check per resource",
                vec![
                    finding(FieldRemoved, NeedsLiveCheck, "b.q"),
                    finding(BoundsNarrowed, NeedsLiveCheck, "a.q"),
                    finding(FieldAdded, Compatible, "c.q"),
                ],
                Gate::LiveCheck(vec!["a.q".into(), "b.q".into()]),
            ),
            (
                "migration refused",
                vec![
                    finding(StorageVersionChanged, NeedsMigration, "a.q"),
                    finding(FieldRemoved, NeedsLiveCheck, "a.q"),
                ],
                Gate::Refuse,
            ),
            (
                "incompatible",
                vec![finding(ResourceRemoved, Incompatible, "a.q")],
                Gate::Refuse,
            ),
        ] {
            assert_eq!(gate(&findings), want, "{name}");
        }
    }

    fn revision(name: &str, version: Option<&str>, phase: Option<RevisionPhase>, created: i64) -> ProviderRevision {
        let mut r = ProviderRevision::new(
            name,
            ProviderRevisionSpec {
                provider: "p".into(),
                digest: "0".repeat(64),
                catalog: CatalogEntrySpec {
                    version: version.map(str::to_string),
                    ..Default::default()
                },
            },
        );
        r.metadata.creation_timestamp = Some(Time(Timestamp::from_second(created).unwrap()));
        r.status = Some(ProviderRevisionStatus {
            phase,
            ..Default::default()
        });
        r
    }

    #[test]
    fn health_table() {
        let now = Timestamp::from_second(1_000_000).unwrap();
        let ready = |ok: bool| {
            vec![faros_core::conditions::new_condition(
                "Ready",
                if ok {
                    ConditionStatus::True
                } else {
                    ConditionStatus::False
                },
                "R",
                "m",
                None,
                now,
            )]
        };
        let status = |beat: i64, rev: Option<&str>, version: Option<&str>, ok: bool| CatalogEntryStatus {
            last_heartbeat: Some(Time(Timestamp::from_second(beat).unwrap())),
            reported_revision: rev.map(str::to_string),
            reported_version: version.map(str::to_string),
            conditions: ready(ok),
            ..Default::default()
        };
        let r = revision("p-2", Some("0.2.0"), None, 0);
        let waiting = |h: Health| match h {
            Health::Up => "Up",
            Health::Waiting(reason, _) => reason,
        };
        for (name, st, want) in [
            ("no status", None, "NoHeartbeat"),
            (
                "fresh, this revision, ready",
                Some(status(999_990, Some("p-2"), None, true)),
                "Up",
            ),
            (
                "stale",
                Some(status(999_000, Some("p-2"), None, true)),
                "HeartbeatStale",
            ),
            (
                "other revision",
                Some(status(999_990, Some("p-1"), Some("0.2.0"), true)),
                "OtherRevision",
            ),
            (
                "version fallback",
                Some(status(999_990, None, Some("0.2.0"), true)),
                "Up",
            ),
            (
                "old version",
                Some(status(999_990, None, Some("0.1.0"), true)),
                "OtherRevision",
            ),
            (
                "backend unhealthy",
                Some(status(999_990, Some("p-2"), None, false)),
                "NotReady",
            ),
        ] {
            assert_eq!(waiting(health(&r, st.as_ref(), now)), want, "{name}");
        }
    }

    #[test]
    fn prune_keeps_limit_current_target_and_work_in_progress() {
        use RevisionPhase::*;
        let revs = vec![
            revision("p-1", None, Some(Retired), 1),
            revision("p-2", None, Some(Failed), 2),
            revision("p-3", None, Some(Retired), 3),
            revision("p-4", None, Some(Serving), 4),
            revision("p-5", None, Some(Pending), 5),
            revision("p-6", None, Some(Retired), 6),
        ];
        assert_eq!(to_prune(&revs, &["p-4", "p-6"], 1), vec!["p-2", "p-1"]);
        assert_eq!(to_prune(&revs, &["p-4"], 0), vec!["p-6", "p-3", "p-2", "p-1"]);
        assert!(to_prune(&revs, &["p-4"], 10).is_empty());
    }
}
