//! `bridle contracts`: list the contracts this binary knows (with their load-time warnings:
//! on stderr beside the table, a `warnings` list in `--json`).

use crate::{Outcome, setup};
use anyhow::Result;
use clap::Args;
use serde_json::json;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct ContractsArgs {
    /// Print a JSON array instead of a table.
    #[arg(long)]
    json: bool,
}

pub fn run(dirs: &[PathBuf], args: ContractsArgs) -> Result<Outcome> {
    let contracts = setup::contracts(dirs)?;
    if args.json {
        let list: Vec<serde_json::Value> = contracts
            .iter()
            .map(|c| {
                json!({
                    "name": c.name(),
                    "version": c.version().to_string(),
                    "kind": c.kind().as_str(),
                    "description": c.description(),
                    "origin": c.origin(),
                    "schema_draft": c.schema().draft_name(),
                    "rules": c.rules().len(),
                    "warnings": c.warnings(),
                })
            })
            .collect();
        crate::out::print(format_args!("{}\n", serde_json::to_string_pretty(&list)?))?;
        return Ok(Outcome::Met);
    }
    let width = contracts
        .iter()
        .map(|c| c.name().len())
        .max()
        .unwrap_or(4)
        .max(4);
    let mut table = format!(
        "{:width$}  {:8}  {:5}  {:22}  DESCRIPTION\n",
        "NAME", "VERSION", "KIND", "ORIGIN"
    );
    for c in contracts.iter() {
        setup::warn(c);
        table.push_str(&format!(
            "{:width$}  {:8}  {:5}  {:22}  {}\n",
            c.name(),
            c.version().to_string(),
            c.kind().as_str(),
            c.origin(),
            c.description()
        ));
    }
    crate::out::print(table)?;
    Ok(Outcome::Met)
}
