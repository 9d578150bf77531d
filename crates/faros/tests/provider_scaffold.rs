//! From nothing to a working provider, as an author does it: `faros provider new notes` into a
//! temporary directory, `cargo test` (the scaffold's own tests) and build it next to this
//! workspace's target directory, run it with `faros dev --provider`, enable it in the demo
//! workspace, create a Note with kubectl and see it reconciled, and find its MCP tool federated in
//! the workspace's MCP endpoint; then rebuild it and see faros dev run the new binary.
//!
//! The build reuses this workspace's compiled dependencies: CARGO_TARGET_DIR is the workspace's
//! target directory, Cargo.lock is the workspace's, the scaffold carries the same `[profile.dev]`,
//! and `--offline`. The test prints how long the build took and what it compiled.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod devproc;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};

const FAROS: &str = env!("CARGO_BIN_EXE_faros");

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// The target directory this test was built in (`CARGO_TARGET_TMPDIR` is `<target>/tmp`).
fn target_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).parent().unwrap().to_path_buf()
}

fn kubectl(kubeconfig: &Path, args: &[&str], stdin: Option<&str>) -> (bool, String) {
    let out = faros_test_support::kubectl::run(kubeconfig, args, stdin).unwrap();
    (out.status.success(), faros_test_support::kubectl::printed(&out))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scaffolded_provider_builds_runs_on_faros_dev_reconciles_and_federates_its_tool() {
    faros_core::telemetry::install_crypto_provider();
    let tmp = tempfile::tempdir().unwrap();
    let crate_dir = tmp.path().join("notes");

    // Scaffold.
    let out = Command::new(FAROS)
        .args(["provider", "new", "notes", "--dir"])
        .arg(&crate_dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("faros dev --provider"));
    std::fs::copy(workspace_root().join("Cargo.lock"), crate_dir.join("Cargo.lock")).unwrap();
    // CI builds this workspace with `cargo test --workspace`, which unifies features over every
    // member's dev-dependencies: tokio gets `test-util`, tempfile turns on rustix's (and so
    // bitflags') `std`, the embedded kcp tokio-stream's `sync`. A crate built beside it reuses those
    // artifacts only with the same features, else tokio and everything above it up to the SDK (about
    // thirty units) compile again; these dev-dependencies give the scaffold the same ones.
    let mut manifest = std::fs::read_to_string(crate_dir.join("Cargo.toml")).unwrap();
    manifest.push_str(
        "\n[dev-dependencies]\ntokio = { version = \"1\", features = [\"test-util\"] }\n\
         tokio-stream = { version = \"0.1\", features = [\"sync\"] }\ntempfile = \"3\"\n",
    );
    std::fs::write(crate_dir.join("Cargo.toml"), manifest).unwrap();

    // Its own tests, and its binary, built beside this workspace.
    let started = Instant::now();
    let built = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["test", "--offline", "--manifest-path"])
        .arg(crate_dir.join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", target_dir())
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&built.stderr).to_string();
    let compiled: Vec<&str> = log
        .lines()
        .filter_map(|l| l.trim().strip_prefix("Compiling "))
        .collect();
    eprintln!(
        "scaffold build + tests: {:.1}s, compiled {} crates: {compiled:?}",
        started.elapsed().as_secs_f64(),
        compiled.len()
    );
    assert!(
        built.status.success(),
        "{log}{}",
        String::from_utf8_lossy(&built.stdout)
    );
    assert!(
        String::from_utf8_lossy(&built.stdout).contains("words_are_counted_once_per_change ... ok"),
        "the scaffold's unit test ran"
    );
    assert!(
        compiled.iter().any(|c| c.starts_with("faros-provider-notes ")),
        "{compiled:?}"
    );

    // faros dev with the provider beside the hub (no quickstart: this provider is the point).
    let state = tmp.path().join("state");
    // The banner does not wait for `--provider` crates (a broken one must not hold the stack up).
    let mut dev = devproc::launch(&state)
        .args([
            OsStr::new("--no-quickstart"),
            OsStr::new("--provider"),
            crate_dir.as_os_str(),
        ])
        .env("CARGO_TARGET_DIR", target_dir())
        .start()
        .await
        .unwrap();
    let banner = dev.banner.clone();
    assert!(
        banner.contains("provider:          `notes` (root:faros:providers:notes)"),
        "{banner}"
    );
    let hub = std::fs::read_to_string(state.join("hub.url")).unwrap();
    let kcp_url = std::fs::read_to_string(state.join("kcp.url")).unwrap();
    assert!(
        banner.contains(&format!("embedded kcp:      {kcp_url}/clusters/root")),
        "{banner}"
    );

    let token = dev.dev_token().unwrap();
    let http = dev.https().unwrap();
    let ws = format!("{hub}/api/orgs/demo/workspaces/default");
    // The provider becomes Ready once it has served and its backend's health probe passed.
    let providers = faros_test_support::eventually::eventually(
        "provider notes to be Ready in the catalog",
        std::time::Duration::from_secs(60),
        || async {
            let providers: Value = http
                .get(format!("{hub}/api/providers"))
                .bearer_auth(&token)
                .send()
                .await?
                .json()
                .await?;
            let ready = providers["items"]
                .as_array()
                .is_some_and(|items| items.iter().any(|p| p["name"] == "notes" && p["ready"] == true));
            Ok(ready.then_some(providers))
        },
    )
    .await
    .unwrap();
    assert!(
        providers["items"].as_array().is_some_and(|i| !i.is_empty()),
        "{providers}"
    );

    // Enable it in the demo workspace and create a Note there with kubectl.
    let enabled = http
        .post(format!("{ws}/providers/notes/enable"))
        .bearer_auth(&token)
        .json(&json!({"acceptedClaims": []}))
        .send()
        .await
        .unwrap();
    let code = enabled.status();
    assert!(code.is_success(), "{code}: {}", enabled.text().await.unwrap());
    let kubeconfig = tmp.path().join("demo.kubeconfig");
    let body = http
        .get(format!("{ws}/kubeconfig?includeToken=true"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    std::fs::write(&kubeconfig, body).unwrap();
    let note = "apiVersion: notes.providers.faros.sh/v1alpha1\nkind: Note\nmetadata: {name: hello, namespace: default}\nspec: {text: 'three little words'}\n";
    let (ok, said) = kubectl(&kubeconfig, &["apply", "-f", "-"], Some(note));
    assert!(ok, "{said}");
    let (ok, said) = kubectl(
        &kubeconfig,
        &[
            "wait",
            "note/hello",
            "-n",
            "default",
            "--for=jsonpath={.status.words}=3",
            "--timeout=60s",
        ],
        None,
    );
    assert!(ok, "{said}");
    let (_, ready) = kubectl(
        &kubeconfig,
        &[
            "get",
            "note",
            "hello",
            "-n",
            "default",
            "-o",
            "jsonpath={.status.conditions[0].status}",
        ],
        None,
    );
    assert_eq!(ready, "True");

    // Its MCP tool, federated into the workspace's MCP endpoint, sees the Note.
    let transport = StreamableHttpClientTransport::with_client(
        http.clone(),
        StreamableHttpClientTransportConfig::with_uri(format!("{ws}/mcp")).auth_header(token.clone()),
    );
    let mcp = ().serve(transport).await.unwrap();
    let tools: Vec<String> = mcp
        .peer()
        .list_all_tools()
        .await
        .unwrap()
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    assert!(tools.contains(&"notes__list_notes".to_string()), "{tools:?}");
    let listed = mcp
        .peer()
        .call_tool(CallToolRequestParams::new("notes__list_notes"))
        .await
        .unwrap();
    let text = serde_json::to_string(&listed.content).unwrap();
    assert!(text.contains("hello") && text.contains(r#"\"words\":3"#), "{text}");
    let _ = mcp.cancel().await;

    // A new build replaces the binary: faros dev runs init and serve again, and the new controller
    // (counting every word ten times) rewrites the Note's status.
    let source = crate_dir.join("src/note.rs");
    let code = std::fs::read_to_string(&source).unwrap();
    let changed = code.replace(
        "let words = text.split_whitespace().count();",
        "let words = text.split_whitespace().count() * 10;",
    );
    assert_ne!(code, changed, "the scaffold counts words as this test expects");
    std::fs::write(&source, changed).unwrap();
    let rebuilt = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["build", "--offline", "--manifest-path"])
        .arg(crate_dir.join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", target_dir())
        .output()
        .unwrap();
    assert!(rebuilt.status.success(), "{}", String::from_utf8_lossy(&rebuilt.stderr));
    let (ok, said) = kubectl(
        &kubeconfig,
        &[
            "wait",
            "note/hello",
            "-n",
            "default",
            "--for=jsonpath={.status.words}=30",
            "--timeout=60s",
        ],
        None,
    );
    assert!(ok, "the rebuilt provider reconciled the Note again: {said}");

    // SIGTERM, so faros dev stops the provider's process too.
    let _ = dev.terminate();
}
