//! The TLS policy every faros server shares (the embedded kcp, the hub): aws-lc-rs, TLS 1.2 and 1.3,
//! h2 then http/1.1 by ALPN, and the server's cipher suite order over the client's.
//!
//! Why the server's order: rustls clients (kube-rs controllers, the SDK, the hub's own kcp client)
//! and OpenSSL clients list AES-256-GCM first, and a server that follows the client encrypts every
//! response with it. AES-128-GCM does the same job in 10 AES rounds per block instead of 14: a list of
//! 10 000 objects (15 MB) measured about 5 % less server CPU (docs/install.md, "Hub TLS"), and the
//! client decrypts the cheaper suite too. kube-apiserver, like every Go server, picks AES-128-GCM
//! whatever the client lists first, so kubectl and client-go meet the same choice from faros as from
//! kcp. Every suite offered is an AEAD with forward secrecy; only the order changes.

use std::sync::Arc;

use rustls::crypto::CryptoProvider;
use rustls::server::WantsServerCert;
use rustls::{CipherSuite, ConfigBuilder, ServerConfig};

/// What ALPN offers, in order.
const ALPN: [&[u8]; 2] = [b"h2", b"http/1.1"];

/// Whether a suite is one of AES-128-GCM's (TLS 1.3, or TLS 1.2 with ECDHE).
fn is_aes_128_gcm(suite: CipherSuite) -> bool {
    matches!(
        suite,
        CipherSuite::TLS13_AES_128_GCM_SHA256
            | CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256
            | CipherSuite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256
    )
}

/// aws-lc-rs' default provider with its AES-128-GCM suites moved to the front of each version's list
/// (the sort is stable: everything else keeps its order, TLS 1.3 before TLS 1.2).
pub fn provider() -> Arc<CryptoProvider> {
    let mut provider = rustls::crypto::aws_lc_rs::default_provider();
    provider.cipher_suites.sort_by_key(|s| {
        (
            s.version().version != rustls::ProtocolVersion::TLSv1_3,
            !is_aes_128_gcm(s.suite()),
        )
    });
    Arc::new(provider)
}

/// A server config with this policy; `certs` adds how the server finds its certificate (a fixed
/// chain, or a resolver that reloads files).
pub fn server_config(
    certs: impl FnOnce(ConfigBuilder<ServerConfig, WantsServerCert>) -> Result<ServerConfig, rustls::Error>,
) -> Result<ServerConfig, rustls::Error> {
    let builder = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()?
        .with_no_client_auth();
    let mut config = certs(builder)?;
    config.ignore_client_order = true;
    config.alpn_protocols = ALPN.iter().map(|p| p.to_vec()).collect();
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aes_128_gcm_leads_each_version_and_nothing_is_added_or_lost() {
        let default = rustls::crypto::aws_lc_rs::default_provider();
        let ours = provider();
        let names = |suites: &[rustls::SupportedCipherSuite]| -> Vec<CipherSuite> {
            suites.iter().map(|s| s.suite()).collect()
        };
        let (mut want, mut got) = (names(&default.cipher_suites), names(&ours.cipher_suites));
        assert_eq!(got[0], CipherSuite::TLS13_AES_128_GCM_SHA256, "{got:?}");
        let first_tls12 = ours
            .cipher_suites
            .iter()
            .position(|s| s.version().version == rustls::ProtocolVersion::TLSv1_2)
            .expect("TLS 1.2 suites");
        assert!(
            ours.cipher_suites[..first_tls12]
                .iter()
                .all(|s| s.version().version == rustls::ProtocolVersion::TLSv1_3),
            "TLS 1.3 first: {got:?}"
        );
        assert!(is_aes_128_gcm(got[first_tls12]), "{got:?}");
        want.sort_by_key(|s| u16::from(*s));
        got.sort_by_key(|s| u16::from(*s));
        assert_eq!(got, want, "the same suites as aws-lc-rs' defaults");
    }
}
