//! The OAuth 2.0 exchanges with the issuer: discovery, the device authorization grant (RFC 8628)
//! and the refresh-token grant. What the issuer answered is judged IO-free ([`endpoints`],
//! [`device_authorization`], [`classify`]); [`Issuer`] does the HTTP. Tokens never reach an error
//! or a log; the issuer's own `error` and `error_description` do.

use std::time::Duration;

use serde_json::Value;

/// RFC 8628's grant type.
pub const DEVICE_GRANT: &str = "urn:ietf:params:oauth:grant-type:device_code";
/// Bound on each request to the issuer.
const TIMEOUT: Duration = Duration::from_secs(30);
/// RFC 8628 §3.2: the polling interval when the issuer names none, and what `slow_down` adds.
const DEFAULT_INTERVAL: u64 = 5;

#[derive(Debug, thiserror::Error)]
pub enum FlowError {
    #[error("--issuer {issuer}: discovery document: {reason}")]
    Discovery { issuer: String, reason: String },
    #[error(
        "--issuer {0}: the issuer offers no device authorization endpoint (RFC 8628), which \
         `faros credential oidc` signs in with; enable the device flow for this client at the issuer"
    )]
    NoDeviceFlow(String),
    #[error("--ca-file/--ca-data: {0}")]
    Ca(String),
    #[error("{url}: {reason}")]
    Http { url: String, reason: String },
    #[error("--issuer {issuer}: {what} refused (--client-id {client_id}): {error}{description}")]
    Refused {
        issuer: String,
        client_id: String,
        what: &'static str,
        error: String,
        description: String,
    },
    #[error("--issuer {0}: the sign-in code expired before it was approved; run the command again")]
    Expired(String),
    #[error("--issuer {0}: the token response has no id_token (is `openid` among --scopes?)")]
    NoIdToken(String),
}

/// Where the issuer takes requests (from its discovery document).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoints {
    pub token: String,
    pub device_authorization: Option<String>,
    /// `scopes_supported`, when listed.
    pub scopes_supported: Option<Vec<String>>,
}

/// Reads a discovery document: its `issuer` must be exactly `issuer` (OpenID Connect Discovery
/// §4.3, so a document cannot send the plugin's tokens elsewhere) and its endpoints https (or
/// loopback http, as `--oidc-issuer-url` allows).
pub fn endpoints(issuer: &str, doc: &Value) -> Result<Endpoints, String> {
    let named = doc.get("issuer").and_then(Value::as_str).unwrap_or_default();
    if named != issuer {
        return Err(format!("it names issuer {named:?}, not this one"));
    }
    let url = |key: &str| -> Result<Option<String>, String> {
        match doc.get(key).and_then(Value::as_str) {
            None => Ok(None),
            Some(u) => faros_core::oidc::allowed_url(u)
                .map(|_| Some(u.to_string()))
                .map_err(|e| format!("{key} {u:?}: {e}")),
        }
    };
    let token = url("token_endpoint")?.ok_or("it has no token_endpoint")?;
    Ok(Endpoints {
        token,
        device_authorization: url("device_authorization_endpoint")?,
        scopes_supported: doc
            .get("scopes_supported")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect()),
    })
}

/// The scopes to ask for: `wanted` less those the issuer says it does not support (when it lists
/// them), so a default such as `groups` does not fail sign-in at an issuer without it. `openid`
/// always stays: without it there is no ID token.
pub fn scopes(wanted: &[String], supported: Option<&[String]>) -> Vec<String> {
    wanted
        .iter()
        .filter(|s| *s == "openid" || supported.is_none_or(|sup| sup.iter().any(|x| x == *s)))
        .cloned()
        .collect()
}

/// The device authorization response (RFC 8628 §3.2).
#[derive(Clone, PartialEq, Eq)]
pub struct DeviceAuthorization {
    pub device_code: String,
    pub user_code: String,
    pub verification_uri: String,
    pub verification_uri_complete: Option<String>,
    pub expires_in: u64,
    pub interval: u64,
}

impl std::fmt::Debug for DeviceAuthorization {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The device code is a credential until it is exchanged; the user code is shown anyway.
        f.debug_struct("DeviceAuthorization")
            .field("user_code", &self.user_code)
            .field("verification_uri", &self.verification_uri)
            .field("expires_in", &self.expires_in)
            .field("interval", &self.interval)
            .finish()
    }
}

/// An OAuth error response's `error` and `error_description`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OauthError {
    pub error: String,
    pub description: String,
}

fn oauth_error(status: u16, body: &[u8]) -> OauthError {
    let doc: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let field = |k: &str| doc.get(k).and_then(Value::as_str).map(str::to_string);
    OauthError {
        error: field("error").unwrap_or_else(|| format!("HTTP {status}")),
        description: field("error_description").unwrap_or_default(),
    }
}

/// Judges the device authorization endpoint's answer.
pub fn device_authorization(status: u16, body: &[u8]) -> Result<DeviceAuthorization, OauthError> {
    if !(200..300).contains(&status) {
        return Err(oauth_error(status, body));
    }
    let bad = |what: &str| OauthError {
        error: "invalid_response".into(),
        description: what.into(),
    };
    let doc: Value = serde_json::from_slice(body).map_err(|_| bad("the response is not JSON"))?;
    let text = |k: &str| doc.get(k).and_then(Value::as_str).map(str::to_string);
    let verification_uri = text("verification_uri")
        .ok_or_else(|| bad("no verification_uri"))
        .and_then(|u| {
            faros_core::oidc::allowed_url(&u)
                .map(|_| u)
                .map_err(|e| bad(&format!("verification_uri: {e}")))
        })?;
    Ok(DeviceAuthorization {
        device_code: text("device_code").ok_or_else(|| bad("no device_code"))?,
        user_code: text("user_code").ok_or_else(|| bad("no user_code"))?,
        verification_uri,
        verification_uri_complete: text("verification_uri_complete")
            .filter(|u| faros_core::oidc::allowed_url(u).is_ok()),
        expires_in: doc.get("expires_in").and_then(Value::as_u64).unwrap_or(600),
        interval: doc
            .get("interval")
            .and_then(Value::as_u64)
            .unwrap_or(DEFAULT_INTERVAL)
            .max(1),
    })
}

/// A token response, as far as the plugin keeps it.
#[derive(Clone, PartialEq, Eq)]
pub struct Tokens {
    pub id_token: Option<String>,
    pub refresh_token: Option<String>,
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokens")
            .field("has_id_token", &self.id_token.is_some())
            .field("has_refresh_token", &self.refresh_token.is_some())
            .finish()
    }
}

/// What a token endpoint answer means for a poll (RFC 8628 §3.5) or a refresh.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Poll {
    Tokens(Tokens),
    /// Not approved yet: ask again after the interval.
    Pending,
    /// Ask less often: the interval grows by 5 s.
    SlowDown,
    Failed(OauthError),
}

pub fn classify(status: u16, body: &[u8]) -> Poll {
    if (200..300).contains(&status) {
        let Ok(doc) = serde_json::from_slice::<Value>(body) else {
            return Poll::Failed(OauthError {
                error: "invalid_response".into(),
                description: "the token response is not JSON".into(),
            });
        };
        let text = |k: &str| {
            doc.get(k)
                .and_then(Value::as_str)
                .filter(|t| !t.is_empty())
                .map(str::to_string)
        };
        return Poll::Tokens(Tokens {
            id_token: text("id_token"),
            refresh_token: text("refresh_token"),
        });
    }
    let e = oauth_error(status, body);
    match e.error.as_str() {
        "authorization_pending" => Poll::Pending,
        "slow_down" => Poll::SlowDown,
        _ => Poll::Failed(e),
    }
}

/// What the user is told (on stderr) to approve the sign-in.
pub fn prompt(issuer: &str, auth: &DeviceAuthorization, interactive: bool) -> String {
    let mut text = format!(
        "To sign in to {issuer}, open {} and enter the code {}\n",
        auth.verification_uri, auth.user_code
    );
    if let Some(complete) = &auth.verification_uri_complete {
        text.push_str(&format!("  (or open {complete})\n"));
    }
    if !interactive {
        text.push_str("  kubectl runs this without a terminal: approve from any browser.\n");
    }
    text.push_str(&format!(
        "Waiting for the approval (the code expires in {} s)…",
        auth.expires_in
    ));
    text
}

fn form(pairs: &[(&str, &str)]) -> String {
    url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish()
}

/// One issuer and client, over HTTPS.
pub struct Issuer {
    pub url: String,
    pub client_id: String,
    http: reqwest::Client,
}

impl Issuer {
    /// `ca_pem`: the issuer's CA bundle, trusted besides the platform roots.
    pub fn new(url: &str, client_id: &str, ca_pem: Option<&[u8]>) -> Result<Self, FlowError> {
        faros_core::oidc::allowed_url(url).map_err(|reason| FlowError::Discovery {
            issuer: url.to_string(),
            reason,
        })?;
        let mut builder = reqwest::Client::builder().timeout(TIMEOUT);
        if let Some(pem) = ca_pem {
            let certs = reqwest::Certificate::from_pem_bundle(pem).map_err(|e| FlowError::Ca(e.to_string()))?;
            if certs.is_empty() {
                return Err(FlowError::Ca("no PEM certificate in it".into()));
            }
            for cert in certs {
                builder = builder.add_root_certificate(cert);
            }
        }
        let http = builder.build().map_err(|e| FlowError::Http {
            url: url.to_string(),
            reason: e.to_string(),
        })?;
        Ok(Self {
            url: url.to_string(),
            client_id: client_id.to_string(),
            http,
        })
    }

    fn http_error(url: &str) -> impl FnOnce(reqwest::Error) -> FlowError + '_ {
        move |e| FlowError::Http {
            url: url.to_string(),
            reason: e.to_string(),
        }
    }

    pub async fn discover(&self) -> Result<Endpoints, FlowError> {
        let url = format!("{}/.well-known/openid-configuration", self.url.trim_end_matches('/'));
        let resp = self.http.get(&url).send().await.map_err(Self::http_error(&url))?;
        let status = resp.status();
        let body = resp.bytes().await.map_err(Self::http_error(&url))?;
        let fail = |reason: String| FlowError::Discovery {
            issuer: self.url.clone(),
            reason,
        };
        if !status.is_success() {
            return Err(fail(format!("{url} answered {status}")));
        }
        let doc: Value = serde_json::from_slice(&body).map_err(|e| fail(format!("not JSON: {e}")))?;
        endpoints(&self.url, &doc).map_err(fail)
    }

    async fn post(&self, url: &str, pairs: &[(&str, &str)]) -> Result<(u16, Vec<u8>), FlowError> {
        let resp = self
            .http
            .post(url)
            .header(http::header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header(http::header::ACCEPT, "application/json")
            .body(form(pairs))
            .send()
            .await
            .map_err(Self::http_error(url))?;
        let status = resp.status().as_u16();
        let body = resp.bytes().await.map_err(Self::http_error(url))?;
        Ok((status, body.to_vec()))
    }

    fn refused(&self, what: &'static str, e: OauthError) -> FlowError {
        FlowError::Refused {
            issuer: self.url.clone(),
            client_id: self.client_id.clone(),
            what,
            error: e.error,
            description: if e.description.is_empty() {
                String::new()
            } else {
                format!(": {}", e.description)
            },
        }
    }

    fn with_id_token(&self, tokens: Tokens) -> Result<Tokens, FlowError> {
        if tokens.id_token.is_none() {
            return Err(FlowError::NoIdToken(self.url.clone()));
        }
        Ok(tokens)
    }

    /// The refresh-token grant.
    pub async fn refresh(&self, ep: &Endpoints, refresh_token: &str) -> Result<Tokens, FlowError> {
        let (status, body) = self
            .post(
                &ep.token,
                &[
                    ("grant_type", "refresh_token"),
                    ("refresh_token", refresh_token),
                    ("client_id", &self.client_id),
                ],
            )
            .await?;
        match classify(status, &body) {
            Poll::Tokens(t) => self.with_id_token(t),
            Poll::Failed(e) => Err(self.refused("the refresh", e)),
            Poll::Pending | Poll::SlowDown => Err(self.refused(
                "the refresh",
                OauthError {
                    error: "invalid_response".into(),
                    description: "a device-flow answer to a refresh".into(),
                },
            )),
        }
    }

    /// The device authorization grant: asks for a code, hands it to `show` for the user, then
    /// polls the token endpoint until the user approved, refused, or the code expired.
    pub async fn device_sign_in(
        &self,
        ep: &Endpoints,
        scopes: &[String],
        show: impl FnOnce(&DeviceAuthorization),
    ) -> Result<Tokens, FlowError> {
        let device_url = ep
            .device_authorization
            .as_deref()
            .ok_or_else(|| FlowError::NoDeviceFlow(self.url.clone()))?;
        let scope = scopes.join(" ");
        let mut pairs = vec![("client_id", self.client_id.as_str()), ("scope", scope.as_str())];
        // OpenID Connect Core §11: a refresh token (`offline_access`) is granted only with
        // `prompt=consent`; issuers that apply this to the device flow too drop the scope without it.
        if scopes.iter().any(|s| s == "offline_access") {
            pairs.push(("prompt", "consent"));
        }
        let (status, body) = self.post(device_url, &pairs).await?;
        let auth = device_authorization(status, &body).map_err(|e| self.refused("the device authorization", e))?;
        show(&auth);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(auth.expires_in);
        let mut interval = auth.interval;
        loop {
            // RFC 8628 §3.5: wait the interval before every poll, the first too.
            tokio::time::sleep(Duration::from_secs(interval)).await;
            if tokio::time::Instant::now() >= deadline {
                return Err(FlowError::Expired(self.url.clone()));
            }
            let (status, body) = self
                .post(
                    &ep.token,
                    &[
                        ("grant_type", DEVICE_GRANT),
                        ("device_code", &auth.device_code),
                        ("client_id", &self.client_id),
                    ],
                )
                .await?;
            match classify(status, &body) {
                Poll::Tokens(t) => return self.with_id_token(t),
                Poll::Pending => {}
                Poll::SlowDown => interval += DEFAULT_INTERVAL,
                Poll::Failed(e) if e.error == "expired_token" => return Err(FlowError::Expired(self.url.clone())),
                Poll::Failed(e) => return Err(self.refused("the sign-in", e)),
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn discovery_documents() {
        let issuer = "https://idp.example";
        let ok = json!({"issuer": issuer, "token_endpoint": "https://idp.example/token",
                        "device_authorization_endpoint": "https://idp.example/device/auth",
                        "scopes_supported": ["openid", "email"]});
        assert_eq!(
            endpoints(issuer, &ok),
            Ok(Endpoints {
                token: "https://idp.example/token".into(),
                device_authorization: Some("https://idp.example/device/auth".into()),
                scopes_supported: Some(vec!["openid".into(), "email".into()]),
            })
        );
        let without = json!({"issuer": issuer, "token_endpoint": "https://idp.example/token"});
        assert_eq!(endpoints(issuer, &without).unwrap().device_authorization, None);
        for (doc, reason) in [
            (
                json!({"issuer": "https://evil.example", "token_endpoint": "https://idp.example/token"}),
                "names issuer",
            ),
            (json!({"issuer": issuer}), "no token_endpoint"),
            (
                json!({"issuer": issuer, "token_endpoint": "http://idp.example/token"}),
                "token_endpoint",
            ),
            (
                json!({"issuer": issuer, "token_endpoint": "https://idp.example/t",
                       "device_authorization_endpoint": "http://evil.example/d"}),
                "device_authorization_endpoint",
            ),
        ] {
            let err = endpoints(issuer, &doc).unwrap_err();
            assert!(err.contains(reason), "{doc}: {err}");
        }
    }

    #[test]
    fn requested_scopes() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let wanted = s(&["openid", "offline_access", "email", "groups"]);
        for (supported, want) in [
            (None, s(&["openid", "offline_access", "email", "groups"])),
            (
                Some(s(&["openid", "offline_access", "email"])),
                s(&["openid", "offline_access", "email"]),
            ),
            (Some(s(&["email"])), s(&["openid", "email"])),
        ] {
            assert_eq!(scopes(&wanted, supported.as_deref()), want, "{supported:?}");
        }
    }

    #[test]
    fn device_authorizations() {
        let body = |v: Value| v.to_string().into_bytes();
        let full = json!({"device_code": "dc", "user_code": "ABCD-EFGH",
                          "verification_uri": "https://idp/device", "verification_uri_complete": "https://idp/device?user_code=ABCD-EFGH",
                          "expires_in": 300, "interval": 2});
        let got = device_authorization(200, &body(full)).unwrap();
        assert_eq!(
            (
                got.user_code.as_str(),
                got.expires_in,
                got.interval,
                got.verification_uri_complete.is_some()
            ),
            ("ABCD-EFGH", 300, 2, true)
        );
        let minimal = json!({"device_code": "dc", "user_code": "X", "verification_uri": "https://idp/device"});
        let got = device_authorization(200, &body(minimal)).unwrap();
        assert_eq!((got.expires_in, got.interval), (600, DEFAULT_INTERVAL));
        assert!(!format!("{got:?}").contains("dc"), "Debug hides the device code");
        for (status, b, want) in [
            (
                400,
                body(json!({"error": "invalid_client", "error_description": "no such client"})),
                "invalid_client",
            ),
            (500, b"oops".to_vec(), "HTTP 500"),
            (
                200,
                body(json!({"user_code": "X", "verification_uri": "https://idp/d"})),
                "invalid_response",
            ),
            (
                200,
                body(json!({"device_code": "d", "user_code": "X", "verification_uri": "http://evil/d"})),
                "invalid_response",
            ),
        ] {
            assert_eq!(device_authorization(status, &b).unwrap_err().error, want, "{status}");
        }
    }

    #[test]
    fn token_answers() {
        let body = |v: Value| v.to_string().into_bytes();
        let tokens = |id: Option<&str>, rt: Option<&str>| {
            Poll::Tokens(Tokens {
                id_token: id.map(String::from),
                refresh_token: rt.map(String::from),
            })
        };
        let failed = |e: &str, d: &str| {
            Poll::Failed(OauthError {
                error: e.into(),
                description: d.into(),
            })
        };
        for (status, b, want) in [
            (
                200,
                body(json!({"id_token": "i", "refresh_token": "r", "access_token": "a"})),
                tokens(Some("i"), Some("r")),
            ),
            (200, body(json!({"id_token": "i"})), tokens(Some("i"), None)),
            (
                200,
                body(json!({"access_token": "a", "id_token": ""})),
                tokens(None, None),
            ),
            (400, body(json!({"error": "authorization_pending"})), Poll::Pending),
            (400, body(json!({"error": "slow_down"})), Poll::SlowDown),
            (
                400,
                body(json!({"error": "access_denied", "error_description": "no"})),
                failed("access_denied", "no"),
            ),
            (
                400,
                body(json!({"error": "invalid_grant"})),
                failed("invalid_grant", ""),
            ),
            (502, b"<html>".to_vec(), failed("HTTP 502", "")),
            (
                200,
                b"<html>".to_vec(),
                failed("invalid_response", "the token response is not JSON"),
            ),
        ] {
            assert_eq!(classify(status, &b), want, "{status} {}", String::from_utf8_lossy(&b));
        }
        assert!(!format!("{:?}", tokens(Some("secret"), Some("secret"))).contains("secret"));
    }

    #[test]
    fn prompts() {
        let auth = DeviceAuthorization {
            device_code: "dc".into(),
            user_code: "ABCD-EFGH".into(),
            verification_uri: "https://idp/device".into(),
            verification_uri_complete: Some("https://idp/device?user_code=ABCD-EFGH".into()),
            expires_in: 600,
            interval: 5,
        };
        let p = prompt("https://idp", &auth, true);
        assert!(
            p.contains("open https://idp/device and enter the code ABCD-EFGH"),
            "{p}"
        );
        assert!(p.contains("(or open https://idp/device?user_code=ABCD-EFGH)"), "{p}");
        assert!(!p.contains("dc") && !p.contains("without a terminal"), "{p}");
        assert!(prompt("https://idp", &auth, false).contains("without a terminal"));
    }
}
