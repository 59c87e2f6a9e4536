//! [`RawMockSettings`]: the mock model's keys in a configuration file — a `kind = "mock"`
//! provider entry of `bridle.toml` (`seed`, `fault_rate`, `faults`, `latency_ms`,
//! `stream_piece_chars`, `stream_interval_ms`, `script`, `safety`) — and [`RawMockSettings::load`] into
//! the checked [`MockSettings`], from which [`MockSettings::config`] makes the [`MockConfig`]
//! a model runs with. This is the one place those keys are defined: the engine's provider entry
//! embeds this type.

use crate::config::{DEFAULT_STREAM_PIECE_CHARS, MockConfig};
use crate::faults::Fault;
use crate::safety::SafetyMode;
use crate::script::Script;
use bridle_core::{ConfigError, Contracts};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// The mock's keys as written; every one optional.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMockSettings {
    /// Seed of every random choice (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Share of attempts given a fault, 0.0–1.0 (default 0.0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault_rate: Option<f64>,
    /// The faults drawn from (default: every content fault, HTTP 500, HTTP 429).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub faults: Option<Vec<Fault>>,
    /// Added to every reply, in milliseconds (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<u64>,
    /// Characters per streamed delta (default [`DEFAULT_STREAM_PIECE_CHARS`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_piece_chars: Option<usize>,
    /// Pause between streamed deltas, in milliseconds (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_interval_ms: Option<u64>,
    /// A JSON script of replies and faults per turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub script: Option<PathBuf>,
    /// How a generated `safety` object is filled: `"message"` (from the user's message, the
    /// default) or `"random"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub safety: Option<SafetyMode>,
}

/// The mock's settings, checked: what a `kind = "mock"` provider runs with.
#[derive(Debug, Clone, PartialEq)]
pub struct MockSettings {
    /// Seed of its choices.
    pub seed: u64,
    /// Share of attempts given a fault (0.0–1.0).
    pub fault_rate: f64,
    /// Added to every reply.
    pub latency_ms: u64,
    /// Scripted replies and faults per turn.
    pub script: Option<Script>,
    /// The file `script` was read from.
    pub script_path: Option<PathBuf>,
    /// The faults drawn from (default: all of them).
    pub faults: Option<Vec<Fault>>,
    /// Characters per streamed delta.
    pub stream_piece_chars: usize,
    /// Pause between streamed deltas, in milliseconds.
    pub stream_interval_ms: u64,
    /// How a generated `safety` object is filled.
    pub safety: SafetyMode,
}

impl Default for MockSettings {
    fn default() -> Self {
        Self {
            seed: 0,
            fault_rate: 0.0,
            latency_ms: 0,
            script: None,
            script_path: None,
            faults: None,
            stream_piece_chars: DEFAULT_STREAM_PIECE_CHARS,
            stream_interval_ms: 0,
            safety: SafetyMode::Message,
        }
    }
}

impl RawMockSettings {
    /// The keys, in the order above.
    pub const KEYS: [&str; 8] = [
        "seed",
        "fault_rate",
        "faults",
        "latency_ms",
        "stream_piece_chars",
        "stream_interval_ms",
        "script",
        "safety",
    ];

    /// Whether no key is set (an entry of another kind must set none).
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// The keys that are set, in the order above.
    pub fn keys_set(&self) -> Vec<&'static str> {
        let set = [
            self.seed.is_some(),
            self.fault_rate.is_some(),
            self.faults.is_some(),
            self.latency_ms.is_some(),
            self.stream_piece_chars.is_some(),
            self.stream_interval_ms.is_some(),
            self.script.is_some(),
            self.safety.is_some(),
        ];
        Self::KEYS
            .into_iter()
            .zip(set)
            .filter_map(|(key, set)| set.then_some(key))
            .collect()
    }

    /// Fills in the defaults, reads the script and checks everything [`MockConfig::validate`]
    /// checks; an error names its key relative to the entry (`fault_rate`, `script`).
    pub fn load(self) -> Result<MockSettings, ConfigError> {
        let fault_rate = self.fault_rate.unwrap_or(0.0);
        if !(0.0..=1.0).contains(&fault_rate) {
            return Err(ConfigError::new(
                "fault_rate",
                format!("must be 0.0–1.0, got {fault_rate}"),
            ));
        }
        let script = match &self.script {
            Some(path) => {
                Some(Script::load(path).map_err(|e| ConfigError::new("script", e.to_string()))?)
            }
            None => None,
        };
        let settings = MockSettings {
            seed: self.seed.unwrap_or(0),
            fault_rate,
            latency_ms: self.latency_ms.unwrap_or(0),
            script,
            script_path: self.script,
            faults: self.faults,
            stream_piece_chars: self
                .stream_piece_chars
                .unwrap_or(DEFAULT_STREAM_PIECE_CHARS),
            stream_interval_ms: self.stream_interval_ms.unwrap_or(0),
            safety: self.safety.unwrap_or_default(),
        };
        settings
            .config(Contracts::default())
            .validate()
            .map_err(|e| ConfigError::new(MockConfig::key_of(&e), e.to_string()))?;
        Ok(settings)
    }
}

impl MockSettings {
    /// The model's configuration: these settings, knowing `contracts`.
    pub fn config(&self, contracts: Contracts) -> MockConfig {
        MockConfig {
            seed: self.seed,
            fault_rate: self.fault_rate,
            latency_ms: self.latency_ms,
            stream_piece_chars: self.stream_piece_chars,
            stream_interval_ms: self.stream_interval_ms,
            script: self.script.clone(),
            faults: self.faults.clone().unwrap_or_else(Fault::default_mix),
            stream_chunk_bytes: None,
            require_api_key: None,
            contracts,
            safety: self.safety,
        }
    }

    /// The settings as keys again, every default written out (`faults` and `script` only when
    /// set): reading them back gives the same settings.
    pub fn to_raw(&self) -> RawMockSettings {
        RawMockSettings {
            seed: Some(self.seed),
            fault_rate: Some(self.fault_rate),
            faults: self.faults.clone(),
            latency_ms: Some(self.latency_ms),
            stream_piece_chars: Some(self.stream_piece_chars),
            stream_interval_ms: Some(self.stream_interval_ms),
            script: self.script_path.clone(),
            safety: Some(self.safety),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_fill_in_and_come_back_as_keys() {
        let settings = RawMockSettings::default().load().unwrap();
        assert_eq!(settings, MockSettings::default());
        let again = settings.to_raw().load().unwrap();
        assert_eq!(again, settings);
        assert!(RawMockSettings::default().is_empty());
        assert!(!settings.to_raw().is_empty());
        assert_eq!(
            settings.to_raw().keys_set(),
            [
                "seed",
                "fault_rate",
                "latency_ms",
                "stream_piece_chars",
                "stream_interval_ms",
                "safety"
            ]
        );
    }

    #[test]
    fn each_mistake_names_its_key() {
        let cases = [
            (
                RawMockSettings {
                    fault_rate: Some(1.5),
                    ..RawMockSettings::default()
                },
                "fault_rate",
            ),
            (
                RawMockSettings {
                    fault_rate: Some(0.5),
                    faults: Some(vec![]),
                    ..RawMockSettings::default()
                },
                "faults",
            ),
            (
                RawMockSettings {
                    faults: Some(vec![Fault::Slow { ms: u64::MAX }]),
                    ..RawMockSettings::default()
                },
                "faults",
            ),
            (
                RawMockSettings {
                    latency_ms: Some(u64::MAX),
                    ..RawMockSettings::default()
                },
                "latency_ms",
            ),
            (
                RawMockSettings {
                    stream_interval_ms: Some(u64::MAX),
                    ..RawMockSettings::default()
                },
                "stream_interval_ms",
            ),
            (
                RawMockSettings {
                    stream_piece_chars: Some(0),
                    ..RawMockSettings::default()
                },
                "stream_piece_chars",
            ),
            (
                RawMockSettings {
                    script: Some("/nonexistent/script.json".into()),
                    ..RawMockSettings::default()
                },
                "script",
            ),
        ];
        for (raw, key) in cases {
            let error = raw.clone().load().unwrap_err();
            assert_eq!(error.path, key, "{raw:?}: {error}");
        }
    }
}
