//! Bodies of list responses, streamed in chunks as the client reads them instead of assembled
//! whole: the first bytes leave at once, and a list of thousands of items needs no buffer of its
//! full size (which a big list allocated, and faulted in, afresh every time).
//!
//! This module only cuts the pieces it is given into chunks; what goes into a list (and in which
//! encoding) is the caller's.

use std::convert::Infallible;

use axum::body::Body;
use bytes::Bytes;

/// Size a chunk is filled to before it is handed on (several HTTP/2 frames, a few TLS records).
pub const CHUNK: usize = 64 * 1024;

/// A body of `head`, then every item as `write_item` appends it (with its index), then `tail`.
pub fn streamed<T, W>(head: Vec<u8>, items: Vec<T>, tail: &'static [u8], write_item: W) -> Body
where
    T: Send + 'static,
    W: FnMut(&mut Vec<u8>, usize, &T) + Send + 'static,
{
    let chunks = Chunks {
        head: Some(head),
        items: items.into_iter().enumerate(),
        tail: Some(tail),
        write_item,
    };
    Body::from_stream(futures::stream::iter(chunks.map(Ok::<_, Infallible>)))
}

/// The chunks of one body, produced on demand.
struct Chunks<T, W> {
    head: Option<Vec<u8>>,
    items: std::iter::Enumerate<std::vec::IntoIter<T>>,
    /// `None` once written: the body has ended.
    tail: Option<&'static [u8]>,
    write_item: W,
}

impl<T, W: FnMut(&mut Vec<u8>, usize, &T)> Iterator for Chunks<T, W> {
    type Item = Bytes;

    fn next(&mut self) -> Option<Bytes> {
        let tail = self.tail?;
        let mut chunk = self.head.take().unwrap_or_default();
        chunk.reserve(CHUNK);
        while chunk.len() < CHUNK {
            match self.items.next() {
                Some((i, item)) => (self.write_item)(&mut chunk, i, &item),
                None => {
                    chunk.extend_from_slice(tail);
                    self.tail = None;
                    break;
                }
            }
        }
        Some(Bytes::from(chunk))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    async fn collect(body: Body) -> (Vec<u8>, usize) {
        use futures::StreamExt;
        let mut stream = body.into_data_stream();
        let (mut all, mut chunks) = (Vec::new(), 0);
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.unwrap();
            assert!(chunk.len() < 2 * CHUNK, "a chunk of {} bytes", chunk.len());
            all.extend_from_slice(&chunk);
            chunks += 1;
        }
        (all, chunks)
    }

    #[tokio::test]
    async fn streams_head_items_and_tail_in_bounded_chunks() {
        // (items, item size, expected chunks)
        let cases = [(0, 10, 1), (3, 10, 1), (100, 1000, 2), (1000, 1000, 16)];
        for (count, size, want_chunks) in cases {
            let items: Vec<Vec<u8>> = (0..count).map(|i| vec![b'a' + (i % 26) as u8; size]).collect();
            let mut want = b"[".to_vec();
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    want.push(b',');
                }
                want.extend_from_slice(item);
            }
            want.extend_from_slice(b"]");
            let body = streamed(b"[".to_vec(), items, b"]", |out, i, item: &Vec<u8>| {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(item);
            });
            let (got, chunks) = collect(body).await;
            assert_eq!((got == want, chunks), (true, want_chunks), "{count} items of {size}");
        }
    }
}
