//! Watch: a chunked stream of one JSON event per line, or of length-prefixed protobuf events for
//! Go clients that prefer protobuf when the kind has a protobuf form.
//!
//! Semantics are kube-apiserver's (event history and expiry: docs/embedded-kcp.md#storage): start
//! after `resourceVersion` (or with synthetic ADDED events for the current state when it is
//! unset/"0" or `sendInitialEvents=true`), translate selector
//! transitions into ADDED/DELETED, send bookmarks when asked, report a too-old resourceVersion as an
//! in-stream ERROR event with code 410 (kube-rs relists only on that), and end the body cleanly
//! after `timeoutSeconds`.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use faros_core::status::Status;
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::RequestContext;
use super::read::{ObjectFilter, selector_filter};
use super::respond::{Representation, object_repr};
use crate::registry::ResourceDef;
use crate::store::{EventType, ListQuery, WatchFilter};

/// Kubernetes' default when a client does not say: a random 30–60 min; a fixed 30 min is fine.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1800);
/// How often an idle watch with bookmarks enabled gets a bookmark.
const BOOKMARK_EVERY: Duration = Duration::from_secs(10);

pub fn watch(ctx: RequestContext, def: Arc<ResourceDef>, ns: Option<String>) -> Result<Response, Status> {
    let filter = selector_filter(&ctx, &def)?;
    let requested = ctx.params.resource_version()?;
    let send_initial = ctx.params.send_initial_events();
    if send_initial && ctx.params.resource_version_match() != Some("NotOlderThan") {
        return Err(Status::failure(
            422,
            "Invalid",
            "sendInitialEvents is only supported with resourceVersionMatch=NotOlderThan",
        ));
    }
    let timeout = ctx
        .params
        .timeout_seconds()?
        .map(Duration::from_secs)
        .unwrap_or(DEFAULT_TIMEOUT);
    let bookmarks = ctx.params.allow_bookmarks();
    let repr = Representation::from_headers(&ctx.headers);
    let protobuf = repr == Representation::Object
        && super::respond::Accepts::from_headers(&ctx.headers).protobuf_first
        && super::protobuf::supports(&def.api_version(), &def.kind);
    let cluster = if ctx.is_wildcard() {
        None
    } else {
        Some(ctx.cluster.clone())
    };
    let namespace = if def.namespaced { ns } else { None };
    let initial = send_initial || requested.is_none_or(|rv| rv == 0);
    let (tx, rx) = mpsc::channel::<Bytes>(64);
    let state = ctx.state.clone();
    state.metrics.watchers.inc();
    tokio::spawn(async move {
        let sink = Sink {
            tx,
            def: def.clone(),
            repr,
            protobuf,
        };
        let deadline = tokio::time::Instant::now() + timeout;
        let _ = tokio::time::timeout_at(
            deadline,
            run(
                &state,
                &sink,
                &def,
                cluster,
                namespace,
                filter,
                requested,
                initial,
                send_initial,
                bookmarks,
            ),
        )
        .await;
        state.metrics.watchers.dec();
    });
    let stream = tokio_stream::wrappers::ReceiverStream::new(rx).map(Ok::<_, std::convert::Infallible>);
    let mut resp = Response::new(Body::from_stream(stream));
    resp.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static(if protobuf {
            super::protobuf::WATCH_MEDIA_TYPE
        } else {
            "application/json"
        }),
    );
    Ok(resp)
}

struct Sink {
    tx: mpsc::Sender<Bytes>,
    def: Arc<ResourceDef>,
    repr: Representation,
    /// Protobuf frames instead of JSON lines.
    protobuf: bool,
}

impl Sink {
    /// Sends one event line; false when the client went away.
    async fn send(&self, event_type: &str, object: Value, rv: u64) -> bool {
        let object = if event_type != "ERROR" && event_type != "BOOKMARK" && self.def.converts_on_read() {
            match self.def.served(object) {
                Ok(o) => o,
                Err(e) => serde_json::to_value(&e).unwrap_or_default(),
            }
        } else {
            object
        };
        let object = if event_type == "ERROR" || event_type == "BOOKMARK" {
            object
        } else {
            object_repr(&self.def, object, self.repr, rv)
        };
        if self.protobuf {
            // Every stored field has a protobuf form; should one not, the client learns it in-stream.
            let frame = match super::protobuf::encode_watch_event(event_type, &object) {
                Ok(frame) => frame,
                Err(e) => {
                    let status = serde_json::to_value(Status::internal(e.to_string())).unwrap_or_default();
                    super::protobuf::encode_watch_event("ERROR", &status).unwrap_or_default()
                }
            };
            return self.tx.send(Bytes::from(frame)).await.is_ok();
        }
        let mut line = serde_json::to_vec(&json!({"type": event_type, "object": object})).unwrap_or_default();
        line.push(b'\n');
        self.tx.send(Bytes::from(line)).await.is_ok()
    }

    async fn bookmark(&self, rv: u64, initial_end: bool) -> bool {
        let mut metadata = json!({"resourceVersion": rv.to_string()});
        if initial_end {
            metadata["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        let object = match self.repr {
            Representation::Object => {
                json!({"kind": self.def.kind, "apiVersion": self.def.api_version(), "metadata": metadata})
            }
            _ => json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": metadata}),
        };
        self.send("BOOKMARK", object, rv).await
    }

    async fn too_old(&self, message: String) {
        let status = Status::expired(message);
        self.send("ERROR", serde_json::to_value(&status).unwrap_or_default(), 0)
            .await;
    }
}

#[allow(clippy::too_many_arguments)]
async fn run(
    state: &super::ServerState,
    sink: &Sink,
    def: &ResourceDef,
    cluster: Option<String>,
    namespace: Option<String>,
    filter: Option<ObjectFilter>,
    requested: Option<u64>,
    initial: bool,
    send_initial: bool,
    bookmarks: bool,
) {
    let matches = |obj: &Value| filter.as_ref().is_none_or(|f| f(obj));
    let mut start = requested.unwrap_or(0);
    if initial {
        let query = ListQuery {
            group: def.group.clone(),
            resource: def.resource.clone(),
            cluster: cluster.clone(),
            namespace: namespace.clone(),
            limit: None,
            continue_token: None,
            filter: filter.clone(),
            name: None,
        };
        let page = match state.store.list(&query) {
            Ok(p) => p,
            Err(e) => {
                sink.too_old(e.to_string()).await;
                return;
            }
        };
        start = page.resource_version;
        for item in page.items {
            if !sink.send("ADDED", item, start).await {
                return;
            }
        }
        if send_initial && !sink.bookmark(start, true).await {
            return;
        }
    }
    let watch_filter = WatchFilter {
        group: def.group.clone(),
        resource: def.resource.clone(),
        cluster,
        namespace,
    };
    let mut stream = match state.store.watch(start, watch_filter) {
        Ok(s) => s,
        Err(e) => {
            sink.too_old(e.to_string()).await;
            return;
        }
    };
    let mut ticker = tokio::time::interval(BOOKMARK_EVERY);
    ticker.tick().await;
    loop {
        tokio::select! {
            next = stream.next() => {
                let event = match next {
                    None => return,
                    Some(Err(e)) => {
                        sink.too_old(e.to_string()).await;
                        return;
                    }
                    Some(Ok(e)) => e,
                };
                let now = matches(&event.object);
                let before = event.prev.as_deref().is_some_and(&matches);
                let kind = match event.event_type {
                    EventType::Added if now => "ADDED",
                    EventType::Modified if now && before => "MODIFIED",
                    EventType::Modified if now => "ADDED",
                    EventType::Modified if before => "DELETED",
                    EventType::Deleted if now || before => "DELETED",
                    _ => continue,
                };
                if !sink.send(kind, (*event.object).clone(), event.rv).await {
                    return;
                }
            }
            _ = ticker.tick(), if bookmarks => {
                if !sink.bookmark(stream.bookmark_rv(), false).await {
                    return;
                }
            }
            _ = sink.tx.closed() => return,
        }
    }
}
