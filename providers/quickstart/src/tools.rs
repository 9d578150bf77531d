//! MCP tools `list_greetings` and `create_greeting`, acting only in the caller's workspace (the
//! logical cluster named by the verified identity, never by a tool argument).

use http::request::Parts;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::Extension;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, ServerCapabilities, ServerConfig};
use rmcp::{ErrorData, ServerHandler, tool, tool_handler, tool_router};
use serde_json::json;

use crate::backend::AppState;
use crate::greeting::{self, NewGreeting};

/// The quickstart MCP server.
#[derive(Clone)]
pub struct QuickstartTools {
    state: AppState,
    tool_router: ToolRouter<Self>,
}

impl QuickstartTools {
    pub fn new(state: AppState) -> Self {
        Self {
            state,
            tool_router: Self::tool_router(),
        }
    }

    async fn client(&self, parts: &Parts) -> Result<kube::Client, ErrorData> {
        let who = faros_sdk::mcp::caller(parts)?;
        self.state
            .tenants
            .client_for(&who)
            .await
            .map_err(|s| ErrorData::invalid_request(s.message, None))
    }
}

fn text(value: serde_json::Value) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(value.to_string())])
}

#[tool_router]
impl QuickstartTools {
    #[tool(description = "List the Greetings in the caller's workspace, with their replies.")]
    async fn list_greetings(&self, Extension(parts): Extension<Parts>) -> Result<CallToolResult, ErrorData> {
        let client = self.client(&parts).await?;
        match greeting::list(client).await {
            Ok(items) => Ok(text(json!({"items": items}))),
            Err(s) => Ok(CallToolResult::error(vec![ContentBlock::text(s.message)])),
        }
    }

    #[tool(description = "Create a Greeting for `name` in the caller's workspace; the provider replies in its status.")]
    async fn create_greeting(
        &self,
        Extension(parts): Extension<Parts>,
        Parameters(new): Parameters<NewGreeting>,
    ) -> Result<CallToolResult, ErrorData> {
        let client = self.client(&parts).await?;
        match greeting::create(client, &new).await {
            Ok(created) => Ok(text(created)),
            Err(s) => Ok(CallToolResult::error(vec![ContentBlock::text(s.message)])),
        }
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for QuickstartTools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_instructions("Greetings in the caller's faros workspace.")
    }
}
