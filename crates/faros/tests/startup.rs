//! Start-up is honest: from the first moment `faros dev`'s hub port accepts a connection, tenant and
//! provider routes answer `503` with `Retry-After` (a Status naming what the hub waits for) or
//! succeed — never an empty catalog, a `404` for the quickstart that is about to be Ready, or a
//! `403` for the demo tenant that is about to exist (the README: "before that the hub answers 503
//! with Retry-After"). Once `hub.url` is written, the README's tenant flow works without a single
//! retry. Every error is a Kubernetes Status, also those axum and the MCP transport give.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod devproc;

use std::time::{Duration, Instant};

use faros_test_support::https::builder_trusting;
use faros_test_support::ports::free_port;
use serde_json::{Value, json};

/// One answer during start-up: acceptable, or why not.
fn check_early(route: &str, resp: &reqwest::Response, ok: &[u16]) -> Result<(), String> {
    let code = resp.status().as_u16();
    if code == 503 {
        return match resp.headers().get("retry-after") {
            Some(_) => Ok(()),
            None => Err(format!("{route}: 503 without Retry-After")),
        };
    }
    if ok.contains(&code) {
        Ok(())
    } else {
        Err(format!("{route}: {code} during start-up"))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn routes_answer_503_with_retry_after_until_ready_then_the_tenant_flow_works() {
    faros_core::telemetry::install_crypto_provider();
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    let hub_port = free_port().unwrap();
    // At the shipped level, so the start-up's INFO lines are checked too.
    let mut starting = devproc::launch(&state)
        .hub_port(hub_port)
        .env("FAROS_LOG_LEVEL", "info")
        .spawn()
        .unwrap();
    let hub = format!("https://127.0.0.1:{hub_port}");
    // The certificate is not the point here (it is checked below, once hub.url exists).
    let early = reqwest::Client::builder()
        .danger_accept_invalid_certs(true)
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    let token_path = state.join("dev-user.token");
    let deadline = Instant::now() + Duration::from_secs(120);
    let (mut answered, mut unavailable) = (0, 0);
    let mut problems = Vec::new();
    while !state.join("hub.url").exists() {
        assert!(Instant::now() < deadline, "faros dev never wrote hub.url");
        if let Ok(Some(status)) = starting.exited() {
            panic!("faros dev exited early: {status}");
        }
        // Paced, not a synchronization: each round asks both routes once.
        tokio::time::sleep(Duration::from_millis(10)).await;
        let Ok(token) = std::fs::read_to_string(&token_path) else {
            continue;
        };
        let orgs = early
            .post(format!("{hub}/api/orgs"))
            .bearer_auth(token.trim())
            .json(&json!({"name": "early"}))
            .send()
            .await;
        let beat = early
            .post(format!("{hub}/api/providers/quickstart/heartbeat"))
            .json(&json!({"version": "0"}))
            .send()
            .await;
        let catalog = early
            .get(format!("{hub}/api/providers"))
            .bearer_auth(token.trim())
            .send()
            .await;
        let demo = early
            .get(format!("{hub}/api/orgs/demo/workspaces/default/providers/enabled"))
            .bearer_auth(token.trim())
            .send()
            .await;
        for (route, resp, ok) in [
            ("POST /api/orgs", orgs, &[200u16, 201, 409][..]),
            // No provider token here: once serving, 401.
            ("POST heartbeat", beat, &[401u16][..]),
            ("GET /api/providers", catalog, &[200u16][..]),
            ("GET demo's enabled providers", demo, &[200u16][..]),
        ] {
            let Ok(resp) = resp else { continue };
            answered += 1;
            if resp.status() == 503 {
                unavailable += 1;
            }
            if let Err(p) = check_early(route, &resp, ok) {
                let body = resp.text().await.unwrap_or_default();
                problems.push(format!("{p}: {body}"));
                continue;
            }
            // A catalog served before the banner already lists quickstart, Ready.
            if route == "GET /api/providers" && resp.status() == 200 {
                let body: Value = resp.json().await.unwrap_or_default();
                let ready = body["items"]
                    .as_array()
                    .is_some_and(|i| i.iter().any(|p| p["name"] == "quickstart" && p["ready"] == true));
                if !ready {
                    problems.push(format!("{route}: 200 without quickstart Ready: {body}"));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
    assert!(
        answered > 0 && unavailable > 0,
        "answered {answered}, 503 {unavailable}: start-up was not observed"
    );

    // hub.url exists: the README's flow, each step once.
    let url = std::fs::read_to_string(state.join("hub.url")).unwrap();
    assert_eq!(url, hub);
    let dev = starting.ready().await.unwrap();
    let http = dev.https().unwrap();
    let token = std::fs::read_to_string(&token_path).unwrap();
    let token = token.trim();
    let providers: Value = http
        .get(format!("{hub}/api/providers"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let quickstart = providers["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "quickstart")
        .expect("quickstart listed");
    assert_eq!(quickstart["ready"], true, "{quickstart}");
    let ws = format!("{hub}/api/orgs/demo/workspaces/default");
    let resp = http
        .post(format!("{ws}/providers/quickstart/enable"))
        .bearer_auth(token)
        .json(&json!({"acceptedClaims": [{"group": "", "resource": "configmaps"}]}))
        .send()
        .await
        .unwrap();
    assert!(resp.status().is_success(), "enable: {}", resp.status());
    let resp = http
        .get(format!("{ws}/kubeconfig?includeToken=true"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let kubeconfig = tmp.path().join("demo.kubeconfig");
    std::fs::write(&kubeconfig, resp.bytes().await.unwrap()).unwrap();
    kubectl_validates_through_the_tenant_kubeconfig(&kubeconfig, &tmp.path().join("kubectl-cache"));
    let resp = http
        .post(format!("{hub}/api/orgs"))
        .bearer_auth(token)
        .json(&json!({"name": "acme"}))
        .send()
        .await
        .unwrap();
    assert!(resp.status().is_success(), "create org: {}", resp.status());

    // The banner names where credentials are, never a credential (it lands in terminals and CI logs).
    assert!(
        !dev.banner.contains(token),
        "the banner prints the dev token:\n{}",
        dev.banner
    );
    assert!(dev.banner.contains("mcp-client.json"), "{}", dev.banner);
    // The state directory holds every credential: owner-only, each file too.
    owner_only(&state);
    // The hub starts before the reconciler grants its roles and makes the workspaces it watches:
    // start-up ordering, not a fault. A clean start through the README's flow warns about nothing.
    let warnings = dev.log_warnings();
    assert!(warnings.is_empty(), "warnings in a clean start: {warnings:#?}");
    // The normal waits of start-up are one readable line each, not a dump of a kube Status.
    let dumps = dev.log_lines_containing("Status {");
    assert!(dumps.is_empty(), "Status dumps in a clean start's log: {dumps:#?}");

    drop(dev);
}

/// kubectl's validation through the tenant's kubeconfig, which reads the OpenAPI v3 and v2
/// documents: a mistyped apiVersion gets "no matches for kind", an unknown field is refused
/// under `--validate=strict` (by the server, and by kubectl for a `kind: List`'s items), and a
/// `kind: List` file applies.
fn kubectl_validates_through_the_tenant_kubeconfig(kubeconfig: &std::path::Path, cache: &std::path::Path) {
    use faros_test_support::kubectl;
    let cache = cache.display().to_string();
    let apply = |args: &[&str], manifest: &str| {
        let mut all = vec!["--cache-dir", &cache, "apply"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["-f", "-"]);
        let out = kubectl::run(kubeconfig, &all, Some(manifest)).unwrap();
        (out.status.success(), kubectl::printed(&out))
    };
    let greeting = |version: &str, name: &str, spec: &str| {
        format!(
            "apiVersion: quickstart.providers.faros.sh/{version}\nkind: Greeting\n\
             metadata: {{name: {name}, namespace: default}}\nspec: {spec}\n"
        )
    };
    let (ok, printed) = apply(&[], &greeting("v1", "mistyped", "{name: Ada}"));
    assert!(
        !ok && printed.contains(r#"no matches for kind "Greeting" in version "quickstart.providers.faros.sh/v1""#),
        "{printed}"
    );
    let (ok, printed) = apply(
        &["--validate=strict"],
        &greeting("v1alpha1", "unknown-field", "{name: Ada, colour: blue}"),
    );
    assert!(!ok && printed.contains(r#"unknown field "spec.colour""#), "{printed}");
    let list = |spec: &str| {
        let item = greeting("v1alpha1", "listed", spec).replace('\n', "\n    ");
        format!(
            "apiVersion: v1\nkind: List\nitems:\n  - {item}\n  - {{apiVersion: v1, kind: ConfigMap, \
             metadata: {{name: listed, namespace: default}}, data: {{a: b}}}}\n"
        )
    };
    let (ok, printed) = apply(&[], &list("{name: Ada, colour: blue}"));
    assert!(!ok && printed.contains(r#"unknown field "colour""#), "{printed}");
    let (ok, printed) = apply(&[], &list("{name: Ada}"));
    assert!(ok, "{printed}");
    assert!(
        printed.contains("greeting.quickstart.providers.faros.sh/listed created")
            && printed.contains("configmap/listed created"),
        "{printed}"
    );
}

/// `dir` is `0700` and everything under it `0600` (directories `0700`).
#[cfg(unix)]
fn owner_only(dir: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(dir).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "{}: {mode:o}", dir.display());
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let meta = std::fs::symlink_metadata(&path).unwrap();
        if meta.is_dir() {
            owner_only(&path);
        } else {
            let mode = meta.permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "{}: {mode:o}", path.display());
        }
    }
}

#[cfg(not(unix))]
fn owner_only(_: &std::path::Path) {}

/// Early answers (before the hub read the request body) reach HTTP/2 clients, every time, as
/// Kubernetes Status JSON: unauthenticated POSTs and unknown routes with bodies from 2 B to 20 MB.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn early_answers_reach_http1_and_http2_clients_as_status_json() {
    faros_core::telemetry::install_crypto_provider();
    let tmp = tempfile::tempdir().unwrap();
    // Ready (hub.url written, banner printed) or the test fails with faros dev's log.
    let dev = devproc::launch(&tmp.path().join("state"))
        .args(["--no-quickstart"])
        .start()
        .await
        .unwrap();
    let hub = &dev.hub;
    let ca = dev.ca_pem().unwrap();
    let client = |http1: bool| {
        let b = builder_trusting(&ca).unwrap().timeout(Duration::from_secs(60));
        if http1 { b.http1_only() } else { b }.build().unwrap()
    };
    for (http, version) in [
        (client(false), reqwest::Version::HTTP_2),
        (client(true), reqwest::Version::HTTP_11),
    ] {
        for size in [2usize, 100 * 1024, 2 * 1024 * 1024, 20 * 1024 * 1024] {
            let body = vec![b'a'; size];
            for (path, code) in [
                ("/api/providers/quickstart/heartbeat", 401),
                ("/api/orgs", 401),
                ("/no/such/route", 404),
            ] {
                let repeats = if size > 1024 * 1024 { 2 } else { 5 };
                for i in 0..repeats {
                    let resp = http
                        .post(format!("{hub}{path}"))
                        .body(body.clone())
                        .send()
                        .await
                        .unwrap_or_else(|e| panic!("{version:?} POST {path} with {size} B (#{i}): no answer: {e:?}"));
                    assert_eq!(resp.version(), version);
                    assert_eq!(
                        resp.status().as_u16(),
                        code,
                        "{version:?} POST {path} with {size} B (#{i})"
                    );
                    let status: Value = resp.json().await.unwrap();
                    assert_eq!(
                        (status["kind"].as_str(), status["code"].as_u64()),
                        (Some("Status"), Some(u64::from(code)))
                    );
                }
            }
        }
    }
    // Answers that axum and the MCP transport give by themselves are Status JSON too.
    let http = client(false);
    let token = dev.dev_token().unwrap();
    let ws = format!("{hub}/api/orgs/demo/workspaces/default");
    for (what, req, code) in [
        (
            "a method no route takes",
            http.delete(format!("{hub}/api/providers")),
            405,
        ),
        (
            "a bad query string",
            http.get(format!("{ws}/kubeconfig?includeToken=maybe")),
            400,
        ),
        (
            "MCP without the Accept it needs",
            http.post(format!("{ws}/mcp"))
                .header("content-type", "application/json")
                .header("accept", "text/plain")
                .body(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#),
            406,
        ),
    ] {
        let resp = req.bearer_auth(&token).send().await.unwrap();
        assert_eq!(resp.status().as_u16(), code, "{what}");
        let text = resp.text().await.unwrap();
        let status: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{what}: not JSON ({e}): {text}"));
        assert_eq!(
            (status["kind"].as_str(), status["code"].as_u64()),
            (Some("Status"), Some(u64::from(code))),
            "{what}: {text}"
        );
        assert!(
            !status["message"].as_str().unwrap_or_default().is_empty(),
            "{what}: {text}"
        );
    }
    drop(dev);
}

/// The boolean `FAROS_*` variables take `1`, as the SDK's do (clap's plain bool took `true` only).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn boolean_variables_take_one() {
    faros_core::telemetry::install_crypto_provider();
    let tmp = tempfile::tempdir().unwrap();
    let dev = devproc::launch(&tmp.path().join("state"))
        .env("FAROS_NO_QUICKSTART", "1")
        .env("FAROS_KCP_NO_GROUP_COMMIT", "yes")
        .start()
        .await
        .unwrap();
    assert!(!dev.banner.contains("quickstart:"), "{}", dev.banner);
    drop(dev);
}
