//! `bridle xml-query`: print the `<llmQuery>` document for a message and its topic context
//! (the query side of the `topic-analysis` protocol), escaped and within its limits.

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
    /// The topic (conversation) id.
    #[arg(long, value_name = "ID")]
    topic_id: String,
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
        topic_id: &args.topic_id,
        message_count: args.message_count,
        active_subjects: &args.subjects,
        recent_keywords: &args.keywords,
    };
    crate::out::print(build(&query)?)?;
    Ok(Outcome::Met)
}
