//! [`Config`]: the engine's settings — store, contracts, retries, providers, models, safety,
//! retention — checked from their raw form [`RawConfig`] by [`RawConfig::load`]. Zero config
//! works: SQLite in `./bridle-data`, the built-in mock provider. `OPENAI_BASE_URL`
//! (+ `OPENAI_API_KEY`, `OPENAI_MODEL`) adds an OpenAI-compatible upstream and makes it the
//! default.
//!
//! The built-in mock (model and provider `mock`) is there only when the configuration uses it:
//! zero config, `default_model = "mock"`, a `[models.mock]` entry, a model of provider `mock`,
//! or a `kind = "mock"` provider. With a real default model and no such entry, `mock` is an
//! unknown model like any other name.
//!
//! The file, `bridle.toml`, belongs to the binary (`crates/cli/src/config_file.rs`): it reads
//! the engine's keys and the gateway's `[server]` section together, with the `BRIDLE__…`
//! environment overlay, and hands each crate its part. Every key, its default and meaning:
//! `docs/configuration.md`, which a test keeps in step with `bridle config show`. Every
//! mistake is a [`ConfigError`] naming its key path (`retry.max_attempts: must be 1–20, got 0`).

use figment::Figment;
use figment::providers::{Format, Toml};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

mod builtin;
mod provider;
mod raw;
mod retention;
mod retry;
mod routes;
#[cfg(test)]
mod tests;

pub use bridle_core::ConfigError;
pub use bridle_mock::MockSettings;
pub use provider::{GEMINI_BASE_URL, ModelConfig, ModelHttp, ProviderConfig, ProviderKind};
pub use raw::{RawConfig, RawModel, RawProvider, RawRetention, RawRetry, RawRetrySettings};
pub use retention::RetentionConfig;
pub use retry::RetryPolicy;

/// What `show` writes in place of a secret (an API key, a password, a webhook's token).
pub const REDACTED: &str = "[REDACTED]";

/// The most `store_max_connections` may be.
const MAX_STORE_CONNECTIONS: u32 = 1000;

/// Validated settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Where Bridle keeps its files.
    pub data_dir: PathBuf,
    /// `sqlite://…` or `postgres://…`.
    pub store_url: String,
    /// When a turn's messages are committed relative to its answer.
    pub store_commit: crate::store::Commit,
    /// PostgreSQL: the most connections the pool keeps.
    pub store_max_connections: u32,
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
    /// The safety policy: crisis texts, webhook, SMTP (checked; the policy builds its
    /// channels from it).
    pub safety: crate::policy::SafetyConfig,
    /// How long payloads and raw replies are kept.
    pub retention: RetentionConfig,
}

/// Environment the configuration reads besides `BRIDLE__…` (injected for tests).
pub type Environment = BTreeMap<String, String>;

impl Config {
    /// Loads from TOML text and an explicit environment (no process state, no `[server]`
    /// section — that is the gateway's): for tests and tools.
    pub fn from_toml(text: &str, env: &Environment) -> Result<Self, ConfigError> {
        let raw: RawConfig = extract(&Figment::new().merge(Toml::string(text)))?;
        raw.load(env)
    }

    /// The retry policy for `contract`.
    pub fn retry_for(&self, contract: &str) -> RetryPolicy {
        self.contract_retry
            .get(contract)
            .copied()
            .unwrap_or(self.retry)
    }

    /// The configuration as keys again, every default written out, in a stable order; secrets
    /// (API keys, the SMTP password, the webhook URL's path and query, a store URL's password)
    /// as [`REDACTED`]. Without secrets, loading it gives this configuration back.
    pub fn to_raw(&self) -> RawConfig {
        let contracts = self
            .contract_retry
            .iter()
            .map(|(name, policy)| (name.clone(), policy.to_raw()))
            .collect();
        let retry = self.retry.to_raw();
        RawConfig {
            data_dir: Some(self.data_dir.clone()),
            store_url: Some(redact_password(&self.store_url)),
            store_commit: self.store_commit,
            store_max_connections: Some(self.store_max_connections),
            contracts_dirs: self.contracts_dirs.clone(),
            default_model: Some(self.default_model.clone()),
            retry: RawRetry {
                max_attempts: retry.max_attempts,
                delay_ms: retry.delay_ms,
                backoff: retry.backoff,
                max_delay_ms: retry.max_delay_ms,
                jitter: retry.jitter,
                max_turn_tokens: retry.max_turn_tokens,
                contracts,
            },
            providers: self
                .providers
                .iter()
                .map(|(name, p)| (name.clone(), p.to_raw(REDACTED)))
                .collect(),
            models: self
                .models
                .iter()
                .map(|(name, m)| (name.clone(), m.to_raw()))
                .collect(),
            safety: self.safety.redacted(REDACTED),
            retention: self.retention.to_raw(),
        }
    }
}

impl RawConfig {
    /// Checks every key and fills in the defaults; `env` is read for `api_key_env` and the
    /// `OPENAI_*` conveniences. The error names the first key at fault by its path.
    pub fn load(self, env: &Environment) -> Result<Config, ConfigError> {
        let data_dir = self
            .data_dir
            .unwrap_or_else(|| PathBuf::from("./bridle-data"));
        let store_url = self
            .store_url
            .unwrap_or_else(|| format!("sqlite://{}", data_dir.join("bridle.db").display()));
        let store_max_connections = match self.store_max_connections {
            Some(n) if !(1..=MAX_STORE_CONNECTIONS).contains(&n) => {
                return Err(ConfigError::new(
                    "store_max_connections",
                    format!("must be 1 to {MAX_STORE_CONNECTIONS}, not {n}"),
                ));
            }
            Some(n) => n,
            None => crate::store::DEFAULT_POSTGRES_CONNECTIONS,
        };
        let retry = RetryPolicy::default()
            .merged(&self.retry.defaults())
            .map_err(|e| e.within("retry"))?;
        let contract_retry = self
            .retry
            .contracts
            .iter()
            .map(|(name, r)| {
                retry
                    .merged(r)
                    .map(|p| (name.clone(), p))
                    .map_err(|e| e.within(&format!("retry.contracts.{name}")))
            })
            .collect::<Result<BTreeMap<_, _>, _>>()?;

        let mut providers = BTreeMap::new();
        for (name, p) in self.providers {
            let checked =
                provider::provider(p, env).map_err(|e| e.within(&format!("providers.{name}")))?;
            providers.insert(name, checked);
        }
        let mut models = BTreeMap::new();
        for (name, m) in self.models {
            let checked = provider::model(&name, m, |p| providers.contains_key(p))
                .map_err(|e| e.within(&format!("models.{name}")))?;
            models.insert(name, checked);
        }

        let default_model = openai_from_env(env, self.default_model, &mut providers, &mut models);
        builtin::add_mock(&default_model, &mut providers, &mut models);
        routes::check(&models)?;
        if !models.contains_key(&default_model) {
            return Err(ConfigError::new(
                "default_model",
                format!("default_model {default_model:?} is not a configured model"),
            ));
        }
        let retention =
            RetentionConfig::from_raw(&self.retention).map_err(|e| e.within("retention"))?;
        self.safety
            .validate()
            .map_err(|e| ConfigError::new(e.field.clone(), e.problem.clone()).within("safety"))?;
        Ok(Config {
            data_dir,
            store_url,
            store_commit: self.store_commit,
            store_max_connections,
            retention,
            contracts_dirs: self.contracts_dirs,
            default_model,
            retry,
            contract_retry,
            providers,
            models,
            safety: self.safety,
        })
    }
}

/// `OPENAI_BASE_URL` (+ `OPENAI_API_KEY`, `OPENAI_MODEL`): a provider and model `openai`
/// unless the file has them, and the default model unless the file names one. Returns the
/// default model (`mock` when nothing names one).
fn openai_from_env(
    env: &Environment,
    mut default_model: Option<String>,
    providers: &mut BTreeMap<String, ProviderConfig>,
    models: &mut BTreeMap<String, ModelConfig>,
) -> String {
    if let Some(base_url) = env.get("OPENAI_BASE_URL").filter(|s| !s.trim().is_empty()) {
        let api_key = env.get("OPENAI_API_KEY").cloned().filter(|k| !k.is_empty());
        providers.entry("openai".into()).or_insert(ProviderConfig {
            kind: ProviderKind::Openai,
            base_url: base_url.trim().to_owned(),
            api_key_env: api_key.as_ref().map(|_| "OPENAI_API_KEY".to_owned()),
            api_key,
            timeout: Duration::from_secs(120),
            api_version: None,
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
            escalate_to: None,
            escalate_after: None,
            failover: Vec::new(),
            http: ModelHttp::default(),
        });
        default_model.get_or_insert_with(|| "openai".into());
    }
    default_model.unwrap_or_else(|| "mock".into())
}

/// `scheme://user:secret@host/…` → `scheme://user:[REDACTED]@host/…`; a URL without a
/// password unchanged.
pub fn redact_password(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else {
        return url.to_owned();
    };
    let (scheme, rest) = url.split_at(scheme_end + 3);
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    let Some(at) = authority.rfind('@') else {
        return url.to_owned();
    };
    match authority[..at].split_once(':') {
        Some((user, _)) => format!("{scheme}{user}:{REDACTED}{}", &rest[at..]),
        None => url.to_owned(),
    }
}

/// Reads `T` (a [`RawConfig`], or a file layout that holds one) from `figment`; a key or
/// value that does not fit is a [`ConfigError`] naming its key path.
pub fn extract<T: serde::de::DeserializeOwned>(figment: &Figment) -> Result<T, ConfigError> {
    figment
        .extract()
        .map_err(|error| mock_key_error(figment, &error).unwrap_or_else(|| read_error(error)))
}

/// A mock key of a provider entry whose value does not fit: serde reports it on the entry (the
/// mock's keys are flattened into it), so the entry's mock keys are read again alone to find
/// the key.
fn mock_key_error(figment: &Figment, error: &figment::Error) -> Option<ConfigError> {
    use figment::error::Kind;
    let [section, name] = error.path.as_slice() else {
        return None;
    };
    let named = match &error.kind {
        Kind::MissingField(_) => true,
        Kind::Message(text) => text.starts_with("unknown field `"),
        _ => false,
    };
    if section != "providers" || named {
        return None;
    }
    let mut entry = figment
        .find_value(&format!("providers.{name}"))
        .ok()?
        .into_dict()?;
    entry.retain(|key, _| bridle_mock::RawMockSettings::KEYS.contains(&key.as_str()));
    let mut inner = figment::value::Value::from(entry)
        .deserialize::<bridle_mock::RawMockSettings>()
        .err()?;
    inner.path.splice(0..0, [section.clone(), name.clone()]);
    inner.metadata.clone_from(&error.metadata);
    Some(read_error(inner))
}

/// A file or environment value that does not fit the settings' types, as a [`ConfigError`]
/// naming its key path (`retry.max_attempts`, `providers.up.colour`) and where it came from
/// (the file, or the `BRIDLE__` environment).
pub fn read_error(error: figment::Error) -> ConfigError {
    use figment::error::Kind;
    let mut path = error.path.join(".");
    let message = match &error.kind {
        Kind::UnknownField(_, expected) => {
            format!("unknown key (known: {})", expected.join(", "))
        }
        Kind::MissingField(field) => {
            path = bridle_core::config_error::join(&path, field);
            "missing: this key is required".to_owned()
        }
        // A key no flattened part took (a provider entry's): serde names it in the message.
        Kind::Message(text) if text.starts_with("unknown field `") => {
            let field = text
                .trim_start_matches("unknown field `")
                .split('`')
                .next()
                .unwrap_or_default();
            path = bridle_core::config_error::join(&path, field);
            "unknown key".to_owned()
        }
        other => other.to_string().trim_end().to_owned(),
    };
    let origin = error.metadata.as_ref().map(|m| match &m.source {
        Some(figment::Source::File(file)) => file.display().to_string(),
        _ => m.name.to_string(),
    });
    match origin {
        Some(origin) => ConfigError::new(path, format!("{message} (in {origin})")),
        None => ConfigError::new(path, message),
    }
}
