//! `bridle`: the command line of Bridle — check, repair and evaluate LLM replies against a
//! contract, print a contract's prompt instructions, list contracts; run the gateway and the
//! mock LLM, manage API keys, and check or show the gateway's configuration (`config_file.rs`
//! owns the layout of `bridle.toml`).
//!
//! Exit codes: 0 the reply (or every reply) meets the contract, 1 it does not, 2 usage or I/O
//! error (unknown contract, missing file, a schema that is not a schema). A reader that closes
//! standard output early (`| head`) is no error: the exit code stays the command's (`out.rs`).

mod cmd_check;
mod cmd_config;
mod cmd_contracts;
mod cmd_eval;
mod cmd_keys;
mod cmd_mock;
mod cmd_prompt;
mod cmd_repair;
mod cmd_serve;
mod cmd_xml_query;
mod config_file;
mod input;
mod logging;
mod memory;
mod out;
mod setup;

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

// Parsing replies into JSON values is allocation-heavy; mimalloc makes `check` ~35% faster than
// the system allocator (see bench/history-2026-11.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Makes LLM replies obey a contract.
#[derive(Debug, Parser)]
#[command(name = "bridle", version, about, propagate_version = true)]
struct Cli {
    /// Add the contracts of this directory (one contract, or a directory of contracts).
    /// Repeatable; a contract with a built-in's name replaces it.
    #[arg(
        long = "contracts",
        global = true,
        value_name = "DIR",
        env = "BRIDLE_CONTRACTS_DIR"
    )]
    contracts: Vec<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the gateway server (zero config: SQLite in ./bridle-data, the mock provider).
    Serve(cmd_serve::ServeArgs),
    /// Check one reply against a contract: exit 0 if it meets it, 1 if not.
    Check(cmd_check::CheckArgs),
    /// Repair a reply into JSON (fences, prose, trailing commas, quotes, …) and print it.
    Repair(cmd_repair::RepairArgs),
    /// Print the instructions a contract puts into the system prompt.
    Prompt(cmd_prompt::PromptArgs),
    /// List the contracts this binary knows (built-in and added with --contracts).
    Contracts(cmd_contracts::ContractsArgs),
    /// Check a file of replies (one per line) and summarise: valid, repaired, invalid.
    Eval(cmd_eval::EvalArgs),
    /// Run the mock LLM as an OpenAI/Anthropic-compatible HTTP server.
    #[command(name = "mock-llm")]
    MockLlm(cmd_mock::MockArgs),
    /// List, add and revoke API keys (a running server reloads them).
    Keys(cmd_keys::KeysArgs),
    /// Print the <llmQuery> XML document for a message and its topic context.
    #[command(name = "xml-query")]
    XmlQuery(cmd_xml_query::XmlQueryArgs),
    /// Check the gateway's configuration, or show it with every default filled in.
    Config(cmd_config::ConfigArgs),
}

/// Which contract a command uses: a named one or an ad-hoc JSON Schema file.
#[derive(Debug, Args)]
#[group(required = false, multiple = false)]
pub struct ContractChoice {
    /// Name of a built-in or added contract.
    #[arg(long, value_name = "NAME")]
    contract: Option<String>,
    /// A JSON Schema file to use as the contract (any draft: 04, 06, 07, 2019-09, 2020-12).
    #[arg(long, value_name = "FILE.json")]
    schema: Option<PathBuf>,
}

/// Outcome of a command that ran to the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The reply (every reply) meets the contract.
    Met,
    /// At least one reply does not.
    NotMet,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        // The server sets up its log once it has read `[telemetry]`.
        Command::Serve(args) => cmd_serve::run(&cli.contracts, args),
        command => {
            // Logs go to standard error (standard output carries the commands' results).
            logging::init();
            run(command, &cli.contracts)
        }
    };
    match result {
        Ok(Outcome::Met) => ExitCode::SUCCESS,
        Ok(Outcome::NotMet) => ExitCode::from(1),
        Err(error) => {
            eprintln!("bridle: error: {error:#}");
            ExitCode::from(2)
        }
    }
}

/// Runs every command but `serve`.
fn run(command: Command, contracts: &[PathBuf]) -> anyhow::Result<Outcome> {
    match command {
        Command::Serve(args) => cmd_serve::run(contracts, args),
        Command::Check(args) => cmd_check::run(contracts, args),
        Command::Repair(args) => cmd_repair::run(contracts, args),
        Command::Prompt(args) => cmd_prompt::run(contracts, args),
        Command::Contracts(args) => cmd_contracts::run(contracts, args),
        Command::Eval(args) => cmd_eval::run(contracts, args),
        Command::MockLlm(args) => cmd_mock::run(contracts, args),
        Command::Keys(args) => cmd_keys::run(args),
        Command::XmlQuery(args) => cmd_xml_query::run(contracts, args),
        Command::Config(args) => cmd_config::run(contracts, args),
    }
}
