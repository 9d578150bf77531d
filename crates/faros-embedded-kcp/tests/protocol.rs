//! Every answer arrives and every error is a Status: unauthenticated requests, unknown routes,
//! wrong methods, bad and oversized bodies and timeouts get Kubernetes `Status` JSON with the
//! right code, over HTTP/1.1 and HTTP/2, every time — including answers the server gives before it
//! has read the request body (2 B to 20 MB).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::TestServer;
use futures::StreamExt;
use reqwest::{Method, Version};
use serde_json::Value;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Protocol {
    Http1,
    Http2,
}

const PROTOCOLS: [Protocol; 2] = [Protocol::Http1, Protocol::Http2];

fn client(srv: &TestServer, protocol: Protocol) -> reqwest::Client {
    let ca = reqwest::Certificate::from_pem(srv.server.ca_pem().as_bytes()).unwrap();
    let builder = reqwest::Client::builder()
        .add_root_certificate(ca)
        .timeout(Duration::from_secs(60));
    match protocol {
        Protocol::Http1 => builder.http1_only(),
        // ALPN offers h2 and the server takes it.
        Protocol::Http2 => builder,
    }
    .build()
    .unwrap()
}

/// Asserts that `resp` came over `protocol` and is a `Status` with `code`.
async fn assert_status(resp: reqwest::Response, protocol: Protocol, code: u16, what: &str) {
    let want_version = match protocol {
        Protocol::Http1 => Version::HTTP_11,
        Protocol::Http2 => Version::HTTP_2,
    };
    assert_eq!(resp.version(), want_version, "{what}");
    assert_eq!(resp.status().as_u16(), code, "{what}");
    let content_type = resp
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_string());
    assert_eq!(content_type.as_deref(), Some("application/json"), "{what}");
    let text = resp.text().await.unwrap();
    let status: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{what}: not JSON ({e}): {text:?}"));
    assert_eq!(
        (
            status["kind"].as_str(),
            status["apiVersion"].as_str(),
            status["code"].as_u64()
        ),
        (Some("Status"), Some("v1"), Some(u64::from(code))),
        "{what}: {status}"
    );
    assert_eq!(status["status"], "Failure", "{what}: {status}");
}

/// One request that must fail with `code` whatever the body.
struct Case {
    method: Method,
    path: &'static str,
    authenticated: bool,
    /// The code for bodies within the limit, and for bodies over it.
    code: u16,
    code_over_limit: u16,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn early_and_late_errors_are_status_json_on_http1_and_http2_for_bodies_of_2_bytes_to_20_mb() {
    let srv = TestServer::start().await;
    let configmaps = "/api/v1/namespaces/default/configmaps";
    let cases = [
        // Refused before the body is read.
        Case {
            method: Method::POST,
            path: configmaps,
            authenticated: false,
            // system:anonymous, refused by authorization before the body is read.
            code: 403,
            code_over_limit: 403,
        },
        Case {
            method: Method::POST,
            // A resource the core group does not have (a path outside the API is Go's plain-text
            // 404, as from kcp: not a Status).
            path: "/api/v1/namespaces/default/things",
            authenticated: true,
            code: 404,
            code_over_limit: 404,
        },
        Case {
            method: Method::PUT,
            path: configmaps,
            authenticated: true,
            code: 405,
            code_over_limit: 405,
        },
        Case {
            method: Method::POST,
            path: "/healthz",
            authenticated: false,
            code: 405,
            code_over_limit: 405,
        },
        // Read up to the limit: not JSON (400), or too large (413).
        Case {
            method: Method::POST,
            path: configmaps,
            authenticated: true,
            code: 400,
            code_over_limit: 413,
        },
    ];
    let limit = faros_embedded_kcp::Config::new("unused").max_body_bytes;
    for protocol in PROTOCOLS {
        let http = client(&srv, protocol);
        for size in [2usize, 100 * 1024, 2 * 1024 * 1024, 20 * 1024 * 1024] {
            let body = bytes::Bytes::from(vec![b'a'; size]);
            let repeats = match size {
                s if s <= 100 * 1024 => 5,
                s if s <= limit => 3,
                _ => 2,
            };
            for case in &cases {
                let code = if size > limit { case.code_over_limit } else { case.code };
                for i in 0..repeats {
                    let what = format!("{protocol:?} {} {} with {size} B (#{i})", case.method, case.path);
                    let mut req = http.request(case.method.clone(), srv.url(case.path)).body(body.clone());
                    if case.authenticated {
                        req = req.bearer_auth(srv.admin_token());
                    }
                    let resp = req.send().await.unwrap_or_else(|e| panic!("{what}: no answer: {e:?}"));
                    assert_status(resp, protocol, code, &what).await;
                }
            }
        }
    }
}

/// A request body that sends one byte and then nothing for longer than any deadline here.
fn stalled_body() -> reqwest::Body {
    let chunks = futures::stream::unfold(0u8, |n| async move {
        match n {
            0 => Some((Ok::<_, std::io::Error>(bytes::Bytes::from_static(b"{")), 1)),
            _ => {
                tokio::time::sleep(Duration::from_secs(30)).await;
                None
            }
        }
    });
    reqwest::Body::wrap_stream(chunks)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_past_their_deadline_get_a_504_status() {
    let srv = TestServer::start_with(|c| c.request_timeout = Duration::from_millis(700)).await;
    let configmaps = "/api/v1/namespaces/default/configmaps";
    for protocol in PROTOCOLS {
        let http = client(&srv, protocol);
        // The server's own deadline, and a shorter one the client asks for (kubectl's `?timeout=`).
        for (query, deadline) in [
            ("", Duration::from_millis(700)),
            ("?timeout=200ms", Duration::from_millis(200)),
        ] {
            for i in 0..3 {
                let what = format!("{protocol:?} POST {configmaps}{query} with a stalled body (#{i})");
                let started = Instant::now();
                let resp = http
                    .post(srv.url(&format!("{configmaps}{query}")))
                    .bearer_auth(srv.admin_token())
                    .header("content-type", "application/json")
                    .body(stalled_body())
                    .send()
                    .await
                    .unwrap_or_else(|e| panic!("{what}: no answer: {e:?}"));
                let took = started.elapsed();
                assert!(
                    took >= deadline && took < Duration::from_secs(10),
                    "{what}: answered after {took:?}"
                );
                assert_status(resp, protocol, 504, &what).await;
            }
        }
    }
    // Watches are long-running: the request deadline does not end them.
    let http = client(&srv, Protocol::Http2);
    let mut watch = http
        .get(srv.url(&format!("{configmaps}?watch=true&timeoutSeconds=2")))
        .bearer_auth(srv.admin_token())
        .send()
        .await
        .unwrap();
    assert_eq!(watch.status().as_u16(), 200);
    let started = Instant::now();
    while watch.chunk().await.unwrap().is_some() {}
    assert!(
        started.elapsed() >= Duration::from_millis(1500),
        "the watch ran to its own timeout"
    );
}

/// `Accept` is honoured over the wire: protobuf for built-in kinds when preferred (errors too),
/// JSON where there is no protobuf form and JSON is acceptable, 406 Status where nothing is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_follow_accept_and_unacceptable_types_get_a_406_status() {
    const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";
    let srv = TestServer::start().await;
    let cases = [
        ("/api/v1/namespaces/default", PROTOBUF, 200, PROTOBUF),
        (
            "/api/v1/namespaces/default",
            "application/vnd.kubernetes.protobuf, */*",
            200,
            PROTOBUF,
        ),
        (
            "/api/v1/namespaces",
            "application/vnd.kubernetes.protobuf,application/json",
            200,
            PROTOBUF,
        ),
        ("/api/v1/namespaces/missing", PROTOBUF, 404, PROTOBUF),
        // kcp's own kinds have no protobuf form; Go clients list JSON too.
        (
            "/apis/tenancy.kcp.io/v1alpha1/workspaces",
            "application/vnd.kubernetes.protobuf,application/json",
            200,
            "application/json",
        ),
        (
            "/apis/tenancy.kcp.io/v1alpha1/workspaces",
            PROTOBUF,
            406,
            "application/json",
        ),
        ("/api/v1/namespaces", "application/yaml", 406, "application/json"),
        ("/api/v1/namespaces", "application/json", 200, "application/json"),
    ];
    for protocol in PROTOCOLS {
        let http = client(&srv, protocol);
        for (path, accept, code, content_type) in cases {
            let what = format!("{protocol:?} GET {path} Accept: {accept}");
            let resp = http
                .get(srv.url(path))
                .bearer_auth(srv.admin_token())
                .header("accept", accept)
                .send()
                .await
                .unwrap();
            assert_eq!(resp.status().as_u16(), code, "{what}");
            assert_eq!(resp.headers()["content-type"], content_type, "{what}");
            let body = resp.bytes().await.unwrap();
            if content_type == PROTOBUF {
                assert!(body.starts_with(b"k8s\0"), "{what}: not an enveloped protobuf body");
            } else if code == 406 {
                let status: Value = serde_json::from_slice(&body).unwrap();
                assert_eq!(
                    (status["kind"].as_str(), status["reason"].as_str()),
                    (Some("Status"), Some("NotAcceptable")),
                    "{what}"
                );
                assert!(
                    status["message"].as_str().unwrap().contains(PROTOBUF),
                    "{what}: {status}"
                );
            }
        }
    }
}

/// The protobuf tables cover every field the server keeps: every built-in resource, listed across
/// all logical clusters (bootstrap RBAC, namespaces, tokens, …) and fetched after a rich write,
/// encodes in protobuf (a table gap would make it 406 here).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_built_in_resource_the_server_holds_encodes_in_protobuf() {
    const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";
    let srv = TestServer::start().await;
    let http = client(&srv, Protocol::Http2);
    let rich = [
        (
            "/api/v1/namespaces/default/serviceaccounts",
            serde_json::json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "sa", "labels": {"a": "b"}},
                "secrets": [{"name": "s"}], "imagePullSecrets": [{"name": "p"}], "automountServiceAccountToken": false}),
        ),
        (
            "/api/v1/namespaces/default/events",
            serde_json::json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"},
                "involvedObject": {"kind": "ConfigMap", "name": "x", "namespace": "default"}, "reason": "R", "message": "m",
                "source": {"component": "c"}, "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:00:00Z",
                "count": 2, "type": "Normal", "eventTime": "2026-01-01T00:00:00.000001Z", "reportingComponent": "c", "reportingInstance": "i"}),
        ),
        (
            "/apis/events.k8s.io/v1/namespaces/default/events",
            serde_json::json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e2"},
                "eventTime": "2026-01-01T00:00:00.000001Z", "reportingController": "c", "reportingInstance": "i", "action": "A",
                "reason": "R", "regarding": {"kind": "ConfigMap", "name": "x"}, "note": "n", "type": "Warning"}),
        ),
        (
            "/apis/coordination.k8s.io/v1/namespaces/default/leases",
            serde_json::json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"},
                "spec": {"holderIdentity": "h", "leaseDurationSeconds": 15, "acquireTime": "2026-01-01T00:00:00.000001Z",
                         "renewTime": "2026-01-01T00:00:00.000002Z", "leaseTransitions": 1}}),
        ),
        (
            "/apis/rbac.authorization.k8s.io/v1/clusterroles",
            serde_json::json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "agg"},
                "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"x": "y"}}]}, "rules": []}),
        ),
    ];
    for (path, obj) in rich {
        let resp = http
            .post(srv.url(path))
            .bearer_auth(srv.admin_token())
            .header("accept", PROTOBUF)
            .json(&obj)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status().as_u16(), 201, "POST {path}");
        assert_eq!(resp.headers()["content-type"], PROTOBUF, "POST {path}");
    }
    for path in [
        "/api/v1/namespaces",
        "/api/v1/configmaps",
        "/api/v1/secrets",
        "/api/v1/serviceaccounts",
        "/api/v1/events",
        "/apis/events.k8s.io/v1/events",
        "/apis/coordination.k8s.io/v1/leases",
        "/apis/rbac.authorization.k8s.io/v1/roles",
        "/apis/rbac.authorization.k8s.io/v1/rolebindings",
        "/apis/rbac.authorization.k8s.io/v1/clusterroles",
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
    ] {
        let resp = http
            .get(srv.url(&format!("/clusters/*{path}")))
            .bearer_auth(srv.admin_token())
            .header("accept", PROTOBUF)
            .send()
            .await
            .unwrap();
        let code = resp.status().as_u16();
        let content_type = resp.headers()["content-type"].to_str().unwrap().to_string();
        let body = resp.bytes().await.unwrap();
        assert_eq!(
            (code, content_type.as_str()),
            (200, PROTOBUF),
            "list {path} across all clusters: {}",
            String::from_utf8_lossy(&body)
        );
        assert!(body.starts_with(b"k8s\0"), "{path}");
    }
}

/// HTTP/2 frames are coalesced under the connection (`faros_core::coalesce`): responses that finish
/// together, lists many frames long and a watch's lone small event must all still arrive whole, in
/// order and without waiting for more traffic — over HTTP/2 exactly as over HTTP/1.1.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_answers_long_lists_and_lone_watch_events_arrive_whole_over_http2() {
    const OBJECTS: usize = 200;
    let srv = TestServer::start().await;
    let h2 = client(&srv, Protocol::Http2);
    let url = srv.url("/api/v1/namespaces/default/configmaps");
    let payload = |i: usize| format!("{i:08}").repeat(1024);
    // 8 KiB each, created 20 at a time over one connection: answers finish in the same group commit.
    let creates = (0..OBJECTS).map(|i| {
        let (h2, url, token) = (h2.clone(), url.clone(), srv.admin_token());
        let body = serde_json::json!({"metadata": {"name": format!("big-{i:03}")}, "data": {"v": payload(i)}});
        async move {
            let resp = h2.post(&url).bearer_auth(&token).json(&body).send().await.unwrap();
            assert_eq!(resp.version(), Version::HTTP_2);
            assert_eq!(resp.status().as_u16(), 201, "create big-{i:03}");
            let created: Value = resp.json().await.unwrap();
            assert_eq!(created["metadata"]["name"], format!("big-{i:03}"));
        }
    });
    futures::stream::iter(creates)
        .buffer_unordered(20)
        .collect::<Vec<()>>()
        .await;

    // One list of ~1.6 MB (~100 frames), the same over both protocols.
    let mut lists = Vec::new();
    for protocol in PROTOCOLS {
        let resp = client(&srv, protocol)
            .get(&url)
            .bearer_auth(srv.admin_token())
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status().as_u16(), 200);
        let list: Value = resp.json().await.unwrap();
        let items: Vec<(String, String)> = list["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|o| o["metadata"]["name"].as_str().unwrap().starts_with("big-"))
            .map(|o| {
                (
                    o["metadata"]["name"].as_str().unwrap().into(),
                    o["data"]["v"].as_str().unwrap().into(),
                )
            })
            .collect();
        assert_eq!(items.len(), OBJECTS, "{protocol:?}");
        for (i, (name, v)) in items.iter().enumerate() {
            assert_eq!(
                (name.as_str(), v.as_str()),
                (format!("big-{i:03}").as_str(), payload(i).as_str())
            );
        }
        lists.push(list);
    }
    let rv = lists[0]["metadata"]["resourceVersion"].as_str().unwrap().to_string();

    // A watch's single small event must go out on its own, not wait for the next frame.
    let watch = h2
        .get(format!("{url}?watch=true&resourceVersion={rv}"))
        .bearer_auth(srv.admin_token())
        .send()
        .await
        .unwrap();
    assert_eq!(watch.version(), Version::HTTP_2);
    let resp = h2
        .post(&url)
        .bearer_auth(srv.admin_token())
        .json(&serde_json::json!({"metadata": {"name": "lone"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 201);
    let mut events = watch.bytes_stream();
    let mut seen = Vec::new();
    // The client's 60 s timeout bounds this wait; the event is due at once.
    while !String::from_utf8_lossy(&seen).contains("\"name\":\"lone\"") {
        let chunk = events.next().await.expect("the watch ended before its event").unwrap();
        seen.extend_from_slice(&chunk);
    }
    let line = seen
        .split(|b| *b == b'\n')
        .find(|l| String::from_utf8_lossy(l).contains("\"name\":\"lone\""))
        .unwrap();
    let event: Value = serde_json::from_slice(line).unwrap();
    assert_eq!(
        (event["type"].as_str(), event["object"]["metadata"]["name"].as_str()),
        (Some("ADDED"), Some("lone"))
    );
}
