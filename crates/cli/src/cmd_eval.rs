//! `bridle eval`: check a JSONL file of replies and summarise — how many were valid as sent,
//! valid after repair, invalid; the most violated rules; repairs by kind.
//!
//! Each non-empty line is one reply. A line that is a JSON string is unescaped first (so replies
//! with newlines and fences fit on one line); with `--field NAME` each line is an object and the
//! reply is its member NAME; any other line is the reply as written.

use crate::{ContractChoice, Outcome, setup};
use anyhow::{Context as _, Result, bail};
use bridle_core::{Checked, Contract};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;

/// Line numbers of invalid replies listed in the summary.
const LISTED_INVALID: usize = 100;
/// Rules and repair kinds listed in the readable summary.
const TOP: usize = 10;

#[derive(Debug, Args)]
pub struct EvalArgs {
    #[command(flatten)]
    choice: ContractChoice,
    /// Per-request facts the contract may use (page, mode, …). Repeatable.
    #[arg(long = "context", value_name = "KEY=VALUE")]
    context: Vec<String>,
    /// Take each reply from this member of a JSON object per line.
    #[arg(long, value_name = "NAME")]
    field: Option<String>,
    /// Print the summary as one JSON object.
    #[arg(long)]
    json: bool,
    /// The JSONL file, one reply per line.
    #[arg(value_name = "FILE.jsonl")]
    file: PathBuf,
}

#[derive(Debug, Default)]
struct Summary {
    total: u64,
    valid: u64,
    repaired: u64,
    invalid: u64,
    rules: BTreeMap<String, u64>,
    repairs: BTreeMap<String, u64>,
    invalid_lines: Vec<u64>,
}

impl Summary {
    fn add(&mut self, line: u64, checked: &Checked) {
        self.total += 1;
        for r in &checked.repairs {
            *self.repairs.entry(r.kind.to_string()).or_default() += u64::from(r.count);
        }
        if checked.is_valid() {
            if checked.repairs.is_empty() {
                self.valid += 1;
            } else {
                self.repaired += 1;
            }
            return;
        }
        self.invalid += 1;
        if self.invalid_lines.len() < LISTED_INVALID {
            self.invalid_lines.push(line);
        }
        // Count each rule once per reply: "how many replies broke it".
        let mut seen: Vec<&str> = checked.violations.iter().map(|v| v.rule.as_str()).collect();
        seen.sort_unstable();
        seen.dedup();
        for rule in seen {
            *self.rules.entry(rule.to_owned()).or_default() += 1;
        }
    }
}

fn ranked(counts: &BTreeMap<String, u64>) -> Vec<(&str, u64)> {
    let mut list: Vec<(&str, u64)> = counts.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    list.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    list
}

pub fn run(dirs: &[PathBuf], args: EvalArgs) -> Result<Outcome> {
    let contract = setup::contract(dirs, &args.choice, None)?;
    let context = setup::context(&args.context)?;
    let file = std::fs::File::open(&args.file)
        .with_context(|| format!("cannot open {}", args.file.display()))?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    if file.metadata().is_ok_and(|m| m.is_dir()) {
        bail!("{} is a directory, not a JSONL file", args.file.display());
    }
    let progress = ProgressBar::new(size).with_style(
        ProgressStyle::with_template("{bar:40} {bytes}/{total_bytes} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let mut reader = BufReader::new(file);
    let limit = contract.limits().max_bytes;
    let mut summary = Summary::default();
    let mut line = Vec::new();
    let mut number = 0u64;
    loop {
        let Some(length) = next_line(&mut reader, &mut line, limit)
            .with_context(|| format!("cannot read {}", args.file.display()))?
        else {
            break;
        };
        number += 1;
        progress.inc(length + 1);
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let checked = if length > limit as u64 {
            contract.too_large(length)
        } else {
            check_line(&contract, &context, &line, args.field.as_deref())
        };
        summary.add(number, &checked);
        if number.is_multiple_of(256) {
            progress.set_message(format!("{} invalid", summary.invalid));
        }
    }
    progress.finish_and_clear();
    if args.json {
        crate::out::print(format_args!("{}\n", summary_json(&contract, &summary)))?;
    } else {
        crate::out::print(summary_text(&contract, &summary))?;
    }
    Ok(if summary.invalid == 0 {
        Outcome::Met
    } else {
        Outcome::NotMet
    })
}

fn check_line(
    contract: &Contract,
    context: &bridle_core::Context,
    line: &[u8],
    field: Option<&str>,
) -> Checked {
    let reply_of = |value: Value| match value {
        Value::String(s) => s,
        other => other.to_string(),
    };
    match field {
        Some(field) => match serde_json::from_slice::<Value>(line) {
            Ok(Value::Object(mut object)) => match object.remove(field) {
                Some(reply) => contract.check(&reply_of(reply), context),
                None => missing_field(field),
            },
            _ => missing_field(field),
        },
        None => match serde_json::from_slice::<Value>(line) {
            Ok(Value::String(reply)) => contract.check(&reply, context),
            _ => contract.check_bytes(line, context),
        },
    }
}

fn missing_field(field: &str) -> Checked {
    Checked {
        value: None,
        violations: vec![bridle_core::Violation::new(
            "",
            bridle_core::Rule::MissingField,
            format!("the line is not a JSON object with a member {field:?}"),
        )],
        repairs: Vec::new(),
    }
}

/// Reads one line into `buf` (without the newline), keeping at most `limit + 1` bytes of it;
/// returns the line's full length, or `None` at the end of the input.
fn next_line(
    reader: &mut impl BufRead,
    buf: &mut Vec<u8>,
    limit: usize,
) -> std::io::Result<Option<u64>> {
    buf.clear();
    let mut length = 0u64;
    let mut any = false;
    loop {
        let chunk = reader.fill_buf()?;
        if chunk.is_empty() {
            return Ok(any.then_some(length));
        }
        any = true;
        let (part, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (&chunk[..i], Some(i + 1)),
            None => (chunk, None),
        };
        let room = (limit + 1).saturating_sub(buf.len());
        buf.extend_from_slice(&part[..part.len().min(room)]);
        length += part.len() as u64;
        let consumed = done.unwrap_or(chunk.len());
        reader.consume(consumed);
        if done.is_some() {
            if buf.last() == Some(&b'\r') {
                buf.pop();
                length -= 1;
            }
            return Ok(Some(length));
        }
    }
}

fn percent(part: u64, total: u64) -> f64 {
    if total == 0 {
        0.0
    } else {
        part as f64 * 100.0 / total as f64
    }
}

fn summary_json(contract: &Contract, s: &Summary) -> Value {
    json!({
        "contract": contract.name(),
        "version": contract.version().to_string(),
        "total": s.total,
        "valid": s.valid,
        "repaired": s.repaired,
        "invalid": s.invalid,
        "rules": ranked(&s.rules).into_iter().map(|(rule, count)| json!({"rule": rule, "count": count})).collect::<Vec<_>>(),
        "repairs": ranked(&s.repairs).into_iter().map(|(kind, count)| json!({"kind": kind, "count": count})).collect::<Vec<_>>(),
        "invalid_lines": s.invalid_lines,
    })
}

fn summary_text(contract: &Contract, s: &Summary) -> String {
    let mut out = format!(
        "{} {}: {} replies\n",
        contract.name(),
        contract.version(),
        s.total
    );
    for (label, n, note) in [
        ("valid", s.valid, "as sent"),
        ("repaired", s.repaired, "valid after repair"),
        ("invalid", s.invalid, "do not meet the contract"),
    ] {
        out.push_str(&format!(
            "  {label:9} {n:>8}  {:5.1}%  {note}\n",
            percent(n, s.total)
        ));
    }
    if !s.rules.is_empty() {
        out.push_str("most violated rules (replies):\n");
        for (rule, n) in ranked(&s.rules).into_iter().take(TOP) {
            out.push_str(&format!("  {rule:22} {n:>8}\n"));
        }
    }
    if !s.repairs.is_empty() {
        out.push_str("repairs by kind:\n");
        for (kind, n) in ranked(&s.repairs).into_iter().take(TOP) {
            out.push_str(&format!("  {kind:22} {n:>8}\n"));
        }
    }
    if !s.invalid_lines.is_empty() {
        let shown: Vec<String> = s
            .invalid_lines
            .iter()
            .take(20)
            .map(u64::to_string)
            .collect();
        let more = if s.invalid > 20 { ", …" } else { "" };
        out.push_str(&format!("invalid lines: {}{more}\n", shown.join(", ")));
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_split_and_capped() {
        let data = b"one\r\ntwo-long-line\n\nlast";
        let mut reader = &data[..];
        let mut buf = Vec::new();
        let mut got = Vec::new();
        while let Some(n) = next_line(&mut reader, &mut buf, 4).unwrap() {
            got.push((n, String::from_utf8(buf.clone()).unwrap()));
        }
        assert_eq!(
            got,
            vec![
                (3, "one".into()),
                (13, "two-l".into()),
                (0, String::new()),
                (4, "last".into())
            ]
        );
    }
}
