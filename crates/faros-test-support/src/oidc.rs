//! A real OpenID Connect provider as a child process: `e2e/oidc/idp.mjs` (panva's `oidc-provider`)
//! on 127.0.0.1 with its own TLS, static users with passwords and groups, and a login form.
//!
//! [`Idp::start`] writes a test CA, a serving certificate, the users and clients into a temporary
//! directory, starts `node idp.mjs`, and returns once the discovery document answers over TLS.
//! [`Idp::login`] walks the authorization-code + PKCE flow through the login form headlessly
//! (`e2e/oidc/login.mjs`), as a browser would, and returns the token response. [`Idp::sign_in_via`]
//! walks a relying party's own flow (the hub's `/api/session/oidc`) through the login form the same
//! way and returns where the relying party's callback sent the browser, with its cookies. Users are
//! re-read by the IdP on every use, so [`Idp::set_user`] disables or changes one at once.
//!
//! Needs `npm ci --prefix e2e/oidc` (done by `.ci/run`); without it [`Idp::start`] says so.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::https;

/// How long the IdP may take to answer its discovery document (node starting oidc-provider took
/// over 30 s once on 2 cores busy with builds).
const START_TIMEOUT: Duration = Duration::from_secs(90);

#[derive(Debug, thiserror::Error)]
pub enum IdpError {
    #[error(
        "the test IdP's packages are not installed ({0} is missing): run `npm ci --prefix e2e/oidc` in the repository root"
    )]
    NotInstalled(PathBuf),
    #[error("{what}: {source}")]
    Io { what: String, source: std::io::Error },
    #[error("generating the test IdP's certificates: {0}")]
    Cert(String),
    #[error("the test IdP did not start: {0}")]
    Start(String),
    #[error("the test IdP refused: {0}")]
    Refused(String),
    #[error("talking to the test IdP: {0}")]
    Http(String),
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> IdpError {
    let what = what.into();
    move |source| IdpError::Io { what, source }
}

/// A user of the IdP; `username` is also the `sub` claim.
#[derive(Clone, Debug)]
pub struct IdpUser {
    pub username: String,
    pub password: String,
    pub email: String,
    pub groups: Vec<String>,
    pub disabled: bool,
}

impl IdpUser {
    pub fn new(username: &str, password: &str, groups: &[&str]) -> Self {
        Self {
            username: username.into(),
            password: password.into(),
            email: format!("{username}@example.com"),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            disabled: false,
        }
    }

    fn to_json(&self) -> Value {
        json!({"username": self.username, "password": self.password, "email": self.email,
               "groups": self.groups, "disabled": self.disabled})
    }
}

/// A relying party registered at the IdP: a public client (PKCE, no secret).
#[derive(Clone, Debug)]
pub struct IdpClient {
    pub client_id: String,
    pub redirect_uris: Vec<String>,
    pub post_logout_redirect_uris: Vec<String>,
    /// Also allowed the device authorization grant (RFC 8628), as a CLI is.
    pub device_flow: bool,
}

/// RFC 8628's grant type.
const DEVICE_GRANT: &str = "urn:ietf:params:oauth:grant-type:device_code";

impl IdpClient {
    pub fn new(client_id: &str, redirect_uri: &str) -> Self {
        Self {
            client_id: client_id.into(),
            redirect_uris: vec![redirect_uri.into()],
            post_logout_redirect_uris: Vec::new(),
            device_flow: false,
        }
    }

    /// A public client that signs in with the device flow only (no redirect), as `faros
    /// credential oidc` does, with refresh tokens.
    pub fn device(client_id: &str) -> Self {
        Self {
            client_id: client_id.into(),
            redirect_uris: Vec::new(),
            post_logout_redirect_uris: Vec::new(),
            device_flow: true,
        }
    }

    fn to_json(&self) -> Value {
        // oidc-provider holds `web` clients to https redirects and `native` ones to loopback http
        // (or custom schemes): a hub's https callback is a web client, a CLI's loopback one native.
        let all_https = self.redirect_uris.iter().all(|u| u.starts_with("https://"));
        let application_type = if all_https && !self.redirect_uris.is_empty() {
            "web"
        } else {
            "native"
        };
        let mut doc = json!({"client_id": self.client_id, "redirect_uris": self.redirect_uris,
               "post_logout_redirect_uris": self.post_logout_redirect_uris, "application_type": application_type});
        if self.device_flow {
            let mut grants = vec![DEVICE_GRANT, "refresh_token"];
            let mut response_types: Vec<&str> = Vec::new();
            if !self.redirect_uris.is_empty() {
                grants.push("authorization_code");
                response_types.push("code");
            }
            doc["grant_types"] = json!(grants);
            doc["response_types"] = json!(response_types);
        }
        doc
    }
}

/// Where a device-flow prompt sent the user (`verification_uri_complete`), read from the text a
/// device printed (the first `https://…user_code=…` URL in it).
pub fn device_url_in(text: &str) -> Option<String> {
    text.split(|c: char| c.is_whitespace() || c == '(' || c == ')')
        .find(|w| w.starts_with("https://") && w.contains("user_code="))
        .map(str::to_string)
}

/// Token lifetimes in seconds; short ones make expiry testable.
#[derive(Clone, Copy, Debug)]
pub struct Ttls {
    pub id_token: u64,
    pub access_token: u64,
    pub refresh_token: u64,
    /// How long the login form stays usable.
    pub interaction: u64,
}

impl Default for Ttls {
    fn default() -> Self {
        Self {
            id_token: 3600,
            access_token: 3600,
            refresh_token: 86400,
            interaction: 600,
        }
    }
}

/// A token endpoint response.
#[derive(Clone, Debug, serde::Deserialize)]
pub struct Tokens {
    pub id_token: String,
    pub access_token: String,
    pub refresh_token: Option<String>,
    pub expires_in: Option<u64>,
}

/// Where a relying party's sign-in flow ended ([`Idp::sign_in_via`]).
#[derive(Clone, Debug)]
pub struct SignedIn {
    /// The `Location` the relying party's callback answered with.
    pub location: String,
    /// The cookies the relying party set during the flow (`name` → `value`; cleared ones absent).
    pub cookies: std::collections::BTreeMap<String, String>,
    /// Every URL of the relying party's origin the browser was sent to, in order (the callback
    /// among them, to replay it).
    pub visited: Vec<String>,
    /// The `Cookie` header the browser sent with the callback (the flow's own cookie among them,
    /// which the callback clears: to replay the callback as the same browser).
    pub callback_cookies: String,
}

impl SignedIn {
    /// `name=value` of cookie `name`, for a `Cookie` header.
    pub fn cookie(&self, name: &str) -> Option<String> {
        self.cookies.get(name).map(|v| format!("{name}={v}"))
    }
}

/// A cookie jar of one browser: per host, name → value (host-only cookies; paths ignored, which
/// only sends a flow's cookies to more of its own host's paths).
#[derive(Default)]
struct Jar(std::collections::BTreeMap<String, std::collections::BTreeMap<String, String>>);

impl Jar {
    fn take(&mut self, url: &reqwest::Url, resp: &reqwest::Response) {
        let host = url.host_str().unwrap_or_default().to_string();
        for line in resp.headers().get_all(reqwest::header::SET_COOKIE) {
            let Ok(line) = line.to_str() else { continue };
            let mut parts = line.split(';');
            let Some((name, value)) = parts.next().and_then(|p| p.split_once('=')) else {
                continue;
            };
            let cleared = parts.any(|a| a.trim().eq_ignore_ascii_case("max-age=0"));
            let jar = self.0.entry(host.clone()).or_default();
            if cleared || value.is_empty() {
                jar.remove(name.trim());
            } else {
                jar.insert(name.trim().to_string(), value.trim().to_string());
            }
        }
    }

    fn header(&self, url: &reqwest::Url) -> String {
        self.0
            .get(url.host_str().unwrap_or_default())
            .map(|c| c.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("; "))
            .unwrap_or_default()
    }
}

/// The running IdP; killed when dropped.
pub struct Idp {
    /// `None` only while starting.
    child: Option<Child>,
    dir: tempfile::TempDir,
    issuer: String,
    ca_pem: String,
    admin_token: String,
    users: std::sync::Mutex<Vec<IdpUser>>,
    clients: Vec<IdpClient>,
    ttls: Ttls,
}

impl std::fmt::Debug for Idp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Idp").field("issuer", &self.issuer).finish()
    }
}

/// `e2e/oidc` in the repository.
pub fn idp_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../e2e/oidc")
}

fn certificates() -> Result<(String, String, String), IdpError> {
    let err = |e: rcgen::Error| IdpError::Cert(e.to_string());
    let ca_key = rcgen::KeyPair::generate().map_err(err)?;
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).map_err(err)?;
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "faros test IdP CA");
    let ca = ca_params.self_signed(&ca_key).map_err(err)?;
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let key = rcgen::KeyPair::generate().map_err(err)?;
    let mut params =
        rcgen::CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()]).map_err(err)?;
    params.distinguished_name.push(rcgen::DnType::CommonName, "127.0.0.1");
    let cert = params.signed_by(&key, &issuer).map_err(err)?;
    Ok((ca.pem(), cert.pem(), key.serialize_pem()))
}

fn random_hex() -> String {
    use rand::RngCore;
    let mut bytes = [0u8; 16];
    rand::rng().fill_bytes(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl Idp {
    /// Starts the IdP with these users and clients and waits until its discovery document answers.
    pub async fn start(users: Vec<IdpUser>, clients: Vec<IdpClient>, ttls: Ttls) -> Result<Self, IdpError> {
        let root = idp_dir();
        let marker = root.join("node_modules/oidc-provider/package.json");
        if !marker.exists() {
            return Err(IdpError::NotInstalled(marker));
        }
        let dir = tempfile::tempdir().map_err(io("creating the IdP's directory"))?;
        let (ca_pem, cert, key) = certificates()?;
        for (name, text) in [("ca.pem", &ca_pem), ("server.pem", &cert), ("server-key.pem", &key)] {
            std::fs::write(dir.path().join(name), text).map_err(io(format!("writing {name}")))?;
        }
        let mut idp = Self {
            child: None,
            dir,
            issuer: String::new(),
            ca_pem,
            admin_token: random_hex(),
            users: std::sync::Mutex::new(users),
            clients,
            ttls,
        };
        idp.write_users()?;
        idp.write_config()?;
        let mut child = Command::new("node")
            .arg(root.join("idp.mjs"))
            .arg(idp.dir.path().join("config.json"))
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .map_err(io("starting node e2e/oidc/idp.mjs (is Node.js installed?)"))?;
        let stdout = child.stdout.take().ok_or_else(|| IdpError::Start("no stdout".into()))?;
        idp.child = Some(child);
        let mut lines = BufReader::new(stdout).lines();
        let line = tokio::time::timeout(START_TIMEOUT, lines.next_line())
            .await
            .map_err(|_| IdpError::Start(format!("no `listening` line within {START_TIMEOUT:?}")))?
            .map_err(io("reading the IdP's stdout"))?
            .ok_or_else(|| IdpError::Start("exited before listening (its stderr is above)".into()))?;
        let port = line
            .strip_prefix("listening ")
            .and_then(|p| p.trim().parse::<u16>().ok())
            .ok_or_else(|| IdpError::Start(format!("unexpected first line {line:?}")))?;
        idp.issuer = format!("https://127.0.0.1:{port}");
        let client = idp.client()?;
        let url = format!("{}/.well-known/openid-configuration", idp.issuer);
        crate::eventually("the test IdP's discovery document", START_TIMEOUT, || {
            let (client, url) = (client.clone(), url.clone());
            async move {
                let doc: Value = client.get(&url).send().await?.error_for_status()?.json().await?;
                Ok(doc.get("jwks_uri").map(|_| ()))
            }
        })
        .await
        .map_err(|e| IdpError::Start(e.to_string()))?;
        Ok(idp)
    }

    /// An IdP started by someone else (`cargo xtask e2e --target kcp` starts `idp.mjs` before
    /// kcp, which needs its issuer URL): the user-side flows ([`Idp::login`],
    /// [`Idp::approve_device`]) against it. Its users and clients are as its starter configured
    /// them; `clients` names those [`Idp::login`] uses.
    pub fn attach(issuer: &str, ca_pem: String, clients: Vec<IdpClient>) -> Result<Self, IdpError> {
        let dir = tempfile::tempdir().map_err(io("creating the IdP's directory"))?;
        std::fs::write(dir.path().join("ca.pem"), &ca_pem).map_err(io("writing ca.pem"))?;
        Ok(Self {
            child: None,
            dir,
            issuer: issuer.trim_end_matches('/').to_string(),
            ca_pem,
            admin_token: String::new(),
            users: std::sync::Mutex::new(Vec::new()),
            clients,
            ttls: Ttls::default(),
        })
    }

    /// `https://127.0.0.1:<port>`, exactly as tokens carry it in `iss`.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The CA that signed the IdP's serving certificate (`--oidc-ca-file`).
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    pub fn ca_file(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }

    /// The users file the IdP re-reads on every use (a test process of its own may rewrite it,
    /// whole and by rename, as [`Idp::set_user`] does).
    pub fn users_file(&self) -> PathBuf {
        self.dir.path().join("users.json")
    }

    /// An HTTP client trusting the IdP.
    pub fn client(&self) -> Result<reqwest::Client, IdpError> {
        https::client_trusting(self.ca_pem.as_bytes()).map_err(|e| IdpError::Http(e.to_string()))
    }

    fn write_users(&self) -> Result<(), IdpError> {
        let users = self.users.lock().unwrap_or_else(|p| p.into_inner());
        let doc = Value::Array(users.iter().map(IdpUser::to_json).collect());
        // Written whole then renamed, so the IdP never reads half a file.
        let tmp = self.dir.path().join("users.json.tmp");
        std::fs::write(&tmp, doc.to_string()).map_err(io("writing users.json"))?;
        std::fs::rename(&tmp, self.dir.path().join("users.json")).map_err(io("renaming users.json"))
    }

    fn write_config(&self) -> Result<(), IdpError> {
        let config = json!({
            "port": 0, "cert": "server.pem", "key": "server-key.pem", "users": "users.json",
            "clients": self.clients.iter().map(IdpClient::to_json).collect::<Vec<_>>(),
            "ttl": {"IdToken": self.ttls.id_token, "AccessToken": self.ttls.access_token,
                    "RefreshToken": self.ttls.refresh_token, "Interaction": self.ttls.interaction},
            "admin_token": self.admin_token,
        });
        std::fs::write(self.dir.path().join("config.json"), config.to_string()).map_err(io("writing config.json"))
    }

    /// Adds or replaces a user (by name); effective for the next login or token use.
    pub fn set_user(&self, user: IdpUser) -> Result<(), IdpError> {
        {
            let mut users = self.users.lock().unwrap_or_else(|p| p.into_inner());
            users.retain(|u| u.username != user.username);
            users.push(user);
        }
        self.write_users()
    }

    /// Registers another client (e.g. a hub whose port is known only now).
    pub async fn add_client(&mut self, client: IdpClient) -> Result<(), IdpError> {
        self.clients.push(client);
        self.write_config()?;
        self.admin("reload").await
    }

    /// A new signing key; the old one leaves the published key set.
    pub async fn rotate_keys(&self) -> Result<(), IdpError> {
        self.admin("rotate").await
    }

    async fn admin(&self, action: &str) -> Result<(), IdpError> {
        let resp = self
            .client()?
            .post(format!("{}/admin/{action}", self.issuer))
            .bearer_auth(&self.admin_token)
            .send()
            .await
            .map_err(|e| IdpError::Http(e.to_string()))?;
        if !resp.status().is_success() {
            return Err(IdpError::Http(format!("/admin/{action}: {}", resp.status())));
        }
        Ok(())
    }

    async fn run_rp(&self, args: &[&str]) -> Result<Tokens, IdpError> {
        let out = Command::new("node")
            .arg(idp_dir().join("login.mjs"))
            .args(args)
            .env("NODE_EXTRA_CA_CERTS", self.ca_file())
            .output()
            .await
            .map_err(io("running node e2e/oidc/login.mjs"))?;
        if !out.status.success() {
            return Err(IdpError::Refused(
                String::from_utf8_lossy(&out.stderr).trim().to_string(),
            ));
        }
        serde_json::from_slice(&out.stdout).map_err(|e| IdpError::Http(format!("the token response: {e}")))
    }

    /// Signs `username` in through the login form (authorization code + PKCE, scopes `openid email
    /// profile groups offline_access`) as client `client_id`, and exchanges the code.
    pub async fn login(&self, client_id: &str, username: &str, password: &str) -> Result<Tokens, IdpError> {
        let client = self
            .clients
            .iter()
            .find(|c| c.client_id == client_id)
            .ok_or_else(|| IdpError::Refused(format!("no client {client_id:?} registered")))?;
        let redirect = client.redirect_uris.first().map(String::as_str).unwrap_or_default();
        self.run_rp(&[&self.issuer, client_id, redirect, username, password])
            .await
    }

    /// Walks a relying party's sign-in as a browser would: GET `start` (which redirects to the
    /// IdP), the IdP's login form with `username`/`password`, and the redirects back, until the
    /// relying party's `callback` path answers; returns that answer's `Location` and the cookies
    /// the relying party set. `Err(Refused)` with the IdP's message when the form refuses the user.
    pub async fn sign_in_via(
        &self,
        start: &str,
        callback: &str,
        username: &str,
        password: &str,
    ) -> Result<SignedIn, IdpError> {
        self.sign_in_via_with(start, callback, username, password, || ()).await
    }

    /// [`Idp::sign_in_via`], calling `before_callback` just before the browser reaches the
    /// relying party's callback (a test lets the sign-in expire there).
    pub async fn sign_in_via_with(
        &self,
        start: &str,
        callback: &str,
        username: &str,
        password: &str,
        before_callback: impl FnOnce(),
    ) -> Result<SignedIn, IdpError> {
        self.sign_in_walk(None, start, callback, username, password, before_callback)
            .await
    }

    /// [`Idp::sign_in_via`] for a relying party whose TLS chains to `rp_ca_pem` rather than to the
    /// IdP's CA (a `faros dev` hub).
    pub async fn sign_in_via_trusting(
        &self,
        rp_ca_pem: &[u8],
        start: &str,
        callback: &str,
        username: &str,
        password: &str,
    ) -> Result<SignedIn, IdpError> {
        self.sign_in_walk(Some(rp_ca_pem), start, callback, username, password, || ())
            .await
    }

    async fn sign_in_walk(
        &self,
        rp_ca_pem: Option<&[u8]>,
        start: &str,
        callback: &str,
        username: &str,
        password: &str,
        before_callback: impl FnOnce(),
    ) -> Result<SignedIn, IdpError> {
        let mut before_callback = Some(before_callback);
        let http = |e: reqwest::Error| IdpError::Http(e.to_string());
        let mut builder =
            crate::https::builder_trusting(self.ca_pem.as_bytes()).map_err(|e| IdpError::Http(e.to_string()))?;
        if let Some(pem) = rp_ca_pem {
            builder = builder.add_root_certificate(
                reqwest::Certificate::from_pem(pem).map_err(|e| IdpError::Http(format!("the RP's CA: {e}")))?,
            );
        }
        let client = builder
            .redirect(reqwest::redirect::Policy::none())
            .timeout(crate::https::TIMEOUT)
            .build()
            .map_err(http)?;
        let start_url = reqwest::Url::parse(start).map_err(|e| IdpError::Http(e.to_string()))?;
        let rp_host = start_url.host_str().unwrap_or_default().to_string();
        let rp_origin = start_url.origin().ascii_serialization();
        let mut jar = Jar::default();
        let mut visited = Vec::new();
        let mut next = start_url;
        let mut form: Option<(String, String)> = None;
        for _ in 0..30 {
            if next.origin().ascii_serialization() == rp_origin
                && next.path() == callback
                && let Some(hook) = before_callback.take()
            {
                hook();
            }
            let req = match form.take() {
                Some((user, pass)) => {
                    let enc = |v: &str| {
                        v.bytes()
                            .map(|b| match b {
                                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                                    (b as char).to_string()
                                }
                                _ => format!("%{b:02X}"),
                            })
                            .collect::<String>()
                    };
                    client
                        .post(next.clone())
                        .header("content-type", "application/x-www-form-urlencoded")
                        .body(format!("username={}&password={}", enc(&user), enc(&pass)))
                }
                None => client.get(next.clone()),
            };
            let sent = jar.header(&next);
            let resp = req.header("cookie", &sent).send().await.map_err(http)?;
            jar.take(&next, &resp);
            if next.origin().ascii_serialization() == rp_origin {
                visited.push(next.to_string());
            }
            let location: Option<String> = resp
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            if next.origin().ascii_serialization() == rp_origin && next.path() == callback {
                return Ok(SignedIn {
                    location: location.unwrap_or_default(),
                    cookies: jar.0.remove(&rp_host).unwrap_or_default(),
                    visited,
                    callback_cookies: sent,
                });
            }
            match location {
                Some(l) => next = next.join(l.as_str()).map_err(|e| IdpError::Http(e.to_string()))?,
                None => {
                    // The IdP's login form: submit it (once), or it refused the user.
                    let status = resp.status();
                    let page = resp.text().await.map_err(http)?;
                    if let Some(error) = page.split("id=\"error\"").nth(1) {
                        let text = error.split('>').nth(1).and_then(|t| t.split('<').next());
                        return Err(IdpError::Refused(format!("{status}: {}", text.unwrap_or_default())));
                    }
                    if !page.contains("name=\"username\"") || next.path().ends_with("/login") {
                        return Err(IdpError::Http(format!("unexpected page at {next}: {status}")));
                    }
                    next = next
                        .join(&format!("{}/login", next.path().trim_end_matches('/')))
                        .map_err(|e| IdpError::Http(e.to_string()))?;
                    form = Some((username.to_string(), password.to_string()));
                }
            }
        }
        Err(IdpError::Http("too many redirects".into()))
    }

    /// Approves a device-flow sign-in (RFC 8628) as its user would in a browser: opens
    /// `verification_url` (the `verification_uri_complete` the device showed), confirms the code,
    /// signs in through the login form, and returns once the IdP says the device is signed in.
    /// `Err(Refused)` with the IdP's message when it refuses the code or the user.
    pub async fn approve_device(&self, verification_url: &str, username: &str, password: &str) -> Result<(), IdpError> {
        let http = |e: reqwest::Error| IdpError::Http(e.to_string());
        let client = crate::https::builder_trusting(self.ca_pem.as_bytes())
            .map_err(|e| IdpError::Http(e.to_string()))?
            .redirect(reqwest::redirect::Policy::none())
            .timeout(crate::https::TIMEOUT)
            .build()
            .map_err(http)?;
        let mut jar = Jar::default();
        let mut next = reqwest::Url::parse(verification_url).map_err(|e| IdpError::Http(e.to_string()))?;
        let mut form: Option<Vec<(String, String)>> = None;
        for _ in 0..30 {
            let req = match form.take() {
                Some(fields) => client
                    .post(next.clone())
                    .header("content-type", "application/x-www-form-urlencoded")
                    .body(form_encode(&fields)),
                None => client.get(next.clone()),
            };
            let sent = jar.header(&next);
            let resp = req.header("cookie", &sent).send().await.map_err(http)?;
            jar.take(&next, &resp);
            if let Some(l) = resp
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|v| v.to_str().ok())
            {
                next = next.join(l).map_err(|e| IdpError::Http(e.to_string()))?;
                continue;
            }
            let status = resp.status();
            let page = resp.text().await.map_err(http)?;
            if page.contains("id=\"device-approved\"") {
                return Ok(());
            }
            if let Some(error) = page.split("id=\"error\"").nth(1) {
                let text = error.split('>').nth(1).and_then(|t| t.split('<').next());
                return Err(IdpError::Refused(format!("{status}: {}", text.unwrap_or_default())));
            }
            // oidc-provider's device pages: the code (filled in from the URL), its confirmation,
            // and auto-submitting forms between them; each posted with its fields to its action,
            // as a browser would submit it.
            if !page.contains("name=\"username\"")
                && let Some((action, fields)) = first_form(&page)
            {
                next = next.join(&action).map_err(|e| IdpError::Http(e.to_string()))?;
                form = Some(fields);
                continue;
            }
            if page.contains("name=\"username\"") && !next.path().ends_with("/login") {
                next = next
                    .join(&format!("{}/login", next.path().trim_end_matches('/')))
                    .map_err(|e| IdpError::Http(e.to_string()))?;
                form = Some(vec![
                    ("username".to_string(), username.to_string()),
                    ("password".to_string(), password.to_string()),
                ]);
                continue;
            }
            let start: String = page.chars().take(600).collect();
            return Err(IdpError::Http(format!("unexpected page at {next}: {status}: {start}")));
        }
        Err(IdpError::Http("too many redirects".into()))
    }

    /// The refresh-token grant.
    pub async fn refresh(&self, client_id: &str, refresh_token: &str) -> Result<Tokens, IdpError> {
        self.run_rp(&["--refresh", &self.issuer, client_id, refresh_token])
            .await
    }

    /// Stops the IdP now (dropping it does too).
    pub async fn stop(mut self) {
        if let Some(child) = self.child.as_mut() {
            let _ = child.kill().await;
        }
    }
}

fn form_encode(fields: &[(String, String)]) -> String {
    let enc = |v: &str| {
        v.bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
                _ => format!("%{b:02X}"),
            })
            .collect::<String>()
    };
    fields
        .iter()
        .map(|(k, v)| format!("{}={}", enc(k), enc(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// The value of attribute `attr` in `tag` (`<input name="x" value="…"`), with the HTML entities
/// oidc-provider escapes decoded.
fn attribute(tag: &str, attr: &str) -> Option<String> {
    let value = tag
        .split(&format!(" {attr}=\""))
        .nth(1)
        .or_else(|| tag.split(&format!("\n{attr}=\"")).nth(1))?
        .split('"')
        .next()?;
    Some(
        value
            .replace("&quot;", "\"")
            .replace("&#39;", "'")
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&amp;", "&"),
    )
}

/// The first form of `page`: its action and the named inputs' values (what submitting it sends).
fn first_form(page: &str) -> Option<(String, Vec<(String, String)>)> {
    let at = page.find("<form")?;
    let body = &page[at..at + page[at..].find("</form>")?];
    let form_tag = &body[..body.find('>')?];
    let action = attribute(form_tag, "action")?;
    let fields = body
        .split("<input")
        .skip(1)
        .filter_map(|rest| {
            let tag = format!(" {}", &rest[..rest.find('>')?]);
            Some((attribute(&tag, "name")?, attribute(&tag, "value")?))
        })
        .collect();
    Some((action, fields))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod device_tests {
    use super::*;

    #[test]
    fn device_pages() {
        let page = r#"<p>x</p><form id="op.deviceConfirmForm" method="post" action="/device">
<input type="hidden" name="xsrf" value="a&amp;b"/>
<input
    value="ABCD-EFGH" type="text" name="user_code" autofocus></input>
<input type="hidden" name="confirm" value="yes"/>
</form><form action="/other"></form>"#;
        let fields = |v: &[(&str, &str)]| {
            v.iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            first_form(page),
            Some((
                "/device".to_string(),
                fields(&[("xsrf", "a&b"), ("user_code", "ABCD-EFGH"), ("confirm", "yes")])
            ))
        );
        assert_eq!(first_form("<p>no form</p>"), None);
        let prompt = "To sign in to https://idp, open https://idp/device and enter the code AB\n  (or open https://idp/device?user_code=AB)\nWaiting";
        assert_eq!(
            device_url_in(prompt).as_deref(),
            Some("https://idp/device?user_code=AB")
        );
        assert_eq!(device_url_in("nothing here"), None);
        assert_eq!(form_encode(&[("a b".into(), "c&d".into())]), "a%20b=c%26d");
    }
}
