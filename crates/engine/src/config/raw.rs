//! [`RawConfig`]: the engine's part of `bridle.toml` as written — the root keys and the
//! `[retry]`, `[providers.*]`, `[models.*]`, `[safety]` and `[retention]` sections — as serde
//! types that refuse unknown keys. [`RawConfig::load`](super::RawConfig::load) checks them
//! into a [`Config`](super::Config); [`Config::to_raw`](super::Config::to_raw) writes a
//! configuration back in this form with every default filled in.
//!
//! Every field is public so that the binary, which owns the file's layout (the engine's
//! sections beside the gateway's `[server]`), can build and take apart a `RawConfig` field by
//! field: a key added here and not there is a compile error, not a silently ignored setting.

use super::ProviderKind;
use crate::policy::SafetyConfig;
use crate::store::Commit;
use bridle_mock::RawMockSettings;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The engine's keys of `bridle.toml`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawConfig {
    /// Where Bridle keeps its files (default `./bridle-data`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_dir: Option<PathBuf>,
    /// `sqlite://…` or `postgres://…` (default `sqlite://<data_dir>/bridle.db`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store_url: Option<String>,
    /// When a turn's messages are committed relative to its answer.
    #[serde(default)]
    pub store_commit: Commit,
    /// PostgreSQL: the most connections each instance's pool keeps, 1–1000 (default one per
    /// writer lane plus two: 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store_max_connections: Option<u32>,
    /// Contract directories added to the built-ins.
    #[serde(default)]
    pub contracts_dirs: Vec<PathBuf>,
    /// The model used when a request names none (default `mock`, or `openai` with
    /// `OPENAI_BASE_URL`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_model: Option<String>,
    /// `[retry]`.
    #[serde(default)]
    pub retry: RawRetry,
    /// `[providers.NAME]`.
    #[serde(default)]
    pub providers: BTreeMap<String, RawProvider>,
    /// `[models.NAME]`.
    #[serde(default)]
    pub models: BTreeMap<String, RawModel>,
    /// `[safety]`: its raw type is the policy's own [`SafetyConfig`].
    #[serde(default)]
    pub safety: SafetyConfig,
    /// `[retention]`.
    #[serde(default)]
    pub retention: RawRetention,
}

/// `[retention]`: how long request payloads and raw replies are kept.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRetention {
    /// Purge payloads and raw replies older than this many days (default: keep them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload_days: Option<u32>,
    /// How often the sweep runs, in seconds (default 3600).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep_every_secs: Option<u64>,
}

/// The retry keys, of `[retry]` or of one contract's `[retry.contracts.NAME]`.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRetrySettings {
    /// Attempts per turn, 1–20.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_attempts: Option<u32>,
    /// Delay before the second attempt, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<u64>,
    /// Each later delay is the previous one times this, 1.0–10.0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backoff: Option<f64>,
    /// Upper bound of a delay, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_delay_ms: Option<u64>,
    /// Random spread, as a fraction of the delay, 0.0–1.0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter: Option<f64>,
    /// Tokens (input + output) a turn's attempts may use before it stops retrying.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_turn_tokens: Option<u64>,
}

/// `[retry]`: the defaults, and per-contract overrides.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRetry {
    /// Attempts per turn, 1–20 (default 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_attempts: Option<u32>,
    /// Delay before the second attempt, in milliseconds (default 500).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<u64>,
    /// Each later delay is the previous one times this (default 1.0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backoff: Option<f64>,
    /// Upper bound of a delay, in milliseconds (default 8000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_delay_ms: Option<u64>,
    /// Random spread, as a fraction of the delay (default 0.0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter: Option<f64>,
    /// Tokens (input + output) a turn's attempts may use before it stops retrying (default:
    /// no budget).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_turn_tokens: Option<u64>,
    /// `[retry.contracts.NAME]`: overrides for one contract.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub contracts: BTreeMap<String, RawRetrySettings>,
}

impl RawRetry {
    /// The section's own keys, without the per-contract overrides.
    pub fn defaults(&self) -> RawRetrySettings {
        RawRetrySettings {
            max_attempts: self.max_attempts,
            delay_ms: self.delay_ms,
            backoff: self.backoff,
            max_delay_ms: self.max_delay_ms,
            jitter: self.jitter,
            max_turn_tokens: self.max_turn_tokens,
        }
    }
}

/// `[providers.NAME]`: one provider entry. The keys of a `kind = "mock"` entry are the mock's
/// own ([`RawMockSettings`]), refused on the other kinds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawProvider {
    /// `openai`, `azure`, `anthropic`, `gemini` or `mock`.
    pub kind: ProviderKind,
    /// The API's base URL (required for `openai` and `azure`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// The API key itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key: Option<String>,
    /// The environment variable holding the API key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// Time allowed per call, in seconds (default 60).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_secs: Option<f64>,
    /// Azure OpenAI's `api-version` (`kind = "azure"` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// The mock's keys (`kind = "mock"` only).
    #[serde(flatten)]
    pub mock: RawMockSettings,
}

/// `[models.NAME]`: one model entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawModel {
    /// The provider entry it runs on.
    pub provider: String,
    /// The provider's name for it (default: the entry's name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Pass the contract's schema as native structured output.
    #[serde(default)]
    pub native_structured_output: bool,
    /// The model accepts a system role (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_role: Option<bool>,
    /// Sampling temperature, 0.0–2.0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Most tokens per reply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// The model a turn moves to after `escalate_after` failed content attempts on this one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escalate_to: Option<String>,
    /// Failed content attempts on this model before the turn escalates, 1–20 (default: half
    /// of the turn's attempts left, rounded up).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escalate_after: Option<u32>,
    /// The models that stand in for this one, in order, when its provider fails (at most 8).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failover: Vec<String>,
    /// Headers sent with every request of this model.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// Query parameters added to every request of this model.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub query: BTreeMap<String, String>,
    /// Time allowed per call, in seconds (default: the provider's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_secs: Option<f64>,
}
