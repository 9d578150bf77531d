//! Following an APIExport's virtual workspace URLs: the next set its APIExportEndpointSlice in
//! `root:faros:system:controllers` publishes. Shared by the loops that watch through a virtual
//! workspace (the catalog, the membership index); which watches to start and stop for a change is
//! [`faros_core::kcp::endpoints::UrlChanges`].

use std::time::Duration;

use faros_core::client::ClientFactory;
use faros_core::kcp::apis::v1alpha1::APIExportEndpointSlice;
use faros_core::kcp::endpoints::urls;
use faros_core::names;
use faros_core::wait::wait_for;
use kube::Api;
use tokio_util::sync::CancellationToken;

/// First retry delay while the slice cannot be read yet (the tree is being bootstrapped).
const FIRST_RETRY: Duration = Duration::from_millis(100);

/// How to follow one export's slice.
#[derive(Clone, Copy, Debug)]
pub struct Follow<'a> {
    pub export: &'a str,
    /// How long one wait for a change lasts before it is started again.
    pub timeout: Duration,
    /// The longest delay between failed attempts.
    pub retry_delay: Duration,
}

/// The slice's URLs, read once: empty when it publishes none or does not exist yet, an error while
/// its workspace does not exist yet (the tree is being bootstrapped) or cannot be read.
pub async fn current(factory: &ClientFactory, export: &str) -> Result<Vec<String>, String> {
    let api: Api<APIExportEndpointSlice> = Api::all(
        factory
            .cluster(names::SYSTEM_CONTROLLERS_PATH)
            .map_err(|e| e.to_string())?,
    );
    match api.get(export).await {
        Ok(slice) => Ok(urls(Some(&slice))),
        // The slice itself is missing, not its workspace (kcp names the workspace in that case).
        Err(kube::Error::Api(s)) if s.code == 404 && s.details.as_ref().is_none_or(|d| d.kind != "workspaces") => {
            Ok(Vec::new())
        }
        Err(e) => Err(e.to_string()),
    }
}

/// The slice's URLs once they are non-empty and differ from `current`; `None` on cancel.
pub async fn next(
    factory: &ClientFactory,
    follow: Follow<'_>,
    cancel: &CancellationToken,
    current: &[String],
) -> Option<Vec<String>> {
    // While the tree is being bootstrapped the slice's workspace appears within a second: start
    // retrying quickly and back off to `retry_delay`, rather than sleep it out.
    let mut delay = FIRST_RETRY.min(follow.retry_delay);
    let export = follow.export;
    loop {
        let found = async {
            let api: Api<APIExportEndpointSlice> = Api::all(
                factory
                    .cluster(names::SYSTEM_CONTROLLERS_PATH)
                    .map_err(|e| (e.to_string(), e.to_string()))?,
            );
            let slice = wait_for(
                api,
                export,
                |s| {
                    let found = urls(s);
                    !found.is_empty() && found != current
                },
                follow.timeout,
            )
            .await
            .map_err(|e| (e.brief(), e.to_string()))?;
            Ok::<_, (String, String)>(urls(slice.as_ref()))
        };
        tokio::select! {
            _ = cancel.cancelled() => return None,
            r = found => match r {
                Ok(urls) => return Some(urls),
                // The normal wait of start-up (the tree is being made): one readable line at
                // INFO, the whole error at DEBUG.
                Err((reason, error)) if current.is_empty() => {
                    tracing::info!(%reason, export, "waiting for the virtual workspace URL");
                    tracing::debug!(%error, export, "reading the endpoint slice");
                }
                // Watching for a change that did not come within the timeout: watch again.
                Err((_, error)) => tracing::debug!(%error, export, "virtual workspace URLs unchanged"),
            },
        }
        tokio::select! {
            _ = cancel.cancelled() => return None,
            _ = tokio::time::sleep(delay) => {}
        }
        delay = (delay * 2).min(follow.retry_delay);
    }
}
