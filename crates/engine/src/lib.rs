//! Bridle's engine: the turn loop (attempt, check, feedback, retry, fallback), streaming turns
//! and their events, policies, replay, metrics and the [`Engine`] façade over them.
//!
//! The attempt store (`bridle-store`: SQLite, PostgreSQL) and the providers that complete chats
//! (`bridle-providers`: OpenAI-compatible, Anthropic, the built-in mock) are crates of their own;
//! they are re-exported here as [`store`] and [`providers`] so an application needs only this
//! crate.

pub mod answer;
mod bounded;
mod chat_call;
pub mod config;
pub mod engine;
pub mod events;
mod given_chat;
pub mod metrics;
pub mod policy;
pub mod replay;
mod streamed;
pub mod turn;
pub mod turn_context;

pub use bridle_providers as providers;
pub use bridle_store as store;
pub use bridle_store::{private_files, retention};

pub use chat_call::{ChatCall, Passthrough};
pub use config::{Config, RetryPolicy};
pub use engine::{Engine, EngineError, Model};
pub use events::{EventSink, PartialThrottle, TurnEvent};
pub use given_chat::GivenChat;
pub use turn::{TurnError, TurnOutcome};
pub use turn_context::UserTurn;
