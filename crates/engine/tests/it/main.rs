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
mod context;
mod escalate;
mod fallback;
mod http_turn;
mod oversize;
mod policy;
mod turn;
