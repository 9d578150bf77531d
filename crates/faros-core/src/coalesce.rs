//! [`Coalesce`]: a write buffer under the HTTP connection that turns the protocol's flush after each
//! frame into one flush per burst.
//!
//! Why: the h2 crate flushes its transport after every DATA frame larger than a few hundred bytes
//! (it hands the payload over by reference, then must flush before it can take the next frame). A
//! frame carries at most 16 KiB when the client keeps HTTP/2's default frame size, as client-go does,
//! so a list of 10k objects became ~1 100 TLS records and `writev` calls, and 64 responses finishing in
//! one group commit became 64. Go's HTTP/2 server buffers frames and flushes when its write queue is
//! empty; this wrapper does the same from below, without knowing the protocol.
//!
//! Servers put it under HTTP/2 connections only: hyper's HTTP/1 already writes a response's head and
//! body together, so there it would add a copy and a poll and save nothing.
//!
//! The rule: a flush that follows new writes is deferred (the bytes stay buffered and the task is
//! woken, so it is polled again), and a flush with nothing written since the last one is real. A
//! protocol that is still producing writes again before it flushes again, so its frames coalesce; one
//! that has nothing more to say flushes twice in a row (hyper's HTTP/1 and HTTP/2 both flush at the end
//! of every poll), and everything buffered goes out then. Bytes never wait for more than one extra
//! poll of the connection, and shutdown writes out the buffer first. The buffer is bounded: a write
//! that would overflow it writes the buffer out first, and a write larger than the buffer passes
//! through. It is held only during a burst (taken at its first write, given back at its real flush),
//! so idle connections, such as a hundred controllers' watches, cost no buffer each.

use std::io::{self, IoSlice};
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// How much is held before it is written out without a flush: four full TLS records, which rustls
/// hands to the socket in one vectored write.
pub const CAPACITY: usize = 64 * 1024;

/// A transport whose writes are buffered and whose flushes are coalesced per burst (module docs).
pub struct Coalesce<T> {
    inner: T,
    buf: Vec<u8>,
    /// How much of `buf` the inner transport has taken already (a write out may be interrupted).
    written_out: usize,
    /// Whether anything was written since the last flush: the next flush is then deferred.
    fresh: bool,
}

impl<T> Coalesce<T> {
    pub fn new(inner: T) -> Self {
        Self {
            inner,
            buf: Vec::new(),
            written_out: 0,
            fresh: false,
        }
    }

    fn buffered(&self) -> usize {
        self.buf.len() - self.written_out
    }

    /// Appends to the buffer, taking one of [`CAPACITY`] at a burst's first write.
    fn keep(&mut self, data: &[u8]) {
        if self.buf.capacity() == 0 {
            self.buf.reserve_exact(CAPACITY);
        }
        self.buf.extend_from_slice(data);
        self.fresh = true;
    }
}

impl<T: AsyncWrite + Unpin> Coalesce<T> {
    /// Writes the whole buffer to the inner transport (without flushing it).
    fn poll_write_out(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.written_out < self.buf.len() {
            let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &self.buf[self.written_out..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.written_out += n;
        }
        self.buf.clear();
        self.written_out = 0;
        Poll::Ready(Ok(()))
    }

    /// Makes room for `len` more bytes; `false` when they are better written straight through.
    fn poll_room(&mut self, cx: &mut Context<'_>, len: usize) -> Poll<io::Result<bool>> {
        if self.buffered() + len > CAPACITY {
            ready!(self.poll_write_out(cx))?;
        }
        Poll::Ready(Ok(len < CAPACITY))
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Coalesce<T> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Coalesce<T> {
    /// One slice is a vectored write of one: both paths buffer, bound and pass through alike.
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        self.poll_write_vectored(cx, &[IoSlice::new(data)])
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        let len = bufs.iter().map(|b| b.len()).sum();
        if !ready!(this.poll_room(cx, len))? {
            return Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        }
        for b in bufs {
            this.keep(b);
        }
        Poll::Ready(Ok(len))
    }

    /// Taking a frame's header and payload in one call keeps h2 from copying payloads of more than
    /// 256 bytes into its own buffer; they are copied once, here.
    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if std::mem::take(&mut this.fresh) && this.buffered() > 0 {
            // More may follow in this poll; if not, the wake brings the flush that writes it out.
            cx.waker().wake_by_ref();
            return Poll::Ready(Ok(()));
        }
        ready!(this.poll_write_out(cx))?;
        // The burst is over: an idle connection keeps no buffer.
        this.buf = Vec::new();
        Pin::new(&mut this.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        ready!(this.poll_write_out(cx))?;
        this.fresh = false;
        Pin::new(&mut this.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::{Wake, Waker};

    use super::*;

    /// An inner transport that records each write and flush, and can refuse writes (`Pending`).
    #[derive(Default)]
    struct Recorder {
        writes: Vec<Vec<u8>>,
        flushes: usize,
        shut: bool,
        blocked: bool,
    }

    impl AsyncRead for Recorder {
        fn poll_read(self: Pin<&mut Self>, _: &mut Context<'_>, _: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    impl AsyncWrite for Recorder {
        fn poll_write(mut self: Pin<&mut Self>, _: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
            if self.blocked {
                return Poll::Pending;
            }
            self.writes.push(data.to_vec());
            Poll::Ready(Ok(data.len()))
        }
        fn poll_write_vectored(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            bufs: &[IoSlice<'_>],
        ) -> Poll<io::Result<usize>> {
            if self.blocked {
                return Poll::Pending;
            }
            let data: Vec<u8> = bufs.iter().flat_map(|b| b.iter().copied()).collect();
            self.writes.push(data);
            Poll::Ready(Ok(bufs.iter().map(|b| b.len()).sum()))
        }
        fn poll_flush(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            self.flushes += 1;
            Poll::Ready(Ok(()))
        }
        fn poll_shutdown(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            self.shut = true;
            Poll::Ready(Ok(()))
        }
    }

    #[derive(Default)]
    struct Wakes(AtomicUsize);
    impl Wake for Wakes {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Steps of a scenario: what the protocol does to the transport.
    #[derive(Clone, Copy)]
    enum Step {
        Write(usize),
        Vectored(usize, usize),
        Flush,
        Shutdown,
        Block,
        Unblock,
    }

    struct Seen {
        /// Lengths of the inner transport's writes.
        writes: Vec<usize>,
        flushes: usize,
        wakes: usize,
        shut: bool,
        /// Results of each step: `None` when it was pending.
        ready: Vec<bool>,
    }

    fn run(steps: &[Step]) -> Seen {
        let wakes = Arc::new(Wakes::default());
        let waker = Waker::from(wakes.clone());
        let mut cx = Context::from_waker(&waker);
        let mut c = Coalesce::new(Recorder::default());
        let mut ready = Vec::new();
        let mut sent = 0u8;
        let mut next = |len: usize| -> Vec<u8> {
            (0..len)
                .map(|_| {
                    sent = sent.wrapping_add(1);
                    sent
                })
                .collect()
        };
        let mut expected = Vec::new();
        for step in steps {
            let p = Pin::new(&mut c);
            let r = match *step {
                Step::Write(n) => {
                    let data = next(n);
                    let r = p.poll_write(&mut cx, &data);
                    if let Poll::Ready(Ok(n)) = r {
                        expected.extend_from_slice(&data[..n]);
                    }
                    r.is_ready()
                }
                Step::Vectored(a, b) => {
                    let (x, y) = (next(a), next(b));
                    let r = p.poll_write_vectored(&mut cx, &[IoSlice::new(&x), IoSlice::new(&y)]);
                    if let Poll::Ready(Ok(n)) = r {
                        expected.extend_from_slice(&[x, y].concat()[..n]);
                    }
                    r.is_ready()
                }
                Step::Flush => p.poll_flush(&mut cx).is_ready(),
                Step::Shutdown => p.poll_shutdown(&mut cx).is_ready(),
                Step::Block => {
                    c.inner.blocked = true;
                    true
                }
                Step::Unblock => {
                    c.inner.blocked = false;
                    true
                }
            };
            ready.push(r);
        }
        // Whatever reached the inner transport is the protocol's bytes, in order, nothing lost or doubled.
        let out: Vec<u8> = c.inner.writes.concat();
        assert_eq!(out, expected[..out.len()], "bytes reach the transport in order");
        Seen {
            writes: c.inner.writes.iter().map(Vec::len).collect(),
            flushes: c.inner.flushes,
            wakes: wakes.0.load(Ordering::SeqCst),
            shut: c.inner.shut,
            ready,
        }
    }

    use Step::*;

    #[test]
    fn frames_flushed_one_by_one_go_out_in_one_write() {
        // h2's pattern: each 16 KiB frame (header + payload) is followed by a flush, and the poll ends
        // with a flush that follows no write.
        let f = 9 + 16 * 1024;
        let s = run(&[
            Vectored(9, f - 9),
            Flush,
            Vectored(9, f - 9),
            Flush,
            Vectored(9, 100),
            Flush,
            Flush,
        ]);
        assert_eq!(s.writes, vec![2 * f + 109]);
        assert_eq!(s.flushes, 1);
        assert_eq!(s.wakes, 3, "each deferred flush wakes the task");
        assert!(s.ready.iter().all(|r| *r));
    }

    #[test]
    fn a_deferred_flush_is_real_the_next_time_round() {
        let s = run(&[Write(10), Flush]);
        assert_eq!(
            (s.writes.len(), s.flushes, s.wakes),
            (0, 0, 1),
            "deferred, and the task woken"
        );
        let s = run(&[Write(10), Flush, Flush]);
        assert_eq!((s.writes, s.flushes), (vec![10], 1));
        let s = run(&[Flush]);
        assert_eq!(
            (s.writes.len(), s.flushes, s.wakes),
            (0, 1, 0),
            "nothing buffered: a plain flush"
        );
    }

    #[test]
    fn the_buffer_is_bounded() {
        let half = CAPACITY / 2;
        // A write that would overflow writes the buffer out first; one of CAPACITY or more passes through.
        let s = run(&[Write(half), Write(half), Write(1), Write(CAPACITY), Flush]);
        assert_eq!(s.writes, vec![2 * half, 1, CAPACITY]);
        assert_eq!(s.flushes, 1, "the flush after a pass-through write is real");
        let s = run(&[Vectored(half, half + 1)]);
        assert_eq!(s.writes, vec![CAPACITY + 1]);
    }

    #[test]
    fn a_blocked_transport_keeps_the_bytes_and_the_order() {
        let half = CAPACITY / 2;
        let s = run(&[
            Write(half),
            Write(half),
            Block,
            Write(10),
            Flush,
            Flush,
            Unblock,
            Write(10),
            Flush,
            Flush,
        ]);
        assert_eq!(
            s.ready,
            vec![true, true, true, false, true, false, true, true, true, true]
        );
        assert_eq!(s.writes, vec![2 * half, 10]);
        assert_eq!(s.flushes, 1);
    }

    #[test]
    fn only_a_burst_holds_a_buffer() {
        let wakes = Arc::new(Wakes::default());
        let waker = Waker::from(wakes);
        let mut cx = Context::from_waker(&waker);
        let mut c = Coalesce::new(Recorder::default());
        assert_eq!(c.buf.capacity(), 0, "a new connection holds none");
        let _ = Pin::new(&mut c).poll_write(&mut cx, b"frame");
        assert!(c.buf.capacity() >= CAPACITY, "the burst's first write takes one whole");
        let _ = Pin::new(&mut c).poll_flush(&mut cx);
        assert!(c.buf.capacity() >= CAPACITY, "kept while the burst may go on");
        let _ = Pin::new(&mut c).poll_flush(&mut cx);
        assert_eq!(
            (c.buf.capacity(), c.inner.writes.len()),
            (0, 1),
            "given back at the real flush"
        );
    }

    #[test]
    fn shutdown_writes_out_what_is_buffered() {
        let s = run(&[Write(10), Flush, Write(5), Shutdown]);
        assert_eq!(s.writes, vec![15]);
        assert!(s.shut);
    }
}
