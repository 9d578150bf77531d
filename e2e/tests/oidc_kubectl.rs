//! kubectl through the `faros credential oidc` exec plugin, against a platform whose kcp and hub
//! trust an OIDC issuer: `cargo xtask e2e --target kcp` starts the test IdP (`e2e/oidc/idp.mjs`)
//! before real kcp and hands its address here in `FAROS_E2E_OIDC_*`. A pool user makes an
//! organization and workspace, enables quickstart, grants the IdP group the workspace and creates a
//! Greeting; the IdP user fetches the hub's kubeconfig for the workspace (an exec stanza) and the
//! installed kubectl lists the Greeting: the first call signs in with the device flow (approved as
//! the user would in a browser), the next uses the cache, and once the short ID token nears expiry
//! a call renews it with the refresh token, neither with a sign-in.
//!
//! Without `FAROS_E2E_OIDC_ISSUER` (the in-process target, whose stack has no issuer) it says so
//! and passes: `crates/faros/tests/kubectl_oidc.rs` runs the same walk against `faros dev`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use faros_e2e::{Platform, WAIT, eventually, kubectl};
use faros_test_support::oidc::{Idp, IdpClient, device_url_in};
use reqwest::Method;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};

/// The issuer kcp and the hub trust.
pub const ENV_ISSUER: &str = "FAROS_E2E_OIDC_ISSUER";
/// PEM CA of the issuer's TLS.
pub const ENV_CA: &str = "FAROS_E2E_OIDC_CA";
/// The client kcp and the hub accept tokens for, which the CLI signs in as (device flow).
pub const ENV_CLIENT: &str = "FAROS_E2E_OIDC_CLIENT";
/// `user:password:group` of an IdP user (the username claim is `email`, `<user>@example.com`).
pub const ENV_USER: &str = "FAROS_E2E_OIDC_USER";
/// The ID tokens' lifetime in seconds, for the refresh step.
pub const ENV_ID_TOKEN_TTL: &str = "FAROS_E2E_OIDC_ID_TOKEN_TTL";
/// The directory holding the `faros` binary (the exec plugin).
pub const ENV_FAROS_BIN: &str = "FAROS_E2E_FAROS_BIN";

const GREETING: &str = "apiVersion: quickstart.providers.faros.sh/v1alpha1\nkind: Greeting\nmetadata:\n  name: hi\n  namespace: default\nspec:\n  name: Ada\n";
const LISTED: &str = "greeting.quickstart.providers.faros.sh/hi";

struct Exec {
    kubeconfig: PathBuf,
    cache: PathBuf,
    bin_dir: PathBuf,
    refresh_before: u64,
}

impl Exec {
    fn command(&self, args: &[&str]) -> tokio::process::Command {
        let path = std::env::join_paths(
            std::iter::once(self.bin_dir.clone())
                .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())),
        )
        .unwrap();
        let mut c = tokio::process::Command::new("kubectl");
        c.arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--cache-dir")
            .arg(self.cache.join("kubectl"))
            .args(args)
            .env("PATH", path)
            .env("FAROS_CREDENTIAL_CACHE_DIR", self.cache.join("oidc"))
            .env("FAROS_CREDENTIAL_REFRESH_BEFORE", self.refresh_before.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        c
    }

    /// kubectl that must be served from the cache or a refresh: a sign-in prompt fails.
    async fn without_sign_in(&self, args: &[&str]) -> String {
        let mut child = self.command(args).spawn().unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
        let mut stdout = child.stdout.take().unwrap();
        let mut err = String::new();
        while let Some(line) = stderr.next_line().await.unwrap() {
            assert!(
                !line.contains("To sign in"),
                "kubectl {args:?} asked for a sign-in: {line}"
            );
            err.push_str(&line);
        }
        let mut out = String::new();
        stdout.read_to_string(&mut out).await.unwrap();
        assert!(child.wait().await.unwrap().success(), "kubectl {args:?}: {err}");
        out
    }

    fn cached_id_token(&self) -> String {
        let files: Vec<_> = std::fs::read_dir(self.cache.join("oidc"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(files.len(), 1, "{files:?}");
        let entry: Value = serde_json::from_str(&std::fs::read_to_string(&files[0]).unwrap()).unwrap();
        entry["idToken"].as_str().unwrap().to_string()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_lists_greetings_through_the_oidc_exec_plugin() {
    let Ok(issuer) = std::env::var(ENV_ISSUER) else {
        eprintln!("{ENV_ISSUER} is unset (no OIDC issuer on this target): nothing to run here");
        return;
    };
    let need = |k: &str| std::env::var(k).unwrap_or_else(|_| panic!("{ENV_ISSUER} is set but {k} is not"));
    let client_id = need(ENV_CLIENT);
    let user = need(ENV_USER);
    let mut parts = user.splitn(3, ':');
    let (username, password, group) = (
        parts.next().unwrap().to_string(),
        parts.next().expect("user:password:group").to_string(),
        parts.next().expect("user:password:group").to_string(),
    );
    let ttl: u64 = need(ENV_ID_TOKEN_TTL).parse().unwrap();
    let idp = Idp::attach(
        &issuer,
        std::fs::read_to_string(need(ENV_CA)).unwrap(),
        vec![IdpClient {
            redirect_uris: vec!["http://127.0.0.1:1/callback".into()],
            ..IdpClient::device(&client_id)
        }],
    )
    .unwrap();

    let p = Platform::start().await.expect("starting the platform");
    p.provider_ready("quickstart").await.unwrap();
    let owner = p.add_user("oidc-owner").await.unwrap();
    let org = p.unique("oidc");
    let r = p
        .call(Method::POST, "/api/orgs", Some(&owner), Some(json!({"name": org})))
        .await
        .unwrap();
    assert_eq!(r.status, 201, "{}", r.text);
    let r = p
        .call(
            Method::POST,
            &format!("/api/orgs/{org}/workspaces"),
            Some(&owner),
            Some(json!({"name": "dev"})),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 201, "{}", r.text);
    let ws = format!("/api/orgs/{org}/workspaces/dev");
    let r = p
        .call(
            Method::POST,
            &format!("{ws}/providers/quickstart/enable"),
            Some(&owner),
            Some(json!({"acceptedClaims": [{"group": "", "resource": "configmaps"}]})),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 200, "{}", r.text);
    let r = p
        .call(
            Method::PUT,
            &format!("{ws}/groups/{group}"),
            Some(&owner),
            Some(json!({"role": "member"})),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 200, "{}", r.text);
    let owner_kubeconfig = p.tenant_kubeconfig(&org, "dev", &owner).await.unwrap();
    eventually("the owner creating a Greeting", WAIT, || async {
        let out = kubectl(&owner_kubeconfig, &["apply", "-f", "-"], Some(GREETING)).await?;
        Ok(out.status.success().then_some(()))
    })
    .await
    .unwrap();

    // The IdP user's kubeconfig from the hub: an exec stanza.
    let tokens = idp.login(&client_id, &username, &password).await.unwrap();
    let r = p
        .call(Method::GET, &format!("{ws}/kubeconfig"), Some(&tokens.id_token), None)
        .await
        .unwrap();
    assert_eq!(r.status, 200, "{}", r.text);
    let doc: Value = serde_saphyr::from_str(&r.text).unwrap();
    assert_eq!(doc["users"][0]["user"]["exec"]["command"], "faros", "{}", r.text);
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("oidc.kubeconfig");
    std::fs::write(&kubeconfig, &r.text).unwrap();
    let exec = Exec {
        kubeconfig,
        cache: dir.path().join("cache"),
        bin_dir: Path::new(&need(ENV_FAROS_BIN)).to_path_buf(),
        refresh_before: ttl / 2,
    };

    // 1. The device flow, approved as the user would in a browser.
    let mut first = exec.command(&["get", "greetings", "-o", "name"]).spawn().unwrap();
    let mut stderr = BufReader::new(first.stderr.take().unwrap()).lines();
    let url = loop {
        let line = tokio::time::timeout(Duration::from_secs(60), stderr.next_line())
            .await
            .expect("the plugin's sign-in prompt")
            .unwrap()
            .expect("kubectl ended without a sign-in prompt");
        if let Some(url) = device_url_in(&line) {
            break url;
        }
    };
    idp.approve_device(&url, &username, &password).await.unwrap();
    let mut rest = String::new();
    while let Some(line) = stderr.next_line().await.unwrap() {
        rest.push_str(&line);
    }
    let out = first.wait_with_output().await.unwrap();
    assert!(out.status.success(), "{rest}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), LISTED, "{rest}");
    let first_token = exec.cached_id_token();

    // 2. From the cache.
    assert_eq!(
        exec.without_sign_in(&["get", "greetings", "-o", "name"]).await.trim(),
        LISTED
    );
    assert_eq!(exec.cached_id_token(), first_token);

    // 3. Renewed with the refresh token near expiry.
    eventually(
        "the ID token renewed by a refresh",
        Duration::from_secs(3 * ttl),
        || async {
            assert_eq!(
                exec.without_sign_in(&["get", "greetings", "-o", "name"]).await.trim(),
                LISTED
            );
            Ok((exec.cached_id_token() != first_token).then_some(()))
        },
    )
    .await
    .unwrap();
    p.stop().await;
}
