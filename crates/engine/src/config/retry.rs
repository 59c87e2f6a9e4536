//! [`RetryPolicy`]: how a turn retries — attempts, delay, backoff, cap, jitter, token budget —
//! checked from
//! the `[retry]` keys (and a contract's `[retry.contracts.NAME]` over them).

use super::raw::RawRetrySettings;
use bridle_core::ConfigError;
use rand::RngExt;
use std::time::Duration;

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
    /// Tokens (input + output, as the providers report them) the turn's attempts may use;
    /// once they have, the turn stops retrying. `None`: no budget.
    pub max_turn_tokens: Option<u64>,
}

/// The largest `max_turn_tokens` accepted.
pub const MAX_TURN_TOKENS: u64 = 100_000_000;

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 3,
            delay: Duration::from_millis(500),
            backoff: 1.0,
            max_delay: Duration::from_secs(8),
            jitter: 0.0,
            max_turn_tokens: None,
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

    /// This policy with the keys `raw` sets replaced, checked; an error names its key
    /// (`max_attempts`) for the caller to place (`retry`, `retry.contracts.NAME`).
    pub(super) fn merged(&self, raw: &RawRetrySettings) -> Result<Self, ConfigError> {
        let policy = Self {
            max_attempts: raw.max_attempts.unwrap_or(self.max_attempts),
            delay: raw.delay_ms.map_or(self.delay, Duration::from_millis),
            backoff: raw.backoff.unwrap_or(self.backoff),
            max_delay: raw
                .max_delay_ms
                .map_or(self.max_delay, Duration::from_millis),
            jitter: raw.jitter.unwrap_or(self.jitter),
            max_turn_tokens: raw.max_turn_tokens.or(self.max_turn_tokens),
        };
        if let Some(tokens) = policy.max_turn_tokens
            && !(1..=MAX_TURN_TOKENS).contains(&tokens)
        {
            return Err(ConfigError::new(
                "max_turn_tokens",
                format!("must be 1–{MAX_TURN_TOKENS}, got {tokens}"),
            ));
        }
        if !(1..=20).contains(&policy.max_attempts) {
            return Err(ConfigError::new(
                "max_attempts",
                format!("must be 1–20, got {}", policy.max_attempts),
            ));
        }
        if !(policy.backoff.is_finite() && (1.0..=10.0).contains(&policy.backoff)) {
            return Err(ConfigError::new(
                "backoff",
                format!("must be 1.0–10.0, got {}", policy.backoff),
            ));
        }
        if !(policy.jitter.is_finite() && (0.0..=1.0).contains(&policy.jitter)) {
            return Err(ConfigError::new(
                "jitter",
                format!("must be 0.0–1.0, got {}", policy.jitter),
            ));
        }
        Ok(policy)
    }

    /// The policy as keys again, every one written out.
    pub(super) fn to_raw(self) -> RawRetrySettings {
        RawRetrySettings {
            max_attempts: Some(self.max_attempts),
            delay_ms: Some(millis(self.delay)),
            backoff: Some(self.backoff),
            max_delay_ms: Some(millis(self.max_delay)),
            jitter: Some(self.jitter),
            max_turn_tokens: self.max_turn_tokens,
        }
    }
}

/// Whole milliseconds (every configured delay is).
fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}
