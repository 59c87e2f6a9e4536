//! [`LoggedRequest`]: one entry of the mock server's request log — every request received,
//! in order, with its method, path, JSON body and what was answered ([`Answer`]) — and
//! `RequestLog`, the bounded, shared list behind `GET /_mock/requests`.

use crate::faults::Fault;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::{Mutex, PoisonError};

/// Entries kept; older ones are dropped first.
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
}

impl Answer {
    /// An answer that never reached the model (401, 400, 404).
    pub(crate) fn refused(status: u16) -> Self {
        Self {
            status,
            fault: None,
            attempt: None,
            target: None,
            delay_ms: 0,
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
}

/// The shared, bounded request log.
#[derive(Debug, Default)]
pub(crate) struct RequestLog {
    entries: Mutex<VecDeque<LoggedRequest>>,
}

impl RequestLog {
    pub(crate) fn push(&self, entry: LoggedRequest) {
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        if entries.len() == MAX_ENTRIES {
            entries.pop_front();
        }
        entries.push_back(entry);
    }

    pub(crate) fn all(&self) -> Vec<LoggedRequest> {
        let entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        entries.iter().cloned().collect()
    }

    pub(crate) fn clear(&self) {
        self.entries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }
}

#[cfg(test)]
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
            });
        }
        let all = log.all();
        assert_eq!(all.len(), MAX_ENTRIES);
        assert_eq!(all[0].path, "/2");
        log.clear();
        assert!(log.all().is_empty());
    }
}
