//! MCP federation on the real stack: quickstart's tools appear in the workspaces that enabled it,
//! act in that workspace only, and nowhere else.
//!
//! Runs on every target.

use faros_e2e::{Platform, WAIT, eventually, kubectl};
use faros_test_support::mcp_client;
use reqwest::Method;
use rmcp::model::CallToolRequestParams;
use serde_json::json;

async fn tool_names(client: &mcp_client::Client) -> Vec<String> {
    mcp_client::tool_names(client).await.unwrap()
}

async fn connect(p: &Platform, org: &str, ws: &str, token: &str) -> mcp_client::Client {
    let url = p.hub(&faros_core::names::mcp_path(org, ws));
    mcp_client::connect(p.http.clone(), &url, token).await.unwrap().0
}

fn text_of(result: &rmcp::model::CallToolResult) -> String {
    serde_json::to_string(&result.content).unwrap()
}

pub async fn run(p: &Platform) {
    p.provider_ready("quickstart").await.unwrap();
    let alice = p.add_user("alice").await.unwrap();
    let bob = p.add_user("bob").await.unwrap();
    let acme = p.unique("acme");
    let workspaces = format!("/api/orgs/{acme}/workspaces");
    for (path, name) in [
        ("/api/orgs", acme.as_str()),
        (workspaces.as_str(), "dev"),
        (workspaces.as_str(), "ops"),
    ] {
        let r = p
            .call(Method::POST, path, Some(&alice), Some(json!({"name": name})))
            .await
            .unwrap();
        assert_eq!(r.status, 201, "{path} {name}: {}", r.text);
    }
    let enabled = p
        .enable(
            &alice,
            &acme,
            "dev",
            "quickstart",
            json!([{"group": "", "resource": "configmaps"}]),
        )
        .await
        .unwrap();
    assert_eq!(enabled.status, 200, "{}", enabled.text);

    // dev lists quickstart's tools; create then list acts in dev.
    let dev = connect(p, &acme, "dev", &alice).await;
    let instructions = dev.peer_info().and_then(|i| i.instructions.clone()).unwrap_or_default();
    assert!(instructions.contains("quickstart"), "{instructions}");
    assert_eq!(
        tool_names(&dev).await,
        ["quickstart__create_greeting", "quickstart__list_greetings"]
    );
    let created = dev
        .peer()
        .call_tool(
            CallToolRequestParams::new("quickstart__create_greeting")
                .with_arguments(json!({"name": "Grace"}).as_object().unwrap().clone()),
        )
        .await
        .unwrap();
    assert_ne!(created.is_error, Some(true), "{}", text_of(&created));
    let listed = dev
        .peer()
        .call_tool(CallToolRequestParams::new("quickstart__list_greetings"))
        .await
        .unwrap();
    assert!(text_of(&listed).contains("Grace"), "{}", text_of(&listed));
    let dev_kc = p.tenant_kubeconfig(&acme, "dev", &alice).await.unwrap();
    eventually("the MCP-created greeting to be visible with kubectl", WAIT, || async {
        let out = kubectl(
            &dev_kc,
            &[
                "get",
                "greetings",
                "-n",
                "default",
                "-o",
                "jsonpath={.items[*].spec.name}",
            ],
            None,
        )
        .await?;
        Ok(String::from_utf8_lossy(&out.stdout).contains("Grace").then_some(()))
    })
    .await
    .unwrap();

    // ops did not enable quickstart: no tools, no greetings API.
    let ops = connect(p, &acme, "ops", &alice).await;
    assert_eq!(tool_names(&ops).await, Vec::<String>::new());
    let ops_kc = p.tenant_kubeconfig(&acme, "ops", &alice).await.unwrap();
    let none = kubectl(&ops_kc, &["get", "greetings", "-A"], None).await.unwrap();
    assert!(!none.status.success(), "ops has no greetings API");

    // Bob is not a member: 404 (as for a workspace that does not exist) before any MCP happens,
    // with or without a session.
    let denied = p
        .call_with(
            Method::POST,
            &faros_core::names::mcp_path(&acme, "dev"),
            Some(&bob),
            Some(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})),
            &[("Accept", "application/json, text/event-stream")],
        )
        .await
        .unwrap();
    assert_eq!(denied.status, 404, "{}", denied.text);
    let anonymous = p
        .call(
            Method::POST,
            &faros_core::names::mcp_path(&acme, "dev"),
            None,
            Some(json!({})),
        )
        .await
        .unwrap();
    assert_eq!(anonymous.status, 401);

    dev.cancel().await.unwrap();
    ops.cancel().await.unwrap();
    p.delete_org(&acme, &alice).await.unwrap();
}
