//! [`whole_characters`]: a response body checked as UTF-8 while it streams, before the SSE
//! reader sees it. The reader (`eventsource-stream`) keeps every byte from the first invalid
//! one on in its buffer and reports nothing until the body ends — a stream with one bad byte
//! went silent until the upstream closed it or the provider timeout fired. Here the first byte
//! that can never be UTF-8 ends the stream with an error at once, and a character split
//! across two reads is carried over whole.

use bytes::{Bytes, BytesMut};
use futures::{Stream, StreamExt};

/// Why a checked body stream ended early.
#[derive(Debug)]
pub(crate) enum ChunkError<E> {
    /// The connection failed.
    Transport(E),
    /// The body is not UTF-8 from byte `at` (0-based, counted over the whole body).
    NotUtf8 {
        /// Offset of the first byte that is not part of a character.
        at: usize,
    },
}

impl<E: std::fmt::Display> std::fmt::Display for ChunkError<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Transport(e) => e.fmt(f),
            Self::NotUtf8 { at } => write!(f, "not valid UTF-8 from byte {at}"),
        }
    }
}

struct Checked<S> {
    body: S,
    /// The start of a character whose other bytes have not arrived yet.
    carry: BytesMut,
    /// Bytes of the body passed on so far.
    passed: usize,
}

/// `body` in chunks that each end on a character boundary; the first invalid byte (or a body
/// ending inside a character) ends it with [`ChunkError::NotUtf8`].
pub(crate) fn whole_characters<S, E>(body: S) -> impl Stream<Item = Result<Bytes, ChunkError<E>>>
where
    S: Stream<Item = Result<Bytes, E>> + Unpin,
{
    let state = Some(Checked {
        body,
        carry: BytesMut::new(),
        passed: 0,
    });
    futures::stream::unfold(state, |state| async move {
        let mut state = state?;
        loop {
            match state.body.next().await {
                Some(Ok(chunk)) => {
                    state.carry.extend_from_slice(&chunk);
                    match std::str::from_utf8(&state.carry) {
                        Ok(_) => {
                            let whole = state.carry.split().freeze();
                            state.passed += whole.len();
                            return Some((Ok(whole), Some(state)));
                        }
                        Err(e) if e.error_len().is_some() => {
                            let at = state.passed + e.valid_up_to();
                            return Some((Err(ChunkError::NotUtf8 { at }), None));
                        }
                        Err(e) => {
                            // A character cut by the read: pass what is whole, keep the rest.
                            let whole = state.carry.split_to(e.valid_up_to()).freeze();
                            if whole.is_empty() {
                                continue;
                            }
                            state.passed += whole.len();
                            return Some((Ok(whole), Some(state)));
                        }
                    }
                }
                Some(Err(e)) => return Some((Err(ChunkError::Transport(e)), None)),
                None if state.carry.is_empty() => return None,
                None => {
                    let at = state.passed;
                    return Some((Err(ChunkError::NotUtf8 { at }), None));
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn chunks(parts: &[&[u8]]) -> Vec<Result<Bytes, std::io::Error>> {
        parts
            .iter()
            .map(|p| Ok(Bytes::copy_from_slice(p)))
            .collect()
    }

    async fn collect(parts: &[&[u8]]) -> (String, Option<String>) {
        let mut stream = Box::pin(whole_characters(futures::stream::iter(chunks(parts))));
        let mut text = String::new();
        while let Some(item) = stream.next().await {
            match item {
                Ok(bytes) => text.push_str(std::str::from_utf8(&bytes).unwrap()),
                Err(e) => return (text, Some(e.to_string())),
            }
        }
        (text, None)
    }

    #[tokio::test]
    async fn characters_split_across_reads_are_passed_whole() {
        let e_acute = "é".as_bytes();
        let cases: [(&[&[u8]], &str); 3] = [
            (&[b"data: a", b"bc\n\n"], "data: abc\n\n"),
            (
                &[b"data: ", &e_acute[..1], &e_acute[1..], b"\n\n"],
                "data: é\n\n",
            ),
            (
                &[
                    &"€".as_bytes()[..1],
                    &"€".as_bytes()[1..2],
                    &"€".as_bytes()[2..],
                ],
                "€",
            ),
        ];
        for (parts, expected) in cases {
            assert_eq!(collect(parts).await, (expected.to_owned(), None));
        }
    }

    #[tokio::test]
    async fn an_invalid_byte_or_a_cut_character_is_an_error_with_its_offset() {
        assert_eq!(
            collect(&[b"data: ok\n\n", b"data: \xFF\n\n"]).await,
            (
                "data: ok\n\n".to_owned(),
                Some("not valid UTF-8 from byte 16".into())
            )
        );
        assert_eq!(
            collect(&[b"ab", &"é".as_bytes()[..1]]).await,
            ("ab".to_owned(), Some("not valid UTF-8 from byte 2".into()))
        );
    }

    #[tokio::test]
    async fn an_invalid_byte_ends_the_stream_without_waiting_for_more() {
        // The body never ends after the bad byte: the error must come anyway.
        let body =
            futures::stream::iter(chunks(&[b"data: \xFF\xC3("])).chain(futures::stream::pending());
        let mut stream = Box::pin(whole_characters(body));
        let first = tokio::time::timeout(Duration::from_secs(1), stream.next())
            .await
            .expect("no hang");
        assert!(matches!(first, Some(Err(ChunkError::NotUtf8 { at: 6 }))));
    }
}
