//! Attacks on the real stack, as regression tests (docs/security.md, "Earlier findings and their
//! tests"): what a ServiceAccount of one workspace, a provider's ServiceAccount and a removed org
//! creator can do through the hub, next to what kcp itself lets them do.
//!
//! Runs on every target: the answers come from kcp's SubjectAccessReviews, so the embedded kcp and
//! real kcp must give the same ones.

use faros_e2e::{Platform, kubectl};
use reqwest::Method;
use serde_json::{Value, json};

async fn status(p: &Platform, method: Method, path: &str, token: &str, body: Option<Value>) -> (u16, String) {
    let r = p.call(method, path, Some(token), body).await.unwrap();
    (r.status, r.text)
}

/// Grants ServiceAccount `default/<sa>` of the workspace `kubeconfig` reaches the workspace admin
/// role, with RBAC as a tenant writes it by hand.
async fn grant_local_admin(kubeconfig: &std::path::Path, sa: &str) {
    let binding = format!(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {{name: {sa}-admin}}\n\
         roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: {}}}\n\
         subjects: [{{kind: ServiceAccount, name: {sa}, namespace: default}}]\n",
        faros_core::names::WORKSPACE_ADMIN_ROLE
    );
    let out = kubectl(kubeconfig, &["apply", "-f", "-"], Some(&binding))
        .await
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

pub async fn run(p: &Platform) {
    p.provider_ready("quickstart").await.unwrap();
    let alice = p.add_user("alice").await.unwrap();
    let carol = p.add_user("carol").await.unwrap();
    let eve = p.add_user("eve").await.unwrap();
    let acme = p.unique("acme");
    let evilco = p.unique("evilco");

    // acme/dev, with its own automation ServiceAccount `default/deployer` made admin by RBAC.
    for (path, body) in [
        ("/api/orgs".to_string(), json!({"name": acme})),
        (format!("/api/orgs/{acme}/workspaces"), json!({"name": "dev"})),
    ] {
        let (code, text) = status(p, Method::POST, &path, &alice, Some(body)).await;
        assert_eq!(code, 201, "{path}: {text}");
    }
    let acme_kc = p.tenant_kubeconfig(&acme, "dev", &alice).await.unwrap();
    grant_local_admin(&acme_kc, "deployer").await;
    let acme_sa = p.service_account_token(&acme_kc, "deployer").await.unwrap();

    // Eve, in no organization, makes her own org and a ServiceAccount of the same name there.
    for (path, body) in [
        ("/api/orgs".to_string(), json!({"name": evilco})),
        (format!("/api/orgs/{evilco}/workspaces"), json!({"name": "dev"})),
    ] {
        let (code, text) = status(p, Method::POST, &path, &eve, Some(body)).await;
        assert_eq!(code, 201, "{path}: {text}");
    }
    let evil_kc = p.tenant_kubeconfig(&evilco, "dev", &eve).await.unwrap();
    grant_local_admin(&evil_kc, "deployer").await;
    let evil_sa = p.service_account_token(&evil_kc, "deployer").await.unwrap();

    // kcp refuses eve's ServiceAccount in acme/dev: the baseline the hub must match.
    let dev = p
        .call(
            Method::GET,
            &format!("/api/orgs/{acme}/workspaces/dev"),
            Some(&alice),
            None,
        )
        .await
        .unwrap();
    let dev_cluster = dev.body["cluster"].as_str().unwrap().to_string();
    let direct = p
        .call(
            Method::GET,
            &format!("/clusters/{dev_cluster}/api/v1/namespaces/default/configmaps"),
            Some(&evil_sa),
            None,
        )
        .await
        .unwrap();
    assert_eq!(direct.status, 403, "kcp itself: {}", direct.text);

    // Through the hub, eve's ServiceAccount is nobody in acme (it was admin of every workspace
    // that bound a `default/deployer`), and the routes people own are closed to ServiceAccounts.
    let ws = format!("/api/orgs/{acme}/workspaces/dev");
    let me = p.call(Method::GET, "/api/me", Some(&evil_sa), None).await.unwrap();
    assert_eq!(me.status, 200, "{}", me.text);
    assert_eq!(me.body["user"], "system:serviceaccount:default:deployer");
    for (m, path, body, want) in [
        (Method::GET, format!("/api/orgs/{acme}"), None, 404),
        (Method::GET, ws.clone(), None, 404),
        (Method::GET, format!("{ws}/members"), None, 404),
        (Method::GET, format!("{ws}/kubeconfig"), None, 404),
        (Method::GET, format!("{ws}/providers/enabled"), None, 404),
        (
            Method::POST,
            format!("{ws}/providers/quickstart/enable"),
            Some(json!({})),
            404,
        ),
        (Method::POST, format!("{ws}/providers/quickstart/disable"), None, 404),
        (Method::DELETE, ws.clone(), None, 404),
        (
            Method::POST,
            faros_core::names::mcp_path(&acme, "dev"),
            Some(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})),
            404,
        ),
        // The exploit of the review: make eve admin of acme/dev.
        (
            Method::PUT,
            format!("{ws}/members/{}", eve.name),
            Some(json!({"role": "admin"})),
            403,
        ),
        (
            Method::PUT,
            format!("/api/orgs/{acme}/members/{}", eve.name),
            Some(json!({"role": "admin"})),
            403,
        ),
        (
            Method::DELETE,
            format!("/api/orgs/{acme}/members/{}", alice.name),
            None,
            403,
        ),
        (Method::DELETE, format!("/api/orgs/{acme}"), None, 403),
        (
            Method::POST,
            "/api/orgs".to_string(),
            Some(json!({"name": p.unique("sa-org")})),
            403,
        ),
    ] {
        let r = p
            .call_with(
                m.clone(),
                &path,
                Some(&evil_sa),
                body,
                &[("Accept", "application/json, text/event-stream")],
            )
            .await
            .unwrap();
        assert_eq!(r.status, want, "eve's ServiceAccount: {m} {path}: {}", r.text);
        assert_eq!(r.body["kind"], "Status", "{m} {path}");
    }
    // Nor through the backend proxy, asserting acme/dev to a provider.
    let proxied = p
        .call_with(
            Method::GET,
            "/services/providers/quickstart/api/greetings",
            Some(&evil_sa),
            None,
            &[("X-Faros-Org", acme.as_str()), ("X-Faros-Workspace", "dev")],
        )
        .await
        .unwrap();
    assert_eq!(proxied.status, 404, "{}", proxied.text);
    let listed = p.call(Method::GET, "/api/orgs", Some(&evil_sa), None).await.unwrap();
    assert!(
        !listed.text.contains(&acme),
        "acme is listed to eve's ServiceAccount: {}",
        listed.text
    );

    // acme's own deployer is what its RBAC says (kcp lets it in), but still no owner of people's things.
    assert_eq!(status(p, Method::GET, &ws, &acme_sa, None).await.0, 200);
    assert_eq!(
        status(p, Method::GET, &format!("{ws}/providers/enabled"), &acme_sa, None)
            .await
            .0,
        200
    );
    let (code, text) = status(
        p,
        Method::PUT,
        &format!("{ws}/members/{}", eve.name),
        &acme_sa,
        Some(json!({"role": "member"})),
    )
    .await;
    assert_eq!(code, 403, "{text}");
    assert!(
        text.contains("ServiceAccount default/deployer cannot manage memberships"),
        "{text}"
    );

    // A provider's ServiceAccount (the same user name for every provider) reads the catalog only.
    let provider_sa = p.provider_token("quickstart").await.unwrap();
    assert_eq!(
        status(p, Method::GET, "/api/providers", &provider_sa, None).await.0,
        200
    );
    let (code, text) = status(
        p,
        Method::POST,
        "/api/orgs",
        &provider_sa,
        Some(json!({"name": p.unique("prov")})),
    )
    .await;
    assert_eq!(code, 403, "{text}");
    assert!(text.contains("cannot create organizations"), "{text}");
    assert_eq!(status(p, Method::GET, &ws, &provider_sa, None).await.0, 404);
    assert_eq!(
        status(p, Method::DELETE, &format!("/api/orgs/{evilco}"), &provider_sa, None)
            .await
            .0,
        403
    );

    // The backend proxy asserts a workspace only to providers enabled there. Alice is admin of
    // acme/dev, which has not enabled quickstart.
    let not_enabled = p
        .call_with(
            Method::GET,
            "/services/providers/quickstart/api/greetings",
            Some(&alice),
            None,
            &[("X-Faros-Org", acme.as_str()), ("X-Faros-Workspace", "dev")],
        )
        .await
        .unwrap();
    assert_eq!(not_enabled.status, 403, "{}", not_enabled.text);
    assert!(not_enabled.text.contains("not enabled"), "{}", not_enabled.text);

    // A creator the org's admins removed does not come back by repeating the creation.
    let (code, text) = status(
        p,
        Method::PUT,
        &format!("/api/orgs/{acme}/members/{}", carol.name),
        &alice,
        Some(json!({"role": "admin"})),
    )
    .await;
    assert_eq!(code, 200, "{text}");
    let (code, text) = status(
        p,
        Method::DELETE,
        &format!("/api/orgs/{acme}/members/{}", alice.name),
        &carol,
        None,
    )
    .await;
    assert_eq!(code, 204, "{text}");
    let (code, text) = status(p, Method::POST, "/api/orgs", &alice, Some(json!({"name": acme}))).await;
    assert_eq!(code, 409, "{text}");
    faros_e2e::eventually("alice to be out of acme", faros_e2e::WAIT, || async {
        let r = p
            .call(Method::GET, &format!("/api/orgs/{acme}"), Some(&alice), None)
            .await?;
        Ok((r.status == 404).then_some(()))
    })
    .await
    .unwrap();
    // Repeating one's own creation, still admin, is idempotent.
    let (code, text) = status(p, Method::POST, "/api/orgs", &eve, Some(json!({"name": evilco}))).await;
    assert_eq!(code, 200, "{text}");

    p.delete_org(&evilco, &eve).await.unwrap();
    p.delete_org(&acme, &carol).await.unwrap();
}
