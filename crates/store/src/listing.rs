//! The admin listing's SQL, shared by both backends: [`count_query`] and [`page_query`] turn a
//! [`ConversationFilter`] into a `WHERE` clause whose every value is a bound parameter. The one
//! place the backends' SQL differs — matching text case-insensitively — is a [`TextMatch`] (and
//! how a parameter is written, [`Placeholders`]).

use super::sql::{Placeholders, Query};
use super::{ConversationFilter, PageRequest};

/// The largest page a listing returns.
pub(super) const MAX_LIMIT: u64 = 500;

/// How a backend matches message content (`m.content`) against a bound `LIKE` pattern that uses
/// `\` as its escape character: the SQL before the pattern's placeholder and after it.
#[derive(Debug, Clone, Copy)]
pub(super) struct TextMatch {
    /// SQL before the placeholder.
    pub before: &'static str,
    /// SQL after the placeholder.
    pub after: &'static str,
}

/// A requested page size clamped to `1..=MAX_LIMIT`.
pub(super) fn clamp_limit(limit: u64) -> u64 {
    limit.clamp(1, MAX_LIMIT)
}

/// A `COUNT(*)` as the listing's total (a count is never negative).
pub(super) fn total(count: i64) -> u64 {
    u64::try_from(count).unwrap_or_default()
}

/// A `LIKE` pattern matching `text` anywhere, with `\`, `%` and `_` escaped by `\`.
pub(super) fn contains_pattern(text: &str) -> String {
    let mut pattern = String::with_capacity(text.len() + 2);
    pattern.push('%');
    for c in text.chars() {
        if matches!(c, '\\' | '%' | '_') {
            pattern.push('\\');
        }
        pattern.push(c);
    }
    pattern.push('%');
    pattern
}

/// `SELECT COUNT(*)` of the conversations matching `filter`.
pub(super) fn count_query(
    placeholders: Placeholders,
    filter: &ConversationFilter,
    text_match: TextMatch,
) -> Query {
    let mut query = Query::new(placeholders, "SELECT COUNT(*) FROM conversations c");
    push_where(&mut query, filter, text_match);
    query
}

/// The conversations matching `filter` with their counts, newest first: `page.limit` of them
/// (clamped to `1..=MAX_LIMIT`) after skipping `page.offset`. Columns: those of `conversations`,
/// then `message_count` and `invalid_count`.
pub(super) fn page_query(
    placeholders: Placeholders,
    filter: &ConversationFilter,
    text_match: TextMatch,
    page: PageRequest,
) -> Query {
    // An offset beyond `i64::MAX` skips everything either way.
    let offset = i64::try_from(page.offset).unwrap_or(i64::MAX);
    let limit = i64::try_from(clamp_limit(page.limit)).unwrap_or(i64::MAX);
    // The page is chosen first, so that messages are counted for its rows only.
    let mut query = Query::new(
        placeholders,
        "SELECT c.id, c.user_id, c.contract, c.context, c.state, c.status, c.created_at, \
         c.updated_at, \
         (SELECT COUNT(*) FROM messages m WHERE m.conversation_id = c.id) AS message_count, \
         (SELECT COUNT(*) FROM messages m WHERE m.conversation_id = c.id AND ",
    );
    query.push(INVALID);
    query.push(
        ") AS invalid_count \
         FROM (SELECT c.id, c.user_id, c.contract, c.context, c.state, c.status, c.created_at, \
         c.updated_at FROM conversations c",
    );
    push_where(&mut query, filter, text_match);
    query.push(ORDER);
    query.push(" LIMIT ");
    query.push_bind(limit);
    query.push(" OFFSET ");
    query.push_bind(offset);
    query.push(") c");
    query.push(ORDER);
    query
}

/// Newest first; the id (a UUIDv7) breaks ties between conversations created in the same ms.
const ORDER: &str = " ORDER BY c.created_at DESC, c.id DESC";

/// An invalid attempt of message `m` (valid SQL in both backends: SQLite reads the 0/1 integer as
/// a truth value).
const INVALID: &str = "m.role = 'assistant' AND NOT m.is_validated";

/// Appends ` WHERE …` (nothing when `filter` is empty), every condition ANDed.
fn push_where(query: &mut Query, filter: &ConversationFilter, text_match: TextMatch) {
    let mut keyword = " WHERE ";
    let mut and = |query: &mut Query| {
        query.push(keyword);
        keyword = " AND ";
    };
    if let Some(user_id) = &filter.user_id {
        and(query);
        query.push("c.user_id = ").push_bind(user_id.clone());
    }
    if let Some(contract) = &filter.contract {
        and(query);
        query.push("c.contract = ").push_bind(contract.clone());
    }
    if let Some(from) = filter.created_from {
        and(query);
        query.push("c.created_at >= ").push_bind(from);
    }
    if let Some(to) = filter.created_to {
        and(query);
        query.push("c.created_at < ").push_bind(to);
    }
    if let Some(text) = &filter.text {
        and(query);
        query
            .push("EXISTS (SELECT 1 FROM messages m WHERE m.conversation_id = c.id AND ")
            .push(text_match.before)
            .push_bind(contains_pattern(text))
            .push(text_match.after)
            .push(")");
    }
    if let Some(request_id) = &filter.request_id {
        and(query);
        query
            .push("EXISTS (SELECT 1 FROM messages m WHERE m.conversation_id = c.id AND m.request_id = ")
            .push_bind(request_id.clone())
            .push(")");
    }
    if let Some(has_invalid) = filter.has_invalid {
        and(query);
        query
            .push(if has_invalid { "EXISTS" } else { "NOT EXISTS" })
            .push(" (SELECT 1 FROM messages m WHERE m.conversation_id = c.id AND ")
            .push(INVALID)
            .push(")");
    }
    if let Some(blocked) = filter.blocked {
        let status = if blocked {
            super::ConversationStatus::Blocked
        } else {
            super::ConversationStatus::Active
        };
        and(query);
        query
            .push("c.status = ")
            .push_bind(status.as_str().to_owned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MATCH: TextMatch = TextMatch {
        before: "m.content LIKE ",
        after: " ESCAPE '\\'",
    };

    #[test]
    fn limit_is_clamped() {
        for (asked, got) in [
            (0, 1),
            (1, 1),
            (50, 50),
            (500, 500),
            (501, 500),
            (u64::MAX, 500),
        ] {
            assert_eq!(clamp_limit(asked), got, "{asked}");
        }
    }

    #[test]
    fn patterns_escape_wildcards_and_the_escape_character() {
        for (text, pattern) in [
            ("", "%%"),
            ("abc", "%abc%"),
            ("100%", "%100\\%%"),
            ("a_b", "%a\\_b%"),
            ("C:\\dir", "%C:\\\\dir%"),
            ("é%_\\", "%é\\%\\_\\\\%"),
        ] {
            assert_eq!(contains_pattern(text), pattern, "{text}");
        }
    }

    #[test]
    fn an_empty_filter_has_no_where_clause() {
        let query = count_query(
            Placeholders::Question,
            &ConversationFilter::default(),
            MATCH,
        );
        assert_eq!(query.sql(), "SELECT COUNT(*) FROM conversations c");
    }

    #[test]
    fn every_filter_value_is_a_bound_parameter() {
        let filter = ConversationFilter {
            user_id: Some("u'; DROP TABLE conversations; --".into()),
            contract: Some("tutor".into()),
            created_from: Some(10),
            created_to: Some(20),
            text: Some("needle".into()),
            has_invalid: Some(false),
            blocked: Some(true),
            request_id: Some("r' OR 1=1 --".into()),
        };
        let query = page_query(
            Placeholders::Numbered,
            &filter,
            MATCH,
            PageRequest {
                offset: 40,
                limit: 20,
            },
        );
        let sql = query.sql();
        assert!(
            !sql.contains("DROP")
                && !sql.contains("tutor")
                && !sql.contains("needle")
                && !sql.contains("OR 1=1"),
            "{sql}"
        );
        assert!(!sql.contains("blocked"), "{sql}");
        let where_clause = " WHERE c.user_id = $1 AND c.contract = $2 \
             AND c.created_at >= $3 AND c.created_at < $4 \
             AND EXISTS (SELECT 1 FROM messages m WHERE m.conversation_id = c.id \
             AND m.content LIKE $5 ESCAPE '\\') \
             AND EXISTS (SELECT 1 FROM messages m WHERE m.conversation_id = c.id \
             AND m.request_id = $6) \
             AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.conversation_id = c.id \
             AND m.role = 'assistant' AND NOT m.is_validated) \
             AND c.status = $7 \
             ORDER BY c.created_at DESC, c.id DESC LIMIT $8 OFFSET $9) c \
             ORDER BY c.created_at DESC, c.id DESC";
        assert!(sql.ends_with(where_clause), "{sql}");
    }
}
