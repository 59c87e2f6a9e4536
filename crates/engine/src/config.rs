//! [`Config`]: `bridle.toml` + `BRIDLE__…` environment overrides → validated settings for the
//! store, contracts, retries, providers and models. Zero config works: SQLite in
//! `./bridle-data`, the built-in mock provider. `OPENAI_BASE_URL` (+ `OPENAI_API_KEY`,
//! `OPENAI_MODEL`) adds an OpenAI-compatible upstream and makes it the default.
//!
//! The built-in mock (model and provider `mock`) is there only when the configuration uses it:
//! zero config, `default_model = "mock"`, a `[models.mock]` entry, a model of provider `mock`,
//! or a `kind = "mock"` provider. With a real default model and no such entry, `mock` is an
//! unknown model like any other name.
//!
//! ```toml
//! data_dir = "./bridle-data"
//! store_url = "postgres://bridle@db/bridle"     # default: sqlite://<data_dir>/bridle.db
//! store_commit = "before_reply"                 # or "after_reply" (SQLite: answer, then commit)
//! contracts_dirs = ["./contracts"]
//! default_model = "gpt"
//!
//! [retry]                                       # defaults shown
//! max_attempts = 3
//! delay_ms = 500
//! backoff = 1.0                                 # 2.0 doubles the delay each retry
//! max_delay_ms = 8000
//! jitter = 0.0                                  # ± fraction of the delay
//! [retry.contracts.selfhelp-response]           # per-contract overrides
//! max_attempts = 4
//!
//! [providers.upstream]
//! kind = "openai"                               # openai | anthropic | mock
//! base_url = "http://127.0.0.1:11434/v1"
//! api_key_env = "UPSTREAM_KEY"                  # or api_key = "…"
//! timeout_secs = 60
//!
//! [providers.mock]                              # the built-in mock, also model "mock"
//! kind = "mock"
//! fault_rate = 0.2                              # share of attempts given a fault
//! faults = [{ kind = "wrong_key" }, { kind = "http429", retry_after_secs = 1 }]
//! seed = 7
//! latency_ms = 0
//! stream_piece_chars = 6                        # characters per streamed delta
//! stream_interval_ms = 0                        # pause between streamed deltas
//! script = "mock-script.json"                   # scripted replies/faults per turn
//!
//! [models.gpt]
//! provider = "upstream"
//! model = "gpt-4o-mini"                         # the provider's name for it (default: the entry's)
//! native_structured_output = true               # pass response_format json_schema through
//! system_role = true                            # false: merge system text into the first user message
//! temperature = 0.2
//! max_tokens = 2048
//! ```
//!
//! Environment: `BRIDLE__RETRY__MAX_ATTEMPTS=5`, `BRIDLE__STORE_URL=…`,
//! `BRIDLE__PROVIDERS__UPSTREAM__BASE_URL=…` (double underscores separate keys).

use figment::Figment;
use figment::providers::{Env, Format, Toml};
use rand::RngExt;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

mod builtin;

/// A configuration that could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file or environment could not be read into the settings.
    #[error("configuration: {0}")]
    Read(String),
    /// A setting is wrong.
    #[error("configuration: {0}")]
    Invalid(String),
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    data_dir: Option<PathBuf>,
    store_url: Option<String>,
    #[serde(default)]
    store_commit: crate::store::Commit,
    #[serde(default)]
    contracts_dirs: Vec<PathBuf>,
    default_model: Option<String>,
    #[serde(default)]
    retry: RawRetry,
    #[serde(default)]
    providers: BTreeMap<String, RawProvider>,
    #[serde(default)]
    models: BTreeMap<String, RawModel>,
    /// The gateway's own section, read and checked by the server crate.
    server: Option<serde_json::Value>,
    #[serde(default)]
    safety: crate::policy::SafetyConfig,
    #[serde(default)]
    retention: RawRetention,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRetention {
    payload_days: Option<u32>,
    sweep_every_secs: Option<u64>,
}

/// How long stored request payloads and raw replies are kept (`[retention]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetentionConfig {
    /// Payloads and raw replies of attempts older than this many days are purged; `None`:
    /// kept for ever (the default).
    pub payload_days: Option<u32>,
    /// How often the sweep runs.
    pub sweep_every: Duration,
}

impl RetentionConfig {
    fn from_raw(raw: &RawRetention) -> Result<Self, ConfigError> {
        if raw.payload_days == Some(0) {
            return Err(ConfigError::Invalid(
                "[retention] payload_days must be at least 1 (leave it out to keep payloads)"
                    .into(),
            ));
        }
        let every = raw.sweep_every_secs.unwrap_or(3600);
        if every == 0 {
            return Err(ConfigError::Invalid(
                "[retention] sweep_every_secs must be at least 1".into(),
            ));
        }
        Ok(Self {
            payload_days: raw.payload_days,
            sweep_every: Duration::from_secs(every),
        })
    }
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRetrySettings {
    max_attempts: Option<u32>,
    delay_ms: Option<u64>,
    backoff: Option<f64>,
    max_delay_ms: Option<u64>,
    jitter: Option<f64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRetry {
    max_attempts: Option<u32>,
    delay_ms: Option<u64>,
    backoff: Option<f64>,
    max_delay_ms: Option<u64>,
    jitter: Option<f64>,
    #[serde(default)]
    contracts: BTreeMap<String, RawRetrySettings>,
}

impl RawRetry {
    fn defaults(&self) -> RawRetrySettings {
        RawRetrySettings {
            max_attempts: self.max_attempts,
            delay_ms: self.delay_ms,
            backoff: self.backoff,
            max_delay_ms: self.max_delay_ms,
            jitter: self.jitter,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProvider {
    kind: ProviderKind,
    base_url: Option<String>,
    api_key: Option<String>,
    api_key_env: Option<String>,
    timeout_secs: Option<f64>,
    // Mock only.
    seed: Option<u64>,
    fault_rate: Option<f64>,
    latency_ms: Option<u64>,
    stream_piece_chars: Option<usize>,
    stream_interval_ms: Option<u64>,
    script: Option<PathBuf>,
    faults: Option<Vec<bridle_mock::Fault>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawModel {
    provider: String,
    model: Option<String>,
    #[serde(default)]
    native_structured_output: bool,
    system_role: Option<bool>,
    temperature: Option<f64>,
    max_tokens: Option<u32>,
}

/// Which implementation a provider entry uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// OpenAI-compatible Chat Completions.
    Openai,
    /// Anthropic Messages.
    Anthropic,
    /// The built-in mock LLM (in process).
    Mock,
}

/// How a turn retries.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    /// Attempts per turn, at least 1.
    pub max_attempts: u32,
    /// Delay before the second attempt.
    pub delay: Duration,
    /// Each later delay is the previous one times this (1.0 = constant).
    pub backoff: f64,
    /// Upper bound of a delay (before `Retry-After`, which is always honoured).
    pub max_delay: Duration,
    /// Random spread, as a fraction of the delay (0.0–1.0).
    pub jitter: f64,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 3,
            delay: Duration::from_millis(500),
            backoff: 1.0,
            max_delay: Duration::from_secs(8),
            jitter: 0.0,
        }
    }
}

impl RetryPolicy {
    /// The wait after failed attempt `attempt` (1-based); at least `retry_after` when the
    /// provider asked for it.
    pub fn delay_after(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        let exponent = i32::try_from(attempt.saturating_sub(1)).unwrap_or(i32::MAX);
        let base = self.delay.as_secs_f64() * self.backoff.powi(exponent);
        let mut seconds = base.min(self.max_delay.as_secs_f64());
        if self.jitter > 0.0 && seconds > 0.0 {
            let spread = seconds * self.jitter;
            seconds += rand::rng().random_range(-spread..=spread);
        }
        let planned = Duration::from_secs_f64(seconds.max(0.0));
        retry_after.map_or(planned, |wanted| planned.max(wanted))
    }

    fn merged(&self, raw: &RawRetrySettings) -> Result<Self, ConfigError> {
        let policy = Self {
            max_attempts: raw.max_attempts.unwrap_or(self.max_attempts),
            delay: raw.delay_ms.map_or(self.delay, Duration::from_millis),
            backoff: raw.backoff.unwrap_or(self.backoff),
            max_delay: raw
                .max_delay_ms
                .map_or(self.max_delay, Duration::from_millis),
            jitter: raw.jitter.unwrap_or(self.jitter),
        };
        if !(1..=20).contains(&policy.max_attempts) {
            return Err(ConfigError::Invalid(format!(
                "retry.max_attempts must be 1–20, got {}",
                policy.max_attempts
            )));
        }
        if !(policy.backoff.is_finite() && (1.0..=10.0).contains(&policy.backoff)) {
            return Err(ConfigError::Invalid(format!(
                "retry.backoff must be 1.0–10.0, got {}",
                policy.backoff
            )));
        }
        if !(policy.jitter.is_finite() && (0.0..=1.0).contains(&policy.jitter)) {
            return Err(ConfigError::Invalid(format!(
                "retry.jitter must be 0.0–1.0, got {}",
                policy.jitter
            )));
        }
        Ok(policy)
    }
}

/// A validated provider entry.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderConfig {
    /// Implementation.
    pub kind: ProviderKind,
    /// Base URL (HTTP providers).
    pub base_url: String,
    /// API key, resolved from `api_key` or `api_key_env`.
    pub api_key: Option<String>,
    /// Time allowed per call.
    pub timeout: Duration,
    /// Behaviour of a `mock` provider (seed, fault rate, latency, script).
    pub mock: MockSettings,
}

/// Settings of a `mock` provider entry.
#[derive(Debug, Clone, PartialEq)]
pub struct MockSettings {
    /// Seed of its choices.
    pub seed: u64,
    /// Share of attempts given a fault (0.0–1.0).
    pub fault_rate: f64,
    /// Added to every reply.
    pub latency_ms: u64,
    /// Scripted replies and faults per turn.
    pub script: Option<bridle_mock::Script>,
    /// The faults drawn from (default: all of them).
    pub faults: Option<Vec<bridle_mock::Fault>>,
    /// Characters per streamed delta.
    pub stream_piece_chars: usize,
    /// Pause between streamed deltas, in milliseconds.
    pub stream_interval_ms: u64,
}

impl Default for MockSettings {
    fn default() -> Self {
        Self {
            seed: 0,
            fault_rate: 0.0,
            latency_ms: 0,
            script: None,
            faults: None,
            stream_piece_chars: bridle_mock::DEFAULT_STREAM_PIECE_CHARS,
            stream_interval_ms: 0,
        }
    }
}

/// A validated model entry.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelConfig {
    /// Provider entry name.
    pub provider: String,
    /// The provider's model id.
    pub model: String,
    /// Pass the contract's schema as native structured output.
    pub native_structured_output: bool,
    /// The model accepts a system role.
    pub system_role: bool,
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// Most tokens per reply.
    pub max_tokens: Option<u32>,
}

/// Validated settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Where Bridle keeps its files.
    pub data_dir: PathBuf,
    /// `sqlite://…` or `postgres://…`.
    pub store_url: String,
    /// When a turn's messages are committed relative to its answer.
    pub store_commit: crate::store::Commit,
    /// Contract directories added to the built-ins.
    pub contracts_dirs: Vec<PathBuf>,
    /// Model used when a request names none.
    pub default_model: String,
    /// Retry defaults.
    pub retry: RetryPolicy,
    /// Per-contract retry overrides.
    pub contract_retry: BTreeMap<String, RetryPolicy>,
    /// Providers by entry name.
    pub providers: BTreeMap<String, ProviderConfig>,
    /// Models by entry name.
    pub models: BTreeMap<String, ModelConfig>,
    /// The `[server]` section as written (checked by the server).
    pub server: serde_json::Value,
    /// The safety policy: crisis texts, webhook, SMTP.
    pub safety: crate::policy::SafetyConfig,
    /// How long payloads and raw replies are kept.
    pub retention: RetentionConfig,
}

/// Environment the configuration reads besides `BRIDLE__…` (injected for tests).
pub type Environment = BTreeMap<String, String>;

impl Config {
    /// Loads `file` (must exist when given) and the process environment.
    ///
    /// `data_dir`, when given (the command line's `--data-dir`), wins over both.
    pub fn load(file: Option<&Path>, data_dir: Option<&Path>) -> Result<Self, ConfigError> {
        let env: Environment = std::env::vars().collect();
        let mut figment = Figment::new();
        if let Some(path) = file {
            if !path.is_file() {
                return Err(ConfigError::Read(format!(
                    "config file {} does not exist",
                    path.display()
                )));
            }
            figment = figment.merge(Toml::file_exact(path));
        }
        figment = figment.merge(Env::prefixed("BRIDLE__").split("__"));
        if let Some(dir) = data_dir {
            figment = figment.merge(figment::providers::Serialized::default("data_dir", dir));
        }
        Self::from_figment(figment, &env)
    }

    /// Loads from TOML text and an explicit environment (no process state): for tests and tools.
    pub fn from_toml(text: &str, env: &Environment) -> Result<Self, ConfigError> {
        Self::from_figment(Figment::new().merge(Toml::string(text)), env)
    }

    fn from_figment(figment: Figment, env: &Environment) -> Result<Self, ConfigError> {
        let raw: RawConfig = figment
            .extract()
            .map_err(|e| ConfigError::Read(e.to_string()))?;
        Self::validate(raw, env)
    }

    fn validate(raw: RawConfig, env: &Environment) -> Result<Self, ConfigError> {
        let data_dir = raw
            .data_dir
            .unwrap_or_else(|| PathBuf::from("./bridle-data"));
        let store_url = raw
            .store_url
            .unwrap_or_else(|| format!("sqlite://{}", data_dir.join("bridle.db").display()));
        let retry = RetryPolicy::default().merged(&raw.retry.defaults())?;
        let contract_retry = raw
            .retry
            .contracts
            .iter()
            .map(|(name, r)| retry.merged(r).map(|p| (name.clone(), p)))
            .collect::<Result<BTreeMap<_, _>, _>>()?;

        let mut providers = BTreeMap::new();
        for (name, p) in raw.providers {
            providers.insert(name.clone(), provider(&name, p, env)?);
        }
        let mut models = BTreeMap::new();
        for (name, m) in raw.models {
            if !providers.contains_key(&m.provider) && m.provider != "mock" {
                return Err(ConfigError::Invalid(format!(
                    "model {name:?} names unknown provider {:?}",
                    m.provider
                )));
            }
            if let Some(t) = m.temperature
                && !(0.0..=2.0).contains(&t)
            {
                return Err(ConfigError::Invalid(format!(
                    "model {name:?}: temperature must be 0.0–2.0"
                )));
            }
            models.insert(
                name.clone(),
                ModelConfig {
                    provider: m.provider,
                    model: m.model.unwrap_or_else(|| name.clone()),
                    native_structured_output: m.native_structured_output,
                    system_role: m.system_role.unwrap_or(true),
                    temperature: m.temperature,
                    max_tokens: m.max_tokens,
                },
            );
        }

        let mut default_model = raw.default_model;
        if let Some(base_url) = env.get("OPENAI_BASE_URL").filter(|s| !s.trim().is_empty()) {
            providers.entry("openai".into()).or_insert(ProviderConfig {
                kind: ProviderKind::Openai,
                base_url: base_url.trim().to_owned(),
                api_key: env.get("OPENAI_API_KEY").cloned().filter(|k| !k.is_empty()),
                timeout: Duration::from_secs(120),
                mock: MockSettings::default(),
            });
            let model = env
                .get("OPENAI_MODEL")
                .cloned()
                .unwrap_or_else(|| "gpt-4o-mini".into());
            models.entry("openai".into()).or_insert(ModelConfig {
                provider: "openai".into(),
                model,
                native_structured_output: false,
                system_role: true,
                temperature: None,
                max_tokens: None,
            });
            default_model.get_or_insert_with(|| "openai".into());
        }
        let default_model = default_model.unwrap_or_else(|| "mock".into());

        builtin::add_mock(&default_model, &mut providers, &mut models);
        if !models.contains_key(&default_model) {
            return Err(ConfigError::Invalid(format!(
                "default_model {default_model:?} is not a configured model"
            )));
        }
        let retention = RetentionConfig::from_raw(&raw.retention)?;
        Ok(Self {
            data_dir,
            store_url,
            store_commit: raw.store_commit,
            retention,
            contracts_dirs: raw.contracts_dirs,
            default_model,
            retry,
            contract_retry,
            providers,
            models,
            server: raw.server.unwrap_or(serde_json::Value::Null),
            safety: {
                raw.safety
                    .validate()
                    .map_err(|e| ConfigError::Invalid(format!("[safety] {e}")))?;
                raw.safety
            },
        })
    }

    /// The retry policy for `contract`.
    pub fn retry_for(&self, contract: &str) -> RetryPolicy {
        self.contract_retry
            .get(contract)
            .copied()
            .unwrap_or(self.retry)
    }
}

fn provider(name: &str, p: RawProvider, env: &Environment) -> Result<ProviderConfig, ConfigError> {
    let invalid = |m: String| ConfigError::Invalid(format!("provider {name:?}: {m}"));
    let base_url = match (p.kind, p.base_url) {
        (ProviderKind::Mock, url) => url.unwrap_or_default(),
        (ProviderKind::Anthropic, None) => "https://api.anthropic.com/v1".into(),
        (ProviderKind::Openai, None) => return Err(invalid("base_url is required".into())),
        (_, Some(url)) => {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(invalid(format!(
                    "base_url {url:?} must start with http:// or https://"
                )));
            }
            url
        }
    };
    let api_key = match (p.api_key, p.api_key_env) {
        (Some(_), Some(_)) => return Err(invalid("set api_key or api_key_env, not both".into())),
        (Some(key), None) => Some(key),
        (None, Some(var)) => Some(
            env.get(&var)
                .cloned()
                .ok_or_else(|| invalid(format!("environment variable {var} is not set")))?,
        ),
        (None, None) => None,
    };
    let timeout = p.timeout_secs.unwrap_or(60.0);
    if !(timeout.is_finite() && timeout > 0.0 && timeout <= 3600.0) {
        return Err(invalid("timeout_secs must be in (0, 3600]".into()));
    }
    let mock_fields = p.seed.is_some()
        || p.fault_rate.is_some()
        || p.latency_ms.is_some()
        || p.stream_piece_chars.is_some()
        || p.stream_interval_ms.is_some()
        || p.script.is_some()
        || p.faults.is_some();
    if mock_fields && p.kind != ProviderKind::Mock {
        return Err(invalid(
            "seed, fault_rate, faults, latency_ms, stream_piece_chars, stream_interval_ms and script are settings of kind = \"mock\" only"
                .into(),
        ));
    }
    let fault_rate = p.fault_rate.unwrap_or(0.0);
    if !(0.0..=1.0).contains(&fault_rate) {
        return Err(invalid(format!(
            "fault_rate must be 0.0–1.0, got {fault_rate}"
        )));
    }
    let script = match &p.script {
        Some(path) => Some(bridle_mock::Script::load(path).map_err(|e| invalid(e.to_string()))?),
        None => None,
    };
    let mock = MockSettings {
        seed: p.seed.unwrap_or(0),
        fault_rate,
        latency_ms: p.latency_ms.unwrap_or(0),
        script,
        faults: p.faults,
        stream_piece_chars: p
            .stream_piece_chars
            .unwrap_or(bridle_mock::DEFAULT_STREAM_PIECE_CHARS),
        stream_interval_ms: p.stream_interval_ms.unwrap_or(0),
    };
    Ok(ProviderConfig {
        kind: p.kind,
        base_url,
        api_key,
        timeout: Duration::from_secs_f64(timeout),
        mock,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An environment of `pairs` (also used by `builtin.rs`'s tests).
    pub(super) fn env(pairs: &[(&str, &str)]) -> Environment {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn zero_config_is_sqlite_and_the_mock() {
        let c = Config::from_toml("", &env(&[])).unwrap();
        assert_eq!(c.store_url, "sqlite://./bridle-data/bridle.db");
        assert_eq!(c.default_model, "mock");
        assert_eq!(c.providers["mock"].kind, ProviderKind::Mock);
        assert_eq!(c.retry, RetryPolicy::default());
    }

    #[test]
    fn store_commit_is_before_reply_unless_told() {
        use crate::store::Commit;
        let default = Config::from_toml("", &env(&[])).unwrap();
        assert_eq!(default.store_commit, Commit::BeforeReply);
        let first = Config::from_toml("store_commit = \"after_reply\"", &env(&[])).unwrap();
        assert_eq!(first.store_commit, Commit::AfterReply);
        let error = Config::from_toml("store_commit = \"sometimes\"", &env(&[])).unwrap_err();
        assert!(error.to_string().contains("before_reply"), "{error}");
    }

    #[test]
    fn retention_keeps_payloads_unless_told_and_refuses_zero_days() {
        let kept = Config::from_toml("", &env(&[])).unwrap();
        assert_eq!(kept.retention.payload_days, None);
        let purged = Config::from_toml(
            "[retention]\npayload_days = 30\nsweep_every_secs = 600",
            &env(&[]),
        )
        .unwrap();
        assert_eq!(purged.retention.payload_days, Some(30));
        assert_eq!(purged.retention.sweep_every, Duration::from_secs(600));
        for bad in ["payload_days = 0", "sweep_every_secs = 0", "keep = 1"] {
            let text = format!("[retention]\n{bad}");
            assert!(Config::from_toml(&text, &env(&[])).is_err(), "{bad}");
        }
    }

    #[test]
    fn openai_base_url_adds_the_default_upstream() {
        let c = Config::from_toml(
            "",
            &env(&[
                ("OPENAI_BASE_URL", "http://127.0.0.1:9/v1"),
                ("OPENAI_API_KEY", "sk-x"),
            ]),
        )
        .unwrap();
        assert_eq!(c.default_model, "openai");
        assert_eq!(c.providers["openai"].api_key.as_deref(), Some("sk-x"));
        assert_eq!(c.models["openai"].model, "gpt-4o-mini");
    }

    #[test]
    fn a_full_file_is_read_and_checked() {
        let text = r#"
            data_dir = "/tmp/b"
            default_model = "gpt"
            [retry]
            max_attempts = 4
            backoff = 2.0
            [retry.contracts.selfhelp-response]
            max_attempts = 5
            [providers.up]
            kind = "openai"
            base_url = "http://127.0.0.1:1/v1"
            api_key_env = "UP_KEY"
            [models.gpt]
            provider = "up"
            model = "gpt-4o"
            system_role = false
        "#;
        let c = Config::from_toml(text, &env(&[("UP_KEY", "k")])).unwrap();
        assert_eq!(c.store_url, "sqlite:///tmp/b/bridle.db");
        assert_eq!(c.retry.max_attempts, 4);
        assert_eq!(c.retry_for("selfhelp-response").max_attempts, 5);
        assert_eq!(c.retry_for("selfhelp-response").backoff, 2.0);
        assert_eq!(c.retry_for("other").max_attempts, 4);
        assert_eq!(c.providers["up"].api_key.as_deref(), Some("k"));
        assert!(!c.models["gpt"].system_role);
    }

    #[test]
    fn mistakes_are_named() {
        for (text, env_pairs, wanted) in [
            ("colour = 1", vec![], "colour"),
            ("[retry]\nmax_attempts = 0", vec![], "max_attempts"),
            ("[retry]\njitter = 2.0", vec![], "jitter"),
            ("[retry]\nattempts = 2", vec![], "attempts"),
            (
                "[providers.x]\nkind = \"openai\"",
                vec![],
                "base_url is required",
            ),
            (
                "[providers.x]\nkind = \"openai\"\nbase_url = \"ftp://x\"",
                vec![],
                "http://",
            ),
            (
                "[providers.x]\nkind = \"openai\"\nbase_url = \"http://x\"\napi_key_env = \"NOPE\"",
                vec![],
                "NOPE",
            ),
            ("[models.m]\nprovider = \"ghost\"", vec![], "ghost"),
            ("default_model = \"nope\"", vec![], "nope"),
            ("[providers.x]\nkind = \"smtp\"", vec![], "smtp"),
        ] {
            let e = Config::from_toml(text, &env(&env_pairs))
                .unwrap_err()
                .to_string();
            assert!(e.contains(wanted), "{wanted:?} not in {e}");
        }
    }

    #[test]
    fn delays_back_off_cap_and_honour_retry_after() {
        let p = RetryPolicy {
            max_attempts: 5,
            delay: Duration::from_millis(100),
            backoff: 2.0,
            max_delay: Duration::from_millis(300),
            jitter: 0.0,
        };
        assert_eq!(p.delay_after(1, None), Duration::from_millis(100));
        assert_eq!(p.delay_after(2, None), Duration::from_millis(200));
        assert_eq!(p.delay_after(3, None), Duration::from_millis(300));
        assert_eq!(
            p.delay_after(1, Some(Duration::from_secs(2))),
            Duration::from_secs(2)
        );
        let j = RetryPolicy { jitter: 0.5, ..p };
        for _ in 0..50 {
            let d = j.delay_after(1, None);
            assert!(
                d >= Duration::from_millis(50) && d <= Duration::from_millis(150),
                "{d:?}"
            );
        }
    }
}
