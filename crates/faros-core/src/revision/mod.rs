//! Provider revisions: what identifies one published state of a provider, and the compatibility
//! gate that decides whether tenants may move to it.
//!
//! A published state is a provider's CatalogEntry spec, which records every schema it publishes by
//! name and sha256 ([`crate::catalog::PublishedSchema`]). [`digest`] is the one function the hub
//! (naming a `ProviderRevision`) and the SDK (naming the revision it serves in heartbeats) compute
//! it with, so both sides agree without talking to each other. Pure: no IO.

pub mod compat;

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::catalog::CatalogEntrySpec;

/// Hex characters of the digest that go into a revision's name.
pub const SHORT_DIGEST_LEN: usize = 10;

/// Lowercase hex sha256 of `value` serialized canonically (object keys sorted at every level), so
/// the same JSON hashes the same whatever order its keys were written in.
pub fn canonical_sha256(value: &Value) -> String {
    let mut bytes = Vec::new();
    write_canonical(value, &mut bytes);
    hex(&Sha256::digest(&bytes))
}

/// The sha256 of an APIResourceSchema's `spec` (the JSON value of the `spec` field), as
/// `CatalogEntrySpec.schemas[].sha256` records it.
pub fn schema_sha256(schema_spec: &Value) -> String {
    canonical_sha256(schema_spec)
}

/// The digest of one published state: [`canonical_sha256`] of the CatalogEntry spec (schemas with
/// their hashes, version, endpoints, claims, dependencies: everything the provider published).
pub fn digest(entry: &CatalogEntrySpec) -> String {
    // A CatalogEntrySpec always serializes (plain strings, lists and options).
    let value = serde_json::to_value(entry).unwrap_or(Value::Null);
    canonical_sha256(&value)
}

/// The leading [`SHORT_DIGEST_LEN`] characters of `digest`.
pub fn short_digest(digest: &str) -> &str {
    digest.get(..SHORT_DIGEST_LEN).unwrap_or(digest)
}

/// `<provider>-<short digest>`: the ProviderRevision of `entry` published by `provider`.
pub fn revision_name(provider: &str, entry: &CatalogEntrySpec) -> String {
    format!("{provider}-{}", short_digest(&digest(entry)))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn write_canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push(b'{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(&Value::String(key.clone()), out);
                out.push(b':');
                write_canonical(&map[key], out);
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(item, out);
            }
            out.push(b']');
        }
        scalar => out.extend_from_slice(scalar.to_string().as_bytes()),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::catalog::PublishedSchema;
    use serde_json::json;

    fn entry() -> CatalogEntrySpec {
        CatalogEntrySpec {
            display_name: "Quickstart".into(),
            version: Some("0.1.0".into()),
            schemas: Some(vec![PublishedSchema {
                group: "quickstart.faros.sh".into(),
                resource: "greetings".into(),
                name: "v1.greetings.quickstart.faros.sh".into(),
                sha256: schema_sha256(&json!({"group": "quickstart.faros.sh"})),
            }]),
            ..Default::default()
        }
    }

    #[test]
    fn key_order_does_not_matter() {
        let a: Value = serde_json::from_str(r#"{"b": 1, "a": {"y": [1, "x"], "x": null}}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"a": {"x": null, "y": [1, "x"]}, "b": 1}"#).unwrap();
        assert_eq!(canonical_sha256(&a), canonical_sha256(&b));
        let c: Value = serde_json::from_str(r#"{"a": {"x": null, "y": ["x", 1]}, "b": 1}"#).unwrap();
        assert_ne!(canonical_sha256(&a), canonical_sha256(&c), "list order matters");
    }

    #[test]
    fn known_value() {
        // sha256 of the bytes `{}`: pins the canonical form so hub and SDK builds agree.
        assert_eq!(
            canonical_sha256(&json!({})),
            "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
        );
        assert_eq!(
            canonical_sha256(&json!({"b": "é", "a": 1.5})),
            canonical_sha256(&serde_json::from_str(r#"{"a":1.5,"b":"é"}"#).unwrap())
        );
    }

    #[test]
    fn digest_changes_with_published_state() {
        let base = entry();
        let d = digest(&base);
        assert_eq!(d.len(), 64);
        assert_eq!(digest(&base.clone()), d, "deterministic");
        let mut version = base.clone();
        version.version = Some("0.2.0".into());
        assert_ne!(digest(&version), d);
        let mut schema = base.clone();
        schema.schemas.as_mut().unwrap()[0].sha256 = "0".repeat(64);
        assert_ne!(digest(&schema), d);
        let name = revision_name("quickstart", &base);
        assert_eq!(name, format!("quickstart-{}", &d[..SHORT_DIGEST_LEN]));
        assert_eq!(short_digest("abc"), "abc");
    }
}
