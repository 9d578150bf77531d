//! Answers given before a request body was read must still reach HTTP/2 clients.
//!
//! When a handler answers early (401 before reading a heartbeat's body, 503 during start-up, 404 for
//! an unknown route) and drops the request body while the client is still sending it, the HTTP/2
//! stream is reset and many clients (curl, browsers) report a framing error instead of the answer.
//! [`drain_on_drop`] wraps the body so that, if it is dropped unfinished, a background task keeps
//! reading and discarding it — bounded in bytes and time — so the stream ends normally after the
//! response. On HTTP/1.1 hyper instead closes the connection after such an answer; a client still
//! writing a large body then sees a broken pipe rather than the answer, so servers drain there too.
//!
//! Shared by the servers that answer early (the hub API and the embedded kcp), behind the `axum`
//! feature. The one IO this crate does outside the client factory and the wait helper: reading and
//! discarding a body the serving task already gave up on.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use hyper::body::{Body as HttpBody, Frame, SizeHint};

/// Most bytes read and discarded after an early answer (beyond it the stream is reset as before).
pub const DRAIN_MAX_BYTES: usize = 32 * 1024 * 1024;
/// Longest a drain runs.
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);

/// `body`, drained in the background if it is dropped before its end.
pub fn drain_on_drop(body: Body) -> Body {
    Body::new(DrainOnDrop {
        inner: Some(body),
        ended: false,
    })
}

struct DrainOnDrop {
    inner: Option<Body>,
    ended: bool,
}

impl HttpBody for DrainOnDrop {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let Some(inner) = self.inner.as_mut() else {
            return Poll::Ready(None);
        };
        let polled = Pin::new(inner).poll_frame(cx);
        if let Poll::Ready(None) = polled {
            self.ended = true;
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.ended || self.inner.as_ref().is_none_or(HttpBody::is_end_stream)
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.as_ref().map(HttpBody::size_hint).unwrap_or_default()
    }
}

impl Drop for DrainOnDrop {
    fn drop(&mut self) {
        let Some(mut body) = self.inner.take() else { return };
        if self.ended || body.is_end_stream() {
            return;
        }
        // Outside a runtime (never on the serving path) there is nothing to drain with.
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        runtime.spawn(async move {
            let mut read = 0usize;
            let _ = tokio::time::timeout(DRAIN_TIMEOUT, async {
                while let Some(Ok(frame)) = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
                    read += frame.data_ref().map_or(0, Bytes::len);
                    if read > DRAIN_MAX_BYTES {
                        break;
                    }
                }
            })
            .await;
        });
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A body of `chunks` chunks that counts how many were read.
    fn counted(chunks: usize, read: Arc<AtomicUsize>) -> Body {
        let stream = futures::stream::iter((0..chunks).map(move |_| {
            read.fetch_add(1, Ordering::SeqCst);
            Ok::<_, std::io::Error>(Bytes::from_static(b"0123456789"))
        }));
        Body::from_stream(stream)
    }

    #[tokio::test]
    async fn an_unfinished_body_is_read_to_its_end_after_drop() {
        let read = Arc::new(AtomicUsize::new(0));
        let mut body = drain_on_drop(counted(100, read.clone()));
        let _first = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx))
            .await
            .unwrap()
            .unwrap();
        drop(body);
        tokio::time::timeout(Duration::from_secs(5), async {
            while read.load(Ordering::SeqCst) < 100 {
                tokio::task::yield_now().await;
            }
        })
        .await
        .unwrap();
    }

    #[tokio::test]
    async fn a_finished_body_is_passed_through() {
        let read = Arc::new(AtomicUsize::new(0));
        let body = drain_on_drop(counted(3, read.clone()));
        let bytes = axum::body::to_bytes(body, usize::MAX).await.unwrap();
        assert_eq!(bytes.len(), 30);
        assert_eq!(read.load(Ordering::SeqCst), 3);
    }
}
