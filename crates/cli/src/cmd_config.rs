//! `bridle config check [FILE]` and `bridle config show [FILE]`: the configuration `serve`
//! would run with — the file, the `BRIDLE__…` overlay, the `OPENAI_*` conveniences,
//! `--data-dir`, `--bind` and `--contracts`, read by the same `config_file::load`.
//! `check` says `ok` and what it found, or the first mistake by its key path (exit 2); it also
//! loads the contracts, as `serve` does. `show` prints the effective configuration as TOML,
//! every default filled in and secrets redacted — a complete file to start from
//! (docs/configuration.md explains each key).

use crate::config_file::{self, Overrides};
use crate::{Outcome, setup};
use anyhow::{Context as _, Result};
use clap::{Args, Subcommand};
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct ConfigArgs {
    #[command(subcommand)]
    action: ConfigAction,
}

#[derive(Debug, Subcommand)]
enum ConfigAction {
    /// Load and check the configuration as `serve` would: print `ok` and a summary, or the
    /// first mistake by its key path (exit 2).
    Check(Source),
    /// Print the effective configuration as TOML: every key, defaults filled in, secrets
    /// redacted.
    Show(Source),
}

/// Where the configuration comes from, as for `serve`.
#[derive(Debug, Args)]
struct Source {
    /// A bridle.toml configuration file (without one: the defaults and the environment).
    #[arg(value_name = "FILE", env = "BRIDLE_CONFIG")]
    file: Option<PathBuf>,
    /// Where Bridle keeps its files (wins over the file's data_dir).
    #[arg(long, value_name = "DIR", env = "BRIDLE_DATA_DIR")]
    data_dir: Option<PathBuf>,
    /// Address to listen on (wins over [server] bind).
    #[arg(long, value_name = "ADDR", env = "BRIDLE_BIND")]
    bind: Option<String>,
}

pub fn run(dirs: &[PathBuf], args: ConfigArgs) -> Result<Outcome> {
    let (ConfigAction::Check(source) | ConfigAction::Show(source)) = &args.action;
    let overrides = Overrides {
        data_dir: source.data_dir.as_deref(),
        contracts: dirs,
        bind: source.bind.as_deref(),
    };
    let loaded = config_file::load(source.file.as_deref(), &overrides).context("configuration")?;
    match args.action {
        ConfigAction::Check(_) => {
            let contracts =
                setup::contracts(&loaded.config.contracts_dirs).context("contracts_dirs")?;
            crate::out::print(format_args!(
                "ok: {}; {} contracts\n",
                loaded.summary(),
                contracts.len()
            ))?;
        }
        ConfigAction::Show(_) => {
            let text = loaded
                .to_toml()
                .context("writing the configuration as TOML")?;
            crate::out::print(format_args!(
                "# The effective configuration: defaults filled in, secrets redacted.\n{text}"
            ))?;
        }
    }
    Ok(Outcome::Met)
}
