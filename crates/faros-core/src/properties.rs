//! The properties the parsers in this crate must keep, as plain functions that panic when one is
//! broken: shared by the property tests (`proptests.rs`) and the `cargo fuzz` targets in `fuzz/`,
//! so both check the same thing and a fuzzer finding becomes a one-line regression test.
//!
//! Each takes input as an attacker or a careless operator could supply it: a token file, a
//! workspace path from a URL, an identity assertion from a request header.

use std::sync::LazyLock;
use std::time::Duration;

use crate::identity::{self, Claims, Identity, Jwks, SigningKey};
use crate::path::LogicalClusterPath;
use crate::token_file::parse_token_file;

/// `--token-auth-file` contents: parsing never panics; what parses has non-empty, unique tokens
/// and users and no empty group; and the `Debug` form (logs) does not depend on the token.
pub fn token_file(text: &str) {
    let Ok(tokens) = parse_token_file(text) else {
        return;
    };
    let mut seen = std::collections::HashSet::new();
    for t in &tokens {
        assert!(
            !t.token.is_empty() && !t.user.is_empty(),
            "{t:?}: empty token or user accepted"
        );
        assert!(t.groups.iter().all(|g| !g.is_empty()), "{t:?}: empty group accepted");
        assert!(seen.insert(t.token.clone()), "{t:?}: duplicate token accepted");
        // The Debug form must not depend on the token at all (it is what ends up in logs).
        let other = crate::token_file::StaticToken {
            token: format!("{}-other", t.token),
            ..t.clone()
        };
        assert_eq!(
            format!("{t:?}"),
            format!("{other:?}"),
            "the token shows in the Debug output"
        );
    }
}

/// Workspace paths (`root:org:ws`) from URLs and objects: parsing never panics; a parsed path
/// is its input, and splitting it into parent and base and joining them again gives it back.
pub fn cluster_path(input: &str) {
    let Ok(path) = LogicalClusterPath::new(input) else {
        return;
    };
    assert_eq!(path.as_str(), input);
    assert_eq!(path.depth(), path.segments().count());
    if let Some(parent) = path.parent() {
        let rejoined = parent
            .join(path.base())
            .unwrap_or_else(|e| panic!("{input:?}: the base {:?} does not join its parent: {e}", path.base()));
        assert_eq!(rejoined, path, "{input:?}: parent + base is not the path");
    }
}

/// The key the assertion properties sign with, made once per process.
static KEY: LazyLock<SigningKey> = LazyLock::new(|| match SigningKey::generate("fuzz") {
    Ok(key) => key,
    Err(e) => panic!("generating the property tests' P-256 key failed: {e}"),
});

/// A fixed time the properties verify at.
const NOW: i64 = 1_800_000_000;

/// `X-Faros-Assertion` values: verifying arbitrary text never panics and never succeeds (only
/// the hub's key makes a valid signature), and reading its key id never panics.
pub fn assertion(token: &str, audience: &str) {
    let jwks = Jwks {
        keys: vec![KEY.public_jwk()],
    };
    let _ = identity::token_kid(token);
    if let Ok(claims) = identity::verify(token, &jwks, audience, NOW) {
        panic!("an assertion the key never signed verified: {claims:?}");
    }
}

/// Signing then verifying gives back the identity for the audience it names and nothing else;
/// any one changed character in the assertion makes it fail.
pub fn assertion_round_trip(identity: Identity, provider: &str, flip: usize) {
    let jwks = Jwks {
        keys: vec![KEY.public_jwk()],
    };
    let claims = Claims::new(identity, provider, NOW, Duration::from_secs(60));
    let token = KEY
        .sign(&claims)
        .unwrap_or_else(|e| panic!("signing {claims:?} failed: {e}"));
    let verified = identity::verify(&token, &jwks, provider, NOW)
        .unwrap_or_else(|e| panic!("an assertion the hub signed does not verify: {e}"));
    assert_eq!(verified, claims);
    let other = format!("{provider}-other");
    assert!(
        identity::verify(&token, &jwks, &other, NOW).is_err(),
        "an assertion for {provider:?} verified for {other:?}"
    );
    let mut bytes = token.into_bytes();
    let at = flip % bytes.len();
    bytes[at] = if bytes[at] == b'A' { b'B' } else { b'A' };
    if let Ok(tampered) = String::from_utf8(bytes)
        && let Ok(claims) = identity::verify(&tampered, &jwks, provider, NOW)
    {
        // Base64url's last character can carry unused bits: a change there may decode to the
        // same bytes, which is not a forgery. Anything else is.
        assert_eq!(claims, verified, "a tampered assertion verified with different claims");
    }
}
