//! [`ProviderConfig`] and [`ModelConfig`]: one `[providers.NAME]` and one `[models.NAME]`
//! entry, checked — base URL, API key (literal or from the environment), timeout, Azure's API
//! version, the mock's settings; the model's provider, name, options, and its [`ModelHttp`]
//! (extra headers and query parameters, its own timeout).

use super::Environment;
use super::raw::{RawModel, RawProvider};
use bridle_core::ConfigError;
use bridle_mock::MockSettings;
use bridle_providers::http::{check_extras, is_secret_name};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Which implementation a provider entry uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// OpenAI-compatible Chat Completions.
    Openai,
    /// Azure OpenAI (Chat Completions at deployment URLs).
    Azure,
    /// Anthropic Messages.
    Anthropic,
    /// Google Gemini `generateContent`.
    Gemini,
    /// The built-in mock LLM (in process).
    Mock,
}

/// The base URL of the Gemini API, used when a `gemini` entry sets none.
pub const GEMINI_BASE_URL: &str = "https://generativelanguage.googleapis.com/v1beta";

/// A validated provider entry.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderConfig {
    /// Implementation.
    pub kind: ProviderKind,
    /// Base URL (HTTP providers).
    pub base_url: String,
    /// API key, resolved from `api_key` or `api_key_env`.
    pub api_key: Option<String>,
    /// The environment variable the key was read from, when it was.
    pub api_key_env: Option<String>,
    /// Time allowed per call.
    pub timeout: Duration,
    /// Azure's `api-version` (`azure` entries; others `None`).
    pub api_version: Option<String>,
    /// Behaviour of a `mock` provider (seed, fault rate, latency, script).
    pub mock: MockSettings,
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
    /// The model entry a turn escalates to ([`super::routes`]).
    pub escalate_to: Option<String>,
    /// Failed content attempts before escalating; `None`: half of the attempts left.
    pub escalate_after: Option<u32>,
    /// The model entries that stand in for this one on provider errors, in order.
    pub failover: Vec<String>,
    /// Extra headers and query parameters, and the model's own timeout.
    pub http: ModelHttp,
}

/// What a model entry adds to its provider's HTTP requests.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ModelHttp {
    /// Headers sent with every request (checked: bounded, no auth or content-type override).
    pub headers: Vec<(String, String)>,
    /// Query parameters added to every request's URL (bounded).
    pub query: Vec<(String, String)>,
    /// Time allowed per call, overriding the provider's.
    pub timeout: Option<Duration>,
}

/// Checks one provider entry; an error names its key within the entry (`base_url`).
pub(super) fn provider(p: RawProvider, env: &Environment) -> Result<ProviderConfig, ConfigError> {
    let base_url = match (p.kind, p.base_url) {
        (ProviderKind::Mock, url) => url.unwrap_or_default(),
        (ProviderKind::Anthropic, None) => "https://api.anthropic.com/v1".into(),
        (ProviderKind::Gemini, None) => GEMINI_BASE_URL.into(),
        (ProviderKind::Openai | ProviderKind::Azure, None) => {
            return Err(ConfigError::new("base_url", "base_url is required"));
        }
        (_, Some(url)) => {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(ConfigError::new(
                    "base_url",
                    format!("base_url {url:?} must start with http:// or https://"),
                ));
            }
            url
        }
    };
    let api_key = match (p.api_key, &p.api_key_env) {
        (Some(_), Some(_)) => {
            return Err(ConfigError::new(
                "api_key",
                "set api_key or api_key_env, not both",
            ));
        }
        (Some(key), None) => Some(key),
        (None, Some(var)) => Some(env.get(var).cloned().ok_or_else(|| {
            ConfigError::new(
                "api_key_env",
                format!("environment variable {var} is not set"),
            )
        })?),
        (None, None) => None,
    };
    let timeout = timeout(p.timeout_secs.unwrap_or(60.0))?;
    let api_version = match (p.kind, p.api_version) {
        (ProviderKind::Azure, None) => Some(bridle_providers::openai::AZURE_API_VERSION.into()),
        (ProviderKind::Azure, Some(version)) => {
            let fits = !version.is_empty()
                && version.len() <= 40
                && version
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.');
            if !fits {
                return Err(ConfigError::new(
                    "api_version",
                    "api_version must be up to 40 letters, digits, '-' and '.' (e.g. \"2024-10-21\")",
                ));
            }
            Some(version)
        }
        (_, Some(_)) => {
            return Err(ConfigError::new(
                "api_version",
                "api_version is a setting of kind = \"azure\" only",
            ));
        }
        (_, None) => None,
    };
    if let Some(key) = p.mock.keys_set().first()
        && p.kind != ProviderKind::Mock
    {
        return Err(ConfigError::new(
            *key,
            "seed, fault_rate, faults, latency_ms, stream_piece_chars, stream_interval_ms and script are settings of kind = \"mock\" only",
        ));
    }
    Ok(ProviderConfig {
        kind: p.kind,
        base_url,
        api_key,
        api_key_env: p.api_key_env,
        timeout,
        api_version,
        mock: p.mock.load()?,
    })
}

/// Extra headers or query parameters as written back: secret-looking values redacted.
fn shown(pairs: &[(String, String)]) -> std::collections::BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(name, value)| {
            let value = if is_secret_name(name) {
                bridle_providers::REDACTED
            } else {
                value
            };
            (name.clone(), value.to_owned())
        })
        .collect()
}

/// A `timeout_secs` value, checked: in (0, 3600].
fn timeout(seconds: f64) -> Result<Duration, ConfigError> {
    if !(seconds.is_finite() && seconds > 0.0 && seconds <= 3600.0) {
        return Err(ConfigError::new(
            "timeout_secs",
            "timeout_secs must be in (0, 3600]",
        ));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// A model entry's `headers` and `query`, checked, and its `timeout_secs`.
fn model_http(m: &RawModel) -> Result<ModelHttp, ConfigError> {
    let pairs = |map: &std::collections::BTreeMap<String, String>| -> Vec<(String, String)> {
        map.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
    };
    let (headers, query) = (pairs(&m.headers), pairs(&m.query));
    for (key, list, is_header) in [("headers", &headers, true), ("query", &query, false)] {
        check_extras(list, is_header).map_err(|e| ConfigError::new(key, format!("{key}: {e}")))?;
    }
    Ok(ModelHttp {
        headers,
        query,
        timeout: m.timeout_secs.map(timeout).transpose()?,
    })
}

/// Checks one model entry named `name`; an error names its key within the entry.
pub(super) fn model(
    name: &str,
    m: RawModel,
    known_provider: impl Fn(&str) -> bool,
) -> Result<ModelConfig, ConfigError> {
    if !known_provider(&m.provider) && m.provider != "mock" {
        return Err(ConfigError::new(
            "provider",
            format!("model {name:?} names unknown provider {:?}", m.provider),
        ));
    }
    if let Some(t) = m.temperature
        && !(0.0..=2.0).contains(&t)
    {
        return Err(ConfigError::new(
            "temperature",
            format!("model {name:?}: temperature must be 0.0–2.0"),
        ));
    }
    super::routes::check_entry(name, &m)?;
    let http = model_http(&m)?;
    Ok(ModelConfig {
        http,
        provider: m.provider,
        model: m.model.unwrap_or_else(|| name.to_owned()),
        native_structured_output: m.native_structured_output,
        system_role: m.system_role.unwrap_or(true),
        temperature: m.temperature,
        max_tokens: m.max_tokens,
        escalate_to: m.escalate_to,
        escalate_after: m.escalate_after,
        failover: m.failover,
    })
}

impl ProviderConfig {
    /// The entry as keys again, every default written out; the key itself only as
    /// `redacted` (a key read from the environment stays `api_key_env`).
    pub(super) fn to_raw(&self, redacted: &str) -> RawProvider {
        let is_mock = self.kind == ProviderKind::Mock;
        RawProvider {
            kind: self.kind,
            base_url: (!(is_mock && self.base_url.is_empty())).then(|| self.base_url.clone()),
            api_key: match (&self.api_key, &self.api_key_env) {
                (Some(_), None) => Some(redacted.to_owned()),
                _ => None,
            },
            api_key_env: self.api_key_env.clone(),
            timeout_secs: Some(self.timeout.as_secs_f64()),
            api_version: self.api_version.clone(),
            mock: if is_mock {
                self.mock.to_raw()
            } else {
                bridle_mock::RawMockSettings::default()
            },
        }
    }
}

impl ModelConfig {
    /// The entry as keys again, every default written out.
    pub(super) fn to_raw(&self) -> RawModel {
        RawModel {
            provider: self.provider.clone(),
            model: Some(self.model.clone()),
            native_structured_output: self.native_structured_output,
            system_role: Some(self.system_role),
            temperature: self.temperature,
            max_tokens: self.max_tokens,
            escalate_to: self.escalate_to.clone(),
            escalate_after: self.escalate_after,
            failover: self.failover.clone(),
            headers: shown(&self.http.headers),
            query: shown(&self.http.query),
            timeout_secs: self.http.timeout.map(|t| t.as_secs_f64()),
        }
    }
}
