//! An MCP client as MCP hosts embed it: rmcp's client over streamable HTTP, with a channel that
//! receives every `notifications/tools/list_changed` the server sends.

use std::time::Duration;

use rmcp::model::ClientConfig;
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use tokio::sync::mpsc;

/// The client's handler: forwards each `tools/list_changed` to [`Notifications`].
pub struct ListChanged(mpsc::UnboundedSender<()>);

impl ClientHandler for ListChanged {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.0.send(());
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::default()
    }
}

/// A connected, initialized session.
pub type Client = RunningService<RoleClient, ListChanged>;

/// The `tools/list_changed` notifications of one session, in order.
pub struct Notifications(mpsc::UnboundedReceiver<()>);

impl Notifications {
    /// Waits up to `timeout` for the next `tools/list_changed`.
    pub async fn next(&mut self, timeout: Duration) -> anyhow::Result<()> {
        match tokio::time::timeout(timeout, self.0.recv()).await {
            Ok(Some(())) => Ok(()),
            Ok(None) => anyhow::bail!("the MCP session ended before a tools/list_changed"),
            Err(_) => anyhow::bail!("no tools/list_changed within {timeout:?}"),
        }
    }

    /// Takes one notification already received, if there is one (without waiting).
    pub fn try_next(&mut self) -> bool {
        self.0.try_recv().is_ok()
    }

    /// Drops the notifications received so far, so the next one awaited follows what comes next.
    pub fn drain(&mut self) {
        while self.0.try_recv().is_ok() {}
    }
}

/// Initializes a session at `url` (bearer `token`) through `http`.
pub async fn connect(http: reqwest::Client, url: &str, token: &str) -> anyhow::Result<(Client, Notifications)> {
    let (tx, rx) = mpsc::unbounded_channel();
    let transport = StreamableHttpClientTransport::with_client(
        http,
        StreamableHttpClientTransportConfig::with_uri(url).auth_header(token.to_string()),
    );
    let client = ListChanged(tx)
        .serve(transport)
        .await
        .map_err(|e| anyhow::anyhow!("initializing an MCP session at {url}: {e}"))?;
    Ok((client, Notifications(rx)))
}

/// The names of every tool the session lists, sorted.
pub async fn tool_names<H: ClientHandler>(client: &RunningService<RoleClient, H>) -> anyhow::Result<Vec<String>> {
    let mut names: Vec<String> = client
        .peer()
        .list_all_tools()
        .await?
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    names.sort();
    Ok(names)
}
