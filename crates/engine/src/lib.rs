//! Bridle's engine: the turn loop (attempt, check, feedback, retry, fallback), the providers
//! that complete chats (OpenAI-compatible, Anthropic, the built-in mock) and the store that
//! records every attempt (SQLite, PostgreSQL).

mod bounded;
pub mod config;
pub mod engine;
pub mod events;
pub mod metrics;
pub mod policy;
pub mod private_files;
pub mod providers;
pub mod replay;
pub mod retention;
pub mod store;
mod streamed;
mod strings_as;
pub mod turn;

pub use config::{Config, RetryPolicy};
pub use engine::{Engine, EngineError};
pub use events::{EventSink, PartialThrottle, TurnEvent};
pub use turn::{TurnError, TurnOutcome};
