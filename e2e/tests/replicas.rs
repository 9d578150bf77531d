//! The hub as a replicated service: three `faros-hub-api` processes on one kcp (`faros dev`'s, with
//! its reconciler and quickstart) behind nginx round-robin on 127.0.0.1 (`faros_e2e::replicas`).
//!
//! 1. The scenarios through the balancer's URL (all but provider deletion, which would take the
//!    quickstart the load below needs).
//!    Beside them, the portal's browser walk (`e2e/browser/portal.test.mjs`, Chromium): its cookie
//!    session, made on one replica, is honoured by every other (the walk's requests go round the
//!    replicas; one that refused the cookie would send the walk back to sign-in).
//! 2. A portal session (token sign-in) and three MCP sessions, whose requests land on every
//!    replica: rmcp's client and the official Python and TypeScript SDKs (`e2e/mcp-sdk`), each
//!    through initialize, tools/list, tools/call, and `tools/list_changed` after an Enable and a
//!    Disable.
//! 3. A rolling restart under load: each replica in turn gets SIGTERM, is waited for until it
//!    exited, started again and waited for until ready, while loops read the REST API with the
//!    session cookie, call a tool on the one MCP session, go through the backend proxy to
//!    quickstart and send quickstart's heartbeats. No request may fail: nginx retries a refused
//!    connection on the next replica, a stopping replica finishes what it accepted. What the
//!    protocols let a client retry is retried and counted (a 503 with Retry-After; an MCP request
//!    failed in flight, which the hub makes a client see instead of waiting forever; a request
//!    written on a kept-alive connection nginx closed on a reload before reading it). Figures
//!    (requests, failures, retries, longest request) are printed.
//! 4. Every replica stopped, then all started again: the session cookie and the MCP session made
//!    before still work (they are records in kcp, not replica memory).
//!
//! Needs nginx and chromium (Debian's), `npm ci` in `e2e/browser` and `e2e/mcp-sdk`, the Python
//! SDK (`pip install mcp`; `.ci/run` installs all of them, pinned) and the `faros` and
//! `faros-hub-api` binaries (`cargo test --workspace` builds both). With
//! `FAROS_E2E_TARGET=external` it stays out of the way.
#![allow(clippy::unwrap_used, clippy::expect_used)] // Tests fail loudly by design.

#[path = "replicas/portal.rs"]
mod portal;
mod scenarios;

use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use faros_e2e::mcp_sdk::{Sdk, SdkClient};
use faros_e2e::replicas::Replicas;
use faros_e2e::{Platform, Target, WAIT, devproc, eventually};
use faros_test_support::devproc::DevProcess;
use faros_test_support::mcp_client::{self, Notifications};
use futures::FutureExt;
use futures::future::BoxFuture;
use reqwest::Method;
use rmcp::model::CallToolRequestParams;
use serde_json::json;

const REPLICAS: usize = 3;
/// The portal session cookie.
const COOKIE: &str = "__Host-faros-session";
/// Pause between two requests of one load loop: enough load to have requests in flight at every
/// SIGTERM, not so much that four loops starve the two-core CI machine.
const PACE: Duration = Duration::from_millis(20);
/// Longest a load request may take before it counts as failed (a replica's grace period is 20 s).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// How often one load request may be answered "retry after" before it counts as failed.
const RETRIES: u32 = 5;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_hub_replicas_behind_a_balancer_are_one_hub_through_rolling_restarts() {
    if Target::from_env().expect("FAROS_E2E_* variables") != Target::InProcess {
        eprintln!("FAROS_E2E_TARGET names a platform already: not starting faros dev and hub replicas");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let dev = devproc::start(&dir.path().join("state")).await.unwrap();
    let mut hubs = Replicas::start(&dev, REPLICAS, dir.path()).await.unwrap();
    let p = Platform::external(&hubs.target(&dev, false)).await.unwrap();

    let result = AssertUnwindSafe(run(&p, &mut hubs, &dev, dir.path()))
        .catch_unwind()
        .await;
    if let Err(panic) = result {
        eprintln!(
            "the replicas test failed; logs end:\n{}\n--- faros dev:\n{}",
            hubs.logs(),
            dev.log_tail()
        );
        std::panic::resume_unwind(panic);
    }
    p.stop().await;
}

async fn run(p: &Platform, hubs: &mut Replicas, dev: &DevProcess, dir: &Path) {
    // 1. The scenarios, each request going to the next replica, and beside them (two users at
    // once, as a hub serves them) the portal's browser walk.
    let steps: Vec<(&str, BoxFuture<'_, ()>)> = vec![
        ("tenant lifecycle", scenarios::lifecycle::run(p).boxed()),
        ("membership matrix", scenarios::tenancy::run(p).boxed()),
        ("MCP federation", scenarios::mcp::run(p).boxed()),
        ("security", scenarios::security::run(p).boxed()),
        ("GitOps", scenarios::gitops::run(p).boxed()),
    ];
    let scenarios = async {
        for (name, scenario) in steps {
            let started = Instant::now();
            scenario.await;
            eprintln!(
                "scenario `{name}` passed behind {REPLICAS} replicas in {:.1?}",
                started.elapsed()
            );
        }
    };
    let hubs_now: &Replicas = hubs;
    let walk = async {
        let started = Instant::now();
        // Only the walk asks for portal pages and /api/session (sign-in, sign-out).
        let before = counts(hubs_now, &["portal"]).await;
        let failures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/portal-failures/replicas");
        portal::walk(dev, hubs_now.url(), &failures).await.unwrap();
        let after = counts(hubs_now, &["portal"]).await;
        for (i, (b, a)) in before.iter().zip(&after).enumerate() {
            assert!(
                a[0] > b[0],
                "replica {i} served no portal request of the walk ({b:?}, then {a:?})"
            );
        }
        eprintln!(
            "the portal's browser walk passed behind {REPLICAS} replicas in {:.1?}",
            started.elapsed()
        );
    };
    tokio::join!(scenarios, walk);

    // 2. A tenant, a portal session and an MCP session spread over the replicas.
    let alice = p.add_user("alice").await.unwrap();
    let org = p.unique("replicated");
    let workspaces = format!("/api/orgs/{org}/workspaces");
    for (path, name) in [("/api/orgs", org.as_str()), (workspaces.as_str(), "dev")] {
        let r = p
            .call(Method::POST, path, Some(&alice), Some(json!({"name": name})))
            .await
            .unwrap();
        assert_eq!(r.status, 201, "{path} {name}: {}", r.text);
    }
    let started = Instant::now();
    let before = counts(hubs, &["tenancy", "mcp"]).await;
    let cookie = sign_in(p, &alice.token).await;
    for _ in 0..2 * REPLICAS {
        let me = with_cookie(p, Method::GET, "/api/me", &cookie).await.unwrap();
        assert_eq!(me.status, 200, "{}", me.text);
        assert_eq!(me.body["user"], alice.name.as_str(), "{}", me.text);
    }
    let (mcp, mut changed) = connect(p, &org, &alice.token).await;
    assert_eq!(
        mcp_client::tool_names(&mcp).await.unwrap(),
        Vec::<String>::new(),
        "dev has not enabled quickstart"
    );
    // The official SDKs' sessions beside rmcp's, on the same workspace and Enables.
    let url = p.hub(&faros_core::names::mcp_path(&org, "dev"));
    let mut sdks = Vec::new();
    for sdk in Sdk::ALL {
        let client = SdkClient::start(sdk, &url, &alice.token, &dev.ca_path(), dir)
            .await
            .unwrap();
        assert_eq!(client.list().await.unwrap(), Vec::<String>::new(), "{}", sdk.name());
        sdks.push(client);
    }
    let quickstart_tools = ["quickstart__create_greeting", "quickstart__list_greetings"];
    changed.drain();
    sdks.iter_mut().for_each(SdkClient::drain);
    enable(p, &org, &alice.token).await;
    next_list_changed(&mut changed, "quickstart was enabled").await;
    sdks_list_changed(&mut sdks, "quickstart was enabled").await;
    tools_become(&mcp, &quickstart_tools).await;
    sdk_tools_become(&sdks, &quickstart_tools).await;
    changed.drain();
    sdks.iter_mut().for_each(SdkClient::drain);
    let r = p
        .call(
            Method::POST,
            &format!("{workspaces}/dev/providers/quickstart/disable"),
            Some(&alice),
            None,
        )
        .await
        .unwrap();
    assert!(matches!(r.status, 200 | 202 | 204), "disable: {} {}", r.status, r.text);
    next_list_changed(&mut changed, "quickstart was disabled").await;
    sdks_list_changed(&mut sdks, "quickstart was disabled").await;
    tools_become(&mcp, &[]).await;
    sdk_tools_become(&sdks, &[]).await;
    changed.drain();
    sdks.iter_mut().for_each(SdkClient::drain);
    enable(p, &org, &alice.token).await;
    next_list_changed(&mut changed, "quickstart was enabled again").await;
    sdks_list_changed(&mut sdks, "quickstart was enabled again").await;
    tools_become(&mcp, &quickstart_tools).await;
    sdk_tools_become(&sdks, &quickstart_tools).await;
    for client in sdks {
        let name = client.sdk.name();
        let text = client
            .call("quickstart__create_greeting", json!({"name": name}))
            .await
            .unwrap();
        assert!(text.contains(name), "{name}: the greeting it created: {text}");
        client.close().await.unwrap();
        eprintln!(
            "{name}: initialize, tools/list, tools/call and tools/list_changed after an Enable and a Disable passed behind {REPLICAS} replicas"
        );
    }
    let created = mcp
        .peer()
        .call_tool(
            CallToolRequestParams::new("quickstart__create_greeting")
                .with_arguments(json!({"name": "Replica"}).as_object().unwrap().clone()),
        )
        .await
        .unwrap();
    assert_ne!(created.is_error, Some(true), "{:?}", created.content);
    let after = counts(hubs, &["tenancy", "mcp"]).await;
    for (i, (b, a)) in before.iter().zip(&after).enumerate() {
        assert!(
            a[0] > b[0] && a[1] > b[1],
            "replica {i} served no cookie request or no MCP request (tenancy, mcp before {b:?}, after {a:?})"
        );
    }
    eprintln!(
        "a cookie session and three MCP sessions (rmcp, Python SDK, TypeScript SDK) through an Enable, a Disable and an Enable in {:.1?}",
        started.elapsed()
    );

    // 3. Rolling restart under load.
    rolling_restart_under_load(p, hubs, &org, &alice, &cookie, &mcp).await;

    // 4. Every replica down, then up: the session and the MCP session made before still work.
    for i in 0..REPLICAS {
        let status = hubs.stop(i).await.unwrap();
        assert!(status.success(), "replica {i} exited with {status} on SIGTERM");
    }
    for i in 0..REPLICAS {
        hubs.start_replica(i).await.unwrap();
    }
    for _ in 0..REPLICAS {
        let me = with_cookie(p, Method::GET, "/api/me", &cookie).await.unwrap();
        assert_eq!(me.status, 200, "the session outlives every replica: {}", me.text);
        assert_eq!(me.body["user"], alice.name.as_str());
        let listed = mcp
            .peer()
            .call_tool(CallToolRequestParams::new("quickstart__list_greetings"))
            .await
            .expect("the MCP session outlives every replica");
        assert!(
            serde_json::to_string(&listed.content).unwrap().contains("Replica"),
            "{:?}",
            listed.content
        );
    }
    eprintln!("after a restart of every replica: the session cookie and the MCP session still work");

    mcp.cancel().await.unwrap();
    p.delete_org(&org, &alice).await.unwrap();
}

/// Step 3: every replica restarted in turn while four load loops run; no request may fail.
async fn rolling_restart_under_load(
    p: &Platform,
    hubs: &mut Replicas,
    org: &str,
    alice: &faros_e2e::User,
    cookie: &str,
    mcp: &mcp_client::Client,
) {
    let workspaces = format!("/api/orgs/{org}/workspaces");
    // A restarted replica rejoins once its /readyz answers, which waits for its first probes of
    // the providers' backends (before them the backend proxy would answer quickstart "not ready").
    let provider_token = p.provider_token("quickstart").await.unwrap();
    let stop = AtomicBool::new(false);
    let tenant = [("X-Faros-Org", org), ("X-Faros-Workspace", "dev")];
    let restarts = async {
        let mut figures = Vec::new();
        for i in 0..REPLICAS {
            let started = Instant::now();
            let status = hubs.stop(i).await.unwrap();
            assert!(status.success(), "replica {i} exited with {status} on SIGTERM");
            let stopped = started.elapsed();
            hubs.start_replica(i).await.unwrap();
            figures.push((i, stopped, started.elapsed()));
        }
        stop.store(true, Ordering::Relaxed);
        figures
    };
    let rest = load("REST with the session cookie", &stop, |n| {
        let path = if n % 2 == 0 {
            "/api/me".to_string()
        } else {
            workspaces.clone()
        };
        let cookie = &cookie;
        async move {
            let r = with_cookie(p, Method::GET, &path, cookie).await?;
            expect(&r, 200, &format!("GET {path}"))
        }
    });
    let tools = load("MCP tools/call on one session", &stop, |_| {
        let mcp = &mcp;
        async move {
            let r = mcp
                .peer()
                .call_tool(CallToolRequestParams::new("quickstart__list_greetings"))
                .await
                .map_err(|e| match closed_in_flight(&e) {
                    // Sent again at once, as a client may (the call is a read).
                    true => Failed::RetryAfter(Duration::ZERO, format!("tools/call: {e}")),
                    false => Failed::Error(mcp_failure(e)),
                })?;
            if r.is_error == Some(true) {
                return Err(Failed::Error(anyhow::anyhow!("tools/call: {:?}", r.content)));
            }
            Ok(())
        }
    });
    let backend = load("backend proxy to quickstart", &stop, |_| {
        let (alice, tenant) = (&alice, &tenant);
        async move {
            let r = p
                .call_with(
                    Method::GET,
                    "/services/providers/quickstart/api/hello",
                    Some(alice),
                    None,
                    tenant,
                )
                .await?;
            expect(&r, 200, "hello")?;
            if r.body["user"] != alice.name.as_str() {
                return Err(Failed::Error(anyhow::anyhow!(
                    "hello answered for someone else: {}",
                    r.text
                )));
            }
            Ok(())
        }
    });
    let beats = load("quickstart heartbeats", &stop, |_| {
        let token = &provider_token;
        async move {
            let r = p
                .call(Method::POST, "/api/providers/quickstart/heartbeat", Some(token), None)
                .await?;
            expect(&r, if r.status == 200 { 200 } else { 204 }, "heartbeat")
        }
    });
    let (figures, rest, tools, backend, beats) = tokio::join!(restarts, rest, tools, backend, beats);
    for (i, stopped, back) in &figures {
        eprintln!("replica {i}: exited {stopped:.1?} after SIGTERM, ready again after {back:.1?}");
    }
    let tallies = [rest, tools, backend, beats];
    for t in &tallies {
        eprintln!(
            "{}: {} requests, {} failed, {} retried as the protocol allows, longest {:.0?}",
            t.what,
            t.requests,
            t.failures.len(),
            t.retries,
            t.longest
        );
        for f in &t.failures {
            eprintln!("  failed: {f}");
        }
    }
    for t in &tallies {
        assert!(t.requests > 0, "{}: no requests ran", t.what);
        assert!(
            t.failures.is_empty(),
            "{}: {} of {} requests failed during the rolling restart: {:#?}",
            t.what,
            t.failures.len(),
            t.requests,
            t.failures
        );
    }
}

/// What one load loop saw.
struct Tally {
    what: &'static str,
    requests: u64,
    /// Answers that said to come back (503 with Retry-After: the replica reached is starting or
    /// stopping), repeated after the time they named, as the protocol has clients do; and MCP
    /// requests that failed in flight ([`closed_in_flight`]), sent again.
    retries: u64,
    failures: Vec<String>,
    longest: Duration,
}

/// A load request's failure: one the protocol tells the client to retry, or a real one.
enum Failed {
    RetryAfter(Duration, String),
    Error(anyhow::Error),
}

impl From<anyhow::Error> for Failed {
    fn from(e: anyhow::Error) -> Self {
        match closed_before_response(&e) {
            true => Failed::RetryAfter(Duration::ZERO, format!("{e:#}")),
            false => Failed::Error(e),
        }
    }
}

/// Whether a request was sent on a kept-alive connection that closed before any response: nginx's
/// workers of the previous configuration close their idle client connections when a rotation
/// change reloads it, and a request can cross the close. HTTP lets a client retry an idempotent
/// request then (RFC 9112, 9.3.1.1), and every request of the load loops is one (reads, and a
/// heartbeat, which only says "alive now").
fn closed_before_response(e: &anyhow::Error) -> bool {
    incomplete_message(e.as_ref())
}

/// Whether `e` or one of its causes is hyper's "connection closed before message completed".
fn incomplete_message(e: &(dyn std::error::Error + 'static)) -> bool {
    std::iter::successors(Some(e), |cause| cause.source()).any(|cause| {
        cause
            .downcast_ref::<hyper::Error>()
            .is_some_and(hyper::Error::is_incomplete_message)
    })
}

/// Whether an MCP request failed in flight and may be sent again: the way MCP's streamable HTTP
/// defines (its response stream closed before the response and could not be resumed: the replica
/// holding it stopped, another one answers the resume 405; rmcp's client reports a closed
/// transport for that request), or the way HTTP does ([`closed_before_response`]: the POST was
/// written on a kept-alive connection nginx closed).
fn closed_in_flight(e: &rmcp::ServiceError) -> bool {
    let stream_closed = matches!(e, rmcp::ServiceError::McpError(d)
        if d.data.as_ref().is_some_and(|d| d.get("io.modelcontextprotocol/transportClosed").is_some()));
    stream_closed || http_cause(e).is_some_and(|http| incomplete_message(http))
}

/// The HTTP client's error inside an MCP request's failure. rmcp's transport error holds it without
/// naming it as its source, so the error chain stops short of it and it is looked for by type.
fn http_cause(e: &rmcp::ServiceError) -> Option<&reqwest::Error> {
    use rmcp::transport::streamable_http_client::StreamableHttpError;
    std::iter::successors(Some(e as &(dyn std::error::Error + 'static)), |c| c.source()).find_map(|c| {
        match c.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
            Some(StreamableHttpError::Client(http)) => Some(http),
            _ => None,
        }
    })
}

/// `e` with its HTTP client's error in full (the causes [`http_cause`] says its chain leaves out).
fn mcp_failure(e: rmcp::ServiceError) -> anyhow::Error {
    match http_cause(&e).map(|http| format!("{http:?}")) {
        Some(http) => anyhow::anyhow!("{e} (the HTTP client's error: {http})"),
        None => e.into(),
    }
}

/// `Err` unless `r` has status `want`; a 503 with `retryAfterSeconds` is [`Failed::RetryAfter`].
fn expect(r: &faros_e2e::Reply, want: u16, what: &str) -> Result<(), Failed> {
    if r.status == want {
        return Ok(());
    }
    let message = format!("{what}: {} {}", r.status, r.text);
    match r.body["details"]["retryAfterSeconds"].as_u64() {
        Some(secs) if r.status == 503 => Err(Failed::RetryAfter(Duration::from_secs(secs), message)),
        _ => Err(Failed::Error(anyhow::anyhow!(message))),
    }
}

/// Runs `request` (numbered) one at a time until `stop`, each [`PACE`] after the previous; one
/// answered with Retry-After is sent again after that time (at most [`RETRIES`] times).
async fn load<F, Fut>(what: &'static str, stop: &AtomicBool, mut request: F) -> Tally
where
    F: FnMut(u64) -> Fut,
    Fut: Future<Output = Result<(), Failed>>,
{
    let mut tally = Tally {
        what,
        requests: 0,
        retries: 0,
        failures: Vec::new(),
        longest: Duration::ZERO,
    };
    let mut pace = tokio::time::interval(PACE);
    pace.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    while !stop.load(Ordering::Relaxed) {
        pace.tick().await;
        let started = Instant::now();
        let mut retries = 0;
        let outcome = loop {
            // A request that hangs (a response lost with its replica) is a failure, not a stuck test.
            let outcome = match tokio::time::timeout(REQUEST_TIMEOUT, request(tally.requests)).await {
                Ok(outcome) => outcome,
                Err(_) => Err(Failed::Error(anyhow::anyhow!("no answer within {REQUEST_TIMEOUT:?}"))),
            };
            match outcome {
                Err(Failed::RetryAfter(after, message)) if retries < RETRIES => {
                    retries += 1;
                    tally.retries += 1;
                    eprintln!("{what}: retrying after {after:?} as told: {message}");
                    // The wait the answer asked for (the protocol's backoff), not a synchronization.
                    tokio::time::sleep(after).await;
                }
                Err(Failed::RetryAfter(_, message)) => break Err(anyhow::anyhow!("{message} ({RETRIES} retries)")),
                Err(Failed::Error(e)) => break Err(e),
                Ok(()) => break Ok(()),
            }
        };
        tally.longest = tally.longest.max(started.elapsed());
        tally.requests += 1;
        if let Err(e) = outcome {
            tally.failures.push(format!("{e:#}"));
        }
    }
    tally
}

/// Each replica's request counts of `routes`, read from its own `/metrics`.
async fn counts(hubs: &Replicas, routes: &[&str]) -> Vec<Vec<u64>> {
    let mut all = Vec::new();
    for i in 0..hubs.len() {
        let mut one = Vec::new();
        for route in routes {
            one.push(hubs.requests(i, route).await.unwrap());
        }
        all.push(one);
    }
    all
}

/// Signs in with `token` as the portal does (same-origin proof included); returns the cookie value.
async fn sign_in(p: &Platform, token: &str) -> String {
    let resp = p
        .http
        .post(p.hub("/api/session"))
        .header("Origin", p.hub_url())
        .header("X-Faros-CSRF", "1")
        .json(&json!({"token": token}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 201, "sign-in");
    let set = resp
        .headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .expect("a session cookie")
        .to_string();
    let value = set
        .split(';')
        .next()
        .and_then(|kv| kv.strip_prefix(&format!("{COOKIE}=")))
        .unwrap_or_else(|| panic!("not the session cookie: {set}"));
    value.to_string()
}

/// A request with the session cookie and nothing else (no bearer), as a browser sends it.
async fn with_cookie(p: &Platform, method: Method, path: &str, cookie: &str) -> anyhow::Result<faros_e2e::Reply> {
    let resp = p
        .http
        .request(method, p.hub(path))
        .header("Cookie", format!("{COOKIE}={cookie}"))
        .send()
        .await?;
    let status = resp.status().as_u16();
    let text = resp.text().await?;
    let body = serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text.clone()));
    Ok(faros_e2e::Reply { status, body, text })
}

/// Enables quickstart in `org`/dev; a 409 (the last Disable's binding is still terminating: "enable
/// it again once it is gone") is retried until it is gone.
async fn enable(p: &Platform, org: &str, token: &str) {
    eventually("Enable to answer 200", WAIT, || async {
        let r = p
            .call(
                Method::POST,
                &format!("/api/orgs/{org}/workspaces/dev/providers/quickstart/enable"),
                Some(token),
                Some(json!({"acceptedClaims": [{"group": "", "resource": "configmaps"}]})),
            )
            .await?;
        match r.status {
            200 => Ok(Some(())),
            409 => Ok(None),
            _ => anyhow::bail!("enable: {} {}", r.status, r.text),
        }
    })
    .await
    .unwrap();
}

/// An MCP client that reports `notifications/tools/list_changed`.
async fn connect(p: &Platform, org: &str, token: &str) -> (mcp_client::Client, Notifications) {
    let url = p.hub(&faros_core::names::mcp_path(org, "dev"));
    mcp_client::connect(p.http.clone(), &url, token).await.unwrap()
}

/// Waits for a `tools/list_changed`.
async fn next_list_changed(changed: &mut Notifications, what: &str) {
    changed.next(WAIT).await.unwrap_or_else(|e| panic!("after {what}: {e}"));
}

/// Waits for a `tools/list_changed` on every SDK client's session.
async fn sdks_list_changed(sdks: &mut [SdkClient], what: &str) {
    for client in sdks {
        client
            .next_list_changed(WAIT)
            .await
            .unwrap_or_else(|e| panic!("after {what}: {e}"));
    }
}

/// [`tools_become`] for every SDK client.
async fn sdk_tools_become(sdks: &[SdkClient], want: &[&str]) {
    for client in sdks {
        let what = format!("{}'s tools/list to answer {want:?}", client.sdk.name());
        eventually(&what, WAIT, || async {
            Ok((client.list().await? == want).then_some(()))
        })
        .await
        .unwrap();
    }
}

/// Waits until `tools/list` answers `want` (a notification may come before every replica's watch
/// has seen the change that caused it).
async fn tools_become(client: &mcp_client::Client, want: &[&str]) {
    eventually(&format!("tools/list to answer {want:?}"), WAIT, || async {
        Ok((mcp_client::tool_names(client).await? == want).then_some(()))
    })
    .await
    .unwrap();
}
