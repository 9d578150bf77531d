//! The test IdP itself: a real login through its form yields an ID token with the user's groups,
//! a wrong password and a disabled user are refused, and the refresh token works until the user
//! is disabled.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use base64::Engine;
use faros_test_support::oidc::{Idp, IdpClient, IdpUser, Ttls};
use serde_json::Value;

fn claims(jwt: &str) -> Value {
    let payload = jwt.split('.').nth(1).unwrap();
    serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(payload)
            .unwrap(),
    )
    .unwrap()
}

#[tokio::test]
async fn login_groups_refresh_and_disable() {
    let alice = IdpUser::new("alice", "wonderland", &["dev", "ops"]);
    let idp = Idp::start(
        vec![alice.clone()],
        vec![IdpClient::new("faros", "http://127.0.0.1/callback")],
        Ttls::default(),
    )
    .await
    .unwrap();

    let tokens = idp.login("faros", "alice", "wonderland").await.unwrap();
    let c = claims(&tokens.id_token);
    assert_eq!(c["iss"], idp.issuer());
    assert_eq!(c["aud"], "faros");
    assert_eq!(c["sub"], "alice");
    assert_eq!(c["email"], "alice@example.com");
    assert_eq!(c["groups"], serde_json::json!(["dev", "ops"]));
    let refresh = tokens.refresh_token.expect("offline_access yields a refresh token");

    let wrong = idp.login("faros", "alice", "guess").await.unwrap_err().to_string();
    assert!(wrong.contains("Invalid username or password"), "{wrong}");

    let renewed = idp.refresh("faros", &refresh).await.unwrap();
    assert_eq!(claims(&renewed.id_token)["sub"], "alice");

    idp.set_user(IdpUser {
        disabled: true,
        ..alice
    })
    .unwrap();
    let refused = idp.login("faros", "alice", "wonderland").await.unwrap_err().to_string();
    assert!(refused.contains("disabled"), "{refused}");
    let refresh = renewed.refresh_token.unwrap_or(refresh);
    assert!(
        idp.refresh("faros", &refresh).await.is_err(),
        "a disabled user's refresh token is refused"
    );
}
