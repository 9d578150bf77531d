//! Leader election on a `coordination.k8s.io/v1` Lease, client-go style.
//!
//! Expiry is judged by the local clock from the moment this replica last saw the Lease *change*, not
//! from the `renewTime` the holder wrote, so clock skew between replicas (or with kcp) cannot make a
//! standby steal a live lease. Writes are optimistic (`resourceVersion` on replace), so two standbys
//! racing for an expired lease cannot both win. A leader that cannot renew for `renew_deadline` steps
//! down before its lease can expire for others (`renew_deadline < duration`).

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::api::PostParams;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Lease name, namespace, this replica's identity and the timings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseSettings {
    pub name: String,
    pub namespace: String,
    /// Unique per replica (hostname plus a random suffix by default).
    pub identity: String,
    /// How long a lease stays valid without renewal.
    pub duration: Duration,
    /// A leader that has not renewed for this long stops acting. Must be below `duration`.
    pub renew_deadline: Duration,
    /// How often leaders renew and standbys retry.
    pub retry_period: Duration,
}

/// This replica's role, as published to the rest of the process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    /// No answer from the Lease yet.
    Starting,
    Leader,
    /// Another replica (`holder`) leads, or leadership is undecided (`None`).
    Standby {
        holder: Option<String>,
    },
}

/// The parts of a Lease that decide leadership.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Record {
    pub holder: Option<String>,
    pub duration: Option<Duration>,
    pub renew_time: Option<Timestamp>,
    pub transitions: i32,
}

impl Record {
    pub fn of(lease: &Lease) -> Self {
        let spec = lease.spec.clone().unwrap_or_default();
        Self {
            holder: spec.holder_identity.filter(|h| !h.is_empty()),
            duration: spec
                .lease_duration_seconds
                .and_then(|s| u64::try_from(s).ok())
                .map(Duration::from_secs),
            renew_time: spec.renew_time.map(|t| t.0),
            transitions: spec.lease_transitions.unwrap_or(0),
        }
    }
}

/// What to do with the Lease just read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// We hold it: renew.
    Renew,
    /// Nobody holds it, or the holder let it expire: take it.
    Acquire,
    /// Someone else holds a live lease.
    Standby { holder: String },
}

/// Remembers the last Lease record seen and when (local clock).
#[derive(Debug, Default)]
pub struct Observer {
    last: Option<(Record, Instant)>,
}

impl Observer {
    /// Decides based on `record` read at `now`. `default_duration` applies when the Lease has none.
    pub fn decide(&mut self, record: Record, identity: &str, now: Instant, default_duration: Duration) -> Decision {
        let observed_at = match &self.last {
            Some((last, at)) if *last == record => *at,
            _ => now,
        };
        let decision = match record.holder.as_deref() {
            None => Decision::Acquire,
            Some(holder) if holder == identity => Decision::Renew,
            Some(holder) => {
                let duration = record.duration.unwrap_or(default_duration);
                if now.saturating_duration_since(observed_at) >= duration {
                    Decision::Acquire
                } else {
                    Decision::Standby {
                        holder: holder.to_string(),
                    }
                }
            }
        };
        self.last = Some((record, observed_at));
        decision
    }
}

/// The Lease object `identity` writes when it acquires or renews.
pub fn lease_spec(previous: &Record, settings: &LeaseSettings, acquiring: bool, now: Timestamp) -> LeaseSpec {
    let transitions = if acquiring && previous.holder.is_some() {
        previous.transitions.saturating_add(1)
    } else {
        previous.transitions
    };
    LeaseSpec {
        holder_identity: Some(settings.identity.clone()),
        lease_duration_seconds: Some(i32::try_from(settings.duration.as_secs().max(1)).unwrap_or(i32::MAX)),
        acquire_time: acquiring.then_some(MicroTime(now)),
        renew_time: Some(MicroTime(now)),
        lease_transitions: Some(transitions),
        ..Default::default()
    }
}

/// Errors talking to the Lease.
#[derive(Debug, thiserror::Error)]
pub enum LeaseError {
    #[error("reading Lease {namespace}/{name}: {source}")]
    Read {
        namespace: String,
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("writing Lease {namespace}/{name}: {source}")]
    Write {
        namespace: String,
        name: String,
        #[source]
        source: kube::Error,
    },
}

/// Runs the election until `cancel` fires, publishing the role on `role`. On cancellation a replica
/// the Lease may still name releases it, so a standby can take over at once instead of after
/// `duration`.
pub async fn run(api: Api<Lease>, settings: LeaseSettings, role: watch::Sender<Role>, cancel: CancellationToken) {
    let mut observer = Observer::default();
    let mut last_renewed: Option<Instant> = None;
    // Whether the Lease may still name us. A leader that stepped down because its renewals failed
    // past the deadline still holds it until another replica writes: it releases at stop too.
    let mut may_hold = *role.borrow() == Role::Leader;
    loop {
        let result = tokio::select! {
            _ = cancel.cancelled() => break,
            r = try_acquire_or_renew(&api, &settings, &mut observer) => r,
        };
        let now = Instant::now();
        match result {
            Ok(Decision::Renew | Decision::Acquire) => {
                last_renewed = Some(now);
                may_hold = true;
                publish(&role, Role::Leader, &settings);
            }
            Ok(Decision::Standby { holder }) => {
                last_renewed = None;
                // A conflicting renewal reports the holder it read, which can still be us.
                may_hold = holder == settings.identity;
                publish(&role, Role::Standby { holder: Some(holder) }, &settings);
            }
            Err(error) => {
                tracing::warn!(%error, "leader election: lease update failed");
                if last_renewed.is_some_and(|t| now.saturating_duration_since(t) >= settings.renew_deadline) {
                    last_renewed = None;
                    publish(&role, Role::Standby { holder: None }, &settings);
                }
            }
        }
        tokio::select! {
            _ = cancel.cancelled() => break,
            _ = tokio::time::sleep(settings.retry_period) => {}
        }
    }
    if may_hold && let Err(error) = release(&api, &settings).await {
        tracing::warn!(%error, "leader election: could not release the lease; a standby takes over after it expires");
    }
    publish(&role, Role::Standby { holder: None }, &settings);
}

fn publish(tx: &watch::Sender<Role>, new: Role, settings: &LeaseSettings) {
    tx.send_if_modified(|current| {
        if *current == new {
            return false;
        }
        match &new {
            Role::Leader => tracing::info!(identity = %settings.identity, lease = %settings.name, "became leader"),
            Role::Standby { holder } => {
                tracing::info!(identity = %settings.identity, holder = ?holder, "standing by")
            }
            Role::Starting => {}
        }
        *current = new.clone();
        true
    });
}

async fn try_acquire_or_renew(
    api: &Api<Lease>,
    settings: &LeaseSettings,
    observer: &mut Observer,
) -> Result<Decision, LeaseError> {
    let read_err = |source| LeaseError::Read {
        namespace: settings.namespace.clone(),
        name: settings.name.clone(),
        source,
    };
    let write_err = |source| LeaseError::Write {
        namespace: settings.namespace.clone(),
        name: settings.name.clone(),
        source,
    };
    let now = Timestamp::now();
    let Some(current) = api.get_opt(&settings.name).await.map_err(read_err)? else {
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some(settings.name.clone()),
                ..Default::default()
            },
            spec: Some(lease_spec(&Record::default(), settings, true, now)),
        };
        return match api.create(&PostParams::default(), &lease).await {
            Ok(_) => Ok(Decision::Acquire),
            // Another replica created it first; it leads until proven otherwise.
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(Decision::Standby { holder: String::new() }),
            Err(e) => Err(write_err(e)),
        };
    };
    let record = Record::of(&current);
    let decision = observer.decide(record.clone(), &settings.identity, Instant::now(), settings.duration);
    let acquiring = match &decision {
        Decision::Standby { .. } => return Ok(decision),
        Decision::Acquire => true,
        Decision::Renew => false,
    };
    let mut updated = current.clone();
    updated.spec = Some(lease_spec(&record, settings, acquiring, now));
    if !acquiring {
        // Keep the original acquire time across renewals.
        if let Some(spec) = updated.spec.as_mut() {
            spec.acquire_time = current.spec.as_ref().and_then(|s| s.acquire_time.clone());
        }
    }
    match api.replace(&settings.name, &PostParams::default(), &updated).await {
        Ok(written) => {
            // Seeing our own write must not count as someone else's renewal later.
            observer.decide(
                Record::of(&written),
                &settings.identity,
                Instant::now(),
                settings.duration,
            );
            Ok(decision)
        }
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(Decision::Standby {
            holder: record.holder.unwrap_or_default(),
        }),
        Err(e) => Err(write_err(e)),
    }
}

/// How many times [`release`] rereads the Lease after a conflict before giving up.
const RELEASE_ATTEMPTS: usize = 3;

/// Clears the holder if it is still us. A conflict is retried on a fresh read: cancelling `run`
/// drops a renewal whose PUT may already be on the wire, and when the server applies it after
/// our read, the release's write is refused with 409 although we still hold the Lease.
async fn release(api: &Api<Lease>, settings: &LeaseSettings) -> Result<(), LeaseError> {
    let mut attempt = 1;
    loop {
        match release_once(api, settings).await {
            Err(LeaseError::Write {
                source: kube::Error::Api(s),
                ..
            }) if s.code == 409 && attempt < RELEASE_ATTEMPTS => attempt += 1,
            result => return result,
        }
    }
}

async fn release_once(api: &Api<Lease>, settings: &LeaseSettings) -> Result<(), LeaseError> {
    let current = api.get_opt(&settings.name).await.map_err(|source| LeaseError::Read {
        namespace: settings.namespace.clone(),
        name: settings.name.clone(),
        source,
    })?;
    let Some(mut lease) = current else { return Ok(()) };
    if Record::of(&lease).holder.as_deref() != Some(settings.identity.as_str()) {
        return Ok(());
    }
    if let Some(spec) = lease.spec.as_mut() {
        spec.holder_identity = None;
        spec.lease_duration_seconds = Some(1);
        spec.renew_time = Some(MicroTime(Timestamp::now()));
    }
    api.replace(&settings.name, &PostParams::default(), &lease)
        .await
        .map_err(|source| LeaseError::Write {
            namespace: settings.namespace.clone(),
            name: settings.name.clone(),
            source,
        })?;
    tracing::info!(identity = %settings.identity, "released the leader lease");
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn rec(holder: Option<&str>, renew: i64) -> Record {
        Record {
            holder: holder.map(str::to_string),
            duration: Some(Duration::from_secs(10)),
            renew_time: Some(Timestamp::from_second(renew).unwrap()),
            transitions: 0,
        }
    }

    #[test]
    fn decide_table() {
        let t0 = Instant::now();
        let s = Duration::from_secs;
        // (what we read, when, expected decision): one observer across the whole sequence.
        let steps: Vec<(&str, Record, Instant, Decision)> = vec![
            ("nobody holds it", rec(None, 1), t0, Decision::Acquire),
            ("we hold it", rec(Some("me"), 2), t0 + s(1), Decision::Renew),
            (
                "other holder, first seen",
                rec(Some("b"), 3),
                t0 + s(2),
                Decision::Standby { holder: "b".into() },
            ),
            (
                "unchanged for 9s",
                rec(Some("b"), 3),
                t0 + s(11),
                Decision::Standby { holder: "b".into() },
            ),
            (
                "b renewed: clock restarts",
                rec(Some("b"), 4),
                t0 + s(12),
                Decision::Standby { holder: "b".into() },
            ),
            (
                "9s after renewal",
                rec(Some("b"), 4),
                t0 + s(21),
                Decision::Standby { holder: "b".into() },
            ),
            (
                "10s after renewal: expired",
                rec(Some("b"), 4),
                t0 + s(22),
                Decision::Acquire,
            ),
        ];
        let mut obs = Observer::default();
        for (name, record, now, want) in steps {
            assert_eq!(obs.decide(record, "me", now, s(15)), want, "{name}");
        }
    }

    #[test]
    fn stale_renew_time_does_not_matter_only_observation_does() {
        // A renewTime far in the past (skewed clock) is still a live lease when first seen.
        let mut obs = Observer::default();
        let now = Instant::now();
        assert_eq!(
            obs.decide(rec(Some("b"), 0), "me", now, Duration::from_secs(15)),
            Decision::Standby { holder: "b".into() }
        );
    }

    #[test]
    fn default_duration_applies_without_lease_duration() {
        let mut obs = Observer::default();
        let t0 = Instant::now();
        let mut r = rec(Some("b"), 1);
        r.duration = None;
        assert_eq!(
            obs.decide(r.clone(), "me", t0, Duration::from_secs(3)),
            Decision::Standby { holder: "b".into() }
        );
        assert_eq!(
            obs.decide(r, "me", t0 + Duration::from_secs(3), Duration::from_secs(3)),
            Decision::Acquire
        );
    }

    #[test]
    fn spec_written_on_acquire_and_renew() {
        let settings = LeaseSettings {
            name: "l".into(),
            namespace: "faros-system".into(),
            identity: "me".into(),
            duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        };
        let now = Timestamp::from_second(100).unwrap();
        let mut prev = rec(Some("b"), 1);
        prev.transitions = 4;
        let acquired = lease_spec(&prev, &settings, true, now);
        assert_eq!(acquired.holder_identity.as_deref(), Some("me"));
        assert_eq!(acquired.lease_duration_seconds, Some(15));
        assert_eq!(acquired.lease_transitions, Some(5));
        assert_eq!(acquired.acquire_time, Some(MicroTime(now)));
        assert_eq!(acquired.renew_time, Some(MicroTime(now)));
        let renewed = lease_spec(&rec(Some("me"), 1), &settings, false, now);
        assert_eq!(renewed.lease_transitions, Some(0));
        assert_eq!(renewed.acquire_time, None);
        // First acquisition of a fresh lease is not a transition.
        assert_eq!(
            lease_spec(&Record::default(), &settings, true, now).lease_transitions,
            Some(0)
        );
    }
}
