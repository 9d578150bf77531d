//! The seed lifecycle end to end on the real stack: the quickstart provider registers, initialises
//! and heartbeats; a tenant creates an organization and workspace, enables quickstart with the
//! configmaps claim, uses its Greetings with kubectl through the hub, sees them through the
//! provider's backend, and disables it again. The provider's own workspace has no tenancy API.
//!
//! Runs on every target.

use faros_e2e::{Platform, WAIT, eventually, kubectl};
use reqwest::Method;
use serde_json::json;

const GREETING: &str = "apiVersion: quickstart.providers.faros.sh/v1alpha1\nkind: Greeting\nmetadata:\n  name: hi\n  namespace: default\nspec:\n  name: Ada\n";

pub async fn run(p: &Platform) {
    p.provider_ready("quickstart").await.unwrap();

    // The provider's workspace type does not extend universal: no tenancy API there, so the
    // provider cannot create workspaces (kcp serves `workspaces` only where tenancy.kcp.io is bound).
    let provider_ws = p
        .admin_kubeconfig_for(&faros_core::names::provider_workspace_path("quickstart"))
        .unwrap();
    let refused = kubectl(&provider_ws, &["get", "workspaces"], None).await.unwrap();
    assert!(!refused.status.success(), "the provider workspace serves workspaces");
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("the server doesn't have a resource type \"workspaces\""),
        "{stderr}"
    );
    let alice = p.add_user("alice").await.unwrap();
    // Heartbeats are accepted: a provider that never beat also counts as Ready, so Ready alone
    // would not show that the hub recognises the provider's ServiceAccount (on real kcp it once
    // did not: the cluster-name extra has kcp's own key).
    eventually("quickstart's first accepted heartbeat", WAIT, || async {
        let r = p.call(Method::GET, "/api/providers", Some(&alice), None).await?;
        let beat = r.body["items"]
            .as_array()
            .and_then(|items| items.iter().find(|i| i["name"] == "quickstart"))
            .is_some_and(|q| q["lastHeartbeat"].is_string());
        Ok(beat.then_some(()))
    })
    .await
    .unwrap();
    let acme = p.unique("acme");

    // Organization and workspace through the REST API.
    let org = p
        .call(
            Method::POST,
            "/api/orgs",
            Some(&alice),
            Some(json!({"name": acme, "displayName": "Acme"})),
        )
        .await
        .unwrap();
    assert_eq!(org.status, 201, "{}", org.text);
    assert_eq!(org.body["role"], "admin");
    let ws = p
        .call(
            Method::POST,
            &format!("/api/orgs/{acme}/workspaces"),
            Some(&alice),
            Some(json!({"name": "dev"})),
        )
        .await
        .unwrap();
    assert_eq!(ws.status, 201, "{}", ws.text);
    let cluster = ws.body["cluster"].as_str().unwrap().to_string();

    // Enable with the configmaps claim: Bound within the wait.
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
    assert_eq!(enabled.body["phase"], "Bound");
    let list = p
        .call(
            Method::GET,
            &format!("/api/orgs/{acme}/workspaces/dev/providers/enabled"),
            Some(&alice),
            None,
        )
        .await
        .unwrap();
    assert_eq!(list.status, 200, "{}", list.text);
    assert!(list.text.contains("quickstart"), "{}", list.text);

    // kubectl with the kubeconfig the hub hands out: through the hub's pass-through, as alice.
    let kubeconfig = p.tenant_kubeconfig(&acme, "dev", &alice).await.unwrap();
    let kc_text = std::fs::read_to_string(&kubeconfig).unwrap();
    assert!(
        kc_text.contains(&format!("{}/clusters/{cluster}", p.hub_url())),
        "{kc_text}"
    );
    let empty = kubectl(&kubeconfig, &["get", "greetings", "-A"], None).await.unwrap();
    assert!(empty.status.success(), "{}", String::from_utf8_lossy(&empty.stderr));
    let created = kubectl(&kubeconfig, &["create", "-f", "-"], Some(GREETING))
        .await
        .unwrap();
    assert!(created.status.success(), "{}", String::from_utf8_lossy(&created.stderr));

    // The provider's controller answers through the virtual workspace.
    eventually("the provider to reply to the Greeting", WAIT, || async {
        let out = kubectl(
            &kubeconfig,
            &[
                "get",
                "greeting",
                "hi",
                "-n",
                "default",
                "-o",
                "jsonpath={.status.reply}",
            ],
            None,
        )
        .await?;
        let reply = String::from_utf8_lossy(&out.stdout).to_string();
        Ok((reply == "Hello, Ada!").then_some(()))
    })
    .await
    .unwrap();

    // The provider's backend, through the hub, in alice's workspace: it lists the greeting and sees
    // the verified identity.
    let tenant = [("X-Faros-Org", acme.as_str()), ("X-Faros-Workspace", "dev")];
    let greetings = p
        .call_with(
            Method::GET,
            "/services/providers/quickstart/api/greetings",
            Some(&alice),
            None,
            &tenant,
        )
        .await
        .unwrap();
    assert_eq!(greetings.status, 200, "{}", greetings.text);
    assert!(greetings.text.contains("Ada"), "{}", greetings.text);
    let hello = p
        .call_with(
            Method::GET,
            "/services/providers/quickstart/api/hello",
            Some(&alice),
            None,
            &tenant,
        )
        .await
        .unwrap();
    assert_eq!(hello.status, 200, "{}", hello.text);
    assert_eq!(hello.body["user"], alice.name.as_str());
    assert_eq!(hello.body["org"], acme.as_str());
    assert_eq!(hello.body["workspace"], "dev");
    assert_eq!(hello.body["cluster"], cluster.as_str());
    assert!(
        !hello.text.contains(&alice.token),
        "the provider must never see the caller's token"
    );

    // Disable: the binding goes, and with it the greetings and the API.
    let disabled = p
        .call(
            Method::POST,
            &format!("/api/orgs/{acme}/workspaces/dev/providers/quickstart/disable"),
            Some(&alice),
            None,
        )
        .await
        .unwrap();
    assert!([202, 204].contains(&disabled.status), "{}", disabled.text);
    eventually("quickstart to be gone from the workspace", WAIT, || async {
        let r = p
            .call(
                Method::POST,
                &format!("/api/orgs/{acme}/workspaces/dev/providers/quickstart/disable"),
                Some(&alice),
                None,
            )
            .await?;
        Ok((r.status == 204).then_some(()))
    })
    .await
    .unwrap();
    eventually("greetings to leave discovery", WAIT, || async {
        let out = kubectl(&kubeconfig, &["api-resources", "-o", "name"], None).await?;
        let names = String::from_utf8_lossy(&out.stdout).to_string();
        Ok((out.status.success() && !names.contains("greetings")).then_some(()))
    })
    .await
    .unwrap();
    let gone = kubectl(&kubeconfig, &["get", "greetings", "-A"], None).await.unwrap();
    assert!(!gone.status.success(), "greetings must be gone after Disable");

    p.delete_org(&acme, &alice).await.unwrap();
}
