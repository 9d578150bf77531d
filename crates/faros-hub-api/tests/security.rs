//! The security regression suite: one test per attack of docs/security.md, each written as the
//! attacker's request and the refusal the hub answers with. Test names are `<door>_<what is
//! refused>`, with the doors of docs/security.md. Real HTTP servers throughout: the hub, provider
//! upstreams, a kcp stand-in that keeps Secrets (to count what the hub stores and reads), and the
//! test identity provider `e2e/oidc` (needs `npm ci --prefix e2e/oidc`) where an ID token or a
//! sign-in is needed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use base64::Engine;
use common::*;
use faros_core::catalog::{BackendSpec, CatalogEntry, CatalogEntrySpec, UiSpec};
use faros_core::names::COMPONENTS_GROUP;
use faros_hub_api::auth::OidcSettings;
use faros_hub_api::auth::tokenreview::{ReviewedUser, StaticReviewer};
use faros_hub_api::catalog::record::BackendHealth;
use faros_hub_api::catalog::registry::Candidate;
use faros_hub_api::mcp::upstream::{McpClientError, McpClients};
use faros_hub_api::proxy::UpstreamPolicy;
use faros_test_support::oidc::{Idp, IdpClient, IdpUser, Ttls};
use serde_json::{Value, json};

/// A faros component's kcp token (the reconciler's, say): kcp's TokenReview knows it.
const COMPONENT: &str = "component-token-of-the-reconciler";
const CALLBACK: &str = "/api/session/oidc/callback";
const SESSION_COOKIE: &str = "__Host-faros-session";
const STATE_COOKIE: &str = "__Secure-faros-oidc";
/// Where every provider's kubeconfig is: what a component's token would read through the hub.
const PROVIDER_SECRETS: &str = "/clusters/root:faros:system:providers/api/v1/namespaces/default/secrets";

/// The TokenReview of [`TestHub`] plus a component's token.
fn reviewer() -> StaticReviewer {
    StaticReviewer::default()
        .with(
            "*",
            ALICE,
            ReviewedUser {
                username: "alice".into(),
                groups: vec!["devs".into()],
                ..Default::default()
            },
        )
        .with(
            "*",
            COMPONENT,
            ReviewedUser {
                username: "faros-hub-reconciler".into(),
                groups: vec![COMPONENTS_GROUP.into()],
                ..Default::default()
            },
        )
        .with("*", SA_Q, sa_user(CLUSTER_Q))
}

// ----- a kcp stand-in ---------------------------------------------------------------------------

/// Keeps the Secrets the hub writes (its records) and answers everything else with an echo, counting
/// every request: what the hub stores and reads on an attacker's behalf is visible here.
#[derive(Default)]
struct Kcp {
    secrets: Mutex<BTreeMap<String, Value>>,
    seen: Mutex<Vec<(String, String)>>,
}

impl Kcp {
    async fn start() -> (Arc<Self>, String) {
        let kcp = Arc::new(Self::default());
        let addr = serve(Router::new().fallback(kcp_handler).with_state(kcp.clone())).await;
        (kcp, format!("http://{addr}"))
    }

    /// Requests of `method` whose path contains `part`.
    fn count(&self, method: &str, part: &str) -> usize {
        let seen = self.seen.lock().unwrap();
        seen.iter().filter(|(m, p)| m == method && p.contains(part)).count()
    }

    /// Stored Secrets whose name starts with `prefix`.
    fn stored(&self, prefix: &str) -> usize {
        self.secrets
            .lock()
            .unwrap()
            .keys()
            .filter(|n| n.starts_with(prefix))
            .count()
    }
}

fn kube_status(code: u16, reason: &str) -> Response {
    let body = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "reason": reason, "code": code});
    (http::StatusCode::from_u16(code).unwrap(), axum::Json(body)).into_response()
}

async fn kcp_handler(State(kcp): State<Arc<Kcp>>, req: Request) -> Response {
    let (method, path) = (req.method().to_string(), req.uri().path().to_string());
    kcp.seen.lock().unwrap().push((method.clone(), path.clone()));
    let Some((_, rest)) = path.split_once("/secrets") else {
        return axum::Json(json!({"kind": "Echo", "path": path})).into_response();
    };
    let name = rest.trim_start_matches('/').to_string();
    match (method.as_str(), name.is_empty()) {
        ("POST", true) => {
            let body = axum::body::to_bytes(req.into_body(), usize::MAX).await.unwrap();
            let mut secret: Value = serde_json::from_slice(&body).unwrap();
            secret["metadata"]["resourceVersion"] = "1".into();
            secret["metadata"]["uid"] = "u".into();
            let name = secret["metadata"]["name"].as_str().unwrap().to_string();
            let mut secrets = kcp.secrets.lock().unwrap();
            if secrets.contains_key(&name) {
                return kube_status(409, "AlreadyExists");
            }
            secrets.insert(name, secret.clone());
            (http::StatusCode::CREATED, axum::Json(secret)).into_response()
        }
        ("GET", false) => match kcp.secrets.lock().unwrap().get(&name) {
            Some(s) => axum::Json(s.clone()).into_response(),
            None => kube_status(404, "NotFound"),
        },
        ("DELETE", false) => match kcp.secrets.lock().unwrap().remove(&name) {
            Some(_) => axum::Json(json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
                "status": "Success"}))
            .into_response(),
            None => kube_status(404, "NotFound"),
        },
        ("GET", true) => {
            let items: Vec<Value> = kcp.secrets.lock().unwrap().values().cloned().collect();
            axum::Json(json!({"kind": "SecretList", "apiVersion": "v1", "metadata": {}, "items": items}))
                .into_response()
        }
        _ => kube_status(405, "MethodNotAllowed"),
    }
}

// ----- hubs and helpers -------------------------------------------------------------------------

/// A hub on `kcp` with the component-aware TokenReview; `tweak` as [`TestHub::start`]'s.
async fn hub(kcp: &str, tweak: impl FnOnce(&mut faros_hub_api::Config)) -> TestHub {
    TestHub::start(kcp, |config| {
        config.token_reviewer = Some(Arc::new(reviewer()));
        tweak(config);
    })
    .await
}

fn entry(name: &str, ui: Option<String>, backend: Option<String>) -> CatalogEntry {
    CatalogEntry::new(
        name,
        CatalogEntrySpec {
            display_name: name.to_uppercase(),
            ui: ui.map(|u| UiSpec {
                url: Some(u),
                ..Default::default()
            }),
            backend: backend.map(|b| BackendSpec {
                url: b,
                health_path: None,
            }),
            ..Default::default()
        },
    )
}

/// Registers provider `name` and, when its endpoints were accepted, marks its backend healthy.
fn register(hub: &TestHub, name: &str, ui: Option<String>, backend: Option<String>) {
    hub.registry().upsert(Candidate {
        cluster: format!("c-{name}"),
        path: Some(format!("root:faros:providers:{name}")),
        source: "vw".into(),
        entry: entry(name, ui, backend),
    });
    let p = hub.registry().get(name).unwrap();
    if let Some(backend) = p.endpoints.backend.clone() {
        hub.registry()
            .set_health(name, &backend.to_string(), BackendHealth::Healthy);
    }
}

async fn status_of(resp: reqwest::Response) -> (u16, Value) {
    let code = resp.status().as_u16();
    (code, resp.json().await.unwrap_or(Value::Null))
}

/// Asserts a Kubernetes Status answer with `code`.
fn assert_status(got: &(u16, Value), code: u16, what: &str) {
    assert_eq!(got.0, code, "{what}: {}", got.1);
    assert_eq!(got.1["kind"], "Status", "{what}: {}", got.1);
}

/// `POST /api/session {"token"}` as the portal sends it: the `Set-Cookie` value on success.
async fn sign_in_with_token(hub: &TestHub, token: &str) -> Result<String, (u16, Value)> {
    let resp = http()
        .post(hub.url("/api/session"))
        .header("origin", format!("http://{}", hub.addr))
        .header("x-faros-csrf", "1")
        .json(&json!({ "token": token }))
        .send()
        .await
        .unwrap();
    if resp.status() != 201 {
        return Err(status_of(resp).await);
    }
    let set = resp.headers()["set-cookie"].to_str().unwrap().to_string();
    Ok(set.split(';').next().unwrap().to_string())
}

// ----- api, kcp pass-through, session, backend proxy, mcp: component credentials ----------------

#[tokio::test]
async fn api_refuses_a_component_token() {
    let (_kcp, url) = Kcp::start().await;
    let hub = hub(&url, |_| {}).await;
    let got = status_of(
        http()
            .get(hub.url("/api/me"))
            .bearer_auth(COMPONENT)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_status(&got, 401, "GET /api/me");
    assert!(
        got.1["message"].as_str().unwrap().contains(COMPONENTS_GROUP),
        "{}",
        got.1
    );
}

#[tokio::test]
async fn kcp_pass_through_refuses_a_component_token() {
    let (kcp, url) = Kcp::start().await;
    let hub = hub(&url, |_| {}).await;
    let got = status_of(
        http()
            .get(hub.url(PROVIDER_SECRETS))
            .bearer_auth(COMPONENT)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_status(&got, 401, "the providers' kubeconfigs with a component's token");
    assert_eq!(kcp.count("GET", "system:providers"), 0, "the request reached kcp");
    // A person's token goes through (kcp answers for itself), and so does an anonymous request.
    for token in [Some(ALICE), None] {
        let mut req = http().get(hub.url(PROVIDER_SECRETS));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        assert_eq!(req.send().await.unwrap().status(), 200, "{token:?}");
    }
    assert_eq!(kcp.count("GET", "system:providers"), 2);
}

#[tokio::test]
async fn session_sign_in_refuses_a_component_token() {
    let (_kcp, url) = Kcp::start().await;
    let hub = hub(&url, |_| {}).await;
    let refused = sign_in_with_token(&hub, COMPONENT).await.unwrap_err();
    assert_status(&refused, 401, "POST /api/session with a component's token");
    assert!(sign_in_with_token(&hub, ALICE).await.is_ok(), "a person signs in");
}

#[tokio::test]
async fn backend_proxy_refuses_a_component_token() {
    let up = upstream().await;
    let hub = hub("https://127.0.0.1:1", |_| {}).await;
    register(&hub, "q", None, Some(up.url("")));
    let got = status_of(
        http()
            .get(hub.url("/services/providers/q/api/hello"))
            .bearer_auth(COMPONENT)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_status(&got, 401, "the backend proxy with a component's token");
}

#[tokio::test]
async fn backend_proxy_answers_anonymous_callers_alike_for_any_name() {
    let up = upstream().await;
    let hub = hub("https://127.0.0.1:1", |_| {}).await;
    register(&hub, "q", None, Some(up.url("")));
    let known = status_of(http().get(hub.url("/services/providers/q/x")).send().await.unwrap()).await;
    let unknown = status_of(http().get(hub.url("/services/providers/nope/x")).send().await.unwrap()).await;
    assert_status(&known, 401, "anonymous, a provider that exists");
    assert_eq!(known, unknown, "which providers exist is not for anonymous callers");
}

#[tokio::test]
async fn mcp_refuses_a_component_token() {
    let (_kcp, url) = Kcp::start().await;
    let hub = hub(&url, |_| {}).await;
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let got = status_of(
        http()
            .post(hub.url("/api/orgs/acme/workspaces/dev/mcp"))
            .bearer_auth(COMPONENT)
            .header("accept", "application/json, text/event-stream")
            .json(&init)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_status(&got, 401, "MCP initialize with a component's token");
}

// ----- tenancy ----------------------------------------------------------------------------------

const CREATOR: &str = "creator-token-0123456789";
const PLATFORM_ADMIN: &str = "platform-admin-token-0123456789";

/// `method path` with `token` on `replica`: status and body.
async fn call(
    replica: &Replica,
    token: &str,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut req = http().request(method, replica.url(path)).bearer_auth(token);
    if let Some(body) = body {
        req = req.json(&body);
    }
    status_of(req.send().await.unwrap()).await
}

#[tokio::test]
async fn api_org_creator_is_not_readmitted_when_admins_are_groups() {
    use faros_test_support::users::static_token;
    use reqwest::Method;
    let kcp = SharedKcp::start(
        &[
            static_token(CREATOR, "carol", "carol-uid", &[]),
            static_token(PLATFORM_ADMIN, "pat", "pat-uid", &["oidc:platform"]),
        ],
        None,
    )
    .await;
    let hub = Replica::start(&kcp, None, |_| {}).await;
    let org = json!({"name": "acme"});
    let (code, body) = call(&hub, CREATOR, Method::POST, "/api/orgs", Some(org.clone())).await;
    assert_eq!(code, 201, "{body}");
    // The organization's admins become a group; its creator is removed by one of them.
    let (code, body) = call(
        &hub,
        CREATOR,
        Method::PUT,
        "/api/orgs/acme/groups/oidc:platform",
        Some(json!({"role": "admin"})),
    )
    .await;
    assert_eq!(code, 200, "{body}");
    // The hub keeps a named admin (its last-admin guard), but an admin may edit the org's RBAC in kcp
    // directly: the group's admin deletes the creator's binding with his own token.
    let mut config = kcp.admin().await;
    config.auth_info = kube::config::AuthInfo {
        token: Some(PLATFORM_ADMIN.to_string().into()),
        ..Default::default()
    };
    let bindings: kube::Api<k8s_openapi::api::rbac::v1::ClusterRoleBinding> = kube::Api::all(
        faros_core::client::ClientFactory::new(config)
            .unwrap()
            .cluster("root:faros:tenants:acme")
            .unwrap(),
    );
    bindings
        .delete(
            &faros_hub_api::tenancy::rbac::member_binding_name("carol"),
            &Default::default(),
        )
        .await
        .unwrap();
    eventually("the removed creator to be out", WAIT, || async {
        (call(&hub, CREATOR, Method::GET, "/api/orgs/acme", None).await.0 == 404).then_some(())
    })
    .await;
    // The attack: sending the creation again, as if it had never finished.
    let (code, body) = call(&hub, CREATOR, Method::POST, "/api/orgs", Some(org)).await;
    assert_status(&(code, body.clone()), 409, "the creator re-sends POST /api/orgs");
    assert_eq!(call(&hub, CREATOR, Method::GET, "/api/orgs/acme", None).await.0, 404);
    let (_, members) = call(&hub, PLATFORM_ADMIN, Method::GET, "/api/orgs/acme/members", None).await;
    assert!(
        !members.to_string().contains("\"carol\""),
        "the creator was re-admitted: {members}"
    );
    hub.stop().await;
    kcp.shutdown().await;
}

// ----- mcp federation and upstream: the address policy ------------------------------------------

/// An upstream that counts the requests it gets (and has no MCP endpoint).
async fn counting_upstream() -> (std::net::SocketAddr, Arc<AtomicUsize>) {
    let hits = Arc::new(AtomicUsize::new(0));
    let h = hits.clone();
    let router = Router::new().fallback(move || {
        h.fetch_add(1, Ordering::SeqCst);
        async { (http::StatusCode::NOT_FOUND, "no mcp here") }
    });
    (serve(router).await, hits)
}

#[tokio::test]
async fn mcp_federation_client_keeps_to_the_upstream_policy() {
    faros_core::telemetry::install_crypto_provider();
    let (addr, hits) = counting_upstream().await;
    let port = addr.port();
    let refusing = McpClients::new(Duration::from_secs(2), Arc::new(UpstreamPolicy::default())).unwrap();
    // An address literal, and a name that resolves to a refused address (as a rebound name does).
    for url in [
        format!("http://127.0.0.1:{port}/mcp"),
        format!("http://localhost:{port}/mcp"),
    ] {
        let err = refusing.list_tools(&url, Default::default()).await.unwrap_err();
        assert!(
            !matches!(err, McpClientError::NoEndpoint(_)),
            "{url}: the upstream answered: {err}"
        );
    }
    assert_eq!(hits.load(Ordering::SeqCst), 0, "a refused upstream was reached");
    // The same client under a policy that admits loopback does reach it: the refusal was the policy.
    let admitting = McpClients::new(
        Duration::from_secs(2),
        Arc::new(UpstreamPolicy {
            allow: UpstreamPolicy::loopback(),
            ..Default::default()
        }),
    )
    .unwrap();
    let err = admitting
        .list_tools(&format!("http://127.0.0.1:{port}/mcp"), Default::default())
        .await
        .unwrap_err();
    assert!(matches!(err, McpClientError::NoEndpoint(404)), "{err}");
    assert!(hits.load(Ordering::SeqCst) > 0);
}

#[tokio::test]
async fn upstream_refuses_metadata_and_embedded_ipv4() {
    let hub = hub("https://127.0.0.1:1", |_| {}).await;
    for (name, url) in [
        ("alibaba", "http://100.100.100.200/"),
        ("aws6", "http://[fd00:ec2::254]/"),
        ("oracle", "http://192.0.0.192/"),
        ("nat64", "http://[64:ff9b::a9fe:a9fe]/"),
        ("compat", "http://[::a9fe:a9fe]/"),
        ("sixtofour", "http://[2002:a9fe:a9fe::1]/"),
        ("sitelocal", "http://[fec0::1]/"),
        ("mapped", "http://[::ffff:169.254.169.254]/"),
    ] {
        register(&hub, name, Some(url.to_string()), Some(url.to_string()));
        let p = hub.registry().get(name).unwrap();
        assert!(
            p.endpoints.backend.is_none() && !p.endpoints.errors.is_empty(),
            "{name} {url} was accepted"
        );
        let got = status_of(
            http()
                .get(hub.url(&format!("/services/providers/{name}/latest/meta-data/")))
                .bearer_auth(ALICE)
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_status(&got, 503, name);
        let ui = status_of(
            http()
                .get(hub.url(&format!("/ui/providers/{name}/x.js")))
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_status(&ui, 503, name);
    }
}

// ----- ui proxy ---------------------------------------------------------------------------------

#[tokio::test]
async fn ui_proxy_refuses_a_second_content_type() {
    let two = || async {
        let mut resp = Response::new(Body::from("<h1>Your session expired, sign in again</h1>"));
        let h = resp.headers_mut();
        h.append("content-type", http::HeaderValue::from_static("text/javascript"));
        h.append("content-type", http::HeaderValue::from_static("text/html"));
        resp
    };
    let listed = || async { ([("content-type", "text/javascript, text/html")], "<h1>sign in</h1>") };
    let addr = serve(
        Router::new()
            .route("/ui/two.js", get(two))
            .route("/ui/listed.js", get(listed))
            .route(
                "/ui/ok.js",
                get(|| async { ([("content-type", "text/javascript")], "ok") }),
            ),
    )
    .await;
    let hub = hub("https://127.0.0.1:1", |_| {}).await;
    register(
        &hub,
        "q",
        Some(format!("http://{addr}/ui")),
        Some(format!("http://{addr}")),
    );
    for path in ["two.js", "listed.js"] {
        let got = status_of(
            http()
                .get(hub.url(&format!("/ui/providers/q/{path}")))
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_status(&got, 502, path);
    }
    let ok = http().get(hub.url("/ui/providers/q/ok.js")).send().await.unwrap();
    assert_eq!(ok.status(), 200);
}

#[tokio::test]
async fn ui_proxy_refuses_documents_and_service_workers() {
    let up = upstream().await;
    let hub = hub("https://127.0.0.1:1", |_| {}).await;
    register(&hub, "q", Some(up.url("/ui")), Some(up.url("")));
    let page = status_of(http().get(hub.url("/ui/providers/q/page.html")).send().await.unwrap()).await;
    assert_status(&page, 502, "an HTML page on the hub's origin");
    let worker = status_of(
        http()
            .get(hub.url("/ui/providers/q/main.js"))
            .header("service-worker", "script")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_status(&worker, 403, "a service worker for the hub's origin");
    let asset = http().get(hub.url("/ui/providers/q/main.js")).send().await.unwrap();
    assert_eq!(
        asset.headers()["content-security-policy"],
        "sandbox; default-src 'none'"
    );
}

// ----- metrics ----------------------------------------------------------------------------------

#[tokio::test]
async fn metrics_on_the_public_port_refuses_anonymous_callers() {
    let hub = hub("https://127.0.0.1:1", |_| {}).await;
    let got = status_of(http().get(hub.url("/metrics")).send().await.unwrap()).await;
    assert_status(&got, 401, "anonymous /metrics");
    let scrape = http().get(hub.url("/metrics")).bearer_auth(ALICE).send().await.unwrap();
    assert_eq!(scrape.status(), 200);
}

// ----- session ----------------------------------------------------------------------------------

fn kcp_records(config: &mut faros_hub_api::Config) {
    config.records = faros_hub_api::records::Placement::Kcp;
}

#[tokio::test]
async fn session_forged_cookies_cost_no_store_read() {
    let (kcp, url) = Kcp::start().await;
    let hub = hub(&url, kcp_records).await;
    // One real session makes the hub read (or make) its cookie key once.
    let cookie = sign_in_with_token(&hub, ALICE).await.unwrap();
    let reads_before = kcp.count("GET", "/secrets/");
    let value = cookie.split_once('=').unwrap().1.to_string();
    let (handle, tag) = value.split_once('.').unwrap();
    let forged = [
        "A".repeat(43),
        format!("{}.{tag}", "B".repeat(handle.len())),
        format!("{handle}.{}", "C".repeat(tag.len())),
        "x.y".to_string(),
    ];
    for f in forged.iter().cycle().take(40) {
        let got = status_of(
            http()
                .get(hub.url("/api/session"))
                .header("cookie", format!("{SESSION_COOKIE}={f}"))
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_status(&got, 401, f);
    }
    assert_eq!(
        kcp.count("GET", "/secrets/"),
        reads_before,
        "a forged cookie cost a kcp read"
    );
    // The real one still works.
    let (code, _) = status_of(
        http()
            .get(hub.url("/api/session"))
            .header("cookie", &cookie)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(code, 200);
}

#[tokio::test]
async fn session_sign_ins_of_one_user_are_capped() {
    let (kcp, url) = Kcp::start().await;
    let hub = hub(&url, kcp_records).await;
    let mut cookies = Vec::new();
    for _ in 0..24 {
        cookies.push(sign_in_with_token(&hub, ALICE).await.unwrap());
    }
    let live = kcp.stored("session-");
    assert!(live <= 16, "{live} sessions of one user are stored");
    let me = |cookie: &String| {
        let req = http().get(hub.url("/api/session")).header("cookie", cookie);
        async move { req.send().await.unwrap().status().as_u16() }
    };
    assert_eq!(me(cookies.last().unwrap()).await, 200, "the newest session lives");
    assert_eq!(me(&cookies[0]).await, 401, "the oldest session was ended");
}

#[tokio::test]
async fn session_csrf_ignores_a_client_forwarded_host() {
    let hub = hub("https://127.0.0.1:1", |_| {}).await;
    let cookie = sign_in_with_token(&hub, ALICE).await.unwrap();
    let got = status_of(
        http()
            .post(hub.url("/api/orgs"))
            .header("cookie", &cookie)
            .header("origin", "https://evil.example")
            .header("x-forwarded-host", "evil.example")
            .header("x-forwarded-proto", "https")
            .header("x-faros-csrf", "1")
            .json(&json!({"name": "stolen"}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_status(&got, 403, "a cross-site POST claiming the hub is evil.example");
    assert!(got.1["message"].as_str().unwrap().contains("Origin"), "{}", got.1);
}

#[tokio::test]
async fn session_sign_out_with_a_bearer_ends_the_cookie_session() {
    let hub = hub("https://127.0.0.1:1", |_| {}).await;
    let cookie = sign_in_with_token(&hub, ALICE).await.unwrap();
    let resp = http()
        .delete(hub.url("/api/session"))
        .header("cookie", &cookie)
        .bearer_auth(ALICE)
        .send()
        .await
        .unwrap();
    assert!(resp.status().is_success(), "{}", resp.status());
    let after = status_of(
        http()
            .get(hub.url("/api/session"))
            .header("cookie", &cookie)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_status(&after, 401, "the signed-out cookie");
}

// ----- oidc -------------------------------------------------------------------------------------

/// A stand-in identity provider's discovery document, counting its fetches.
async fn discovery_server() -> (String, Arc<AtomicUsize>) {
    let hits = Arc::new(AtomicUsize::new(0));
    let h = hits.clone();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let issuer = format!("http://{}", listener.local_addr().unwrap());
    let doc = json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{issuer}/auth"),
        "token_endpoint": format!("{issuer}/token"),
        "jwks_uri": format!("{issuer}/jwks"),
        "end_session_endpoint": format!("{issuer}/session/end"),
        "scopes_supported": ["openid", "email", "profile"],
    });
    let router = Router::new().route(
        "/.well-known/openid-configuration",
        get(move || {
            h.fetch_add(1, Ordering::SeqCst);
            let doc = doc.clone();
            async move { axum::Json(doc) }
        }),
    );
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    (issuer, hits)
}

/// The state cookie's payload: the sign-in in flight, as the hub signed it into the browser.
fn state_payload(resp: &reqwest::Response) -> Value {
    let set = resp
        .headers()
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap())
        .find(|v| v.starts_with(STATE_COOKIE))
        .unwrap()
        .to_string();
    let value = set.split(';').next().unwrap().split_once('=').unwrap().1;
    let payload = value.split_once('.').unwrap().0;
    serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(payload)
            .unwrap(),
    )
    .unwrap()
}

#[tokio::test]
async fn oidc_sign_in_starts_write_nothing_and_share_one_discovery() {
    let (kcp, url) = Kcp::start().await;
    let (issuer, discoveries) = discovery_server().await;
    let hub = hub(&url, |config| {
        kcp_records(config);
        config.oidc = Some(OidcSettings::new(issuer.clone(), "faros-hub"));
    })
    .await;
    for _ in 0..100 {
        let resp = no_redirects().get(hub.url("/api/session/oidc")).send().await.unwrap();
        assert_eq!(resp.status(), 303);
        assert!(resp.headers()["location"].to_str().unwrap().starts_with(&issuer));
    }
    assert_eq!(discoveries.load(Ordering::SeqCst), 1, "discovery fetched per sign-in");
    // The only record ever made is the hub's cookie key (by the first start); no sign-in is stored.
    assert_eq!(kcp.count("POST", "/secrets"), 1, "anonymous sign-ins were stored");
    assert_eq!(kcp.stored("key-"), 1);
}

#[tokio::test]
async fn oidc_return_path_with_dot_segments_is_replaced() {
    let (issuer, _) = discovery_server().await;
    let hub = hub("https://127.0.0.1:1", |config| {
        config.oidc = Some(OidcSettings::new(issuer.clone(), "faros-hub"));
    })
    .await;
    for (asked, kept) in [
        ("/portal/../api/orgs", "/portal/"),
        ("/portal/%2e%2e/api/session", "/portal/"),
        ("//evil.example/portal/", "/portal/"),
        (
            "/portal/orgs/a/workspaces/b/catalog",
            "/portal/orgs/a/workspaces/b/catalog",
        ),
    ] {
        let mut url = reqwest::Url::parse(&hub.url("/api/session/oidc")).unwrap();
        url.query_pairs_mut().append_pair("return", asked);
        let resp = no_redirects().get(url).send().await.unwrap();
        assert_eq!(state_payload(&resp)["return_to"], kept, "{asked}");
    }
}

fn idp_settings(idp: &Idp, groups_prefix: Option<&str>) -> OidcSettings {
    let mut s = OidcSettings::new(idp.issuer(), "faros-hub");
    s.username_claim = "email".into();
    s.groups_claim = Some("groups".into());
    s.groups_prefix = groups_prefix.map(str::to_string);
    s.ca_pem = Some(idp.ca_pem().to_string());
    s
}

/// A hub whose OIDC issuer is the test IdP with `users` (`groups_prefix` as configured), and the
/// IdP knowing the hub's callback and sign-out return address.
async fn hub_with_idp(kcp: &str, users: Vec<IdpUser>, groups_prefix: Option<&'static str>) -> (TestHub, Idp) {
    let mut idp = Idp::start(users, Vec::new(), Ttls::default()).await.unwrap();
    let settings = idp_settings(&idp, groups_prefix);
    let hub = hub(kcp, |config| config.oidc = Some(settings)).await;
    let mut client = IdpClient::new("faros-hub", &hub.url(CALLBACK));
    client.post_logout_redirect_uris = vec![hub.url("/portal/signin?signedOut=1")];
    idp.add_client(client).await.unwrap();
    (hub, idp)
}

#[tokio::test]
async fn kcp_pass_through_refuses_an_idp_system_group() {
    init_tracing_and_crypto();
    let (kcp, url) = Kcp::start().await;
    let mut mallory = IdpUser::new("mallory", "pw", &["system:masters"]);
    mallory.email = "mallory@example.com".into();
    let mut deployer = IdpUser::new("deployer", "pw", &["dev"]);
    deployer.email = "system:serviceaccount:default:deployer".into();
    let alice = IdpUser::new("alice", "wonderland", &["dev"]);
    let (hub, idp) = hub_with_idp(&url, vec![mallory, deployer, alice], None).await;
    for (user, password, door) in [
        ("mallory", "pw", PROVIDER_SECRETS),
        ("deployer", "pw", "/api/me"),
        ("deployer", "pw", PROVIDER_SECRETS),
    ] {
        let tokens = idp.login("faros-hub", user, password).await.unwrap();
        let got = status_of(
            http()
                .get(hub.url(door))
                .bearer_auth(&tokens.id_token)
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_status(&got, 401, &format!("{user} at {door}"));
    }
    assert_eq!(
        kcp.count("GET", "system:providers"),
        0,
        "a system: identity reached kcp"
    );
    let alice = idp.login("faros-hub", "alice", "wonderland").await.unwrap();
    let ok = http()
        .get(hub.url(PROVIDER_SECRETS))
        .bearer_auth(&alice.id_token)
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200, "an ordinary IdP user is passed on to kcp");
    idp.stop().await;
}

#[tokio::test]
async fn oidc_callback_refuses_a_component_identity() {
    init_tracing_and_crypto();
    // An IdP whose users may name their own groups, and a hub configured without a groups prefix.
    let mut borrower = IdpUser::new("borrower", "pw", &[COMPONENTS_GROUP]);
    borrower.email = "borrower@example.com".into();
    let (hub, idp) = hub_with_idp("https://127.0.0.1:1", vec![borrower], None).await;
    let done = idp
        .sign_in_via(&hub.url("/api/session/oidc"), CALLBACK, "borrower", "pw")
        .await
        .unwrap();
    assert!(done.location.starts_with("/portal/signin?error="), "{done:?}");
    let error = reqwest::Url::parse(&format!("http://x{}", done.location)).unwrap();
    let error: String = error.query_pairs().map(|(_, v)| v.into_owned()).collect();
    assert!(error.contains(COMPONENTS_GROUP), "refused for another reason: {error}");
    assert!(done.cookie(SESSION_COOKIE).is_none(), "a session was started: {done:?}");
    idp.stop().await;
}

#[tokio::test]
async fn oidc_logout_url_carries_no_token() {
    init_tracing_and_crypto();
    let (hub, idp) = hub_with_idp(
        "https://127.0.0.1:1",
        vec![IdpUser::new("alice", "wonderland", &["dev"])],
        Some("oidc:"),
    )
    .await;
    let done = idp
        .sign_in_via(&hub.url("/api/session/oidc"), CALLBACK, "alice", "wonderland")
        .await
        .unwrap();
    let cookie = done.cookie(SESSION_COOKIE).expect("signed in");
    let resp = http()
        .delete(hub.url("/api/session"))
        .header("cookie", &cookie)
        .header("origin", format!("http://{}", hub.addr))
        .header("x-faros-csrf", "1")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["logoutUrl"], "/api/session/oidc/logout", "{body}");
    let redirect = no_redirects()
        .get(hub.url("/api/session/oidc/logout"))
        .send()
        .await
        .unwrap();
    assert_eq!(redirect.status(), 303);
    let location = reqwest::Url::parse(redirect.headers()["location"].to_str().unwrap()).unwrap();
    assert!(location.as_str().starts_with(idp.issuer()), "{location}");
    let query: BTreeMap<String, String> = location.query_pairs().into_owned().collect();
    assert_eq!(query.get("client_id").map(String::as_str), Some("faros-hub"));
    assert!(!query.contains_key("id_token_hint"), "{location}");
    // Nothing JWT-shaped anywhere in the URL.
    assert!(
        !location
            .as_str()
            .split(['=', '&', '?'])
            .any(|part| part.starts_with("eyJ")),
        "{location}"
    );
    idp.stop().await;
}
