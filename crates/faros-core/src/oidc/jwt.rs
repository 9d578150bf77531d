//! Compact JWS tokens and JWK sets: parsed, never trusted until a signature verifies.

use aws_lc_rs::signature::{
    ECDSA_P256_SHA256_FIXED, ParsedPublicKey, RSA_PKCS1_2048_8192_SHA256, RsaPublicKeyComponents,
};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Map, Value};

/// Signature algorithms accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Alg {
    Rs256,
    Es256,
}

impl Alg {
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "RS256" => Some(Self::Rs256),
            "ES256" => Some(Self::Es256),
            _ => None,
        }
    }
}

/// A compact JWS split into its parts; claims are not trusted until the signature verifies.
pub struct Jwt<'a> {
    pub alg: String,
    pub kid: Option<String>,
    pub claims: Map<String, Value>,
    pub signing_input: &'a str,
    pub signature: Vec<u8>,
}

impl Jwt<'_> {
    /// The (unverified) `iss` claim: which issuer's keys to try.
    pub fn issuer(&self) -> Option<&str> {
        self.claims.get("iss").and_then(Value::as_str)
    }
}

fn b64(part: &str) -> Option<Vec<u8>> {
    URL_SAFE_NO_PAD.decode(part.trim_end_matches('=')).ok()
}

/// `None` when `token` is not a JWS with JSON header and claims.
pub fn parse_jwt(token: &str) -> Option<Jwt<'_>> {
    let mut parts = token.split('.');
    let (header, payload, signature) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let header: Map<String, Value> = serde_json::from_slice(&b64(header)?).ok()?;
    let claims: Map<String, Value> = serde_json::from_slice(&b64(payload)?).ok()?;
    Some(Jwt {
        alg: header.get("alg")?.as_str()?.to_string(),
        kid: header.get("kid").and_then(Value::as_str).map(str::to_string),
        claims,
        signing_input: &token[..token.rfind('.')?],
        signature: b64(signature)?,
    })
}

/// A verification key of an issuer.
pub struct Key {
    pub kid: Option<String>,
    pub alg: Alg,
    key: ParsedPublicKey,
}

impl Key {
    pub fn verifies(&self, jwt: &Jwt<'_>) -> bool {
        self.key
            .verify_sig(jwt.signing_input.as_bytes(), &jwt.signature)
            .is_ok()
    }
}

fn strip_leading_zeros(bytes: &[u8]) -> &[u8] {
    let first = bytes.iter().position(|b| *b != 0).unwrap_or(bytes.len());
    &bytes[first..]
}

/// One JWK as a verification key; `None` for keys that cannot or must not be used.
pub fn parse_jwk(jwk: &Value) -> Option<Key> {
    let field = |name: &str| jwk.get(name).and_then(Value::as_str);
    if field("use").is_some_and(|u| u != "sig") {
        return None;
    }
    let (alg, key) = match field("kty")? {
        "RSA" => {
            let n = b64(field("n")?)?;
            let e = b64(field("e")?)?;
            let components = RsaPublicKeyComponents {
                n: strip_leading_zeros(&n),
                e: strip_leading_zeros(&e),
            };
            // Parsing does not check the size; verification would reject such keys later, token by token.
            if !(256..=1024).contains(&components.n.len()) {
                return None;
            }
            (
                Alg::Rs256,
                components.to_parsed_public_key(&RSA_PKCS1_2048_8192_SHA256).ok()?,
            )
        }
        "EC" if field("crv")? == "P-256" => {
            let (x, y) = (b64(field("x")?)?, b64(field("y")?)?);
            if x.len() != 32 || y.len() != 32 {
                return None;
            }
            let point = [&[0x04][..], &x, &y].concat();
            (Alg::Es256, ParsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, point).ok()?)
        }
        _ => return None,
    };
    if field("alg").is_some_and(|a| Alg::from_name(a) != Some(alg)) {
        return None;
    }
    Some(Key {
        kid: field("kid").map(str::to_string),
        alg,
        key,
    })
}

/// The usable keys of a JWK set document.
pub fn parse_jwks(doc: &Value) -> Vec<Key> {
    doc.get("keys")
        .and_then(Value::as_array)
        .map(|keys| keys.iter().filter_map(parse_jwk).collect())
        .unwrap_or_default()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn jwt_shapes() {
        let enc = |v: Value| URL_SAFE_NO_PAD.encode(v.to_string());
        let header = enc(json!({"alg": "ES256", "kid": "k1"}));
        let payload = enc(json!({"iss": "https://issuer.example"}));
        let good = format!("{header}.{payload}.c2ln");
        let jwt = parse_jwt(&good).unwrap();
        assert_eq!(
            (
                jwt.alg.as_str(),
                jwt.kid.as_deref(),
                jwt.signing_input,
                jwt.signature.as_slice(),
                jwt.issuer()
            ),
            (
                "ES256",
                Some("k1"),
                format!("{header}.{payload}").as_str(),
                b"sig".as_slice(),
                Some("https://issuer.example")
            )
        );
        for bad in [
            "opaque-static-token".to_string(),
            format!("{header}.{payload}"),
            format!("{header}.{payload}.c2ln.extra"),
            format!("{header}.bm90IGpzb24.c2ln"),
            format!("{}.{payload}.c2ln", enc(json!({"kid": "no alg"}))),
        ] {
            assert!(parse_jwt(&bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn unusable_jwks_entries_are_skipped() {
        use aws_lc_rs::signature::KeyPair;
        let pair = aws_lc_rs::signature::EcdsaKeyPair::generate(&aws_lc_rs::signature::ECDSA_P256_SHA256_FIXED_SIGNING)
            .unwrap();
        let point = pair.public_key().as_ref();
        let (x, y) = (
            URL_SAFE_NO_PAD.encode(&point[1..33]),
            URL_SAFE_NO_PAD.encode(&point[33..]),
        );
        let doc = json!({"keys": [
            {"kty": "EC", "crv": "P-256", "kid": "ok", "x": x, "y": y, "alg": "ES256", "use": "sig"},
            {"kty": "EC", "crv": "P-256", "kid": "enc", "x": x, "y": y, "use": "enc"},
            {"kty": "EC", "crv": "P-384", "kid": "p384", "x": x, "y": y},
            {"kty": "EC", "crv": "P-256", "kid": "alg-mismatch", "x": x, "y": y, "alg": "RS256"},
            {"kty": "oct", "kid": "hmac", "k": "c2VjcmV0"},
            {"kty": "RSA", "kid": "broken", "n": "AQAB", "e": "AQAB"},
        ]});
        let kids: Vec<Option<String>> = parse_jwks(&doc).into_iter().map(|k| k.kid).collect();
        assert_eq!(kids, vec![Some("ok".to_string())]);
    }
}
