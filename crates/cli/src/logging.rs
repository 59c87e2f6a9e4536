//! The log: lines on standard error, as text or as JSON (`[log] format`, or
//! `BRIDLE__LOG__FORMAT`), by default text when standard error is a terminal and JSON otherwise
//! (a file, a pipe, a container's log driver); colours only on a terminal.
//!
//! [`init`] installs the subscriber before the command reads its configuration (so that reading
//! it can log), with the format the environment gives; [`apply`] switches to the configured
//! format once `bridle.toml` is read (a reloadable layer).
//!
//! A JSON line is one object: `timestamp` (RFC 3339, UTC), `level`, `target`, `message`, the
//! event's own fields, and `request_id` and `trace_id` of the request it was written in (the
//! fields of the gateway's `request` span, or of any span that has them). Written here rather
//! than with tracing-subscriber's `json` feature: that one nests span fields under `span` /
//! `spans` (so a log pipeline cannot find the request id at one place), and would add
//! tracing-serde for what is a few lines of serde_json. [`RequestFields`] is the small layer
//! that keeps each span's ids where the formatter finds them.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::io::IsTerminal as _;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::{FormatTime, SystemTime};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::layer::{Context, SubscriberExt as _};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{EnvFilter, Layer, Registry, reload};

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// One JSON object a line.
    Json,
    /// Human-readable text (coloured on a terminal).
    Text,
}

/// `[log]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct LogSettings {
    /// `"json"` or `"text"`; not set: text when standard error is a terminal, else JSON.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub format: Option<LogFormat>,
}

/// Log filter when `RUST_LOG` is not set: warnings, and what Bridle itself reports.
const DEFAULT_LOG: &str = "warn,bridle=info,bridle_engine=info,bridle_server=info,bridle_mock=info";

/// The environment variable that sets the format before any file is read (the same name as
/// the configuration's overlay, so it also wins over `[log] format`).
const FORMAT_ENV: &str = "BRIDLE__LOG__FORMAT";

type Inner = tracing_subscriber::layer::Layered<
    tracing_subscriber::filter::Filtered<RequestFields, EnvFilter, Registry>,
    Registry,
>;
type Output = Box<dyn Layer<Inner> + Send + Sync>;

/// The installed output layer's handle, for [`apply`].
static OUTPUT: OnceLock<reload::Handle<Output, Inner>> = OnceLock::new();

/// Whether lines are written as JSON now.
static JSON: AtomicBool = AtomicBool::new(false);

/// The log's filter: `RUST_LOG`, or the default one.
fn filter() -> EnvFilter {
    EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(DEFAULT_LOG))
}

/// Installs the subscriber: `RUST_LOG` (or the default filter), the format of
/// `BRIDLE__LOG__FORMAT` or the default one, to standard error. (Traces are not the log's:
/// `bridle_server::Telemetry` builds its spans with the OpenTelemetry SDK directly.)
pub fn init() {
    let format = std::env::var(FORMAT_ENV)
        .ok()
        .and_then(|text| parse_format(&text))
        .unwrap_or_else(default_format);
    let (output, handle) = reload::Layer::new(output(format));
    let installed = tracing_subscriber::registry()
        .with(RequestFields.with_filter(filter()))
        .with(output.with_filter(filter()))
        .try_init();
    if installed.is_ok() {
        JSON.store(format == LogFormat::Json, Ordering::Relaxed);
        let _ = OUTPUT.set(handle);
    }
}

/// Switches to the format `settings` configure (when it differs from the one in use).
pub fn apply(settings: &LogSettings) {
    let (Some(handle), Some(wanted)) = (OUTPUT.get(), settings.format) else {
        return;
    };
    if std::env::var(FORMAT_ENV).is_ok_and(|text| parse_format(&text).is_some()) {
        // The environment already chose (the overlay gave the same value to `settings`).
        return;
    }
    if handle.reload(output(wanted)).is_ok() {
        JSON.store(wanted == LogFormat::Json, Ordering::Relaxed);
    }
}

/// Writes one line the operator reads (`bridle serve`'s start-up banner, its shutdown notice) to
/// standard error: as it is in the text format, as a JSON log line (level `INFO`, the text as
/// `message`) in the JSON one, so that a JSON log stays one object a line.
pub fn say(text: &str) {
    if !JSON.load(Ordering::Relaxed) {
        eprintln!("{text}");
        return;
    }
    let mut timestamp = String::new();
    let _ = SystemTime.format_time(&mut Writer::new(&mut timestamp));
    let line = serde_json::json!({
        "timestamp": timestamp,
        "level": "INFO",
        "target": "bridle",
        "message": text.trim(),
    });
    eprintln!("{line}");
}

fn parse_format(text: &str) -> Option<LogFormat> {
    match text.trim().to_ascii_lowercase().as_str() {
        "json" => Some(LogFormat::Json),
        "text" => Some(LogFormat::Text),
        _ => None,
    }
}

/// Text on a terminal, JSON otherwise.
fn default_format() -> LogFormat {
    if std::io::stderr().is_terminal() {
        LogFormat::Text
    } else {
        LogFormat::Json
    }
}

/// The layer that writes lines in `format` to standard error; colours on a terminal only.
fn output(format: LogFormat) -> Output {
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    match format {
        LogFormat::Text => layer.boxed(),
        LogFormat::Json => layer.with_ansi(false).event_format(JsonLine).boxed(),
    }
}

/// A span's request ids, kept in its extensions by [`RequestFields`].
#[derive(Debug, Default, Clone)]
struct SpanIds {
    request_id: Option<String>,
    trace_id: Option<String>,
}

impl Visit for SpanIds {
    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "request_id" => self.request_id = Some(value.to_owned()),
            "trace_id" => self.trace_id = Some(value.to_owned()),
            _ => {}
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if matches!(field.name(), "request_id" | "trace_id") {
            self.record_str(field, &format!("{value:?}"));
        }
    }
}

/// Keeps the `request_id` and `trace_id` fields of each span (also when recorded later, as a
/// tracer records the trace id) for the JSON lines.
pub struct RequestFields;

impl<S> Layer<S> for RequestFields
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(
        &self,
        attrs: &tracing::span::Attributes<'_>,
        id: &tracing::span::Id,
        ctx: Context<'_, S>,
    ) {
        let mut ids = SpanIds::default();
        attrs.record(&mut ids);
        if (ids.request_id.is_some() || ids.trace_id.is_some())
            && let Some(span) = ctx.span(id)
        {
            span.extensions_mut().insert(ids);
        }
    }

    fn on_record(
        &self,
        id: &tracing::span::Id,
        values: &tracing::span::Record<'_>,
        ctx: Context<'_, S>,
    ) {
        let Some(span) = ctx.span(id) else {
            return;
        };
        let mut extensions = span.extensions_mut();
        if let Some(ids) = extensions.get_mut::<SpanIds>() {
            values.record(ids);
        } else {
            let mut ids = SpanIds::default();
            values.record(&mut ids);
            if ids.request_id.is_some() || ids.trace_id.is_some() {
                extensions.insert(ids);
            }
        }
    }
}

/// An event's fields as JSON values.
struct JsonFields(serde_json::Map<String, serde_json::Value>);

impl Visit for JsonFields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.into());
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.insert(field.name().to_owned(), value.into());
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().to_owned(), value.into());
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().to_owned(), value.into());
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.0.insert(field.name().to_owned(), value.into());
    }
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0
            .insert(field.name().to_owned(), format!("{value:?}").into());
    }
}

/// One JSON object a line (see the module's documentation).
struct JsonLine;

impl<S, N> FormatEvent<S, N> for JsonLine
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let mut line = serde_json::Map::new();
        let mut timestamp = String::new();
        SystemTime.format_time(&mut Writer::new(&mut timestamp))?;
        let metadata = event.metadata();
        line.insert("timestamp".into(), timestamp.into());
        line.insert("level".into(), metadata.level().as_str().into());
        line.insert("target".into(), metadata.target().into());
        let mut fields = JsonFields(serde_json::Map::new());
        event.record(&mut fields);
        // The innermost span that knows each id gives it.
        let mut ids = SpanIds::default();
        if let Some(scope) = ctx.event_scope() {
            for span in scope {
                if let Some(found) = span.extensions().get::<SpanIds>() {
                    ids.request_id = ids.request_id.or_else(|| found.request_id.clone());
                    ids.trace_id = ids.trace_id.or_else(|| found.trace_id.clone());
                }
            }
        }
        for (key, value) in [("request_id", ids.request_id), ("trace_id", ids.trace_id)] {
            if let Some(value) = value {
                line.insert(key.into(), value.into());
            }
        }
        // The event's own fields last: `message` and whatever it logged.
        for (key, value) in fields.0 {
            line.entry(key).or_insert(value);
        }
        let text = serde_json::to_string(&line).map_err(|_| fmt::Error)?;
        writeln!(writer, "{text}")
    }
}
