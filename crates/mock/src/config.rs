//! [`MockConfig`]: how the mock model behaves — seed, fault rate and mix, an optional script,
//! added latency, how streamed answers are cut and paced, an optional API key to require, and
//! the contracts it recognises — with [`MockConfig::validate`] to refuse settings that make no
//! sense before anything runs.

use crate::faults::Fault;
use crate::safety::SafetyMode;
use crate::script::Script;
use bridle_core::Contracts;

/// Longest delay a fault or the latency setting may add, in milliseconds.
pub const MAX_DELAY_MS: u64 = 600_000;
/// Longest `Retry-After` a fault may send, in seconds.
pub const MAX_RETRY_AFTER_SECS: u64 = 3600;
/// Content characters per streamed delta unless [`MockConfig::stream_piece_chars`] says
/// otherwise.
pub const DEFAULT_STREAM_PIECE_CHARS: usize = 6;

/// The mock model's settings.
#[derive(Debug, Clone)]
pub struct MockConfig {
    /// Seed of every random choice: same seed and same request → same answer.
    pub seed: u64,
    /// Chance (0.0–1.0) that a request draws a fault from `faults`; ignored with a script.
    pub fault_rate: f64,
    /// The faults drawn from (default: every content fault, HTTP 500, HTTP 429).
    pub faults: Vec<Fault>,
    /// A scripted run; when set, it alone decides the faults.
    pub script: Option<Script>,
    /// Added to every answer, in milliseconds.
    pub latency_ms: u64,
    /// Characters of content (or of a tool call's JSON arguments) per streamed delta, at least
    /// 1 (default [`DEFAULT_STREAM_PIECE_CHARS`]). A `pieces` script step sets its own deltas.
    pub stream_piece_chars: usize,
    /// Pause between two frames of a streamed answer, in milliseconds (default 0: all at
    /// once; at most [`MAX_DELAY_MS`]). Real models trickle their tokens.
    pub stream_interval_ms: u64,
    /// When set, the SSE byte stream is re-cut into network writes of this many bytes (at least
    /// 1), whatever the frame and UTF-8 boundaries — so a client's SSE decoder meets frames and
    /// multi-byte characters split across reads. Default: one write per frame.
    pub stream_chunk_bytes: Option<usize>,
    /// When set, requests must carry `Authorization: Bearer KEY` or `x-api-key: KEY`.
    pub require_api_key: Option<String>,
    /// Contracts recognised by name in the system prompt.
    pub contracts: Contracts,
    /// How a generated `safety` object is filled: from the user's message (default), or drawn
    /// at random.
    pub safety: SafetyMode,
}

/// Settings that make no sense.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfigError {
    /// The fault rate is not a probability.
    #[error("fault_rate must be between 0.0 and 1.0, not {0}")]
    FaultRate(f64),
    /// Faults are asked for but none may be drawn.
    #[error("fault_rate is above 0 but the fault mix is empty")]
    EmptyMix,
    /// A delay or `Retry-After` beyond reason.
    #[error(
        "{what} is out of range (delays up to {MAX_DELAY_MS} ms, Retry-After up to {MAX_RETRY_AFTER_SECS} s)"
    )]
    OutOfRange {
        /// The setting that holds it (`latency_ms`, `stream_interval_ms`, `faults`, `script`).
        key: &'static str,
        /// The value, or the fault, at fault.
        what: String,
    },
    /// An empty key would make every request unauthorised, or authorise a blank header.
    #[error("require_api_key must not be empty")]
    EmptyApiKey,
    /// A streaming size of zero (`stream_piece_chars`, `stream_chunk_bytes`) would never move.
    #[error("{0} must be at least 1")]
    ZeroSize(&'static str),
    /// A `pieces` script step with no piece.
    #[error("script turn {turn}, attempt {attempt}: \"pieces\" must list at least one piece")]
    EmptyPieces {
        /// The script turn (1-based).
        turn: usize,
        /// The attempt within it (1-based).
        attempt: usize,
    },
}

impl Default for MockConfig {
    fn default() -> Self {
        Self {
            seed: 0,
            fault_rate: 0.0,
            faults: Fault::default_mix(),
            script: None,
            latency_ms: 0,
            stream_piece_chars: DEFAULT_STREAM_PIECE_CHARS,
            stream_interval_ms: 0,
            stream_chunk_bytes: None,
            require_api_key: None,
            contracts: Contracts::builtin().unwrap_or_default(),
            safety: SafetyMode::Message,
        }
    }
}

impl MockConfig {
    /// The defaults: seed 0, no faults, no latency, streams in deltas of
    /// [`DEFAULT_STREAM_PIECE_CHARS`] characters sent at once, no key, the built-in contracts.
    pub fn new() -> Self {
        Self::default()
    }

    /// With seed `seed`.
    #[must_use]
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// With fault rate `rate` (0.0–1.0).
    #[must_use]
    pub fn with_fault_rate(mut self, rate: f64) -> Self {
        self.fault_rate = rate;
        self
    }

    /// With the fault mix `faults`.
    #[must_use]
    pub fn with_faults(mut self, faults: impl Into<Vec<Fault>>) -> Self {
        self.faults = faults.into();
        self
    }

    /// With a script.
    #[must_use]
    pub fn with_script(mut self, script: Script) -> Self {
        self.script = Some(script);
        self
    }

    /// With `ms` milliseconds added to every answer.
    #[must_use]
    pub fn with_latency_ms(mut self, ms: u64) -> Self {
        self.latency_ms = ms;
        self
    }

    /// Streaming `chars` characters of content per delta.
    #[must_use]
    pub fn with_stream_piece_chars(mut self, chars: usize) -> Self {
        self.stream_piece_chars = chars;
        self
    }

    /// Pausing `ms` milliseconds between the frames of a stream.
    #[must_use]
    pub fn with_stream_interval_ms(mut self, ms: u64) -> Self {
        self.stream_interval_ms = ms;
        self
    }

    /// Re-cutting streams into writes of `bytes` bytes.
    #[must_use]
    pub fn with_stream_chunk_bytes(mut self, bytes: usize) -> Self {
        self.stream_chunk_bytes = Some(bytes);
        self
    }

    /// Requiring API key `key`.
    #[must_use]
    pub fn with_api_key(mut self, key: impl Into<String>) -> Self {
        self.require_api_key = Some(key.into());
        self
    }

    /// With the contracts `contracts`.
    #[must_use]
    pub fn with_contracts(mut self, contracts: Contracts) -> Self {
        self.contracts = contracts;
        self
    }

    /// Checks the settings.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !(0.0..=1.0).contains(&self.fault_rate) {
            return Err(ConfigError::FaultRate(self.fault_rate));
        }
        if self.fault_rate > 0.0 && self.faults.is_empty() && self.script.is_none() {
            return Err(ConfigError::EmptyMix);
        }
        for (key, ms) in [
            ("latency_ms", self.latency_ms),
            ("stream_interval_ms", self.stream_interval_ms),
        ] {
            if ms > MAX_DELAY_MS {
                return Err(ConfigError::OutOfRange {
                    key,
                    what: format!("{key} {ms}"),
                });
            }
        }
        if self.stream_piece_chars == 0 {
            return Err(ConfigError::ZeroSize("stream_piece_chars"));
        }
        if self.stream_chunk_bytes == Some(0) {
            return Err(ConfigError::ZeroSize("stream_chunk_bytes"));
        }
        self.check_pieces()?;
        let scripted = self
            .script
            .iter()
            .flat_map(|s| s.turns.iter())
            .flat_map(|t| t.attempts.iter())
            .filter_map(|step| match step {
                crate::script::Step::Fault(fault) => Some(("script", fault)),
                _ => None,
            });
        let drawn = self.faults.iter().map(|fault| ("faults", fault));
        for (key, fault) in drawn.chain(scripted) {
            let too_long = match fault {
                Fault::Slow { ms } => *ms > MAX_DELAY_MS,
                Fault::Http429 { retry_after_secs } => *retry_after_secs > MAX_RETRY_AFTER_SECS,
                _ => false,
            };
            if too_long {
                return Err(ConfigError::OutOfRange {
                    key,
                    what: fault.to_string(),
                });
            }
        }
        if self.require_api_key.as_deref().is_some_and(str::is_empty) {
            return Err(ConfigError::EmptyApiKey);
        }
        Ok(())
    }

    /// The setting a [`ConfigError`] of [`MockConfig::validate`] is about, as a provider entry
    /// of `bridle.toml` names it (`require_api_key` has no such key: it is the `mock-llm`
    /// command's).
    pub(crate) fn key_of(error: &ConfigError) -> &'static str {
        match error {
            ConfigError::FaultRate(_) => "fault_rate",
            ConfigError::EmptyMix => "faults",
            ConfigError::OutOfRange { key, .. } | ConfigError::ZeroSize(key) => key,
            ConfigError::EmptyApiKey => "require_api_key",
            ConfigError::EmptyPieces { .. } => "script",
        }
    }

    /// Refuses a `pieces` step with no piece (the script reader refuses it too; a script built
    /// in code is checked here).
    fn check_pieces(&self) -> Result<(), ConfigError> {
        let turns = self.script.iter().flat_map(|s| s.turns.iter());
        for (turn, entry) in turns.enumerate() {
            for (attempt, step) in entry.attempts.iter().enumerate() {
                if matches!(step, crate::script::Step::Pieces(pieces) if pieces.is_empty()) {
                    return Err(ConfigError::EmptyPieces {
                        turn: turn + 1,
                        attempt: attempt + 1,
                    });
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_nonsense_is_refused() {
        let config = MockConfig::new();
        assert!(config.validate().is_ok());
        assert_eq!(
            (
                config.stream_piece_chars,
                config.stream_interval_ms,
                config.stream_chunk_bytes
            ),
            (DEFAULT_STREAM_PIECE_CHARS, 0, None)
        );
        assert!(config.contracts.get("selfhelp-response").is_ok());
        let bad = [
            MockConfig::new().with_fault_rate(1.5),
            MockConfig::new().with_fault_rate(f64::NAN),
            MockConfig::new().with_fault_rate(0.5).with_faults(vec![]),
            MockConfig::new().with_latency_ms(MAX_DELAY_MS + 1),
            MockConfig::new().with_faults(vec![Fault::Slow { ms: u64::MAX }]),
            MockConfig::new().with_faults(vec![Fault::Http429 {
                retry_after_secs: 100_000,
            }]),
            MockConfig::new().with_api_key(""),
        ];
        for config in bad {
            assert!(config.validate().is_err(), "{config:?}");
        }
    }

    #[test]
    fn streaming_knobs_are_checked_with_a_clear_reason() {
        use crate::script::{Script, ScriptTurn, Step};
        let empty_pieces = Script {
            turns: vec![ScriptTurn {
                attempts: vec![Step::Valid, Step::Pieces(vec![])],
            }],
        };
        let cases: [(MockConfig, Option<&str>); 8] = [
            (MockConfig::new().with_stream_piece_chars(1), None),
            (MockConfig::new().with_stream_chunk_bytes(1), None),
            (
                MockConfig::new().with_stream_interval_ms(MAX_DELAY_MS),
                None,
            ),
            (
                MockConfig::new().with_stream_piece_chars(0),
                Some("stream_piece_chars must be at least 1"),
            ),
            (
                MockConfig::new().with_stream_chunk_bytes(0),
                Some("stream_chunk_bytes must be at least 1"),
            ),
            (
                MockConfig::new().with_stream_interval_ms(MAX_DELAY_MS + 1),
                Some("stream_interval_ms 600001 is out of range"),
            ),
            (
                MockConfig::new().with_script(empty_pieces),
                Some("script turn 1, attempt 2: \"pieces\" must list at least one piece"),
            ),
            (
                MockConfig::new().with_script(Script {
                    turns: vec![ScriptTurn {
                        attempts: vec![Step::Pieces(vec!["a".into()])],
                    }],
                }),
                None,
            ),
        ];
        for (config, expected) in cases {
            let got = config.validate().err().map(|e| e.to_string());
            match expected {
                None => assert_eq!(got, None, "{config:?}"),
                Some(start) => {
                    let got = got.unwrap_or_default();
                    assert!(got.starts_with(start), "{got:?} vs {start:?}");
                }
            }
        }
    }
}
