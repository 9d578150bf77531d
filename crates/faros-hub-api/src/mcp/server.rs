//! The MCP server one workspace's clients talk to: a hand-written [`ServerHandler`] over the
//! [`Federation`], bound to the workspace and caller that opened the session (or sent the
//! stateless request).

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, DiscoverResult, Implementation, InitializeRequestParams, InitializeResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse,
    ReadResourceResult, Resource, ResourceContents, ServerCapabilities, ServerConfig, SubscriptionFilter,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer, SubscriptionContext};
use rmcp::{ErrorData, ServerHandler};
use tokio_util::sync::{CancellationToken, DropGuard};

use super::describe::{self, WORKSPACE_URI};
use super::{Federation, WorkspaceCtx};

/// The MCP server of one workspace, as one caller sees it.
pub struct WorkspaceServer {
    fed: Arc<Federation>,
    ctx: Arc<WorkspaceCtx>,
    /// Cancels the session's `list_changed` watcher when rmcp drops the session.
    session: CancellationToken,
    _ends_with_session: DropGuard,
}

impl WorkspaceServer {
    pub fn new(fed: Arc<Federation>, ctx: Arc<WorkspaceCtx>) -> Self {
        let session = CancellationToken::new();
        Self {
            fed,
            ctx,
            _ends_with_session: session.clone().drop_guard(),
            session,
        }
    }

    fn status_error(s: faros_core::status::Status) -> ErrorData {
        ErrorData::internal_error(s.message, None)
    }

    /// [`ServerHandler::get_info`] plus instructions naming the federated providers.
    async fn info_with_instructions(&self) -> ServerConfig {
        let mut info = self.get_info();
        match self.fed.describe(&self.ctx).await {
            Ok(d) => info.instructions = Some(describe::instructions(&d)),
            Err(s) => {
                tracing::warn!(workspace = %self.ctx.target.path, error = %s.message, "MCP instructions without the provider list")
            }
        }
        info
    }
}

impl ServerHandler for WorkspaceServer {
    fn get_info(&self) -> ServerConfig {
        let t = &self.ctx.target;
        let ws = t.workspace.as_deref().unwrap_or_default();
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .enable_resources()
                .build(),
        )
        .with_server_info(
            Implementation::new("faros-hub", env!("CARGO_PKG_VERSION")).with_title(format!("faros {}/{ws}", t.org)),
        )
        .with_instructions(format!(
            "faros workspace {}/{ws}: the MCP tools of its enabled providers, named \"<provider>__<tool>\".",
            t.org
        ))
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        context.peer.set_peer_info(request.clone());
        let mut info = self.negotiate_initialize(&request)?;
        info.instructions = self.info_with_instructions().await.instructions;
        Ok(info)
    }

    async fn discover(&self, _context: RequestContext<RoleServer>) -> Result<DiscoverResult, ErrorData> {
        Ok(DiscoverResult::from_server_info(
            self.supported_protocol_versions().into_owned(),
            self.info_with_instructions().await,
        ))
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        // A legacy session: push list_changed over its standalone stream until it ends.
        let fed = self.fed.clone();
        let ctx = self.ctx.clone();
        let session = self.session.clone();
        let peer = context.peer;
        tokio::spawn(async move {
            fed.watch_tool_set(
                &ctx,
                || {
                    let peer = peer.clone();
                    async move { peer.notify_tool_list_changed().await.map_err(|e| e.to_string()) }
                },
                session.cancelled_owned(),
            )
            .await;
        });
    }

    fn accepted_subscription_filter(&self, _requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
        Some(SubscriptionFilter::builder().tools_list_changed().build())
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        // The stateless protocol's subscriptions/listen: the same watcher, for one stream.
        let sink = context.sink().clone();
        self.fed
            .watch_tool_set(
                &self.ctx,
                || {
                    let sink = sink.clone();
                    async move { sink.notify_tool_list_changed().await.map_err(|e| e.to_string()) }
                },
                context.cancelled(),
            )
            .await;
        Ok(())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = self.fed.tools(&self.ctx).await.map_err(Self::status_error)?;
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.fed.call(&self.ctx, request).await
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let t = &self.ctx.target;
        Ok(ListResourcesResult::with_all_items(vec![
            Resource::new(WORKSPACE_URI, "workspace")
                .with_title(format!(
                    "faros workspace {}/{}",
                    t.org,
                    t.workspace.as_deref().unwrap_or_default()
                ))
                .with_description(
                    "The workspace behind this endpoint: org, workspace, kcp path, cluster, enabled providers.",
                )
                .with_mime_type("application/json"),
        ]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        if request.uri != WORKSPACE_URI {
            return Err(ErrorData::resource_not_found(
                format!("no resource {:?}; this endpoint has only {WORKSPACE_URI}", request.uri),
                None,
            ));
        }
        let d = self.fed.describe(&self.ctx).await.map_err(Self::status_error)?;
        Ok(ReadResourceResponse::Complete(ReadResourceResult::new(vec![
            ResourceContents::text(describe::resource_json(&d), WORKSPACE_URI).with_mime_type("application/json"),
        ])))
    }
}
