//! `GET /api/orgs/{org}/workspaces/{ws}/kubeconfig`: a kubeconfig that reaches the workspace
//! through the hub's kcp pass-through, so `kubectl get <provider resources>` works for tenants.
//!
//! No credential is included unless the caller asks (`?includeToken=true`) and authenticated with
//! a static token in the request itself, which the hub then echoes back to its own owner. Never to
//! a browser session: a cookie-authenticated request gets no credential back, whatever script made
//! it. OIDC users and portal users plug in their own token (kcp must trust the same issuer).

use axum::Extension;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, Uri, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use faros_core::status::Status;

use super::access::Role;
use crate::auth::{Caller, CredentialSource, bearer_token};
use crate::portal::session::SessionAuth;
use crate::state::AppState;

#[derive(Debug, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Params {
    #[serde(default)]
    pub include_token: bool,
}

/// The kubeconfig document (IO-free; `token` only when it may be shared).
pub fn document(
    server: &str,
    ca_pem: Option<&str>,
    context: &str,
    user: &str,
    token: Option<&str>,
) -> serde_json::Value {
    let mut cluster = serde_json::json!({ "server": server });
    if let Some(ca) = ca_pem {
        cluster["certificate-authority-data"] = base64::engine::general_purpose::STANDARD.encode(ca).into();
    }
    let mut user_entry = serde_json::json!({});
    if let Some(t) = token {
        user_entry["token"] = t.into();
    }
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": context, "cluster": cluster}],
        "users": [{"name": user, "user": user_entry}],
        "contexts": [{"name": context, "context": {"cluster": context, "user": user}}],
        "current-context": context,
    })
}

/// The hub's public base URL: configured, or as this request reached it. HTTP/1.1 names the host
/// in `Host`; HTTP/2 in the `:authority` pseudo-header, which arrives as the URI's authority and
/// usually without any `Host` (curl over TLS, every browser). RFC 9113 §8.3.1 lets a client send
/// both; they must then agree, so `Host` is read first and the authority is the fallback.
pub fn public_url(configured: Option<&str>, headers: &HeaderMap, uri: &Uri, proto: &str) -> Result<String, Status> {
    if let Some(u) = configured {
        return Ok(u.trim_end_matches('/').to_string());
    }
    let valid = |h: &str| !h.is_empty() && h.chars().all(|c| c.is_ascii_alphanumeric() || "-.:[]".contains(c));
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .or_else(|| uri.authority().map(|a| a.as_str()))
        .filter(|h| valid(h))
        .ok_or_else(|| {
            Status::bad_request(
                "cannot tell the hub's address: the request has no valid Host header or :authority; \
                 set the hub's --public-url",
            )
        })?;
    Ok(format!("{proto}://{host}"))
}

pub async fn kubeconfig(
    State(st): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path((org, ws)): Path<(String, String)>,
    Query(params): Query<Params>,
    session: Option<Extension<SessionAuth>>,
    uri: Uri,
    headers: HeaderMap,
) -> Result<Response, Status> {
    let (target, _) = st
        .tenancy
        .access
        .require(&caller, &org, Some(&ws), Role::Member)
        .await?;
    let token = if params.include_token {
        if session.is_some() {
            return Err(Status::bad_request(
                "includeToken=true is refused for portal sessions: a credential is never sent back to a \
                 cookie-authenticated request; download without it and add your token with \
                 `kubectl config set-credentials`",
            ));
        }
        if caller.source != CredentialSource::StaticToken {
            return Err(Status::bad_request(
                "includeToken=true works only for static-token users; use your own token with this kubeconfig",
            ));
        }
        bearer_token(&headers)
    } else {
        None
    };
    let base = public_url(
        st.tenancy.settings.public_url.as_deref(),
        &headers,
        &uri,
        st.settings.public_proto,
    )?;
    let server = format!("{base}/clusters/{}", target.cluster);
    let context = format!("{org}-{ws}");
    let doc = document(
        &server,
        st.tenancy.settings.ca_pem.as_deref(),
        &context,
        &caller.user,
        token,
    );
    let yaml = serde_saphyr::to_string(&doc).map_err(|e| Status::internal(format!("rendering the kubeconfig: {e}")))?;
    let mut resp = yaml.into_response();
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/yaml"));
    // It may carry a credential.
    resp.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(resp)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn documents() {
        let d = document("https://hub:8443/clusters/abc", Some("PEM"), "acme-dev", "alice", None);
        assert_eq!(d["clusters"][0]["cluster"]["server"], "https://hub:8443/clusters/abc");
        assert_eq!(d["clusters"][0]["cluster"]["certificate-authority-data"], "UEVN");
        assert_eq!(d["users"][0]["user"], serde_json::json!({}));
        assert_eq!(d["current-context"], "acme-dev");
        let with = document("s", None, "c", "alice", Some("tok"));
        assert_eq!(with["users"][0]["user"]["token"], "tok");
        assert!(
            with["clusters"][0]["cluster"]
                .get("certificate-authority-data")
                .is_none()
        );
    }

    #[test]
    fn public_urls() {
        let path: Uri = "/api/orgs/a/workspaces/b/kubeconfig".parse().unwrap();
        // What hyper makes of an HTTP/2 request: the :authority in the URI, no Host header.
        let h2: Uri = "https://hub.example.com:8443/api/orgs/a/workspaces/b/kubeconfig"
            .parse()
            .unwrap();
        let host = |v: &'static str| {
            let mut h = HeaderMap::new();
            h.insert(header::HOST, HeaderValue::from_static(v));
            h
        };
        let none = HeaderMap::new();
        for (configured, headers, uri, want) in [
            (
                Some("https://hub.example.com/"),
                &none,
                &path,
                Ok("https://hub.example.com"),
            ),
            (None, &none, &path, Err(400)),
            (None, &host("127.0.0.1:8443"), &path, Ok("https://127.0.0.1:8443")),
            (None, &host("evil/path"), &path, Err(400)),
            (None, &none, &h2, Ok("https://hub.example.com:8443")),
            // HTTP/2 with both: they agree by protocol rule; Host is read first.
            (
                None,
                &host("hub.example.com:8443"),
                &h2,
                Ok("https://hub.example.com:8443"),
            ),
        ] {
            let got = public_url(configured, headers, uri, "https").map_err(|s| s.code);
            assert_eq!(got, want.map(str::to_string), "{configured:?} {headers:?} {uri}");
        }
    }
}
