//! [`Store`]: conversations, messages (every attempt, valid or not, stored the moment it ends)
//! and safety events, behind one trait with two backends — SQLite (embedded default, one file
//! under the data dir, WAL) and PostgreSQL (many gateway instances) — each with its own
//! migrations. Users read validated messages only; admins read everything.
//!
//! [`Reads::stats`] aggregates what the admin console charts (see [`Stats`]).
//!
//! Times are Unix milliseconds (`i64`) in both backends, so filters and ordering mean the same
//! everywhere. Ids of conversations are UUIDv7 strings (time-ordered); message ids are integers
//! in insertion order, assigned by the database (or, with [`Commit::AfterReply`], by the SQLite
//! store before the insert).

mod listing;
mod migrations;
mod pending;
mod postgres;
pub mod private_files;
mod prompts;
pub mod retention;
mod rows;
mod sql;
mod sqlite;
mod stats;
mod write_rows;

pub use pending::Pending;
pub use postgres::{DEFAULT_POSTGRES_CONNECTIONS, PostgresStore};
pub use sqlite::SqliteStore;
pub use stats::{
    AttemptsCount, Compliance, ComplianceBucket, MAX_BUCKETS, MIN_BUCKET_MS, ModelCount,
    RepairCount, RuleCount, Stats, StatsQuery, StreamingStats, TOP_RULES, TokenUsage, TurnOutcomes,
};

use async_trait::async_trait;
use bridle_core::{Repair, Violation};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;

/// When a turn's messages are committed relative to its answer (`store_commit`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Commit {
    /// An answer means its attempts are in the database (the default).
    #[default]
    BeforeReply,
    /// The answer goes out once its messages are queued for the writer, which commits them
    /// within milliseconds; this instance's reads wait for the writes queued before them. A
    /// crash loses the last milliseconds' turns although they were answered. Keeps the commit
    /// (SQLite: and the log's periodic restart, two `fsync`s on a disk; PostgreSQL: its round
    /// trip and `fsync`) out of the answer's latency. On PostgreSQL each message still takes
    /// its id from the database's sequence (one round trip, no commit) before the answer.
    AfterReply,
}

impl Commit {
    /// The setting's value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::BeforeReply => "before_reply",
            Self::AfterReply => "after_reply",
        }
    }
}

/// A driver's error, kept as the source of a [`StoreError`] (its text is for the log: the
/// server never shows it to a client).
pub type Source = Box<dyn std::error::Error + Send + Sync>;

/// A failed store operation. Every write error is returned, never ignored. A database driver's
/// own error is never part of the shape: it is the `source` of [`StoreError::Unavailable`],
/// [`StoreError::ForeignKey`] or [`StoreError::Database`], chosen where the store wraps it.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database is out of reach or cannot take writes for now: it is down or restarting,
    /// the pool has no connection, the disk is full or read-only, the file is locked.
    #[error("database error: {source}")]
    Unavailable {
        /// The driver's error.
        source: Source,
    },
    /// The database refused a write whose foreign key did not match (a message for a
    /// conversation that does not exist, a safety event naming another conversation's message).
    #[error("database error: {source}")]
    ForeignKey {
        /// The driver's error.
        source: Source,
    },
    /// The database refused or failed the operation otherwise.
    #[error("database error: {source}")]
    Database {
        /// The driver's error.
        source: Source,
    },
    /// A value could not be put in the form its column stores (a number too large for it, a
    /// value that cannot be serialised); nothing was written.
    #[error("database error: a value could not be encoded: {0}")]
    Encode(String),
    /// The store was closed while the operation waited.
    #[error("the store is closed")]
    Closed,
    /// Migrations could not be applied.
    #[error("database migration failed: {source}")]
    Migration {
        /// Why.
        source: Source,
    },
    /// A stored JSON column could not be read back.
    #[error("stored data could not be read: {0}")]
    Corrupt(String),
    /// The store URL or path is unusable.
    #[error("store configuration: {0}")]
    Config(String),
    /// The disk holding the database is (nearly) full: a write that needs new space fails,
    /// though small ones may still fit in space the database already holds.
    #[error("the disk holding the database has {free_bytes} bytes free")]
    DiskFull {
        /// Bytes free for the database's writes.
        free_bytes: u64,
    },
}

impl StoreError {
    /// Whether the store is out of reach or cannot take writes for now — the database is down
    /// or restarting, the pool has no connection, the disk is full or read-only, the file is
    /// locked — as opposed to a fault of the request or of the data. Such a failure is worth
    /// retrying later (503).
    pub fn is_unavailable(&self) -> bool {
        matches!(
            self,
            Self::Unavailable { .. } | Self::Closed | Self::DiskFull { .. }
        )
    }

    /// Whether the database refused the write because a foreign key did not match (a message
    /// for a conversation that does not exist, a safety event naming another conversation's
    /// message).
    pub fn is_foreign_key_violation(&self) -> bool {
        matches!(self, Self::ForeignKey { .. })
    }
}

/// Which attempts a retention sweep purges: stored at or after `from` and before `before` (Unix
/// ms), at most `limit` of them. A sweep moves `from` forward (to [`Purged::through`]) so that
/// it never reads the same stretch of history twice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PurgeRange {
    /// Stored at or after (Unix ms).
    pub from: i64,
    /// Stored before (Unix ms).
    pub before: i64,
    /// Most attempts purged in one call (one short transaction).
    pub limit: u32,
}

/// What one [`Purges::purge_payloads`] call purged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Purged {
    /// Attempts purged.
    pub count: u64,
    /// When the newest of them was stored (Unix ms); `None` when none was purged.
    pub through: Option<i64>,
}

impl Purged {
    /// From the `created_at` of each purged attempt.
    pub(crate) fn of(times: &[i64]) -> Self {
        Self {
            count: u64::try_from(times.len()).unwrap_or(u64::MAX),
            through: times.iter().copied().max(),
        }
    }
}

/// Whether a conversation takes new messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ConversationStatus {
    /// Normal.
    Active,
    /// Blocked by the safety policy until an admin unblocks it.
    Blocked,
}

impl ConversationStatus {
    /// Stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Blocked => "blocked",
        }
    }
}

/// A conversation to create.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewConversation {
    /// Owner.
    pub user_id: String,
    /// Contract name.
    pub contract: String,
    /// Per-conversation context (`page`, `mode`, the application's prompt, …).
    pub context: Value,
}

/// A stored conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Conversation {
    /// UUIDv7.
    pub id: String,
    /// Owner.
    pub user_id: String,
    /// Contract name.
    pub contract: String,
    /// Per-conversation context.
    pub context: Value,
    /// State kept from valid replies (progress, topic state, …); `{}` at first.
    pub state: Value,
    /// Active or blocked.
    pub status: ConversationStatus,
    /// Unix ms.
    pub created_at: i64,
    /// Unix ms of the last change (a message, a status or state change).
    pub updated_at: i64,
}

impl Conversation {
    /// The conversation `new` describes, not stored yet: a fresh UUIDv7, active, state `{}`,
    /// created and updated now.
    pub fn start(new: &NewConversation) -> Self {
        rows::fresh_conversation(new)
    }
}

/// Who wrote a stored message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MessageRole {
    /// The application's user.
    User,
    /// The model (one attempt), or Bridle's fallback.
    Assistant,
}

impl MessageRole {
    /// Stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Assistant => "assistant",
        }
    }
}

/// A message to store: a user message, one attempt, or a fallback.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewMessage {
    /// Conversation id.
    pub conversation_id: String,
    /// Id shared by the user message and every attempt of one turn (UUIDv7).
    pub turn_id: String,
    /// Author.
    pub role: MessageRole,
    /// The text as written (for an attempt: exactly what came back; for a provider error: the
    /// error text).
    pub content: String,
    /// The parsed value, when the reply could be read.
    pub value: Option<Value>,
    /// Passed the contract (user messages: always true; fallbacks: false).
    pub is_validated: bool,
    /// Bridle's fallback after the attempts ran out.
    pub is_fallback: bool,
    /// 1-based attempt number within the turn (None for user messages).
    pub attempt: Option<u32>,
    /// Contract name.
    pub contract: String,
    /// Contract version.
    pub contract_version: String,
    /// The exact provider request (a serialised `RequestPayload`), secrets redacted.
    pub request_payload: Option<Value>,
    /// The provider's response body as received.
    pub raw_response: Option<Value>,
    /// Violations found (empty when valid).
    pub violations: Vec<Violation>,
    /// Repairs applied.
    pub repairs: Vec<Repair>,
    /// Provider name.
    pub provider: Option<String>,
    /// Model that answered (or was asked).
    pub model: Option<String>,
    /// Prompt tokens.
    pub tokens_in: Option<u64>,
    /// Completion tokens.
    pub tokens_out: Option<u64>,
    /// Wall time of the provider call.
    pub latency_ms: Option<u64>,
    /// Provider error, when the call failed.
    pub error: Option<String>,
    /// Set when a streamed attempt did not run to its end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted: Option<Interruption>,
    /// Why the attempt went to its model when that is not the turn's own model (`None`: the
    /// model the turn was asked to use).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route: Option<Route>,
    /// A user message's context for its turn: the conversation's merged with what the message
    /// brought (`page`, `mode`, `app_state`, …) — what the turn's prompt and checks were built
    /// from. `None` for attempts, and for messages stored before contexts were kept per message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<Value>,
    /// A user message that answers question cards: the answers by id
    /// (`[{question_id, option_ids, text}]`); its `content` is their readable text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<Value>,
    /// The id of the HTTP request the message was written for (the `x-request-id` the gateway
    /// answered with), so a user's quoted id finds its turn. `None`: written outside a request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// The W3C trace id (32 lowercase hex digits) of that request, when it had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
}

/// The ids of the HTTP request a turn runs for, stored with each of its messages
/// ([`NewMessage::request_id`], [`NewMessage::trace_id`]). Both already checked by whoever
/// made them (the gateway's request-id layer): bounded, safe characters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestIds {
    /// The request's id (`x-request-id`).
    pub request_id: Option<String>,
    /// The W3C trace id, 32 lowercase hex digits.
    pub trace_id: Option<String>,
}

/// Why an attempt went to a model other than the turn's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Route {
    /// The model escalated to after the previous one's failed content attempts.
    Escalated,
    /// A model standing in after a provider error of the previous one.
    Failover,
}

impl Route {
    /// Stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Escalated => "escalated",
            Self::Failover => "failover",
        }
    }

    /// The stored name read back.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "escalated" => Some(Self::Escalated),
            "failover" => Some(Self::Failover),
            _ => None,
        }
    }
}

/// Why a streamed attempt did not run to its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Interruption {
    /// Bridle stopped it: the reply so far already broke the contract whatever followed
    /// (its `violations` say how); the upstream request was cancelled.
    Aborted,
    /// The client went away; the upstream request was cancelled.
    Cancelled,
}

impl Interruption {
    /// Stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Aborted => "aborted",
            Self::Cancelled => "cancelled",
        }
    }

    /// The stored name read back.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "aborted" => Some(Self::Aborted),
            "cancelled" => Some(Self::Cancelled),
            _ => None,
        }
    }
}

/// A stored message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Database id (insertion order).
    pub id: i64,
    /// Everything that was stored.
    #[serde(flatten)]
    pub data: NewMessage,
    /// Unix ms.
    pub created_at: i64,
    /// When retention purged `request_payload` and `raw_response` (Unix ms).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub payload_purged_at: Option<i64>,
}

/// Which messages a reader may see.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    /// The conversation's owner: user messages and validated replies only, without the
    /// request sent and the raw response (`request_payload` and `raw_response` read as `None`:
    /// they are admin-only, and the largest columns).
    User,
    /// Admins: every attempt, fallbacks included.
    Admin,
}

/// Admin filters for listing conversations; all optional, combined with AND.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ConversationFilter {
    /// Owner.
    pub user_id: Option<String>,
    /// Contract name.
    pub contract: Option<String>,
    /// Created at or after (Unix ms).
    pub created_from: Option<i64>,
    /// Created before (Unix ms).
    pub created_to: Option<i64>,
    /// Case-insensitive substring of any message's content.
    pub text: Option<String>,
    /// Only conversations with (true) or without (false) an invalid attempt.
    pub has_invalid: Option<bool>,
    /// Only blocked (true) or only active (false) conversations.
    pub blocked: Option<bool>,
    /// Only the conversation with a message written for this request id (exact match).
    pub request_id: Option<String>,
}

/// A page request: newest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageRequest {
    /// Items to skip.
    pub offset: u64,
    /// Items to return (1..=500).
    pub limit: u64,
}

/// One page and the total number of matches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Page<T> {
    /// This page's items.
    pub items: Vec<T>,
    /// Matches in all.
    pub total: u64,
    /// The request that produced it.
    pub offset: u64,
    /// The page size.
    pub limit: u64,
}

/// A conversation in a listing, with counts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConversationSummary {
    /// The conversation.
    #[serde(flatten)]
    pub conversation: Conversation,
    /// Messages stored (all attempts).
    pub message_count: u64,
    /// Attempts that were not valid (fallbacks included).
    pub invalid_count: u64,
}

/// A safety policy action to record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewSafetyEvent {
    /// Conversation id.
    pub conversation_id: String,
    /// The message whose assessment triggered it.
    pub message_id: Option<i64>,
    /// Danger level (`warning`, `critical`, `emergency`).
    pub level: String,
    /// Detected concerns.
    pub concerns: Value,
    /// What was done (`log`, `notify`, `block`).
    pub action: String,
    /// When administrators were notified (Unix ms), if they were.
    pub notified_at: Option<i64>,
}

/// A stored safety event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SafetyEvent {
    /// Database id.
    pub id: i64,
    /// What was recorded.
    #[serde(flatten)]
    pub data: NewSafetyEvent,
    /// Unix ms.
    pub created_at: i64,
}

/// What a turn writes: conversations and their status and state, each message as it ends
/// (user messages, every attempt, fallbacks), safety events — and the store's own write
/// health (commit pauses, late failures, the readiness probe). Used by the engine's turn loop.
#[async_trait]
pub trait TurnWrites: Send + Sync + fmt::Debug {
    /// Backend name (`sqlite`, `postgres`).
    fn backend(&self) -> &'static str;

    /// How long the store held its writes back, one observation per pause (seconds), for a
    /// store that ever does: SQLite's, while its log starts over (`sqlite/checkpoint.rs`). The
    /// engine exports it as `bridle_store_write_pause_seconds`.
    fn write_pauses(&self) -> Option<prometheus_client::metrics::histogram::Histogram> {
        None
    }

    /// How many writes failed after their answer went out, for a store that answers before
    /// committing ([`Commit::AfterReply`]). The engine exports it as
    /// `bridle_store_write_failures_total`.
    fn write_failures(&self) -> Option<prometheus_client::metrics::counter::Counter> {
        None
    }

    /// Returns once every write acknowledged so far is committed (or has failed): at shutdown,
    /// so that nothing answered is left behind. At once for a store that commits before
    /// answering.
    async fn flush(&self) {}

    /// Creates a conversation (status active, state `{}`).
    async fn create_conversation(&self, new: &NewConversation) -> Result<Conversation, StoreError>;

    /// Creates `conversation` (not stored yet: from [`Conversation::start`]) and stores its
    /// first message `first`, in one transaction; returns the message's id. One commit instead
    /// of two for a conversation that starts with a message (the OpenAI-compatible endpoint's).
    async fn create_conversation_with(
        &self,
        conversation: &Conversation,
        first: &NewMessage,
    ) -> Result<i64, StoreError>;

    /// Sets a conversation's status; false when there is no such conversation.
    async fn set_status(&self, id: &str, status: ConversationStatus) -> Result<bool, StoreError>;

    /// Writes and commits one small row kept for the purpose: whether the store can write now
    /// (a full or read-only disk fails it while reads still work). For readiness probes.
    async fn probe_write(&self) -> Result<(), StoreError>;

    /// Replaces a conversation's state; false when there is no such conversation.
    async fn set_state(&self, id: &str, state: &Value) -> Result<bool, StoreError>;

    /// Stores one message (a user message, one attempt, a fallback) and returns its id. Also
    /// bumps the conversation's `updated_at`.
    async fn record_message(&self, message: &NewMessage) -> Result<i64, StoreError>;

    /// Starts storing a turn's opening — its first message `first` (the user's), and
    /// `conversation` (from [`Conversation::start`]) when the turn starts it — without waiting
    /// for the commit: the model is called meanwhile. Settle it with [`TurnWrites::record_after`],
    /// which stores the turn's first attempt after it. The SQLite store holds the opening back
    /// for a few milliseconds so that it shares a commit with that attempt (or with other
    /// turns' writes) instead of costing one. PostgreSQL (`before_reply`) holds it until
    /// `record_after`, which writes both in one transaction; awaited instead, or dropped, the
    /// opening is written by itself. Either way it is written.
    fn open_turn(&self, conversation: Option<&Conversation>, first: &NewMessage) -> Pending<i64>;

    /// Stores `message` after `opening` (from [`TurnWrites::open_turn`]: its id is lower); returns
    /// the opening's id and the message's. An opening that failed is this call's error.
    async fn record_after(
        &self,
        opening: Pending<i64>,
        message: &NewMessage,
    ) -> Result<(i64, i64), StoreError>;

    /// Records a safety action and returns its id.
    async fn record_safety_event(&self, event: &NewSafetyEvent) -> Result<i64, StoreError>;
}

/// What users and admins read: conversations (one, or filtered pages), their messages as a
/// [`View`] may see them, single attempts, safety events and the admin console's statistics.
/// Used by the server's handlers and the engine's replay.
#[async_trait]
pub trait Reads: Send + Sync + fmt::Debug {
    /// One conversation.
    async fn conversation(&self, id: &str) -> Result<Option<Conversation>, StoreError>;

    /// Conversations matching `filter`, newest first.
    async fn list_conversations(
        &self,
        filter: &ConversationFilter,
        page: PageRequest,
    ) -> Result<Page<ConversationSummary>, StoreError>;

    /// A conversation's messages in insertion order, as `view` may see them.
    async fn messages(&self, conversation_id: &str, view: View)
    -> Result<Vec<Message>, StoreError>;

    /// One message by id, whatever its kind (admins only: attempts included).
    async fn message(&self, id: i64) -> Result<Option<Message>, StoreError>;

    /// A conversation's safety events, oldest first.
    async fn safety_events(&self, conversation_id: &str) -> Result<Vec<SafetyEvent>, StoreError>;

    /// The admin console's statistics over the turns that started in `query`'s range: outcomes
    /// over time, attempts per turn, the rules broken most, repairs and tokens, all from one
    /// snapshot. Aggregated by the database; memory does not grow with the rows.
    async fn stats(&self, query: &StatsQuery) -> Result<Stats, StoreError>;
}

/// Retention: purging old request payloads and raw replies. Used by
/// [`retention::Retention`]'s sweep.
#[async_trait]
pub trait Purges: Send + Sync + fmt::Debug {
    /// Retention: drops `request_payload` and `raw_response` of at most `range.limit` attempts
    /// stored in `range` (oldest first) and marks them purged; the validation outcome (content,
    /// value, violations, repairs, flags, tokens) stays.
    async fn purge_payloads(&self, range: PurgeRange) -> Result<Purged, StoreError>;
}

/// The whole store: [`TurnWrites`], [`Reads`] and [`Purges`] together, implemented by every
/// backend (SQLite, PostgreSQL). An `Arc<dyn Store>` is what the engine holds; a part that needs
/// less can take `&dyn Reads` (and so on) instead.
pub trait Store: TurnWrites + Reads + Purges {}

impl<T: TurnWrites + Reads + Purges + ?Sized> Store for T {}

/// Opens the store a URL names: `sqlite://PATH` (created if missing, WAL) or
/// `postgres://…`/`postgresql://…`; applies the backend's migrations.
pub async fn open(url: &str) -> Result<Box<dyn Store>, StoreError> {
    open_with(url, Commit::BeforeReply).await
}

/// [`open`], committing as `commit` says.
pub async fn open_with(url: &str, commit: Commit) -> Result<Box<dyn Store>, StoreError> {
    open_with_options(
        url,
        StoreOptions {
            commit,
            ..StoreOptions::default()
        },
    )
    .await
}

/// How a store is opened, beside its URL (the root `store_*` keys of `bridle.toml`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StoreOptions {
    /// When a turn's messages are committed relative to its answer.
    pub commit: Commit,
    /// PostgreSQL: the most connections the pool keeps (`None`:
    /// [`DEFAULT_POSTGRES_CONNECTIONS`]). The SQLite store does not use it.
    pub max_connections: Option<u32>,
}

/// [`open`], as `options` say.
pub async fn open_with_options(
    url: &str,
    options: StoreOptions,
) -> Result<Box<dyn Store>, StoreError> {
    if url.starts_with("sqlite:") {
        Ok(Box::new(SqliteStore::open_with(url, options.commit).await?))
    } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        Ok(Box::new(
            PostgresStore::open_with_options(url, options).await?,
        ))
    } else {
        Err(StoreError::Config(format!(
            "unsupported store URL {url:?}: use sqlite://PATH or postgres://…"
        )))
    }
}

/// Now, in Unix milliseconds.
pub fn now_ms() -> i64 {
    let elapsed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX)
}
