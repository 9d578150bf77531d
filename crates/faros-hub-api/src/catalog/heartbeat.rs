//! `POST /api/providers/{name}/heartbeat`.
//!
//! Only the provider's own ServiceAccount (`system:serviceaccount:default:provider` of the logical
//! cluster of `root:faros:providers:<name>`) may beat for it; kcp vouches for the token through a
//! TokenReview in that workspace. Without this anyone reaching the hub could keep a dead provider
//! Ready (the original's hole).

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use faros_core::names;
use faros_core::revision::SHORT_DIGEST_LEN;
use faros_core::status::Status;
use http::HeaderMap;
use serde::Deserialize;

use crate::auth::tokenreview::ReviewedUser;
use crate::auth::tokenreview::TokenReviewer;
use crate::auth::{bearer_token, missing_credentials};
use crate::catalog::registry::{Registry, RegistryError, Reported};
use crate::metrics::Metrics;

/// The heartbeat body; every field optional.
#[derive(Debug, Default, Deserialize, PartialEq, Eq)]
pub struct Beat {
    #[serde(default)]
    pub version: Option<String>,
    #[serde(default)]
    pub status: Option<String>,
    /// The ProviderRevision the provider serves (`<name>-<short digest>`), checked by
    /// [`check_revision`].
    #[serde(default)]
    pub revision: Option<String>,
}

/// A reported revision names one of provider `name`'s revisions: `<name>-` and
/// [`SHORT_DIGEST_LEN`] lowercase hex digits, as [`faros_core::revision::revision_name`] makes it.
/// Anything else would end up in the CatalogEntry's status and in assertions the hub signs.
pub fn check_revision(name: &str, revision: &str) -> Result<(), Status> {
    let digest = revision.strip_prefix(name).and_then(|rest| rest.strip_prefix('-'));
    let valid = digest.is_some_and(|d| {
        d.len() == SHORT_DIGEST_LEN && d.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    });
    if valid {
        return Ok(());
    }
    let shown: String = revision.chars().take(80).collect();
    Err(Status::bad_request(format!(
        "invalid body: revision {shown:?} is not {name}-<{SHORT_DIGEST_LEN} lowercase hex digits>, the ProviderRevision the provider serves"
    )))
}

/// Whether `user` may heartbeat for the provider whose workspace is logical cluster `cluster`.
pub fn may_heartbeat(user: &ReviewedUser, cluster: &str) -> bool {
    user.username == names::PROVIDER_SERVICE_ACCOUNT_USER && user.cluster_name() == Some(cluster)
}

/// Parses a heartbeat body (empty = no fields).
pub fn parse_beat(body: &[u8]) -> Result<Beat, Status> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Beat::default());
    }
    serde_json::from_slice(body).map_err(|e| Status::bad_request(format!("invalid body: {e}")))
}

pub async fn heartbeat(
    State(registry): State<Arc<Registry>>,
    State(reviewer): State<Arc<dyn TokenReviewer>>,
    State(metrics): State<Arc<Metrics>>,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let result = beat(&registry, reviewer.as_ref(), &name, &headers, body).await;
    metrics.heartbeat(match &result {
        Ok(_) => "ok",
        Err(s) if s.code == 401 || s.code == 403 => "denied",
        Err(_) => "error",
    });
    match result {
        Ok(()) => ([(http::header::CONTENT_TYPE, "application/json")], r#"{"status":"ok"}"#).into_response(),
        Err(s) => s.into_response(),
    }
}

async fn beat(
    registry: &Registry,
    reviewer: &dyn TokenReviewer,
    name: &str,
    headers: &HeaderMap,
    body: Body,
) -> Result<(), Status> {
    let token = bearer_token(headers).ok_or_else(missing_credentials)?;
    let provider = registry
        .get(name)
        .ok_or_else(|| Status::not_found(names::PROVIDERS_GROUP, names::CATALOG_ENTRIES_RESOURCE, name))?;
    let cluster = provider.provider_cluster.as_deref().ok_or_else(|| {
        Status::unavailable(format!(
            "the workspace {} of provider {name:?} is not known to the hub yet; retry",
            names::provider_workspace_path(name)
        ))
    })?;
    let user = match reviewer.review(cluster, token).await {
        Ok(Some(user)) => user,
        Ok(None) => return Err(Status::unauthorized("the bearer token is not valid")),
        Err(e) => {
            tracing::warn!(provider = name, error = %e, "heartbeat: TokenReview failed");
            return Err(Status::unavailable(
                "cannot verify the heartbeat token right now; retry",
            ));
        }
    };
    if !may_heartbeat(&user, cluster) {
        return Err(Status::forbidden(format!(
            "User {:?} cannot heartbeat for provider {name:?}: only {} of {} may",
            user.username,
            names::PROVIDER_SERVICE_ACCOUNT_USER,
            names::provider_workspace_path(name)
        )));
    }
    let bytes = axum::body::to_bytes(body, names::HEARTBEAT_BODY_LIMIT)
        .await
        .map_err(|_| Status::too_large(format!("heartbeat body exceeds {} bytes", names::HEARTBEAT_BODY_LIMIT)))?;
    let beat = parse_beat(&bytes)?;
    if let Some(revision) = &beat.revision {
        check_revision(name, revision)?;
    }
    let now = registry.clock().now();
    let reported = Reported {
        version: beat.version,
        revision: beat.revision,
    };
    match registry.heartbeat(name, reported, now) {
        Ok(_) => Ok(()),
        Err(RegistryError::UnknownProvider(_)) => Err(Status::not_found(
            names::PROVIDERS_GROUP,
            names::CATALOG_ENTRIES_RESOURCE,
            name,
        )),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn user(name: &str, cluster: Option<&str>) -> ReviewedUser {
        ReviewedUser {
            username: name.into(),
            extra: cluster
                .map(|c| {
                    BTreeMap::from([(
                        crate::auth::tokenreview::EXTRA_CLUSTER_NAME.to_string(),
                        vec![c.to_string()],
                    )])
                })
                .unwrap_or_default(),
            ..Default::default()
        }
    }

    #[test]
    fn revisions_are_checked() {
        for (revision, ok) in [
            ("q-0123456789", true),
            ("q-abcdef0123", true),
            ("q-ABCDEF0123", false),
            ("q-012345678", false),
            ("q-01234567890", false),
            ("qq-0123456789", false),
            ("r-0123456789", false),
            ("q0123456789", false),
            ("q-01234567g9", false),
            ("", false),
        ] {
            let got = check_revision("q", revision);
            assert_eq!(got.is_ok(), ok, "{revision:?}");
            if let Err(status) = got {
                assert_eq!(
                    (status.code, status.reason.as_str()),
                    (400, "BadRequest"),
                    "{revision:?}"
                );
            }
        }
        let long = format!("q-{}", "a".repeat(10_000));
        let status = check_revision("q", &long).unwrap_err();
        assert!(status.message.len() < 300, "a long value is not echoed whole");
    }

    #[test]
    fn who_may_heartbeat() {
        let sa = "system:serviceaccount:default:provider";
        for (u, want) in [
            (user(sa, Some("c1")), true),
            (user(sa, Some("c2")), false),
            (user(sa, None), false),
            (user("system:serviceaccount:default:other", Some("c1")), false),
            (user("system:serviceaccount:kube-system:provider", Some("c1")), false),
            (user("admin", None), false),
        ] {
            assert_eq!(may_heartbeat(&u, "c1"), want, "{u:?}");
        }
    }

    #[test]
    fn bodies() {
        assert_eq!(parse_beat(b"").unwrap(), Beat::default());
        assert_eq!(
            parse_beat(br#"{"version":"1.0","status":"healthy","revision":"q-0123456789","extra":1}"#).unwrap(),
            Beat {
                version: Some("1.0".into()),
                status: Some("healthy".into()),
                revision: Some("q-0123456789".into()),
            }
        );
        assert_eq!(parse_beat(b"{nope").unwrap_err().code, 400);
        assert_eq!(parse_beat(br#"{"version":1}"#).unwrap_err().code, 400);
    }
}
