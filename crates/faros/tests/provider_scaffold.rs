//! From nothing to a working provider, as docs/provider-authoring.md walks an author through it,
//! with the page's own commands (read from it): `faros provider new notes --dir ../notes` from a
//! checkout directory, `cd ../notes && cargo test` (the scaffold's own tests, which build it next
//! to this workspace's target directory), `faros dev --provider ../notes` from the checkout with
//! the default state directory `.faros`, enable it in the demo workspace, create a Note with
//! kubectl and see it reconciled (`kubectl get notes` as the page shows it), and find its MCP tool
//! federated in the workspace's MCP endpoint; then rebuild it and see faros dev run the new binary.
//!
//! The build reuses this workspace's compiled dependencies: CARGO_TARGET_DIR is the workspace's
//! target directory, Cargo.lock is the workspace's, the scaffold carries the same `[profile.dev]`
//! and the dev-dependencies that give it `cargo test --workspace`'s feature sets, and `--offline`.
//! The test prints how long the build took and what it compiled.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod devproc;

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

/// docs/provider-authoring.md.
fn guide() -> String {
    std::fs::read_to_string(workspace_root().join("docs/provider-authoring.md")).unwrap()
}

/// The guide's `$ cargo run -p faros -- <sub> …` command: the arguments after `--`.
fn guide_faros_args(guide: &str, sub: &str) -> Vec<String> {
    let prefix = format!("$ cargo run -p faros -- {sub} ");
    let line = guide
        .lines()
        .find(|l| l.starts_with(&prefix))
        .unwrap_or_else(|| panic!("docs/provider-authoring.md has no `{prefix}…` command"));
    line.trim_start_matches("$ cargo run -p faros -- ")
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

/// The lines the guide shows under the command starting with `command`.
fn guide_output(guide: &str, command: &str) -> Vec<String> {
    guide
        .lines()
        .skip_while(|l| !l.starts_with(command))
        .skip(1)
        .take_while(|l| !l.starts_with("```") && !l.starts_with('$'))
        .map(str::to_string)
        .collect()
}

fn kubectl(kubeconfig: &Path, args: &[&str], stdin: Option<&str>) -> (bool, String) {
    let out = faros_test_support::kubectl::run(kubeconfig, args, stdin).unwrap();
    (out.status.success(), faros_test_support::kubectl::printed(&out))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scaffolded_provider_builds_runs_on_faros_dev_reconciles_and_federates_its_tool() {
    faros_core::telemetry::install_crypto_provider();
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().canonicalize().unwrap();
    // The guide's commands run in a faros checkout (`/home/me/faros-rs`); the crate goes beside it.
    let checkout = home.join("faros-rs");
    std::fs::create_dir(&checkout).unwrap();
    let crate_dir = home.join("notes");
    let guide = guide();

    // Scaffold, as the guide does and with the output it shows.
    let scaffold = guide_faros_args(&guide, "provider new");
    assert_eq!(scaffold, ["provider", "new", "notes", "--dir", "../notes"]);
    let out = Command::new(FAROS)
        .args(&scaffold)
        .current_dir(&checkout)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let shown: Vec<String> = guide_output(&guide, "$ cargo run -p faros -- provider new")
        .iter()
        .map(|l| l.replace("/home/me", &home.display().to_string()))
        .collect();
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().collect::<Vec<_>>(), shown);
    std::fs::copy(workspace_root().join("Cargo.lock"), crate_dir.join("Cargo.lock")).unwrap();

    // Its own tests, and its binary, built beside this workspace (the guide's section 2: the
    // workspace's target directory and lock file, offline).
    assert!(
        guide.contains("$ cd ../notes && cargo test\n"),
        "the guide's build command changed"
    );
    let started = Instant::now();
    let built = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["test", "--offline"])
        .current_dir(checkout.join("../notes"))
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

    // faros dev with the provider beside the hub, from the checkout with the default `.faros`, as
    // the guide runs it. The banner does not wait for `--provider` crates (a broken one must not
    // hold the stack up).
    let dev_args = guide_faros_args(&guide, "dev");
    assert_eq!(dev_args, ["dev", "--provider", "../notes"]);
    let state = checkout.join(".faros");
    let mut dev = devproc::launch(&state)
        .default_state_dir()
        .args(&dev_args[1..])
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
    let (ok, table) = kubectl(&kubeconfig, &["get", "notes"], None);
    let shown = guide_output(&guide, "$ kubectl --kubeconfig demo.kubeconfig get notes");
    let columns = |l: &str| l.split_whitespace().take(3).map(str::to_string).collect::<Vec<_>>();
    assert!(ok, "{table}");
    assert_eq!(
        table.lines().map(columns).collect::<Vec<_>>(),
        shown.iter().map(|l| columns(l)).collect::<Vec<_>>(),
        "kubectl get notes printed:\n{table}"
    );

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
