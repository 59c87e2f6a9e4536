//! [`ServerSettings`]: the `[server]` section of `bridle.toml` (raw serde, `deny_unknown_fields`)
//! — where to listen, the input limits and the connection guards.

use serde::Deserialize;

/// Longest user message accepted, in characters, unless configured.
pub const DEFAULT_MAX_MESSAGE_CHARS: usize = 10_000;
/// Largest context (prompt included) a conversation is started with, in bytes, unless
/// configured.
pub const DEFAULT_MAX_CONTEXT_BYTES: usize = 64 * 1024;
/// Largest request body accepted, in bytes, unless configured.
pub const DEFAULT_MAX_BODY_BYTES: usize = 1024 * 1024;

/// Server settings.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerSettings {
    /// Address to listen on.
    pub bind: String,
    /// Longest user message, in characters (422 beyond).
    pub max_message_chars: usize,
    /// Largest request body, in bytes (413 beyond).
    pub max_body_bytes: usize,
    /// Largest context a conversation is started with, its prompt included, in bytes of JSON
    /// (422 beyond).
    pub max_context_bytes: usize,
    /// Per-user rate limits (`[server.limits]`: requests_per_minute, concurrent_conversations,
    /// redis_url to share them across instances).
    pub limits: crate::limits::LimitsConfig,
    /// Milliseconds of silence after which a streamed response sends an SSE comment, so
    /// proxies and clients keep an idle stream open.
    pub sse_keep_alive_ms: u64,
    /// Least milliseconds between two `partial` events of an attempt.
    pub partial_interval_ms: u64,
    /// Longest time, in milliseconds, a client may take to send a request's headers.
    pub header_timeout_ms: u64,
    /// Longest time, in milliseconds, a client may take to send a whole request body (408
    /// beyond), counted from the end of its headers.
    pub body_timeout_ms: u64,
    /// Most connections open at once (more wait in the listen backlog).
    pub max_connections: usize,
    /// The key file (hashes of API keys); default `api-keys.json` in the data dir. Several
    /// instances can share one file; each reloads it when it changes.
    pub key_file: Option<std::path::PathBuf>,
    /// How often, in milliseconds, the key file is checked for changes (key rotation without
    /// restart; `SIGHUP` reloads at once).
    pub key_reload_ms: u64,
}

impl Default for ServerSettings {
    fn default() -> Self {
        Self {
            bind: "127.0.0.1:8080".into(),
            max_message_chars: DEFAULT_MAX_MESSAGE_CHARS,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            max_context_bytes: DEFAULT_MAX_CONTEXT_BYTES,
            limits: crate::limits::LimitsConfig::default(),
            sse_keep_alive_ms: 15_000,
            partial_interval_ms: 100,
            header_timeout_ms: 10_000,
            body_timeout_ms: 30_000,
            max_connections: 10_000,
            key_file: None,
            key_reload_ms: 2_000,
        }
    }
}

impl ServerSettings {
    /// Reads the opaque `[server]` value the engine's configuration kept.
    pub fn from_value(value: &serde_json::Value) -> Result<Self, String> {
        let settings: Self = if value.is_null() {
            Self::default()
        } else {
            serde_json::from_value(value.clone()).map_err(|e| format!("[server]: {e}"))?
        };
        if settings.max_message_chars == 0
            || settings.max_body_bytes < 1024
            || settings.max_context_bytes == 0
        {
            return Err(
                "[server]: max_message_chars and max_context_bytes must be > 0 and max_body_bytes ≥ 1024"
                    .into(),
            );
        }
        if settings.header_timeout_ms == 0
            || settings.body_timeout_ms == 0
            || settings.max_connections == 0
            || settings.key_reload_ms == 0
        {
            return Err(
                "[server]: header_timeout_ms, body_timeout_ms, max_connections and key_reload_ms must be > 0"
                    .into(),
            );
        }
        if settings.sse_keep_alive_ms < 10 {
            return Err("[server]: sse_keep_alive_ms must be at least 10".into());
        }
        Ok(settings)
    }
}
