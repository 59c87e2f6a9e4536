//! `bridle repair`: print a reply as repaired JSON; the repairs made go to standard error.
//!
//! The output is the repaired text itself — the model's own formatting and key order with only
//! the repairs applied (text that already parses comes out unchanged). When a named contract's
//! coercions changed the value, or with `--pretty`, the parsed value is printed instead.

use crate::input::{Reply, read_reply};
use crate::{ContractChoice, Outcome, setup};
use anyhow::{Result, bail};
use bridle_core::{Context, Rule, repair};
use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct RepairArgs {
    #[command(flatten)]
    choice: ContractChoice,
    /// Print the parsed value indented (keys sorted) instead of the repaired text.
    #[arg(long)]
    pretty: bool,
    /// The reply file; `-` or nothing reads standard input.
    #[arg(value_name = "FILE|-")]
    file: Option<PathBuf>,
}

/// Violations of these rules mean the text could not be read as JSON at all.
const UNREADABLE: &[Rule] = &[
    Rule::Empty,
    Rule::Encoding,
    Rule::TooLarge,
    Rule::Truncated,
    Rule::NotJson,
    Rule::Parse,
];

pub fn run(dirs: &[PathBuf], args: RepairArgs) -> Result<Outcome> {
    let contract = setup::contract(dirs, &args.choice, Some("any-json"))?;
    let bytes = match read_reply(args.file.as_deref(), contract.limits().max_bytes)? {
        Reply::Bytes(bytes) => bytes,
        Reply::TooLarge(size) => {
            let checked = contract.too_large(size);
            eprintln!("cannot repair: {}", checked.violations[0].message);
            return Ok(Outcome::NotMet);
        }
    };
    let checked = contract.check_bytes(&bytes, &Context::new());
    for r in &checked.repairs {
        eprintln!("repair: {}", crate::cmd_check::repair_line(r));
    }
    let Some(value) = &checked.value else {
        let mut unreadable = checked
            .violations
            .iter()
            .filter(|v| UNREADABLE.contains(&v.rule))
            .peekable();
        if unreadable.peek().is_none() {
            bail!("the reply could not be repaired");
        }
        for v in unreadable {
            eprintln!("cannot repair: [{}] {}", v.rule, v.message);
        }
        return Ok(Outcome::NotMet);
    };
    let coerced = checked.repairs.iter().any(|r| r.path.is_some());
    if args.pretty || coerced {
        let json = if args.pretty {
            serde_json::to_string_pretty(value)?
        } else {
            serde_json::to_string(value)?
        };
        crate::out::print(format_args!("{json}\n"))?;
        return Ok(Outcome::Met);
    }
    // `check_bytes` succeeded, so the bytes are UTF-8.
    let raw = String::from_utf8_lossy(&bytes);
    let text = if checked.repairs.is_empty() {
        raw.trim().to_owned()
    } else {
        repair(&raw, contract.schema().root_hint()).text
    };
    crate::out::print(format_args!("{text}\n"))?;
    Ok(Outcome::Met)
}
