//! User authentication: OIDC against a test issuer on 127.0.0.1 (keys generated here, rotation
//! included), static tokens from a token file (reload included), and both through the hub router.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::rsa::{KeyPair as RsaKeyPair, KeySize};
use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair, RSA_PKCS1_SHA256};
use axum::Router;
use axum::routing::get;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use common::{ALICE, TestHub, eventually, http};
use faros_core::status::Status;
use faros_hub_api::auth::oidc::http_client;
use faros_hub_api::auth::tokenreview::{ReviewedUser, StaticReviewer};
use faros_hub_api::auth::{
    Authenticator, BearerTokenReview, Caller, Chain, CredentialSource, OidcAuthenticator, OidcSettings, StaticTokens,
    Verdict,
};
use faros_hub_api::catalog::clock::Clock;
use faros_test_support::users::{static_token, write_token_file};
use http::HeaderMap;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio::net::TcpListener;

const WAIT: Duration = Duration::from_secs(15);

enum Signer {
    Ec(EcdsaKeyPair),
    Rsa(RsaKeyPair),
}

/// A signing key of the test issuer.
struct TestKey {
    kid: String,
    signer: Signer,
}

impl TestKey {
    fn es256(kid: &str) -> Self {
        let pair = EcdsaKeyPair::generate(&ECDSA_P256_SHA256_FIXED_SIGNING).unwrap();
        Self {
            kid: kid.into(),
            signer: Signer::Ec(pair),
        }
    }

    fn rs256(kid: &str) -> Self {
        Self {
            kid: kid.into(),
            signer: Signer::Rsa(RsaKeyPair::generate(KeySize::Rsa2048).unwrap()),
        }
    }

    fn jwk(&self) -> Value {
        match &self.signer {
            Signer::Ec(pair) => {
                let point = pair.public_key().as_ref();
                json!({
                    "kty": "EC", "crv": "P-256", "use": "sig", "alg": "ES256", "kid": self.kid,
                    "x": URL_SAFE_NO_PAD.encode(&point[1..33]),
                    "y": URL_SAFE_NO_PAD.encode(&point[33..65]),
                })
            }
            Signer::Rsa(pair) => {
                let public = pair.public_key();
                json!({
                    "kty": "RSA", "use": "sig", "alg": "RS256", "kid": self.kid,
                    "n": URL_SAFE_NO_PAD.encode(public.modulus().big_endian_without_leading_zero()),
                    "e": URL_SAFE_NO_PAD.encode(public.exponent().big_endian_without_leading_zero()),
                })
            }
        }
    }

    fn alg(&self) -> &'static str {
        match self.signer {
            Signer::Ec(_) => "ES256",
            Signer::Rsa(_) => "RS256",
        }
    }

    /// A compact JWS of `claims` with this key's alg and kid.
    fn sign(&self, claims: &Value) -> String {
        self.sign_with_header(&json!({"alg": self.alg(), "kid": self.kid, "typ": "JWT"}), claims)
    }

    fn sign_with_header(&self, header: &Value, claims: &Value) -> String {
        let input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let rng = SystemRandom::new();
        let signature = match &self.signer {
            Signer::Ec(pair) => pair.sign(&rng, input.as_bytes()).unwrap().as_ref().to_vec(),
            Signer::Rsa(pair) => {
                let mut sig = vec![0; pair.public_modulus_len()];
                pair.sign(&RSA_PKCS1_SHA256, &rng, input.as_bytes(), &mut sig).unwrap();
                sig
            }
        };
        format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature))
    }
}

/// An OIDC issuer on 127.0.0.1: discovery plus a JWKS the test can change, counting JWKS fetches.
struct Issuer {
    url: String,
    jwks: Arc<Mutex<Vec<Value>>>,
    fetches: Arc<AtomicUsize>,
}

impl Issuer {
    async fn start(keys: &[&TestKey]) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let jwks = Arc::new(Mutex::new(keys.iter().map(|k| k.jwk()).collect::<Vec<_>>()));
        let fetches = Arc::new(AtomicUsize::new(0));
        let discovery = json!({
            "issuer": url,
            "jwks_uri": format!("{url}/keys"),
            "id_token_signing_alg_values_supported": ["RS256", "ES256"],
        });
        let (served, counted) = (jwks.clone(), fetches.clone());
        let router = Router::new()
            .route(
                "/.well-known/openid-configuration",
                get(move || {
                    let discovery = discovery.clone();
                    async move { axum::Json(discovery) }
                }),
            )
            .route(
                "/keys",
                get(move || {
                    counted.fetch_add(1, Ordering::SeqCst);
                    let keys = served.lock().unwrap().clone();
                    async move { axum::Json(json!({ "keys": keys })) }
                }),
            );
        tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
        Self { url, jwks, fetches }
    }

    fn publish(&self, keys: &[&TestKey]) {
        *self.jwks.lock().unwrap() = keys.iter().map(|k| k.jwk()).collect();
    }

    fn fetches(&self) -> usize {
        self.fetches.load(Ordering::SeqCst)
    }

    fn settings(&self) -> OidcSettings {
        OidcSettings {
            groups_claim: Some("groups".into()),
            groups_prefix: Some("oidc:".into()),
            jwks_min_interval: Duration::ZERO,
            ..OidcSettings::new(&self.url, "faros-hub")
        }
    }

    /// Claims of a valid token for `sub` (expires in 5 minutes).
    fn claims(&self, sub: &str) -> Value {
        let now = jiff::Timestamp::now().as_second();
        json!({
            "iss": self.url, "aud": ["faros-hub", "other"], "sub": sub,
            "groups": ["dev", "ops"], "iat": now, "exp": now + 300,
        })
    }
}

fn authenticator(settings: OidcSettings) -> OidcAuthenticator {
    faros_core::telemetry::install_crypto_provider();
    let http = http_client(&settings, Duration::from_secs(5)).unwrap();
    OidcAuthenticator::new(settings, http).unwrap()
}

fn bearer(token: &str) -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert(http::header::AUTHORIZATION, format!("Bearer {token}").parse().unwrap());
    h
}

/// `Ok(user)` or `Err((code, message))`, checking that a rejection never echoes the token.
async fn outcome(authn: &dyn Authenticator, token: &str) -> Result<String, (u16, String)> {
    match authn.authenticate(&bearer(token)).await {
        Ok(caller) => Ok(caller.user),
        Err(status) => {
            assert!(!status.message.contains(token), "the Status echoes the token");
            Err((status.code, status.message))
        }
    }
}

fn unauthorized(reason: &str) -> Result<String, (u16, String)> {
    Err((401, format!("invalid OIDC token: {reason}")))
}

#[tokio::test]
async fn valid_tokens_map_to_prefixed_users_and_groups() {
    let (ec, rsa) = (TestKey::es256("ec-1"), TestKey::rs256("rsa-1"));
    let issuer = Issuer::start(&[&ec, &rsa]).await;
    let authn = authenticator(issuer.settings());

    let caller = authn
        .authenticate(&bearer(&ec.sign(&issuer.claims("alice"))))
        .await
        .unwrap();
    assert_eq!(
        caller,
        Caller {
            user: format!("{}#alice", issuer.url),
            groups: vec!["oidc:dev".into(), "oidc:ops".into(), "system:authenticated".into()],
            source: CredentialSource::Oidc,
            ..Default::default()
        }
    );
    assert_eq!(
        outcome(&authn, &rsa.sign(&issuer.claims("bob"))).await,
        Ok(format!("{}#bob", issuer.url))
    );

    let mut wrong_aud = issuer.claims("alice");
    wrong_aud["aud"] = json!("someone-else");
    let mut expired = issuer.claims("alice");
    expired["exp"] = json!(jiff::Timestamp::now().as_second() - 120);
    let foreign = TestKey::es256("ec-1");
    let cases = [
        (
            ec.sign(&wrong_aud),
            unauthorized("the token's audience does not include the configured client ID"),
        ),
        (ec.sign(&expired), unauthorized("the token has expired")),
        (
            foreign.sign(&issuer.claims("mallory")),
            unauthorized("the signature does not verify"),
        ),
        (
            ec.sign_with_header(&json!({"alg": "HS256", "kid": "ec-1"}), &issuer.claims("mallory")),
            unauthorized("the signing algorithm is not RS256 or ES256"),
        ),
        (
            ec.sign_with_header(&json!({"alg": "RS256", "kid": "ec-1"}), &issuer.claims("mallory")),
            unauthorized("the signing key is not in the issuer's key set"),
        ),
    ];
    for (token, want) in cases {
        assert_eq!(outcome(&authn, &token).await, want);
    }
    assert_eq!(
        issuer.fetches(),
        2,
        "one fetch, plus one for the key ID no key has with RS256"
    );
}

#[tokio::test]
async fn tokens_of_other_issuers_fall_through_to_the_next_authenticator() {
    let key = TestKey::es256("k1");
    let issuer = Issuer::start(&[&key]).await;
    let oidc = Arc::new(authenticator(issuer.settings()));

    let mut other = issuer.claims("alice");
    other["iss"] = json!("https://elsewhere.example");
    let other_issuer = key.sign(&other);
    assert_eq!(oidc.verdict(&bearer(&other_issuer)).await, Verdict::NotMine);
    assert_eq!(oidc.verdict(&bearer("an-opaque-token")).await, Verdict::NotMine);
    assert_eq!(issuer.fetches(), 0, "foreign tokens cause no fetch");

    let reviewer = StaticReviewer::default().with(
        "root",
        &other_issuer,
        ReviewedUser {
            username: "system:serviceaccount:default:provider".into(),
            ..Default::default()
        },
    );
    let chain = Chain(vec![
        oidc.clone(),
        Arc::new(BearerTokenReview::new(Arc::new(reviewer), "root")),
    ]);
    let caller = chain.authenticate(&bearer(&other_issuer)).await.unwrap();
    assert_eq!(
        (caller.user.as_str(), caller.source),
        ("system:serviceaccount:default:provider", CredentialSource::TokenReview)
    );
    assert_eq!(
        chain
            .authenticate(&bearer(&key.sign(&issuer.claims("alice"))))
            .await
            .unwrap()
            .source,
        CredentialSource::Oidc
    );
    assert_eq!(
        outcome(&chain, "an-opaque-token").await,
        Err((401, "the bearer token is not valid".into()))
    );
}

#[tokio::test]
async fn key_rotation_is_picked_up_and_old_keys_verify_while_published() {
    let (k1, k2) = (TestKey::es256("k1"), TestKey::rs256("k2"));
    let issuer = Issuer::start(&[&k1]).await;
    let authn = authenticator(issuer.settings());
    let old = k1.sign(&issuer.claims("alice"));
    let alice = Ok(format!("{}#alice", issuer.url));

    assert_eq!(outcome(&authn, &old).await, alice);
    assert_eq!(issuer.fetches(), 1);

    // Rotation: the issuer publishes k2 next to k1 and signs with k2.
    issuer.publish(&[&k1, &k2]);
    let new = k2.sign(&issuer.claims("alice"));
    assert_eq!(
        outcome(&authn, &new).await,
        alice,
        "the unknown kid made the hub refetch"
    );
    assert_eq!(issuer.fetches(), 2);
    assert_eq!(outcome(&authn, &old).await, alice, "k1 is still published");
    assert_eq!(outcome(&authn, &new).await, alice);
    assert_eq!(issuer.fetches(), 2, "known kids need no fetch");

    // k1 retired: once the hub refetches, tokens signed with it no longer verify.
    issuer.publish(&[&k2]);
    let unknown = TestKey::es256("k3").sign(&issuer.claims("alice"));
    assert_eq!(
        outcome(&authn, &unknown).await,
        unauthorized("the signing key is not in the issuer's key set")
    );
    assert_eq!(
        outcome(&authn, &old).await,
        unauthorized("the signing key is not in the issuer's key set")
    );
    assert_eq!(outcome(&authn, &new).await, alice);
}

#[tokio::test]
async fn unknown_kids_refetch_at_most_once_per_interval() {
    let (k1, k2) = (TestKey::es256("k1"), TestKey::es256("k2"));
    let issuer = Issuer::start(&[&k1]).await;
    let authn = authenticator(OidcSettings {
        jwks_min_interval: Duration::from_secs(3600),
        ..issuer.settings()
    });
    assert!(outcome(&authn, &k1.sign(&issuer.claims("alice"))).await.is_ok());
    issuer.publish(&[&k1, &k2]);
    let rotated = k2.sign(&issuer.claims("alice"));
    for _ in 0..3 {
        assert_eq!(
            outcome(&authn, &rotated).await,
            unauthorized("the signing key is not in the issuer's key set")
        );
    }
    assert_eq!(
        issuer.fetches(),
        1,
        "junk or new kids cannot make the hub hammer the issuer"
    );
}

#[tokio::test]
async fn an_unreachable_or_mismatched_issuer_is_unavailable_not_unauthorized() {
    let key = TestKey::es256("k1");
    let issuer = Issuer::start(&[&key]).await;
    // Configured with a trailing slash: the discovery document's issuer differs, so no keys are trusted.
    let settings = OidcSettings {
        issuer_url: format!("{}/", issuer.url),
        ..issuer.settings()
    };
    let authn = authenticator(settings);
    let mut claims = issuer.claims("alice");
    claims["iss"] = json!(format!("{}/", issuer.url));
    let status = authn.authenticate(&bearer(&key.sign(&claims))).await.unwrap_err();
    assert_eq!(
        (status.code, status.message.as_str()),
        (
            503,
            "cannot authenticate right now: the OIDC issuer's keys could not be fetched"
        )
    );
    assert_eq!(issuer.fetches(), 0);
}

#[tokio::test]
async fn static_tokens_authenticate_and_reload() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tokens.csv");
    let alice = static_token("alice-static", "alice", "1", &["dev"]);
    write_token_file(&path, std::slice::from_ref(&alice)).unwrap();
    let tokens = StaticTokens::load(&path)
        .unwrap()
        .check_every(Duration::from_millis(50));

    let caller = tokens.authenticate(&bearer("alice-static")).await.unwrap();
    assert_eq!(
        caller,
        Caller {
            user: "alice".into(),
            uid: "1".into(),
            groups: vec!["dev".into(), "system:authenticated".into()],
            source: CredentialSource::StaticToken,
            ..Default::default()
        }
    );
    assert_eq!(
        outcome(&tokens, "carol-static").await,
        Err((401, "the bearer token is not valid".into()))
    );

    write_token_file(&path, &[alice, static_token("carol-static", "carol", "3", &[])]).unwrap();
    eventually("carol's token to authenticate", WAIT, || async {
        (outcome(&tokens, "carol-static").await == Ok("carol".into())).then_some(())
    })
    .await;
    assert_eq!(tokens.reload_counts().applied, 1);

    // Written by hand: the helper writes only valid lines.
    std::fs::write(&path, "mallory-static,mallory,9\nnot a valid line\n").unwrap();
    eventually("the bad edit to be seen and refused", WAIT, || async {
        let _ = tokens.authenticate(&bearer("alice-static")).await;
        (tokens.reload_counts().rejected == 1).then_some(())
    })
    .await;
    assert_eq!(outcome(&tokens, "alice-static").await, Ok("alice".into()));
    assert_eq!(outcome(&tokens, "carol-static").await, Ok("carol".into()));
    assert_eq!(
        outcome(&tokens, "mallory-static").await,
        Err((401, "the bearer token is not valid".into()))
    );
}

#[tokio::test]
async fn the_hub_router_authenticates_static_oidc_and_kcp_tokens() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tokens.csv");
    write_token_file(&path, &[static_token("alice-static", "alice", "1", &[])]).unwrap();
    let key = TestKey::es256("k1");
    let issuer = Issuer::start(&[&key]).await;
    let settings = issuer.settings();
    let hub = TestHub::start("https://127.0.0.1:1", |config| {
        config.token_file = Some(path.clone());
        config.oidc = Some(settings);
    })
    .await;
    // The hub judges expiry by its (manual) clock.
    let now = hub.clock.now().as_second();
    let mut claims = issuer.claims("olivia");
    claims["iat"] = json!(now);
    claims["exp"] = json!(now + 300);
    let id_token = key.sign(&claims);

    let client = http();
    let get = |token: Option<String>| {
        let mut req = client.get(hub.url("/api/providers"));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        async move {
            let resp = req.send().await.unwrap();
            (resp.status().as_u16(), resp.text().await.unwrap())
        }
    };
    for token in ["alice-static".to_string(), id_token.clone(), ALICE.to_string()] {
        let (code, body) = get(Some(token)).await;
        assert_eq!(code, 200, "{body}");
    }
    for token in [None, Some("nobody-static".to_string())] {
        let (code, body) = get(token.clone()).await;
        let status: Status = serde_json::from_str(&body).unwrap();
        assert_eq!((code, status.code), (401, 401));
        assert!(!body.contains("nobody-static"));
    }
    hub.stop.cancel();
}
