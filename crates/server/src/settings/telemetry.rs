//! [`TelemetrySettings`]: the `[telemetry]` section of `bridle.toml` — what the gateway tells
//! about its requests to the tools an operator runs beside it. For now the link from the admin
//! console to a trace UI; the exporter's keys belong here too.

use bridle_core::ConfigError;
use serde::{Deserialize, Serialize};

/// What a trace link's template must contain: the place of the trace id.
pub const TRACE_ID_PLACEHOLDER: &str = "{trace_id}";

/// Longest trace link template, in bytes.
const MAX_TEMPLATE_BYTES: usize = 2048;

/// `[telemetry]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct TelemetrySettings {
    /// The URL of a trace in the operator's trace UI, with `{trace_id}` where the trace id (32
    /// lowercase hex digits) goes (`https://jaeger.example/trace/{trace_id}`): the admin console
    /// then links each turn that has a trace id to its trace. `None`: no links.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_url_template: Option<String>,
}

impl TelemetrySettings {
    /// Checks every key; the error names the key at fault, relative to the section.
    pub fn load(self) -> Result<Self, ConfigError> {
        if let Some(template) = &self.trace_url_template {
            let key = "trace_url_template";
            if template.len() > MAX_TEMPLATE_BYTES {
                return Err(ConfigError::new(
                    key,
                    format!("must be at most {MAX_TEMPLATE_BYTES} bytes"),
                ));
            }
            if !(template.starts_with("https://") || template.starts_with("http://")) {
                return Err(ConfigError::new(key, "must be an http:// or https:// URL"));
            }
            if !template.contains(TRACE_ID_PLACEHOLDER) {
                return Err(ConfigError::new(
                    key,
                    format!("must contain {TRACE_ID_PLACEHOLDER}, where the trace id goes"),
                ));
            }
            if template
                .chars()
                .any(|c| c.is_whitespace() || c.is_control())
            {
                return Err(ConfigError::new(
                    key,
                    "must not contain spaces or control characters",
                ));
            }
        }
        Ok(self)
    }

    /// The link to the trace `trace_id` (32 lowercase hex digits, so nothing to escape), when a
    /// template is configured.
    pub fn trace_url(&self, trace_id: &str) -> Option<String> {
        self.trace_url_template
            .as_deref()
            .map(|template| template.replace(TRACE_ID_PLACEHOLDER, trace_id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_template_must_be_a_url_with_the_trace_id() {
        let with = |t: &str| TelemetrySettings {
            trace_url_template: Some(t.to_owned()),
        };
        let good = with("https://jaeger.example/trace/{trace_id}");
        assert_eq!(good.clone().load(), Ok(good.clone()));
        assert_eq!(
            good.trace_url("4bf92f3577b34da6a3ce929d0e0e4736")
                .as_deref(),
            Some("https://jaeger.example/trace/4bf92f3577b34da6a3ce929d0e0e4736")
        );
        assert_eq!(TelemetrySettings::default().trace_url("ab"), None);
        for bad in [
            "https://jaeger.example/trace/",
            "javascript:alert(1)//{trace_id}",
            "ftp://x/{trace_id}",
            "https://x/{trace_id} y",
            &format!("https://x/{{trace_id}}{}", "a".repeat(2048)),
        ] {
            let error = with(bad).load().unwrap_err();
            assert_eq!(error.path, "trace_url_template", "{bad}");
        }
    }
}
