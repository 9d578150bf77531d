//! Portal sessions over real HTTP: token sign-in, the cookie accepted by the REST API, the backend
//! proxy and the kcp pass-through, CSRF refusals, expiry, sign-out, and the OIDC authorization-code
//! flow with PKCE against a test issuer on 127.0.0.1. Also the portal's security and cache headers.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use axum::Router;
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use common::*;
use faros_core::catalog::{BackendSpec, CatalogEntry, CatalogEntrySpec};
use faros_hub_api::auth::OidcSettings;
use faros_hub_api::catalog::registry::Candidate;
use faros_hub_api::portal::headers::CSP;
use faros_test_support::users::{static_token, write_token_file};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// The `name=value` of the session cookie in a response's `Set-Cookie`s, and the whole header.
fn session_cookie(resp: &reqwest::Response) -> (String, String) {
    let header = resp
        .headers()
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap().to_string())
        .find(|v| v.starts_with("__Host-faros-session="))
        .expect("a session Set-Cookie");
    (header.split(';').next().unwrap().to_string(), header)
}

async fn sign_in(hub: &TestHub, token: &str) -> reqwest::Response {
    http()
        .post(hub.url("/api/session"))
        .header("origin", origin(hub))
        .header("x-faros-csrf", "1")
        .json(&json!({ "token": token }))
        .send()
        .await
        .unwrap()
}

fn origin(hub: &TestHub) -> String {
    format!("http://{}", hub.addr)
}

/// A hub whose kcp is `kcp` (an echo server), with provider `q` (backend on the same echo).
async fn setup(tweak: impl FnOnce(&mut faros_hub_api::Config)) -> (TestHub, Upstream) {
    init_tracing_and_crypto();
    let up = upstream().await;
    let hub = TestHub::start(&up.url(""), tweak).await;
    hub.registry().upsert(Candidate {
        cluster: CLUSTER_Q.into(),
        path: Some("root:faros:providers:q".into()),
        source: "vw".into(),
        entry: CatalogEntry::new(
            "q",
            CatalogEntrySpec {
                display_name: "Q".into(),
                backend: Some(BackendSpec {
                    url: up.url(""),
                    health_path: None,
                }),
                ..Default::default()
            },
        ),
    });
    let backend = hub
        .registry()
        .get("q")
        .unwrap()
        .endpoints
        .backend
        .clone()
        .unwrap()
        .to_string();
    hub.registry()
        .set_health("q", &backend, faros_hub_api::catalog::record::BackendHealth::Healthy);
    (hub, up)
}

#[tokio::test]
async fn token_sign_in_gives_a_strict_cookie_that_every_authenticated_path_accepts() {
    let (hub, _up) = setup(|_| {}).await;

    // Sign-in itself needs the same-origin proof (no login CSRF).
    let forged = http()
        .post(hub.url("/api/session"))
        .json(&json!({"token": ALICE}))
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status(), 403);
    let bad = sign_in(&hub, "nope").await;
    assert_eq!(bad.status(), 401);
    let body: Value = bad.json().await.unwrap();
    assert_eq!(body["kind"], "Status");
    assert!(!body["message"].as_str().unwrap().contains("nope"), "{body}");

    let resp = sign_in(&hub, ALICE).await;
    assert_eq!(resp.status(), 201);
    let (cookie, header) = session_cookie(&resp);
    for attr in ["Path=/", "Secure", "HttpOnly", "SameSite=Strict", "Max-Age=28800"] {
        assert!(header.split("; ").any(|a| a == attr), "{attr} missing in {header}");
    }
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["user"], "alice");
    assert!(!body.to_string().contains(ALICE), "the token is never echoed: {body}");

    // REST API.
    let me = http()
        .get(hub.url("/api/session"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(me.status(), 200);
    let me: Value = me.json().await.unwrap();
    assert_eq!(
        (me["user"].as_str(), me["expiresAt"].is_string()),
        (Some("alice"), true)
    );
    let providers = http()
        .get(hub.url("/api/providers"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(providers.status(), 200);
    let anonymous = http().get(hub.url("/api/providers")).send().await.unwrap();
    assert_eq!(anonymous.status(), 401);

    // Backend proxy: the provider sees the verified user, never the cookie or a credential.
    let echoed: Value = http()
        .post(hub.url("/services/providers/q/api/x"))
        .header("cookie", format!("{cookie}; theme=dark"))
        .header("origin", origin(&hub))
        .header("x-faros-csrf", "1")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let headers = &echoed["headers"];
    assert_eq!(headers["x-faros-user"], "alice", "{echoed}");
    assert!(
        headers.get("authorization").is_none() && headers.get("cookie").is_none(),
        "{echoed}"
    );

    // kcp pass-through: the session's credential is the bearer kcp sees; the cookie stays behind.
    let echoed: Value = http()
        .get(hub.url("/clusters/root/api/v1/namespaces"))
        .header("cookie", format!("{cookie}; theme=dark"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        echoed["headers"]["authorization"],
        format!("Bearer {ALICE}"),
        "{echoed}"
    );
    assert_eq!(echoed["headers"]["cookie"], "theme=dark", "{echoed}");

    // The bearer path is unchanged: no Origin or CSRF header needed.
    let bearer = http()
        .post(hub.url("/services/providers/q/api/x"))
        .bearer_auth(ALICE)
        .send()
        .await
        .unwrap();
    assert_eq!(bearer.status(), 200);
}

#[tokio::test]
async fn cookie_authenticated_changes_need_the_same_origin_and_the_csrf_header() {
    let (hub, _up) = setup(|_| {}).await;
    let (cookie, _) = session_cookie(&sign_in(&hub, ALICE).await);
    let own = origin(&hub);
    for (what, origin, csrf, want) in [
        (
            "a cross-site form (foreign Origin, no header)",
            Some("https://evil.example"),
            false,
            403,
        ),
        (
            "a foreign Origin with the header",
            Some("https://evil.example"),
            true,
            403,
        ),
        ("no Origin", None, true, 403),
        ("same origin without the header", Some(own.as_str()), false, 403),
        ("same origin with the header", Some(own.as_str()), true, 200),
    ] {
        let mut req = http()
            .post(hub.url("/services/providers/q/api/x"))
            .header("cookie", &cookie)
            .header("content-type", "application/x-www-form-urlencoded")
            .body("name=x");
        if let Some(o) = origin {
            req = req.header("origin", o);
        }
        if csrf {
            req = req.header("x-faros-csrf", "1");
        }
        let resp = req.send().await.unwrap();
        assert_eq!(resp.status(), want, "{what}");
        if want == 403 {
            let body: Value = resp.json().await.unwrap();
            assert!(
                body["message"].as_str().unwrap().contains("cross-site"),
                "{what}: {body}"
            );
        }
    }
    // Reads need no proof.
    let get = http()
        .get(hub.url("/services/providers/q/api/x"))
        .header("cookie", &cookie)
        .header("origin", "https://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(get.status(), 200);
}

#[tokio::test]
async fn sessions_expire_and_sign_out_ends_them() {
    let (hub, _up) = setup(|c| c.session.ttl = Duration::from_secs(600)).await;
    let (cookie, header) = session_cookie(&sign_in(&hub, ALICE).await);
    assert!(header.contains("Max-Age=600"), "{header}");
    let get = |c: String| {
        let url = hub.url("/api/session");
        async move { http().get(url).header("cookie", c).send().await.unwrap().status() }
    };
    assert_eq!(get(cookie.clone()).await, 200);
    hub.clock.advance(Duration::from_secs(601));
    assert_eq!(get(cookie.clone()).await, 401, "expired");

    let (cookie, _) = session_cookie(&sign_in(&hub, ALICE).await);
    assert_eq!(get(cookie.clone()).await, 200);
    let out = http()
        .delete(hub.url("/api/session"))
        .header("cookie", &cookie)
        .header("origin", origin(&hub))
        .header("x-faros-csrf", "1")
        .send()
        .await
        .unwrap();
    assert_eq!(out.status(), 204);
    let (_, cleared) = session_cookie(&out);
    assert!(cleared.contains("Max-Age=0"), "{cleared}");
    assert_eq!(get(cookie).await, 401, "signed out");
}

#[tokio::test]
async fn a_session_ends_when_its_token_is_revoked() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tokens.csv");
    write_token_file(&file, &[static_token("bob-token", "bob", "1001", &[])]).unwrap();
    let path = file.clone();
    let (hub, _up) = setup(move |c| c.token_file = Some(path)).await;
    let (cookie, _) = session_cookie(&sign_in(&hub, "bob-token").await);
    let url = hub.url("/api/session");
    let status = || async {
        http()
            .get(&url)
            .header("cookie", &cookie)
            .send()
            .await
            .unwrap()
            .status()
    };
    assert_eq!(status().await, 200);
    write_token_file(&file, &[static_token("carol-token", "carol", "1002", &[])]).unwrap();
    eventually("the revoked token's session to be refused", WAIT, || async {
        (status().await == 401).then_some(())
    })
    .await;
}

#[tokio::test]
async fn portal_responses_carry_security_and_cache_headers() {
    let (hub, _up) = setup(|_| {}).await;
    assert!(!CSP.contains("unsafe-inline") && !CSP.contains("unsafe-eval"), "{CSP}");
    let root = no_redirects().get(hub.url("/")).send().await.unwrap();
    assert_eq!(
        (root.status().as_u16(), root.headers()["location"].to_str().unwrap()),
        (303, "/portal/")
    );

    for (path, ty) in [
        ("/portal/", "text/html; charset=utf-8"),
        (
            "/portal/orgs/demo/workspaces/default/providers/quickstart/greetings/x",
            "text/html; charset=utf-8",
        ),
        ("/portal/assets/app.js", "text/javascript; charset=utf-8"),
        ("/portal/assets/portal.css", "text/css; charset=utf-8"),
    ] {
        let resp = http().get(hub.url(path)).send().await.unwrap();
        assert_eq!(resp.status(), 200, "{path}");
        let h = resp.headers();
        assert_eq!(h["content-type"], ty, "{path}");
        assert_eq!(h["content-security-policy"], CSP, "{path}");
        assert!(CSP.contains("frame-ancestors 'none'") && CSP.contains("script-src 'self';"));
        assert_eq!(h["x-content-type-options"], "nosniff", "{path}");
        assert_eq!(h["referrer-policy"], "no-referrer", "{path}");
        assert_eq!(h["cache-control"], "no-cache", "{path}");
        let etag = h["etag"].to_str().unwrap().to_string();
        let again = http()
            .get(hub.url(path))
            .header("if-none-match", &etag)
            .send()
            .await
            .unwrap();
        assert_eq!(again.status(), 304, "{path} revalidates");
    }
    let missing = http().get(hub.url("/portal/assets/nope.js")).send().await.unwrap();
    assert_eq!(missing.status(), 404);
    assert_eq!(missing.headers()["x-content-type-options"], "nosniff");
    let options: Value = http()
        .get(hub.url("/api/session/options"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(options, json!({"token": true, "oidc": null}));
}

#[tokio::test]
async fn the_portal_page_is_served_during_start_up_while_its_api_waits() {
    let (hub, _up) = setup(|_| {}).await;
    // As if the workspace-tree watch had started and kcp's tree were not bootstrapped yet.
    hub.hub_state.tree.watching();
    let page = http().get(hub.url("/portal/")).send().await.unwrap();
    assert_eq!(page.status(), 200);
    let sign_in = sign_in(&hub, ALICE).await;
    assert_eq!(sign_in.status(), 503);
    assert_eq!(sign_in.headers()["retry-after"], "1");
    let body: Value = sign_in.json().await.unwrap();
    assert!(
        body["message"].as_str().unwrap().contains("root:faros:tenants"),
        "{body}"
    );
}

// ----- OIDC ----------------------------------------------------------------------------------

/// What the issuer remembers of an authorization: (PKCE challenge, nonce, redirect URI).
type Grant = (String, String, String);

/// An OIDC issuer with an authorization endpoint that approves at once and a token endpoint that
/// checks the PKCE verifier.
#[derive(Clone)]
struct Idp {
    url: String,
    key: Arc<EcdsaKeyPair>,
    /// code → its grant
    codes: Arc<Mutex<HashMap<String, Grant>>>,
    /// The hub's clock: tokens are valid at its "now".
    now: i64,
}

impl Idp {
    fn id_token(&self, nonce: &str) -> String {
        let header = json!({"alg": "ES256", "kid": "k1", "typ": "JWT"});
        let claims = json!({
            "iss": self.url, "aud": "faros-hub", "sub": "ada", "email": "ada@example.com",
            "email_verified": true, "iat": self.now, "exp": self.now + 300, "nonce": nonce,
        });
        let input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let sig = self.key.sign(&SystemRandom::new(), input.as_bytes()).unwrap();
        format!("{input}.{}", URL_SAFE_NO_PAD.encode(sig.as_ref()))
    }
}

async fn authorize(State(idp): State<Idp>, Query(q): Query<HashMap<String, String>>) -> Response {
    assert_eq!(q["response_type"], "code");
    assert_eq!(q["client_id"], "faros-hub");
    assert_eq!(q["code_challenge_method"], "S256");
    assert!(q["scope"].split(' ').any(|s| s == "openid"));
    let code = format!("code-{}", idp.codes.lock().unwrap().len());
    idp.codes.lock().unwrap().insert(
        code.clone(),
        (
            q["code_challenge"].clone(),
            q["nonce"].clone(),
            q["redirect_uri"].clone(),
        ),
    );
    Redirect::to(&format!("{}?code={code}&state={}", q["redirect_uri"], q["state"])).into_response()
}

async fn token(State(idp): State<Idp>, body: String) -> Response {
    let form: HashMap<String, String> = body
        .split('&')
        .filter_map(|p| p.split_once('='))
        .map(|(k, v)| (k.to_string(), percent_decode(v)))
        .collect();
    let Some((challenge, nonce, redirect)) = idp.codes.lock().unwrap().remove(&form["code"]) else {
        return (
            axum::http::StatusCode::BAD_REQUEST,
            axum::Json(json!({"error": "invalid_grant"})),
        )
            .into_response();
    };
    let computed = URL_SAFE_NO_PAD.encode(Sha256::digest(form["code_verifier"].as_bytes()));
    if computed != challenge || form["redirect_uri"] != redirect || form["grant_type"] != "authorization_code" {
        return (
            axum::http::StatusCode::BAD_REQUEST,
            axum::Json(json!({"error": "invalid_grant"})),
        )
            .into_response();
    }
    axum::Json(json!({"access_token": "at", "token_type": "Bearer", "id_token": idp.id_token(&nonce)})).into_response()
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            out.push(u8::from_str_radix(&s[i + 1..i + 3], 16).unwrap());
            i += 3;
        } else {
            out.push(if bytes[i] == b'+' { b' ' } else { bytes[i] });
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

async fn start_idp(now: i64) -> Idp {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let key = Arc::new(EcdsaKeyPair::generate(&ECDSA_P256_SHA256_FIXED_SIGNING).unwrap());
    let idp = Idp {
        url: url.clone(),
        key: key.clone(),
        codes: Arc::default(),
        now,
    };
    let point = key.public_key().as_ref().to_vec();
    let jwks = json!({"keys": [{
        "kty": "EC", "crv": "P-256", "use": "sig", "alg": "ES256", "kid": "k1",
        "x": URL_SAFE_NO_PAD.encode(&point[1..33]), "y": URL_SAFE_NO_PAD.encode(&point[33..65]),
    }]});
    let discovery = json!({
        "issuer": url, "jwks_uri": format!("{url}/jwks"),
        "authorization_endpoint": format!("{url}/authorize"), "token_endpoint": format!("{url}/token"),
    });
    let router = Router::new()
        .route(
            "/.well-known/openid-configuration",
            get(move || async move { axum::Json(discovery) }),
        )
        .route("/jwks", get(move || async move { axum::Json(jwks) }))
        .route("/authorize", get(authorize))
        .route("/token", post(token))
        .with_state(idp.clone());
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    idp
}

#[tokio::test]
async fn oidc_authorization_code_with_pkce_ends_in_a_session() {
    init_tracing_and_crypto();
    let now = T0.parse::<jiff::Timestamp>().unwrap().as_second();
    let idp = start_idp(now).await;
    let settings = OidcSettings {
        username_claim: "email".into(),
        ..OidcSettings::new(&idp.url, "faros-hub")
    };
    let (hub, _up) = setup(move |c| c.oidc = Some(settings)).await;
    let client = no_redirects();
    let options: Value = client
        .get(hub.url("/api/session/options"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(options["oidc"]["issuer"], idp.url.as_str());

    // 1. The hub sends the browser to the issuer with a PKCE challenge and a state cookie.
    let start = client
        .get(hub.url("/api/session/oidc?return=/portal/orgs/a/workspaces/b/catalog"))
        .send()
        .await
        .unwrap();
    assert_eq!(start.status(), 303);
    let to_idp = start.headers()["location"].to_str().unwrap().to_string();
    assert!(to_idp.starts_with(&format!("{}/authorize?", idp.url)), "{to_idp}");
    let state_cookie = start.headers()["set-cookie"].to_str().unwrap().to_string();
    assert!(
        state_cookie.contains("SameSite=Lax") && state_cookie.contains("HttpOnly"),
        "{state_cookie}"
    );
    let state_cookie = state_cookie.split(';').next().unwrap().to_string();

    // 2. The issuer approves and redirects back with a code.
    let back = client.get(&to_idp).send().await.unwrap();
    let callback = back.headers()["location"].to_str().unwrap().to_string();
    assert!(
        callback.starts_with(&hub.url("/api/session/oidc/callback?code=")),
        "{callback}"
    );

    // Without the state cookie (another browser) the code is not redeemed.
    let foreign = client.get(&callback).send().await.unwrap();
    let to = foreign.headers()["location"].to_str().unwrap();
    assert!(to.starts_with("/portal/signin?error="), "{to}");

    // 3. The hub redeems the code with the verifier, verifies the ID token, starts the session.
    let done = client
        .get(&callback)
        .header("cookie", &state_cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(done.headers()["location"], "/portal/orgs/a/workspaces/b/catalog");
    let (cookie, header) = session_cookie(&done);
    assert!(
        header.contains("SameSite=Strict") && header.contains("HttpOnly"),
        "{header}"
    );
    let me: Value = http()
        .get(hub.url("/api/session"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(me["user"], "ada@example.com");

    // A replayed callback finds nothing pending.
    let replay = client
        .get(&callback)
        .header("cookie", &state_cookie)
        .send()
        .await
        .unwrap();
    let to = replay.headers()["location"].to_str().unwrap();
    assert!(to.starts_with("/portal/signin?error="), "{to}");
}

// ----- replicas on one kcp -------------------------------------------------------------------

const ALICE_KCP: &str = "alice-token-0123456789abcdef";
const BOB_KCP: &str = "bob-token-0123456789abcdef";

/// An embedded kcp whose faros tree the reconciler bootstrapped (the namespace sessions live in),
/// knowing alice and bob.
async fn shared_kcp() -> SharedKcp {
    SharedKcp::start(
        &[
            static_token(ALICE_KCP, "alice", "alice-uid", &["devs"]),
            static_token(BOB_KCP, "bob", "bob-uid", &["devs"]),
        ],
        None,
    )
    .await
}

impl Replica {
    async fn sign_in(&self, token: &str) -> String {
        let resp = http()
            .post(self.url("/api/session"))
            .header("origin", self.origin())
            .header("x-faros-csrf", "1")
            .json(&json!({ "token": token }))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 201);
        session_cookie(&resp).0
    }

    /// `GET /api/session`'s status and user with `cookie`.
    async fn whoami(&self, cookie: &str) -> (u16, Value) {
        let resp = http()
            .get(self.url("/api/session"))
            .header("cookie", cookie)
            .send()
            .await
            .unwrap();
        let status = resp.status().as_u16();
        (status, resp.json().await.unwrap_or(Value::Null))
    }
}

/// Sessions are kept in kcp: a session made on one replica is honoured by another, a sign-out on
/// one ends it on the others within a second, and it survives restarting every replica. What kcp
/// stores is neither the cookie nor the credential.
#[tokio::test]
async fn sessions_are_shared_by_replicas_and_survive_restarts() {
    let kcp = shared_kcp().await;
    let a = Replica::start(&kcp, None, |_| {}).await;
    let b = Replica::start(&kcp, None, |_| {}).await;

    let cookie = a.sign_in(ALICE_KCP).await;
    // Right away on B: its watch may not have delivered the record yet; B reads it from kcp.
    let (status, me) = b.whoami(&cookie).await;
    assert_eq!((status, me["user"].as_str()), (200, Some("alice")), "{me}");

    // kcp holds a sealed record named by a digest: neither the cookie nor the token in the clear.
    let secrets: kube::Api<k8s_openapi::api::core::v1::Secret> = kube::Api::namespaced(
        faros_core::client::ClientFactory::new(kcp.admin().await)
            .unwrap()
            .cluster(faros_core::names::SYSTEM_CONTROLLERS_PATH)
            .unwrap(),
        faros_core::names::SYSTEM_NAMESPACE,
    );
    let stored = secrets
        .list(&kube::api::ListParams::default().labels("faros.sh/hub-record=session"))
        .await
        .unwrap();
    assert_eq!(stored.items.len(), 1);
    let value = cookie.split_once('=').unwrap().1;
    let dump = serde_json::to_string(&stored.items[0]).unwrap();
    assert!(!dump.contains(value) && !dump.contains(ALICE_KCP), "{dump}");
    let sealed = &stored.items[0].data.as_ref().unwrap()["sealed"].0;
    assert!(!sealed.windows(ALICE_KCP.len()).any(|w| w == ALICE_KCP.as_bytes()));

    // Restart every replica (same addresses): the session still works on both.
    let (addr_a, addr_b) = (a.stop().await, b.stop().await);
    let a = Replica::start(&kcp, Some(addr_a), |_| {}).await;
    let b = Replica::start(&kcp, Some(addr_b), |_| {}).await;
    for r in [&a, &b] {
        let (status, me) = r.whoami(&cookie).await;
        assert_eq!((status, me["user"].as_str()), (200, Some("alice")), "{me}");
    }
    // B has the session cached (its watch listed it), so the sign-out must reach it by the watch.
    eventually("B's watch has the session", WAIT, || async {
        let list = secrets.list(&kube::api::ListParams::default()).await.ok()?;
        (!list.items.is_empty()).then_some(())
    })
    .await;

    // Sign-out on A ends the session on B within a second.
    let out = http()
        .delete(a.url("/api/session"))
        .header("cookie", &cookie)
        .header("origin", a.origin())
        .header("x-faros-csrf", "1")
        .send()
        .await
        .unwrap();
    assert_eq!(out.status(), 204);
    let signed_out = std::time::Instant::now();
    eventually("B refuses the signed-out session", Duration::from_secs(1), || async {
        (b.whoami(&cookie).await.0 == 401).then_some(())
    })
    .await;
    assert!(signed_out.elapsed() < Duration::from_secs(1));
    assert_eq!(a.whoami(&cookie).await.0, 401);

    a.stop().await;
    b.stop().await;
    kcp.shutdown().await;
}

/// An OIDC sign-in started on one replica completes on another, once.
#[tokio::test]
async fn oidc_callback_on_another_replica_completes_the_sign_in() {
    let kcp = shared_kcp().await;
    let idp = start_idp(jiff::Timestamp::now().as_second()).await;
    let settings = OidcSettings {
        username_claim: "email".into(),
        ..OidcSettings::new(&idp.url, "faros-hub")
    };
    let a = Replica::start(&kcp, None, |c| c.oidc = Some(settings.clone())).await;
    let b = Replica::start(&kcp, None, |c| c.oidc = Some(settings)).await;
    let client = no_redirects();
    let start = client
        .get(a.url("/api/session/oidc?return=/portal/orgs/a/workspaces/b/catalog"))
        .send()
        .await
        .unwrap();
    assert_eq!(start.status(), 303);
    let to_idp = start.headers()["location"].to_str().unwrap().to_string();
    let state_cookie = start.headers()["set-cookie"].to_str().unwrap();
    let state_cookie = state_cookie.split(';').next().unwrap().to_string();
    let back = client.get(&to_idp).send().await.unwrap();
    let callback = back.headers()["location"].to_str().unwrap().to_string();
    // The browser lands on B (the balancer's choice); A's address was the redirect URI.
    let on_b = callback.replace(&a.addr.to_string(), &b.addr.to_string());
    assert_ne!(on_b, callback);
    let done = client.get(&on_b).header("cookie", &state_cookie).send().await.unwrap();
    assert_eq!(done.headers()["location"], "/portal/orgs/a/workspaces/b/catalog");
    let (cookie, _) = session_cookie(&done);
    let (status, me) = a.whoami(&cookie).await;
    assert_eq!((status, me["user"].as_str()), (200, Some("ada@example.com")), "{me}");
    // Replayed on A: the pending sign-in was taken by B.
    let replay = client
        .get(&callback)
        .header("cookie", &state_cookie)
        .send()
        .await
        .unwrap();
    let to = replay.headers()["location"].to_str().unwrap();
    assert!(to.starts_with("/portal/signin?error="), "{to}");

    a.stop().await;
    b.stop().await;
    kcp.shutdown().await;
}

/// Team workspace `org`/`ws` with alice and bob as members (as the tenancy API writes them).
async fn team_workspace(kcp: &SharedKcp, org: &str, ws: &str) {
    use faros_core::kcp::{Workspace, WorkspaceSpec, WorkspaceTypeReference};
    use faros_core::names;
    use faros_hub_api::tenancy::{Role, rbac};
    use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
    let factory = faros_core::client::ClientFactory::new(kcp.admin().await).unwrap();
    for (parent, name, type_) in [
        (names::TENANTS_PATH.to_string(), org, names::WORKSPACE_TYPE_ORGANIZATION),
        (names::org_workspace_path(org), ws, names::WORKSPACE_TYPE_WORKSPACE),
    ] {
        let api: kube::Api<Workspace> = kube::Api::all(factory.cluster(&parent).unwrap());
        let w = Workspace::new(
            name,
            WorkspaceSpec {
                type_: Some(WorkspaceTypeReference {
                    name: type_.into(),
                    path: Some(names::WORKSPACE_TYPES_PATH.into()),
                }),
                ..Default::default()
            },
        );
        // The reconciler bootstraps the WorkspaceTypes after the tree; until then kcp refuses them.
        eventually("the workspace is accepted", WAIT, || async {
            match api.create(&kube::api::PostParams::default(), &w).await {
                Ok(_) => Some(()),
                Err(kube::Error::Api(s)) if s.code == 409 => Some(()),
                Err(_) => None,
            }
        })
        .await;
        faros_core::wait::wait_for(api, name, |w| w.is_some_and(|w| w.is_ready()), WAIT)
            .await
            .unwrap();
    }
    let team = factory.cluster(&names::team_workspace_path(org, ws)).unwrap();
    let roles: kube::Api<ClusterRole> = kube::Api::all(team.clone());
    for r in rbac::workspace_roles() {
        roles.create(&kube::api::PostParams::default(), &r).await.unwrap();
    }
    let crbs: kube::Api<ClusterRoleBinding> = kube::Api::all(team);
    for b in [
        rbac::member_binding("alice", Role::Admin),
        rbac::member_binding("bob", Role::Member),
    ] {
        crbs.create(&kube::api::PostParams::default(), &b).await.unwrap();
    }
}

/// One MCP streamable-HTTP POST (protocol 2025-06-18): status, session id, body.
async fn mcp_post(url: &str, token: &str, session: Option<&str>, body: Value) -> (u16, Option<String>, String) {
    let mut req = http()
        .post(url)
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18")
        .json(&body);
    if let Some(s) = session {
        req = req.header("mcp-session-id", s);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    let sid = resp
        .headers()
        .get("mcp-session-id")
        .map(|v| v.to_str().unwrap().to_string());
    (status, sid, resp.text().await.unwrap())
}

/// An MCP session opened on one replica continues on another (and after the first restarts); it
/// cannot be carried to another user.
#[tokio::test]
async fn mcp_sessions_continue_on_any_replica_and_stay_with_their_caller() {
    let kcp = shared_kcp().await;
    let a = Replica::start(&kcp, None, |_| {}).await;
    let b = Replica::start(&kcp, None, |_| {}).await;
    team_workspace(&kcp, "acme", "dev").await;
    let path = "/api/orgs/acme/workspaces/dev/mcp";

    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    // Membership reaches the hub through kcp's RBAC a moment after it is written.
    let sid = eventually("alice initializes on A", WAIT, || async {
        let (status, sid, _) = mcp_post(&a.url(path), ALICE_KCP, None, init.clone()).await;
        (status == 200).then_some(sid).flatten()
    })
    .await;
    let (status, _, _) = mcp_post(
        &a.url(path),
        ALICE_KCP,
        Some(&sid),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await;
    assert_eq!(status, 202);

    let list = |id: u64| json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"});
    let (status, _, body) = mcp_post(&b.url(path), ALICE_KCP, Some(&sid), list(2)).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"tools\""), "{body}");

    // Bob, a member of the same workspace, cannot continue alice's session on either replica.
    for r in [&a, &b] {
        let (status, _, body) = mcp_post(&r.url(path), BOB_KCP, Some(&sid), list(3)).await;
        assert_eq!(status, 404, "{body}");
    }

    // A restarts: the session continues there too.
    let addr = a.stop().await;
    let a = Replica::start(&kcp, Some(addr), |_| {}).await;
    let (status, _, body) = mcp_post(&a.url(path), ALICE_KCP, Some(&sid), list(4)).await;
    assert_eq!(status, 200, "{body}");

    a.stop().await;
    b.stop().await;
    kcp.shutdown().await;
}

/// A membership granted through one replica is honoured at once by another that refused the user
/// a moment before: a cached refusal is asked again (a cached grant may still outlive a revocation
/// by the decision TTL, as on one hub).
#[tokio::test]
async fn a_membership_granted_on_one_replica_is_honoured_at_once_by_another() {
    let kcp = shared_kcp().await;
    let a = Replica::start(&kcp, None, |_| {}).await;
    let b = Replica::start(&kcp, None, |_| {}).await;
    team_workspace(&kcp, "acme", "dev").await;
    let members = "/api/orgs/acme/workspaces/dev/members/bob";
    let workspace = "/api/orgs/acme/workspaces/dev";
    let call = |method: reqwest::Method, url: String, token: &'static str, body: Option<Value>| async move {
        let mut req = http().request(method, url).bearer_auth(token);
        if let Some(body) = body {
            req = req.json(&body);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        (status, resp.text().await.unwrap())
    };
    // Alice (admin) can act once kcp's RBAC has her binding.
    eventually("alice is admin of acme/dev on A", WAIT, || async {
        let (status, _) = call(reqwest::Method::GET, a.url(workspace), ALICE_KCP, None).await;
        (status == 200).then_some(())
    })
    .await;
    let (status, body) = call(reqwest::Method::DELETE, a.url(members), ALICE_KCP, None).await;
    assert!(matches!(status, 200 | 204), "revoking bob on A: {status} {body}");
    // B has never seen bob: it asks kcp, which no longer lets him in, and remembers that.
    eventually("B to refuse bob", WAIT, || async {
        let (status, _) = call(reqwest::Method::GET, b.url(workspace), BOB_KCP, None).await;
        (status == 404).then_some(())
    })
    .await;
    let (status, body) = call(
        reqwest::Method::PUT,
        a.url(members),
        ALICE_KCP,
        Some(json!({"role": "member"})),
    )
    .await;
    assert_eq!(status, 200, "granting bob on A: {body}");
    // A answers once the grant is in kcp; B at once after that, without waiting out its cache.
    eventually("A to let bob in", WAIT, || async {
        let (status, _) = call(reqwest::Method::GET, a.url(workspace), BOB_KCP, None).await;
        (status == 200).then_some(())
    })
    .await;
    let (status, body) = call(reqwest::Method::GET, b.url(workspace), BOB_KCP, None).await;
    assert_eq!(status, 200, "B still refused bob after A let him in: {body}");

    a.stop().await;
    b.stop().await;
    kcp.shutdown().await;
}
