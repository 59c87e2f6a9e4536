//! `bridle serve`: the gateway — Bridle's main job. Zero config: SQLite in `./bridle-data`, the
//! built-in mock provider, API keys generated and printed on first start.

use crate::Outcome;
use crate::config_file::{self, Overrides};
use anyhow::{Context as _, Result};
use bridle_server::Telemetry;
use bridle_server::serve::{KeyEnv, serve};
use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on (default 127.0.0.1:8080, or [server] bind).
    #[arg(long, value_name = "ADDR", env = "BRIDLE_BIND")]
    bind: Option<String>,
    /// Where Bridle keeps its files (SQLite database, generated API keys).
    #[arg(long, value_name = "DIR", env = "BRIDLE_DATA_DIR")]
    data_dir: Option<PathBuf>,
    /// A bridle.toml configuration file.
    #[arg(long, value_name = "FILE", env = "BRIDLE_CONFIG")]
    config: Option<PathBuf>,
}

pub fn run(dirs: &[PathBuf], args: ServeArgs) -> Result<Outcome> {
    crate::memory::steady_pages();
    let overrides = Overrides {
        data_dir: args.data_dir.as_deref(),
        contracts: dirs,
        bind: args.bind.as_deref(),
    };
    let loaded = config_file::load(args.config.as_deref(), &overrides);
    let loaded = match loaded {
        Ok(loaded) => loaded,
        Err(error) => {
            crate::logging::init();
            return Err(error).context("configuration");
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    // Within the runtime: a gRPC exporter's connection runs on it.
    let telemetry = {
        let _entered = runtime.enter();
        Telemetry::start(&loaded.telemetry)
    };
    let telemetry = match telemetry {
        Ok(telemetry) => telemetry,
        Err(error) => {
            crate::logging::init();
            return Err(error.into());
        }
    };
    crate::logging::init();
    crate::logging::apply(&loaded.log);
    let served = runtime.block_on(serve(
        loaded.config,
        loaded.server,
        loaded.telemetry,
        KeyEnv::from_process(),
        crate::logging::say,
    ));
    // The spans still queued are exported before the process ends (the runtime still runs).
    if let Some(telemetry) = telemetry {
        telemetry.shutdown();
    }
    served?;
    Ok(Outcome::Met)
}
