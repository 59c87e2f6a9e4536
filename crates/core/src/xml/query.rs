//! [`build`]: the `<llmQuery>` document a topic-analysis conversation sends — the user's
//! message, escaped, and the conversation's topic context (topic id, message count, active
//! subjects, recent keywords), within the protocol's limits.
//!
//! ```
//! use bridle_core::xml::query::{Query, build};
//!
//! let subjects = vec!["family planning".to_owned()];
//! let query = Query { message: "Is 5 < 7 & 8 > 3?", topic_id: "t-1", message_count: 3,
//!                     active_subjects: &subjects, recent_keywords: &[] };
//! let xml = build(&query).unwrap();
//! assert!(xml.contains("<userMessage>Is 5 &lt; 7 &amp; 8 &gt; 3?</userMessage>"));
//! assert!(xml.contains("<activeSubjects>family planning</activeSubjects>"));
//! ```

use quick_xml::escape::escape;
use std::fmt::Write as _;

/// Longest user message, in characters.
pub const MAX_MESSAGE_CHARS: usize = 10_000;
/// Most active subjects listed.
pub const MAX_SUBJECTS: usize = 20;
/// Most recent keywords listed.
pub const MAX_KEYWORDS: usize = 50;

/// What a query carries.
#[derive(Debug, Clone, Copy)]
pub struct Query<'a> {
    /// The user's message (1–10,000 characters).
    pub message: &'a str,
    /// The topic (conversation) id.
    pub topic_id: &'a str,
    /// Messages in the conversation so far.
    pub message_count: u64,
    /// Current subjects (at most 20; none may contain a comma).
    pub active_subjects: &'a [String],
    /// Recent keywords (at most 50; none may contain a comma).
    pub recent_keywords: &'a [String],
}

/// Why a query cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QueryError {
    /// The message is empty or blank.
    #[error("the message is empty")]
    EmptyMessage,
    /// The message is over [`MAX_MESSAGE_CHARS`].
    #[error("the message has {0} characters; at most {MAX_MESSAGE_CHARS} are allowed")]
    MessageTooLong(usize),
    /// The topic id is empty.
    #[error("the topic id is empty")]
    EmptyTopicId,
    /// More than [`MAX_SUBJECTS`] subjects.
    #[error("{0} active subjects; at most {MAX_SUBJECTS} are allowed")]
    TooManySubjects(usize),
    /// More than [`MAX_KEYWORDS`] keywords.
    #[error("{0} recent keywords; at most {MAX_KEYWORDS} are allowed")]
    TooManyKeywords(usize),
    /// A list item is empty or holds a comma (the lists are comma-separated).
    #[error("{0:?} cannot be listed: items must be non-empty and hold no comma")]
    BadItem(String),
    /// An `<llmQuery>` the application wrote itself breaks spec 05's query rules (the first
    /// violation, in words).
    #[error("the message is an <llmQuery> that breaks the query rules: {0}")]
    InvalidQuery(String),
}

/// The query document, or why it cannot be made.
pub fn build(query: &Query<'_>) -> Result<String, QueryError> {
    if query.message.trim().is_empty() {
        return Err(QueryError::EmptyMessage);
    }
    let chars = query.message.chars().count();
    if chars > MAX_MESSAGE_CHARS {
        return Err(QueryError::MessageTooLong(chars));
    }
    if query.topic_id.trim().is_empty() {
        return Err(QueryError::EmptyTopicId);
    }
    if query.active_subjects.len() > MAX_SUBJECTS {
        return Err(QueryError::TooManySubjects(query.active_subjects.len()));
    }
    if query.recent_keywords.len() > MAX_KEYWORDS {
        return Err(QueryError::TooManyKeywords(query.recent_keywords.len()));
    }
    let mut out = String::with_capacity(query.message.len() + 256);
    out.push_str("<llmQuery>\n  <userMessage>");
    out.push_str(&escape(query.message));
    out.push_str("</userMessage>\n");
    let _ = write!(
        out,
        "  <context topicId=\"{}\" messageCount=\"{}\"",
        escape(query.topic_id),
        query.message_count
    );
    let subjects = list(query.active_subjects)?;
    let keywords = list(query.recent_keywords)?;
    if subjects.is_empty() && keywords.is_empty() {
        out.push_str(" />\n");
    } else {
        out.push_str(">\n");
        if !subjects.is_empty() {
            let _ = writeln!(out, "    <activeSubjects>{subjects}</activeSubjects>");
        }
        if !keywords.is_empty() {
            let _ = writeln!(out, "    <recentKeywords>{keywords}</recentKeywords>");
        }
        out.push_str("  </context>\n");
    }
    out.push_str("</llmQuery>\n");
    Ok(out)
}

fn list(items: &[String]) -> Result<String, QueryError> {
    let mut escaped = Vec::with_capacity(items.len());
    for item in items {
        let trimmed = item.trim();
        if trimmed.is_empty() || trimmed.contains(',') {
            return Err(QueryError::BadItem(item.clone()));
        }
        escaped.push(escape(trimmed).into_owned());
    }
    Ok(escaped.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query<'a>(message: &'a str, subjects: &'a [String], keywords: &'a [String]) -> Query<'a> {
        Query {
            message,
            topic_id: "topic \"1\"",
            message_count: 12,
            active_subjects: subjects,
            recent_keywords: keywords,
        }
    }

    #[test]
    fn everything_is_escaped_and_listed() {
        let subjects = vec!["a & b".to_owned(), "c".to_owned()];
        let keywords = vec!["<k>".to_owned()];
        let xml = build(&query("x'y\"z", &subjects, &keywords)).unwrap();
        assert_eq!(
            xml,
            "<llmQuery>\n  <userMessage>x&apos;y&quot;z</userMessage>\n  \
             <context topicId=\"topic &quot;1&quot;\" messageCount=\"12\">\n    \
             <activeSubjects>a &amp; b, c</activeSubjects>\n    \
             <recentKeywords>&lt;k&gt;</recentKeywords>\n  </context>\n</llmQuery>\n"
        );
    }

    #[test]
    fn limits_are_enforced() {
        assert_eq!(build(&query(" ", &[], &[])), Err(QueryError::EmptyMessage));
        let long = "é".repeat(MAX_MESSAGE_CHARS + 1);
        assert_eq!(
            build(&query(&long, &[], &[])),
            Err(QueryError::MessageTooLong(MAX_MESSAGE_CHARS + 1))
        );
        assert!(build(&query(&"é".repeat(MAX_MESSAGE_CHARS), &[], &[])).is_ok());
        let subjects = vec!["s".to_owned(); MAX_SUBJECTS + 1];
        assert_eq!(
            build(&query("hi", &subjects, &[])),
            Err(QueryError::TooManySubjects(21))
        );
        let keywords = vec!["k".to_owned(); MAX_KEYWORDS + 1];
        assert_eq!(
            build(&query("hi", &[], &keywords)),
            Err(QueryError::TooManyKeywords(51))
        );
        let comma = vec!["a, b".to_owned()];
        assert!(matches!(
            build(&query("hi", &comma, &[])),
            Err(QueryError::BadItem(_))
        ));
    }
}
