//! [`RawFile`]: the layout of `bridle.toml` — the engine's root keys and sections
//! (`bridle_engine::config::RawConfig`) beside the gateway's `[server]`
//! (`bridle_server::ServerSettings`) and `[telemetry]` (`bridle_server::TelemetrySettings`, with
//! the `OTEL_…` variables under it) — and [`load`], the one way a command reads the
//! configuration: the file (when given), the `BRIDLE__SECTION__KEY` environment overlay
//! (double underscores separate keys), `--data-dir` over both, then each crate's `load` on its
//! part. `OPENAI_BASE_URL`, `OPENAI_API_KEY` and `OPENAI_MODEL` are read by the engine's part.
//! Every mistake is a [`ConfigError`] naming its key path.

use bridle_engine::Config;
use bridle_engine::config::{
    self, ConfigError, Environment, RawConfig, RawModel, RawProvider, RawRetention, RawRetry,
};
use bridle_engine::policy::SafetyConfig;
use bridle_engine::store::Commit;
use bridle_server::{ServerSettings, TelemetrySettings};
use figment::Figment;
use figment::providers::{Env, Format, Serialized, Toml};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Every key of `bridle.toml`, as written; unknown keys refused. Its fields are the engine's
/// [`RawConfig`] and `server`; the conversions below name each one, so a key added to the
/// engine and not here does not compile.
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawFile {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    data_dir: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    store_url: Option<String>,
    #[serde(default)]
    store_commit: Commit,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    store_max_connections: Option<u32>,
    #[serde(default)]
    contracts_dirs: Vec<PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    default_model: Option<String>,
    #[serde(default)]
    retry: RawRetry,
    #[serde(default)]
    providers: BTreeMap<String, RawProvider>,
    #[serde(default)]
    models: BTreeMap<String, RawModel>,
    #[serde(default)]
    server: ServerSettings,
    #[serde(default)]
    safety: SafetyConfig,
    #[serde(default)]
    retention: RawRetention,
    #[serde(default, skip_serializing_if = "is_default")]
    telemetry: TelemetrySettings,
    #[serde(default, skip_serializing_if = "is_default")]
    log: crate::logging::LogSettings,
}

/// Whether a section is all defaults (then `config show` leaves it out).
fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

impl RawFile {
    /// The engine's part, the gateway's and the traces' (`[log]` is taken first).
    fn into_sections(self) -> (RawConfig, ServerSettings, TelemetrySettings) {
        let engine = RawConfig {
            data_dir: self.data_dir,
            store_url: self.store_url,
            store_commit: self.store_commit,
            store_max_connections: self.store_max_connections,
            contracts_dirs: self.contracts_dirs,
            default_model: self.default_model,
            retry: self.retry,
            providers: self.providers,
            models: self.models,
            safety: self.safety,
            retention: self.retention,
        };
        (engine, self.server, self.telemetry)
    }

    /// The file made of the engine's part and the gateway's, `[telemetry]` and `[log]`.
    fn from_sections(
        engine: RawConfig,
        server: ServerSettings,
        telemetry: TelemetrySettings,
        log: crate::logging::LogSettings,
    ) -> Self {
        let RawConfig {
            data_dir,
            store_url,
            store_commit,
            store_max_connections,
            contracts_dirs,
            default_model,
            retry,
            providers,
            models,
            safety,
            retention,
        } = engine;
        Self {
            data_dir,
            store_url,
            store_commit,
            store_max_connections,
            contracts_dirs,
            default_model,
            retry,
            providers,
            models,
            server,
            safety,
            retention,
            telemetry,
            log,
        }
    }
}

/// What the command line adds to the file and the environment.
#[derive(Debug, Clone, Default)]
pub struct Overrides<'a> {
    /// `--data-dir`: wins over the file and `BRIDLE__DATA_DIR`.
    pub data_dir: Option<&'a Path>,
    /// `--contracts` directories, added to `contracts_dirs`.
    pub contracts: &'a [PathBuf],
    /// `--bind`: wins over `[server] bind`.
    pub bind: Option<&'a str>,
}

/// The configuration a command runs with: the engine's and the gateway's, both checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Loaded {
    /// The engine's settings.
    pub config: Config,
    /// `[server]`.
    pub server: ServerSettings,
    /// `[telemetry]`.
    pub telemetry: TelemetrySettings,
    /// `[log]`.
    pub log: crate::logging::LogSettings,
}

/// Reads `file` (which must exist when given), the `BRIDLE__…` overlay and the process
/// environment, applies `overrides` and checks every section.
pub fn load(file: Option<&Path>, overrides: &Overrides<'_>) -> Result<Loaded, ConfigError> {
    let env: Environment = std::env::vars().collect();
    let mut figment = Figment::new();
    if let Some(path) = file {
        if !path.is_file() {
            return Err(ConfigError::new(
                "",
                format!("config file {} does not exist", path.display()),
            ));
        }
        figment = figment.merge(Toml::file_exact(path));
    }
    figment = figment.merge(Env::prefixed("BRIDLE__").split("__"));
    if let Some(dir) = overrides.data_dir {
        figment = figment.merge(Serialized::default("data_dir", dir));
    }
    let mut raw: RawFile = config::extract(&figment)?;
    let log = std::mem::take(&mut raw.log);
    let (engine, server, telemetry) = raw.into_sections();
    let mut config = engine.load(&env)?;
    let mut server = server.load().map_err(|e| e.within("server"))?;
    let telemetry = telemetry.load(&env).map_err(|e| e.within("telemetry"))?;
    config
        .contracts_dirs
        .extend(overrides.contracts.iter().cloned());
    if let Some(bind) = overrides.bind {
        server.bind = bind.to_owned();
    }
    Ok(Loaded {
        config,
        server,
        telemetry,
        log,
    })
}

impl Loaded {
    /// The configuration as TOML: every key with its value, defaults filled in, secrets as
    /// `[REDACTED]`, keys in a fixed order (the root keys, then `[retry]`, `[providers.*]`,
    /// `[models.*]`, `[server]`, `[safety]`, `[retention]`, `[telemetry]`). Without secrets,
    /// reading it back gives the same configuration.
    pub fn to_toml(&self) -> Result<String, toml::ser::Error> {
        let file = RawFile::from_sections(
            self.config.to_raw(),
            self.server.redacted(config::REDACTED),
            self.telemetry.clone(),
            self.log.clone(),
        );
        toml::to_string(&file)
    }

    /// One line for `bridle config check`: models, store, where the gateway listens, limits.
    pub fn summary(&self) -> String {
        let config = &self.config;
        let limits = &self.server.limits;
        let limits = if !limits.enabled {
            "no per-user limits".to_owned()
        } else {
            let place = if limits.redis_url.is_some() {
                "shared in Redis"
            } else {
                "in process"
            };
            format!(
                "{} requests/min and {} conversations per user ({place})",
                limits.requests_per_minute, limits.concurrent_conversations
            )
        };
        format!(
            "models {} (default {}); providers {}; store {}; listening on {}; {limits}",
            names(&config.models),
            config.default_model,
            names(&config.providers),
            config::redact_password(&config.store_url),
            self.server.bind,
        )
    }
}

/// The entries' names, comma-separated.
fn names<V>(entries: &BTreeMap<String, V>) -> String {
    entries
        .keys()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ")
}
