//! Rows to records and back, shared by both backends. [`StoreRow`] is the handful of typed column
//! getters a backend provides; [`conversation`], [`summary`], [`message`] and [`safety_event`]
//! build records from any such row, and [`EncodedMessage`] turns a [`NewMessage`] into the values
//! both backends bind. A column that cannot be read back (JSON that does not parse or does not
//! have the expected shape, an unknown status, a negative count) is a [`StoreError::Corrupt`]
//! naming the table, the column and the row, never a panic.

use super::{
    Conversation, ConversationStatus, ConversationSummary, Interruption, Message, MessageRole,
    NewConversation, NewMessage, NewSafetyEvent, Route, SafetyEvent, StoreError, now_ms,
};
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::fmt;

/// The typed column getters of one backend's rows (a sqlx `PgRow`, a rusqlite `Row`); a value
/// the driver cannot read as the type asked for is the driver's error, wrapped. JSON columns
/// come back as a [`Value`]; a backend that stores JSON as text reports text that does not parse
/// as [`StoreError::Corrupt`].
pub(super) trait StoreRow {
    /// A non-null text column.
    fn text(&self, column: &str) -> Result<String, StoreError>;
    /// A nullable text column.
    fn opt_text(&self, column: &str) -> Result<Option<String>, StoreError>;
    /// A non-null 64-bit integer column.
    fn int(&self, column: &str) -> Result<i64, StoreError>;
    /// A nullable 64-bit integer column.
    fn opt_int(&self, column: &str) -> Result<Option<i64>, StoreError>;
    /// A nullable 32-bit integer column.
    fn opt_int32(&self, column: &str) -> Result<Option<i32>, StoreError>;
    /// A non-null boolean column.
    fn flag(&self, column: &str) -> Result<bool, StoreError>;
    /// A nullable JSON column.
    fn opt_json(&self, field: Field<'_>) -> Result<Option<Value>, StoreError>;
}

/// Where a value was read from, for [`StoreError::Corrupt`] messages.
#[derive(Debug, Clone, Copy)]
pub(super) struct Field<'a> {
    /// Table name.
    pub table: &'static str,
    /// Column name.
    pub column: &'static str,
    /// The row's id.
    pub row: &'a str,
}

impl Field<'_> {
    /// The error for a value of this field that cannot be read back.
    pub fn corrupt(self, detail: impl fmt::Display) -> StoreError {
        StoreError::Corrupt(format!(
            "{}.{} of row {:?}: {detail}",
            self.table, self.column, self.row
        ))
    }
}

/// Reads a non-null JSON column.
fn json<R: StoreRow>(row: &R, field: Field<'_>) -> Result<Value, StoreError> {
    row.opt_json(field)?
        .ok_or_else(|| field.corrupt("NULL where a JSON value is required"))
}

/// Reads a non-null JSON column into a typed value.
fn typed_json<R: StoreRow, T: DeserializeOwned>(
    row: &R,
    field: Field<'_>,
) -> Result<T, StoreError> {
    serde_json::from_value(json(row, field)?).map_err(|error| field.corrupt(error))
}

/// Reads a nullable non-negative integer column as a `u64`.
fn opt_count<R: StoreRow>(row: &R, field: Field<'_>) -> Result<Option<u64>, StoreError> {
    row.opt_int(field.column)?
        .map(|n| u64::try_from(n).map_err(|_| field.corrupt(format_args!("negative value {n}"))))
        .transpose()
}

/// Reads a non-null non-negative integer column as a `u64`.
fn count<R: StoreRow>(row: &R, field: Field<'_>) -> Result<u64, StoreError> {
    let n = row.int(field.column)?;
    u64::try_from(n).map_err(|_| field.corrupt(format_args!("negative value {n}")))
}

/// The conversation `new` creates: a fresh UUIDv7, active, state `{}`, created and updated now.
pub(super) fn fresh_conversation(new: &NewConversation) -> Conversation {
    let now = now_ms();
    Conversation {
        id: uuid::Uuid::now_v7().to_string(),
        user_id: new.user_id.clone(),
        contract: new.contract.clone(),
        context: new.context.clone(),
        state: Value::Object(serde_json::Map::new()),
        status: ConversationStatus::Active,
        created_at: now,
        updated_at: now,
    }
}

/// A conversation from the columns `id, user_id, contract, context, state, status, created_at,
/// updated_at`.
pub(super) fn conversation<R: StoreRow>(row: &R) -> Result<Conversation, StoreError> {
    let id = row.text("id")?;
    let field = |column| Field {
        table: "conversations",
        column,
        row: &id,
    };
    let status = match row.text("status")?.as_str() {
        "active" => ConversationStatus::Active,
        "blocked" => ConversationStatus::Blocked,
        other => return Err(field("status").corrupt(format_args!("unknown status {other:?}"))),
    };
    let context = json(row, field("context"))?;
    let state = json(row, field("state"))?;
    Ok(Conversation {
        user_id: row.text("user_id")?,
        contract: row.text("contract")?,
        context,
        state,
        status,
        created_at: row.int("created_at")?,
        updated_at: row.int("updated_at")?,
        id,
    })
}

/// A listed conversation: the columns [`conversation`] reads plus `message_count` and
/// `invalid_count`.
pub(super) fn summary<R: StoreRow>(row: &R) -> Result<ConversationSummary, StoreError> {
    let conversation = conversation(row)?;
    let field = |column| Field {
        table: "conversations",
        column,
        row: &conversation.id,
    };
    Ok(ConversationSummary {
        message_count: count(row, field("message_count"))?,
        invalid_count: count(row, field("invalid_count"))?,
        conversation,
    })
}

/// `SELECT` of the columns [`message`] reads, in its order, from `messages`, followed by
/// `$tail` (a literal: the statement stays static SQL). Two other forms:
/// - `prompts $tail`: also the columns [`crate::sqlite::prompts::restore`] reads — the message's
///   `prompt_pointer` and, joined from `prompts`, its `prompt_text` (SQLite);
/// - `without_payloads $null, $tail`: `request_payload` and `raw_response` read as `$null` (the
///   backend's typed NULL for a JSON column), for readers that never show them — users' history,
///   the model's history — so the largest columns are neither read nor parsed.
macro_rules! select_messages {
    (@columns $payloads:expr) => {
        concat!(
            "SELECT id, conversation_id, turn_id, role, content, value, is_validated, ",
            "is_fallback, attempt, contract, contract_version, ",
            $payloads,
            ", violations, repairs, provider, model, tokens_in, tokens_out, latency_ms, error, ",
            "interrupted, route, context, answer, created_at, payload_purged_at, request_id, ",
            "trace_id"
        )
    };
    (prompts $tail:literal) => {
        concat!(
            $crate::rows::select_messages!(@columns "request_payload, raw_response"),
            ", prompt_pointer, prompts.text AS prompt_text FROM messages ",
            "LEFT JOIN prompts ON prompts.hash = messages.prompt_hash ",
            $tail
        )
    };
    (without_payloads $null:literal, $tail:literal) => {
        concat!(
            $crate::rows::select_messages!(@columns concat!(
                $null, " AS request_payload, ", $null, " AS raw_response"
            )),
            " FROM messages ",
            $tail
        )
    };
    ($tail:literal) => {
        concat!(
            $crate::rows::select_messages!(@columns "request_payload, raw_response"),
            " FROM messages ",
            $tail
        )
    };
}
pub(super) use select_messages;

/// A message from every column of `messages`.
pub(super) fn message<R: StoreRow>(row: &R) -> Result<Message, StoreError> {
    let id = row.int("id")?;
    let key = id.to_string();
    let field = |column| Field {
        table: "messages",
        column,
        row: &key,
    };
    let role = match row.text("role")?.as_str() {
        "user" => MessageRole::User,
        "assistant" => MessageRole::Assistant,
        other => return Err(field("role").corrupt(format_args!("unknown role {other:?}"))),
    };
    let attempt = row
        .opt_int32("attempt")?
        .map(|n| {
            u32::try_from(n)
                .map_err(|_| field("attempt").corrupt(format_args!("negative value {n}")))
        })
        .transpose()?;
    let data = NewMessage {
        conversation_id: row.text("conversation_id")?,
        turn_id: row.text("turn_id")?,
        role,
        content: row.text("content")?,
        value: row.opt_json(field("value"))?,
        is_validated: row.flag("is_validated")?,
        is_fallback: row.flag("is_fallback")?,
        attempt,
        contract: row.text("contract")?,
        contract_version: row.text("contract_version")?,
        request_payload: row.opt_json(field("request_payload"))?,
        raw_response: row.opt_json(field("raw_response"))?,
        violations: typed_json(row, field("violations"))?,
        repairs: typed_json(row, field("repairs"))?,
        provider: row.opt_text("provider")?,
        model: row.opt_text("model")?,
        tokens_in: opt_count(row, field("tokens_in"))?,
        tokens_out: opt_count(row, field("tokens_out"))?,
        latency_ms: opt_count(row, field("latency_ms"))?,
        error: row.opt_text("error")?,
        interrupted: row
            .opt_text("interrupted")?
            .map(|text| {
                Interruption::parse(&text).ok_or_else(|| {
                    field("interrupted").corrupt(format_args!("unknown value {text:?}"))
                })
            })
            .transpose()?,
        route: row
            .opt_text("route")?
            .map(|text| {
                Route::parse(&text)
                    .ok_or_else(|| field("route").corrupt(format_args!("unknown value {text:?}")))
            })
            .transpose()?,
        context: row.opt_json(field("context"))?,
        answer: row.opt_json(field("answer"))?,
        request_id: row.opt_text("request_id")?,
        trace_id: row.opt_text("trace_id")?,
    };
    Ok(Message {
        id,
        data,
        created_at: row.int("created_at")?,
        payload_purged_at: row.opt_int("payload_purged_at")?,
    })
}

/// A safety event from every column of `safety_events`.
pub(super) fn safety_event<R: StoreRow>(row: &R) -> Result<SafetyEvent, StoreError> {
    let id = row.int("id")?;
    let key = id.to_string();
    let field = |column| Field {
        table: "safety_events",
        column,
        row: &key,
    };
    let data = NewSafetyEvent {
        conversation_id: row.text("conversation_id")?,
        message_id: row.opt_int("message_id")?,
        level: row.text("level")?,
        concerns: json(row, field("concerns"))?,
        action: row.text("action")?,
        notified_at: row.opt_int("notified_at")?,
    };
    Ok(SafetyEvent {
        id,
        data,
        created_at: row.int("created_at")?,
    })
}

/// The values of a [`NewMessage`] that both backends bind in another form: JSON serialised to
/// text, numbers in the database's signed types. Text and boolean columns are bound as they are.
#[derive(Debug)]
pub(super) struct EncodedMessage {
    /// `value` as JSON text.
    pub value: Option<String>,
    /// `context` as JSON text.
    pub context: Option<String>,
    /// `answer` as JSON text.
    pub answer: Option<String>,
    /// `request_payload` as JSON text.
    pub request_payload: Option<String>,
    /// `raw_response` as JSON text.
    pub raw_response: Option<String>,
    /// `violations` as a JSON array.
    pub violations: String,
    /// `repairs` as a JSON array.
    pub repairs: String,
    /// `attempt`.
    pub attempt: Option<i32>,
    /// `tokens_in`.
    pub tokens_in: Option<i64>,
    /// `tokens_out`.
    pub tokens_out: Option<i64>,
    /// `latency_ms`.
    pub latency_ms: Option<i64>,
}

impl EncodedMessage {
    /// Encodes `message`, with `request_payload` already encoded (with its prompt apart,
    /// [`crate::prompts`]); a number too large for its column or a value that cannot be
    /// serialised is an encode error (nothing is written).
    pub fn with_payload(
        message: &NewMessage,
        request_payload: Option<String>,
    ) -> Result<Self, StoreError> {
        Ok(Self {
            value: message.value.as_ref().map(to_json).transpose()?,
            context: message.context.as_ref().map(to_json).transpose()?,
            answer: message.answer.as_ref().map(to_json).transpose()?,
            request_payload,
            raw_response: message.raw_response.as_ref().map(to_json).transpose()?,
            violations: to_json(&message.violations)?,
            repairs: to_json(&message.repairs)?,
            attempt: message
                .attempt
                .map(|n| i32::try_from(n).map_err(|_| out_of_range("attempt", n)))
                .transpose()?,
            tokens_in: signed("tokens_in", message.tokens_in)?,
            tokens_out: signed("tokens_out", message.tokens_out)?,
            latency_ms: signed("latency_ms", message.latency_ms)?,
        })
    }
}

/// Serialises a value for a JSON column.
pub(super) fn to_json<T: serde::Serialize + ?Sized>(value: &T) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|error| StoreError::Encode(error.to_string()))
}

/// A `u64` as the `BIGINT` that stores it.
fn signed(column: &str, value: Option<u64>) -> Result<Option<i64>, StoreError> {
    value
        .map(|n| i64::try_from(n).map_err(|_| out_of_range(column, n)))
        .transpose()
}

/// The error for a number its column cannot hold.
fn out_of_range(column: &str, value: impl fmt::Display) -> StoreError {
    StoreError::Encode(format!("{column} = {value} does not fit its column"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn new_message() -> NewMessage {
        NewMessage {
            conversation_id: "c".into(),
            turn_id: "t".into(),
            role: MessageRole::Assistant,
            content: "{}".into(),
            value: Some(serde_json::json!({"a": [1, 2]})),
            is_validated: true,
            is_fallback: false,
            attempt: Some(1),
            contract: "k".into(),
            contract_version: "1".into(),
            request_payload: None,
            raw_response: None,
            violations: Vec::new(),
            repairs: Vec::new(),
            provider: None,
            model: None,
            tokens_in: Some(10),
            tokens_out: None,
            latency_ms: Some(0),
            error: None,
            interrupted: None,
            route: None,
            context: None,
            answer: None,
            request_id: None,
            trace_id: None,
        }
    }

    #[test]
    fn encodes_json_and_numbers() {
        let message = new_message();
        let encoded = EncodedMessage::with_payload(&message, None).unwrap();
        assert_eq!(encoded.value.as_deref(), Some(r#"{"a":[1,2]}"#));
        assert_eq!(encoded.request_payload, None);
        assert_eq!(encoded.violations, "[]");
        assert_eq!(encoded.repairs, "[]");
        assert_eq!(encoded.attempt, Some(1));
        assert_eq!(
            (encoded.tokens_in, encoded.tokens_out, encoded.latency_ms),
            (Some(10), None, Some(0))
        );
    }

    #[test]
    fn numbers_too_large_for_their_column_are_encode_errors() {
        type Break = fn(&mut NewMessage);
        let cases: [(&str, Break); 3] = [
            ("tokens_in", |m| m.tokens_in = Some(u64::MAX)),
            ("latency_ms", |m| m.latency_ms = Some(i64::MAX as u64 + 1)),
            ("attempt", |m| m.attempt = Some(u32::MAX)),
        ];
        for (column, break_it) in cases {
            let mut message = new_message();
            break_it(&mut message);
            let error = EncodedMessage::with_payload(&message, None).unwrap_err();
            assert!(
                matches!(&error, StoreError::Encode(_)) && error.to_string().contains(column),
                "{column}: {error}"
            );
        }
    }

    #[test]
    fn corrupt_names_table_column_and_row() {
        let field = Field {
            table: "messages",
            column: "violations",
            row: "42",
        };
        let error = field.corrupt("expected a sequence");
        assert_eq!(
            error.to_string(),
            r#"stored data could not be read: messages.violations of row "42": expected a sequence"#
        );
    }
}
