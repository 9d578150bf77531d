//! Serving MCP tools at `/mcp` (rmcp streamable HTTP) behind the identity check.
//!
//! The hub's MCP federation calls `<backend.url>/mcp` through the backend proxy, so every request
//! carries the identity assertion. [`router`] verifies it before rmcp sees the request (401 without
//! a valid one) and leaves the [`VerifiedIdentity`] in the request extensions, where rmcp hands it
//! to tools inside the HTTP request parts:
//!
//! ```no_run
//! use faros_sdk::axum::Extension;
//! use faros_sdk::rmcp::ErrorData;
//! use faros_sdk::rmcp::model::{CallToolResult, ContentBlock};
//!
//! async fn list_greetings(Extension(parts): Extension<faros_sdk::http::request::Parts>) -> Result<CallToolResult, ErrorData> {
//!     let who = faros_sdk::mcp::caller(&parts)?; // user, org, workspace, cluster
//!     let who = who.identity();
//!     Ok(CallToolResult::success(vec![ContentBlock::text(format!("{} in {}", who.user, who.workspace))]))
//! }
//! ```
//!
//! rmcp's default Host allow-list (loopback only, against DNS rebinding of local servers) is turned
//! off: requests arrive from the hub under the provider's service name, and the signed assertion
//! already ensures they come from the hub.

use std::sync::Arc;

use axum::Router;
use http::request::Parts;
use rmcp::ServerHandler;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use crate::identity::{IdentityVerifier, VerifiedIdentity, require_identity};

/// Where the MCP endpoint is mounted.
pub const MCP_PATH: &str = "/mcp";

/// A router serving the MCP server `make()` builds (one per session) at [`MCP_PATH`], requiring a
/// verified identity on every request.
pub fn router<S, F>(verifier: Arc<IdentityVerifier>, make: F) -> Router
where
    S: ServerHandler + Send + 'static,
    F: Fn() -> S + Send + Sync + 'static,
{
    let service = StreamableHttpService::new(
        move || Ok(make()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default().disable_allowed_hosts(),
    );
    Router::new()
        .nest_service(MCP_PATH, service)
        .layer(axum::middleware::from_fn_with_state(verifier, require_identity))
}

/// The verified caller of the tool call whose HTTP request parts are `parts`.
pub fn caller(parts: &Parts) -> Result<VerifiedIdentity, rmcp::ErrorData> {
    parts
        .extensions
        .get::<VerifiedIdentity>()
        .cloned()
        .ok_or_else(|| rmcp::ErrorData::invalid_request("no verified faros identity on this request", None))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use faros_core::identity::{self, Claims, Identity, Jwks, SigningKey};
    use faros_core::names;
    use rmcp::handler::server::router::tool::ToolRouter;
    use rmcp::handler::server::tool::Extension;
    use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock, ServerCapabilities, ServerConfig};
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    use rmcp::{ServiceExt, tool, tool_handler, tool_router};

    #[derive(Clone)]
    struct WhoAmI {
        tool_router: ToolRouter<Self>,
    }

    #[tool_router]
    impl WhoAmI {
        #[tool(description = "Who is calling")]
        async fn whoami(&self, Extension(parts): Extension<Parts>) -> Result<CallToolResult, rmcp::ErrorData> {
            let who = caller(&parts)?;
            Ok(CallToolResult::success(vec![ContentBlock::text(format!(
                "{} in {}/{}",
                who.user, who.org, who.workspace
            ))]))
        }
    }

    #[tool_handler(router = self.tool_router)]
    impl ServerHandler for WhoAmI {
        fn get_info(&self) -> ServerConfig {
            ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
        }
    }

    #[tokio::test]
    async fn tools_see_the_verified_identity_and_unverified_calls_are_refused() {
        let key = SigningKey::generate("k").unwrap();
        let verifier = Arc::new(IdentityVerifier::with_jwks(
            "quickstart",
            Jwks {
                keys: vec![key.public_jwk()],
            },
        ));
        let app = router(verifier, || WhoAmI {
            tool_router: WhoAmI::tool_router(),
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}{MCP_PATH}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });

        let who = Identity {
            user: "alice".into(),
            org: "acme".into(),
            workspace: "dev".into(),
            cluster: "c1".into(),
            groups: vec![],
        };
        let token = key
            .sign(&Claims::new(
                who,
                "quickstart",
                identity::now_unix(),
                identity::DEFAULT_TTL,
            ))
            .unwrap();
        let headers = [(
            http::HeaderName::from_static(names::HEADER_ASSERTION),
            http::HeaderValue::from_str(&token).unwrap(),
        )]
        .into_iter()
        .collect();
        let transport = StreamableHttpClientTransport::from_config(
            StreamableHttpClientTransportConfig::with_uri(url.clone()).custom_headers(headers),
        );
        let client = ().serve(transport).await.unwrap();
        let tools = client.peer().list_all_tools().await.unwrap();
        assert_eq!(
            tools.iter().map(|t| t.name.to_string()).collect::<Vec<_>>(),
            vec!["whoami"]
        );
        let result = client
            .peer()
            .call_tool(CallToolRequestParams::new("whoami"))
            .await
            .unwrap();
        let text = result.content[0].as_text().unwrap().text.clone();
        assert_eq!(text, "alice in acme/dev");
        let _ = client.cancel().await;

        let anonymous = StreamableHttpClientTransport::from_uri(url.as_str());
        assert!(().serve(anonymous).await.is_err(), "no assertion, no session");
    }
}
