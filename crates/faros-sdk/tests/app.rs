//! The app builder's HTTP surface over a real listener: open health and metrics, routes and MCP
//! tools behind the hub's identity, a per-tenant `Caller` only once the virtual workspace is known,
//! and tools declared as plain async functions (typed input, `Status` errors as tool errors).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use axum::Router;
use axum::routing::get;
use faros_core::client::ClientFactory;
use faros_core::identity::{self, Claims, Identity, Jwks, SigningKey};
use faros_core::names;
use faros_core::status::Status;
use faros_sdk::App;
use faros_sdk::app::{Caller, Tenants};
use faros_sdk::endpoints::Endpoints;
use faros_sdk::identity::IdentityVerifier;
use faros_sdk::tools::Tool;
use pretty_assertions::assert_eq;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Echo {
    /// What to say back.
    text: String,
}

fn app() -> App {
    App::new("notes", "1.2.3")
        .routes(Router::new().route("/api/me", get(|c: Caller| async move { c.who.user.clone() })))
        .tool(Tool::no_input("whoami", "Who is calling.", |c: Caller| async move {
            Ok(format!("{} in {}/{}", c.who.user, c.who.org, c.who.workspace))
        }))
        .tool(Tool::new("echo", "Says it back.", |_: Caller, e: Echo| async move {
            Ok(e.text)
        }))
        .tool(Tool::no_input("refuse", "Always fails.", |_: Caller| async move {
            Err::<(), _>(Status::bad_request("no, never"))
        }))
}

fn assertion(key: &SigningKey) -> String {
    let who = Identity {
        user: "alice".into(),
        groups: vec![],
        org: "acme".into(),
        workspace: "dev".into(),
        cluster: "c1".into(),
    };
    key.sign(&Claims::new(who, "notes", identity::now_unix(), identity::DEFAULT_TTL))
        .unwrap()
}

async fn mcp_client(url: &str, token: &str) -> rmcp::service::RunningService<rmcp::RoleClient, ()> {
    let headers = [(
        http::HeaderName::from_static(names::HEADER_ASSERTION),
        http::HeaderValue::from_str(token).unwrap(),
    )]
    .into_iter()
    .collect();
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url.to_string()).custom_headers(headers),
    );
    ().serve(transport).await.unwrap()
}

#[tokio::test]
async fn routes_and_tools_see_the_caller_once_the_virtual_workspace_is_known() {
    let key = SigningKey::generate("hub").unwrap();
    let verifier = Arc::new(IdentityVerifier::with_jwks(
        "notes",
        Jwks {
            keys: vec![key.public_jwk()],
        },
    ));
    let tenants = Tenants::new("notes");
    let router = app().router(verifier, tenants.clone(), Default::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await });
    let http = reqwest::Client::new();
    let token = assertion(&key);

    let health = http.get(format!("{base}/healthz")).send().await.unwrap();
    assert_eq!(health.text().await.unwrap(), r#"{"status":"ok"}"#);
    let metrics = http
        .get(format!("{base}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(metrics.contains("faros_provider_reconciles_total 0\n"), "{metrics}");
    let anonymous = http.get(format!("{base}/api/me")).send().await.unwrap();
    assert_eq!(anonymous.status(), 401);
    let early = http
        .get(format!("{base}/api/me"))
        .header(names::HEADER_ASSERTION, &token)
        .send()
        .await
        .unwrap();
    assert_eq!(early.status(), 503);
    assert!(
        early
            .text()
            .await
            .unwrap()
            .contains("no workspace has enabled notes yet")
    );
    let client = mcp_client(&format!("{base}/mcp"), &token).await;
    let refused = client.peer().call_tool(CallToolRequestParams::new("whoami")).await;
    assert!(format!("{:?}", refused.unwrap_err()).contains("no workspace has enabled notes yet"));

    // kcp published the virtual workspace: clients are built for the caller's cluster (no IO yet).
    let factory = ClientFactory::new(kube::Config::new("http://127.0.0.1:9".parse().unwrap())).unwrap();
    tenants
        .set(
            factory,
            Endpoints::fixed(vec!["http://127.0.0.1:9/services/apiexport/x/notes".into()]),
            None,
        )
        .await;
    let me = http
        .get(format!("{base}/api/me"))
        .header(names::HEADER_ASSERTION, &token)
        .send()
        .await
        .unwrap();
    assert_eq!(me.text().await.unwrap(), "alice");

    let tools = client.peer().list_all_tools().await.unwrap();
    let listed: Vec<String> = tools.iter().map(|t| t.name.to_string()).collect();
    assert_eq!(listed, vec!["echo", "refuse", "whoami"]);
    let echo = tools.iter().find(|t| t.name == "echo").unwrap();
    assert_eq!(echo.input_schema["properties"]["text"]["type"], "string");
    assert_eq!(echo.input_schema["required"], serde_json::json!(["text"]));
    let text = |r: rmcp::model::CallToolResult| r.content[0].as_text().unwrap().text.clone();
    let who = client
        .peer()
        .call_tool(CallToolRequestParams::new("whoami"))
        .await
        .unwrap();
    assert_eq!(text(who), r#""alice in acme/dev""#);
    let args = serde_json::json!({"text": "hi"}).as_object().cloned().unwrap();
    let echoed = client
        .peer()
        .call_tool(CallToolRequestParams::new("echo").with_arguments(args))
        .await
        .unwrap();
    assert_eq!(text(echoed), r#""hi""#);
    let refused = client
        .peer()
        .call_tool(CallToolRequestParams::new("refuse"))
        .await
        .unwrap();
    assert_eq!(refused.is_error, Some(true));
    assert_eq!(text(refused), "no, never");
    let _ = client.cancel().await;
}
