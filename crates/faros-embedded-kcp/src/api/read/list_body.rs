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

/// Items up to this size are room a chunk keeps free for the next item; a bigger one grows its
/// chunk instead, so that one big object does not leave every later chunk holding one item.
const ROOM_KEPT_FOR: usize = CHUNK / 8;

/// A body of `head`, then every item as `write_item` appends it (with its index), then `tail`.
pub fn streamed<T, W>(head: Vec<u8>, items: Vec<T>, tail: &'static [u8], write_item: W) -> Body
where
    T: Send + 'static,
    W: FnMut(&mut Vec<u8>, usize, &T) + Send + 'static,
{
    let chunks = Chunks {
        head: Some(head),
        items: items.into_iter().enumerate().peekable(),
        tail: Some(tail),
        largest: 0,
        write_item,
    };
    Body::from_stream(futures::stream::iter(chunks.map(Ok::<_, Infallible>)))
}

/// The chunks of one body, produced on demand.
struct Chunks<T, W> {
    head: Option<Vec<u8>>,
    items: std::iter::Peekable<std::iter::Enumerate<std::vec::IntoIter<T>>>,
    /// `None` once written: the body has ended.
    tail: Option<&'static [u8]>,
    /// The most one item of at most [`ROOM_KEPT_FOR`] has written so far: a chunk ends when the
    /// next item might not fit.
    largest: usize,
    write_item: W,
}

impl<T, W: FnMut(&mut Vec<u8>, usize, &T)> Iterator for Chunks<T, W> {
    type Item = Bytes;

    /// Fills one allocation without growing it: growing copied the whole chunk into a buffer twice
    /// its size, for the few bytes of the item that crossed [`CHUNK`]. Only an item bigger than
    /// every earlier one, or than [`ROOM_KEPT_FOR`], can still grow it.
    fn next(&mut self) -> Option<Bytes> {
        let tail = self.tail?;
        let mut chunk = self.head.take().unwrap_or_default();
        chunk.reserve_exact(CHUNK + tail.len());
        // CHUNK past the head, not the allocation's capacity: a head handed over with spare
        // capacity would otherwise hold (and fault in afresh) as much of the list as it fits.
        let room = chunk.len() + CHUNK;
        while let Some((i, item)) = self
            .items
            .next_if(|_| chunk.is_empty() || chunk.len() + self.largest <= room)
        {
            let before = chunk.len();
            (self.write_item)(&mut chunk, i, &item);
            let written = chunk.len() - before;
            if written <= ROOM_KEPT_FOR {
                self.largest = self.largest.max(written);
            }
        }
        if self.items.peek().is_none() {
            chunk.extend_from_slice(tail);
            self.tail = None;
        }
        Some(Bytes::from(chunk))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// The body's bytes and the length of each chunk.
    async fn collect(body: Body) -> (Vec<u8>, Vec<usize>) {
        use futures::StreamExt;
        let mut stream = body.into_data_stream();
        let (mut all, mut chunks) = (Vec::new(), Vec::new());
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.unwrap();
            all.extend_from_slice(&chunk);
            chunks.push(chunk.len());
        }
        (all, chunks)
    }

    #[tokio::test]
    async fn streams_head_items_and_tail_in_chunks_that_never_outgrow_their_allocation() {
        // (item sizes, expected chunks, whether every chunk stays within CHUNK and the tail): a
        // chunk ends where an item as big as the biggest so far might not fit, so only an item
        // bigger than every one before it (or than ROOM_KEPT_FOR) makes its chunk outgrow it.
        let big = 3 * CHUNK / 2;
        let cases: [(Vec<usize>, usize, bool); 7] = [
            (vec![], 1, true),
            (vec![10; 3], 1, true),
            (vec![1000; 100], 2, true),
            (vec![1000; 1000], 16, true),
            ((0..300).map(|i| 300 - i).collect(), 1, true),
            (vec![10, big, 10, 10, big, 10], 3, false),
            // A big item early leaves later chunks as full as ever.
            ([big].into_iter().chain([1000; 200]).collect(), 5, false),
        ];
        for (sizes, want_chunks, bounded) in cases {
            let items: Vec<Vec<u8>> = sizes
                .iter()
                .enumerate()
                .map(|(i, size)| vec![b'a' + (i % 26) as u8; *size])
                .collect();
            let mut want = b"[".to_vec();
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    want.push(b',');
                }
                want.extend_from_slice(item);
            }
            want.extend_from_slice(b"]}");
            let body = streamed(b"[".to_vec(), items, b"]}", |out, i, item: &Vec<u8>| {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(item);
            });
            let (got, chunks) = collect(body).await;
            let case = format!("{} items, {} bytes", sizes.len(), want.len());
            assert!(got == want, "{case}: the bytes differ");
            assert_eq!(chunks.len(), want_chunks, "{case}: chunks {chunks:?}");
            if bounded {
                assert!(chunks.iter().all(|len| *len <= CHUNK + 2), "{case}: chunks {chunks:?}");
            }
        }
    }

    #[tokio::test]
    async fn a_head_with_spare_capacity_starts_a_chunk_of_the_usual_size() {
        // A head allocated for the whole body once made the first chunk the whole body: a 12 MB
        // protobuf list was one allocation, faulted in page by page on every request.
        let mut head = Vec::with_capacity(64 * CHUNK);
        head.push(b'[');
        let items = vec![vec![b'a'; 1000]; 1000];
        let body = streamed(head, items, b"]", |out, _, item: &Vec<u8>| out.extend_from_slice(item));
        let (got, chunks) = collect(body).await;
        assert_eq!(got.len(), 1 + 1000 * 1000 + 1);
        assert_eq!(chunks.len(), 16, "chunks {chunks:?}");
        assert!(chunks.iter().all(|len| *len <= CHUNK + 1), "chunks {chunks:?}");
    }
}
