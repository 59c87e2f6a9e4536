//! How a streamed answer reaches the client: [`pieces`] cuts text into the deltas the front
//! ends ([`crate::openai`], [`crate::anthropic`]) write as SSE frames, and [`sse_body`] sends
//! those frames as a byte stream — paced ([`Pacing::interval`]), re-cut into writes of a fixed
//! size whatever the frame and UTF-8 boundaries ([`Pacing::chunk_bytes`]), broken off for a
//! `broken_stream` fault — while a [`Tally`] counts what was sent and records how the stream
//! ended ([`StreamEnd`]) when it finishes or is dropped because the client went away.

use crate::config::MockConfig;
use crate::log::StreamEnd;
use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use futures::stream::BoxStream;
use std::collections::VecDeque;
use std::time::Duration;

/// Pause before a broken stream is cut, so that the frames before it reach the client.
const BREAK_PAUSE: Duration = Duration::from_millis(30);

/// `text` in pieces of `chars` characters (the last may be shorter), on character boundaries.
/// A `chars` of 0 is read as 1.
pub(crate) fn pieces(text: &str, chars: usize) -> Vec<&str> {
    let chars = chars.max(1);
    let mut out = Vec::with_capacity(text.len() / chars + 1);
    let mut start = 0;
    for (count, (at, _)) in text.char_indices().enumerate() {
        if count > 0 && count % chars == 0 {
            out.push(&text[start..at]);
            start = at;
        }
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

/// The deltas `text` is streamed in: the `explicit` pieces a script set when there are any,
/// else `text` in pieces of `chars` characters.
pub(crate) fn deltas<'a>(
    text: &'a str,
    explicit: Option<&'a [String]>,
    chars: usize,
) -> Vec<&'a str> {
    match explicit {
        Some(explicit) => explicit.iter().map(String::as_str).collect(),
        None => pieces(text, chars),
    }
}

/// How the frames of a stream are sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Pacing {
    /// Pause between two frames.
    pub interval: Duration,
    /// Write this many bytes at a time (frames joined and split as they come), instead of one
    /// frame a write; before a pause, what is pending is written.
    pub chunk_bytes: Option<usize>,
}

impl Pacing {
    /// The pacing `config` asks for.
    pub(crate) fn of(config: &MockConfig) -> Self {
        Self {
            interval: Duration::from_millis(config.stream_interval_ms),
            chunk_bytes: config.stream_chunk_bytes.filter(|n| *n > 0),
        }
    }
}

/// Counts the bytes of a stream that were handed out and, once, records how it ended: when
/// the stream ends ([`Tally::finish`]) or, when it is dropped before, as not completed — a
/// client that went away, or a request dropped while it waited for its delay.
pub(crate) struct Tally {
    /// Where each frame ends in the byte stream.
    frame_ends: Vec<usize>,
    /// Bytes handed out so far.
    sent: usize,
    /// Takes the result; `None` once it has.
    record: Option<Box<dyn FnOnce(StreamEnd) + Send>>,
}

impl Tally {
    /// A tally of `frames`, giving its result to `record`.
    pub(crate) fn new<F: AsRef<[u8]>>(
        frames: &[F],
        record: impl FnOnce(StreamEnd) + Send + 'static,
    ) -> Self {
        let frame_ends = frames
            .iter()
            .scan(0, |end, frame| {
                *end += frame.as_ref().len();
                Some(*end)
            })
            .collect();
        Self {
            frame_ends,
            sent: 0,
            record: Some(Box::new(record)),
        }
    }

    /// The frames whose every byte was handed out.
    fn frames_sent(&self) -> usize {
        self.frame_ends.partition_point(|end| *end <= self.sent)
    }

    /// Records the end, unless it was recorded already.
    fn finish(&mut self, completed: bool) {
        if let Some(record) = self.record.take() {
            record(StreamEnd {
                frames_sent: self.frames_sent(),
                frames_total: self.frame_ends.len(),
                completed,
            });
        }
    }
}

impl Drop for Tally {
    fn drop(&mut self) {
        self.finish(false);
    }
}

/// What is left to send of a stream.
struct Delivery {
    frames: VecDeque<Bytes>,
    pacing: Pacing,
    /// Bytes of frames taken but not yet handed out.
    pending: BytesMut,
    /// True once a frame was taken (the pause comes between frames).
    started: bool,
    /// Cut the connection after the last frame (`broken_stream`).
    broken: bool,
    tally: Tally,
}

impl Delivery {
    /// The next write, or the cut, or `None` at the end.
    async fn next(mut self) -> Option<(Result<Bytes, std::io::Error>, Self)> {
        loop {
            let ready = match self.pacing.chunk_bytes {
                Some(size) => self.pending.len() >= size,
                None => !self.pending.is_empty(),
            };
            if ready {
                return self.hand_out(false);
            }
            let Some(frame) = self.frames.pop_front() else {
                break;
            };
            if self.started && !self.pacing.interval.is_zero() {
                if !self.pending.is_empty() {
                    // Before a pause, what is pending goes out; the frame waits its turn.
                    self.frames.push_front(frame);
                    return self.hand_out(true);
                }
                tokio::time::sleep(self.pacing.interval).await;
            }
            self.started = true;
            self.pending.extend_from_slice(&frame);
        }
        if !self.pending.is_empty() {
            return self.hand_out(true);
        }
        if self.broken {
            self.broken = false;
            tokio::time::sleep(BREAK_PAUSE).await;
            self.tally.finish(true);
            let cut = std::io::Error::new(
                std::io::ErrorKind::ConnectionAborted,
                "mock: the stream breaks off here (broken_stream fault)",
            );
            return Some((Err(cut), self));
        }
        self.tally.finish(true);
        None
    }

    /// The next write — every pending byte when `flush`, else one chunk's worth (or every
    /// pending byte when writes are not re-cut) — counted as handed out.
    fn hand_out(mut self, flush: bool) -> Option<(Result<Bytes, std::io::Error>, Self)> {
        let all = self.pending.len();
        let size = match self.pacing.chunk_bytes {
            Some(n) if !flush => n.min(all),
            _ => all,
        };
        let out = self.pending.split_to(size).freeze();
        self.tally.sent += out.len();
        Some((Ok(out), self))
    }
}

/// The byte stream of `frames`, sent with `pacing` and cut off after them when `broken`;
/// `tally` (made for the same frames) records how it ended.
pub(crate) fn sse_body<F: Into<Bytes>>(
    frames: Vec<F>,
    broken: bool,
    pacing: Pacing,
    tally: Tally,
) -> BoxStream<'static, Result<Bytes, std::io::Error>> {
    let delivery = Delivery {
        frames: frames.into_iter().map(Into::into).collect(),
        pacing,
        pending: BytesMut::new(),
        started: false,
        broken,
        tally,
    };
    // Fused: polled again after its end (or its cut), it stays ended instead of panicking.
    futures::stream::unfold(delivery, Delivery::next)
        .fuse()
        .boxed()
}

#[cfg(test)]
mod tests;
