//! Loading what commands share: the contract set (built-in + `--contracts` directories), the
//! chosen contract (by name or from a schema file) and the `--context` pairs.

use crate::ContractChoice;
use anyhow::{Context as _, Result, bail};
use bridle_core::{Context, Contract, Contracts};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Largest schema file read for `--schema`.
const MAX_SCHEMA_BYTES: u64 = 8 * 1024 * 1024;

/// Built-in contracts plus those of each `--contracts` directory.
pub fn contracts(dirs: &[PathBuf]) -> Result<Contracts> {
    let mut set = Contracts::builtin().context("loading the built-in contracts")?;
    for dir in dirs {
        set.load_dir(dir)
            .with_context(|| format!("loading contracts from {}", dir.display()))?;
    }
    Ok(set)
}

/// The contract a command was pointed at; `default` when neither flag was given (or an error
/// when there is no default).
pub fn contract(
    dirs: &[PathBuf],
    choice: &ContractChoice,
    default: Option<&str>,
) -> Result<Arc<Contract>> {
    let contract = chosen(dirs, choice, default)?;
    warn(&contract);
    Ok(contract)
}

/// The contract's load-time warnings (an unknown `format`, …) on stderr, one a line.
pub fn warn(contract: &Contract) {
    for warning in contract.warnings() {
        eprintln!("warning: contract {}: {warning}", contract.name());
    }
}

fn chosen(
    dirs: &[PathBuf],
    choice: &ContractChoice,
    default: Option<&str>,
) -> Result<Arc<Contract>> {
    match (&choice.contract, &choice.schema, default) {
        (Some(name), _, _) => Ok(contracts(dirs)?.get(name)?),
        (None, Some(path), _) => schema_contract(path),
        (None, None, Some(default)) => Ok(Arc::new(Contract::from_schema(
            default,
            serde_json::Value::Bool(true),
        )?)),
        (None, None, None) => bail!("name a contract with --contract NAME or --schema FILE.json"),
    }
}

fn schema_contract(path: &Path) -> Result<Arc<Contract>> {
    let meta = std::fs::metadata(path)
        .with_context(|| format!("cannot read schema file {}", path.display()))?;
    if !meta.is_file() {
        bail!("schema file {} is not a regular file", path.display());
    }
    if meta.len() > MAX_SCHEMA_BYTES {
        bail!(
            "schema file {} is {} bytes; the limit is {MAX_SCHEMA_BYTES}",
            path.display(),
            meta.len()
        );
    }
    let bytes = std::fs::read(path)
        .with_context(|| format!("cannot read schema file {}", path.display()))?;
    let value: serde_json::Value = serde_json::from_slice(&bytes)
        .with_context(|| format!("schema file {} is not JSON", path.display()))?;
    let name = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("schema");
    Ok(Arc::new(Contract::from_schema(name, value)?))
}

/// `--context KEY=VALUE` pairs.
pub fn context(pairs: &[String]) -> Result<Context> {
    let mut context = Context::new();
    for pair in pairs {
        context.insert_pair(pair)?;
    }
    Ok(context)
}
