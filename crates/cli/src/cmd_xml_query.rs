//! `bridle xml-query`: print the `<llmQuery>` document for a message and its topic context
//! (the query side of the `topic-analysis` protocol), escaped and within its limits — or, with
//! `--check FILE`, check a query an application built itself against spec 05's query rules.

use crate::Outcome;
use anyhow::{Context as _, Result};
use bridle_core::xml::query::{Query, build};
use clap::Args;
use std::io::Read as _;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct XmlQueryArgs {
    /// The user's message; `-` or nothing reads it from standard input.
    #[arg(long, value_name = "TEXT")]
    message: Option<String>,
    /// Check this `<llmQuery>` document (`-`: standard input) against the query rules instead
    /// of building one: exit 0 when it follows them, 1 (the violations listed) when not.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["message", "topic_id", "subjects", "keywords"])]
    check: Option<PathBuf>,
    /// The topic (conversation) id.
    #[arg(long, value_name = "ID", required_unless_present = "check")]
    topic_id: Option<String>,
    /// Messages in the conversation so far.
    #[arg(long, default_value_t = 0)]
    message_count: u64,
    /// An active subject (repeatable, at most 20).
    #[arg(long = "subject", value_name = "NAME")]
    subjects: Vec<String>,
    /// A recent keyword (repeatable, at most 50).
    #[arg(long = "keyword", value_name = "TERM")]
    keywords: Vec<String>,
}

pub fn run(_dirs: &[PathBuf], args: XmlQueryArgs) -> Result<Outcome> {
    if let Some(path) = &args.check {
        return check(path);
    }
    let message = match args.message.as_deref() {
        Some(text) if text != "-" => text.to_owned(),
        _ => {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .context("reading the message from standard input")?;
            text
        }
    };
    let query = Query {
        message: &message,
        topic_id: args.topic_id.as_deref().unwrap_or_default(),
        message_count: args.message_count,
        active_subjects: &args.subjects,
        recent_keywords: &args.keywords,
    };
    crate::out::print(build(&query)?)?;
    Ok(Outcome::Met)
}

/// `--check FILE`: the query rules' violations, one per line (`PATH RULE: message`).
fn check(path: &std::path::Path) -> Result<Outcome> {
    /// Largest query read: well past any the protocol's limits allow.
    const MAX_QUERY_BYTES: usize = 1 << 20;
    let violations = match crate::input::read_reply(Some(path), MAX_QUERY_BYTES)? {
        crate::input::Reply::TooLarge(size) => {
            crate::out::print(format!(
                "✗ the query has {size} bytes; at most {MAX_QUERY_BYTES} are read\n"
            ))?;
            return Ok(Outcome::NotMet);
        }
        crate::input::Reply::Bytes(bytes) => match String::from_utf8(bytes) {
            Ok(text) => bridle_core::xml::query_check::check(&text),
            Err(_) => {
                crate::out::print("✗ the query is not UTF-8 text\n")?;
                return Ok(Outcome::NotMet);
            }
        },
    };
    if violations.is_empty() {
        crate::out::print("✓ the query follows the llmQuery rules\n")?;
        return Ok(Outcome::Met);
    }
    let mut out = format!(
        "✗ {} violation(s) of the llmQuery rules\n",
        violations.len()
    );
    for v in &violations {
        let path = if v.path.is_empty() {
            "(document)"
        } else {
            &v.path
        };
        out.push_str(&format!("  {path} {}: {}\n", v.rule.as_str(), v.message));
    }
    crate::out::print(out)?;
    Ok(Outcome::NotMet)
}
