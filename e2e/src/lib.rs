//! The e2e harness: the clients a tenant and a platform admin use — the hub's REST API over HTTPS,
//! `kubectl` with the kubeconfigs the hub hands out or the kcp admin kubeconfig, kube-rs — pointed at
//! a [`Platform`], which is either `faros dev`'s stack started in this process or an installed
//! platform known only by its kcp admin kubeconfig, hub URL, CA and a way to get user tokens
//! ([`target`]).
//!
//! Scenarios live in `tests/scenarios/` and take a `&Platform`; they use nothing but what a real
//! user of an installed platform has (no in-process handles, no shared memory, no injected clock),
//! and name everything they create with [`Platform::unique`] so they can rerun against the same
//! platform. They wait on conditions with deadlines ([`eventually`](mod@eventually), from `faros-test-support`),
//! never on fixed sleeps.

pub mod devproc;
pub mod mcp_sdk;
pub mod replicas;
pub mod target;
mod users;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use anyhow::{Context, bail};
use base64::Engine;
use faros::cli::DevArgs;
use faros::dev::Stack;
use faros_test_support::https::client_trusting;
use faros_test_support::kubeconfig::config_from_file;
use faros_test_support::users::run_id;
use serde_json::Value;

pub use faros_test_support::eventually;
pub use faros_test_support::users::User;
pub use target::{External, Target, UserSource};
use users::Users;

/// Default deadline for platform-level conditions (provisioning, binding, reconciling).
pub const WAIT: Duration = Duration::from_secs(60);

/// The platform the scenarios act on.
pub struct Platform {
    pub http: reqwest::Client,
    hub_url: String,
    /// The CA bundle of the hub's certificate, as a file (for clients that read one).
    hub_ca: PathBuf,
    admin: kube::Config,
    admin_kubeconfig: PathBuf,
    /// The GitOps registrar kubeconfig of an external platform, when known.
    registrar_kubeconfig: Option<PathBuf>,
    users: Users,
    /// Reads the catalog (any authenticated user may).
    observer: User,
    run: String,
    names: AtomicU32,
    destructive: bool,
    dir: tempfile::TempDir,
    /// Only for the in-process target: stopped by [`Platform::stop`].
    stack: Option<Stack>,
}

/// A response: status code and body (JSON when it parses, else a string).
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub body: Value,
    pub text: String,
}

fn init_process() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,rustls=error")),
        )
        .with_test_writer()
        .try_init();
    faros_core::telemetry::install_crypto_provider();
}

impl Platform {
    /// The platform `FAROS_E2E_*` describes: by default the whole stack with quickstart started
    /// in-process on ephemeral ports.
    pub async fn start() -> anyhow::Result<Self> {
        match Target::from_env()? {
            Target::InProcess => Self::in_process().await,
            Target::External(external) => Self::external(&external).await,
        }
    }

    /// Starts the whole stack with quickstart in this process on ephemeral ports.
    pub async fn in_process() -> anyhow::Result<Self> {
        init_process();
        let dir = tempfile::tempdir()?;
        let stack = Stack::start(DevArgs::ephemeral(dir.path().join("state"))).await?;
        let admin_kubeconfig = stack.state_dir.join("admin.kubeconfig");
        let hub_ca = dir.path().join("hub-ca.crt");
        std::fs::write(&hub_ca, &stack.ca_pem).with_context(|| format!("writing {}", hub_ca.display()))?;
        let observer = User {
            name: stack.dev_user.name.clone(),
            token: stack.dev_user.token.clone(),
        };
        Ok(Self {
            http: client_trusting(stack.ca_pem.as_bytes())?,
            hub_url: stack.hub_url.clone(),
            hub_ca,
            admin: stack.admin.clone(),
            admin_kubeconfig,
            registrar_kubeconfig: None,
            users: Users::append(stack.token_file.clone()),
            observer,
            run: run_id(),
            names: AtomicU32::new(0),
            destructive: true,
            dir,
            stack: Some(stack),
        })
    }

    /// An installed platform.
    pub async fn external(target: &External) -> anyhow::Result<Self> {
        init_process();
        let dir = tempfile::tempdir()?;
        let ca = std::fs::read(&target.ca).with_context(|| format!("reading the hub CA {}", target.ca.display()))?;
        let admin = config_from_file(&target.kubeconfig)
            .await
            .context("the kcp admin kubeconfig")?;
        let users = match &target.users {
            UserSource::TokenFile(file) => Users::append(file.clone()),
            UserSource::Pool(file) => Users::pool(file)?,
        };
        let mut platform = Self {
            http: client_trusting(&ca)?,
            hub_url: target.hub_url.clone(),
            hub_ca: target.ca.clone(),
            admin,
            admin_kubeconfig: target.kubeconfig.clone(),
            registrar_kubeconfig: target.registrar_kubeconfig.clone(),
            users,
            observer: User {
                name: String::new(),
                token: String::new(),
            },
            run: run_id(),
            names: AtomicU32::new(0),
            destructive: target.destructive,
            dir,
            stack: None,
        };
        platform.observer = platform.add_user("observer").await?;
        Ok(platform)
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The CA bundle of the hub's certificate, as a file.
    pub fn hub_ca(&self) -> &Path {
        &self.hub_ca
    }

    /// The hub's base URL.
    pub fn hub_url(&self) -> &str {
        &self.hub_url
    }

    pub fn hub(&self, path: &str) -> String {
        format!("{}{path}", self.hub_url)
    }

    /// Platform-admin access to kcp (what the admin kubeconfig grants).
    pub fn admin(&self) -> kube::Config {
        self.admin.clone()
    }

    /// The kcp server root (no `/clusters/...`), as the admin kubeconfig names it.
    pub fn kcp_url(&self) -> String {
        faros_core::client::server_root(&self.admin.cluster_url.to_string())
    }

    /// Whether scenarios may change what other users of this platform see (always true in-process).
    pub fn destructive(&self) -> bool {
        self.destructive
    }

    /// Whether users are created for this run, so they own nothing yet (false for a pre-provisioned
    /// pool, whose users may keep what an earlier, failed run left behind).
    pub fn fresh_users(&self) -> bool {
        self.users.fresh()
    }

    /// `<base>-<run id><n>`: a name nothing on the platform has, a DNS label when `base` is one.
    pub fn unique(&self, base: &str) -> String {
        let n = self.names.fetch_add(1, Ordering::Relaxed);
        format!("{base}-{}{n}", self.run)
    }

    /// A new user (appended to the platform's token file, or the next pre-provisioned one), once the
    /// hub and kcp accept its token.
    pub async fn add_user(&self, base: &str) -> anyhow::Result<User> {
        let user = self.users.take(&self.unique(base))?;
        // Both reload the token file on their own schedule: wait for the hub and for kcp (through the
        // hub's pass-through, which forwards the bearer untouched). kcp may forbid a new user its root
        // (403): that still means the token authenticated.
        eventually(
            &format!("the hub and kcp to accept {}'s token", user.name),
            WAIT,
            || async {
                let hub = self.call(reqwest::Method::GET, "/api/me", Some(&user), None).await?;
                let kcp = self
                    .call(reqwest::Method::GET, "/clusters/root/api", Some(&user), None)
                    .await?;
                Ok((hub.status == 200 && matches!(kcp.status, 200 | 403)).then_some(()))
            },
        )
        .await?;
        Ok(user)
    }

    /// One hub API call.
    pub async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> anyhow::Result<Reply> {
        self.call_with(method, path, token, body, &[]).await
    }

    /// Organization `org` and its workspace `ws`, created through the REST API by `token`'s user
    /// (who becomes their admin); each must answer 201. Returns the workspace's answer.
    pub async fn org_with_workspace(&self, token: &str, org: &str, ws: &str) -> anyhow::Result<Reply> {
        let created = self
            .call(
                reqwest::Method::POST,
                "/api/orgs",
                Some(token),
                Some(serde_json::json!({"name": org})),
            )
            .await?;
        if created.status != 201 {
            bail!("creating organization {org}: {} {}", created.status, created.text);
        }
        let path = format!("/api/orgs/{org}/workspaces");
        let created = self
            .call(
                reqwest::Method::POST,
                &path,
                Some(token),
                Some(serde_json::json!({"name": ws})),
            )
            .await?;
        if created.status != 201 {
            bail!("creating workspace {org}/{ws}: {} {}", created.status, created.text);
        }
        Ok(created)
    }

    /// Enables `provider` in `org`/`ws` as `token`'s user, accepting `accepted_claims` (a JSON list
    /// of `{"group","resource"}`); the hub's answer, for the caller to judge.
    pub async fn enable(
        &self,
        token: &str,
        org: &str,
        ws: &str,
        provider: &str,
        accepted_claims: Value,
    ) -> anyhow::Result<Reply> {
        let path = format!("/api/orgs/{org}/workspaces/{ws}/providers/{provider}/enable");
        let body = serde_json::json!({ "acceptedClaims": accepted_claims });
        self.call(reqwest::Method::POST, &path, Some(token), Some(body)).await
    }

    /// One hub API call with extra headers.
    pub async fn call_with(
        &self,
        method: reqwest::Method,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
        headers: &[(&str, &str)],
    ) -> anyhow::Result<Reply> {
        let mut req = self.http.request(method, self.hub(path));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.with_context(|| format!("calling {path}"))?;
        let status = resp.status().as_u16();
        let text = resp.text().await?;
        let body = serde_json::from_str(&text).unwrap_or(Value::String(text.clone()));
        Ok(Reply { status, body, text })
    }

    /// Waits until provider `name` is Ready in the catalog.
    pub async fn provider_ready(&self, name: &str) -> anyhow::Result<()> {
        eventually(&format!("provider {name} to be Ready"), WAIT, || async {
            let r = self
                .call(reqwest::Method::GET, "/api/providers", Some(&self.observer), None)
                .await?;
            let ready = r.body["items"]
                .as_array()
                .is_some_and(|items| items.iter().any(|i| i["name"] == name && i["ready"] == true));
            Ok(ready.then_some(()))
        })
        .await?;
        Ok(())
    }

    /// Writes the workspace kubeconfig the hub hands `token`'s user (with that token) to a file.
    pub async fn tenant_kubeconfig(&self, org: &str, ws: &str, token: &str) -> anyhow::Result<PathBuf> {
        let r = self
            .call(
                reqwest::Method::GET,
                &format!("/api/orgs/{org}/workspaces/{ws}/kubeconfig?includeToken=true"),
                Some(token),
                None,
            )
            .await?;
        if r.status != 200 {
            bail!("kubeconfig: {} {}", r.status, r.text);
        }
        let path = self.dir().join(format!(
            "{org}-{ws}-{}.kubeconfig",
            self.names.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::write(&path, r.text)?;
        Ok(path)
    }

    /// Creates ServiceAccount `default/<name>` in the workspace `kubeconfig` reaches, with a
    /// long-lived token Secret, and returns the token once kcp's token controller filled it in.
    pub async fn service_account_token(&self, kubeconfig: &Path, name: &str) -> anyhow::Result<String> {
        let manifest = format!(
            "apiVersion: v1\nkind: ServiceAccount\nmetadata: {{name: {name}, namespace: default}}\n---\n\
             apiVersion: v1\nkind: Secret\ntype: kubernetes.io/service-account-token\n\
             metadata:\n  name: {name}-token\n  namespace: default\n  \
             annotations: {{kubernetes.io/service-account.name: {name}}}\n"
        );
        let applied = kubectl(kubeconfig, &["apply", "-f", "-"], Some(&manifest)).await?;
        if !applied.status.success() {
            bail!(
                "creating ServiceAccount {name}: {}",
                String::from_utf8_lossy(&applied.stderr)
            );
        }
        let secret = format!("{name}-token");
        let encoded = eventually(&format!("the token of ServiceAccount {name}"), WAIT, || async {
            let out = kubectl(
                kubeconfig,
                &[
                    "get",
                    "secret",
                    "-n",
                    "default",
                    &secret,
                    "-o",
                    "jsonpath={.data.token}",
                ],
                None,
            )
            .await?;
            let token = String::from_utf8_lossy(&out.stdout).trim().to_string();
            Ok((out.status.success() && !token.is_empty()).then_some(token))
        })
        .await?;
        let token = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .context("decoding the ServiceAccount token")?;
        Ok(String::from_utf8(token)?)
    }

    /// The bearer token of the kubeconfig the reconciler minted for provider `name` (its
    /// ServiceAccount `default/provider`), read as the platform admin.
    pub async fn provider_token(&self, name: &str) -> anyhow::Result<String> {
        let kubeconfig = self.admin_kubeconfig_for(faros_core::names::SYSTEM_PROVIDERS_PATH)?;
        let out = kubectl(
            &kubeconfig,
            &[
                "get",
                "secret",
                "-n",
                "default",
                &faros_core::names::kubeconfig_secret_name(name, None),
                "-o",
                "jsonpath={.data.kubeconfig}",
            ],
            None,
        )
        .await?;
        if !out.status.success() {
            bail!(
                "reading provider {name}'s kubeconfig: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let yaml = base64::engine::general_purpose::STANDARD.decode(String::from_utf8_lossy(&out.stdout).trim())?;
        let doc: Value = serde_saphyr::from_str(std::str::from_utf8(&yaml)?)?;
        doc["users"][0]["user"]["token"]
            .as_str()
            .map(str::to_string)
            .with_context(|| format!("provider {name}'s kubeconfig has no token"))
    }

    /// The admin kubeconfig with every cluster's server set to kcp workspace `path` (for kubectl,
    /// which has no notion of kcp workspaces); TLS settings such as the server name stay.
    pub fn admin_kubeconfig_for(&self, path: &str) -> anyhow::Result<PathBuf> {
        let text = std::fs::read_to_string(&self.admin_kubeconfig)
            .with_context(|| format!("reading {}", self.admin_kubeconfig.display()))?;
        let mut kubeconfig: Value =
            serde_saphyr::from_str(&text).with_context(|| format!("parsing {}", self.admin_kubeconfig.display()))?;
        for cluster in kubeconfig["clusters"].as_array_mut().into_iter().flatten() {
            let server = cluster["cluster"]["server"].as_str().unwrap_or_default();
            let root = faros_core::client::server_root(server);
            cluster["cluster"]["server"] = Value::String(format!("{root}/clusters/{path}"));
        }
        let file = self.dir().join(format!("admin-{}.kubeconfig", path.replace(':', "_")));
        // JSON is YAML: kubectl reads it as a kubeconfig.
        std::fs::write(&file, serde_json::to_vec(&kubeconfig)?)?;
        Ok(file)
    }

    /// The kubeconfig a GitOps tool registers Providers with: the platform's registrar kubeconfig
    /// (Providers in `root:faros:system:providers` only) in-process (once the reconciler has
    /// published it) and when the external target names one; else the admin kubeconfig pointed at
    /// that workspace.
    pub async fn gitops_kubeconfig(&self) -> anyhow::Result<PathBuf> {
        if let Some(stack) = &self.stack {
            return faros::dev::registrar::write_kubeconfig(&stack.admin, &stack.hub_url, &stack.state_dir, WAIT).await;
        }
        match &self.registrar_kubeconfig {
            Some(path) => Ok(path.clone()),
            None => self.admin_kubeconfig_for(faros_core::names::SYSTEM_PROVIDERS_PATH),
        }
    }

    /// Deletes organization `org` as `admin` and waits until the hub no longer serves it.
    pub async fn delete_org(&self, org: &str, admin: &str) -> anyhow::Result<()> {
        let path = format!("/api/orgs/{org}");
        let r = self.call(reqwest::Method::DELETE, &path, Some(admin), None).await?;
        if !matches!(r.status, 200 | 202 | 204 | 404) {
            bail!("deleting organization {org}: {} {}", r.status, r.text);
        }
        eventually(&format!("organization {org} to be gone"), WAIT, || async {
            let r = self.call(reqwest::Method::GET, &path, Some(admin), None).await?;
            Ok((r.status != 200).then_some(()))
        })
        .await?;
        Ok(())
    }

    pub async fn stop(self) {
        if let Some(stack) = self.stack {
            stack.stop().await;
        }
    }
}

/// Runs `kubectl --kubeconfig <kubeconfig> <args>` with `stdin`, off the async runtime.
pub async fn kubectl(kubeconfig: &Path, args: &[&str], stdin: Option<&str>) -> anyhow::Result<Output> {
    let mut all = vec![
        "--kubeconfig",
        kubeconfig.to_str().context("a kubeconfig path that is not UTF-8")?,
    ];
    all.extend_from_slice(args);
    tool("kubectl", &all, stdin, "kubectl on PATH").await
}

/// Runs `program <args>` with `stdin`, off the async runtime; `install` says how to get it when it
/// is missing.
pub async fn tool(program: &str, args: &[&str], stdin: Option<&str>, install: &str) -> anyhow::Result<Output> {
    let program = program.to_string();
    let install = install.to_string();
    let args: Vec<String> = args.iter().map(|s| (*s).to_string()).collect();
    let stdin = stdin.map(str::to_string);
    tokio::task::spawn_blocking(move || {
        let mut child = Command::new(&program)
            .args(&args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("running {program} (is it installed? {install})"))?;
        if let Some(input) = stdin {
            use std::io::Write;
            if let Some(mut s) = child.stdin.take() {
                s.write_all(input.as_bytes())?;
            }
        } else {
            drop(child.stdin.take());
        }
        Ok(child.wait_with_output()?)
    })
    .await?
}
