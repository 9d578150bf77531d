//! The hub's HTTP surface end to end without kcp: real upstream servers, a fake TokenReview, an
//! injected clock, the registry fed directly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::*;
use faros_core::catalog::{BackendSpec, CatalogEntry, CatalogEntrySpec, UiSpec};
use faros_core::identity::{self, Jwks};
use faros_hub_api::catalog::record::BackendHealth;
use faros_hub_api::catalog::registry::Candidate;
use pretty_assertions::assert_eq;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

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

fn register(hub: &TestHub, cluster: &str, path: &str, e: CatalogEntry) {
    hub.registry().upsert(Candidate {
        cluster: cluster.into(),
        path: Some(path.into()),
        source: "vw".into(),
        entry: e,
    });
}

fn healthy(hub: &TestHub, name: &str) {
    let p = hub.registry().get(name).unwrap();
    let backend = p.endpoints.backend.clone().unwrap().to_string();
    hub.registry().set_health(name, &backend, BackendHealth::Healthy);
}

/// A hub with provider `q` (UI + backend on `up`), Ready.
async fn setup(tweak: impl FnOnce(&mut faros_hub_api::Config)) -> (TestHub, Upstream) {
    let up = upstream().await;
    let hub = TestHub::start("https://127.0.0.1:1", tweak).await;
    register(
        &hub,
        CLUSTER_Q,
        "root:faros:providers:q",
        entry("q", Some(up.url("/ui")), Some(up.url(""))),
    );
    healthy(&hub, "q");
    (hub, up)
}

async fn status_of(resp: reqwest::Response) -> (u16, Value) {
    let code = resp.status().as_u16();
    let body: Value = resp.json().await.unwrap_or(Value::Null);
    (code, body)
}

#[tokio::test]
async fn heartbeat_matrix_and_readiness_over_time() {
    let (hub, _up) = setup(|_| {}).await;
    let http = http();
    let beat = |token: Option<&'static str>, name: &'static str, body: &'static str| {
        let mut req = http
            .post(hub.url(&format!("/api/providers/{name}/heartbeat")))
            .body(body);
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        async move { status_of(req.send().await.unwrap()).await }
    };
    let ok = r#"{"version":"1.2.3","status":"healthy","revision":"q-0123456789"}"#;
    for (what, token, name, body, code, reason) in [
        ("no token", None, "q", ok, 401, "Unauthorized"),
        ("a user", Some(ALICE), "q", ok, 403, "Forbidden"),
        (
            "the SA of another workspace",
            Some(SA_OTHER_CLUSTER),
            "q",
            ok,
            403,
            "Forbidden",
        ),
        ("invalid token", Some("garbage"), "q", ok, 401, "Unauthorized"),
        ("unknown provider", Some(SA_Q), "nope", ok, 404, "NotFound"),
        ("bad JSON", Some(SA_Q), "q", "{nope", 400, "BadRequest"),
        (
            "another provider's revision",
            Some(SA_Q),
            "q",
            r#"{"revision":"r-0123456789"}"#,
            400,
            "BadRequest",
        ),
        (
            "a revision that is no digest",
            Some(SA_Q),
            "q",
            r#"{"revision":"q-latest"}"#,
            400,
            "BadRequest",
        ),
    ] {
        let (got, body) = beat(token, name, body).await;
        assert_eq!(
            (got, body["reason"].as_str().unwrap_or_default()),
            (code, reason),
            "{what}: {body}"
        );
        assert_eq!(body["kind"], "Status", "{what}");
    }
    let big = "x".repeat(5000);
    let resp = http
        .post(hub.url("/api/providers/q/heartbeat"))
        .bearer_auth(SA_Q)
        .body(format!(r#"{{"version":"{big}"}}"#))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 413);
    // Rejected beats changed nothing.
    assert_eq!(hub.registry().view("q").unwrap().last_beat, None);

    let (code, body) = beat(Some(SA_Q), "q", ok).await;
    assert_eq!((code, body), (200, serde_json::json!({"status": "ok"})));
    assert_eq!(
        hub.registry().view("q").unwrap().reported_revision.as_deref(),
        Some("q-0123456789")
    );
    let list = |hub: &TestHub| {
        let req = http.get(hub.url("/api/providers")).bearer_auth(ALICE);
        async move { req.send().await.unwrap().json::<Value>().await.unwrap() }
    };
    let item = list(&hub).await["items"][0].clone();
    assert_eq!(
        (
            item["ready"].clone(),
            item["reportedVersion"].clone(),
            item["lastHeartbeat"].clone()
        ),
        (Value::Bool(true), "1.2.3".into(), T0.into())
    );

    // Silence past the TTL: not Ready, UI proxy 503.
    hub.clock.advance(Duration::from_secs(91));
    let item = list(&hub).await["items"][0].clone();
    assert_eq!(
        (item["ready"].clone(), item["notReadyReason"].clone()),
        (Value::Bool(false), "HeartbeatStale".into())
    );
    let (code, body) = status_of(http.get(hub.url("/ui/providers/q/main.js")).send().await.unwrap()).await;
    assert_eq!((code, body["reason"].as_str().unwrap()), (503, "ServiceUnavailable"));
    // One beat: Ready again.
    assert_eq!(beat(Some(SA_Q), "q", "").await.0, 200);
    assert_eq!(list(&hub).await["items"][0]["ready"], true);
    assert_eq!(
        http.get(hub.url("/ui/providers/q/main.js"))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
    // /api/providers needs a caller.
    assert_eq!(http.get(hub.url("/api/providers")).send().await.unwrap().status(), 401);
    // On the public port, /metrics asks for a credential.
    assert_eq!(http.get(hub.url("/metrics")).send().await.unwrap().status(), 401);
    let metrics = http
        .get(hub.url("/metrics"))
        .bearer_auth(ALICE)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains("faros_hub_api_heartbeats_total{result=\"ok\"} 2"),
        "{metrics}"
    );
    assert!(
        metrics.contains("faros_hub_api_heartbeats_total{result=\"denied\"} 4"),
        "{metrics}"
    );
}

#[tokio::test]
async fn ui_proxy_serves_assets_without_credentials() {
    let (hub, up) = setup(|_| {}).await;
    let http = http();
    let resp = http
        .get(hub.url("/ui/providers/q/main.js"))
        .header("x-faros-user", "admin")
        .header("cookie", "session=secret")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "text/javascript");
    assert!(
        resp.headers().get("set-cookie").is_none(),
        "providers cannot set cookies on the hub origin"
    );
    assert!(resp.headers().get("x-request-id").is_some());
    // Inert if opened as a document, never sniffed, loadable by the portal's sandboxed frame.
    for (name, want) in [
        ("x-content-type-options", "nosniff"),
        ("content-security-policy", "sandbox; default-src 'none'"),
        ("cross-origin-resource-policy", "cross-origin"),
        ("access-control-allow-origin", "*"),
    ] {
        assert_eq!(resp.headers()[name], want, "{name}");
    }
    assert!(resp.text().await.unwrap().contains("customElements.define("));
    // The provider's root is no page (its UI is modules for the portal's frame): 404 saying where
    // the UI is shown.
    for path in ["/ui/providers/q", "/ui/providers/q/"] {
        let (code, body) = status_of(http.get(hub.url(path)).send().await.unwrap()).await;
        assert_eq!(code, 404, "{path}: {body}");
        assert!(body["message"].as_str().unwrap().contains("/portal/orgs/"), "{body}");
    }
    // Documents are never served on the hub's origin (the upstream answers text/html here); the
    // 502 says so without quoting the upstream.
    let (code, body) = status_of(http.get(hub.url("/ui/providers/q/page.html")).send().await.unwrap()).await;
    assert_eq!(code, 502, "{body}");
    assert!(!body["message"].as_str().unwrap().contains("a page"), "{body}");
    // Nor service-worker scripts: a worker would control every page of the hub's origin.
    let resp = http
        .get(hub.url("/ui/providers/q/main.js"))
        .header("service-worker", "script")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 403);
    // A request that already passed a hub's provider proxy is a loop.
    let (code, body) = status_of(
        http.get(hub.url("/ui/providers/q/main.js"))
            .header("via", "1.1 faros-hub")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!((code, body["reason"].as_str()), (508, Some("LoopDetected")), "{body}");
    // What the upstream sees: an allow-list of asset request headers, the hub's own, nothing else
    // (no credentials, no spoofed identity, no cloud-metadata headers). The echo is JSON, an asset.
    let seen: Value = http
        .get(hub.url("/ui/providers/q/echo?x=1"))
        .bearer_auth(ALICE)
        .header("x-faros-user", "admin")
        .header("cookie", "session=secret")
        .header("metadata-flavor", "Google")
        .header("x-aws-ec2-metadata-token", "t")
        .header("accept", "application/json")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(seen["uri"], "/ui/echo?x=1");
    let h = &seen["headers"];
    assert_eq!(h["x-faros-base-path"], "/ui/providers/q");
    assert_eq!(h["via"], "1.1 faros-hub");
    assert_eq!(h["accept"], "application/json");
    for absent in [
        "authorization",
        "cookie",
        "x-faros-user",
        "x-faros-assertion",
        "metadata-flavor",
        "x-aws-ec2-metadata-token",
    ] {
        assert!(h.get(absent).is_none(), "{absent} leaked: {h}");
    }
    assert_eq!(h["host"], up.addr.to_string());
    assert_eq!(h["x-forwarded-for"], "127.0.0.1");
    // Errors.
    for (method, path, code) in [
        ("GET", "/ui/providers/unknown/x", 404),
        ("POST", "/ui/providers/q/x", 405),
        ("GET", "/ui/providers/", 404),
    ] {
        let resp = http
            .request(method.parse().unwrap(), hub.url(path))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status().as_u16(), code, "{method} {path}");
    }
}

#[tokio::test]
async fn backend_proxy_asserts_identity_and_never_forwards_credentials() {
    let (hub, _up) = setup(|_| {}).await;
    let http = http();
    // q's heartbeats say which revision it serves; the assertion names it.
    let beat = http
        .post(hub.url("/api/providers/q/heartbeat"))
        .bearer_auth(SA_Q)
        .body(r#"{"version":"1.2.3","revision":"q-0123456789"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(beat.status(), 200);
    assert_eq!(
        http.get(hub.url("/services/providers/q/api/hello"))
            .send()
            .await
            .unwrap()
            .status(),
        401
    );
    let resp = http
        .post(hub.url("/services/providers/q/api/hello?a=b"))
        .bearer_auth(ALICE)
        .header("x-faros-user", "admin")
        .header("x-faros-assertion", "forged")
        .header("x-faros-cluster", "victim-cluster")
        .header("cookie", "session=secret")
        .body("payload")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let seen: Value = resp.json().await.unwrap();
    assert_eq!(
        (seen["method"].as_str(), seen["uri"].as_str(), seen["body"].as_str()),
        (Some("POST"), Some("/api/hello?a=b"), Some("payload"))
    );
    let h = &seen["headers"];
    assert_eq!(h["x-faros-user"], "alice");
    assert_eq!(h["x-faros-base-path"], "/services/providers/q");
    for absent in ["authorization", "cookie", "x-faros-org", "x-faros-cluster"] {
        assert!(h.get(absent).is_none(), "{absent} leaked: {h}");
    }
    // Naming a tenant takes both headers (then membership is checked in kcp); half of it is refused.
    let half = http
        .get(hub.url("/services/providers/q/api/hello"))
        .bearer_auth(ALICE)
        .header("x-faros-org", "victim")
        .send()
        .await
        .unwrap();
    assert_eq!(half.status(), 400);
    // The assertion verifies against the JWKS the hub publishes, for q only.
    let jwks: Jwks = http
        .get(hub.url(identity::JWKS_PATH))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let token = h["x-faros-assertion"].as_str().unwrap();
    let claims = identity::verify(token, &jwks, "q", identity::now_unix()).unwrap();
    assert_eq!(
        (claims.identity.user.as_str(), claims.identity.groups.clone()),
        // kube-apiserver's rule: every authenticated user is in system:authenticated.
        ("alice", vec!["devs".to_string(), "system:authenticated".to_string()])
    );
    assert_eq!(claims.exp - claims.iat, 60);
    assert_eq!(claims.revision.as_deref(), Some("q-0123456789"));
    assert!(identity::verify(token, &jwks, "other", identity::now_unix()).is_err());
}

#[tokio::test]
async fn backend_failures_map_to_status_codes() {
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let (hub, up) = setup(|c| {
        c.http.upstream_timeout = Duration::from_millis(300);
        c.http.body_limit = 1024;
    })
    .await;
    register(
        &hub,
        "cd",
        "root:faros:providers:down",
        entry("down", None, Some(format!("http://{closed}"))),
    );
    healthy(&hub, "down");
    let http = http();
    let get = |path: &str| http.get(hub.url(path)).bearer_auth(ALICE).send();
    // Down since the last probe: 502 with a fixed text (the connect error would make the hub a
    // port scanner); the hub itself is fine.
    let (code, body) = status_of(get("/services/providers/down/x").await.unwrap()).await;
    assert_eq!(
        (
            code,
            body["reason"].as_str().unwrap(),
            body["message"].as_str().unwrap()
        ),
        (502, "BadGateway", "the backend of provider \"down\" is unreachable"),
        "{body}"
    );
    assert_eq!(http.get(hub.url("/healthz")).send().await.unwrap().status(), 200);
    // The probe notices: not Ready, 503.
    let probe = faros_hub_api::catalog::probe::probe(
        &hub.hub_state.providers_http,
        format!("http://{closed}/healthz").parse().unwrap(),
        Duration::from_secs(1),
    )
    .await;
    assert!(matches!(probe, BackendHealth::Unhealthy(_)), "{probe:?}");
    hub.registry().set_health("down", &format!("http://{closed}/"), probe);
    let (code, body) = status_of(get("/services/providers/down/x").await.unwrap()).await;
    assert_eq!(
        (code, body["message"].as_str().unwrap()),
        (503, "provider \"down\" is not ready (BackendUnhealthy)")
    );
    // A healthy backend probes healthy.
    let ok = faros_hub_api::catalog::probe::probe(
        &hub.hub_state.providers_http,
        up.url("/healthz").parse().unwrap(),
        Duration::from_secs(1),
    )
    .await;
    assert_eq!(ok, BackendHealth::Healthy);
    // Slow: 504 at the configured timeout.
    let started = std::time::Instant::now();
    let (code, body) = status_of(get("/services/providers/q/slow").await.unwrap()).await;
    assert_eq!((code, body["reason"].as_str().unwrap()), (504, "Timeout"));
    assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
    // Body limit.
    let resp = http
        .post(hub.url("/services/providers/q/x"))
        .bearer_auth(ALICE)
        .body(vec![b'a'; 2048])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 413);
    // Unknown provider.
    assert_eq!(get("/services/providers/nope/x").await.unwrap().status(), 404);
}

#[tokio::test]
async fn backend_responses_stream_and_upgrades_are_spliced() {
    let (hub, up) = setup(|_| {}).await;
    let http = http();
    let mut resp = http
        .get(hub.url("/services/providers/q/api/stream"))
        .bearer_auth(ALICE)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    // The first chunk arrives while the upstream is still blocked before its second.
    let first = tokio::time::timeout(WAIT, resp.chunk())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(&first[..], b"first\n");
    up.release.notify_one();
    let second = tokio::time::timeout(WAIT, resp.chunk())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(&second[..], b"second\n");

    // A raw upgrade through the backend proxy: bytes echo back.
    let mut tcp = tokio::net::TcpStream::connect(hub.addr).await.unwrap();
    tcp.write_all(
        format!(
            "GET /services/providers/q/ws HTTP/1.1\r\nHost: hub\r\nAuthorization: Bearer {ALICE}\r\n\
             Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n\
             Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
        )
        .as_bytes(),
    )
    .await
    .unwrap();
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut b = [0u8; 1];
        tokio::time::timeout(WAIT, tcp.read_exact(&mut b))
            .await
            .unwrap()
            .unwrap();
        head.push(b[0]);
    }
    let head = String::from_utf8(head).unwrap().to_ascii_lowercase();
    assert!(head.starts_with("http/1.1 101"), "{head}");
    assert!(head.contains("upgrade: websocket"), "{head}");
    assert!(!head.contains("set-cookie"), "{head}");
    tcp.write_all(b"hello through the hub").await.unwrap();
    let mut echoed = [0u8; 21];
    tokio::time::timeout(WAIT, tcp.read_exact(&mut echoed))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(&echoed, b"hello through the hub");
}

#[tokio::test]
async fn kcp_pass_through_keeps_the_callers_bearer() {
    let fake_kcp = upstream().await;
    let hub = TestHub::start(&fake_kcp.url(""), |_| {}).await;
    let http = http();
    for path in [
        "/clusters/root:faros/api/v1/namespaces?watch=true&resourceVersion=5",
        "/services/apiexport/abc/providers.faros.sh/clusters/*/apis/providers.faros.sh/v1alpha1/catalogentries",
    ] {
        let seen: Value = http
            .get(hub.url(path))
            .bearer_auth(ALICE)
            .header("x-faros-user", "kept-kcp-ignores-it")
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(seen["uri"], path);
        assert_eq!(seen["headers"]["authorization"], format!("Bearer {ALICE}"), "{path}");
    }
    // A bearer the hub's authenticator does not accept never reaches kcp (the same admission as
    // every other door: docs/security.md).
    let refused = http
        .get(hub.url("/clusters/root:faros/api/v1/namespaces"))
        .bearer_auth("not-a-token-anyone-knows")
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 401);
    // The upstream's streaming reaches the caller unbuffered here too.
    let mut resp = http.get(hub.url("/clusters/x/api/stream")).send().await.unwrap();
    let first = tokio::time::timeout(WAIT, resp.chunk())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(&first[..], b"first\n");
    fake_kcp.release.notify_one();
}

#[tokio::test]
async fn spoofed_entries_cannot_hijack_routes() {
    let (hub, up) = setup(|_| {}).await;
    let evil = upstream().await;
    register(
        &hub,
        "c-tenant",
        "root:faros:tenants:acme:dev",
        entry("q", Some(evil.url("/ui")), Some(evil.url(""))),
    );
    register(
        &hub,
        "c-evil",
        "root:faros:providers:evil",
        entry("q", Some(evil.url("/ui")), Some(evil.url(""))),
    );
    register(
        &hub,
        "c-admin",
        "root:faros:system:providers",
        entry("q", Some(evil.url("/ui")), Some(evil.url(""))),
    );
    let http = http();
    let seen: Value = http
        .get(hub.url("/services/providers/q/who"))
        .bearer_auth(ALICE)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(seen["headers"]["host"], up.addr.to_string());
    // Heartbeats too stay bound to q's own workspace ServiceAccount.
    let resp = http
        .post(hub.url("/api/providers/q/heartbeat"))
        .bearer_auth(SA_OTHER_CLUSTER)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 403);
}

#[tokio::test]
async fn readiness_endpoint_waits_for_the_registry() {
    let hub = TestHub::start("https://127.0.0.1:1", |_| {}).await;
    let http = http();
    let (code, body) = status_of(http.get(hub.url("/readyz")).send().await.unwrap()).await;
    assert_eq!((code, body["reason"].as_str().unwrap()), (503, "ServiceUnavailable"));
    hub.registry().expect_sources(1);
    hub.registry().replace_source("vw", vec![]);
    assert_eq!(http.get(hub.url("/readyz")).send().await.unwrap().status(), 200);
    let (code, body) = status_of(http.get(hub.url("/nowhere")).send().await.unwrap()).await;
    assert_eq!((code, body["reason"].as_str().unwrap()), (404, "NotFound"));
}

/// A replica behind a Service: synced but its first backend probes not made, it would answer the
/// backend proxy "not probed yet" (503) for a provider Ready on every other replica, so it is not
/// ready. Once every backend has a result (healthy or not) it is, and a provider registered later
/// does not take it out again.
#[tokio::test]
async fn readiness_waits_for_the_first_backend_probes() {
    let hub = TestHub::start("https://127.0.0.1:1", |_| {}).await;
    let http = http();
    hub.registry().expect_sources(1);
    let candidate = |name: &str| Candidate {
        cluster: format!("cluster-{name}"),
        path: Some(format!("root:faros:providers:{name}")),
        source: "vw".into(),
        entry: entry(name, None, Some(format!("http://{name}.example"))),
    };
    hub.registry()
        .replace_source("vw", vec![candidate("q"), candidate("r")]);
    let (code, body) = status_of(http.get(hub.url("/readyz")).send().await.unwrap()).await;
    assert_eq!(code, 503);
    assert!(body["message"].as_str().unwrap().contains("probes"), "{body}");
    healthy(&hub, "q");
    assert_eq!(
        http.get(hub.url("/readyz")).send().await.unwrap().status(),
        503,
        "r not probed"
    );
    let r = hub
        .registry()
        .get("r")
        .unwrap()
        .endpoints
        .backend
        .clone()
        .unwrap()
        .to_string();
    hub.registry()
        .set_health("r", &r, BackendHealth::Unhealthy("connection refused".into()));
    assert_eq!(
        http.get(hub.url("/readyz")).send().await.unwrap().status(),
        200,
        "r probed, down"
    );
    register(
        &hub,
        "cluster-s",
        "root:faros:providers:s",
        entry("s", None, Some("http://s.example".into())),
    );
    assert_eq!(
        http.get(hub.url("/readyz")).send().await.unwrap().status(),
        200,
        "latched"
    );
}

/// Provider URLs are no relay into loopback, cloud metadata or the hub itself (docs/security.md, the
/// `upstream` door).
#[tokio::test]
async fn provider_urls_cannot_reach_loopback_or_metadata() {
    // The default policy (no allow-list): loopback is refused, whatever the upstream is.
    let up = upstream().await;
    let hub = TestHub::start("https://127.0.0.1:1", |c| {
        c.upstreams.allow.clear();
        c.tenancy.public_url = Some("https://hub.example.com".into());
    })
    .await;
    for (name, ui, backend, problem) in [
        (
            "q",
            Some(up.url("/ui")),
            Some(up.url("")),
            "127.0.0.1 is a loopback address",
        ),
        (
            "meta",
            None,
            Some("http://169.254.169.254/latest".to_string()),
            "link-local (cloud metadata)",
        ),
        (
            "local",
            Some("http://localhost:8080/ui".to_string()),
            None,
            "names this machine",
        ),
        (
            "self",
            Some("https://hub.example.com/ui/providers/q".to_string()),
            None,
            "is the hub itself",
        ),
    ] {
        let path = format!("root:faros:providers:{name}");
        register(&hub, &format!("c-{name}"), &path, entry(name, ui, backend));
        let list: Value = http()
            .get(hub.url("/api/providers"))
            .bearer_auth(ALICE)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let item = list["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["name"] == name)
            .unwrap()
            .clone();
        assert_eq!(item["ready"], false, "{item}");
        assert_eq!(item["notReadyReason"], "InvalidEndpoint", "{item}");
        let message = hub.registry().get(name).unwrap().endpoints.errors.join("; ");
        assert!(message.contains(problem), "{name}: {message}");
        // Not Ready: nothing is proxied.
        let resp = http()
            .get(hub.url(&format!("/services/providers/{name}/x")))
            .bearer_auth(ALICE)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 503, "{name}");
    }
}

/// A request path for a route's pattern: every `{param}` and `{*rest}` filled in.
fn concrete(pattern: &str) -> String {
    pattern
        .split('/')
        .map(|seg| match seg.strip_prefix('{') {
            Some(param) => param.trim_start_matches('*').trim_end_matches('}').to_string(),
            None => seg.to_string(),
        })
        .collect::<Vec<_>>()
        .join("/")
}

fn request(hub: &TestHub, route: &faros_hub_api::router::Route) -> reqwest::RequestBuilder {
    use faros_hub_api::router::Method;
    let url = hub.url(&concrete(route.path));
    let method = match route.method {
        Method::Get => reqwest::Method::GET,
        // MCP's streamable HTTP: a client's first request is a POST.
        Method::Post | Method::Any => reqwest::Method::POST,
        Method::Put => reqwest::Method::PUT,
        Method::Delete => reqwest::Method::DELETE,
    };
    http().request(method, url)
}

/// Every route of the router's tables, against a running hub: the ones that are not public refuse
/// a request without credentials (401, a Status), the public ones never ask for any.
#[tokio::test]
async fn every_route_but_the_public_ones_refuses_requests_without_credentials() {
    let (hub, _up) = setup(|_| {}).await;
    let mut checked = 0;
    for group in faros_hub_api::router::GROUPS {
        for route in group.routes {
            let (code, body) = status_of(request(&hub, route).send().await.unwrap()).await;
            if route.who.is_public() {
                assert_ne!(code, 401, "{route:?} is public: {body}");
            } else {
                assert_eq!(code, 401, "{route:?}: {body}");
                assert_eq!(body["kind"], "Status", "{route:?}: {body}");
            }
            checked += 1;
        }
    }
    assert!(checked > 30, "{checked} routes");
}

/// The routes a table marks as users-only refuse a ServiceAccount, saying what it may not do.
#[tokio::test]
async fn users_only_routes_refuse_service_accounts() {
    use faros_hub_api::router::Who;
    let (hub, _up) = setup(|_| {}).await;
    let mut checked = 0;
    for group in faros_hub_api::router::GROUPS {
        for route in group.routes {
            let Who::User(what) = route.who else { continue };
            let resp = request(&hub, route).bearer_auth(SA_Q).body("{}").send().await.unwrap();
            let (code, body) = status_of(resp).await;
            assert_eq!(code, 403, "{route:?}: {body}");
            let message = body["message"].as_str().unwrap_or_default();
            assert!(message.contains(&format!("cannot {what}")), "{route:?}: {body}");
            checked += 1;
        }
    }
    assert!(checked >= 9, "{checked} users-only routes");
}

/// docs/hub-api.md lists exactly the routes of the router's tables.
/// `FAROS_UPDATE_SNAPSHOTS=1 cargo test -p faros-hub-api --test routes` rewrites the list.
#[test]
fn docs_list_exactly_the_routes() {
    const BEGIN: &str = "<!-- routes: generated from crates/faros-hub-api/src/router.rs -->\n";
    const END: &str = "<!-- routes: end -->";
    // The crate is crates/faros-hub-api: the docs are two levels up.
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .unwrap();
    let path = root.join("docs/hub-api.md");
    let doc = std::fs::read_to_string(&path).unwrap();
    let start = doc.find(BEGIN).expect("docs/hub-api.md has the generated route list") + BEGIN.len();
    let end = start + doc[start..].find(END).expect("the route list ends");
    let want = faros_hub_api::router::markdown();
    if std::env::var_os("FAROS_UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, format!("{}{want}{}", &doc[..start], &doc[end..])).unwrap();
        return;
    }
    assert_eq!(
        &doc[start..end],
        want,
        "docs/hub-api.md's route list differs from the router's tables; run \
         `FAROS_UPDATE_SNAPSHOTS=1 cargo test -p faros-hub-api --test routes` to accept"
    );
}

/// Every scoped row of the router's tables, on an embedded kcp with an organization `acme`, its
/// workspace `dev`, its admin alice and bob a member of both: a stranger (carol) gets exactly the
/// 404 of an organization that does not exist, a member short of an admin row's role gets 403, and
/// the role itself is let through to the handler (whatever the handler then answers).
#[tokio::test]
async fn every_scoped_route_refuses_strangers_and_members_below_its_role() {
    use faros_hub_api::router::{GROUPS, Method as RouteMethod};
    use faros_hub_api::tenancy::Role;
    use faros_hub_api::tenancy::scope::Scope;
    use faros_test_support::users::static_token;
    use reqwest::Method;
    const ALICE_KCP: &str = "alice-kcp-token-0123456789";
    const BOB_KCP: &str = "bob-kcp-token-0123456789";
    const CAROL_KCP: &str = "carol-kcp-token-0123456789";
    let kcp = SharedKcp::start(
        &[
            static_token(ALICE_KCP, "alice", "alice-uid", &[]),
            static_token(BOB_KCP, "bob", "bob-uid", &[]),
            static_token(CAROL_KCP, "carol", "carol-uid", &[]),
        ],
        None,
    )
    .await;
    let hub = Replica::start(&kcp, None, |_| {}).await;
    let send = |token: &'static str, method: Method, path: String, body: Option<&'static str>| {
        let req = http().request(method, hub.url(&path)).bearer_auth(token);
        let req = match body {
            Some(b) => req.header("content-type", "application/json").body(b),
            None => req,
        };
        async move { status_of(req.send().await.unwrap()).await }
    };
    let (code, body) = send(ALICE_KCP, Method::POST, "/api/orgs".into(), Some(r#"{"name":"acme"}"#)).await;
    assert_eq!(code, 201, "{body}");
    let (code, body) = send(
        ALICE_KCP,
        Method::POST,
        "/api/orgs/acme/workspaces".into(),
        Some(r#"{"name":"dev"}"#),
    )
    .await;
    assert!(code == 201 || code == 200, "{code} {body}");
    for path in [
        "/api/orgs/acme/members/bob",
        "/api/orgs/acme/workspaces/dev/members/bob",
    ] {
        let (code, body) = send(ALICE_KCP, Method::PUT, path.into(), Some(r#"{"role":"member"}"#)).await;
        assert_eq!(code, 200, "{path}: {body}");
    }
    for path in ["/api/orgs/acme", "/api/orgs/acme/workspaces/dev"] {
        eventually("bob to be a member", WAIT, || {
            let req = send(BOB_KCP, Method::GET, path.to_string(), None);
            async move { (req.await.0 == 200).then_some(()) }
        })
        .await;
    }

    let fill = |pattern: &str, org: &str| {
        pattern
            .replace("{org}", org)
            .replace("{ws}", "dev")
            .replace("{user}", "nobody")
            .replace("{group}", "nogroup")
            .replace("{name}", "nothing")
    };
    let method = |m: RouteMethod| match m {
        RouteMethod::Get => Method::GET,
        RouteMethod::Post | RouteMethod::Any => Method::POST,
        RouteMethod::Put => Method::PUT,
        RouteMethod::Delete => Method::DELETE,
    };
    let body_of = |m: RouteMethod| matches!(m, RouteMethod::Post | RouteMethod::Put | RouteMethod::Any).then_some("{}");
    let scoped: Vec<_> = GROUPS
        .iter()
        .flat_map(|g| g.routes.iter())
        .filter(|r| r.scope != Scope::None)
        .collect();
    assert!(scoped.len() >= 22, "{} scoped routes", scoped.len());
    let mut deletes = Vec::new();
    for route in &scoped {
        let m = method(route.method);
        let body = body_of(route.method);
        let (stranger, refusal) = send(CAROL_KCP, m.clone(), fill(route.path, "acme"), body).await;
        let (missing, absent) = send(CAROL_KCP, m.clone(), fill(route.path, "ghost"), body).await;
        assert_eq!((stranger, missing), (404, 404), "{route:?}: {refusal} / {absent}");
        assert_eq!(refusal["kind"], "Status", "{route:?}: {refusal}");
        let absent: Value = serde_json::from_str(&absent.to_string().replace("ghost", "acme")).unwrap();
        assert_eq!(refusal, absent, "{route:?}: a stranger must not learn that acme exists");
        if route.scope.role() == Some(Role::Admin) {
            let (code, below) = send(BOB_KCP, m.clone(), fill(route.path, "acme"), body).await;
            assert_eq!(code, 403, "{route:?}: {below}");
            assert_eq!(below["kind"], "Status", "{route:?}: {below}");
        }
        if route.method == RouteMethod::Delete && (route.path.ends_with("{org}") || route.path.ends_with("{ws}")) {
            deletes.push(*route);
            continue;
        }
        let (code, admitted) = send(ALICE_KCP, m, fill(route.path, "acme"), body).await;
        assert_ne!(code, 403, "{route:?}: {admitted}");
        assert_ne!(admitted, refusal, "{route:?}: alice was refused as a stranger");
    }
    // The workspace first, then its organization: each is the last act on what it deletes.
    deletes.sort_by_key(|r| std::cmp::Reverse(r.path.len()));
    assert_eq!(deletes.len(), 2, "{deletes:?}");
    for route in deletes {
        let (code, body) = send(ALICE_KCP, Method::DELETE, fill(route.path, "acme"), None).await;
        assert_eq!(code, 202, "{route:?}: {body}");
    }
    hub.stop().await;
    kcp.shutdown().await;
}
