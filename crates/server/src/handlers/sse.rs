//! Server-sent events for a turn: [`wants_events`] reads the request's `Accept`, and
//! [`turn_events`] runs the turn in its own task and writes its [`TurnEvent`]s as SSE
//! (`event: NAME`, `data: JSON`), with keep-alive comments on an idle stream.
//!
//! The turn runs in a task so that it ends cleanly whatever the connection does: when the client
//! goes away the response stream — and with it the event receiver — is dropped, the turn sees
//! that, cancels the upstream request and stores the attempt under way as cancelled. The
//! concurrent-conversation lease and the conversation's running turn are held until the turn
//! ends.

use crate::AppState;
use crate::error::ApiError;
use crate::limits::Lease;
use axum::http::{HeaderMap, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use bridle_engine::UserTurn;
use bridle_engine::providers::traces::TraceSpan;
use bridle_engine::{EngineError, EventSink, TurnError, TurnEvent};
use futures::StreamExt;
use std::convert::Infallible;
use std::time::Duration;

/// Whether the client asked for server-sent events (`Accept: text/event-stream`).
pub fn wants_events(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|v| {
            v.split(';')
                .next()
                .is_some_and(|t| t.trim().eq_ignore_ascii_case("text/event-stream"))
        })
}

/// What one streamed turn needs.
pub struct StreamedTurn {
    /// The conversation.
    pub conversation_id: String,
    /// The user's message.
    pub content: String,
    /// The model asked for.
    pub model: Option<String>,
    /// The context the message brings for its turn.
    pub context: Option<serde_json::Map<String, serde_json::Value>>,
    /// The message's card answers, by id.
    pub answer: Option<bridle_engine::answer::Answers>,
    /// The concurrent-conversation slot, held until the turn ends.
    pub lease: Option<Lease>,
    /// The conversation's one running turn, held until the turn ends.
    pub running: crate::turns::Running,
}

/// Runs the turn in a task and answers with its events as SSE.
pub fn turn_events(state: &AppState, turn: StreamedTurn) -> Response {
    let (sink, receiver) =
        EventSink::channel(Duration::from_millis(state.settings.partial_interval_ms));
    let engine = state.engine.clone();
    // The turn's task is still part of the request: its log lines and errors carry its ids,
    // and its spans stay children of the request's, which ends with the response head.
    let ids = crate::request_id::current().unwrap_or_default();
    let span = TraceSpan::current();
    tokio::spawn(tracing::Instrument::in_current_span(span.run(
        crate::request_id::within(ids.clone(), async move {
            let StreamedTurn {
                conversation_id,
                content,
                model,
                context,
                answer,
                lease,
                running,
            } = turn;
            let turn = UserTurn {
                content: &content,
                model: model.as_deref(),
                context: context.as_ref(),
                answer: answer.as_ref(),
                ids: Some(&ids),
            };
            let result = engine
                .send_message_streaming(&conversation_id, &turn, &sink)
                .await;
            drop(lease);
            drop(running);
            match result {
                Ok(_) | Err(EngineError::Turn(TurnError::Cancelled { .. })) => {}
                Err(error) => {
                    let error = ApiError::from(error);
                    sink.send(TurnEvent::Error {
                        code: error.code().to_owned(),
                        message: error.public_message(),
                        request_id: ids.request_id.clone(),
                    })
                    .await;
                }
            }
        }),
    )));
    events_response(receiver, state.settings.sse_keep_alive_ms)
}

/// The SSE response for a receiver of turn events.
fn events_response(
    receiver: tokio::sync::mpsc::Receiver<TurnEvent>,
    keep_alive_ms: u64,
) -> Response {
    let events = futures::stream::unfold(receiver, |mut receiver| async move {
        let event = receiver.recv().await?;
        let sse = Event::default().event(event.name()).data(event.data());
        Some((Ok::<_, Infallible>(sse), receiver))
    });
    Sse::new(events.boxed())
        .keep_alive(
            KeepAlive::new()
                .interval(Duration::from_millis(keep_alive_ms))
                .text("keep-alive"),
        )
        .into_response()
}
