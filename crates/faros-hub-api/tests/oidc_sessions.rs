//! Portal sessions of OIDC users against a real identity provider (`e2e/oidc`, panva's
//! oidc-provider, with short-lived ID tokens) and two hub replicas sharing an embedded kcp: the
//! session renews its ID token with the refresh token, exactly once per renewal although both
//! replicas serve it at once (the IdP rotates refresh tokens and revokes the grant if a spent one is
//! used again), and outlives the ID token it started with; a role granted to an IdP group applies
//! to the group's members and ends with the next renewal after the IdP removes the user from the
//! group; a user the IdP disables loses the session at the next renewal; sign-out hands back the
//! IdP's RP-initiated logout. And the sign-in's bad paths: a wrong state, a replayed callback, an
//! expired login.
//!
//! Needs `npm ci --prefix e2e/oidc` (what `.ci/run` does).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{Replica, SharedKcp, eventually, http, no_redirects};
use faros_hub_api::auth::OidcSettings;
use faros_hub_api::catalog::clock::{Clock, ManualClock, SystemClock};
use faros_test_support::oidc::{Idp, IdpClient, IdpUser, Ttls};
use faros_test_support::users::static_token;
use jiff::Timestamp;
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(60);
const CALLBACK: &str = "/api/session/oidc/callback";
const COOKIE: &str = "__Host-faros-session";
const ADMIN_TOKEN: &str = "admin-token-0123456789abcdef";
/// ID tokens live this long: renewed after half of it.
const ID_TOKEN_TTL: u64 = 4;

/// An embedded kcp knowing the static-token admin; with `oidc`, it also authenticates the issuer's
/// ID tokens itself.
async fn start_kcp(oidc: Option<OidcSettings>) -> SharedKcp {
    SharedKcp::start(&[static_token(ADMIN_TOKEN, "admin", "admin-uid", &[])], oidc).await
}

/// One hub replica: sessions in kcp, shared with the other replicas.
async fn start_replica(kcp: &SharedKcp, oidc: OidcSettings, clock: Arc<dyn Clock>) -> Replica {
    Replica::start(kcp, None, |config| {
        config.oidc = Some(oidc);
        config.clock = clock;
        config.shutdown_grace = Duration::from_secs(1);
    })
    .await
}

impl Replica {
    /// `GET path` with the session cookie: status and JSON body.
    async fn get(&self, cookie: &str, path: &str) -> (u16, Value) {
        let resp = http()
            .get(self.url(path))
            .header("cookie", cookie)
            .send()
            .await
            .unwrap();
        let status = resp.status().as_u16();
        (status, resp.json().await.unwrap_or(Value::Null))
    }

    /// An MCP `initialize` at `path` with the session cookie (a cookie-authenticated POST, so with
    /// the portal's CSRF proof): the status.
    async fn mcp_initialize(&self, cookie: &str, path: &str) -> u16 {
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
        http()
            .post(self.url(path))
            .header("cookie", cookie)
            .header("origin", self.origin())
            .header("x-faros-csrf", "1")
            .header("accept", "application/json, text/event-stream")
            .json(&init)
            .send()
            .await
            .unwrap()
            .status()
            .as_u16()
    }

    /// `path` as the static-token admin.
    async fn admin(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut req = http().request(method, self.url(path)).bearer_auth(ADMIN_TOKEN);
        if let Some(body) = body {
            req = req.json(&body);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        (status, resp.json().await.unwrap_or(Value::Null))
    }
}

fn settings(idp: &Idp) -> OidcSettings {
    let mut s = OidcSettings::new(idp.issuer(), "faros-hub");
    s.username_claim = "email".into();
    s.groups_claim = Some("groups".into());
    s.ca_pem = Some(idp.ca_pem().to_string());
    s
}

/// The IdP with alice (group `dev`) and a client for `replicas`' callbacks.
async fn idp_for(replicas: &[&Replica], idp: &mut Idp) {
    let mut client = IdpClient::new("faros-hub", &replicas[0].url(CALLBACK));
    client.redirect_uris = replicas.iter().map(|r| r.url(CALLBACK)).collect();
    client.post_logout_redirect_uris = replicas.iter().map(|r| r.url("/portal/signin?signedOut=1")).collect();
    idp.add_client(client).await.unwrap();
}

async fn sign_in(idp: &Idp, replica: &Replica, user: &str, password: &str) -> String {
    let done = idp
        .sign_in_via(&replica.url("/api/session/oidc"), CALLBACK, user, password)
        .await
        .unwrap();
    assert!(
        done.location.starts_with("/portal/") && !done.location.starts_with("/portal/signin"),
        "signed in: {done:?}"
    );
    done.cookie(COOKIE).expect("a session cookie")
}

fn token_expiry(session: &Value) -> Timestamp {
    session["tokenExpiresAt"]
        .as_str()
        .unwrap_or_else(|| panic!("an OIDC session's token expiry: {session}"))
        .parse()
        .unwrap()
}

/// Waits until the session's ID token was renewed past `after` (a request renews it once due):
/// the new expiry.
async fn renewed(replica: &Replica, cookie: &str, after: Timestamp) -> Timestamp {
    eventually("the session's ID token to be renewed", WAIT, || async {
        let (status, body) = replica.get(cookie, "/api/session").await;
        assert_eq!(status, 200, "the session lives on: {body}");
        let t = token_expiry(&body);
        (t > after).then_some(t)
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn oidc_sessions_renew_once_across_replicas_follow_idp_groups_and_end_when_refused() {
    let mut idp = Idp::start(
        vec![IdpUser::new("alice", "wonderland", &["dev"])],
        Vec::new(),
        Ttls {
            id_token: ID_TOKEN_TTL,
            access_token: ID_TOKEN_TTL,
            ..Ttls::default()
        },
    )
    .await
    .unwrap();
    let kcp = start_kcp(Some(settings(&idp))).await;
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let a = start_replica(&kcp, settings(&idp), clock.clone()).await;
    let b = start_replica(&kcp, settings(&idp), clock).await;
    idp_for(&[&a, &b], &mut idp).await;

    // An org and a team workspace whose member role is granted to IdP group `dev`.
    eventually("org acme", WAIT, || async {
        let (s, _) = a
            .admin(reqwest::Method::POST, "/api/orgs", Some(json!({"name": "acme"})))
            .await;
        matches!(s, 200 | 201).then_some(())
    })
    .await;
    eventually("workspace acme/dev", WAIT, || async {
        let (s, _) = a
            .admin(
                reqwest::Method::POST,
                "/api/orgs/acme/workspaces",
                Some(json!({"name": "dev"})),
            )
            .await;
        matches!(s, 200 | 201 | 409).then_some(())
    })
    .await;
    let (s, body) = a
        .admin(
            reqwest::Method::PUT,
            "/api/orgs/acme/workspaces/dev/groups/system:authenticated",
            Some(json!({"role": "member"})),
        )
        .await;
    assert_eq!(s, 400, "system groups are refused: {body}");
    let (s, body) = a
        .admin(
            reqwest::Method::PUT,
            "/api/orgs/acme/workspaces/dev/groups/dev",
            Some(json!({"role": "member"})),
        )
        .await;
    assert_eq!(s, 200, "granting group dev: {body}");
    let (s, body) = a
        .admin(reqwest::Method::GET, "/api/orgs/acme/workspaces/dev/groups", None)
        .await;
    assert_eq!(s, 200);
    assert_eq!(
        body["items"],
        json!([{"group": "dev", "role": "member", "inherited": false}])
    );

    // Alice signs in through A; her session works on both replicas.
    let cookie = sign_in(&idp, &a, "alice", "wonderland").await;
    let (s, me) = a.get(&cookie, "/api/session").await;
    assert_eq!(s, 200, "{me}");
    assert_eq!(me["user"], "alice@example.com");
    assert!(me["groups"].as_array().unwrap().contains(&json!("dev")), "{me}");
    let first = token_expiry(&me);
    assert_eq!(b.get(&cookie, "/api/session").await.0, 200);

    // The group grants her the workspace, in the REST API and /api/me.
    eventually("alice to see acme/dev through group dev", WAIT, || async {
        let (s, _) = a.get(&cookie, "/api/orgs/acme/workspaces/dev").await;
        (s == 200).then_some(())
    })
    .await;
    // kcp itself, through the hub's pass-through with the session's ID token (kubectl's path):
    // the same group binding lets her list in the workspace.
    let through_kcp = "/clusters/root:faros:tenants:acme:dev/api/v1/namespaces";
    eventually("kcp to let alice list in acme/dev", WAIT, || async {
        let (s, _) = a.get(&cookie, through_kcp).await;
        (s == 200).then_some(())
    })
    .await;
    // And the workspace's MCP endpoint, on either replica.
    let mcp = "/api/orgs/acme/workspaces/dev/mcp";
    eventually(
        "alice to reach acme/dev's MCP endpoint through group dev",
        WAIT,
        || async { (b.mcp_initialize(&cookie, mcp).await == 200).then_some(()) },
    )
    .await;
    let (_, me) = b.get(&cookie, "/api/me").await;
    let orgs = me["organizations"].as_array().unwrap();
    assert!(
        orgs.iter()
            .any(|o| o["name"] == "acme" && o["workspaces"][0]["name"] == "dev"),
        "{me}"
    );

    // Renewal after renewal, each one raced by both replicas at once, until the session has
    // outlived its first ID token by more than the verifier's leeway.
    let outlived = first + jiff::SignedDuration::from_secs(faros_hub_api::auth::oidc::LEEWAY_SECONDS + 1);
    let mut current = first;
    let mut renewals = 0;
    while Timestamp::now() <= outlived {
        // Due: within half the token's lifetime of its expiry.
        let due = current - jiff::SignedDuration::from_secs((ID_TOKEN_TTL / 2) as i64);
        eventually("the ID token to be due for renewal", WAIT, || async {
            (Timestamp::now() >= due).then_some(())
        })
        .await;
        let racers = (0..8).map(|i| {
            let (replica, cookie) = (if i % 2 == 0 { &a } else { &b }, cookie.clone());
            async move { replica.get(&cookie, "/api/orgs/acme/workspaces/dev").await }
        });
        for (s, body) in futures::future::join_all(racers).await {
            assert_eq!(s, 200, "every racing request is served: {body}");
        }
        current = renewed(&b, &cookie, current).await;
        renewals += 1;
    }
    assert!(renewals >= 3, "{renewals} renewals");
    let (s, _) = a.get(&cookie, "/api/orgs/acme/workspaces/dev").await;
    assert_eq!(s, 200, "the session outlived its first ID token");

    // The IdP removes alice from `dev`: at the next renewal the workspace is gone for her.
    idp.set_user(IdpUser::new("alice", "wonderland", &[])).unwrap();
    let before = current;
    eventually("alice to lose acme/dev with her next token", WAIT, || async {
        let (s, _) = a.get(&cookie, "/api/orgs/acme/workspaces/dev").await;
        (s == 404).then_some(())
    })
    .await;
    let (s, body) = a.get(&cookie, through_kcp).await;
    assert_eq!(s, 403, "kcp refuses her new token too: {body}");
    assert_eq!(
        b.mcp_initialize(&cookie, mcp).await,
        404,
        "and so does the MCP endpoint"
    );
    let (s, me) = a.get(&cookie, "/api/session").await;
    assert_eq!(s, 200, "still signed in: {me}");
    assert!(token_expiry(&me) > before, "access ended with a renewal: {me}");
    assert!(!me["groups"].as_array().unwrap().contains(&json!("dev")), "{me}");

    // The IdP disables her: the next renewal is refused and the session ends on every replica.
    idp.set_user(IdpUser {
        disabled: true,
        ..IdpUser::new("alice", "wonderland", &[])
    })
    .unwrap();
    eventually("the session to end when renewal is refused", WAIT, || async {
        let (s, _) = a.get(&cookie, "/api/session").await;
        (s == 401).then_some(())
    })
    .await;
    eventually("the ended session to be gone on B too", WAIT, || async {
        let (s, _) = b.get(&cookie, "/api/session").await;
        (s == 401).then_some(())
    })
    .await;

    // Enabled again: sign-out ends the hub session and hands back the IdP's logout.
    idp.set_user(IdpUser::new("alice", "wonderland", &["dev"])).unwrap();
    let cookie = sign_in(&idp, &b, "alice", "wonderland").await;
    let resp = http()
        .delete(a.url("/api/session"))
        .header("cookie", &cookie)
        .header("origin", a.origin())
        .header("x-faros-csrf", "1")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let body: Value = resp.json().await.unwrap();
    // The hub's logout path: it redirects to the IdP's logout, which names the client and where
    // to come back, never the ID token (still valid, it would be a bearer in the browser's history).
    assert_eq!(body["logoutUrl"], "/api/session/oidc/logout", "{body}");
    let resp = no_redirects()
        .get(a.url("/api/session/oidc/logout"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 303);
    let logout = reqwest::Url::parse(resp.headers()["location"].to_str().unwrap()).unwrap();
    assert!(logout.as_str().starts_with(idp.issuer()), "{logout}");
    let q: std::collections::HashMap<_, _> = logout.query_pairs().into_owned().collect();
    assert_eq!(
        q.get("post_logout_redirect_uri").map(String::as_str),
        Some(a.url("/portal/signin?signedOut=1").as_str())
    );
    assert!(q.contains_key("client_id"), "{q:?}");
    assert!(!q.contains_key("id_token_hint"), "{q:?}");
    assert_eq!(a.get(&cookie, "/api/session").await.0, 401);
    eventually("signed out on B too", WAIT, || async {
        (b.get(&cookie, "/api/session").await.0 == 401).then_some(())
    })
    .await;

    a.stop().await;
    b.stop().await;
    idp.stop().await;
    kcp.shutdown().await;
}

/// The callback refuses a state the browser did not start, a replayed callback, and a sign-in
/// that took longer than its TTL (the login state has expired).
#[tokio::test]
async fn oidc_sign_in_refuses_a_wrong_state_a_replay_and_an_expired_login() {
    let kcp = start_kcp(None).await;
    let mut idp = Idp::start(
        vec![IdpUser::new("alice", "wonderland", &["dev"])],
        Vec::new(),
        Ttls::default(),
    )
    .await
    .unwrap();
    let clock = Arc::new(ManualClock::new(Timestamp::now()));
    let a = start_replica(&kcp, settings(&idp), clock.clone()).await;
    idp_for(&[&a], &mut idp).await;
    let start = a.url("/api/session/oidc");
    let refused = |location: &str, text: &str| {
        let url = reqwest::Url::parse(&format!("http://x{location}")).unwrap();
        assert_eq!(url.path(), "/portal/signin", "{location}");
        let error: String = url
            .query_pairs()
            .find(|(k, _)| k == "error")
            .map(|(_, v)| v.into_owned())
            .unwrap_or_default();
        assert!(error.contains(text), "{error:?} should say {text:?}");
    };

    // A good sign-in, then its callback replayed with the flow's cookie back in place: the code
    // is spent at the IdP.
    let done = idp.sign_in_via(&start, CALLBACK, "alice", "wonderland").await.unwrap();
    let callback = done.visited.iter().find(|u| u.contains(CALLBACK)).unwrap().clone();
    let no_redirects = no_redirects();
    let replay = no_redirects
        .get(&callback)
        .header("cookie", &done.callback_cookies)
        .send()
        .await
        .unwrap();
    refused(replay.headers()["location"].to_str().unwrap(), "already used");

    // A callback whose state is not the browser's flow.
    let forged = no_redirects
        .get(a.url(&format!("{CALLBACK}?code=forged&state=not-the-flows-state")))
        .header("cookie", &done.callback_cookies)
        .send()
        .await
        .unwrap();
    refused(
        forged.headers()["location"].to_str().unwrap(),
        "not started in this browser",
    );

    // The login outlasts its TTL at the IdP's form: the flow's signed cookie has expired.
    let late = idp
        .sign_in_via_with(&start, CALLBACK, "alice", "wonderland", || {
            clock.advance(Duration::from_secs(601));
        })
        .await
        .unwrap();
    refused(&late.location, "took too long");
    assert!(late.cookie(COOKIE).is_none(), "no session: {late:?}");

    a.stop().await;
    idp.stop().await;
    kcp.shutdown().await;
}
