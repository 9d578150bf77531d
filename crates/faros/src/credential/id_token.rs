//! What the plugin reads from an ID token it received: its issuer and expiry. The signature is
//! not checked here (the plugin only hands the token on; kcp and the hub verify it), so nothing
//! else in it is trusted. IO-free.

use serde_json::Value;

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum IdTokenError {
    #[error("the issuer's ID token is not a JWT")]
    NotJwt,
    #[error("the ID token's iss is {0:?}, not --issuer")]
    Issuer(String),
    #[error("the ID token has no valid exp claim")]
    NoExpiry,
}

/// The expiry of `token`, an ID token `issuer` issued.
pub fn expiry(token: &str, issuer: &str) -> Result<jiff::Timestamp, IdTokenError> {
    let jwt = faros_core::oidc::jwt::parse_jwt(token).ok_or(IdTokenError::NotJwt)?;
    let iss = jwt.issuer().unwrap_or_default();
    if iss != issuer {
        return Err(IdTokenError::Issuer(iss.to_string()));
    }
    jwt.claims
        .get("exp")
        .and_then(Value::as_i64)
        .and_then(|s| jiff::Timestamp::from_second(s).ok())
        .ok_or(IdTokenError::NoExpiry)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use base64::Engine;

    fn jwt(claims: serde_json::Value) -> String {
        let b = |v: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v);
        format!(
            "{}.{}.{}",
            b(br#"{"alg":"RS256"}"#),
            b(claims.to_string().as_bytes()),
            b(b"sig")
        )
    }

    #[test]
    fn expiries() {
        let iss = "https://idp";
        for (token, want) in [
            (
                jwt(serde_json::json!({"iss": iss, "exp": 1_800_000_000})),
                Ok(jiff::Timestamp::from_second(1_800_000_000).unwrap()),
            ),
            (
                jwt(serde_json::json!({"iss": "https://other", "exp": 1})),
                Err(IdTokenError::Issuer("https://other".into())),
            ),
            (jwt(serde_json::json!({"iss": iss})), Err(IdTokenError::NoExpiry)),
            (
                jwt(serde_json::json!({"iss": iss, "exp": "soon"})),
                Err(IdTokenError::NoExpiry),
            ),
            ("not-a-jwt".to_string(), Err(IdTokenError::NotJwt)),
        ] {
            assert_eq!(expiry(&token, iss), want, "{token}");
        }
    }
}
