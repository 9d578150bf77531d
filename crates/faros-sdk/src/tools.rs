//! MCP tools without rmcp's ceremony: a tool is a name, a description and an async function of the
//! [`Caller`] (verified identity + a client for the caller's workspace) and its typed input.
//!
//! ```no_run
//! use faros_sdk::prelude::*;
//! use faros_sdk::schemars::JsonSchema;
//! use faros_sdk::serde::Deserialize;
//!
//! #[derive(Deserialize, JsonSchema)]
//! #[serde(crate = "faros_sdk::serde")]
//! #[schemars(crate = "faros_sdk::schemars")]
//! struct NewNote {
//!     /// The note's text.
//!     text: String,
//! }
//!
//! let create = Tool::new("create_note", "Create a Note in the caller's workspace.", |caller: Caller, new: NewNote| async move {
//!     // The caller's own workspace: `caller.client` acts there and nowhere else.
//!     Ok::<_, Status>(json!({"created": new.text, "workspace": caller.who.identity().workspace}))
//! });
//! let list = Tool::no_input("list_notes", "List the Notes in the caller's workspace.", |caller: Caller| async move {
//!     Ok::<_, Status>(json!({"workspace": caller.who.identity().workspace, "items": []}))
//! });
//! # let _ = (create, list);
//! ```
//!
//! The input's JSON schema (`schemars`) is the tool's `inputSchema`. A result is sent as JSON text;
//! an `Err(Status)` becomes a tool error carrying the Status message, so the model sees why. A call
//! without a verified identity or before the provider reaches its tenants is a protocol error.
//! [`App`](crate::app::App) serves the tools at `/mcp` behind the identity check.

use std::borrow::Cow;
use std::sync::Arc;

use faros_core::status::Status;
use futures::future::BoxFuture;
use rmcp::handler::server::common::{schema_for_empty_input, schema_for_input, schema_for_type};
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ProtocolVersion, ResultType, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::tenants::{Caller, Tenants};

type Call = dyn Fn(Caller, Value) -> BoxFuture<'static, Result<CallToolResult, ErrorData>> + Send + Sync;

/// One MCP tool.
#[derive(Clone)]
pub struct Tool {
    attr: rmcp::model::Tool,
    call: Arc<Call>,
}

impl Tool {
    /// A tool taking input `I` (a struct: its schema must be a JSON object).
    pub fn new<I, O, F, Fut>(name: &'static str, description: &'static str, f: F) -> Self
    where
        I: DeserializeOwned + schemars::JsonSchema + Send + 'static,
        O: Serialize,
        F: Fn(Caller, I) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, Status>> + Send + 'static,
    {
        let schema = schema_for_input::<I>().unwrap_or_else(|_| schema_for_type::<I>());
        let f = Arc::new(f);
        let call = move |caller: Caller, args: Value| -> BoxFuture<'static, Result<CallToolResult, ErrorData>> {
            let f = f.clone();
            Box::pin(async move {
                let input: I = serde_json::from_value(args)
                    .map_err(|e| ErrorData::invalid_params(format!("arguments: {e}"), None))?;
                Ok(result(f(caller, input).await))
            })
        };
        Self {
            attr: rmcp::model::Tool::new(name, description, schema),
            call: Arc::new(call),
        }
    }

    /// A tool without input.
    pub fn no_input<O, F, Fut>(name: &'static str, description: &'static str, f: F) -> Self
    where
        O: Serialize,
        F: Fn(Caller) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, Status>> + Send + 'static,
    {
        let f = Arc::new(f);
        let call = move |caller: Caller, _: Value| -> BoxFuture<'static, Result<CallToolResult, ErrorData>> {
            let f = f.clone();
            Box::pin(async move { Ok(result(f(caller).await)) })
        };
        Self {
            attr: rmcp::model::Tool::new(name, description, schema_for_empty_input()),
            call: Arc::new(call),
        }
    }

    pub fn name(&self) -> &str {
        &self.attr.name
    }
}

fn result<O: Serialize>(r: Result<O, Status>) -> CallToolResult {
    match r.map(|o| serde_json::to_string(&o)) {
        Ok(Ok(text)) => CallToolResult::success(vec![ContentBlock::text(text)]),
        Ok(Err(e)) => CallToolResult::error(vec![ContentBlock::text(format!("encoding the result: {e}"))]),
        Err(s) => CallToolResult::error(vec![ContentBlock::text(s.message)]),
    }
}

/// The rmcp server handler over a set of [`Tool`]s (one per MCP session).
#[derive(Clone)]
pub struct ToolServer {
    tools: Arc<Vec<Tool>>,
    tenants: Tenants,
    instructions: Option<String>,
}

impl ToolServer {
    pub fn new(tools: Arc<Vec<Tool>>, tenants: Tenants, instructions: Option<String>) -> Self {
        Self {
            tools,
            tenants,
            instructions,
        }
    }
}

impl ServerHandler for ToolServer {
    fn get_info(&self) -> ServerConfig {
        let config = ServerConfig::new(ServerCapabilities::builder().enable_tools().build());
        match &self.instructions {
            Some(text) => config.with_instructions(text.clone()),
            None => config,
        }
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        // As rmcp's own tool router answers: newer clients may cache the (static) list.
        let hints = context
            .protocol_version()
            .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28);
        let mut tools: Vec<_> = self.tools.iter().map(|t| t.attr.clone()).collect();
        tools.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(ListToolsResult {
            result_type: Some(ResultType::COMPLETE),
            tools,
            meta: None,
            next_cursor: None,
            ttl_ms: hints.then_some(0),
            cache_scope: hints.then_some(CacheScope::Public),
        })
    }

    fn get_tool(&self, name: &str) -> Option<rmcp::model::Tool> {
        self.tools.iter().find(|t| t.name() == name).map(|t| t.attr.clone())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let tool = self
            .tools
            .iter()
            .find(|t| t.name() == request.name.as_ref())
            .ok_or_else(|| ErrorData::invalid_params(Cow::Owned(format!("no tool {:?}", request.name)), None))?;
        let mut parts = context
            .extensions
            .get::<http::request::Parts>()
            .cloned()
            .ok_or_else(|| ErrorData::invalid_request("no HTTP request behind this tool call", None))?;
        parts.extensions.insert(self.tenants.clone());
        let caller = Caller::of(&parts)
            .await
            .map_err(|s| ErrorData::invalid_request(s.message, None))?;
        let args = Value::Object(request.arguments.unwrap_or_default());
        (tool.call)(caller, args).await.map(Into::into)
    }
}
