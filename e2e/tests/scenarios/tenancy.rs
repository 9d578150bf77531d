//! Who may do what: authentication, membership and isolation between tenants, on the real stack.
//!
//! Runs on every target.

use faros_e2e::eventually::eventually;
use faros_e2e::{Platform, WAIT, kubectl};
use reqwest::Method;
use serde_json::{Value, json};

async fn status(p: &Platform, method: Method, path: &str, token: Option<&str>, body: Option<Value>) -> u16 {
    p.call(method, path, token, body).await.unwrap().status
}

pub async fn run(p: &Platform) {
    p.provider_ready("quickstart").await.unwrap();
    let alice = p.add_user("alice").await.unwrap();
    let bob = p.add_user("bob").await.unwrap();
    let carol = p.add_user("carol").await.unwrap();
    let acme = p.unique("acme");
    let bobco = p.unique("bobco");

    // Anonymous: 401 everywhere, with a Status body.
    for (m, path) in [
        (Method::GET, "/api/me"),
        (Method::GET, "/api/orgs"),
        (Method::POST, "/api/orgs"),
        (
            Method::POST,
            "/api/orgs/acme/workspaces/dev/providers/quickstart/enable",
        ),
        (Method::GET, "/api/orgs/acme/workspaces/dev/kubeconfig"),
    ] {
        let r = p.call(m.clone(), path, None, None).await.unwrap();
        assert_eq!(r.status, 401, "{m} {path}");
        assert_eq!(r.body["kind"], "Status", "{m} {path}");
    }
    assert_eq!(status(p, Method::GET, "/api/me", Some("not-a-token"), None).await, 401);

    assert_eq!(
        status(p, Method::POST, "/api/orgs", Some(&alice), Some(json!({"name": acme}))).await,
        201
    );
    assert_eq!(
        status(
            p,
            Method::POST,
            &format!("/api/orgs/{acme}/workspaces"),
            Some(&alice),
            Some(json!({"name": "dev"}))
        )
        .await,
        201
    );
    // Names are DNS labels; duplicates conflict.
    assert_eq!(
        status(
            p,
            Method::POST,
            "/api/orgs",
            Some(&bob),
            Some(json!({"name": "Not_A_Label"}))
        )
        .await,
        400
    );
    assert_eq!(
        status(p, Method::POST, "/api/orgs", Some(&bob), Some(json!({"name": acme}))).await,
        409
    );

    // Bob is nobody in acme: every tenant route answers 404, exactly as for an organization that
    // does not exist, so names of others' organizations cannot be discovered by probing.
    let ws = &format!("/api/orgs/{acme}/workspaces/dev");
    for (m, path, body) in [
        (Method::GET, format!("/api/orgs/{acme}"), None),
        (Method::GET, format!("/api/orgs/{acme}/workspaces"), None),
        (
            Method::POST,
            format!("/api/orgs/{acme}/workspaces"),
            Some(json!({"name": "x"})),
        ),
        (Method::GET, format!("/api/orgs/{acme}/members"), None),
        (
            Method::PUT,
            format!("/api/orgs/{acme}/members/{}", bob.name),
            Some(json!({"role": "admin"})),
        ),
        (Method::GET, ws.to_string(), None),
        (Method::DELETE, ws.to_string(), None),
        (Method::GET, format!("{ws}/members"), None),
        (Method::GET, format!("{ws}/kubeconfig"), None),
        (Method::GET, format!("{ws}/providers/enabled"), None),
        (
            Method::POST,
            format!("{ws}/providers/quickstart/enable"),
            Some(json!({})),
        ),
        (Method::POST, format!("{ws}/providers/quickstart/disable"), None),
        (Method::DELETE, format!("/api/orgs/{acme}"), None),
    ] {
        let r = p.call(m.clone(), &path, Some(&bob), body).await.unwrap();
        assert_eq!(r.status, 404, "{m} {path}: {}", r.text);
    }
    assert_eq!(
        status(
            p,
            Method::GET,
            &format!("/api/orgs/{}", p.unique("nope")),
            Some(&bob),
            None
        )
        .await,
        404
    );
    let bobs_orgs = p.call(Method::GET, "/api/orgs", Some(&bob), None).await.unwrap();
    if p.fresh_users() {
        assert_eq!(bobs_orgs.body["items"], json!([]), "{}", bobs_orgs.text);
    } else {
        // A pre-provisioned user may still own what an earlier, failed run left: none of this run's.
        let items = bobs_orgs.body["items"].as_array().unwrap();
        assert!(!items.iter().any(|o| o["name"] == acme.as_str()), "{}", bobs_orgs.text);
    }

    // Bob becomes a member of dev: he can read, not enable.
    assert_eq!(
        status(
            p,
            Method::PUT,
            &format!("{ws}/members/{}", bob.name),
            Some(&alice),
            Some(json!({"role": "member"}))
        )
        .await,
        200
    );
    assert_eq!(status(p, Method::GET, ws, Some(&bob), None).await, 200);
    assert_eq!(
        status(
            p,
            Method::POST,
            &format!("{ws}/providers/quickstart/enable"),
            Some(&bob),
            Some(json!({}))
        )
        .await,
        403
    );
    // /api/me lists what the membership index holds: behind several replicas, the grant reaches the
    // others' watches a moment after it was written through one (docs/tenancy.md#decisions).
    let me = eventually("bob's /api/me to list dev", WAIT, || async {
        let me = p.call(Method::GET, "/api/me", Some(&bob), None).await?;
        Ok((me.body["organizations"][0]["workspaces"][0]["name"] == "dev").then_some(me))
    })
    .await
    .unwrap();
    assert_eq!(me.body["user"], bob.name.as_str());
    assert_eq!(
        me.body["organizations"][0]["workspaces"][0]["role"], "member",
        "{}",
        me.text
    );

    // Alice enables: undeclared claims are refused, request-supplied verbs ignored.
    let undeclared = p
        .call(
            Method::POST,
            &format!("{ws}/providers/quickstart/enable"),
            Some(&alice),
            Some(json!({"acceptedClaims": [{"group": "", "resource": "secrets"}]})),
        )
        .await
        .unwrap();
    assert_eq!(undeclared.status, 400, "{}", undeclared.text);
    assert!(undeclared.text.contains("secrets"), "{}", undeclared.text);
    let enabled = p
        .call(
            Method::POST,
            &format!("{ws}/providers/quickstart/enable"),
            Some(&alice),
            Some(json!({"acceptedClaims": [{"group": "", "resource": "configmaps", "verbs": ["*"]}]})),
        )
        .await
        .unwrap();
    assert_eq!(enabled.status, 200, "{}", enabled.text);
    let kubeconfig = p.tenant_kubeconfig(&acme, "dev", &alice).await.unwrap();
    let binding = kubectl(&kubeconfig, &["get", "apibinding", "quickstart", "-o", "json"], None)
        .await
        .unwrap();
    assert!(binding.status.success(), "{}", String::from_utf8_lossy(&binding.stderr));
    let binding: Value = serde_json::from_slice(&binding.stdout).unwrap();
    let claims = binding["spec"]["permissionClaims"].as_array().unwrap();
    let configmaps = claims.iter().find(|c| c["resource"] == "configmaps").unwrap();
    assert_ne!(
        configmaps["verbs"],
        json!(["*"]),
        "verbs come from the CatalogEntry: {configmaps}"
    );
    assert_eq!(configmaps["state"], "Accepted");

    // An org admin added later is an admin of the existing workspace, in the hub and in kcp.
    assert_eq!(
        status(
            p,
            Method::PUT,
            &format!("/api/orgs/{acme}/members/{}", carol.name),
            Some(&alice),
            Some(json!({"role": "admin"}))
        )
        .await,
        200
    );
    assert_eq!(status(p, Method::GET, ws, Some(&carol), None).await, 200);
    let carol_kc = p.tenant_kubeconfig(&acme, "dev", &carol).await.unwrap();
    let ns = kubectl(&carol_kc, &["get", "namespaces"], None).await.unwrap();
    assert!(ns.status.success(), "{}", String::from_utf8_lossy(&ns.stderr));
    // The last org admin cannot be removed while alone; with carol there, alice can step down.
    assert_eq!(
        status(
            p,
            Method::DELETE,
            &format!("/api/orgs/{acme}/members/{}", carol.name),
            Some(&carol),
            None
        )
        .await,
        204
    );
    // kcp authorizes from RBAC caches (on a sharded kcp, the org's bindings reach the workspace's
    // shard through the cache server), so a removal is enforced soon after the 204, not at once.
    faros_e2e::eventually("carol to lose the workspace", faros_e2e::WAIT, || async {
        Ok((status(p, Method::GET, ws, Some(&carol), None).await == 404).then_some(()))
    })
    .await
    .unwrap();
    assert_eq!(
        status(
            p,
            Method::DELETE,
            &format!("/api/orgs/{acme}/members/{}", alice.name),
            Some(&alice),
            None
        )
        .await,
        409
    );

    // Isolation: bob's own workspace is out of alice's reach, through kcp and through providers.
    assert_eq!(
        status(p, Method::POST, "/api/orgs", Some(&bob), Some(json!({"name": bobco}))).await,
        201
    );
    let bobs_ws = p
        .call(
            Method::POST,
            &format!("/api/orgs/{bobco}/workspaces"),
            Some(&bob),
            Some(json!({"name": "x"})),
        )
        .await
        .unwrap();
    assert_eq!(bobs_ws.status, 201, "{}", bobs_ws.text);
    let bob_cluster = bobs_ws.body["cluster"].as_str().unwrap();
    let server = format!("{}/clusters/{bob_cluster}", p.hub_url());
    let denied = kubectl(&kubeconfig, &["--server", &server, "get", "namespaces"], None)
        .await
        .unwrap();
    assert!(!denied.status.success());
    assert!(
        String::from_utf8_lossy(&denied.stderr).contains("Forbidden")
            || String::from_utf8_lossy(&denied.stderr).contains("forbidden"),
        "{}",
        String::from_utf8_lossy(&denied.stderr)
    );
    let proxied = p
        .call_with(
            Method::GET,
            "/services/providers/quickstart/api/hello",
            Some(&alice),
            None,
            &[("X-Faros-Org", bobco.as_str()), ("X-Faros-Workspace", "x")],
        )
        .await
        .unwrap();
    assert_eq!(proxied.status, 404, "{}", proxied.text);
    assert_eq!(
        status(
            p,
            Method::GET,
            &format!("/api/orgs/{bobco}/workspaces/x"),
            Some(&alice),
            None
        )
        .await,
        404
    );

    p.delete_org(&bobco, &bob).await.unwrap();
    p.delete_org(&acme, &alice).await.unwrap();
}
