//! kubectl with the kubeconfig the hub gives an OIDC user: `faros dev --oidc-…` as a child process
//! with the test IdP (`e2e/oidc`, panva's oidc-provider) as issuer, and the installed kubectl
//! running `faros credential oidc` as its exec credential plugin. The first `kubectl get
//! greetings` signs the user in with the device flow (the test approves the code as the user
//! would in a browser: the IdP's confirmation page and login form); the next uses the cached ID
//! token without a sign-in; once the short-lived ID token nears its expiry, a call renews it with
//! the refresh token, again without a sign-in. The kubeconfig is the same whether alice asks with
//! her ID token or from a portal session she signed in to with the IdP, and never holds a token; a
//! static-token user's still holds theirs.
//!
//! Needs kubectl and `npm ci --prefix e2e/oidc` (what `.ci/run` does).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod devproc;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use faros_test_support::eventually;
use faros_test_support::oidc::{Idp, IdpClient, IdpUser, Ttls, device_url_in};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};

/// Seconds an ID token lives; the plugin renews it [`REFRESH_BEFORE`] seconds before that.
const ID_TOKEN_TTL: u64 = 20;
const REFRESH_BEFORE: u64 = 10;
/// The client kcp and the hub accept tokens for, and the one the CLI signs in as.
const CLIENT: &str = "faros";
const GREETING: &str = "apiVersion: quickstart.providers.faros.sh/v1alpha1
kind: Greeting
metadata: {name: hi, namespace: default}
spec: {name: Ada}
";

/// kubectl with the exec plugin: `faros` (this test's build) first on PATH, the plugin's cache
/// in `cache`.
fn kubectl(kubeconfig: &Path, cache: &Path, args: &[&str]) -> tokio::process::Command {
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_faros")).parent().unwrap().to_path_buf();
    let path = std::env::join_paths(
        std::iter::once(bin_dir).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())),
    )
    .unwrap();
    let mut c = tokio::process::Command::new("kubectl");
    c.arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--cache-dir")
        .arg(cache.join("kubectl"))
        .args(args)
        .env("PATH", path)
        .env("FAROS_CREDENTIAL_CACHE_DIR", cache.join("oidc"))
        .env("FAROS_CREDENTIAL_REFRESH_BEFORE", REFRESH_BEFORE.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    c
}

/// Runs kubectl that must not sign in (the cache or a refresh serves it): fails if the plugin
/// prints a device-flow prompt instead of waiting out its code.
async fn kubectl_without_sign_in(kubeconfig: &Path, cache: &Path, args: &[&str]) -> String {
    let mut child = kubectl(kubeconfig, cache, args).spawn().unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut stdout = child.stdout.take().unwrap();
    let mut err_text = String::new();
    while let Some(line) = stderr.next_line().await.unwrap() {
        assert!(
            !line.contains("To sign in"),
            "kubectl {args:?} asked for a new sign-in: {line}"
        );
        err_text.push_str(&line);
        err_text.push('\n');
    }
    let mut out = String::new();
    stdout.read_to_string(&mut out).await.unwrap();
    let status = child.wait().await.unwrap();
    assert!(status.success(), "kubectl {args:?} failed: {err_text}");
    out
}

/// The plugin's one cache file.
fn cache_entry(cache: &Path) -> (PathBuf, Value) {
    let files: Vec<_> = std::fs::read_dir(cache.join("oidc"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "one cache file, no temporary ones left: {files:?}");
    let text = std::fs::read_to_string(&files[0]).unwrap();
    (files[0].clone(), serde_json::from_str(&text).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_signs_in_with_the_device_flow_through_the_hub_kubeconfig() {
    let alice = IdpUser::new("alice", "wonderland", &["dev"]);
    // The hub's port first: the client's redirect is the hub's OIDC callback (the portal's sign-in,
    // also how the test gets alice a first ID token to call the hub with).
    let hub_port = faros_test_support::ports::free_port().unwrap();
    let idp = Idp::start(
        vec![alice.clone()],
        // One public client: the portal's code flow and the CLI's device flow, as the default
        // `--oidc-cli-client-id` (the audience client itself) has it.
        vec![IdpClient {
            redirect_uris: vec![format!("https://127.0.0.1:{hub_port}/api/session/oidc/callback")],
            ..IdpClient::device(CLIENT)
        }],
        Ttls {
            id_token: ID_TOKEN_TTL,
            access_token: ID_TOKEN_TTL,
            ..Ttls::default()
        },
    )
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ca_file = idp.ca_file();
    let dev = devproc::launch(&dir.path().join("state"))
        .hub_port(hub_port)
        .args([
            "--oidc-issuer-url",
            idp.issuer(),
            "--oidc-client-id",
            CLIENT,
            "--oidc-username-claim",
            "email",
            "--oidc-groups-claim",
            "groups",
            "--oidc-ca-file",
            ca_file.to_str().unwrap(),
        ])
        .start()
        .await
        .unwrap();
    let hub = dev.hub.trim_end_matches('/').to_string();
    let ws = format!("{hub}/api/orgs/demo/workspaces/default");
    let https = dev.https().unwrap();
    let dev_token = dev.dev_token().unwrap();

    // The workspace's admin enables quickstart and grants IdP group `dev` the workspace.
    let resp = https
        .post(format!("{ws}/providers/quickstart/enable"))
        .bearer_auth(&dev_token)
        .json(&json!({"acceptedClaims": [{"group": "", "resource": "configmaps"}]}))
        .send()
        .await
        .unwrap();
    assert!(resp.status().is_success(), "enable: {}", resp.text().await.unwrap());
    let resp = https
        .put(format!("{ws}/groups/dev"))
        .bearer_auth(&dev_token)
        .json(&json!({"role": "member"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200, "granting group dev: {}", resp.text().await.unwrap());

    // A static-token user still gets their own token back, and creates the Greeting with it.
    let static_kubeconfig = https
        .get(format!("{ws}/kubeconfig?includeToken=true"))
        .bearer_auth(&dev_token)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(static_kubeconfig.contains(&dev_token) && !static_kubeconfig.contains("exec"));
    let static_path = dir.path().join("dev.kubeconfig");
    std::fs::write(&static_path, &static_kubeconfig).unwrap();
    let mut apply = kubectl(&static_path, dir.path(), &["apply", "-f", "-"])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    tokio::io::AsyncWriteExt::write_all(&mut apply.stdin.take().unwrap(), GREETING.as_bytes())
        .await
        .unwrap();
    let out = apply.wait_with_output().await.unwrap();
    assert!(out.status.success(), "apply: {}", String::from_utf8_lossy(&out.stderr));

    // Alice, signed in with the IdP, asks the hub for a kubeconfig: an exec stanza, no token.
    let tokens = idp.login(CLIENT, &alice.username, &alice.password).await.unwrap();
    let resp = https
        .get(format!("{ws}/kubeconfig?includeToken=true"))
        .bearer_auth(&tokens.id_token)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let kubeconfig_text = resp.text().await.unwrap();
    assert!(
        !kubeconfig_text.contains(&tokens.id_token),
        "the hub echoed the ID token"
    );
    let kubeconfig: Value = serde_saphyr::from_str(&kubeconfig_text).unwrap();
    let exec = &kubeconfig["users"][0]["user"]["exec"];
    assert_eq!(exec["command"], "faros", "{kubeconfig_text}");
    assert_eq!(exec["interactiveMode"], "IfAvailable");
    let args: Vec<&str> = exec["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(
        &args[..4],
        &[
            "credential",
            "oidc",
            &format!("--issuer={}", idp.issuer()),
            &format!("--client-id={CLIENT}"),
        ]
    );
    assert!(args[4].starts_with("--ca-data="), "{args:?}");
    // The same from a portal session alice signed in to with the IdP (cookie-authenticated):
    // the exec stanza, never a token, also when asked for one.
    let signed_in = idp
        .sign_in_via_trusting(
            &dev.ca_pem().unwrap(),
            &format!("{hub}/api/session/oidc?return=/portal/"),
            "/api/session/oidc/callback",
            &alice.username,
            &alice.password,
        )
        .await
        .unwrap();
    let cookie = signed_in.cookie("__Host-faros-session").expect("a portal session");
    let from_session = https
        .get(format!("{ws}/kubeconfig?includeToken=true"))
        .header("cookie", cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(from_session.status(), 200);
    let from_session: Value = serde_saphyr::from_str(&from_session.text().await.unwrap()).unwrap();
    assert_eq!(from_session["users"][0]["user"], kubeconfig["users"][0]["user"]);

    let kubeconfig_path = dir.path().join("alice.kubeconfig");
    std::fs::write(&kubeconfig_path, &kubeconfig_text).unwrap();
    let cache = dir.path().join("cache");

    // 1. No cached token: the plugin runs the device flow; alice approves it in "her browser".
    let mut first = kubectl(&kubeconfig_path, &cache, &["get", "greetings", "-o", "name"])
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(first.stderr.take().unwrap()).lines();
    let mut prompt = String::new();
    let url = loop {
        let line = tokio::time::timeout(Duration::from_secs(60), stderr.next_line())
            .await
            .expect("the plugin's sign-in prompt")
            .unwrap()
            .unwrap_or_else(|| panic!("kubectl ended without a sign-in prompt: {prompt}"));
        prompt.push_str(&line);
        prompt.push('\n');
        if let Some(url) = device_url_in(&line) {
            break url;
        }
    };
    assert!(prompt.contains("enter the code"), "{prompt}");
    idp.approve_device(&url, &alice.username, &alice.password)
        .await
        .unwrap();
    let mut rest = String::new();
    while let Some(line) = stderr.next_line().await.unwrap() {
        rest.push_str(&line);
    }
    let out = first.wait_with_output().await.unwrap();
    assert!(out.status.success(), "kubectl get greetings: {rest}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "greeting.quickstart.providers.faros.sh/hi",
        "{rest}"
    );

    // The cache: one file, the user's alone, holding a refresh token; the token never on stderr.
    let (file, entry) = cache_entry(&cache);
    let new_token = entry["idToken"].as_str().unwrap();
    assert!(
        !rest.contains(new_token) && !prompt.contains(new_token),
        "the plugin printed the ID token on stderr"
    );
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
    assert!(
        entry["refreshToken"].as_str().is_some_and(|t| !t.is_empty()),
        "no refresh token cached"
    );
    let first_token = entry["idToken"].as_str().unwrap().to_string();

    // 2. The cached token serves the next call: no sign-in, the same token.
    let listed = kubectl_without_sign_in(&kubeconfig_path, &cache, &["get", "greetings", "-o", "name"]).await;
    assert_eq!(listed.trim(), "greeting.quickstart.providers.faros.sh/hi");
    assert_eq!(cache_entry(&cache).1["idToken"], first_token.as_str());

    // 3. Once the ID token is within REFRESH_BEFORE of its expiry, a call renews it with the
    //    refresh token: a new ID token, still no sign-in, and kubectl still lists the Greeting.
    eventually(
        "kubectl renewing alice's ID token with the refresh token",
        Duration::from_secs(3 * ID_TOKEN_TTL),
        || {
            let (kubeconfig_path, cache, first_token) = (kubeconfig_path.clone(), cache.clone(), first_token.clone());
            async move {
                let listed =
                    kubectl_without_sign_in(&kubeconfig_path, &cache, &["get", "greetings", "-o", "name"]).await;
                assert_eq!(listed.trim(), "greeting.quickstart.providers.faros.sh/hi");
                let now = cache_entry(&cache).1;
                Ok((now["idToken"] != first_token.as_str()).then_some(()))
            }
        },
    )
    .await
    .unwrap();
    idp.stop().await;
}
