//! `bridle prompt`: print the instructions a contract puts into the system prompt.

use crate::{ContractChoice, Outcome, setup};
use anyhow::Result;
use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct PromptArgs {
    #[command(flatten)]
    choice: ContractChoice,
    /// Per-request facts the contract may use (page, mode, …). Repeatable.
    #[arg(long = "context", value_name = "KEY=VALUE")]
    context: Vec<String>,
}

pub fn run(dirs: &[PathBuf], args: PromptArgs) -> Result<Outcome> {
    let contract = setup::contract(dirs, &args.choice, None)?;
    let context = setup::context(&args.context)?;
    crate::out::print(contract.instructions(&context))?;
    Ok(Outcome::Met)
}
