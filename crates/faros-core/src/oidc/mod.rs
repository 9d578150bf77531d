//! OpenID Connect ID tokens as kube-apiserver's `--oidc-*` flags accept them, for every faros server
//! that takes them (the hub, the embedded kcp): one parser, one signature check, one mapping of
//! claims to a user, one key cache.
//!
//! - [`jwt`]: compact JWS parsing and JWK sets (RS256 and ES256 only, `none` never).
//! - [`claims`]: issuer, audience, `exp`/`nbf`, and the username/groups claims with kube's prefixes.
//! - [`args`]: the `--oidc-*` flags every faros binary takes.
//! - [`verifier`]: discovery (`<issuer>/.well-known/openid-configuration`) and the key set, cached,
//!   refetched on an unknown key ID (rotation) or when stale, rate-limited. It performs no IO
//!   itself: each server hands it a [`verifier::FetchJson`] (its own HTTPS client and CA).
//!
//! Neither tokens nor claim values are ever put in errors or logs; reasons name claims only.

pub mod args;
pub mod claims;
pub mod jwt;
pub mod verifier;

use std::time::Duration;

pub use args::OidcArgs;
pub use claims::{LEEWAY_SECONDS, user_from_claims};
pub use verifier::{FetchJson, Outcome, Verifier};

/// The claim naming the user unless configured otherwise (kube's default).
pub const DEFAULT_USERNAME_CLAIM: &str = "sub";

/// Why settings are unusable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("OIDC issuer {issuer:?}: {reason}")]
pub struct SettingsError {
    pub issuer: String,
    pub reason: String,
}

/// One issuer and how its claims become a user (kube-apiserver's `--oidc-*` flags).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OidcSettings {
    /// Exactly as tokens carry it in `iss` (`--oidc-issuer-url`). `https://`, or `http://` on
    /// loopback only (tests).
    pub issuer_url: String,
    /// The audience tokens must carry in `aud` (`--oidc-client-id`).
    pub client_id: String,
    /// Default `sub`. With `email`, a present `email_verified` must be `true`.
    pub username_claim: String,
    /// kube semantics: `None` means `<issuer>#` unless the claim is `email`; `-` means no prefix.
    pub username_prefix: Option<String>,
    /// A string or array-of-strings claim; `None`: no groups from the token.
    pub groups_claim: Option<String>,
    pub groups_prefix: Option<String>,
    /// PEM CA bundle trusted for the issuer's TLS instead of the platform roots (`--oidc-ca-file`).
    pub ca_pem: Option<String>,
    /// Longest a fetched key set is used before it is refetched.
    pub jwks_refresh: Duration,
    /// Shortest interval between two fetches of the issuer's documents.
    pub jwks_min_interval: Duration,
    /// Bound on each fetch (connect, response and body).
    pub fetch_timeout: Duration,
    /// The public client the `faros` CLI signs in as (`--oidc-cli-client-id`); `None`: the
    /// [`Self::client_id`]. See [`Self::cli_client_id`].
    pub cli_client_id: Option<String>,
}

impl OidcSettings {
    pub fn new(issuer_url: impl Into<String>, client_id: impl Into<String>) -> Self {
        Self {
            issuer_url: issuer_url.into(),
            client_id: client_id.into(),
            username_claim: DEFAULT_USERNAME_CLAIM.to_string(),
            username_prefix: None,
            groups_claim: None,
            groups_prefix: None,
            ca_pem: None,
            jwks_refresh: Duration::from_secs(300),
            jwks_min_interval: Duration::from_secs(10),
            fetch_timeout: Duration::from_secs(10),
            cli_client_id: None,
        }
    }

    /// The client the `faros` CLI (`faros credential oidc`) signs in as. The ID tokens it gets
    /// must carry [`Self::client_id`] in `aud` to be accepted, so a separate CLI client only works
    /// with an IdP that issues that audience to it (Dex's trusted peers, a Keycloak audience
    /// mapper); by default the CLI uses the audience client itself.
    pub fn cli_client_id(&self) -> &str {
        self.cli_client_id.as_deref().unwrap_or(&self.client_id)
    }

    /// The prefix put before every user name (kube-apiserver's `--oidc-username-prefix`).
    pub fn effective_username_prefix(&self) -> String {
        match self.username_prefix.as_deref() {
            Some("-") => String::new(),
            Some(prefix) => prefix.to_string(),
            None if self.username_claim == "email" => String::new(),
            None => format!("{}#", self.issuer_url),
        }
    }

    pub fn validate(&self) -> Result<(), SettingsError> {
        let fail = |reason: String| {
            Err(SettingsError {
                issuer: self.issuer_url.clone(),
                reason,
            })
        };
        if let Err(reason) = allowed_url(&self.issuer_url) {
            return fail(reason);
        }
        if self.client_id.is_empty() {
            return fail("the client ID (audience) is empty".into());
        }
        if self.username_claim.is_empty() {
            return fail("the username claim is empty".into());
        }
        if self.cli_client_id.as_deref() == Some("") {
            return fail("the CLI client ID (--oidc-cli-client-id) is empty".into());
        }
        Ok(())
    }
}

/// An issuer or key-set URL a server may fetch: HTTPS, or plain HTTP to a loopback host.
pub fn allowed_url(url: &str) -> Result<http::Uri, String> {
    let uri: http::Uri = url.parse().map_err(|e| format!("not a URL: {e}"))?;
    let host = uri.host().unwrap_or_default();
    match uri.scheme_str() {
        Some("https") if !host.is_empty() => Ok(uri),
        Some("http") if matches!(host, "127.0.0.1" | "localhost" | "[::1]") => Ok(uri),
        Some("http") => Err("plain http is allowed only on 127.0.0.1 or localhost".into()),
        _ => Err("must be an https URL".into()),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn username_prefix_follows_kube() {
        let cases = [
            ("sub", None, "https://issuer.example#"),
            ("sub", Some("-"), ""),
            ("sub", Some("oidc:"), "oidc:"),
            ("email", None, ""),
            ("email", Some("corp:"), "corp:"),
            ("preferred_username", None, "https://issuer.example#"),
        ];
        for (claim, prefix, want) in cases {
            let s = OidcSettings {
                username_claim: claim.into(),
                username_prefix: prefix.map(String::from),
                ..OidcSettings::new("https://issuer.example", "faros")
            };
            assert_eq!(s.effective_username_prefix(), want, "{claim} {prefix:?}");
        }
    }

    #[test]
    fn only_https_or_loopback_http_issuers() {
        let cases = [
            ("https://issuer.example", true),
            ("https://issuer.example/realms/faros", true),
            ("http://127.0.0.1:5556/dex", true),
            ("http://localhost:8080", true),
            ("http://issuer.example", false),
            ("ftp://issuer.example", false),
            ("issuer.example", false),
            ("", false),
        ];
        for (url, ok) in cases {
            assert_eq!(OidcSettings::new(url, "faros").validate().is_ok(), ok, "{url}");
        }
        assert!(OidcSettings::new("https://issuer.example", "").validate().is_err());
    }

    /// The CLI signs in as the audience client unless `--oidc-cli-client-id` names another.
    #[test]
    fn cli_client_defaults_to_the_audience() {
        let mut s = OidcSettings::new("https://issuer.example", "faros");
        assert_eq!(s.cli_client_id(), "faros");
        s.cli_client_id = Some("faros-cli".into());
        assert_eq!(s.cli_client_id(), "faros-cli");
        assert!(s.validate().is_ok());
        s.cli_client_id = Some(String::new());
        assert!(s.validate().is_err());
    }
}
