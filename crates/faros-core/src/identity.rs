//! The signed identity assertion the hub attaches to every request it proxies to a provider backend
//! (docs/architecture.md#identity-headers-and-signed-assertions), and the JWKS the provider verifies it with.
//!
//! The backend proxy never forwards the caller's bearer token. Instead it strips inbound `X-Faros-*`
//! headers and adds `X-Faros-Assertion`: a JWT (compact JWS, RFC 7515) signed with ECDSA P-256 /
//! SHA-256 (`alg: ES256`, RFC 7518 §3.4) over [`Claims`] naming the caller (user, groups), where they act (org, workspace, logical
//! cluster) and which provider it is for (`aud`). A provider can therefore trust the identity without
//! ever holding a user credential, and an assertion minted for one provider is useless at another.
//!
//! Assertions are short-lived ([`DEFAULT_TTL`], at most [`MAX_TTL`]) because they are bearer
//! credentials between hub and provider and nothing revokes them. The hub publishes its public keys
//! as a JWKS (`{"keys":[{"kty":"EC","crv":"P-256","x":…,"y":…,"kid":…}]}`); verifiers pick the key by
//! `kid`, so the hub can rotate by publishing the new key before signing with it.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{
    ECDSA_P256_SHA256_FIXED, ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair, UnparsedPublicKey,
};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use serde::{Deserialize, Serialize};

/// JWS `alg` of ECDSA with P-256 and SHA-256 (RFC 7518 §3.4).
pub const ALG_ES256: &str = "ES256";
/// JWK `kty` of elliptic-curve keys.
pub const KTY_EC: &str = "EC";
/// JWK `crv` of P-256 keys.
pub const CRV_P256: &str = "P-256";
/// Length of one P-256 coordinate, and of each of `r` and `s` in a signature.
const P256_FIELD_LEN: usize = 32;
/// Issuer the hub writes into every assertion.
pub const ISSUER: &str = "faros-hub";
/// Lifetime the hub gives an assertion.
pub const DEFAULT_TTL: Duration = Duration::from_secs(60);
/// Longest lifetime a verifier accepts; a longer-lived assertion is rejected even if correctly signed.
pub const MAX_TTL: Duration = Duration::from_secs(300);
/// Clock skew tolerated between hub and provider.
pub const LEEWAY: Duration = Duration::from_secs(30);
/// Path below the hub URL where it serves its JWKS.
pub const JWKS_PATH: &str = "/.well-known/faros/jwks.json";

/// Errors signing or verifying assertions.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum IdentityError {
    #[error("generating a P-256 key failed")]
    KeyGeneration,
    #[error("invalid P-256 key: {0}")]
    InvalidKey(String),
    #[error("signing failed")]
    Signing,
    #[error("malformed assertion: {0}")]
    Malformed(String),
    #[error("unsupported assertion algorithm {0:?} (only ES256 is accepted)")]
    UnsupportedAlgorithm(String),
    #[error("assertion signed by unknown key {0:?}")]
    UnknownKey(String),
    #[error("assertion signature is invalid")]
    BadSignature,
    #[error("assertion expired at {exp} (now {now})")]
    Expired { exp: i64, now: i64 },
    #[error("assertion issued in the future at {iat} (now {now})")]
    NotYetValid { iat: i64, now: i64 },
    #[error("assertion lifetime {lifetime}s exceeds the maximum of {max}s")]
    LifetimeTooLong { lifetime: i64, max: i64 },
    #[error("assertion is for {got:?}, not for {expected:?}")]
    WrongAudience { expected: String, got: String },
}

/// Who is calling, and in which tenant.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Identity {
    /// Authenticated username (as kcp sees it).
    #[serde(rename = "sub")]
    pub user: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    /// Organization name.
    #[serde(default)]
    pub org: String,
    /// Team workspace name inside the organization.
    #[serde(default)]
    pub workspace: String,
    /// Logical cluster name of that workspace (what a provider's VW client needs).
    #[serde(default)]
    pub cluster: String,
}

/// The signed payload: an [`Identity`] plus JWT registered claims.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    pub iss: String,
    /// The provider name the assertion is for.
    pub aud: String,
    #[serde(flatten)]
    pub identity: Identity,
    /// Provider name, repeated for readers that do not look at `aud`.
    pub provider: String,
    /// The ProviderRevision (`<provider>-<short digest>`, [`crate::revision::revision_name`]) the
    /// hub routes the request to, when it knows one: a provider whose revisions run side by side
    /// during an upgrade tells which one the hub meant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
    pub iat: i64,
    pub exp: i64,
}

impl Claims {
    /// Claims for `provider`, valid from `now` (unix seconds) for `ttl`.
    pub fn new(identity: Identity, provider: &str, now: i64, ttl: Duration) -> Self {
        Self {
            iss: ISSUER.into(),
            aud: provider.into(),
            identity,
            provider: provider.into(),
            revision: None,
            iat: now,
            exp: now.saturating_add(secs(ttl)),
        }
    }

    /// The same claims naming `revision` as the one served.
    pub fn with_revision(mut self, revision: Option<&str>) -> Self {
        self.revision = revision.map(String::from);
        self
    }
}

/// One public key in JWK form (RFC 7518 §6.2 EC).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Jwk {
    pub kty: String,
    pub crv: String,
    /// The point's x coordinate (32 bytes), base64url without padding.
    pub x: String,
    /// The point's y coordinate (32 bytes), base64url without padding.
    #[serde(default)]
    pub y: String,
    #[serde(default)]
    pub kid: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alg: Option<String>,
    #[serde(default, rename = "use", skip_serializing_if = "Option::is_none")]
    pub use_: Option<String>,
}

/// A JWK set.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Jwks {
    pub keys: Vec<Jwk>,
}

impl Jwks {
    /// The key with id `kid`.
    pub fn find(&self, kid: &str) -> Option<&Jwk> {
        self.keys.iter().find(|k| k.kid == kid)
    }
}

#[derive(Serialize, Deserialize)]
struct Header {
    alg: String,
    #[serde(default)]
    kid: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    typ: Option<String>,
}

/// A P-256 private key with its key id.
pub struct SigningKey {
    kid: String,
    pair: EcdsaKeyPair,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print key material.
        f.debug_struct("SigningKey").field("kid", &self.kid).finish()
    }
}

impl SigningKey {
    /// A fresh random key.
    pub fn generate(kid: impl Into<String>) -> Result<Self, IdentityError> {
        let pair =
            EcdsaKeyPair::generate(&ECDSA_P256_SHA256_FIXED_SIGNING).map_err(|_| IdentityError::KeyGeneration)?;
        Ok(Self { kid: kid.into(), pair })
    }

    /// A key from its PKCS#8 DER encoding (what [`SigningKey::to_pkcs8`] returns).
    pub fn from_pkcs8(kid: impl Into<String>, der: &[u8]) -> Result<Self, IdentityError> {
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, der)
            .map_err(|e| IdentityError::InvalidKey(e.to_string()))?;
        Ok(Self { kid: kid.into(), pair })
    }

    /// PKCS#8 DER, for persisting the key.
    pub fn to_pkcs8(&self) -> Result<Vec<u8>, IdentityError> {
        let doc = self
            .pair
            .to_pkcs8v1()
            .map_err(|_| IdentityError::InvalidKey("cannot encode as PKCS#8".into()))?;
        Ok(doc.as_ref().to_vec())
    }

    pub fn kid(&self) -> &str {
        &self.kid
    }

    /// The public half as a JWK.
    pub fn public_jwk(&self) -> Jwk {
        // The uncompressed point: 0x04, then x, then y.
        let point = self.pair.public_key().as_ref();
        let (x, y) = point
            .get(1..)
            .unwrap_or_default()
            .split_at(P256_FIELD_LEN.min(point.len().saturating_sub(1)));
        Jwk {
            kty: KTY_EC.into(),
            crv: CRV_P256.into(),
            x: B64.encode(x),
            y: B64.encode(y),
            kid: self.kid.clone(),
            alg: Some(ALG_ES256.into()),
            use_: Some("sig".into()),
        }
    }

    /// A compact JWS over `claims`; the signature is `r ‖ s` (64 bytes), as JWS requires.
    pub fn sign(&self, claims: &Claims) -> Result<String, IdentityError> {
        let header = Header {
            alg: ALG_ES256.into(),
            kid: self.kid.clone(),
            typ: Some("JWT".into()),
        };
        // Serializing structs of strings and integers cannot fail.
        let header = B64.encode(serde_json::to_vec(&header).unwrap_or_default());
        let payload = B64.encode(serde_json::to_vec(claims).unwrap_or_default());
        let signing_input = format!("{header}.{payload}");
        let signature = self
            .pair
            .sign(&SystemRandom::new(), signing_input.as_bytes())
            .map_err(|_| IdentityError::Signing)?;
        Ok(format!("{signing_input}.{}", B64.encode(signature.as_ref())))
    }
}

/// Verifies `token` against `jwks` for `audience` at `now` (unix seconds) and returns its claims.
///
/// Checks, in order: shape, `alg == ES256`, key known by `kid`, signature, audience, expiry (with
/// [`LEEWAY`]), issue time not in the future, lifetime at most [`MAX_TTL`].
pub fn verify(token: &str, jwks: &Jwks, audience: &str, now: i64) -> Result<Claims, IdentityError> {
    let header = decode_header(token)?;
    if header.alg != ALG_ES256 {
        return Err(IdentityError::UnsupportedAlgorithm(header.alg));
    }
    let jwk = jwks
        .find(&header.kid)
        .ok_or_else(|| IdentityError::UnknownKey(header.kid.clone()))?;
    if jwk.kty != KTY_EC || jwk.crv != CRV_P256 {
        return Err(IdentityError::InvalidKey(format!(
            "key {:?} is {}/{}, not {KTY_EC}/{CRV_P256}",
            jwk.kid, jwk.kty, jwk.crv
        )));
    }
    let coordinate = |name: &str, value: &str| {
        let bytes = B64
            .decode(value)
            .map_err(|e| IdentityError::InvalidKey(format!("key {:?}: {name} is not base64url: {e}", jwk.kid)))?;
        if bytes.len() != P256_FIELD_LEN {
            return Err(IdentityError::InvalidKey(format!(
                "key {:?}: {name} has {} bytes, not {P256_FIELD_LEN}",
                jwk.kid,
                bytes.len()
            )));
        }
        Ok(bytes)
    };
    let mut public = vec![0x04];
    public.extend(coordinate("x", &jwk.x)?);
    public.extend(coordinate("y", &jwk.y)?);
    let (signing_input, signature) = token
        .rsplit_once('.')
        .ok_or_else(|| IdentityError::Malformed("expected three dot-separated parts".into()))?;
    let signature = B64
        .decode(signature)
        .map_err(|e| IdentityError::Malformed(format!("signature is not base64url: {e}")))?;
    UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, &public)
        .verify(signing_input.as_bytes(), &signature)
        .map_err(|_| IdentityError::BadSignature)?;
    let payload = signing_input
        .split('.')
        .nth(1)
        .ok_or_else(|| IdentityError::Malformed("missing payload".into()))?;
    let payload = B64
        .decode(payload)
        .map_err(|e| IdentityError::Malformed(format!("payload is not base64url: {e}")))?;
    let claims: Claims =
        serde_json::from_slice(&payload).map_err(|e| IdentityError::Malformed(format!("payload: {e}")))?;
    if claims.aud != audience {
        return Err(IdentityError::WrongAudience {
            expected: audience.into(),
            got: claims.aud,
        });
    }
    let leeway = secs(LEEWAY);
    if now > claims.exp.saturating_add(leeway) {
        return Err(IdentityError::Expired { exp: claims.exp, now });
    }
    if claims.iat > now.saturating_add(leeway) {
        return Err(IdentityError::NotYetValid { iat: claims.iat, now });
    }
    let lifetime = claims.exp.saturating_sub(claims.iat);
    if lifetime > secs(MAX_TTL) {
        return Err(IdentityError::LifetimeTooLong {
            lifetime,
            max: secs(MAX_TTL),
        });
    }
    Ok(claims)
}

/// The `kid` a token names, without verifying anything (to decide whether to refresh a JWKS cache).
pub fn token_kid(token: &str) -> Result<String, IdentityError> {
    Ok(decode_header(token)?.kid)
}

fn decode_header(token: &str) -> Result<Header, IdentityError> {
    let mut parts = token.split('.');
    let (Some(header), Some(_), Some(_), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
        return Err(IdentityError::Malformed("expected three dot-separated parts".into()));
    };
    let header = B64
        .decode(header)
        .map_err(|e| IdentityError::Malformed(format!("header is not base64url: {e}")))?;
    serde_json::from_slice(&header).map_err(|e| IdentityError::Malformed(format!("header: {e}")))
}

/// Seconds since the unix epoch, now.
pub fn now_unix() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(secs)
        .unwrap_or_default()
}

fn secs(d: Duration) -> i64 {
    i64::try_from(d.as_secs()).unwrap_or(i64::MAX)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    const NOW: i64 = 1_800_000_000;

    fn alice() -> Identity {
        Identity {
            user: "alice".into(),
            groups: vec!["system:authenticated".into()],
            org: "acme".into(),
            workspace: "dev".into(),
            cluster: "2x7yq".into(),
        }
    }

    fn setup() -> (SigningKey, Jwks) {
        let key = SigningKey::generate("k1").unwrap();
        let jwks = Jwks {
            keys: vec![key.public_jwk()],
        };
        (key, jwks)
    }

    #[test]
    fn sign_and_verify_round_trip() {
        let (key, jwks) = setup();
        let claims = Claims::new(alice(), "quickstart", NOW, DEFAULT_TTL);
        let token = key.sign(&claims).unwrap();
        assert_eq!(token_kid(&token).unwrap(), "k1");
        let got = verify(&token, &jwks, "quickstart", NOW + 10).unwrap();
        assert_eq!(got, claims);
        assert_eq!(got.exp, NOW + 60);
        assert_eq!(got.identity.cluster, "2x7yq");
    }

    #[test]
    fn the_served_revision_travels_signed() {
        let (key, jwks) = setup();
        let claims = Claims::new(alice(), "quickstart", NOW, DEFAULT_TTL).with_revision(Some("quickstart-0123456789"));
        let got = verify(&key.sign(&claims).unwrap(), &jwks, "quickstart", NOW).unwrap();
        assert_eq!(got.revision.as_deref(), Some("quickstart-0123456789"));
        assert_eq!(
            serde_json::to_value(&claims).unwrap()["revision"],
            "quickstart-0123456789"
        );
    }

    #[test]
    fn payload_wire_shape() {
        let claims = Claims::new(alice(), "quickstart", NOW, DEFAULT_TTL);
        assert_eq!(
            serde_json::to_value(&claims).unwrap(),
            serde_json::json!({"iss":"faros-hub","aud":"quickstart","sub":"alice",
                "groups":["system:authenticated"],"org":"acme","workspace":"dev","cluster":"2x7yq",
                "provider":"quickstart","iat":NOW,"exp":NOW+60})
        );
    }

    #[test]
    fn jwk_wire_shape_and_pkcs8_round_trip() {
        let (key, _) = setup();
        let jwk = serde_json::to_value(key.public_jwk()).unwrap();
        assert_eq!(jwk["kty"], "EC");
        assert_eq!(jwk["crv"], "P-256");
        assert_eq!(jwk["alg"], "ES256");
        assert_eq!(jwk["use"], "sig");
        assert_eq!(B64.decode(jwk["x"].as_str().unwrap()).unwrap().len(), 32);
        assert_eq!(B64.decode(jwk["y"].as_str().unwrap()).unwrap().len(), 32);
        let again = SigningKey::from_pkcs8("k1", &key.to_pkcs8().unwrap()).unwrap();
        assert_eq!(again.public_jwk(), key.public_jwk());
        assert!(format!("{key:?}").contains("k1"));
    }

    #[test]
    fn rejections() {
        let (key, jwks) = setup();
        let token = key.sign(&Claims::new(alice(), "quickstart", NOW, DEFAULT_TTL)).unwrap();
        let other = SigningKey::generate("k1").unwrap();
        let forged = other
            .sign(&Claims::new(alice(), "quickstart", NOW, DEFAULT_TTL))
            .unwrap();
        let unknown = SigningKey::generate("k9")
            .unwrap()
            .sign(&Claims::new(alice(), "quickstart", NOW, DEFAULT_TTL))
            .unwrap();
        let long = key
            .sign(&Claims::new(alice(), "quickstart", NOW, Duration::from_secs(3600)))
            .unwrap();
        // Payload swapped for one claiming another user, signature kept.
        let parts: Vec<&str> = token.split('.').collect();
        let mut bob = Claims::new(alice(), "quickstart", NOW, DEFAULT_TTL);
        bob.identity.user = "bob".into();
        let tampered = format!(
            "{}.{}.{}",
            parts[0],
            B64.encode(serde_json::to_vec(&bob).unwrap()),
            parts[2]
        );
        let none_alg = format!("{}.{}.", B64.encode(br#"{"alg":"none","kid":"k1"}"#), parts[1]);
        let cases: Vec<(&str, String, &str, i64, IdentityError)> = vec![
            (
                "expired",
                token.clone(),
                "quickstart",
                NOW + 60 + 31,
                IdentityError::Expired {
                    exp: NOW + 60,
                    now: NOW + 91,
                },
            ),
            (
                "future",
                token.clone(),
                "quickstart",
                NOW - 31,
                IdentityError::NotYetValid {
                    iat: NOW,
                    now: NOW - 31,
                },
            ),
            (
                "wrong audience",
                token.clone(),
                "edges",
                NOW,
                IdentityError::WrongAudience {
                    expected: "edges".into(),
                    got: "quickstart".into(),
                },
            ),
            ("forged", forged, "quickstart", NOW, IdentityError::BadSignature),
            ("tampered", tampered, "quickstart", NOW, IdentityError::BadSignature),
            (
                "unknown kid",
                unknown,
                "quickstart",
                NOW,
                IdentityError::UnknownKey("k9".into()),
            ),
            (
                "alg none",
                none_alg,
                "quickstart",
                NOW,
                IdentityError::UnsupportedAlgorithm("none".into()),
            ),
            (
                "too long",
                long,
                "quickstart",
                NOW,
                IdentityError::LifetimeTooLong {
                    lifetime: 3600,
                    max: 300,
                },
            ),
        ];
        for (name, token, aud, now, want) in cases {
            assert_eq!(verify(&token, &jwks, aud, now), Err(want), "{name}");
        }
        for garbage in ["", "a.b", "a.b.c.d", "!!.b.c"] {
            assert!(
                matches!(
                    verify(garbage, &jwks, "quickstart", NOW),
                    Err(IdentityError::Malformed(_))
                ),
                "{garbage:?}"
            );
        }
        // Still valid right at the edge of the leeway.
        assert!(verify(&token, &jwks, "quickstart", NOW + 90).is_ok());
        // The signature is JWS's fixed r ‖ s, not DER.
        assert_eq!(B64.decode(token.rsplit('.').next().unwrap()).unwrap().len(), 64);
        // Keys of another type or with short coordinates are refused by name.
        let mut okp = jwks.clone();
        okp.keys[0].kty = "OKP".into();
        okp.keys[0].crv = "Ed25519".into();
        assert!(
            matches!(verify(&token, &okp, "quickstart", NOW), Err(IdentityError::InvalidKey(m)) if m.contains("OKP/Ed25519"))
        );
        let mut short = jwks.clone();
        short.keys[0].y = B64.encode([1u8; 31]);
        assert!(
            matches!(verify(&token, &short, "quickstart", NOW), Err(IdentityError::InvalidKey(m)) if m.contains("y has 31 bytes"))
        );
    }
}
