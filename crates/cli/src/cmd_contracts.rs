//! `bridle contracts`: list the contracts this binary knows.

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
                })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&list)?);
        return Ok(Outcome::Met);
    }
    let width = contracts
        .iter()
        .map(|c| c.name().len())
        .max()
        .unwrap_or(4)
        .max(4);
    println!(
        "{:width$}  {:8}  {:5}  {:22}  DESCRIPTION",
        "NAME", "VERSION", "KIND", "ORIGIN"
    );
    for c in contracts.iter() {
        println!(
            "{:width$}  {:8}  {:5}  {:22}  {}",
            c.name(),
            c.version().to_string(),
            c.kind().as_str(),
            c.origin(),
            c.description()
        );
    }
    Ok(Outcome::Met)
}
