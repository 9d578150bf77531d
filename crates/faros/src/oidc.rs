//! The `--oidc-*` flags of `faros dev` and `faros kcp`: kcp's and kube-apiserver's names and
//! meanings (and the hub's), so a kcp command line carries over unchanged.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use faros_core::oidc::{DEFAULT_USERNAME_CLAIM, OidcSettings};

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
}

impl OidcArgs {
    /// `None` without an issuer; reads the CA file.
    pub fn settings(&self) -> anyhow::Result<Option<OidcSettings>> {
        let (Some(issuer), Some(client_id)) = (&self.oidc_issuer_url, &self.oidc_client_id) else {
            return Ok(None);
        };
        let mut settings = OidcSettings::new(issuer, client_id);
        settings.username_claim = self
            .oidc_username_claim
            .clone()
            .unwrap_or_else(|| DEFAULT_USERNAME_CLAIM.to_string());
        settings.username_prefix = self.oidc_username_prefix.clone();
        settings.groups_claim = self.oidc_groups_claim.clone();
        settings.groups_prefix = self.oidc_groups_prefix.clone();
        if let Some(path) = &self.oidc_ca_file {
            let pem =
                std::fs::read_to_string(path).with_context(|| format!("reading --oidc-ca-file {}", path.display()))?;
            settings.ca_pem = Some(pem);
        }
        settings.validate()?;
        Ok(Some(settings))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        oidc: OidcArgs,
    }

    #[test]
    fn flags_as_kube_apiserver_names_them() {
        let cli = Cli::try_parse_from([
            "faros",
            "--oidc-issuer-url=https://idp.example",
            "--oidc-client-id=faros",
            "--oidc-username-claim=email",
            "--oidc-username-prefix=oidc:",
            "--oidc-groups-claim=groups",
            "--oidc-groups-prefix=oidc:",
        ])
        .unwrap();
        let s = cli.oidc.settings().unwrap().unwrap();
        assert_eq!(
            (
                s.issuer_url.as_str(),
                s.client_id.as_str(),
                s.username_claim.as_str(),
                s.username_prefix.as_deref(),
                s.groups_claim.as_deref(),
                s.groups_prefix.as_deref()
            ),
            (
                "https://idp.example",
                "faros",
                "email",
                Some("oidc:"),
                Some("groups"),
                Some("oidc:")
            )
        );
        assert!(
            Cli::try_parse_from(["faros"])
                .unwrap()
                .oidc
                .settings()
                .unwrap()
                .is_none()
        );
        assert!(Cli::try_parse_from(["faros", "--oidc-issuer-url=https://idp.example"]).is_err());
        let plain_http =
            Cli::try_parse_from(["faros", "--oidc-issuer-url=http://idp.example", "--oidc-client-id=x"]).unwrap();
        assert!(plain_http.oidc.settings().is_err());
    }
}
