//! [`RetentionConfig`]: the `[retention]` keys checked — how long stored request payloads and
//! raw replies are kept, and how often the sweep that purges them runs.

use super::raw::RawRetention;
use bridle_core::ConfigError;
use std::time::Duration;

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
    /// Checks the section; an error names its key within it.
    pub(super) fn from_raw(raw: &RawRetention) -> Result<Self, ConfigError> {
        if raw.payload_days == Some(0) {
            return Err(ConfigError::new(
                "payload_days",
                "must be at least 1 (leave it out to keep payloads)",
            ));
        }
        let every = raw.sweep_every_secs.unwrap_or(3600);
        if every == 0 {
            return Err(ConfigError::new("sweep_every_secs", "must be at least 1"));
        }
        Ok(Self {
            payload_days: raw.payload_days,
            sweep_every: Duration::from_secs(every),
        })
    }

    /// The section as keys again, every default written out.
    pub(super) fn to_raw(self) -> RawRetention {
        RawRetention {
            payload_days: self.payload_days,
            sweep_every_secs: Some(self.sweep_every.as_secs()),
        }
    }
}
