//! Reaching a running platform: an HTTP client that trusts its CA, and a user's token from its token
//! file. Shared by the plan's runner ([`super::exec`]) and the shard spread check ([`super::spread`]).

use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use faros_core::token_file::parse_token_file;

/// The token of `user` in the token file `tokens`.
pub(super) fn token_of(tokens: &Path, user: &str) -> anyhow::Result<String> {
    let text = std::fs::read_to_string(tokens).with_context(|| format!("reading {}", tokens.display()))?;
    parse_token_file(&text)
        .with_context(|| format!("{}", tokens.display()))?
        .into_iter()
        .find(|t| t.user == user)
        .map(|t| t.token)
        .with_context(|| format!("{} has no token for {user}", tokens.display()))
}

/// A client trusting the CA bundle `ca`, with a short timeout (checks, not transfers).
pub(super) fn http(ca: &Path) -> anyhow::Result<reqwest::Client> {
    let pem = std::fs::read(ca).with_context(|| format!("reading {}", ca.display()))?;
    Ok(reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(&pem)?)
        .timeout(Duration::from_secs(10))
        .build()?)
}
