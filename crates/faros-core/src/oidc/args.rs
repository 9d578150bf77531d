//! The `--oidc-*` flags, kube-apiserver's and kcp's names and meanings, for every faros binary that
//! takes them (`faros dev`, `faros kcp`, `faros-hub-api`): one definition, so a kcp command line
//! carries over unchanged. Reading `--oidc-ca-file` is the binary's (this crate does no IO).

use std::path::{Path, PathBuf};

use clap::Args;

use super::{OidcSettings, SettingsError};

#[derive(Args, Debug, Clone, Default)]
pub struct OidcArgs {
    /// OIDC issuer whose ID tokens authenticate users (exactly as in the tokens' `iss`; https).
    #[arg(long, env = "FAROS_OIDC_ISSUER_URL", requires = "oidc_client_id")]
    pub oidc_issuer_url: Option<String>,
    /// The audience OIDC tokens must carry.
    #[arg(long, env = "FAROS_OIDC_CLIENT_ID", requires = "oidc_issuer_url")]
    pub oidc_client_id: Option<String>,
    /// The claim naming the user (default `sub`).
    #[arg(long, env = "FAROS_OIDC_USERNAME_CLAIM")]
    pub oidc_username_claim: Option<String>,
    /// Prefix of user names (default `<issuer>#` unless the claim is `email`; `-` for none).
    #[arg(long, env = "FAROS_OIDC_USERNAME_PREFIX")]
    pub oidc_username_prefix: Option<String>,
    /// The claim listing the user's groups.
    #[arg(long, env = "FAROS_OIDC_GROUPS_CLAIM")]
    pub oidc_groups_claim: Option<String>,
    /// Prefix of group names.
    #[arg(long, env = "FAROS_OIDC_GROUPS_PREFIX")]
    pub oidc_groups_prefix: Option<String>,
    /// PEM CA bundle for the issuer's TLS (default: the platform roots).
    #[arg(long, env = "FAROS_OIDC_CA_FILE")]
    pub oidc_ca_file: Option<PathBuf>,
    /// The public client (no secret; device flow) the `faros` CLI signs in as, which the hub's
    /// kubeconfigs name in their `exec` stanza (default: `--oidc-client-id`). Its ID tokens must
    /// still carry the `--oidc-client-id` audience. Read by the hub only; kcp ignores it.
    #[arg(long, env = "FAROS_OIDC_CLI_CLIENT_ID", requires = "oidc_issuer_url")]
    pub oidc_cli_client_id: Option<String>,
}

impl OidcArgs {
    /// The settings these flags name (`None` without an issuer), validated, with `ca_pem` the
    /// contents of [`Self::ca_file`] as the caller read them.
    pub fn settings(&self, ca_pem: Option<String>) -> Result<Option<OidcSettings>, SettingsError> {
        let (Some(issuer), Some(client_id)) = (&self.oidc_issuer_url, &self.oidc_client_id) else {
            return Ok(None);
        };
        let mut settings = OidcSettings::new(issuer, client_id);
        if let Some(claim) = &self.oidc_username_claim {
            settings.username_claim = claim.clone();
        }
        settings.username_prefix = self.oidc_username_prefix.clone();
        settings.groups_claim = self.oidc_groups_claim.clone();
        settings.groups_prefix = self.oidc_groups_prefix.clone();
        settings.ca_pem = ca_pem;
        settings.cli_client_id = self.oidc_cli_client_id.clone();
        settings.validate()?;
        Ok(Some(settings))
    }

    /// `--oidc-ca-file`, for the binary to read.
    pub fn ca_file(&self) -> Option<&Path> {
        self.oidc_ca_file.as_deref()
    }
}
