//! The `--oidc-*` flags of `faros dev` and `faros kcp` (defined once in `faros_core::oidc::args`,
//! shared with `faros-hub-api`), and reading `--oidc-ca-file` for them.

use anyhow::Context;
use faros_core::oidc::OidcSettings;

pub use faros_core::oidc::OidcArgs;

/// The settings `args` name (`None` without an issuer), with the CA file read.
pub fn settings(args: &OidcArgs) -> anyhow::Result<Option<OidcSettings>> {
    let ca_pem = match args.ca_file() {
        Some(path) => {
            Some(std::fs::read_to_string(path).with_context(|| format!("reading --oidc-ca-file {}", path.display()))?)
        }
        None => None,
    };
    Ok(args.settings(ca_pem)?)
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
        let s = settings(&cli.oidc).unwrap().unwrap();
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
        assert_eq!(s.cli_client_id(), "faros");
        let with_cli = Cli::try_parse_from([
            "faros",
            "--oidc-issuer-url=https://idp.example",
            "--oidc-client-id=faros",
            "--oidc-cli-client-id=faros-cli",
        ])
        .unwrap();
        assert_eq!(settings(&with_cli.oidc).unwrap().unwrap().cli_client_id(), "faros-cli");
        assert!(Cli::try_parse_from(["faros", "--oidc-cli-client-id=faros-cli"]).is_err());
        assert!(
            settings(&Cli::try_parse_from(["faros"]).unwrap().oidc)
                .unwrap()
                .is_none()
        );
        assert!(Cli::try_parse_from(["faros", "--oidc-issuer-url=https://idp.example"]).is_err());
        let plain_http =
            Cli::try_parse_from(["faros", "--oidc-issuer-url=http://idp.example", "--oidc-client-id=x"]).unwrap();
        assert!(settings(&plain_http.oidc).is_err());
    }
}
