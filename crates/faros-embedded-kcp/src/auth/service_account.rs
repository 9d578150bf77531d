//! ServiceAccount tokens in Kubernetes' legacy secret-token shape.
//!
//! The claims are the ones kube-controller-manager puts into `kubernetes.io/service-account-token`
//! Secrets, plus kcp's logical-cluster claim. They never expire: a token dies with its Secret, which
//! the server checks after [`ServiceAccountTokens::verify`]. Tokens are HS256 JWTs signed with a
//! server-held key (real Kubernetes signs RS256; nobody outside the server verifies these).

use std::collections::BTreeMap;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use rand::RngCore;
use serde::{Deserialize, Serialize};
use sha2::Sha256;

use super::{EXTRA_CLUSTER_NAME, GROUP_AUTHENTICATED, GROUP_SERVICE_ACCOUNTS, SERVICE_ACCOUNT_USER_PREFIX, UserInfo};

/// The extra in which kcp lists the scopes a user is limited to (`cluster:<name>`).
pub const EXTRA_SCOPES: &str = "authentication.kcp.io/scopes";

/// The `iss` of legacy ServiceAccount tokens.
pub const LEGACY_ISSUER: &str = "kubernetes/serviceaccount";

/// The fixed JOSE header; verification insists on exactly this algorithm.
const HEADER_JSON: &str = r#"{"alg":"HS256","typ":"JWT"}"#;

type HmacSha256 = Hmac<Sha256>;

/// What a ServiceAccount token asserts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SaClaims {
    #[serde(rename = "iss")]
    pub issuer: String,
    #[serde(rename = "kubernetes.io/serviceaccount/namespace")]
    pub namespace: String,
    #[serde(rename = "kubernetes.io/serviceaccount/secret.name")]
    pub secret_name: String,
    #[serde(rename = "kubernetes.io/serviceaccount/service-account.name")]
    pub service_account_name: String,
    #[serde(rename = "kubernetes.io/serviceaccount/service-account.uid")]
    pub service_account_uid: String,
    /// kcp's claim: the logical cluster (not the path) the ServiceAccount lives in.
    #[serde(rename = "kubernetes.io/serviceaccount/clusterName")]
    pub cluster_name: String,
    #[serde(rename = "sub")]
    pub subject: String,
}

impl SaClaims {
    /// Claims for a ServiceAccount token Secret, with `iss` and `sub` filled in consistently.
    pub fn new(cluster_name: &str, namespace: &str, service_account_name: &str, uid: &str, secret_name: &str) -> Self {
        Self {
            issuer: LEGACY_ISSUER.to_string(),
            namespace: namespace.to_string(),
            secret_name: secret_name.to_string(),
            service_account_name: service_account_name.to_string(),
            service_account_uid: uid.to_string(),
            cluster_name: cluster_name.to_string(),
            subject: format!("{SERVICE_ACCOUNT_USER_PREFIX}{namespace}:{service_account_name}"),
        }
    }

    /// The identity kcp gives a valid token: `system:serviceaccount:<ns>:<name>` with the SA uid,
    /// the ServiceAccount groups, and the cluster-name and scopes extras.
    pub fn user_info(&self) -> UserInfo {
        UserInfo {
            username: format!(
                "{SERVICE_ACCOUNT_USER_PREFIX}{}:{}",
                self.namespace, self.service_account_name
            ),
            uid: self.service_account_uid.clone(),
            groups: vec![
                GROUP_SERVICE_ACCOUNTS.to_string(),
                format!("{GROUP_SERVICE_ACCOUNTS}:{}", self.namespace),
                GROUP_AUTHENTICATED.to_string(),
            ],
            extra: BTreeMap::from([
                (EXTRA_CLUSTER_NAME.to_string(), vec![self.cluster_name.clone()]),
                // kcp scopes a ServiceAccount to its logical cluster and says so in the user's
                // extra; what the scope means (nothing outside that cluster) is enforced by the
                // authorizer from the cluster name.
                (EXTRA_SCOPES.to_string(), vec![format!("cluster:{}", self.cluster_name)]),
            ]),
        }
    }

    fn check(&self) -> Result<(), TokenError> {
        if self.issuer != LEGACY_ISSUER {
            return Err(TokenError::Claims("unexpected issuer"));
        }
        if self.namespace.is_empty()
            || self.service_account_name.is_empty()
            || self.secret_name.is_empty()
            || self.cluster_name.is_empty()
        {
            return Err(TokenError::Claims("a required claim is empty"));
        }
        let expected = format!(
            "{SERVICE_ACCOUNT_USER_PREFIX}{}:{}",
            self.namespace, self.service_account_name
        );
        if self.subject != expected {
            return Err(TokenError::Claims("sub does not match namespace and name"));
        }
        Ok(())
    }
}

/// Why a token was refused. The messages never contain the token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    #[error("token is not a JWT")]
    Malformed,
    #[error("token header is not HS256")]
    UnsupportedHeader,
    #[error("token signature is invalid")]
    BadSignature,
    #[error("token claims are invalid: {0}")]
    Claims(&'static str),
}

/// Issues and verifies ServiceAccount tokens with one server key.
#[derive(Clone)]
pub struct ServiceAccountTokens {
    key: [u8; 32],
}

impl std::fmt::Debug for ServiceAccountTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ServiceAccountTokens { key: <redacted> }")
    }
}

impl ServiceAccountTokens {
    pub fn new(key: [u8; 32]) -> Self {
        Self { key }
    }

    /// A fresh random signing key for the server to persist.
    pub fn generate_key() -> [u8; 32] {
        let mut key = [0u8; 32];
        rand::rng().fill_bytes(&mut key);
        key
    }

    fn mac(&self) -> HmacSha256 {
        // HMAC accepts keys of any length, so this cannot fail for a 32-byte key.
        <HmacSha256 as Mac>::new_from_slice(&self.key).unwrap_or_else(|_| unreachable!("HMAC takes any key length"))
    }

    pub fn issue(&self, claims: &SaClaims) -> String {
        // Serializing a struct of strings cannot fail.
        let payload = serde_json::to_vec(claims).unwrap_or_default();
        let signing_input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(HEADER_JSON),
            URL_SAFE_NO_PAD.encode(payload)
        );
        let mut mac = self.mac();
        mac.update(signing_input.as_bytes());
        let signature = mac.finalize().into_bytes();
        format!("{signing_input}.{}", URL_SAFE_NO_PAD.encode(signature))
    }

    /// Checks the signature (constant time) before looking at any claim.
    pub fn verify(&self, token: &str) -> Result<SaClaims, TokenError> {
        let mut parts = token.split('.');
        let (Some(header), Some(payload), Some(signature), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(TokenError::Malformed);
        };
        let signature = URL_SAFE_NO_PAD.decode(signature).map_err(|_| TokenError::Malformed)?;
        let mut mac = self.mac();
        mac.update(header.as_bytes());
        mac.update(b".");
        mac.update(payload.as_bytes());
        mac.verify_slice(&signature).map_err(|_| TokenError::BadSignature)?;

        let header = URL_SAFE_NO_PAD.decode(header).map_err(|_| TokenError::Malformed)?;
        let header: serde_json::Value = serde_json::from_slice(&header).map_err(|_| TokenError::Malformed)?;
        if header.get("alg").and_then(|a| a.as_str()) != Some("HS256") {
            return Err(TokenError::UnsupportedHeader);
        }
        let payload = URL_SAFE_NO_PAD.decode(payload).map_err(|_| TokenError::Malformed)?;
        let claims: SaClaims =
            serde_json::from_slice(&payload).map_err(|_| TokenError::Claims("missing or mistyped claims"))?;
        claims.check()?;
        Ok(claims)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn claims() -> SaClaims {
        SaClaims::new("2x9kq7", "default", "provider", "uid-42", "provider-token")
    }

    fn sign_raw(key: [u8; 32], header: &str, payload: &str) -> String {
        let input = format!("{}.{}", URL_SAFE_NO_PAD.encode(header), URL_SAFE_NO_PAD.encode(payload));
        let mut mac = HmacSha256::new_from_slice(&key).unwrap();
        mac.update(input.as_bytes());
        format!("{input}.{}", URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes()))
    }

    #[test]
    fn issue_then_verify_round_trips_with_legacy_claim_names() {
        let sa = ServiceAccountTokens::new([7; 32]);
        let token = sa.issue(&claims());
        assert_eq!(sa.verify(&token), Ok(claims()));

        let payload = token.split('.').nth(1).unwrap();
        let json: serde_json::Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "iss": "kubernetes/serviceaccount",
                "kubernetes.io/serviceaccount/namespace": "default",
                "kubernetes.io/serviceaccount/secret.name": "provider-token",
                "kubernetes.io/serviceaccount/service-account.name": "provider",
                "kubernetes.io/serviceaccount/service-account.uid": "uid-42",
                "kubernetes.io/serviceaccount/clusterName": "2x9kq7",
                "sub": "system:serviceaccount:default:provider"
            })
        );
        assert_eq!(
            token.split('.').next(),
            Some(URL_SAFE_NO_PAD.encode(HEADER_JSON).as_str())
        );
    }

    #[test]
    fn rejects_tampering_wrong_key_and_malformed_tokens() {
        let key = [7; 32];
        let sa = ServiceAccountTokens::new(key);
        let token = sa.issue(&claims());
        let parts: Vec<&str> = token.split('.').collect();

        let mut other = claims();
        other.service_account_name = "admin".into();
        other.subject = "system:serviceaccount:default:admin".into();
        let forged_payload = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&other).unwrap());
        let swapped = format!("{}.{}.{}", parts[0], forged_payload, parts[2]);

        let mut bad_sig = URL_SAFE_NO_PAD.decode(parts[2]).unwrap();
        bad_sig[0] ^= 1;
        let flipped = format!("{}.{}.{}", parts[0], parts[1], URL_SAFE_NO_PAD.encode(bad_sig));
        let unsigned = format!("{}.{}.", URL_SAFE_NO_PAD.encode(r#"{"alg":"none"}"#), parts[1]);

        let cases: Vec<(String, TokenError)> = vec![
            (swapped, TokenError::BadSignature),
            (flipped, TokenError::BadSignature),
            (unsigned, TokenError::BadSignature),
            (
                ServiceAccountTokens::new([8; 32]).issue(&claims()),
                TokenError::BadSignature,
            ),
            ("not-a-jwt".into(), TokenError::Malformed),
            (format!("{token}.extra"), TokenError::Malformed),
            (format!("{}.{}.!!", parts[0], parts[1]), TokenError::Malformed),
            (
                sign_raw(key, r#"{"alg":"HS512"}"#, &serde_json::to_string(&claims()).unwrap()),
                TokenError::UnsupportedHeader,
            ),
            (
                sign_raw(key, HEADER_JSON, r#"{"iss":"kubernetes/serviceaccount"}"#),
                TokenError::Claims("missing or mistyped claims"),
            ),
        ];
        for (token, want) in cases {
            assert_eq!(sa.verify(&token), Err(want.clone()), "{want}");
        }
    }

    #[test]
    fn rejects_inconsistent_claims_even_when_signed() {
        let sa = ServiceAccountTokens::new([1; 32]);
        let mut wrong_sub = claims();
        wrong_sub.subject = "system:serviceaccount:kube-system:provider".into();
        let mut wrong_iss = claims();
        wrong_iss.issuer = "https://example".into();
        let mut no_cluster = claims();
        no_cluster.cluster_name = String::new();
        let cases = [
            (wrong_sub, TokenError::Claims("sub does not match namespace and name")),
            (wrong_iss, TokenError::Claims("unexpected issuer")),
            (no_cluster, TokenError::Claims("a required claim is empty")),
        ];
        for (c, want) in cases {
            assert_eq!(sa.verify(&sa.issue(&c)), Err(want));
        }
    }

    #[test]
    fn user_info_is_kcp_shaped() {
        let user = claims().user_info();
        assert_eq!(user.username, "system:serviceaccount:default:provider");
        assert_eq!(user.uid, "uid-42");
        assert_eq!(
            user.groups,
            vec![
                "system:serviceaccounts",
                "system:serviceaccounts:default",
                "system:authenticated"
            ]
        );
        assert_eq!(user.cluster_name(), Some("2x9kq7"));
    }

    #[test]
    fn debug_hides_key_and_generated_keys_differ() {
        assert_eq!(
            format!("{:?}", ServiceAccountTokens::new([9; 32])),
            "ServiceAccountTokens { key: <redacted> }"
        );
        assert_ne!(
            ServiceAccountTokens::generate_key(),
            ServiceAccountTokens::generate_key()
        );
    }
}
