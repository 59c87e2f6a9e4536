//! Bridle's gateway: [`app`] builds the axum router over an [`AppState`] (the engine, the API
//! keys, the settings); `routes.rs` is the table of every route; handlers are thin (extract,
//! call the engine, map the result); [`ApiError`] maps every failure to one error body.

pub mod auth;
pub mod error;
pub(crate) mod extract;
mod handlers;
pub mod keyring;
pub mod limits;
pub mod listen;
pub mod metrics;
pub mod request_id;
mod routes;
pub mod serve;
pub mod settings;
pub mod telemetry;
pub mod turns;
pub mod web;

pub use auth::{Caller, Keys, Role};
pub use error::ApiError;
pub use keyring::KeyRing;
pub use routes::app;
pub use settings::ServerSettings;
pub use telemetry::{Telemetry, TelemetrySettings};

use bridle_engine::Engine;
use std::sync::Arc;

/// What every handler shares.
#[derive(Debug, Clone)]
pub struct AppState {
    /// Contracts, store, providers; runs turns.
    pub engine: Engine,
    /// Accepted API keys (reloaded when the key file changes).
    pub keys: Arc<KeyRing>,
    /// Limits and listening address.
    pub settings: Arc<ServerSettings>,
    /// Per-user rate limits (in process, or shared through Redis).
    pub limiter: Arc<dyn limits::Limiter>,
    /// The HTTP series of `/metrics`.
    pub metrics: Arc<metrics::HttpMetrics>,
    /// The conversations with a turn running (one at a time each).
    pub turns: Arc<turns::Turns>,
    /// `[telemetry]`: the admin console's links to traces.
    pub telemetry: Arc<TelemetrySettings>,
}

impl AppState {
    /// The state over `engine` with `keys`, `settings` and `limiter`, and fresh HTTP metrics.
    pub fn new(
        engine: Engine,
        keys: Arc<KeyRing>,
        settings: Arc<ServerSettings>,
        limiter: Arc<dyn limits::Limiter>,
    ) -> Self {
        Self {
            engine,
            keys,
            settings,
            limiter,
            metrics: Arc::default(),
            turns: Arc::default(),
            telemetry: Arc::default(),
        }
    }

    /// The state with `[telemetry]` set to `telemetry`.
    #[must_use]
    pub fn with_telemetry(mut self, telemetry: TelemetrySettings) -> Self {
        self.telemetry = Arc::new(telemetry);
        self
    }

    /// Admits one more request of `user`, or refuses it with 429. When the limiter itself
    /// fails (Redis down), the request is admitted and the failure logged: an outage of the
    /// limit store must not take the gateway down.
    pub async fn admit(&self, user: &str) -> Result<(), ApiError> {
        if !self.settings.limits.enabled {
            return Ok(());
        }
        match self.limiter.check_request(user).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(rejection)) => {
                self.metrics.rate_limited(rejection.limit);
                Err(ApiError::from(rejection))
            }
            Err(error) => {
                tracing::warn!(%error, "rate limiter unavailable; admitting the request");
                Ok(())
            }
        }
    }

    /// Holds one of `user`'s concurrent-conversation slots for `conversation` while the
    /// returned lease lives, or refuses with 429 (failing open like [`AppState::admit`]).
    pub async fn hold(
        &self,
        user: &str,
        conversation: &str,
    ) -> Result<Option<limits::Lease>, ApiError> {
        if !self.settings.limits.enabled {
            return Ok(None);
        }
        match self.limiter.acquire_conversation(user, conversation).await {
            Ok(Ok(lease)) => Ok(Some(lease)),
            Ok(Err(rejection)) => {
                self.metrics.rate_limited(rejection.limit);
                Err(ApiError::from(rejection))
            }
            Err(error) => {
                tracing::warn!(%error, "rate limiter unavailable; admitting the conversation");
                Ok(None)
            }
        }
    }
}
