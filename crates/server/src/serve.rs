//! [`serve`]: `bridle serve` — open the engine (zero config: SQLite in `./bridle-data`, the mock
//! provider), load or generate the API keys, listen, print the URL and how to authenticate, and
//! serve until Ctrl-C.

use crate::auth::{GeneratedKeys, KeyError, Keys};
use crate::keyring::{KeyRing, KeySource};
use crate::settings::ServerSettings;
use crate::{AppState, app};
use bridle_engine::{Config, Engine, EngineError};
use std::sync::Arc;
use std::time::Duration;

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// `[server]` is wrong.
    #[error("configuration: {0}")]
    Settings(String),
    /// Contracts, store or providers failed to open.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// API keys could not be loaded.
    #[error(transparent)]
    Keys(#[from] KeyError),
    /// Could not listen or serve.
    #[error("cannot listen on {address}: {source}")]
    Listen {
        /// The address.
        address: String,
        /// Why.
        source: std::io::Error,
    },
}

/// Environment the server reads besides the configuration.
#[derive(Debug, Clone, Default)]
pub struct KeyEnv {
    /// `BRIDLE_ADMIN_KEY`.
    pub admin_key: Option<String>,
    /// `BRIDLE_USER_KEYS`.
    pub user_keys: Option<String>,
}

impl KeyEnv {
    /// From the process environment.
    pub fn from_process() -> Self {
        Self {
            admin_key: std::env::var("BRIDLE_ADMIN_KEY").ok(),
            user_keys: std::env::var("BRIDLE_USER_KEYS").ok(),
        }
    }
}

/// Opens everything and serves until Ctrl-C, with the engine's `config` and the `[server]`
/// `settings` (both loaded and checked by the caller, `--bind` already applied) and
/// `[telemetry]`; `say` writes each line of the start-up banner and the shutdown notice (as text,
/// or as a JSON log line when the log is JSON).
pub async fn serve(
    config: Config,
    settings: ServerSettings,
    telemetry: crate::TelemetrySettings,
    env: KeyEnv,
    say: fn(&str),
) -> Result<(), ServeError> {
    let key_file = settings
        .key_file
        .clone()
        .unwrap_or_else(|| config.data_dir.join("api-keys.json"));
    let engine = Engine::open(config).await?;
    let (keys, generated) = Keys::load(
        env.admin_key.as_deref(),
        env.user_keys.as_deref(),
        &key_file,
    )?;
    let listener = tokio::net::TcpListener::bind(&settings.bind)
        .await
        .map_err(|source| ServeError::Listen {
            address: settings.bind.clone(),
            source,
        })?;
    let address = listener.local_addr().map_err(|source| ServeError::Listen {
        address: settings.bind.clone(),
        source,
    })?;
    announce(
        &engine,
        &address.to_string(),
        &key_file,
        generated.as_ref(),
        keys.len(),
        say,
    );
    let limiter = crate::limits::build(&settings.limits)
        .map_err(|e| ServeError::Settings(format!("[server.limits]: {e}")))?;
    let keys = Arc::new(KeyRing::new(
        keys,
        KeySource {
            admin_key: env.admin_key,
            user_keys: env.user_keys,
            file: key_file,
        },
    ));
    // Dropped (and so stopped) when the server ends.
    let _retention = engine.spawn_retention().map(AbortOnDrop);
    let _key_watcher = keys
        .spawn_watcher(Duration::from_millis(settings.key_reload_ms))
        .map(AbortOnDrop);
    let guards = crate::listen::Guards {
        header_timeout: Duration::from_millis(settings.header_timeout_ms),
        max_connections: settings.max_connections,
        drain_timeout: DRAIN_TIMEOUT,
    };
    let flushing = engine.clone();
    let state = AppState::new(engine, keys, Arc::new(settings), limiter).with_telemetry(telemetry);
    crate::listen::serve(listener, app(state), guards, async {
        let signal = stop_signal().await;
        say(&format!(
            "bridle: {signal}: shutting down (finishing requests in flight)"
        ));
    })
    .await;
    // Nothing answered is left uncommitted (`store_commit = "after_reply"`).
    flushing.store().flush().await;
    Ok(())
}

/// Waits for Ctrl-C (SIGINT) or SIGTERM — what process managers, containers and rolling
/// deploys send — and names it.
async fn stop_signal() -> &'static str {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            return tokio::select! {
                _ = tokio::signal::ctrl_c() => "interrupted",
                _ = term.recv() => "SIGTERM",
            };
        }
    }
    let _ = tokio::signal::ctrl_c().await;
    "interrupted"
}

/// Longest wait at shutdown for requests under way (a streamed turn may take a while).
const DRAIN_TIMEOUT: Duration = Duration::from_secs(30);

/// Aborts a background task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn announce(
    engine: &Engine,
    address: &str,
    key_file: &std::path::Path,
    generated: Option<&GeneratedKeys>,
    key_count: usize,
    say: fn(&str),
) {
    let config = engine.config();
    say(&format!("bridle: serving on http://{address}"));
    say(&format!(
        "  store: {} ({})",
        engine.store().backend(),
        redact_url(&config.store_url)
    ));
    say(&format!(
        "  default model: {}   contracts: {}",
        config.default_model,
        engine
            .contracts()
            .iter()
            .map(|c| c.name().to_owned())
            .collect::<Vec<_>>()
            .join(", ")
    ));
    if let Some(days) = config.retention.payload_days {
        say(&format!(
            "  retention: request payloads and raw replies purged after {days} day(s)"
        ));
    }
    match generated {
        Some(keys) => {
            say(&format!(
                "  first start: generated API keys (shown once; stored hashed in {}):",
                key_file.display()
            ));
            say(&format!("    admin:      {}", keys.admin));
            say(&format!("    demo user:  {}", keys.user));
        }
        None => say(&format!(
            "  {key_count} API key(s) configured (BRIDLE_ADMIN_KEY, BRIDLE_USER_KEYS, {})",
            key_file.display()
        )),
    }
    say("  authenticate with:  Authorization: Bearer <key>");
    say("  try:  curl -s -H 'Authorization: Bearer <key>' -H 'Content-Type: application/json' \\");
    say(&format!(
        "          -d '{{\"contract\":\"selfhelp-response\"}}' http://{address}/v1/conversations"
    ));
}

/// The store URL without a password.
fn redact_url(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let credentials = &url[scheme + 3..at];
            match credentials.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..scheme + 3], &url[at..]),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn store_passwords_are_not_printed() {
        assert_eq!(
            super::redact_url("postgres://u:secret@h/db"),
            "postgres://u:***@h/db"
        );
        assert_eq!(super::redact_url("postgres://u@h/db"), "postgres://u@h/db");
        assert_eq!(super::redact_url("sqlite://./x.db"), "sqlite://./x.db");
    }
}
