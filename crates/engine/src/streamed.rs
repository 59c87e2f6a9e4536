//! [`stream_attempt`]: one attempt read as a stream — each delta fed to the contract's
//! [`StreamCheck`], what it makes visible sent to the client as it arrives, `partial` events
//! throttled, and the stream stopped the moment the reply proves a violation no continuation can
//! fix (early abort) or the client goes away. Dropping the provider's stream closes the upstream
//! connection, so the model stops generating either way.

use crate::events::{EventSink, PartialThrottle, TurnEvent};
use crate::providers::{Completion, Provider, ProviderError, StreamEvent};
use bridle_core::{Context, Contract, StreamCheck, Violation};
use futures::StreamExt;
use serde_json::Value;
use std::time::Instant;

/// How a streamed attempt ended.
#[derive(Debug)]
pub(crate) enum Streamed {
    /// The reply came in whole; `check` saw all of it (its held text is released after the
    /// complete check).
    Complete(Completion, Box<StreamCheck>),
    /// The provider failed (before or during the stream).
    Failed(ProviderError),
    /// The reply so far broke the contract whatever followed; the stream was stopped.
    Aborted {
        /// What was received.
        check: Box<StreamCheck>,
        /// What it proves.
        violations: Vec<Violation>,
    },
    /// The client went away; the stream was stopped.
    Cancelled(Box<StreamCheck>),
}

/// Streams one attempt of `body` (a streaming request body made by `provider`).
pub(crate) async fn stream_attempt(
    provider: &dyn Provider,
    body: &Value,
    contract: &Contract,
    context: &Context,
    sink: &EventSink,
    attempt: u32,
) -> Streamed {
    let mut check = Box::new(StreamCheck::new(contract, context));
    let started = tokio::select! {
        biased;
        () = sink.closed() => return Streamed::Cancelled(check),
        started = provider.send_stream(body) => started,
    };
    let mut events = match started {
        Ok(events) => events,
        Err(error) => return Streamed::Failed(error),
    };
    let mut emitted = Vec::new();
    let mut throttle = PartialThrottle::new(sink.partial_interval());
    loop {
        let item = tokio::select! {
            biased;
            () = sink.closed() => return Streamed::Cancelled(check),
            item = events.next() => item,
        };
        match item {
            Some(Ok(StreamEvent::Delta(text))) => {
                if let Err(abort) = check.push(&text, &mut emitted) {
                    return Streamed::Aborted {
                        check,
                        violations: abort.violations,
                    };
                }
                for emit in emitted.drain(..) {
                    if !sink.send(TurnEvent::from_emit(emit)).await {
                        return Streamed::Cancelled(check);
                    }
                }
                let now = Instant::now();
                if throttle.due(now, check.raw().len())
                    && let Some(value) = check.partial()
                {
                    throttle.shown(now, check.raw().len());
                    if !sink.send(TurnEvent::Partial { attempt, value }).await {
                        return Streamed::Cancelled(check);
                    }
                }
            }
            // The calls are read whole from the completion at the end.
            Some(Ok(StreamEvent::ToolCall(_))) => {}
            Some(Ok(StreamEvent::Done(completion))) => {
                return Streamed::Complete(completion, check);
            }
            Some(Err(error)) => return Streamed::Failed(error),
            None => {
                return Streamed::Failed(ProviderError::Stream(
                    "the stream ended without its completion".into(),
                ));
            }
        }
    }
}

/// Output tokens of a reply cut short, estimated from its length (about four characters a
/// token, as providers report no usage for a stream they did not finish).
pub(crate) fn estimated_tokens(text: &str) -> u64 {
    let chars = u64::try_from(text.chars().count()).unwrap_or(u64::MAX);
    chars.div_ceil(4)
}
