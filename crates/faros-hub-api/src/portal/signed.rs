//! Cookie values the hub signed, IO-free: `<payload>.<tag>`, both base64url, the tag an
//! HMAC-SHA256 over a purpose and the payload under the replicas' shared key
//! ([`crate::records::shared_key`]).
//!
//! What this buys is that the hub does no work for a value it did not make: a forged or guessed
//! session cookie is refused before any store is asked (an unknown cookie would otherwise cost a
//! kcp read on every request), and a sign-in in flight lives in the browser's cookie instead of the
//! hub's store (anonymous callers make the hub write nothing). The purpose keeps a value signed for
//! one use from being accepted for another.

use aws_lc_rs::hmac;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;

/// Signs and checks cookie values under one key.
pub struct Signer {
    key: hmac::Key,
}

/// What a signed value is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Purpose {
    /// A portal session cookie (the payload is the session's random handle).
    Session,
    /// An OIDC sign-in in flight (the payload is its verifier, nonce and where it returns).
    SignIn,
}

impl Purpose {
    fn label(self) -> &'static [u8] {
        match self {
            Purpose::Session => b"faros-session",
            Purpose::SignIn => b"faros-oidc-sign-in",
        }
    }
}

impl Signer {
    pub fn new(secret: &[u8; 32]) -> Self {
        Self {
            key: hmac::Key::new(hmac::HMAC_SHA256, secret),
        }
    }

    fn tag(&self, purpose: Purpose, payload: &[u8]) -> hmac::Tag {
        let mut ctx = hmac::Context::with_key(&self.key);
        ctx.update(purpose.label());
        ctx.update(&[0]);
        ctx.update(payload);
        ctx.sign()
    }

    /// `payload` signed for `purpose`, as a cookie value.
    pub fn sign(&self, purpose: Purpose, payload: &[u8]) -> String {
        let tag = self.tag(purpose, payload);
        format!("{}.{}", B64.encode(payload), B64.encode(tag.as_ref()))
    }

    /// The payload of a value [`Signer::sign`] made for `purpose` under this key; `None` for
    /// anything else (compared in constant time).
    pub fn open(&self, purpose: Purpose, value: &str) -> Option<Vec<u8>> {
        let (payload, tag) = value.split_once('.')?;
        let payload = B64.decode(payload).ok()?;
        let tag = B64.decode(tag).ok()?;
        let mut signed = Vec::with_capacity(purpose.label().len() + 1 + payload.len());
        signed.extend_from_slice(purpose.label());
        signed.push(0);
        signed.extend_from_slice(&payload);
        hmac::verify(&self.key, &signed, &tag).ok()?;
        Some(payload)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn only_values_this_key_signed_for_this_purpose_open() {
        let signer = Signer::new(&[7; 32]);
        let other = Signer::new(&[8; 32]);
        let value = signer.sign(Purpose::Session, b"handle");
        let (payload, tag) = value.split_once('.').unwrap();
        let flipped = {
            let mut t = B64.decode(tag).unwrap();
            t[0] ^= 1;
            format!("{payload}.{}", B64.encode(t))
        };
        let cases: Vec<(&str, String, Purpose, Option<&[u8]>)> = vec![
            ("as signed", value.clone(), Purpose::Session, Some(b"handle")),
            ("another purpose", value.clone(), Purpose::SignIn, None),
            (
                "another payload",
                format!("{}.{tag}", B64.encode(b"handlf")),
                Purpose::Session,
                None,
            ),
            ("a changed tag", flipped, Purpose::Session, None),
            ("no tag", payload.to_string(), Purpose::Session, None),
            ("an empty tag", format!("{payload}."), Purpose::Session, None),
            ("not base64", "a!b.c!d".into(), Purpose::Session, None),
            ("a random 43-character value", "A".repeat(43), Purpose::Session, None),
        ];
        for (what, v, purpose, want) in cases {
            assert_eq!(signer.open(purpose, &v).as_deref(), want, "{what}");
        }
        assert_eq!(other.open(Purpose::Session, &value), None, "another key");
    }
}
