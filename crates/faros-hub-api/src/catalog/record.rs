//! IO-free rules about one provider: endpoint parsing, readiness, and the CatalogEntry status the
//! hub wants written.

use std::time::Duration;

use faros_core::catalog::{CatalogEntrySpec, CatalogEntryStatus, Endpoints};
use faros_core::conditions::{self, ConditionStatus};
use faros_core::names;
use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::authority::Rejection;
use super::registry::Reported;
use crate::proxy::UpstreamPolicy;

/// `BackendHealthy` condition type on CatalogEntry.
pub const CONDITION_BACKEND_HEALTHY: &str = "BackendHealthy";
/// `BackendHealthy=True`.
pub const REASON_HEALTHY: &str = "Healthy";
/// `BackendHealthy=False`.
pub const REASON_UNHEALTHY: &str = "Unhealthy";
/// `BackendHealthy=Unknown` until the first probe.
pub const REASON_NOT_PROBED: &str = "NotProbed";

/// The endpoints of a spec, parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParsedEndpoints {
    pub ui: Option<http::Uri>,
    pub backend: Option<http::Uri>,
    /// `backend.healthPath`, defaulted.
    pub health_path: String,
    /// `"<field>: <problem>"` per bad URL.
    pub errors: Vec<String>,
    /// Whether anything routable or bindable was declared (UI, backend or APIExport).
    pub declared: bool,
}

impl ParsedEndpoints {
    /// `Ok` when the endpoints can be routed, else the CatalogEntry `Ready` (reason, message).
    pub fn verdict(&self) -> Result<(), (&'static str, String)> {
        if !self.errors.is_empty() {
            return Err((
                names::REASON_INVALID_ENDPOINT,
                format!("Endpoint parse errors: [{}]", self.errors.join(", ")),
            ));
        }
        if !self.declared {
            return Err((
                names::REASON_NO_ENDPOINT,
                "CatalogEntry declares no UI, backend or APIExport.".into(),
            ));
        }
        Ok(())
    }
}

/// Parses `ui.url` and `backend.url`: each must be an absolute http(s) URL with a host and no
/// query or fragment (a query would be silently merged with the caller's), on a host `policy`
/// admits (checked again on every connect: [`crate::proxy::upstream_policy`]).
pub fn parse_endpoints(spec: &CatalogEntrySpec, policy: &UpstreamPolicy) -> ParsedEndpoints {
    let mut errors = Vec::new();
    let mut parse = |field: &str, raw: Option<&str>| -> Option<http::Uri> {
        let raw = raw?;
        match parse_upstream(raw, policy) {
            Ok(uri) => Some(uri),
            Err(problem) => {
                errors.push(format!("{field}: {problem}"));
                None
            }
        }
    };
    let ui = parse("ui.url", spec.ui.as_ref().and_then(|u| u.url.as_deref()));
    let backend = parse("backend.url", spec.backend.as_ref().map(|b| b.url.as_str()));
    let health_path = spec
        .backend
        .as_ref()
        .map(|b| b.health_path().to_string())
        .unwrap_or_else(|| names::DEFAULT_HEALTH_PATH.to_string());
    if !health_path.starts_with('/') {
        errors.push(format!("backend.healthPath: {health_path:?} must start with '/'"));
    }
    let declared =
        spec.ui.as_ref().is_some_and(|u| u.url.is_some()) || spec.backend.is_some() || spec.api_export.is_some();
    ParsedEndpoints {
        ui,
        backend,
        health_path,
        errors,
        declared,
    }
}

fn parse_upstream(raw: &str, policy: &UpstreamPolicy) -> Result<http::Uri, String> {
    let uri: http::Uri = raw.parse().map_err(|e| format!("{raw:?} is not a URL: {e}"))?;
    match uri.scheme_str() {
        Some("http" | "https") => {}
        Some(other) => return Err(format!("{raw:?}: scheme {other:?} is not http or https")),
        None => return Err(format!("{raw:?} must be absolute (http:// or https://)")),
    }
    if uri.host().is_none_or(str::is_empty) {
        return Err(format!("{raw:?} has no host"));
    }
    if uri.query().is_some() {
        return Err(format!("{raw:?} must not have a query"));
    }
    policy
        .check_host(uri.host().unwrap_or_default())
        .map_err(|refused| format!("{raw:?}: {refused}"))?;
    Ok(uri)
}

/// What the hub knows about a declared backend's health.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BackendHealth {
    /// No backend declared: health does not matter.
    NotDeclared,
    /// Declared, not probed yet.
    Unknown,
    Healthy,
    /// Last probe failed, with why.
    Unhealthy(String),
}

/// Whether a provider may receive traffic, and if not, why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Readiness {
    pub ready: bool,
    /// CatalogEntry `Ready` reason.
    pub reason: &'static str,
    /// Static when Ready: the hot path computes it per request.
    pub message: std::borrow::Cow<'static, str>,
}

impl Readiness {
    fn not(reason: &'static str, message: impl Into<std::borrow::Cow<'static, str>>) -> Self {
        Self {
            ready: false,
            reason,
            message: message.into(),
        }
    }
}

/// Message of `Ready=True`.
pub const MESSAGE_READY: &str = "Provider endpoints registered with the hub routing table.";

/// Ready = endpoints valid AND (never beaten OR beaten within `ttl`) AND backend healthy (when one
/// is declared). The first failing rule gives the reason.
pub fn readiness(
    endpoints: &ParsedEndpoints,
    last_beat: Option<Timestamp>,
    health: &BackendHealth,
    now: Timestamp,
    ttl: Duration,
) -> Readiness {
    if let Err((reason, message)) = endpoints.verdict() {
        return Readiness::not(reason, message);
    }
    if let Some(beat) = last_beat {
        let age = now.duration_since(beat);
        if age > jiff::SignedDuration::try_from(ttl).unwrap_or(jiff::SignedDuration::MAX) {
            return Readiness::not(
                names::REASON_HEARTBEAT_STALE,
                format!(
                    "Last heartbeat at {beat} is older than {}s; the provider's serve loop is not reaching the hub.",
                    ttl.as_secs()
                ),
            );
        }
    }
    match health {
        BackendHealth::NotDeclared | BackendHealth::Healthy => Readiness {
            ready: true,
            reason: names::REASON_ENDPOINTS_RESOLVED,
            message: std::borrow::Cow::Borrowed(MESSAGE_READY),
        },
        BackendHealth::Unknown => Readiness::not(
            names::REASON_BACKEND_UNHEALTHY,
            "Backend health has not been probed yet.",
        ),
        BackendHealth::Unhealthy(why) => Readiness::not(
            names::REASON_BACKEND_UNHEALTHY,
            format!("Backend health probe failed: {why}"),
        ),
    }
}

/// Inputs of [`desired_status`] for the elected entry.
#[derive(Clone, Debug)]
pub struct Winner<'a> {
    pub endpoints: &'a ParsedEndpoints,
    pub readiness: &'a Readiness,
    pub health: &'a BackendHealth,
    /// `root:faros:providers:<name>`.
    pub workspace: String,
    /// The last beat worth persisting (throttled) and what it reported.
    pub persisted_beat: Option<(Timestamp, Reported)>,
}

/// The status the hub wants on one CatalogEntry, starting from what it observed (so transition
/// times survive and fields the hub does not own are kept).
pub fn desired_status(
    name: &str,
    observed: Option<&CatalogEntryStatus>,
    generation: Option<i64>,
    standing: Result<&Winner<'_>, &Rejection>,
    now: Timestamp,
) -> CatalogEntryStatus {
    let mut status = observed.cloned().unwrap_or_default();
    status.observed_generation = generation;
    let ready = match standing {
        Ok(w) => {
            status.workspace = Some(w.workspace.clone());
            status.endpoints = if w.endpoints.verdict().is_ok() {
                Some(Endpoints {
                    ui: w.endpoints.ui.as_ref().map(ToString::to_string),
                    backend: w.endpoints.backend.as_ref().map(ToString::to_string),
                })
            } else {
                None
            };
            if let Some((beat, reported)) = &w.persisted_beat {
                let observed_beat = status.last_heartbeat.as_ref().map(|t| t.0);
                // Liveness is monotone: never move an observed (newer) beat backwards. A beat at
                // the observed second may still report a new revision.
                if observed_beat.is_none_or(|o| o <= *beat) {
                    status.last_heartbeat = Some(Time(*beat));
                    if reported.version.is_some() {
                        status.reported_version = reported.version.clone();
                    }
                    if reported.revision.is_some() {
                        status.reported_revision = reported.revision.clone();
                    }
                }
            }
            let health = match w.health {
                BackendHealth::NotDeclared => None,
                BackendHealth::Unknown => Some((
                    ConditionStatus::Unknown,
                    REASON_NOT_PROBED,
                    "Not probed yet.".to_string(),
                )),
                BackendHealth::Healthy => Some((
                    ConditionStatus::True,
                    REASON_HEALTHY,
                    "Health probe succeeded.".to_string(),
                )),
                BackendHealth::Unhealthy(why) => Some((ConditionStatus::False, REASON_UNHEALTHY, why.clone())),
            };
            match health {
                Some((s, reason, message)) => {
                    conditions::set(
                        &mut status.conditions,
                        conditions::new_condition(CONDITION_BACKEND_HEALTHY, s, reason, message, generation, now),
                    );
                }
                None => status.conditions.retain(|c| c.type_ != CONDITION_BACKEND_HEALTHY),
            }
            (
                ConditionStatus::from(w.readiness.ready),
                w.readiness.reason,
                w.readiness.message.to_string(),
            )
        }
        Err(rejection) => {
            // A losing entry routes nothing: it must not advertise endpoints.
            status.endpoints = None;
            status.conditions.retain(|c| c.type_ != CONDITION_BACKEND_HEALTHY);
            (ConditionStatus::False, rejection.reason(), rejection.message(name))
        }
    };
    conditions::set(
        &mut status.conditions,
        conditions::new_condition(names::CONDITION_READY, ready.0, ready.1, ready.2, generation, now),
    );
    status
}

/// Truncates to whole seconds (status timestamps are RFC 3339 with second precision, so anything
/// finer would make every comparison with the observed value differ).
pub fn to_seconds(t: Timestamp) -> Timestamp {
    Timestamp::from_second(t.as_second()).unwrap_or(t)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use faros_core::catalog::{ApiExportRef, BackendSpec, UiSpec};
    use pretty_assertions::assert_eq;

    fn spec(ui: Option<&str>, backend: Option<&str>, export: bool) -> CatalogEntrySpec {
        CatalogEntrySpec {
            display_name: "Q".into(),
            ui: ui.map(|u| UiSpec {
                url: Some(u.into()),
                ..Default::default()
            }),
            backend: backend.map(|b| BackendSpec {
                url: b.into(),
                health_path: None,
            }),
            api_export: export.then(|| ApiExportRef {
                name: "q.faros.sh".into(),
                permission_claims: None,
            }),
            ..Default::default()
        }
    }

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    #[test]
    fn endpoint_table() {
        for (what, s, want) in [
            (
                "ui and backend",
                spec(Some("http://q:8080/ui"), Some("https://q:8443"), false),
                Ok(()),
            ),
            ("export only", spec(None, None, true), Ok(())),
            ("nothing", spec(None, None, false), Err(names::REASON_NO_ENDPOINT)),
            (
                "relative",
                spec(Some("/ui"), None, false),
                Err(names::REASON_INVALID_ENDPOINT),
            ),
            (
                "ftp",
                spec(None, Some("ftp://q"), false),
                Err(names::REASON_INVALID_ENDPOINT),
            ),
            (
                "query",
                spec(None, Some("http://q/?a=b"), false),
                Err(names::REASON_INVALID_ENDPOINT),
            ),
            (
                "garbage",
                spec(Some("http://q w"), None, false),
                Err(names::REASON_INVALID_ENDPOINT),
            ),
        ] {
            let parsed = parse_endpoints(&s, &UpstreamPolicy::default());
            assert_eq!(parsed.verdict().map_err(|(r, _)| r), want, "{what}");
        }
        let bad = parse_endpoints(&spec(Some("/ui"), Some("ftp://q"), false), &UpstreamPolicy::default());
        assert_eq!(
            bad.verdict().unwrap_err().1,
            "Endpoint parse errors: [ui.url: \"/ui\" must be absolute (http:// or https://), \
             backend.url: \"ftp://q\": scheme \"ftp\" is not http or https]"
        );
        let ok = parse_endpoints(
            &spec(Some("http://q:8080/ui"), Some("https://q:8443"), false),
            &UpstreamPolicy::default(),
        );
        // The upstream policy: loopback and link-local hosts are not providers' places.
        let ssrf = parse_endpoints(
            &spec(Some("http://127.0.0.1:8080/ui"), Some("http://169.254.169.254"), false),
            &UpstreamPolicy::default(),
        );
        assert_eq!(ssrf.verdict().unwrap_err().0, names::REASON_INVALID_ENDPOINT);
        assert_eq!(ssrf.errors.len(), 2, "{:?}", ssrf.errors);
        assert!(
            ssrf.errors[1].contains("169.254.169.254 is a link-local (cloud metadata) address"),
            "{:?}",
            ssrf.errors
        );
        assert_eq!(ok.health_path, "/healthz");
        assert_eq!(ok.backend.unwrap().to_string(), "https://q:8443/");
    }

    #[test]
    fn readiness_table() {
        let now = ts("2026-01-01T00:10:00Z");
        let ttl = Duration::from_secs(90);
        let good = parse_endpoints(
            &spec(Some("http://q/ui"), Some("http://q"), false),
            &UpstreamPolicy::default(),
        );
        let none = parse_endpoints(&spec(None, None, false), &UpstreamPolicy::default());
        let fresh = Some(ts("2026-01-01T00:08:30Z")); // exactly 90 s: still fresh
        let stale = Some(ts("2026-01-01T00:08:29Z"));
        let down = BackendHealth::Unhealthy("connection refused".into());
        for (what, eps, beat, health, want_ready, want_reason) in [
            (
                "never beaten, healthy",
                &good,
                None,
                BackendHealth::Healthy,
                true,
                "EndpointsResolved",
            ),
            (
                "no backend declared",
                &good,
                None,
                BackendHealth::NotDeclared,
                true,
                "EndpointsResolved",
            ),
            (
                "fresh beat",
                &good,
                fresh,
                BackendHealth::Healthy,
                true,
                "EndpointsResolved",
            ),
            (
                "stale beat",
                &good,
                stale,
                BackendHealth::Healthy,
                false,
                "HeartbeatStale",
            ),
            ("backend down", &good, fresh, down.clone(), false, "BackendUnhealthy"),
            (
                "not probed",
                &good,
                None,
                BackendHealth::Unknown,
                false,
                "BackendUnhealthy",
            ),
            ("endpoints first", &none, stale, down, false, "NoEndpoint"),
        ] {
            let r = readiness(eps, beat, &health, now, ttl);
            assert_eq!((r.ready, r.reason), (want_ready, want_reason), "{what}: {}", r.message);
        }
    }

    #[test]
    fn desired_status_for_winner_and_loser() {
        let now = ts("2026-01-01T00:00:10Z");
        let eps = parse_endpoints(
            &spec(Some("http://q/ui"), Some("http://q"), false),
            &UpstreamPolicy::default(),
        );
        let health = BackendHealth::Healthy;
        let ready = readiness(&eps, None, &health, now, Duration::from_secs(90));
        let winner = Winner {
            endpoints: &eps,
            readiness: &ready,
            health: &health,
            workspace: "root:faros:providers:q".into(),
            persisted_beat: Some((
                ts("2026-01-01T00:00:05Z"),
                Reported {
                    version: Some("1.2.3".into()),
                    revision: Some("q-0123456789".into()),
                },
            )),
        };
        let s = desired_status("q", None, Some(3), Ok(&winner), now);
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(
            v,
            serde_json::json!({
                "workspace": "root:faros:providers:q",
                "endpoints": {"ui": "http://q/ui", "backend": "http://q/"},
                "lastHeartbeat": "2026-01-01T00:00:05Z",
                "reportedVersion": "1.2.3",
                "reportedRevision": "q-0123456789",
                "observedGeneration": 3,
                "conditions": [
                    {"type": "BackendHealthy", "status": "True", "reason": "Healthy", "message": "Health probe succeeded.",
                     "observedGeneration": 3, "lastTransitionTime": "2026-01-01T00:00:10Z"},
                    {"type": "Ready", "status": "True", "reason": "EndpointsResolved", "message": MESSAGE_READY,
                     "observedGeneration": 3, "lastTransitionTime": "2026-01-01T00:00:10Z"}
                ]
            })
        );
        // Recomputing later from what was written changes nothing (no write storm).
        let again = desired_status("q", Some(&s), Some(3), Ok(&winner), ts("2026-01-01T00:05:00Z"));
        assert_eq!(again, s);
        // An observed newer beat (another replica) is never moved backwards.
        let mut newer = s.clone();
        newer.last_heartbeat = Some(Time(ts("2026-01-01T00:00:07Z")));
        assert_eq!(desired_status("q", Some(&newer), Some(3), Ok(&winner), now), newer);

        // The loser loses its endpoints and health condition, keeps its Ready transition history.
        let lost = desired_status(
            "q",
            Some(&s),
            Some(3),
            Err(&Rejection::Conflict {
                winner_path: "root:faros:providers:q".into(),
            }),
            ts("2026-01-01T00:01:00Z"),
        );
        assert_eq!(lost.endpoints, None);
        assert_eq!(lost.conditions.len(), 1);
        let c = &lost.conditions[0];
        assert_eq!(
            (c.type_.as_str(), c.status.as_str(), c.reason.as_str()),
            ("Ready", "False", "Conflict")
        );
        assert_eq!(c.last_transition_time.0, ts("2026-01-01T00:01:00Z"));
    }
}
