//! `faros credential oidc`: a kubectl exec credential plugin (as kubelogin is) for the hub's OIDC
//! issuer. kubectl runs it before a request that needs a token; it prints a
//! `client.authentication.k8s.io/v1` `ExecCredential` holding the user's ID token and its expiry
//! on stdout, and nothing else there.
//!
//! - [`cache`]: one 0600 file per issuer, client and scopes in the user's cache directory, and the
//!   IO-free decision: use the cached ID token, renew it with the refresh token `--refresh-before`
//!   seconds before it expires, or sign in.
//! - [`flow`]: discovery, the device authorization grant (RFC 8628: the code and URL on stderr,
//!   approved in any browser, on any device) and the refresh-token grant. A refused refresh (the
//!   IdP revoked the grant, the user was disabled) falls back to a new sign-in.
//! - [`exec_info`]: `KUBERNETES_EXEC_INFO` in, `ExecCredential` out, in the version kubectl asked
//!   for.
//! - [`id_token`]: the received ID token's expiry (kcp and the hub verify it; the plugin does not).
//!
//! The hub's kubeconfig endpoint hands OIDC users a kubeconfig whose user runs this plugin
//! (`faros-hub-api`'s `tenancy::kubeconfig`). Tokens are never logged or put in errors.

pub mod cache;
pub mod exec_info;
pub mod flow;
pub mod id_token;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use base64::Engine;
use clap::{Args, Subcommand};

#[derive(Subcommand, Debug)]
pub enum CredentialCommand {
    /// Print an ExecCredential holding an ID token of an OIDC issuer (kubectl's exec plugin):
    /// cached, refreshed before it expires, or signed in anew with the device flow.
    Oidc(OidcCredentialArgs),
}

/// The scopes asked for unless `--scopes` says otherwise: an ID token (`openid`) that names the
/// user (`email`, `profile`) and their groups, and a refresh token (`offline_access`).
pub const DEFAULT_SCOPES: &str = "openid,offline_access,email,profile,groups";

#[derive(Args, Debug, Clone)]
pub struct OidcCredentialArgs {
    /// The OIDC issuer, exactly as its tokens carry it in `iss` (https, or http on loopback).
    #[arg(long)]
    pub issuer: String,
    /// The public client (no secret) to sign in as; it needs the device-code grant.
    #[arg(long)]
    pub client_id: String,
    /// PEM CA bundle trusted for the issuer's TLS, besides the platform roots.
    #[arg(long, conflicts_with = "ca_data")]
    pub ca_file: Option<PathBuf>,
    /// The same bundle inline, base64-encoded (what the hub's kubeconfigs carry).
    #[arg(long)]
    pub ca_data: Option<String>,
    /// Scopes to ask for, comma-separated; those the issuer's discovery does not list are dropped
    /// (`openid` never is).
    #[arg(long, value_delimiter = ',', default_value = DEFAULT_SCOPES)]
    pub scopes: Vec<String>,
    /// Directory of the token cache (default `$XDG_CACHE_HOME/faros/oidc`, else
    /// `~/.cache/faros/oidc`).
    #[arg(long, env = "FAROS_CREDENTIAL_CACHE_DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Renew the ID token this many seconds before it expires.
    #[arg(long, env = "FAROS_CREDENTIAL_REFRESH_BEFORE", default_value_t = 60)]
    pub refresh_before: u64,
}

pub async fn run(cmd: CredentialCommand) -> anyhow::Result<()> {
    match cmd {
        CredentialCommand::Oidc(args) => {
            let info = exec_info::parse(std::env::var(exec_info::ENV).ok().as_deref())?;
            let (token, expires) = oidc_token(&args, info.interactive).await?;
            let doc = exec_info::credential(&info.api_version, &token, expires);
            // stdout carries the credential and nothing else (kubectl parses all of it).
            println!("{doc}");
            Ok(())
        }
    }
}

fn ca_pem(args: &OidcCredentialArgs) -> anyhow::Result<Option<Vec<u8>>> {
    if let Some(path) = &args.ca_file {
        return Ok(Some(
            std::fs::read(path).with_context(|| format!("--ca-file {}", path.display()))?,
        ));
    }
    if let Some(data) = &args.ca_data {
        let pem = base64::engine::general_purpose::STANDARD
            .decode(data.trim())
            .context("--ca-data is not base64")?;
        return Ok(Some(pem));
    }
    Ok(None)
}

/// A valid ID token and its expiry: from the cache, a refresh, or a new sign-in (cached after).
async fn oidc_token(args: &OidcCredentialArgs, interactive: bool) -> anyhow::Result<(String, jiff::Timestamp)> {
    if args.scopes.iter().all(|s| s != "openid") {
        anyhow::bail!("--scopes must include openid (an ID token is what kubectl sends)");
    }
    let dir = match &args.cache_dir {
        Some(d) => d.clone(),
        None => cache::default_dir(|k| std::env::var(k).ok())?,
    };
    let path = dir.join(cache::file_name(&args.issuer, &args.client_id, &args.scopes));
    let cached = cache::read(&path)?;
    let margin = Duration::from_secs(args.refresh_before);
    let step = cache::next_step(
        cached.as_ref(),
        &args.issuer,
        &args.client_id,
        jiff::Timestamp::now(),
        margin,
    );
    if step == cache::Step::Use
        && let Some(entry) = cached
    {
        tracing::debug!(expires = %entry.expires, "using the cached ID token");
        return Ok((entry.id_token, entry.expires));
    }
    let ca = ca_pem(args)?;
    let issuer = flow::Issuer::new(&args.issuer, &args.client_id, ca.as_deref())?;
    let endpoints = issuer.discover().await?;
    let mut tokens = None;
    if let cache::Step::Refresh(refresh_token) = &step {
        match issuer.refresh(&endpoints, refresh_token).await {
            Ok(t) => {
                tracing::debug!("renewed the ID token with the refresh token");
                tokens = Some(t);
            }
            Err(e) => {
                // The IdP revoked the grant or disabled the user: sign in again, as the user
                // would have to anyway.
                eprintln!("faros: renewing the OIDC token failed ({e}); signing in again");
                cache::remove(&path)?;
            }
        }
    }
    let tokens = match tokens {
        Some(t) => t,
        None => {
            let scopes = flow::scopes(&args.scopes, endpoints.scopes_supported.as_deref());
            issuer
                .device_sign_in(&endpoints, &scopes, |auth| {
                    eprintln!("{}", flow::prompt(&args.issuer, auth, interactive));
                })
                .await?
        }
    };
    let id_token = tokens.id_token.context("the issuer returned no ID token")?;
    let expires = id_token::expiry(&id_token, &args.issuer)?;
    let entry = cache::Entry {
        issuer: args.issuer.clone(),
        client_id: args.client_id.clone(),
        id_token: id_token.clone(),
        // An issuer that does not rotate refresh tokens answers without one: keep the old.
        refresh_token: tokens.refresh_token.or(match step {
            cache::Step::Refresh(rt) => Some(rt),
            _ => None,
        }),
        expires,
    };
    cache::write(&path, &entry)?;
    Ok((id_token, expires))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(subcommand)]
        cmd: CredentialCommand,
    }

    #[test]
    fn flags() {
        let CredentialCommand::Oidc(a) =
            Cli::try_parse_from(["faros", "oidc", "--issuer=https://idp", "--client-id=faros"])
                .unwrap()
                .cmd;
        assert_eq!(a.scopes, ["openid", "offline_access", "email", "profile", "groups"]);
        assert_eq!(a.refresh_before, 60);
        let CredentialCommand::Oidc(a) = Cli::try_parse_from([
            "faros",
            "oidc",
            "--issuer=https://idp",
            "--client-id=faros",
            "--scopes=openid,email",
            "--ca-data=UEVN",
        ])
        .unwrap()
        .cmd;
        assert_eq!(a.scopes, ["openid", "email"]);
        assert_eq!(ca_pem(&a).unwrap().as_deref(), Some(&b"PEM"[..]));
        for bad in [
            &["faros", "oidc", "--client-id=faros"][..],
            &["faros", "oidc", "--issuer=https://idp"][..],
            &[
                "faros",
                "oidc",
                "--issuer=https://idp",
                "--client-id=f",
                "--ca-file=a",
                "--ca-data=b",
            ][..],
        ] {
            assert!(Cli::try_parse_from(bad).is_err(), "{bad:?}");
        }
    }
}
