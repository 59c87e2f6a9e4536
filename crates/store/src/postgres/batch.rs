//! One group commit of the PostgreSQL store: the messages of many turns (with the conversations
//! some of them start and the prompts they name) written by **one statement**, hence one round
//! trip and one commit. Each column travels as one array parameter and `UNNEST` turns the arrays
//! back into rows, so the statement's text — and the prepared statement sqlx keeps for it per
//! connection — is the same whatever the batch's size.
//!
//! Ids: a message written with its id already (`store_commit = "after_reply"`, taken from the
//! sequence before the answer) keeps it; the others get theirs from the sequence in the batch's
//! order, in a materialised step the statement both inserts from and returns, so each job gets
//! its own id back — by its position, never by matching values.
//!
//! The conversations of the batch's messages have `updated_at` bumped in the same statement. Rows
//! are locked in id order first, so that two gateways' batches touching the same conversations
//! never deadlock; a conversation the batch itself starts is written with its messages' latest
//! time instead (a statement does not see the rows it inserts).

use super::fault;
use crate::StoreError;
use crate::write_rows::{ConversationRow, MessageRow};
use sqlx::PgPool;

/// The statement. `$1`–`$2` prompts, `$3`–`$10` conversations, `$11`–`$40` messages.
const WRITE: &str = "\
WITH p AS (\
 INSERT INTO prompts (hash, text) \
 SELECT * FROM UNNEST($1::text[], $2::text[]) ON CONFLICT DO NOTHING), \
c AS (\
 INSERT INTO conversations (id, user_id, contract, context, state, status, created_at, updated_at) \
 SELECT u.id, u.user_id, u.contract, u.context::jsonb, u.state::jsonb, u.status, u.created_at, \
 u.updated_at \
 FROM UNNEST($3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], \
 $9::bigint[], $10::bigint[]) \
 AS u (id, user_id, contract, context, state, status, created_at, updated_at)), \
u AS MATERIALIZED (\
 SELECT t.*, COALESCE(t.given_id, nextval(pg_get_serial_sequence('messages', 'id'))) AS new_id \
 FROM UNNEST($11::bigint[], $12::text[], $13::text[], $14::text[], $15::text[], $16::text[], \
 $17::bool[], $18::bool[], $19::int[], $20::text[], $21::text[], $22::text[], $23::text[], \
 $24::text[], $25::text[], $26::text[], $27::text[], $28::bigint[], $29::bigint[], \
 $30::bigint[], $31::text[], $32::text[], $33::text[], $34::bigint[], $35::text[], \
 $36::text[], $37::text[], $38::text[], $39::text[], $40::text[]) WITH ORDINALITY \
 AS t (given_id, conversation_id, turn_id, role, content, value, is_validated, is_fallback, \
 attempt, contract, contract_version, request_payload, raw_response, violations, repairs, \
 provider, model, tokens_in, tokens_out, latency_ms, error, interrupted, route, created_at, \
 context, answer, prompt_hash, prompt_pointer, request_id, trace_id, ord)), \
m AS (\
 INSERT INTO messages (id, conversation_id, turn_id, role, content, value, is_validated, \
 is_fallback, attempt, contract, contract_version, request_payload, raw_response, violations, \
 repairs, provider, model, tokens_in, tokens_out, latency_ms, error, interrupted, route, \
 created_at, context, answer, prompt_hash, prompt_pointer, request_id, trace_id) \
 OVERRIDING SYSTEM VALUE \
 SELECT new_id, conversation_id, turn_id, role, content, value::jsonb, is_validated, \
 is_fallback, attempt, contract, contract_version, request_payload::jsonb, raw_response::jsonb, \
 violations::jsonb, repairs::jsonb, provider, model, tokens_in, tokens_out, latency_ms, error, \
 interrupted, route, created_at, context::jsonb, answer::jsonb, prompt_hash, prompt_pointer, \
 request_id, trace_id FROM u ORDER BY ord), \
latest AS (\
 SELECT conversation_id, max(created_at) AS at FROM u GROUP BY conversation_id), \
locked AS (\
 SELECT c.id FROM conversations c JOIN latest ON latest.conversation_id = c.id \
 ORDER BY c.id FOR NO KEY UPDATE OF c), \
b AS (\
 UPDATE conversations c SET updated_at = GREATEST(c.updated_at, latest.at) \
 FROM latest, locked WHERE c.id = latest.conversation_id AND locked.id = c.id) \
SELECT new_id FROM u ORDER BY ord";

/// What one job of a batch writes: messages of one conversation (a turn's opening and first
/// attempt, or one message), and the conversation they start (if they do).
pub(super) struct Write {
    /// The conversation the messages start, written before them.
    pub conversation: Option<ConversationRow>,
    /// The messages, all of one conversation, in the order of their ids.
    pub messages: Vec<MessageRow>,
}

/// The columns of a batch, one array each.
#[derive(Default)]
struct Columns {
    prompt_hash: Vec<String>,
    prompt_text: Vec<String>,
    c_id: Vec<String>,
    c_user: Vec<String>,
    c_contract: Vec<String>,
    c_context: Vec<String>,
    c_state: Vec<String>,
    c_status: Vec<&'static str>,
    c_created: Vec<i64>,
    c_updated: Vec<i64>,
    m: MessageColumns,
}

/// The message columns of a batch.
#[derive(Default)]
struct MessageColumns {
    id: Vec<Option<i64>>,
    conversation_id: Vec<String>,
    turn_id: Vec<String>,
    role: Vec<&'static str>,
    content: Vec<String>,
    value: Vec<Option<String>>,
    is_validated: Vec<bool>,
    is_fallback: Vec<bool>,
    attempt: Vec<Option<i32>>,
    contract: Vec<String>,
    contract_version: Vec<String>,
    request_payload: Vec<Option<String>>,
    raw_response: Vec<Option<String>>,
    violations: Vec<String>,
    repairs: Vec<String>,
    provider: Vec<Option<String>>,
    model: Vec<Option<String>>,
    tokens_in: Vec<Option<i64>>,
    tokens_out: Vec<Option<i64>>,
    latency_ms: Vec<Option<i64>>,
    error: Vec<Option<String>>,
    interrupted: Vec<Option<&'static str>>,
    route: Vec<Option<&'static str>>,
    created_at: Vec<i64>,
    context: Vec<Option<String>>,
    answer: Vec<Option<String>>,
    prompt_hash: Vec<Option<String>>,
    prompt_pointer: Vec<Option<String>>,
    request_id: Vec<Option<String>>,
    trace_id: Vec<Option<String>>,
}

impl MessageColumns {
    fn push(&mut self, row: &MessageRow) {
        let e = &row.encoded;
        self.id.push(row.id);
        self.conversation_id.push(row.conversation_id.clone());
        self.turn_id.push(row.turn_id.clone());
        self.role.push(row.role);
        self.content.push(row.content.clone());
        self.value.push(e.value.clone());
        self.is_validated.push(row.is_validated);
        self.is_fallback.push(row.is_fallback);
        self.attempt.push(e.attempt);
        self.contract.push(row.contract.clone());
        self.contract_version.push(row.contract_version.clone());
        self.request_payload.push(e.request_payload.clone());
        self.raw_response.push(e.raw_response.clone());
        self.violations.push(e.violations.clone());
        self.repairs.push(e.repairs.clone());
        self.provider.push(row.provider.clone());
        self.model.push(row.model.clone());
        self.tokens_in.push(e.tokens_in);
        self.tokens_out.push(e.tokens_out);
        self.latency_ms.push(e.latency_ms);
        self.error.push(row.error.clone());
        self.interrupted.push(row.interrupted);
        self.route.push(row.route);
        self.created_at.push(row.created_at);
        self.context.push(e.context.clone());
        self.answer.push(e.answer.clone());
        self.prompt_hash
            .push(row.prompt.as_ref().map(|p| p.hash.clone()));
        self.prompt_pointer
            .push(row.prompt.as_ref().map(|p| p.pointer.clone()));
        self.request_id.push(row.request_id.clone());
        self.trace_id.push(row.trace_id.clone());
    }
}

impl Columns {
    fn of<'a>(writes: impl Iterator<Item = &'a Write> + Clone) -> Self {
        let mut columns = Self::default();
        for write in writes.clone() {
            for prompt in write.messages.iter().filter_map(|m| m.prompt.as_ref()) {
                if !columns.prompt_hash.contains(&prompt.hash) {
                    columns.prompt_hash.push(prompt.hash.clone());
                    columns.prompt_text.push(prompt.text.clone());
                }
            }
            if let Some(started) = &write.conversation {
                let c = &started.conversation;
                // The statement does not bump what it inserts: start at the latest message.
                let latest = writes
                    .clone()
                    .flat_map(|w| &w.messages)
                    .filter(|m| m.conversation_id == c.id)
                    .map(|m| m.created_at)
                    .fold(c.updated_at, i64::max);
                columns.c_id.push(c.id.clone());
                columns.c_user.push(c.user_id.clone());
                columns.c_contract.push(c.contract.clone());
                columns.c_context.push(started.context.clone());
                columns.c_state.push(started.state.clone());
                columns.c_status.push(c.status.as_str());
                columns.c_created.push(c.created_at);
                columns.c_updated.push(latest);
            }
            for message in &write.messages {
                columns.m.push(message);
            }
        }
        columns
    }
}

/// Writes `writes` in one statement (one transaction); the messages' ids, in order.
pub(super) async fn write<'a>(
    pool: &PgPool,
    writes: impl Iterator<Item = &'a Write> + Clone,
) -> Result<Vec<i64>, StoreError> {
    let c = Columns::of(writes);
    let m = c.m;
    sqlx::query_scalar::<_, i64>(WRITE)
        .bind(c.prompt_hash)
        .bind(c.prompt_text)
        .bind(c.c_id)
        .bind(c.c_user)
        .bind(c.c_contract)
        .bind(c.c_context)
        .bind(c.c_state)
        .bind(c.c_status)
        .bind(c.c_created)
        .bind(c.c_updated)
        .bind(m.id)
        .bind(m.conversation_id)
        .bind(m.turn_id)
        .bind(m.role)
        .bind(m.content)
        .bind(m.value)
        .bind(m.is_validated)
        .bind(m.is_fallback)
        .bind(m.attempt)
        .bind(m.contract)
        .bind(m.contract_version)
        .bind(m.request_payload)
        .bind(m.raw_response)
        .bind(m.violations)
        .bind(m.repairs)
        .bind(m.provider)
        .bind(m.model)
        .bind(m.tokens_in)
        .bind(m.tokens_out)
        .bind(m.latency_ms)
        .bind(m.error)
        .bind(m.interrupted)
        .bind(m.route)
        .bind(m.created_at)
        .bind(m.context)
        .bind(m.answer)
        .bind(m.prompt_hash)
        .bind(m.prompt_pointer)
        .bind(m.request_id)
        .bind(m.trace_id)
        .fetch_all(pool)
        .await
        .map_err(fault)
}

impl Write {
    /// One message, and the conversation it starts (if it does).
    pub fn one(conversation: Option<ConversationRow>, message: MessageRow) -> Self {
        Self {
            conversation,
            messages: vec![message],
        }
    }

    /// The conversation of the messages.
    pub fn conversation_id(&self) -> &str {
        self.messages
            .first()
            .map_or("", |message| message.conversation_id.as_str())
    }

    /// Whether PostgreSQL refuses this write whatever happens: a text holding NUL, or JSON
    /// holding the escape `\u0000` (which JSONB does not take).
    pub fn refused(&self) -> bool {
        self.messages.iter().any(refused)
            || self.conversation.as_ref().is_some_and(|started| {
                let c = &started.conversation;
                [&c.id, &c.user_id, &c.contract]
                    .iter()
                    .any(|t| t.contains('\0'))
                    || [&started.context, &started.state]
                        .iter()
                        .any(|j| j.contains("\\u0000"))
            })
    }
}

/// Whether PostgreSQL refuses the message `row` whatever happens.
pub(super) fn refused(row: &MessageRow) -> bool {
    let e = &row.encoded;
    let texts = [
        Some(&row.content),
        Some(&row.turn_id),
        Some(&row.contract),
        Some(&row.contract_version),
        row.provider.as_ref(),
        row.model.as_ref(),
        row.error.as_ref(),
        row.request_id.as_ref(),
        row.trace_id.as_ref(),
    ];
    let json = [
        e.value.as_ref(),
        e.context.as_ref(),
        e.answer.as_ref(),
        e.request_payload.as_ref(),
        e.raw_response.as_ref(),
        Some(&e.violations),
        Some(&e.repairs),
    ];
    texts.iter().flatten().any(|t| t.contains('\0'))
        || json.iter().flatten().any(|j| j.contains("\\u0000"))
        || row.prompt.as_ref().is_some_and(|p| p.text.contains('\0'))
}

/// Whether `error` is a lost race against a sweeper: the prompt a message names was deleted
/// between the statement's `ON CONFLICT DO NOTHING` and its foreign-key check. Written again,
/// the prompt is inserted anew.
pub(super) fn lost_prompt(error: &StoreError) -> bool {
    constraint_of(error) == Some("messages_prompt_hash_fkey")
}

/// Whether `error` is one PostgreSQL asks to retry: a deadlock or a serialisation failure.
pub(super) fn retryable(error: &StoreError) -> bool {
    sqlstate_of(error).is_some_and(|code| code == "40P01" || code == "40001")
}

fn database_error(error: &StoreError) -> Option<&(dyn sqlx::error::DatabaseError + 'static)> {
    let source = match error {
        StoreError::Database { source }
        | StoreError::ForeignKey { source }
        | StoreError::Unavailable { source } => source,
        _ => return None,
    };
    source
        .downcast_ref::<sqlx::Error>()
        .and_then(sqlx::Error::as_database_error)
}

fn constraint_of(error: &StoreError) -> Option<&str> {
    database_error(error).and_then(|e| e.constraint())
}

fn sqlstate_of(error: &StoreError) -> Option<std::borrow::Cow<'_, str>> {
    database_error(error).and_then(|e| e.code())
}
