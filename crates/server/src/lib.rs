//! Bridle's gateway: [`app`] builds the axum router over an [`AppState`] (the engine, the API
//! keys, the settings); `routes.rs` is the table of every route; handlers are thin (extract,
//! call the engine, map the result); [`ApiError`] maps every failure to one error body.

pub mod auth;
pub mod error;
mod extract;
mod handlers;
mod routes;
pub mod serve;
pub mod settings;

pub use auth::{Caller, Keys, Role};
pub use error::ApiError;
pub use routes::app;
pub use settings::ServerSettings;

use bridle_engine::Engine;
use std::sync::Arc;

/// What every handler shares.
#[derive(Debug, Clone)]
pub struct AppState {
    /// Contracts, store, providers; runs turns.
    pub engine: Engine,
    /// Accepted API keys.
    pub keys: Arc<Keys>,
    /// Limits and listening address.
    pub settings: Arc<ServerSettings>,
}
