//! [`EventSender`] and [`async_stream_events`]: a provider writes its stream parsing as ordinary
//! async code that sends deltas, then the completion or an error, into the returned stream.

use super::{Completion, EventStream, ProviderError, StreamEvent};
use futures::StreamExt;

/// The sending side of a provider's event stream.
pub(crate) struct EventSender(tokio::sync::mpsc::Sender<Result<StreamEvent, ProviderError>>);

impl EventSender {
    /// Sends a delta; false when the reader went away.
    pub(crate) async fn delta(&self, text: &str) -> bool {
        self.0
            .send(Ok(StreamEvent::Delta(text.to_owned())))
            .await
            .is_ok()
    }

    /// Sends a tool call piece; false when the reader went away.
    pub(crate) async fn tool_call(&self, piece: bridle_wire::openai::ToolCallDelta) -> bool {
        self.0.send(Ok(StreamEvent::ToolCall(piece))).await.is_ok()
    }

    /// Sends the final completion.
    pub(crate) async fn done(&self, completion: Completion) {
        let _ = self.0.send(Ok(StreamEvent::Done(completion))).await;
    }

    /// Sends an error (the stream's last item).
    pub(crate) async fn error(&self, error: ProviderError) {
        let _ = self.0.send(Err(error)).await;
    }
}

/// Runs `produce` in a task that feeds the returned stream (so the provider's parsing state
/// lives in ordinary async code). When the stream is dropped, the task stops at once — also
/// while it waits for the upstream — dropping the upstream response, which closes its
/// connection: the provider stops generating.
pub(crate) fn async_stream_events<F, Fut>(produce: F) -> EventStream
where
    F: FnOnce(EventSender) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (tx, mut rx) = tokio::sync::mpsc::channel(64);
    let watch = tx.clone();
    let produce = produce(EventSender(tx));
    tokio::spawn(async move {
        tokio::select! {
            () = produce => {}
            () = watch.closed() => {}
        }
    });
    futures::stream::poll_fn(move |cx| rx.poll_recv(cx)).boxed()
}
