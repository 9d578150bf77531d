//! The server's TLS material: a persisted self-signed CA and a serving certificate it signs.
//!
//! Kubeconfigs written for this server carry `ca.crt`, so the CA must survive restarts; the
//! serving certificate is cheap and is reissued whenever the host list changes, it would not
//! verify any more, or it expires within [`RENEW_BEFORE`]. Key files are written 0600 through a
//! temporary file and a rename, so a crash never leaves a half-written key behind.
//!
//! The CA is never regenerated on its own: replacing it would silently break every kubeconfig
//! handed out. If it cannot sign usable certificates any more, loading fails and says so.

use std::fs;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
#[cfg(test)]
use rustls::ClientConfig;
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::ServerCertVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{RootCertStore, ServerConfig};
use sha2::{Digest, Sha256};

pub const CA_CERT_FILE: &str = "ca.crt";
pub const CA_KEY_FILE: &str = "ca.key";
pub const SERVING_CERT_FILE: &str = "apiserver.crt";
pub const SERVING_KEY_FILE: &str = "apiserver.key";
/// The host list the serving certificate was issued for, one per line.
pub const SERVING_HOSTS_FILE: &str = "apiserver.hosts";

/// Hosts every serving certificate covers, before the caller's.
pub const DEFAULT_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

const CA_VALIDITY: Duration = Duration::from_secs(10 * 365 * 24 * 60 * 60);
const SERVING_VALIDITY: Duration = Duration::from_secs(365 * 24 * 60 * 60);
/// A serving certificate expiring within this window is reissued at start.
pub const RENEW_BEFORE: Duration = Duration::from_secs(30 * 24 * 60 * 60);
/// Backdating tolerates clients whose clocks run a little behind.
const BACKDATE: Duration = Duration::from_secs(60 * 60);

const CA_COMMON_NAME: &str = "faros-embedded-kcp-ca";
const SERVING_COMMON_NAME: &str = "faros-embedded-kcp";

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("{action} {path}: {source}")]
    Io {
        action: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not valid PEM: {detail}")]
    Pem { path: PathBuf, detail: String },
    #[error("cannot generate certificate: {0}")]
    Generate(#[from] rcgen::Error),
    #[error("TLS configuration: {0}")]
    Rustls(#[from] rustls::Error),
    #[error("TLS configuration: {0}")]
    Verifier(#[from] rustls::client::VerifierBuilderError),
    #[error(
        "the CA in {dir} cannot issue a valid serving certificate ({detail}); remove {CA_CERT_FILE} and \
         {CA_KEY_FILE} there to create a new CA (kubeconfigs that embed the old one must then be refreshed)"
    )]
    CaUnusable { dir: PathBuf, detail: String },
}

/// CA and serving certificate, ready to serve.
#[derive(Clone, Debug)]
pub struct TlsMaterial {
    ca_pem: String,
    // Only tests look at these: they check what was loaded or generated.
    #[cfg(test)]
    ca_der: CertificateDer<'static>,
    #[cfg(test)]
    serving_cert_pem: String,
    server_config: Arc<ServerConfig>,
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}

fn io_err(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> TlsError {
    let path = path.to_path_buf();
    move |source| TlsError::Io { action, path, source }
}

fn now() -> Duration {
    // A clock before 1970 is not a state this server can do anything useful in.
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default()
}

/// Valid from a little before now for `validity`. (rcgen's time type is not re-exported, hence
/// arithmetic from its epoch helper.)
fn set_validity(params: &mut CertificateParams, validity: Duration) {
    let start = now();
    let epoch = rcgen::date_time_ymd(1970, 1, 1);
    params.not_before = epoch + start.saturating_sub(BACKDATE);
    params.not_after = epoch + (start + validity);
}

impl TlsMaterial {
    /// Loads the CA and serving certificate from `dir`, creating or reissuing what is missing or
    /// stale. The serving certificate covers [`DEFAULT_HOSTS`] plus `hosts` (DNS names or IPs).
    pub fn load_or_create(dir: &Path, hosts: &[String]) -> Result<Self, TlsError> {
        fs::create_dir_all(dir).map_err(io_err("create directory", dir))?;
        let hosts = all_hosts(hosts);

        let (ca_pem, ca_key) = load_or_create_ca(dir)?;
        let ca_der = parse_cert(&dir.join(CA_CERT_FILE), &ca_pem)?;
        let verifier = verifier_for(&ca_der)?;

        let existing = load_serving(dir, &hosts)?;
        let renew_at = UnixTime::since_unix_epoch(now() + RENEW_BEFORE);
        let (cert_pem, key_pem) = match existing {
            Some((cert, key)) if chain_ok(&verifier, &dir.join(SERVING_CERT_FILE), &cert, &hosts, renew_at)? => {
                (cert, key)
            }
            _ => {
                let (cert, key) = issue_serving(&ca_key, &hosts)?;
                let fresh = UnixTime::since_unix_epoch(now());
                let path = dir.join(SERVING_CERT_FILE);
                let der = parse_cert(&path, &cert)?;
                for host in &hosts {
                    if let Ok(name) = ServerName::try_from(host.as_str())
                        && let Err(e) = verifier.verify_server_cert(&der, &[], &name, &[], fresh)
                    {
                        return Err(TlsError::CaUnusable {
                            dir: dir.to_path_buf(),
                            detail: e.to_string(),
                        });
                    }
                }
                write_file(&dir.join(SERVING_KEY_FILE), key.as_bytes(), 0o600)?;
                write_file(&path, cert.as_bytes(), 0o600)?;
                write_file(&dir.join(SERVING_HOSTS_FILE), hosts_file(&hosts).as_bytes(), 0o600)?;
                (cert, key)
            }
        };

        let cert_path = dir.join(SERVING_CERT_FILE);
        let chain = vec![parse_cert(&cert_path, &cert_pem)?];
        let key_path = dir.join(SERVING_KEY_FILE);
        let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes()).map_err(|e| TlsError::Pem {
            path: key_path,
            detail: e.to_string(),
        })?;
        let config = faros_core::server_tls::server_config(|b| b.with_single_cert(chain, key))?;

        #[cfg(not(test))]
        let _ = (ca_der, cert_pem);
        Ok(Self {
            ca_pem,
            #[cfg(test)]
            ca_der,
            #[cfg(test)]
            serving_cert_pem: cert_pem,
            server_config: Arc::new(config),
        })
    }

    /// The CA certificate, for kubeconfigs' `certificate-authority-data`.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    #[cfg(test)]
    pub fn serving_cert_pem(&self) -> &str {
        &self.serving_cert_pem
    }

    /// Serves `h2` and `http/1.1` (ALPN) with the serving certificate.
    pub fn server_config(&self) -> Arc<ServerConfig> {
        self.server_config.clone()
    }

    /// A client configuration trusting only this CA.
    #[cfg(test)]
    pub fn client_config(&self) -> Result<Arc<ClientConfig>, TlsError> {
        let mut roots = RootCertStore::empty();
        roots.add(self.ca_der.clone())?;
        let config = ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(Arc::new(config))
    }
}

fn all_hosts(extra: &[String]) -> Vec<String> {
    let mut hosts: Vec<String> = DEFAULT_HOSTS.iter().map(|h| h.to_string()).collect();
    for host in extra {
        let host = host.trim();
        if !host.is_empty() && !hosts.iter().any(|h| h == host) {
            hosts.push(host.to_string());
        }
    }
    hosts
}

fn hosts_file(hosts: &[String]) -> String {
    hosts.iter().map(|h| format!("{h}\n")).collect()
}

/// The CA's parameters. The common name carries a digest of the CA key, so CAs of different
/// servers have different subjects (clients pick trust anchors by subject) while the subject can
/// still be recomputed from the persisted key alone.
fn ca_params(key: &KeyPair) -> CertificateParams {
    let digest = Sha256::digest(key.public_key_raw());
    let suffix: String = digest.iter().take(6).map(|b| format!("{b:02x}")).collect();
    let mut params = CertificateParams::default();
    let mut name = DistinguishedName::new();
    name.push(DnType::CommonName, format!("{CA_COMMON_NAME}@{suffix}"));
    params.distinguished_name = name;
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    params
}

/// Returns the CA certificate PEM and its key. An existing pair is reused as is.
fn load_or_create_ca(dir: &Path) -> Result<(String, KeyPair), TlsError> {
    let cert_path = dir.join(CA_CERT_FILE);
    let key_path = dir.join(CA_KEY_FILE);
    match (read_optional(&cert_path)?, read_optional(&key_path)?) {
        (Some(cert), Some(key)) => {
            let key = KeyPair::from_pem(&key).map_err(|e| TlsError::Pem {
                path: key_path,
                detail: e.to_string(),
            })?;
            Ok((cert, key))
        }
        (None, None) => {
            let key = KeyPair::generate()?;
            let mut params = ca_params(&key);
            set_validity(&mut params, CA_VALIDITY);
            let cert = params.self_signed(&key)?.pem();
            write_file(&key_path, key.serialize_pem().as_bytes(), 0o600)?;
            write_file(&cert_path, cert.as_bytes(), 0o600)?;
            Ok((cert, key))
        }
        _ => Err(TlsError::CaUnusable {
            dir: dir.to_path_buf(),
            detail: format!("only one of {CA_CERT_FILE} and {CA_KEY_FILE} exists"),
        }),
    }
}

/// The persisted serving certificate and key, if both exist and were issued for exactly `hosts`.
fn load_serving(dir: &Path, hosts: &[String]) -> Result<Option<(String, String)>, TlsError> {
    let recorded = read_optional(&dir.join(SERVING_HOSTS_FILE))?;
    if recorded.as_deref() != Some(hosts_file(hosts).as_str()) {
        return Ok(None);
    }
    let cert = read_optional(&dir.join(SERVING_CERT_FILE))?;
    let key = read_optional(&dir.join(SERVING_KEY_FILE))?;
    Ok(cert.zip(key))
}

/// Whether `cert_pem` chains to the CA for every host at `when`. An unparsable file only means
/// "reissue".
fn chain_ok(
    verifier: &WebPkiServerVerifier,
    path: &Path,
    cert_pem: &str,
    hosts: &[String],
    when: UnixTime,
) -> Result<bool, TlsError> {
    let Ok(der) = parse_cert(path, cert_pem) else {
        return Ok(false);
    };
    Ok(hosts.iter().all(|host| match ServerName::try_from(host.as_str()) {
        Ok(name) => verifier.verify_server_cert(&der, &[], &name, &[], when).is_ok(),
        // Names rustls cannot verify against (e.g. wildcards) are covered by the hosts file check.
        Err(_) => true,
    }))
}

fn issue_serving(ca_key: &KeyPair, hosts: &[String]) -> Result<(String, String), TlsError> {
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::new(hosts.to_vec())?;
    let mut name = DistinguishedName::new();
    name.push(DnType::CommonName, SERVING_COMMON_NAME);
    params.distinguished_name = name;
    params.is_ca = IsCa::ExplicitNoCa;
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.use_authority_key_identifier_extension = true;
    set_validity(&mut params, SERVING_VALIDITY);
    // The issuer only needs the CA's subject and key; both are deterministic, so the persisted CA
    // certificate does not have to be parsed back into parameters.
    let issuer = Issuer::new(ca_params(ca_key), ca_key);
    let cert = params.signed_by(&key, &issuer)?;
    Ok((cert.pem(), key.serialize_pem()))
}

fn verifier_for(ca: &CertificateDer<'static>) -> Result<Arc<WebPkiServerVerifier>, TlsError> {
    let mut roots = RootCertStore::empty();
    roots.add(ca.clone())?;
    Ok(WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider()).build()?)
}

fn parse_cert(path: &Path, pem: &str) -> Result<CertificateDer<'static>, TlsError> {
    CertificateDer::from_pem_slice(pem.as_bytes()).map_err(|e| TlsError::Pem {
        path: path.to_path_buf(),
        detail: e.to_string(),
    })
}

fn read_optional(path: &Path) -> Result<Option<String>, TlsError> {
    match fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_err("read", path)(e)),
    }
}

/// Writes through a temporary file in the same directory and renames it into place.
fn write_file(path: &Path, contents: &[u8], mode: u32) -> Result<(), TlsError> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let _ = fs::remove_file(&tmp);
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(&tmp)
        .map_err(io_err("create", &tmp))?;
    file.write_all(contents).map_err(io_err("write", &tmp))?;
    file.sync_all().map_err(io_err("sync", &tmp))?;
    fs::rename(&tmp, path).map_err(io_err("rename into", path))?;
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    fn mode(path: &Path) -> u32 {
        fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    /// What a handshake settled: the ALPN protocol and the cipher suite.
    type Negotiated = (Option<Vec<u8>>, Option<rustls::CipherSuite>);

    /// Serves one TLS connection that echoes 4 bytes, and returns what the client negotiated.
    async fn handshake(server: &TlsMaterial, client: Arc<ClientConfig>, name: &str) -> Result<Negotiated, String> {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(server.server_config());
        let server_task = tokio::spawn(async move {
            let (tcp, _) = listener.accept().await.unwrap();
            let Ok(mut tls) = acceptor.accept(tcp).await else {
                return;
            };
            let mut buf = [0u8; 4];
            if tls.read_exact(&mut buf).await.is_ok() {
                let _ = tls.write_all(&buf).await;
                let _ = tls.shutdown().await;
            }
        });
        let connector = tokio_rustls::TlsConnector::from(client);
        let tcp = TcpStream::connect(addr).await.unwrap();
        let name = ServerName::try_from(name.to_string()).unwrap();
        let result = match connector.connect(name, tcp).await {
            Ok(mut tls) => {
                tls.write_all(b"ping").await.unwrap();
                let mut buf = [0u8; 4];
                tls.read_exact(&mut buf).await.unwrap();
                assert_eq!(&buf, b"ping");
                let session = tls.get_ref().1;
                Ok((
                    session.alpn_protocol().map(|p| p.to_vec()),
                    session.negotiated_cipher_suite().map(|s| s.suite()),
                ))
            }
            Err(e) => Err(e.to_string()),
        };
        server_task.await.unwrap();
        result
    }

    #[tokio::test]
    async fn client_trusting_only_the_ca_completes_handshakes() {
        let dir = tempfile::tempdir().unwrap();
        let tls = TlsMaterial::load_or_create(dir.path(), &["faros.test".to_string()]).unwrap();
        assert!(tls.ca_pem().starts_with("-----BEGIN CERTIFICATE-----"));

        for name in ["localhost", "127.0.0.1", "::1", "faros.test"] {
            let mut client = ClientConfig::clone(&tls.client_config().unwrap());
            client.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
            // The client lists AES-256-GCM first (rustls' default); the server's order wins
            // (faros_core::server_tls).
            assert_eq!(
                handshake(&tls, Arc::new(client), name).await,
                Ok((
                    Some(b"h2".to_vec()),
                    Some(rustls::CipherSuite::TLS13_AES_128_GCM_SHA256)
                )),
                "{name}"
            );
        }
        let mut http1 = ClientConfig::clone(&tls.client_config().unwrap());
        http1.alpn_protocols = vec![b"http/1.1".to_vec()];
        assert_eq!(
            handshake(&tls, Arc::new(http1), "localhost").await.unwrap().0,
            Some(b"http/1.1".to_vec())
        );

        let err = handshake(&tls, tls.client_config().unwrap(), "other.test")
            .await
            .unwrap_err();
        assert!(err.contains("certificate not valid for name \"other.test\""), "{err}");

        let other_dir = tempfile::tempdir().unwrap();
        let other = TlsMaterial::load_or_create(other_dir.path(), &[]).unwrap();
        let err = handshake(&tls, other.client_config().unwrap(), "localhost")
            .await
            .unwrap_err();
        assert_eq!(err, "invalid peer certificate: UnknownIssuer");
    }

    #[test]
    fn files_are_persisted_owner_only() {
        let dir = tempfile::tempdir().unwrap();
        TlsMaterial::load_or_create(dir.path(), &[]).unwrap();
        assert_eq!(mode(&dir.path().join(CA_KEY_FILE)), 0o600);
        assert_eq!(mode(&dir.path().join(SERVING_KEY_FILE)), 0o600);
        // The state directory is the owner's alone (crate::state_dir), public certificates too.
        assert_eq!(mode(&dir.path().join(CA_CERT_FILE)), 0o600);
        assert_eq!(
            fs::read_to_string(dir.path().join(SERVING_HOSTS_FILE)).unwrap(),
            "localhost\n127.0.0.1\n::1\n"
        );
        assert!(!dir.path().join(format!("{SERVING_KEY_FILE}.tmp")).exists());
    }

    #[test]
    fn reload_reuses_and_host_changes_reissue_under_the_same_ca() {
        let dir = tempfile::tempdir().unwrap();
        let hosts = vec!["a.test".to_string()];
        let first = TlsMaterial::load_or_create(dir.path(), &hosts).unwrap();
        let again = TlsMaterial::load_or_create(dir.path(), &hosts).unwrap();
        assert_eq!(again.ca_pem(), first.ca_pem());
        assert_eq!(again.serving_cert_pem(), first.serving_cert_pem());

        let changed = TlsMaterial::load_or_create(dir.path(), &["b.test".to_string()]).unwrap();
        assert_eq!(changed.ca_pem(), first.ca_pem());
        assert_ne!(changed.serving_cert_pem(), first.serving_cert_pem());
        assert_eq!(
            fs::read_to_string(dir.path().join(SERVING_HOSTS_FILE)).unwrap(),
            "localhost\n127.0.0.1\n::1\nb.test\n"
        );

        // A serving certificate from another CA does not verify and is replaced.
        let other = tempfile::tempdir().unwrap();
        let foreign = TlsMaterial::load_or_create(other.path(), &["b.test".to_string()]).unwrap();
        fs::copy(other.path().join(SERVING_CERT_FILE), dir.path().join(SERVING_CERT_FILE)).unwrap();
        let repaired = TlsMaterial::load_or_create(dir.path(), &["b.test".to_string()]).unwrap();
        assert_ne!(repaired.serving_cert_pem(), foreign.serving_cert_pem());
        assert_eq!(repaired.ca_pem(), first.ca_pem());
    }

    #[test]
    fn near_expiry_is_detected_by_the_renewal_check() {
        let dir = tempfile::tempdir().unwrap();
        let tls = TlsMaterial::load_or_create(dir.path(), &[]).unwrap();
        let ca = parse_cert(Path::new("ca"), tls.ca_pem()).unwrap();
        let verifier = verifier_for(&ca).unwrap();
        let hosts = all_hosts(&[]);
        let path = Path::new("serving");
        let cert = tls.serving_cert_pem();
        let at = |d: Duration| UnixTime::since_unix_epoch(now() + d);
        assert!(chain_ok(&verifier, path, cert, &hosts, at(RENEW_BEFORE)).unwrap());
        assert!(
            !chain_ok(
                &verifier,
                path,
                cert,
                &hosts,
                at(SERVING_VALIDITY + Duration::from_secs(24 * 60 * 60))
            )
            .unwrap()
        );
        assert!(!chain_ok(&verifier, path, "garbage", &hosts, at(Duration::ZERO)).unwrap());
    }

    #[test]
    fn half_a_ca_is_an_error_not_a_silent_rotation() {
        let dir = tempfile::tempdir().unwrap();
        TlsMaterial::load_or_create(dir.path(), &[]).unwrap();
        fs::remove_file(dir.path().join(CA_KEY_FILE)).unwrap();
        let err = TlsMaterial::load_or_create(dir.path(), &[]).unwrap_err();
        assert!(matches!(err, TlsError::CaUnusable { .. }), "{err}");
        assert!(
            err.to_string().contains("only one of ca.crt and ca.key exists"),
            "{err}"
        );
    }

    #[test]
    fn default_hosts_come_first_without_duplicates() {
        assert_eq!(
            all_hosts(&["localhost".into(), " x.test ".into(), "".into(), "x.test".into()]),
            vec!["localhost", "127.0.0.1", "::1", "x.test"]
        );
    }
}
