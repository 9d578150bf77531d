//! `GET /api/orgs/{org}/workspaces/{ws}/kubeconfig`: a kubeconfig that reaches the workspace
//! through the hub's kcp pass-through, so `kubectl get <provider resources>` works for tenants.
//!
//! No credential is included unless the caller asks (`?includeToken=true`) and authenticated with
//! a static token in the request itself, which the hub then echoes back to its own owner. Never to
//! a browser session: a cookie-authenticated request gets no credential back, whatever script made
//! it.
//!
//! An OIDC user (a bearer ID token, or a portal session signed in with the hub's issuer) gets no
//! token either, but a user entry that fetches one: an `exec` stanza running `faros credential
//! oidc` with the hub's issuer, CLI client and issuer CA, which signs the user in with the device
//! flow and keeps the ID token fresh (kcp trusts the same issuer). Other users plug in their own
//! token.

use axum::Extension;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, Uri, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use faros_core::status::Status;

use super::scope::Scoped;
use crate::auth::{Caller, CredentialSource, bearer_token};
use crate::portal::session::SessionAuth;
use crate::state::AppState;

#[derive(Debug, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Params {
    #[serde(default)]
    pub include_token: bool,
}

/// What the kubeconfig's user entry carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Credential<'a> {
    /// Nothing: the user adds their own (`kubectl config set-credentials`).
    None,
    /// The caller's own static token, echoed back.
    Token(&'a str),
    /// `faros credential oidc` as an exec plugin.
    Oidc(OidcExec<'a>),
}

/// The hub's OIDC issuer as the CLI signs in to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OidcExec<'a> {
    pub issuer: &'a str,
    /// The CLI's public client ([`faros_core::oidc::OidcSettings::cli_client_id`]).
    pub client_id: &'a str,
    /// The issuer's CA as the hub trusts it (`--oidc-ca-file`), carried inline: the file's path is
    /// the hub's, not the user's.
    pub ca_pem: Option<&'a str>,
}

/// The program the exec stanza runs; kubectl looks it up on `PATH`.
pub const EXEC_COMMAND: &str = "faros";

/// The `user` entry of an exec credential plugin running `faros credential oidc` (IO-free).
pub fn exec_user(oidc: &OidcExec<'_>) -> serde_json::Value {
    let mut args = vec![
        "credential".to_string(),
        "oidc".to_string(),
        format!("--issuer={}", oidc.issuer),
        format!("--client-id={}", oidc.client_id),
    ];
    if let Some(ca) = oidc.ca_pem {
        args.push(format!(
            "--ca-data={}",
            base64::engine::general_purpose::STANDARD.encode(ca)
        ));
    }
    serde_json::json!({
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": EXEC_COMMAND,
            "args": args,
            // The plugin may sign the user in (the device flow prints its prompt on stderr);
            // without a terminal it still answers from its cache or a refresh.
            "interactiveMode": "IfAvailable",
            "provideClusterInfo": false,
            "installHint": format!(
                "This kubeconfig signs you in to {} with the faros CLI: put `faros` on your PATH \
                 (in a faros-rs checkout: `cargo install --locked --path crates/faros`). See docs/oidc.md.",
                oidc.issuer
            ),
        }
    })
}

/// The kubeconfig document (IO-free; a token only when it may be shared).
pub fn document(
    server: &str,
    ca_pem: Option<&str>,
    context: &str,
    user: &str,
    credential: Credential<'_>,
) -> serde_json::Value {
    let mut cluster = serde_json::json!({ "server": server });
    if let Some(ca) = ca_pem {
        cluster["certificate-authority-data"] = base64::engine::general_purpose::STANDARD.encode(ca).into();
    }
    let user_entry = match credential {
        Credential::None => serde_json::json!({}),
        Credential::Token(t) => serde_json::json!({ "token": t }),
        Credential::Oidc(oidc) => exec_user(&oidc),
    };
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
    Scoped { target, .. }: Scoped,
    Query(params): Query<Params>,
    session: Option<Extension<SessionAuth>>,
    uri: Uri,
    headers: HeaderMap,
) -> Result<Response, Status> {
    let oidc = st.oidc_login.as_ref().map(|l| &l.settings);
    let credential = if caller.source == CredentialSource::Oidc
        && let Some(settings) = oidc
    {
        // An OIDC user never gets a token back; the plugin gets them their own.
        Credential::Oidc(OidcExec {
            issuer: &settings.issuer_url,
            client_id: settings.cli_client_id(),
            ca_pem: settings.ca_pem.as_deref(),
        })
    } else if params.include_token {
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
        bearer_token(&headers).map_or(Credential::None, Credential::Token)
    } else {
        Credential::None
    };
    let base = public_url(
        st.tenancy.settings.public_url.as_deref(),
        &headers,
        &uri,
        st.settings.public_proto,
    )?;
    let server = format!("{base}/clusters/{}", target.cluster);
    let context = format!("{}-{}", target.org, target.workspace.as_deref().unwrap_or_default());
    let doc = document(
        &server,
        st.tenancy.settings.ca_pem.as_deref(),
        &context,
        &caller.user,
        credential,
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
        let d = document(
            "https://hub:8443/clusters/abc",
            Some("PEM"),
            "acme-dev",
            "alice",
            Credential::None,
        );
        assert_eq!(d["clusters"][0]["cluster"]["server"], "https://hub:8443/clusters/abc");
        assert_eq!(d["clusters"][0]["cluster"]["certificate-authority-data"], "UEVN");
        assert_eq!(d["users"][0]["user"], serde_json::json!({}));
        assert_eq!(d["current-context"], "acme-dev");
        let with = document("s", None, "c", "alice", Credential::Token("tok"));
        assert_eq!(with["users"][0]["user"]["token"], "tok");
        assert!(
            with["clusters"][0]["cluster"]
                .get("certificate-authority-data")
                .is_none()
        );
    }

    /// An OIDC user's entry runs the plugin with the hub's issuer, CLI client and issuer CA (inline,
    /// base64 of the PEM); without a CA, no `--ca-data`.
    #[test]
    fn oidc_users_get_an_exec_stanza() {
        for (ca, want_args) in [
            (
                Some("PEM"),
                vec![
                    "credential",
                    "oidc",
                    "--issuer=https://idp.example",
                    "--client-id=faros-cli",
                    "--ca-data=UEVN",
                ],
            ),
            (
                None,
                vec![
                    "credential",
                    "oidc",
                    "--issuer=https://idp.example",
                    "--client-id=faros-cli",
                ],
            ),
        ] {
            let oidc = OidcExec {
                issuer: "https://idp.example",
                client_id: "faros-cli",
                ca_pem: ca,
            };
            let d = document("s", None, "c", "oidc:alice", Credential::Oidc(oidc));
            let user = &d["users"][0]["user"];
            assert!(user.get("token").is_none(), "{user}");
            let exec = &user["exec"];
            assert_eq!(exec["apiVersion"], "client.authentication.k8s.io/v1");
            assert_eq!(exec["command"], "faros");
            assert_eq!(exec["interactiveMode"], "IfAvailable");
            assert_eq!(exec["args"], serde_json::json!(want_args), "{ca:?}");
            assert!(exec["installHint"].as_str().unwrap().contains("https://idp.example"));
        }
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
