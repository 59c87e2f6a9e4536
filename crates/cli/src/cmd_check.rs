//! `bridle check`: one reply against one contract, as a readable report or one JSON object.

use crate::input::{Reply, read_reply};
use crate::{ContractChoice, Outcome, setup};
use anyhow::Result;
use bridle_core::{Checked, Contract, Repair, Violation};
use clap::Args;
use serde::Serialize;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct CheckArgs {
    #[command(flatten)]
    choice: ContractChoice,
    /// Per-request facts the contract may use (page, mode, …). Repeatable.
    #[arg(long = "context", value_name = "KEY=VALUE")]
    context: Vec<String>,
    /// Print exactly one JSON object: {valid, contract, value, violations, repairs}.
    #[arg(long)]
    json: bool,
    /// The reply file; `-` or nothing reads standard input.
    #[arg(value_name = "FILE|-")]
    file: Option<PathBuf>,
}

pub fn run(dirs: &[PathBuf], args: CheckArgs) -> Result<Outcome> {
    let contract = setup::contract(dirs, &args.choice, None)?;
    let context = setup::context(&args.context)?;
    let checked = match read_reply(args.file.as_deref(), contract.limits().max_bytes)? {
        Reply::Bytes(bytes) => contract.check_bytes(&bytes, &context),
        Reply::TooLarge(size) => contract.too_large(size),
    };
    if args.json {
        crate::out::print(format_args!("{}\n", report_json(&contract, &checked)?))?;
    } else {
        crate::out::print(report_text(&contract, &checked))?;
    }
    Ok(if checked.is_valid() {
        Outcome::Met
    } else {
        Outcome::NotMet
    })
}

/// The `--json` object, members in the documented order.
#[derive(Debug, Serialize)]
struct Report<'a> {
    valid: bool,
    contract: &'a str,
    value: &'a Option<serde_json::Value>,
    violations: &'a [Violation],
    repairs: &'a [Repair],
}

fn report_json(contract: &Contract, checked: &Checked) -> Result<String> {
    Ok(serde_json::to_string(&Report {
        valid: checked.is_valid(),
        contract: contract.name(),
        value: &checked.value,
        violations: &checked.violations,
        repairs: &checked.repairs,
    })?)
}

/// The readable report.
fn report_text(contract: &Contract, checked: &Checked) -> String {
    let mut out = String::new();
    let title = format!("{} {}", contract.name(), contract.version());
    if checked.is_valid() {
        out.push_str(&format!("✓ the reply meets {title}"));
        if !checked.repairs.is_empty() {
            out.push_str(&format!(" after {} repair kind(s)", checked.repairs.len()));
        }
        out.push('\n');
    } else {
        out.push_str(&format!(
            "✗ the reply does not meet {title}: {} violation(s)\n",
            checked.violations.len()
        ));
    }
    if !checked.repairs.is_empty() {
        out.push_str("repairs:\n");
        for r in &checked.repairs {
            out.push_str(&format!("  {}\n", repair_line(r)));
        }
    }
    if !checked.violations.is_empty() {
        out.push_str("violations:\n");
        for v in &checked.violations {
            let path = if v.path.is_empty() {
                "/"
            } else {
                v.path.as_str()
            };
            out.push_str(&format!("  {path}  [{}]  {}\n", v.rule, v.message));
        }
    }
    out
}

/// One repair in words: `kind[ at /path] ×count: message`.
pub fn repair_line(r: &Repair) -> String {
    let at = r
        .path
        .as_deref()
        .map(|p| format!(" at {p}"))
        .unwrap_or_default();
    format!("{}{at} ×{}: {}", r.kind, r.count, r.message)
}
