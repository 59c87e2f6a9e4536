//! Engine integration tests: the turn loop on real SQLite and PostgreSQL stores against the mock
//! LLM — in process, and over real HTTP on loopback with the OpenAI, Azure, Anthropic and Gemini providers —
//! policies and oversize replies. (The store's and the providers' own tests live in their crates.)

#![allow(clippy::unwrap_used)]

/// Defines `$sqlite` and `$postgres` tests running `$behaviour(store)` on a fresh SQLite file
/// and a fresh PostgreSQL database (see `turn::Backend`).
macro_rules! on_both_backends {
    ($($behaviour:ident: $sqlite:ident, $postgres:ident;)*) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $sqlite() {
            let (_keep, store) = crate::turn::Backend::sqlite().await;
            $behaviour(store).await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $postgres() {
            let (_keep, store) = crate::turn::Backend::postgres().await;
            $behaviour(store).await;
        }
    )*};
}

mod azure_gemini;
/// Runs a streamed turn of `message` in conversation `id` and returns its result with every
/// event the turn sent, in order.
pub(crate) async fn streamed_turn(
    engine: &bridle_engine::Engine,
    id: &str,
    message: &str,
) -> (
    Result<bridle_engine::TurnOutcome, bridle_engine::EngineError>,
    Vec<bridle_engine::TurnEvent>,
) {
    let (sink, mut events) = bridle_engine::EventSink::channel(std::time::Duration::from_secs(60));
    let collect = tokio::spawn(async move {
        let mut seen = Vec::new();
        while let Some(event) = events.recv().await {
            seen.push(event);
        }
        seen
    });
    let result = engine.send_streaming(id, message, None, &sink).await;
    drop(sink);
    (result, collect.await.unwrap())
}

mod context;
mod escalate;
mod fallback;
mod given_chat;
mod http_turn;
mod opening;
mod oversize;
mod policy;
mod turn;
