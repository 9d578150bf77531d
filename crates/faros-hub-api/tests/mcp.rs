//! MCP federation end to end without kcp: fake providers are real rmcp servers behind the SDK's
//! identity check (trusting the hub's JWKS), the hub's MCP route is served on 127.0.0.1:0 behind
//! the real authentication middleware, and an rmcp client talks to it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::routing::{any, get};
use common::*;
use faros_core::catalog::{BackendSpec, CatalogEntry, CatalogEntrySpec};
use faros_core::status::Status;
use faros_hub_api::auth::tokenreview::{ReviewedUser, StaticReviewer};
use faros_hub_api::auth::{Caller, require_caller};
use faros_hub_api::catalog::clock::{Clock, ManualClock};
use faros_hub_api::catalog::record::BackendHealth;
use faros_hub_api::catalog::registry::Candidate;
use faros_hub_api::mcp::{Directory, Federation, McpSettings};
use faros_hub_api::tenancy::scope::Scoped;
use faros_hub_api::tenancy::{Role, WorkspaceRef};
use faros_hub_api::{Config, Hub};
use faros_sdk::identity::IdentityVerifier;
use faros_test_support::mcp_client::{self, Notifications};
use futures::future::BoxFuture;
use http::request::Parts;
use pretty_assertions::assert_eq;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult, PaginatedRequestParams,
    ReadResourceRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler};
use serde_json::{Value, json};

const BOB: &str = "bob-token";
const CLUSTER_DEV: &str = "c-dev";
const CLUSTER_OPS: &str = "c-ops";

// ----- fake providers ----------------------------------------------------------------------------

/// A provider MCP server: lists `tools`; every call answers with what the provider saw.
#[derive(Clone)]
struct FakeProvider {
    tools: Vec<&'static str>,
}

impl ServerHandler for FakeProvider {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut schema = serde_json::Map::new();
        schema.insert("type".into(), "object".into());
        let schema = Arc::new(schema);
        Ok(ListToolsResult::with_all_items(
            self.tools
                .iter()
                .map(|t| Tool::new(*t, format!("{t} description"), schema.clone()))
                .collect(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let parts = context.extensions.get::<Parts>().expect("HTTP parts");
        let who = faros_sdk::mcp::caller(parts)?;
        let header = |name: &str| parts.headers.get(name).map(|v| v.to_str().unwrap().to_string());
        let seen = json!({
            "tool": request.name,
            "arguments": request.arguments,
            "user": who.user,
            "org": who.org,
            "workspace": who.workspace,
            "cluster": who.cluster,
            "authorization": header("authorization"),
            "x-faros-user": header("x-faros-user"),
            "x-faros-workspace": header("x-faros-workspace"),
        });
        Ok(CallToolResponse::Complete(CallToolResult::success(vec![
            ContentBlock::text(seen.to_string()),
        ])))
    }
}

async fn mcp_provider(hub: &Hub, name: &str, tools: Vec<&'static str>) -> String {
    let verifier = Arc::new(IdentityVerifier::with_jwks(name, hub.keys().jwks()));
    let app = faros_sdk::mcp::router(verifier, move || FakeProvider { tools: tools.clone() })
        .route("/healthz", get(|| async { "ok" }));
    format!("http://{}", serve(app).await)
}

/// A backend whose `/mcp` accepts the connection and never answers.
async fn hanging_provider() -> String {
    let app = Router::new().route("/mcp", any(std::future::pending::<&'static str>));
    format!("http://{}", serve(app).await)
}

/// A backend without `/mcp`.
async fn plain_provider() -> String {
    let app = Router::new().route("/healthz", get(|| async { "ok" }));
    format!("http://{}", serve(app).await)
}

// ----- fake directory ----------------------------------------------------------------------------

/// Workspaces `acme/dev` (alice) and `acme/ops` (alice, bob); enabled providers per cluster.
#[derive(Default)]
struct FakeDirectory {
    enabled: Mutex<HashMap<String, Vec<String>>>,
}

impl FakeDirectory {
    fn set_enabled(&self, cluster: &str, names: &[&str]) {
        self.enabled
            .lock()
            .unwrap()
            .insert(cluster.into(), names.iter().map(|s| s.to_string()).collect());
    }
}

/// The route table's workspace scope for this test's two workspaces: what `tenancy::scope::admit`
/// hands the MCP handler, decided here without kcp.
async fn fake_scope(
    params: axum::extract::RawPathParams,
    mut req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let param = |name: &str| params.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string());
    let (org, ws) = (param("org").unwrap(), param("ws").unwrap());
    let user = req.extensions().get::<Caller>().unwrap().user.clone();
    let (cluster, members): (&str, &[&str]) = match (org.as_str(), ws.as_str()) {
        ("acme", "dev") => (CLUSTER_DEV, &["alice"]),
        ("acme", "ops") => (CLUSTER_OPS, &["alice", "bob"]),
        _ => return Status::not_found_message(format!("workspace {ws:?} not found")).into_response(),
    };
    if !members.contains(&user.as_str()) {
        // As the hub's scope answers: what a caller may not see does not exist for them.
        return Status::not_found_message(format!("workspace {ws:?} not found")).into_response();
    }
    let target = WorkspaceRef {
        path: format!("root:faros:tenants:{org}:{ws}"),
        org,
        workspace: Some(ws),
        cluster: cluster.into(),
    };
    req.extensions_mut().insert(Scoped {
        target,
        role: Role::Member,
    });
    next.run(req).await
}

impl Directory for FakeDirectory {
    fn enabled<'a>(&'a self, target: &'a WorkspaceRef) -> BoxFuture<'a, Result<Vec<String>, Status>> {
        let names = self
            .enabled
            .lock()
            .unwrap()
            .get(&target.cluster)
            .cloned()
            .unwrap_or_default();
        Box::pin(async move { Ok(names) })
    }
}

// ----- the hub -----------------------------------------------------------------------------------

struct McpHub {
    hub: Hub,
    clock: Arc<ManualClock>,
    directory: Arc<FakeDirectory>,
    fed: Arc<Federation>,
    addr: std::net::SocketAddr,
}

impl McpHub {
    async fn start() -> Self {
        faros_core::telemetry::install_crypto_provider();
        let clock = Arc::new(ManualClock::new(T0.parse().unwrap()));
        let user = |name: &str| ReviewedUser {
            username: name.into(),
            groups: vec!["devs".into()],
            ..Default::default()
        };
        let reviewer = StaticReviewer::default()
            .with("*", ALICE, user("alice"))
            .with("*", BOB, user("bob"));
        let mut config = Config::new(kube::Config::new("https://127.0.0.1:1".parse().unwrap()));
        config.clock = clock.clone();
        config.token_reviewer = Some(Arc::new(reviewer));
        // Providers of this test listen on loopback, which the hub refuses by default.
        config.upstreams.allow = faros_hub_api::proxy::UpstreamPolicy::loopback();
        let hub = Hub::new(config).unwrap();
        let directory = Arc::new(FakeDirectory::default());
        let settings = McpSettings {
            discovery_timeout: Duration::from_secs(1),
            call_timeout: Duration::from_secs(5),
            readiness_poll: Duration::from_millis(50),
            ..McpSettings::default()
        };
        let st = hub.state();
        let fed = Federation::new(
            st.registry.clone(),
            st.keys.clone(),
            st.metrics.clone(),
            st.tenancy.subscribe_bindings(),
            directory.clone(),
            settings,
            Arc::new(faros_hub_api::proxy::UpstreamPolicy {
                allow: faros_hub_api::proxy::UpstreamPolicy::loopback(),
                ..Default::default()
            }),
        )
        .unwrap();
        let app = Router::new()
            .merge(faros_hub_api::mcp::routes(fed.clone()))
            .route_layer(axum::middleware::from_fn(fake_scope))
            .route_layer(axum::middleware::from_fn_with_state(
                hub.state().authn.clone(),
                require_caller,
            ));
        let addr = serve(app).await;
        Self {
            hub,
            clock,
            directory,
            fed,
            addr,
        }
    }

    fn url(&self, org: &str, ws: &str) -> String {
        format!("http://{}/api/orgs/{org}/workspaces/{ws}/mcp", self.addr)
    }

    /// Registers provider `name` with backend `url`, healthy (and so Ready).
    fn register(&self, name: &str, url: &str) {
        let entry = CatalogEntry::new(
            name,
            CatalogEntrySpec {
                display_name: format!("{}{}", name[..1].to_uppercase(), &name[1..]),
                description: Some(format!("The {name} provider.")),
                backend: Some(BackendSpec {
                    url: url.into(),
                    health_path: None,
                }),
                ..Default::default()
            },
        );
        let registry = self.hub.registry();
        registry.upsert(Candidate {
            cluster: format!("c-{name}"),
            path: Some(format!("root:faros:providers:{name}")),
            source: "vw".into(),
            entry,
        });
        let backend = registry
            .get(name)
            .unwrap()
            .endpoints
            .backend
            .clone()
            .unwrap()
            .to_string();
        registry.set_health(name, &backend, BackendHealth::Healthy);
        let readiness = registry.view(name).unwrap().readiness;
        assert!(readiness.ready, "{name} should be Ready: {readiness:?}");
    }

    fn beat(&self, name: &str) {
        self.hub
            .registry()
            .heartbeat(name, Default::default(), self.clock.now())
            .unwrap();
    }
}

// ----- clients -----------------------------------------------------------------------------------

async fn connect(url: &str, token: &str) -> (mcp_client::Client, Notifications) {
    mcp_client::connect(reqwest::Client::new(), url, token).await.unwrap()
}

async fn tool_names(client: &mcp_client::Client) -> Vec<String> {
    mcp_client::tool_names(client).await.unwrap()
}

async fn call(client: &mcp_client::Client, name: &str) -> Result<CallToolResult, rmcp::ServiceError> {
    let mut args = serde_json::Map::new();
    args.insert("n".into(), 1.into());
    client
        .peer()
        .call_tool(CallToolRequestParams::new(name.to_string()).with_arguments(args))
        .await
}

fn text(result: &CallToolResult) -> String {
    result.content[0].as_text().unwrap().text.clone()
}

async fn next_list_changed(changed: &mut Notifications, what: &str) {
    changed
        .next(Duration::from_secs(10))
        .await
        .unwrap_or_else(|e| panic!("after {what}: {e}"));
}

// ----- tests -------------------------------------------------------------------------------------

#[tokio::test]
async fn federates_the_tools_of_enabled_ready_providers_with_the_callers_identity() {
    let h = McpHub::start().await;
    h.register(
        "alpha",
        &mcp_provider(&h.hub, "alpha", vec!["whoami", "bad name", "echo"]).await,
    );
    h.register("beta", &mcp_provider(&h.hub, "beta", vec!["whoami"]).await);
    h.register("gamma", &mcp_provider(&h.hub, "gamma", vec!["whoami"]).await);
    h.register("hang", &hanging_provider().await);
    h.register("nomcp", &plain_provider().await);
    h.directory
        .set_enabled(CLUSTER_DEV, &["alpha", "beta", "hang", "nomcp", "unregistered"]);
    h.directory.set_enabled(CLUSTER_OPS, &["gamma"]);

    let (client, _rx) = connect(&h.url("acme", "dev"), ALICE).await;
    let started = Instant::now();
    let tools = client.peer().list_all_tools().await.unwrap();
    let took = started.elapsed();
    let mut listed: Vec<(String, Option<String>, Option<String>)> = tools
        .iter()
        .map(|t| {
            (
                t.name.to_string(),
                t.title.clone(),
                t.description.as_ref().map(|d| d.to_string()),
            )
        })
        .collect();
    listed.sort();
    // "bad name" is left out, gamma is not enabled here, hang timed out, nomcp has no /mcp.
    assert_eq!(
        listed,
        vec![
            (
                "alpha__echo".to_string(),
                Some("echo — Alpha".to_string()),
                Some("echo description".to_string())
            ),
            (
                "alpha__whoami".to_string(),
                Some("whoami — Alpha".to_string()),
                Some("whoami description".to_string())
            ),
            (
                "beta__whoami".to_string(),
                Some("whoami — Beta".to_string()),
                Some("whoami description".to_string())
            ),
        ]
    );
    assert!(
        took < Duration::from_secs(5),
        "the hanging provider stalled tools/list for {took:?}"
    );

    // The call reaches beta with alice's verified identity in acme/dev, and no credentials.
    let result = call(&client, "beta__whoami").await.unwrap();
    assert_eq!(result.is_error, Some(false));
    let seen: Value = serde_json::from_str(&text(&result)).unwrap();
    assert_eq!(
        seen,
        json!({
            "tool": "whoami",
            "arguments": {"n": 1},
            "user": "alice",
            "org": "acme",
            "workspace": "dev",
            "cluster": CLUSTER_DEV,
            "authorization": null,
            "x-faros-user": "alice",
            "x-faros-workspace": "dev",
        })
    );

    // gamma is Ready but not enabled in acme/dev: not callable there.
    let err = call(&client, "gamma__whoami").await.unwrap_err().to_string();
    assert!(err.contains("not enabled in this workspace"), "{err}");
    // A provider failing is a tool error naming it, not a failure of the endpoint.
    let result = call(&client, "hang__anything").await.unwrap();
    assert_eq!(result.is_error, Some(true));
    assert!(
        text(&result).starts_with("provider \"hang\" tool \"anything\": "),
        "{}",
        text(&result)
    );

    // Instructions and the workspace resource.
    let info = client.peer().peer_info().unwrap();
    let instructions = info.instructions.clone().unwrap();
    assert!(
        instructions.ends_with("Federated providers:\n- Alpha (alpha__*): The alpha provider.\n- Beta (beta__*): The beta provider.\n- Hang (hang__*): The hang provider.\n- Nomcp (nomcp__*): The nomcp provider."),
        "{instructions}"
    );
    let resources = client.peer().list_all_resources().await.unwrap();
    assert_eq!(
        resources.iter().map(|r| r.uri.as_str()).collect::<Vec<_>>(),
        vec!["faros://workspace"]
    );
    let read = client
        .peer()
        .read_resource(ReadResourceRequestParams::new("faros://workspace"))
        .await
        .unwrap();
    let body = match &read.contents[0] {
        rmcp::model::ResourceContents::TextResourceContents { text, .. } => text.clone(),
        other => panic!("unexpected contents {other:?}"),
    };
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        (body["org"].clone(), body["workspace"].clone(), body["cluster"].clone()),
        (json!("acme"), json!("dev"), json!(CLUSTER_DEV))
    );
    let federated: Vec<(String, bool)> = body["providers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["name"].as_str().unwrap().to_string(),
                p["federated"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        federated,
        [
            ("alpha", true),
            ("beta", true),
            ("hang", true),
            ("nomcp", true),
            ("unregistered", false)
        ]
        .map(|(n, f)| (n.to_string(), f))
    );

    // The other workspace sees only its own provider.
    let (ops, _rx) = connect(&h.url("acme", "ops"), ALICE).await;
    assert_eq!(tool_names(&ops).await, vec!["gamma__whoami"]);

    let metrics = h.hub.metrics().encode();
    for want in [
        "faros_hub_api_mcp_tools{provider=\"alpha\"} 2",
        "faros_hub_api_mcp_calls_total{provider=\"beta\",outcome=\"ok\"} 1",
        "faros_hub_api_mcp_discovery_seconds_count{provider=\"hang\",outcome=\"timeout\"} 1",
        "faros_hub_api_mcp_discovery_seconds_count{provider=\"nomcp\",outcome=\"no_endpoint\"} 1",
    ] {
        assert!(metrics.contains(want), "{want} in\n{metrics}");
    }
    let _ = client.cancel().await;
    let _ = ops.cancel().await;
}

#[tokio::test]
async fn sessions_hear_when_readiness_or_bindings_change_the_tool_set() {
    let h = McpHub::start().await;
    h.register("alpha", &mcp_provider(&h.hub, "alpha", vec!["whoami"]).await);
    h.register("beta", &mcp_provider(&h.hub, "beta", vec!["whoami"]).await);
    h.beat("alpha");
    h.directory.set_enabled(CLUSTER_DEV, &["alpha", "beta"]);

    let (client, mut changed) = connect(&h.url("acme", "dev"), ALICE).await;
    assert_eq!(tool_names(&client).await, vec!["alpha__whoami", "beta__whoami"]);

    // alpha stops heartbeating: past the TTL it is not Ready and its tools go.
    h.clock.advance(Duration::from_secs(91));
    next_list_changed(&mut changed, "alpha went stale").await;
    assert_eq!(tool_names(&client).await, vec!["beta__whoami"]);
    let result = call(&client, "alpha__whoami").await.unwrap();
    assert_eq!(result.is_error, Some(true));
    assert!(text(&result).contains("not Ready"), "{}", text(&result));

    // It beats again: back.
    h.beat("alpha");
    next_list_changed(&mut changed, "alpha beat again").await;
    assert_eq!(tool_names(&client).await, vec!["alpha__whoami", "beta__whoami"]);

    // beta is disabled in the workspace (the hub announces binding changes).
    h.directory.set_enabled(CLUSTER_DEV, &["alpha"]);
    h.hub.state().tenancy.notify_bindings_changed();
    next_list_changed(&mut changed, "beta was disabled").await;
    assert_eq!(tool_names(&client).await, vec!["alpha__whoami"]);

    // A change elsewhere (another workspace's bindings) does not disturb this session.
    h.directory.set_enabled(CLUSTER_OPS, &["beta"]);
    h.hub.state().tenancy.notify_bindings_changed();
    // The provider leaving the catalog does, and is observed through the registry watch.
    h.hub.registry().remove("c-alpha", "alpha");
    next_list_changed(&mut changed, "alpha was deregistered").await;
    assert_eq!(tool_names(&client).await, Vec::<String>::new());
    assert!(!changed.try_next(), "exactly one list_changed per change");
    let _ = client.cancel().await;
    drop(h.fed);
}

#[tokio::test]
async fn membership_is_checked_before_mcp() {
    let h = McpHub::start().await;
    let http = http();
    let init = json!({
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"}
        }
    });
    let post = |url: String, token: Option<&'static str>| {
        let mut req = http
            .post(url)
            .header("accept", "application/json, text/event-stream")
            .json(&init);
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        async move {
            let resp = req.send().await.unwrap();
            let code = resp.status().as_u16();
            let ct = resp
                .headers()
                .get("content-type")
                .map(|v| v.to_str().unwrap().to_string())
                .unwrap_or_default();
            let body = resp.text().await.unwrap();
            (code, ct, body)
        }
    };
    for (what, ws, token, code, reason) in [
        ("no credentials", "dev", None, 401, "Unauthorized"),
        ("bad token", "dev", Some("garbage"), 401, "Unauthorized"),
        ("not a member", "dev", Some(BOB), 404, "NotFound"),
        ("no such workspace", "nope", Some(ALICE), 404, "NotFound"),
    ] {
        let (got, _, body) = post(h.url("acme", ws), token).await;
        let body: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(
            (got, body["kind"].as_str(), body["reason"].as_str()),
            (code, Some("Status"), Some(reason)),
            "{what}: {body}"
        );
    }
    // Members get an MCP session.
    let (code, ct, body) = post(h.url("acme", "ops"), Some(BOB)).await;
    assert_eq!(code, 200, "{body}");
    assert!(
        ct.starts_with("text/event-stream") || ct.starts_with("application/json"),
        "{ct}"
    );
    assert!(body.contains("\"serverInfo\""), "{body}");
}

#[tokio::test]
async fn a_session_belongs_to_its_workspace_and_caller() {
    let h = McpHub::start().await;
    h.directory.set_enabled(CLUSTER_OPS, &[]);
    // bob opens a session in acme/ops...
    let (client, _rx) = connect(&h.url("acme", "ops"), BOB).await;
    assert_eq!(tool_names(&client).await, Vec::<String>::new());
    // ...alice (also a member) cannot use it: the session id is unknown in her session space.
    let http = http();
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}});
    let session_id = {
        // Open one of bob's sessions by hand to learn an id.
        let resp = http
            .post(h.url("acme", "ops"))
            .bearer_auth(BOB)
            .header("accept", "application/json, text/event-stream")
            .json(&json!({
                "jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}
            }))
            .send()
            .await
            .unwrap();
        resp.headers()
            .get("mcp-session-id")
            .expect("a session id")
            .to_str()
            .unwrap()
            .to_string()
    };
    let resp = http
        .post(h.url("acme", "ops"))
        .bearer_auth(ALICE)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", &session_id)
        .header("mcp-protocol-version", "2025-06-18")
        .json(&list)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 404, "{}", resp.text().await.unwrap());
    let _ = client.cancel().await;
}

/// A client resuming a request's response stream (GET with `Last-Event-ID`) where that stream is
/// not held (its replica stopped; here: a stream that never was) is answered 405, the spec's answer
/// for "no event stream here", so rmcp's client fails the request instead of resuming forever; the
/// session itself goes on.
#[tokio::test]
async fn resuming_a_response_stream_this_replica_does_not_hold_is_405() {
    let h = McpHub::start().await;
    h.directory.set_enabled(CLUSTER_OPS, &[]);
    let http = http();
    let resp = http
        .post(h.url("acme", "ops"))
        .bearer_auth(BOB)
        .header("accept", "application/json, text/event-stream")
        .json(&json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}
        }))
        .send()
        .await
        .unwrap();
    let session_id = resp.headers()["mcp-session-id"].to_str().unwrap().to_string();
    let get = |last_event_id: &'static str| {
        http.get(h.url("acme", "ops"))
            .bearer_auth(BOB)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", &session_id)
            .header("mcp-protocol-version", "2025-06-18")
            .header("last-event-id", last_event_id)
            .send()
    };
    let resp = get("0/41").await.unwrap();
    assert_eq!(resp.status().as_u16(), 405, "{}", resp.text().await.unwrap());
    let resp = http
        .post(h.url("acme", "ops"))
        .bearer_auth(BOB)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", &session_id)
        .header("mcp-protocol-version", "2025-06-18")
        .json(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 202, "the session goes on");
}
