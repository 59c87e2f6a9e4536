//! `[telemetry] trace_url_template`: the link from the admin console to the operator's trace
//! UI, checked here (the section itself is [`crate::TelemetrySettings`], with the exporter's
//! keys).

use bridle_core::ConfigError;

/// What a trace link's template must contain: the place of the trace id.
pub const TRACE_ID_PLACEHOLDER: &str = "{trace_id}";

/// Longest trace link template, in bytes.
const MAX_TEMPLATE_BYTES: usize = 2048;

/// Checks `[telemetry] trace_url_template`; the error names the key.
pub(crate) fn check_trace_url_template(template: &str) -> Result<(), ConfigError> {
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
    Ok(())
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_template_must_be_a_url_with_the_trace_id() {
        let env = std::collections::BTreeMap::new();
        let with = |t: &str| crate::TelemetrySettings {
            trace_url_template: Some(t.to_owned()),
            ..crate::TelemetrySettings::default()
        };
        let good = with("https://jaeger.example/trace/{trace_id}");
        assert_eq!(good.clone().load(&env), Ok(good.clone()));
        assert_eq!(
            good.trace_url("4bf92f3577b34da6a3ce929d0e0e4736")
                .as_deref(),
            Some("https://jaeger.example/trace/4bf92f3577b34da6a3ce929d0e0e4736")
        );
        assert_eq!(crate::TelemetrySettings::default().trace_url("ab"), None);
        for bad in [
            "https://jaeger.example/trace/",
            "javascript:alert(1)//{trace_id}",
            "ftp://x/{trace_id}",
            "https://x/{trace_id} y",
            &format!("https://x/{{trace_id}}{}", "a".repeat(2048)),
        ] {
            let error = with(bad).load(&env).unwrap_err();
            assert_eq!(error.path, "trace_url_template", "{bad}");
        }
    }
}
