//! The hashes kcp derives names and labels from: base62 of sha224 (export labels, claim labels) and
//! the hex sha256 identity hash of an export's identity key.

use sha2::{Digest, Sha224, Sha256};

/// Go's `big.Int.Text(62)` alphabet.
const BASE62: &[u8; 62] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";

/// `bytes` read as one big-endian unsigned number, written in base 62 without padding (kcp's
/// `Base62.Bytes`, i.e. `big.Int.SetBytes(b).Text(62)`: leading zero bytes vanish, zero is `"0"`).
pub fn base62(bytes: &[u8]) -> String {
    let mut number: Vec<u8> = bytes.iter().copied().skip_while(|b| *b == 0).collect();
    if number.is_empty() {
        return "0".into();
    }
    let mut digits = Vec::new();
    while !number.is_empty() {
        // Long division of the big-endian number by 62; the remainder is the next digit.
        let mut remainder: u32 = 0;
        let mut quotient = Vec::with_capacity(number.len());
        for byte in &number {
            let acc = (remainder << 8) | u32::from(*byte);
            let q = acc / 62;
            remainder = acc % 62;
            if !(quotient.is_empty() && q == 0) {
                quotient.push(q as u8);
            }
        }
        digits.push(BASE62[remainder as usize]);
        number = quotient;
    }
    digits.reverse();
    String::from_utf8_lossy(&digits).into_owned()
}

/// kcp's `Base62Sha224.Bytes`.
pub fn base62_sha224(input: &[u8]) -> String {
    base62(&Sha224::digest(input))
}

/// Value of label `internal.apis.kcp.io/export` on APIBindings, and the hash part of the claim label
/// key: `base62(sha224("<export cluster name>:<export name>"))`.
pub fn export_hash(export_cluster: &str, export_name: &str) -> String {
    base62_sha224(format!("{export_cluster}:{export_name}").as_bytes())
}

/// Discovery's `storageVersionHash` of a bound API as kcp computes it: base64 of the first 8 bytes
/// of sha256(`system:bound-crds/<group version>/<version>/<kind>`) — kcp's bound CRDs live in
/// that logical cluster, and its discovery passes the group version where the group goes.
pub fn bound_storage_version_hash(group: &str, version: &str, kind: &str) -> String {
    use base64::Engine;
    let group_version = match group {
        "" => version.to_string(),
        g => format!("{g}/{version}"),
    };
    let input = format!("{}/{group_version}/{version}/{kind}", crate::names::BOUND_CRDS_CLUSTER);
    base64::engine::general_purpose::STANDARD.encode(&Sha256::digest(input.as_bytes())[..8])
}

/// `status.identityHash` of an APIExport: lowercase hex sha256 of the identity key bytes.
pub fn identity_hash(key: &[u8]) -> String {
    Sha256::digest(key).iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bound_storage_version_hashes_are_kcps() {
        // As kcp v0.32.3 serves a bound example.io/v1 Widget (e2e/kcp-diff/recorded/apis.json).
        assert_eq!(bound_storage_version_hash("example.io", "v1", "Widget"), "rhmV+P4q25o=");
    }

    #[test]
    fn base62_matches_go_big_int_text() {
        let cases: [(&[u8], &str); 5] = [
            (&[], "0"),
            (&[0, 0], "0"),
            (&[61], "Z"),
            (&[62], "10"),
            (&[0, 1, 0], "48"),
        ];
        for (input, want) in cases {
            assert_eq!(base62(input), want, "{input:?}");
        }
    }

    #[test]
    fn hashes_match_independently_computed_values() {
        // Expected values computed with Python's hashlib and int.from_bytes.
        assert_eq!(
            export_hash("root", "widgets.example.io"),
            "4o7BgXDVSw9Z0bNGI5KvI2webNkICO2gMjsFfu"
        );
        assert_eq!(
            export_hash("abc123", "my-export"),
            "cUz67Lg9NZZ3Jmc8dOdWoZ0J08A308aWAtEZjT"
        );
        assert_eq!(
            base62_sha224(br#"{"resource":"configmaps","verbs":null}"#),
            "3QVjs6pfBjMpLEVYYhysJnroYGsQGlWm05E4qe"
        );
        assert_eq!(
            identity_hash(b"secret-key"),
            "85dbe15d75ef9308c7ae0f33c7a324cc6f4bf519a2ed2f3027bd33c140a4f9aa"
        );
    }
}
