//! The hub as an MCP client of one provider's `<backend.url>/mcp`.
//!
//! Every connection carries the caller's verified identity (the signed assertion plus the
//! informational `X-Faros-*` headers the backend proxy sends) and nothing else: the reqwest
//! client has no default credentials, so the caller's bearer never reaches a provider.
//!
//! A provider's backend URL is the provider's to write, so this client connects only where the
//! proxies may: through the hub's one upstream policy and its resolver
//! ([`crate::proxy::upstream_policy`], [`crate::proxy::resolver`]), address literals checked
//! before connecting, redirects never followed.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use faros_core::identity::Identity;
use faros_core::names;
use http::{HeaderName, HeaderValue};
use rmcp::model::{CallToolRequestParams, CallToolResponse, ProtocolVersion, Tool};
use rmcp::service::{ClientInitializeError, ClientLifecycleMode, ClientServiceExt, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::{StreamableHttpClientTransportConfig, StreamableHttpError};

use crate::proxy::resolver::PolicyResolver;
use crate::proxy::upstream_policy::{Refused, UpstreamPolicy};

/// Why a provider could not be reached or did not answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McpClientError {
    /// `/mcp` answered 404 or 405: the provider serves no MCP tools (not an error).
    #[error("no MCP endpoint (HTTP {0})")]
    NoEndpoint(u16),
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    #[error("{0}")]
    Failed(String),
    #[error("the caller's identity cannot be sent as header {header}: {reason}")]
    Header { header: &'static str, reason: String },
    #[error("the upstream policy refuses the provider's address: {0}")]
    Refused(#[from] Refused),
}

/// `<backend>/mcp`, whatever the backend URL's trailing slash.
pub fn mcp_url(backend: &http::Uri) -> String {
    format!("{}/mcp", backend.to_string().trim_end_matches('/'))
}

/// The headers of a federated request: the signed assertion (what providers trust) and the
/// identity in clear (what the backend proxy also sends, for logs and simple providers).
pub fn identity_headers(
    identity: &Identity,
    assertion: &HeaderValue,
) -> Result<HashMap<HeaderName, HeaderValue>, McpClientError> {
    let mut out = HashMap::new();
    out.insert(HeaderName::from_static(names::HEADER_ASSERTION), assertion.clone());
    for (header, value) in [
        (names::HEADER_USER, identity.user.as_str()),
        (names::HEADER_ORG, identity.org.as_str()),
        (names::HEADER_WORKSPACE, identity.workspace.as_str()),
        (names::HEADER_CLUSTER, identity.cluster.as_str()),
    ] {
        let v = HeaderValue::from_str(value).map_err(|e| McpClientError::Header {
            header,
            reason: e.to_string(),
        })?;
        out.insert(HeaderName::from_static(header), v);
    }
    Ok(out)
}

/// MCP clients of provider endpoints, sharing one connection pool.
#[derive(Clone, Debug)]
pub struct McpClients {
    http: reqwest::Client,
    policy: Arc<UpstreamPolicy>,
}

impl McpClients {
    /// Clients that connect to the addresses `policy` admits, as the proxies do.
    pub fn new(connect_timeout: Duration, policy: Arc<UpstreamPolicy>) -> Result<Self, McpClientError> {
        let http = reqwest::Client::builder()
            .connect_timeout(connect_timeout)
            .dns_resolver(PolicyResolver::new(policy.clone()))
            // Redirects could carry the assertion to another origin.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| McpClientError::Failed(format!("building the provider MCP client: {e}")))?;
        Ok(Self { http, policy })
    }

    async fn connect(
        &self,
        url: &str,
        headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<RunningService<RoleClient, ()>, McpClientError> {
        // reqwest connects to an address literal without asking the resolver.
        let host = url.parse::<http::Uri>().ok().and_then(|u| u.host().map(str::to_string));
        self.policy.check_literal(host.as_deref().unwrap_or_default())?;
        let config = StreamableHttpClientTransportConfig::with_uri(url).custom_headers(headers);
        let transport = StreamableHttpClientTransport::with_client(self.http.clone(), config);
        // The stateless protocol costs one round trip per call; providers on older rmcp
        // versions still get the initialize handshake.
        let lifecycle = ClientLifecycleMode::Auto {
            preferred_versions: vec![ProtocolVersion::LATEST],
            legacy_version: None,
        };
        ().serve_with_lifecycle(transport, lifecycle)
            .await
            .map_err(|e| classify_init(&e))
    }

    /// Every tool `url` offers (all pages).
    pub async fn list_tools(
        &self,
        url: &str,
        headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<Vec<Tool>, McpClientError> {
        let client = self.connect(url, headers).await?;
        let tools = client.peer().list_all_tools().await;
        close(client);
        tools.map_err(|e| classify(&e))
    }

    /// Calls one tool; the provider's answer is passed through unchanged.
    pub async fn call_tool(
        &self,
        url: &str,
        headers: HashMap<HeaderName, HeaderValue>,
        params: CallToolRequestParams,
    ) -> Result<CallToolResponse, McpClientError> {
        let client = self.connect(url, headers).await?;
        let result = client.peer().call_tool_once(params).await;
        close(client);
        result.map_err(|e| classify(&e))
    }
}

/// Ends the upstream session in the background: the answer is already in hand.
fn close(client: RunningService<RoleClient, ()>) {
    tokio::spawn(async move {
        let _ = tokio::time::timeout(Duration::from_secs(5), client.cancel()).await;
    });
}

fn classify_init(e: &ClientInitializeError) -> McpClientError {
    match e {
        ClientInitializeError::LegacyFallbackFailed { discover, fallback } => {
            // A 404 on either attempt means there is no endpoint at all; otherwise the legacy
            // attempt's error is the informative one.
            match (classify_init(discover), classify_init(fallback)) {
                (McpClientError::NoEndpoint(code), _) | (_, McpClientError::NoEndpoint(code)) => {
                    McpClientError::NoEndpoint(code)
                }
                (_, other) => other,
            }
        }
        // The transport error is a plain field here, not the error's source.
        ClientInitializeError::TransportError { error, context } => match classify(error) {
            McpClientError::Failed(msg) => McpClientError::Failed(format!("{context}: {msg}")),
            other => other,
        },
        other => classify(other),
    }
}

/// Finds an HTTP 404/405 anywhere in the error chain; everything else is a failure.
fn classify(e: &(dyn std::error::Error + 'static)) -> McpClientError {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if let Some(code) = no_endpoint_status(err) {
            return McpClientError::NoEndpoint(code);
        }
        // DynamicTransportError keeps the transport's error as a boxed field, reached as source.
        cur = err.source();
    }
    McpClientError::Failed(chain(e))
}

fn no_endpoint_status(err: &(dyn std::error::Error + 'static)) -> Option<u16> {
    let http = err.downcast_ref::<StreamableHttpError<reqwest::Error>>()?;
    let code = match http {
        // rmcp 3.11 reports unexpected statuses of a POST as "HTTP <status>: <body>".
        StreamableHttpError::UnexpectedServerResponse(msg) => {
            let rest = msg.strip_prefix("HTTP ")?;
            rest.get(..3)?.parse::<u16>().ok()?
        }
        StreamableHttpError::Client(e) => e.status()?.as_u16(),
        _ => return None,
    };
    matches!(code, 404 | 405).then_some(code)
}

/// `outer: inner: innermost`, without repeating a message its source already says.
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut cur = Some(e);
    while let Some(err) = cur {
        let msg = err.to_string();
        if parts.last().is_none_or(|p| !p.contains(&msg)) {
            parts.push(msg);
        }
        cur = err.source();
    }
    parts.join(": ")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use rmcp::transport::DynamicTransportError;

    fn transport_error(e: StreamableHttpError<reqwest::Error>) -> ClientInitializeError {
        ClientInitializeError::TransportError {
            error: DynamicTransportError::from_parts("test", std::any::TypeId::of::<()>(), Box::new(e)),
            context: "send initialize request".into(),
        }
    }

    #[test]
    fn classification() {
        let not_found = || {
            transport_error(StreamableHttpError::UnexpectedServerResponse(
                "HTTP 404 Not Found: ".into(),
            ))
        };
        let cases: Vec<(&str, ClientInitializeError, Option<u16>)> = vec![
            ("404", not_found(), Some(404)),
            (
                "405",
                transport_error(StreamableHttpError::UnexpectedServerResponse(
                    "HTTP 405 Method Not Allowed: nope".into(),
                )),
                Some(405),
            ),
            (
                "401 is a failure, not an absence",
                transport_error(StreamableHttpError::UnexpectedServerResponse(
                    "HTTP 401 Unauthorized: {}".into(),
                )),
                None,
            ),
            ("closed", ClientInitializeError::ConnectionClosed("eof".into()), None),
            (
                "legacy fallback after a 404 discover",
                ClientInitializeError::LegacyFallbackFailed {
                    discover: Box::new(ClientInitializeError::ConnectionClosed("x".into())),
                    fallback: Box::new(not_found()),
                },
                Some(404),
            ),
        ];
        for (what, err, want) in cases {
            let got = match classify_init(&err) {
                McpClientError::NoEndpoint(code) => Some(code),
                _ => None,
            };
            assert_eq!(got, want, "{what}");
        }
    }

    #[test]
    fn urls_and_headers() {
        for (backend, want) in [
            ("http://q.svc:8080", "http://q.svc:8080/mcp"),
            ("http://q.svc:8080/", "http://q.svc:8080/mcp"),
            ("https://q.example/base/", "https://q.example/base/mcp"),
        ] {
            assert_eq!(mcp_url(&backend.parse().unwrap()), want);
        }
        let who = Identity {
            user: "alice".into(),
            groups: vec!["devs".into()],
            org: "acme".into(),
            workspace: "dev".into(),
            cluster: "c1".into(),
        };
        let h = identity_headers(&who, &HeaderValue::from_static("signed")).unwrap();
        let got = crate::proxy::test_support::sorted(&h);
        assert_eq!(
            got,
            [
                ("x-faros-assertion", "signed"),
                ("x-faros-cluster", "c1"),
                ("x-faros-org", "acme"),
                ("x-faros-user", "alice"),
                ("x-faros-workspace", "dev"),
            ]
            .map(|(k, v)| (k.to_string(), v.to_string()))
        );
        let bad = Identity {
            user: "line\nbreak".into(),
            ..who
        };
        assert!(matches!(
            identity_headers(&bad, &HeaderValue::from_static("s")),
            Err(McpClientError::Header {
                header: "x-faros-user",
                ..
            })
        ));
    }
}
