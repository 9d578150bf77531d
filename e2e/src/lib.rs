//! The e2e harness: the real platform (`faros dev`'s [`Stack`]) started in-process on free ports,
//! plus the clients a tenant uses: the hub's REST API over HTTPS, `kubectl` with a kubeconfig the
//! hub hands out, and a way to add users by editing the shared token file.
//!
//! Scenarios live in `tests/`. They wait on conditions with deadlines ([`eventually`]), never on
//! fixed sleeps.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use anyhow::{Context, bail};
use faros::cli::DevArgs;
use faros::dev::Stack;
use serde_json::Value;

/// Default deadline for platform-level conditions (provisioning, binding, reconciling).
pub const WAIT: Duration = Duration::from_secs(60);

/// A running platform in a temporary directory.
pub struct Platform {
    pub stack: Stack,
    pub http: reqwest::Client,
    dir: tempfile::TempDir,
}

/// A response: status code and body (JSON when it parses, else a string).
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub body: Value,
    pub text: String,
}

impl Platform {
    /// Starts the whole stack with quickstart on ephemeral ports.
    pub async fn start() -> anyhow::Result<Self> {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(
                tracing_subscriber::EnvFilter::try_from_default_env()
                    .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,rustls=error")),
            )
            .with_test_writer()
            .try_init();
        faros_core::telemetry::install_crypto_provider();
        let dir = tempfile::tempdir()?;
        let stack = Stack::start(DevArgs::ephemeral(dir.path().join("state"))).await?;
        let http = reqwest::Client::builder()
            .add_root_certificate(reqwest::Certificate::from_pem(stack.ca_pem.as_bytes())?)
            .timeout(Duration::from_secs(30))
            .build()?;
        Ok(Self { stack, http, dir })
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    pub fn hub(&self, path: &str) -> String {
        format!("{}{path}", self.stack.hub_url)
    }

    /// The dev user's token.
    pub fn dev_token(&self) -> &str {
        &self.stack.dev_user.token
    }

    /// Adds a static-token user by appending to the shared token file (as a person would), and
    /// waits until the hub accepts the token.
    pub async fn add_user(&self, user: &str) -> anyhow::Result<String> {
        use std::io::Write;
        let token = format!("{user}-{}", faros_embedded_kcp_token());
        let mut f = std::fs::OpenOptions::new().append(true).open(&self.stack.token_file)?;
        writeln!(f, "{token},{user},{user}")?;
        drop(f);
        let t = token.clone();
        // Both reload the file on their own schedule: wait for the hub and for kcp (through the
        // hub's pass-through, which forwards the bearer untouched).
        eventually(&format!("the hub and kcp to accept {user}'s token"), WAIT, || async {
            let hub = self.call(reqwest::Method::GET, "/api/me", Some(&t), None).await?;
            let kcp = self
                .call(reqwest::Method::GET, "/clusters/root/api", Some(&t), None)
                .await?;
            Ok((hub.status == 200 && kcp.status == 200).then_some(()))
        })
        .await?;
        Ok(token)
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
        let token = self.dev_token().to_string();
        eventually(&format!("provider {name} to be Ready"), WAIT, || async {
            let r = self
                .call(reqwest::Method::GET, "/api/providers", Some(&token), None)
                .await?;
            let ready = r.body["items"]
                .as_array()
                .is_some_and(|items| items.iter().any(|i| i["name"] == name && i["ready"] == true));
            Ok(ready.then_some(()))
        })
        .await
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
        let path = self
            .dir()
            .join(format!("{org}-{ws}-{}.kubeconfig", &token[..token.len().min(8)]));
        std::fs::write(&path, r.text)?;
        Ok(path)
    }

    pub async fn stop(self) {
        self.stack.stop().await;
    }
}

fn faros_embedded_kcp_token() -> String {
    // Unique enough per user within one test; the token file rejects duplicates.
    format!(
        "{:x}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    )
}

/// Runs `kubectl --kubeconfig <kubeconfig> <args>` with `stdin`, off the async runtime.
pub async fn kubectl(kubeconfig: &Path, args: &[&str], stdin: Option<&str>) -> anyhow::Result<Output> {
    let kubeconfig = kubeconfig.to_path_buf();
    let args: Vec<String> = args.iter().map(|s| (*s).to_string()).collect();
    let stdin = stdin.map(str::to_string);
    tokio::task::spawn_blocking(move || {
        let mut child = Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(&args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .context("running kubectl (is it installed?)")?;
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

/// Polls `check` until it yields `Some`, failing after `deadline` with what was awaited. The
/// interval backs off from 50 ms to 500 ms: conditions here are observed through HTTP or kubectl,
/// which have no watch to wait on.
pub async fn eventually<T, F, Fut>(what: &str, deadline: Duration, mut check: F) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = anyhow::Result<Option<T>>>,
{
    let start = tokio::time::Instant::now();
    let mut delay = Duration::from_millis(50);
    let mut last_err = None;
    loop {
        match check().await {
            Ok(Some(v)) => return Ok(v),
            Ok(None) => {}
            Err(e) => last_err = Some(e),
        }
        if start.elapsed() > deadline {
            match last_err {
                Some(e) => bail!("timed out after {deadline:?} waiting for {what}; last error: {e:#}"),
                None => bail!("timed out after {deadline:?} waiting for {what}"),
            }
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(Duration::from_millis(500));
    }
}
