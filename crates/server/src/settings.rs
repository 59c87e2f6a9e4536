//! [`ServerSettings`]: the `[server]` section of `bridle.toml` — where to listen, the input
//! limits, the connection guards, the key file and the per-user limits (`[server.limits]`,
//! [`LimitsConfig`](crate::limits::LimitsConfig)). Its raw form is itself (serde,
//! `deny_unknown_fields`, every key defaulted); [`ServerSettings::load`] checks every key and
//! names the one at fault (`limits.requests_per_minute: must be between 1 and 10000, not 0`,
//! relative to the section).

use bridle_core::ConfigError;
use serde::{Deserialize, Serialize};

pub mod telemetry;

/// Longest user message accepted, in characters, unless configured.
pub const DEFAULT_MAX_MESSAGE_CHARS: usize = 10_000;
/// Largest context (prompt included) a conversation is started with, in bytes, unless
/// configured.
pub const DEFAULT_MAX_CONTEXT_BYTES: usize = 64 * 1024;
/// Largest request body accepted, in bytes, unless configured.
pub const DEFAULT_MAX_BODY_BYTES: usize = 1024 * 1024;

/// Server settings.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
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
    #[serde(skip_serializing_if = "Option::is_none")]
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
    /// Checks every key, `[server.limits]` included; the error names the first key at fault,
    /// relative to the section (`max_body_bytes`, `limits.redis_url`).
    pub fn load(self) -> Result<Self, ConfigError> {
        let at_least = |key: &str, value: u64, least: u64| {
            if value < least {
                Err(ConfigError::new(
                    key,
                    format!("must be at least {least}, not {value}"),
                ))
            } else {
                Ok(())
            }
        };
        let count = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
        at_least("max_message_chars", count(self.max_message_chars), 1)?;
        at_least("max_body_bytes", count(self.max_body_bytes), 1024)?;
        at_least("max_context_bytes", count(self.max_context_bytes), 1)?;
        at_least("header_timeout_ms", self.header_timeout_ms, 1)?;
        at_least("body_timeout_ms", self.body_timeout_ms, 1)?;
        at_least("max_connections", count(self.max_connections), 1)?;
        at_least("key_reload_ms", self.key_reload_ms, 1)?;
        at_least("sse_keep_alive_ms", self.sse_keep_alive_ms, 10)?;
        self.limits.check().map_err(|e| e.within("limits"))?;
        Ok(self)
    }

    /// The settings with the password of `limits.redis_url` replaced by `marker`.
    #[must_use]
    pub fn redacted(&self, marker: &str) -> Self {
        let mut copy = self.clone();
        copy.limits.redis_url = self
            .limits
            .redis_url
            .as_deref()
            .map(|url| crate::limits::redact_url_with(url, marker));
        copy
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_each_mistake_names_its_key() {
        assert_eq!(
            ServerSettings::default().load(),
            Ok(ServerSettings::default())
        );
        type Change = fn(&mut ServerSettings);
        let cases: [(Change, &str); 10] = [
            (|s| s.max_message_chars = 0, "max_message_chars"),
            (|s| s.max_body_bytes = 1023, "max_body_bytes"),
            (|s| s.max_context_bytes = 0, "max_context_bytes"),
            (|s| s.header_timeout_ms = 0, "header_timeout_ms"),
            (|s| s.body_timeout_ms = 0, "body_timeout_ms"),
            (|s| s.max_connections = 0, "max_connections"),
            (|s| s.key_reload_ms = 0, "key_reload_ms"),
            (|s| s.sse_keep_alive_ms = 9, "sse_keep_alive_ms"),
            (
                |s| s.limits.requests_per_minute = 0,
                "limits.requests_per_minute",
            ),
            (|s| s.limits.key_prefix = String::new(), "limits.key_prefix"),
        ];
        for (change, key) in cases {
            let mut settings = ServerSettings::default();
            change(&mut settings);
            let error = settings.load().unwrap_err();
            assert_eq!(error.path, key, "{error}");
        }
    }

    #[test]
    fn redaction_keeps_the_redis_host() {
        let mut settings = ServerSettings::default();
        settings.limits.redis_url = Some("redis://:hunter2@cache:6379/0".into());
        let shown = settings.redacted("[REDACTED]");
        assert_eq!(
            shown.limits.redis_url.as_deref(),
            Some("redis://[REDACTED]@cache:6379/0")
        );
    }
}
