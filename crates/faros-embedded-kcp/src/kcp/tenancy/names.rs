//! Names kcp derives for workspaces: random logical cluster names, the shard hash annotation and the
//! names of default APIBindings. kcp renders SHA-224 digests as big integers in base 36 or 62.

use rand::Rng;
use sha2::{Digest, Sha224};

const DIGITS: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";

/// The big-endian integer in `bytes` written in `base` (2..=62) with Go's `big.Int.Text` digits.
pub fn big_text(bytes: &[u8], base: u32) -> String {
    let mut num = bytes.to_vec();
    let mut digits = Vec::new();
    while num.iter().any(|b| *b != 0) {
        let mut rem = 0u32;
        for b in num.iter_mut() {
            let cur = (rem << 8) | u32::from(*b);
            // cur < base * 256, so the quotient fits a byte.
            *b = (cur / base) as u8;
            rem = cur % base;
        }
        digits.push(DIGITS[rem as usize]);
    }
    if digits.is_empty() {
        digits.push(b'0');
    }
    digits.reverse();
    digits.into_iter().map(char::from).collect()
}

fn sha224(text: &str) -> Vec<u8> {
    Sha224::digest(text.as_bytes()).to_vec()
}

/// A new logical cluster name: 16 random base36 characters (kcp's scheduler does the same).
pub fn random_cluster_name() -> String {
    let mut rng = rand::rng();
    (0..16).map(|_| char::from(DIGITS[rng.random_range(0..36)])).collect()
}

/// `internal.tenancy.kcp.io/shard`: the first 8 base36 characters of SHA-224 of the shard name.
pub fn shard_hash(shard: &str) -> String {
    big_text(&sha224(shard), 36).chars().take(8).collect()
}

/// The name of the APIBinding the `system:apibindings` initializer creates for a default export:
/// `<export>-<first 5 of lowercase base62(sha224("<cluster>|<path>|<export>"))>`.
pub fn default_binding_name(cluster: &str, export_path: &str, export: &str) -> String {
    let hash = big_text(&sha224(&format!("{cluster}|{export_path}|{export}")), 62).to_lowercase();
    format!("{export}-{}", hash.chars().take(5).collect::<String>())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn big_integers_in_other_bases() {
        for (bytes, base, want) in [
            (&[][..], 36, "0"),
            (&[0u8, 0][..], 36, "0"),
            (&[1, 0][..], 36, "74"),
            (&[0xff][..], 16, "ff"),
            (&[61][..], 62, "Z"),
            (&[62][..], 62, "10"),
            (&[0x01, 0x00, 0x00][..], 2, "10000000000000000"),
        ] {
            assert_eq!(big_text(bytes, base), want, "{bytes:?} base {base}");
        }
    }

    #[test]
    fn cluster_names_are_16_base36_chars() {
        let a = random_cluster_name();
        assert_eq!(a.len(), 16);
        assert!(a.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()), "{a}");
        assert_ne!(a, random_cluster_name());
    }

    #[test]
    fn derived_names_are_stable() {
        let h = shard_hash("root");
        assert_eq!(h.len(), 8);
        assert_eq!(h, shard_hash("root"));
        assert_ne!(h, shard_hash("other"));
        let b = default_binding_name("abc", "root:faros", "providers.faros.sh");
        assert!(b.starts_with("providers.faros.sh-"), "{b}");
        assert_eq!(b.len(), "providers.faros.sh-".len() + 5);
        assert_eq!(b, default_binding_name("abc", "root:faros", "providers.faros.sh"));
        assert_ne!(b, default_binding_name("abd", "root:faros", "providers.faros.sh"));
    }
}
