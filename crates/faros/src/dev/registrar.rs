//! The GitOps registrar's kubeconfig in `faros dev`'s state directory: the credential the reconciler
//! publishes in `root:faros:system:providers` (`faros_hub_reconciler::registrar`), which may manage
//! `Provider`s there and nothing else. What a GitOps tool would use, at hand for trying one locally.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use faros_core::client::ClientFactory;
use faros_core::names;
use faros_core::wait::wait_for;
use faros_hub_reconciler::registrar;
use k8s_openapi::api::core::v1::Secret;
use kube::Api;

/// The file in the state directory (owner-only, like every file there).
pub const KUBECONFIG_FILE: &str = "registrar.kubeconfig";

/// The kubeconfig of a Secret, when it addresses this run's hub: after a restart the Secret may
/// still carry the previous run's hub port until the reconciler rewrites it.
fn current_kubeconfig(secret: Option<&Secret>, hub_url: &str) -> Option<String> {
    let bytes = secret?.data.as_ref()?.get(names::KUBECONFIG_SECRET_KEY)?;
    let text = String::from_utf8(bytes.0.clone()).ok()?;
    text.contains(&format!("server: {hub_url}/clusters/")).then_some(text)
}

/// Waits (up to `timeout`) for the reconciler to publish the registrar kubeconfig for `hub_url`
/// and writes it to `<state_dir>/registrar.kubeconfig` (0600); returns the file's path.
pub async fn write_kubeconfig(
    admin: &kube::Config,
    hub_url: &str,
    state_dir: &Path,
    timeout: Duration,
) -> anyhow::Result<PathBuf> {
    let factory = ClientFactory::new(admin.clone())?;
    let secrets: Api<Secret> = Api::namespaced(factory.cluster(names::SYSTEM_PROVIDERS_PATH)?, registrar::NAMESPACE);
    // Until the reconciler's bootstrap has made the workspace, a watch there fails at once: retry
    // those with backoff until the deadline, like the quickstart's registration.
    let deadline = tokio::time::Instant::now() + timeout;
    let mut delay = Duration::from_millis(100);
    let secret = loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        match wait_for(
            secrets.clone(),
            registrar::KUBECONFIG_SECRET,
            |s| current_kubeconfig(s, hub_url).is_some(),
            left,
        )
        .await
        {
            Ok(secret) => break secret,
            Err(e) if tokio::time::Instant::now() + delay < deadline => {
                tracing::debug!(error = %e, "waiting for the GitOps registrar kubeconfig");
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_secs(2));
            }
            Err(e) => {
                return Err(e).with_context(|| {
                    format!(
                        "waiting for the hub reconciler to publish the GitOps registrar kubeconfig ({}/{} in {})",
                        registrar::NAMESPACE,
                        registrar::KUBECONFIG_SECRET,
                        names::SYSTEM_PROVIDERS_PATH
                    )
                });
            }
        }
    };
    let kubeconfig =
        current_kubeconfig(secret.as_ref(), hub_url).context("the registrar kubeconfig Secret disappeared")?;
    let path = state_dir.join(KUBECONFIG_FILE);
    faros_embedded_kcp::server::write_private(&path, kubeconfig.as_bytes())
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use k8s_openapi::ByteString;
    use std::collections::BTreeMap;

    #[test]
    fn only_this_runs_hub() {
        let secret = |kubeconfig: &str| Secret {
            data: Some(BTreeMap::from([(
                "kubeconfig".to_string(),
                ByteString(kubeconfig.as_bytes().to_vec()),
            )])),
            ..Default::default()
        };
        let hub = "https://127.0.0.1:8443";
        let this_run = "clusters:\n- cluster:\n    server: https://127.0.0.1:8443/clusters/abc\n";
        let last_run = "clusters:\n- cluster:\n    server: https://127.0.0.1:9999/clusters/abc\n";
        let prefix = "clusters:\n- cluster:\n    server: https://127.0.0.1:84430/clusters/abc\n";
        for (name, s, want) in [
            ("this run", Some(secret(this_run)), Some(this_run)),
            ("the last run's hub port", Some(secret(last_run)), None),
            ("a port with this one as prefix", Some(secret(prefix)), None),
            ("no Secret", None, None),
            ("no data", Some(Secret::default()), None),
        ] {
            assert_eq!(current_kubeconfig(s.as_ref(), hub).as_deref(), want, "{name}");
        }
    }
}
