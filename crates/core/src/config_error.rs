//! [`ConfigError`]: the one error of every configuration section (`bridle.toml` and its
//! environment overlay) — the key path at fault and what is wrong with it, shown as
//! `server.limits.requests_per_minute: must be between 1 and 10000, not 0`.
//!
//! Each crate that owns a section reads it into a raw serde type and checks it with a `load`
//! (or `validate`) that names keys relative to its section; the caller that knows where the
//! section sits in the file puts the section's path in front with [`ConfigError::within`].

use std::fmt;

/// A setting that cannot be used: where it is (`retry.max_attempts`, `providers.up.base_url`)
/// and what is wrong (`must be 1–20, got 0`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// Dotted key path from the top of the file (`""` for the file as a whole).
    pub path: String,
    /// What is wrong and, where it helps, what to write instead.
    pub message: String,
}

impl ConfigError {
    /// The key `path` is wrong: `message`.
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            message: message.into(),
        }
    }

    /// The same error with `section` put in front of its path (`"retry"` + `"jitter"` →
    /// `"retry.jitter"`).
    #[must_use]
    pub fn within(mut self, section: &str) -> Self {
        self.path = join(section, &self.path);
        self
    }
}

/// `section.key`, or whichever of the two is not empty.
pub fn join(section: &str, key: &str) -> String {
    match (section.is_empty(), key.is_empty()) {
        (true, _) => key.to_owned(),
        (false, true) => section.to_owned(),
        (false, false) => format!("{section}.{key}"),
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

impl std::error::Error for ConfigError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_path_comes_first_and_sections_nest() {
        let error = ConfigError::new("requests_per_minute", "must be between 1 and 10000, not 0")
            .within("limits")
            .within("server");
        assert_eq!(error.path, "server.limits.requests_per_minute");
        assert_eq!(
            error.to_string(),
            "server.limits.requests_per_minute: must be between 1 and 10000, not 0"
        );
        assert_eq!(ConfigError::new("", "bad file").to_string(), "bad file");
        assert_eq!(ConfigError::new("", "x").within("retry").path, "retry");
    }
}
