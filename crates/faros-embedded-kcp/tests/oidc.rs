//! OIDC users on the embedded kcp (kube-apiserver's `--oidc-*` flags) with a real identity provider
//! (`e2e/oidc`, panva's oidc-provider): a user signed in through the IdP's login form is who
//! `kubectl auth whoami` says, with kube's username and groups prefixes; a token for another
//! audience, of another issuer or expired is a 401; a rotated signing key is picked up.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::TestServer;
use faros_core::oidc::OidcSettings;
use faros_test_support::eventually;
use faros_test_support::oidc::{Idp, IdpClient, IdpUser, Ttls};
use serde_json::Value;

const CLIENT: &str = "faros";
const REDIRECT: &str = "http://127.0.0.1/callback";

fn users() -> Vec<IdpUser> {
    vec![IdpUser::new("alice", "wonderland", &["dev", "ops"])]
}

async fn idp(ttls: Ttls) -> Idp {
    Idp::start(
        users(),
        vec![IdpClient::new(CLIENT, REDIRECT), IdpClient::new("other-app", REDIRECT)],
        ttls,
    )
    .await
    .unwrap()
}

/// kcp started with `--oidc-issuer-url=<idp> --oidc-client-id=faros --oidc-username-claim=email
/// --oidc-username-prefix=oidc: --oidc-groups-claim=groups --oidc-groups-prefix=oidc:
/// --oidc-ca-file=<idp CA>`.
async fn kcp(idp: &Idp) -> TestServer {
    let settings = OidcSettings {
        username_claim: "email".into(),
        username_prefix: Some("oidc:".into()),
        groups_claim: Some("groups".into()),
        groups_prefix: Some("oidc:".into()),
        ca_pem: Some(std::fs::read_to_string(idp.ca_file()).unwrap()),
        // A rotation test should not wait out the production rate limit.
        jwks_min_interval: Duration::from_millis(200),
        ..OidcSettings::new(idp.issuer(), CLIENT)
    };
    TestServer::start_with(|c| c.oidc = Some(settings)).await
}

/// `kubectl auth whoami -o json` with a kubeconfig for `root` holding `token` (run without
/// blocking: the server serves on this test's runtime).
async fn whoami(kcp: &TestServer, token: &str) -> Result<Value, String> {
    let path = kcp.dir.path().join(format!("kubeconfig-{}", rand_suffix()));
    std::fs::write(&path, kcp.server.kubeconfig("root", "oidc-user", token)).unwrap();
    let out = tokio::process::Command::new("kubectl")
        .args(["auth", "whoami", "-o", "json", "--kubeconfig"])
        .arg(&path)
        .output()
        .await
        .expect("running kubectl");
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(serde_json::from_slice(&out.stdout).unwrap())
}

fn rand_suffix() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

async fn status_with(kcp: &TestServer, token: &str) -> u16 {
    kcp.http()
        .get(kcp.url("/clusters/root/api/v1/namespaces"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[tokio::test]
async fn an_idp_user_is_who_kubectl_says_with_prefixes() {
    let idp = idp(Ttls::default()).await;
    let kcp = kcp(&idp).await;
    let tokens = idp.login(CLIENT, "alice", "wonderland").await.unwrap();
    let me = whoami(&kcp, &tokens.id_token).await.unwrap();
    assert_eq!(me["status"]["userInfo"]["username"], "oidc:alice@example.com", "{me}");
    assert_eq!(
        me["status"]["userInfo"]["groups"],
        serde_json::json!(["oidc:dev", "oidc:ops", "system:authenticated"]),
        "{me}"
    );
    // Authenticated, not authorized: RBAC decides from here on (no grant yet).
    assert_eq!(status_with(&kcp, &tokens.id_token).await, 403);
}

#[tokio::test]
async fn wrong_audience_unknown_issuer_and_garbage_are_401() {
    let idp = idp(Ttls::default()).await;
    let stranger = self::idp(Ttls::default()).await;
    let kcp = kcp(&idp).await;
    let other_audience = idp.login("other-app", "alice", "wonderland").await.unwrap();
    assert_eq!(status_with(&kcp, &other_audience.id_token).await, 401);
    let other_issuer = stranger.login(CLIENT, "alice", "wonderland").await.unwrap();
    assert_eq!(status_with(&kcp, &other_issuer.id_token).await, 401);
    let good = idp.login(CLIENT, "alice", "wonderland").await.unwrap().id_token;
    let (head, rest) = good.split_once('.').unwrap();
    let (_, sig) = rest.rsplit_once('.').unwrap();
    let forged_claims = base64_json(
        r#"{"iss":"ISS","aud":"faros","email":"mallory@example.com","exp":9999999999}"#
            .replace("ISS", idp.issuer())
            .as_str(),
    );
    assert_eq!(status_with(&kcp, &format!("{head}.{forged_claims}.{sig}")).await, 401);
    let err = whoami(&kcp, &other_audience.id_token).await.unwrap_err();
    assert!(err.contains("Unauthorized"), "{err}");
    // The good token still works: the rejections above did not poison the key cache.
    assert!(whoami(&kcp, &good).await.is_ok());
}

fn base64_json(json: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json)
}

#[tokio::test]
async fn an_expired_id_token_is_401() {
    // One second of life; kube tolerates 30 s of clock skew on top, so the wait is about 31 s.
    let idp = idp(Ttls {
        id_token: 1,
        ..Ttls::default()
    })
    .await;
    let kcp = kcp(&idp).await;
    let token = idp.login(CLIENT, "alice", "wonderland").await.unwrap().id_token;
    assert!(whoami(&kcp, &token).await.is_ok(), "fresh, the token works");
    eventually::eventually_some("the ID token to expire", Duration::from_secs(60), || async {
        (status_with(&kcp, &token).await == 401).then_some(())
    })
    .await;
}

#[tokio::test]
async fn a_rotated_signing_key_is_picked_up() {
    let idp = idp(Ttls::default()).await;
    let kcp = kcp(&idp).await;
    let before = idp.login(CLIENT, "alice", "wonderland").await.unwrap().id_token;
    assert!(whoami(&kcp, &before).await.is_ok());
    idp.rotate_keys().await.unwrap();
    let after = idp.login(CLIENT, "alice", "wonderland").await.unwrap().id_token;
    assert_ne!(kid(&before), kid(&after), "the IdP signs with the new key");
    eventually::eventually_some("the new key to verify", Duration::from_secs(30), || async {
        (status_with(&kcp, &after).await == 403).then_some(())
    })
    .await;
    // kubectl sees the same user as before the rotation.
    assert_eq!(
        whoami(&kcp, &after).await.unwrap()["status"]["userInfo"]["username"],
        "oidc:alice@example.com"
    );
}

fn kid(jwt: &str) -> String {
    use base64::Engine;
    let head = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(jwt.split('.').next().unwrap())
        .unwrap();
    serde_json::from_slice::<Value>(&head).unwrap()["kid"]
        .as_str()
        .unwrap()
        .to_string()
}
