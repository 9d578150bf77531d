//! A client resuming a request's response stream on a replica that cannot replay it.
//!
//! A `tools/call` answers on the SSE stream of its POST. When that stream breaks (its replica
//! died), the client resumes it with a GET carrying `Last-Event-ID` (MCP streamable HTTP,
//! "Resumability and Redelivery"). Only the replica that served the POST holds the stream; the
//! balancer sends the GET anywhere, and the replica reached restores the session from its record
//! but has no such stream. rmcp then answers `200` with an empty event stream, which a client takes
//! for a clean close and resumes again after the `retry` interval, forever: the call never gets an
//! answer.
//!
//! Such a resume is answered `405 Method Not Allowed` instead: the spec's answer to a GET for which
//! the server offers no event stream. rmcp's client stops resuming on it and fails the request
//! ("response stream closed before its final response"); whether to send it again is the caller's
//! decision, as for any request that failed in flight (the call may or may not have run). `404`
//! would not do: it means "session gone", and the session is fine; and rmcp's client retries a 404
//! resume like a network error, forever.

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use futures::{FutureExt, StreamExt};
use http::{HeaderMap, Method, StatusCode, header};
use http_body_util::BodyExt;

/// `Last-Event-ID`, as rmcp's client sends it.
const LAST_EVENT_ID: &str = "last-event-id";

/// Whether a request resumes one request's response stream (IO-free; table-tested): a GET whose
/// `Last-Event-ID` is one rmcp gives events of a request's stream (`<index>/<stream>`); the
/// session's standalone stream's events are numbered `<index>` and any replica can reopen it.
pub fn resumes_a_request_stream(method: &Method, headers: &HeaderMap) -> bool {
    method == Method::GET
        && headers
            .get(LAST_EVENT_ID)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|id| id.contains('/'))
}

/// `resp` unless it is rmcp's answer to a resume it could not replay: an event stream that has
/// ended before its first event. A stream this replica holds is either replayed at once (its first
/// event is ready) or still open; only a stream it does not hold (or one finished and fully
/// delivered, which a client has no reason to resume) ends at once. Polls the body once, without
/// waiting.
pub async fn unless_unreplayable(resp: Response) -> Response {
    if resp.status() != StatusCode::OK {
        return resp;
    }
    let (parts, mut body) = resp.into_parts();
    match body.frame().now_or_never() {
        // Ended at once: nothing to replay here.
        Some(None) => not_offered(),
        Some(Some(Ok(first))) => {
            let rest = body.into_data_stream();
            let first = futures::stream::iter(first.into_data().ok().map(Ok::<_, axum::Error>));
            Response::from_parts(parts, Body::from_stream(first.chain(rest)))
        }
        Some(Some(Err(e))) => {
            tracing::debug!(error = %e, "MCP resume stream failed");
            not_offered()
        }
        None => Response::from_parts(parts, body),
    }
}

fn not_offered() -> Response {
    (
        StatusCode::METHOD_NOT_ALLOWED,
        [(header::ALLOW, "POST, DELETE")],
        "this replica does not hold the response stream named by Last-Event-ID (its replica stopped); send the request again",
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn only_a_get_resuming_a_request_stream_counts() {
        for (method, id, want) in [
            (Method::GET, Some("0/3"), true),
            (Method::GET, Some("12/0"), true),
            (Method::GET, Some("4"), false),
            (Method::GET, None, false),
            (Method::POST, Some("0/3"), false),
            (Method::DELETE, Some("0/3"), false),
        ] {
            let mut headers = HeaderMap::new();
            if let Some(id) = id {
                headers.insert("Last-Event-ID", id.parse().unwrap());
            }
            assert_eq!(resumes_a_request_stream(&method, &headers), want, "{method} {id:?}");
        }
    }

    fn sse(body: Body) -> Response {
        Response::builder()
            .header(header::CONTENT_TYPE, "text/event-stream")
            .body(body)
            .unwrap()
    }

    #[tokio::test]
    async fn an_empty_stream_becomes_405_a_replayed_or_open_one_is_kept() {
        let ended = unless_unreplayable(sse(Body::empty())).await;
        assert_eq!(ended.status(), StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(ended.headers()[header::ALLOW], "POST, DELETE");

        let replayed = unless_unreplayable(sse(Body::from("id: 1/3\ndata: {}\n\n"))).await;
        assert_eq!(replayed.status(), StatusCode::OK);
        let bytes = replayed.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(&bytes[..], b"id: 1/3\ndata: {}\n\n", "the first event is not lost");

        let (tx, rx) = futures::channel::mpsc::unbounded::<Result<bytes::Bytes, std::io::Error>>();
        let open = unless_unreplayable(sse(Body::from_stream(rx))).await;
        assert_eq!(open.status(), StatusCode::OK, "a stream still open is the one resumed");
        tx.unbounded_send(Ok(bytes::Bytes::from_static(b"data: x\n\n")))
            .unwrap();
        drop(tx);
        let bytes = open.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(&bytes[..], b"data: x\n\n");

        let error = Response::builder()
            .status(StatusCode::NOT_FOUND)
            .body(Body::empty())
            .unwrap();
        assert_eq!(
            unless_unreplayable(error).await.status(),
            StatusCode::NOT_FOUND,
            "not an event stream"
        );
    }
}
