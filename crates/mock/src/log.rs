//! [`LoggedRequest`]: one entry of the mock server's request log — every request received,
//! in order, with its method, path, JSON body and what was answered ([`Answer`]: the calls of
//! tools it made, and how a streamed answer was delivered: [`StreamEnd`]) — and `RequestLog`, the bounded, shared list
//! behind `GET /_mock/requests`, whose entries can be updated after the fact (a stream ends
//! after its entry is written).

use crate::faults::Fault;
use crate::request::CallMade;
use serde::{Deserialize, Serialize};
use serde_json::Value;
#[cfg(feature = "http")]
use std::collections::VecDeque;
#[cfg(feature = "http")]
use std::sync::{Mutex, PoisonError};

/// Entries kept; older ones are dropped first.
#[cfg(feature = "http")]
const MAX_ENTRIES: usize = 10_000;

/// What the mock server answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Answer {
    /// HTTP status.
    pub status: u16,
    /// The fault applied, if any (a refused API key or a malformed request is not a fault).
    pub fault: Option<Fault>,
    /// The attempt number the model read from the request, when it got that far.
    pub attempt: Option<u32>,
    /// What a content fault broke (JSON pointer; `""` for the whole reply).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// Milliseconds waited before answering (latency and `slow`).
    #[serde(default)]
    pub delay_ms: u64,
    /// The calls of tools the answer made, with the ids it gave them (`call_mock_…` in the
    /// OpenAI format, `toolu_mock_…` in Anthropic's); a forced tool's input in the Anthropic
    /// format is a call of it. Sent whole or not (a stream may have been cut or dropped).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<CallMade>,
    /// How a streamed answer was delivered, once its stream has ended or the client went away;
    /// `None` for an answer that is not a stream, and while a stream is still being sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<StreamEnd>,
}

/// How a streamed answer ended: read to its end, or dropped early by the client (a gateway
/// that cancels its upstream stream shows here as `completed: false`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamEnd {
    /// SSE frames handed to the connection in full.
    pub frames_sent: usize,
    /// SSE frames the answer had (for a `broken_stream` fault: those before the cut).
    pub frames_total: usize,
    /// True when every frame was sent (and, for `broken_stream`, the planned cut made); false
    /// when the client went away first.
    pub completed: bool,
}

impl Answer {
    /// An answer that never reached the model (401, 400, 404).
    #[cfg(feature = "http")]
    pub(crate) fn refused(status: u16) -> Self {
        Self {
            status,
            fault: None,
            attempt: None,
            target: None,
            delay_ms: 0,
            calls: Vec::new(),
            stream: None,
        }
    }
}

/// One request received.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoggedRequest {
    /// HTTP method.
    pub method: String,
    /// Request path.
    pub path: String,
    /// The JSON body; a body that is not JSON is kept as a string; no body is `null`.
    pub body: Value,
    /// What was answered.
    pub answer: Answer,
    /// The W3C `traceparent` header the request carried (a gateway continuing a trace), when
    /// it had one of at most 256 bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
}

/// The shared, bounded request log.
#[cfg(feature = "http")] // the HTTP front ends' log; the in-process model keeps none
#[derive(Debug, Default)]
pub(crate) struct RequestLog {
    entries: Mutex<Entries>,
}

/// The entries kept, and the sequence number of the first (every entry ever pushed has one).
#[cfg(feature = "http")]
#[derive(Debug, Default)]
struct Entries {
    list: VecDeque<LoggedRequest>,
    first: u64,
}

#[cfg(feature = "http")]
impl RequestLog {
    /// Appends `entry` and returns its sequence number (for [`RequestLog::update`]).
    pub(crate) fn push(&self, entry: LoggedRequest) -> u64 {
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        if entries.list.len() == MAX_ENTRIES {
            entries.list.pop_front();
            entries.first += 1;
        }
        entries.list.push_back(entry);
        entries.first + entries.list.len() as u64 - 1
    }

    /// Changes entry `seq` with `change`; nothing when it was dropped or cleared meanwhile.
    pub(crate) fn update(&self, seq: u64, change: impl FnOnce(&mut LoggedRequest)) {
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(index) = seq
            .checked_sub(entries.first)
            .and_then(|i| usize::try_from(i).ok())
        else {
            return;
        };
        if let Some(entry) = entries.list.get_mut(index) {
            change(entry);
        }
    }

    pub(crate) fn all(&self) -> Vec<LoggedRequest> {
        let entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        entries.list.iter().cloned().collect()
    }

    pub(crate) fn clear(&self) {
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        entries.first += entries.list.len() as u64;
        entries.list.clear();
    }
}

#[cfg(all(test, feature = "http"))]
mod tests {
    use super::*;

    #[test]
    fn the_log_keeps_order_and_its_bound() {
        let log = RequestLog::default();
        for i in 0..MAX_ENTRIES + 2 {
            log.push(LoggedRequest {
                method: "POST".into(),
                path: format!("/{i}"),
                body: Value::Null,
                answer: Answer::refused(400),
                traceparent: None,
            });
        }
        let all = log.all();
        assert_eq!(all.len(), MAX_ENTRIES);
        assert_eq!(all[0].path, "/2");
        log.clear();
        assert!(log.all().is_empty());
    }

    #[test]
    fn entries_are_updated_by_sequence_number_until_they_are_gone() {
        let log = RequestLog::default();
        let entry = |path: &str| LoggedRequest {
            method: "POST".into(),
            path: path.into(),
            body: Value::Null,
            answer: Answer::refused(200),
            traceparent: None,
        };
        let end = StreamEnd {
            frames_sent: 2,
            frames_total: 5,
            completed: false,
        };
        let (a, b) = (log.push(entry("/a")), log.push(entry("/b")));
        assert_eq!((a, b), (0, 1));
        log.update(b, |e| e.answer.stream = Some(end));
        let streams: Vec<_> = log.all().iter().map(|e| e.answer.stream).collect();
        assert_eq!(streams, [None, Some(end)]);
        // Cleared: an update of a gone entry changes nothing, new entries keep counting.
        log.clear();
        let c = log.push(entry("/c"));
        assert_eq!(c, 2);
        log.update(a, |e| e.path = "/changed".into());
        log.update(u64::MAX, |e| e.path = "/changed".into());
        assert_eq!(log.all()[0].path, "/c");
        // The answer's JSON names the delivery only when there is one.
        let json = serde_json::to_value(&log.all()[0].answer).unwrap();
        assert!(json.get("stream").is_none());
        log.update(c, |e| e.answer.stream = Some(end));
        let json = serde_json::to_value(&log.all()[0].answer).unwrap();
        assert_eq!(
            json["stream"],
            serde_json::json!({"frames_sent": 2, "frames_total": 5, "completed": false})
        );
    }
}
