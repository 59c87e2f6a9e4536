//! The attempt store's suite, written once and run against both backends: SQLite (a file in a
//! temporary directory) and a real PostgreSQL (a fresh database per test, dropped afterwards even
//! when the test fails; admin URL from `BRIDLE_TEST_POSTGRES_URL`, default
//! `postgres://postgres@127.0.0.1:5432/test`). Each behaviour is one `async fn` taking a
//! [`Harness`]; `on_both_backends!` makes a `sqlite_<behaviour>` and a `postgres_<behaviour>` test.
//! `answering_first!` runs behaviours that hold whenever a write is committed on SQLite with
//! `store_commit = "after_reply"` too (writes answered before their commit; what differs —
//! a failing write's error — is in `store_after_reply.rs`).

#![allow(clippy::unwrap_used)]

use bridle_core::{Repair, RepairKind, Rule, SchemaKeyword, Violation};
use bridle_store::{
    AttemptsCount, Commit, Compliance, ComplianceBucket, Conversation, ConversationFilter,
    ConversationStatus, Message, MessageRole, ModelCount, NewConversation, NewMessage,
    NewSafetyEvent, PageRequest, PurgeRange, Purged, RepairCount, RuleCount, Stats, StatsQuery,
    Store, StoreError, StreamingStats, TokenUsage, TurnOutcomes, View,
};
use bridle_testkit::TestDatabase;
use serde_json::{Value, json};
use sqlx::PgPool;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

macro_rules! on_both_backends {
    ($($behaviour:ident: $sqlite:ident, $postgres:ident;)*) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn $sqlite() {
            $behaviour(Harness::sqlite().await).await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn $postgres() {
            $behaviour(Harness::postgres().await).await;
        }
    )*};
}

on_both_backends! {
    create_and_get: sqlite_create_and_get, postgres_create_and_get;
    attempts_and_views: sqlite_attempts_and_views, postgres_attempts_and_views;
    filters: sqlite_filters, postgres_filters;
    text_filter_is_literal: sqlite_text_filter_is_literal, postgres_text_filter_is_literal;
    pagination: sqlite_pagination, postgres_pagination;
    status_and_state: sqlite_status_and_state, postgres_status_and_state;
    foreign_keys: sqlite_foreign_keys, postgres_foreign_keys;
    created_with_first_message: sqlite_created_with_first_message,
        postgres_created_with_first_message;
    turn_opening_comes_before_its_attempt: sqlite_turn_opening_comes_before_its_attempt,
        postgres_turn_opening_comes_before_its_attempt;
    corrupt_json: sqlite_corrupt_json, postgres_corrupt_json;
    safety_events: sqlite_safety_events, postgres_safety_events;
    reopen: sqlite_reopen, postgres_reopen;
    probe_write_commits_one_row: sqlite_probe_write_commits_one_row,
        postgres_probe_write_commits_one_row;
    concurrent_writers: sqlite_concurrent_writers, postgres_concurrent_writers;
    large_content: sqlite_large_content, postgres_large_content;
    stats_counts_every_outcome: sqlite_stats_counts_every_outcome,
        postgres_stats_counts_every_outcome;
    stats_filters: sqlite_stats_filters, postgres_stats_filters;
    stats_buckets: sqlite_stats_buckets, postgres_stats_buckets;
    stats_empty: sqlite_stats_empty, postgres_stats_empty;
    stats_skip_malformed_json: sqlite_stats_skip_malformed_json,
        postgres_stats_skip_malformed_json;
    retention_purges_payloads_and_keeps_outcomes:
        sqlite_retention_purges_payloads_and_keeps_outcomes,
        postgres_retention_purges_payloads_and_keeps_outcomes;
    retention_sweeps_in_batches: sqlite_retention_sweeps_in_batches,
        postgres_retention_sweeps_in_batches;
    long_prompts_read_back_whole: sqlite_long_prompts_read_back_whole,
        postgres_long_prompts_read_back_whole;
}

macro_rules! answering_first {
    ($($behaviour:ident: $sqlite:ident, $postgres:ident;)*) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn $sqlite() {
            $behaviour(Harness::sqlite_with(Commit::AfterReply).await).await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn $postgres() {
            $behaviour(Harness::postgres_with(Commit::AfterReply).await).await;
        }
    )*};
}

answering_first! {
    create_and_get: answering_first_create_and_get,
        postgres_answering_first_create_and_get;
    attempts_and_views: answering_first_attempts_and_views,
        postgres_answering_first_attempts_and_views;
    filters: answering_first_filters,
        postgres_answering_first_filters;
    text_filter_is_literal: answering_first_text_filter_is_literal,
        postgres_answering_first_text_filter_is_literal;
    pagination: answering_first_pagination,
        postgres_answering_first_pagination;
    status_and_state: answering_first_status_and_state,
        postgres_answering_first_status_and_state;
    created_with_first_message: answering_first_created_with_first_message,
        postgres_answering_first_created_with_first_message;
    corrupt_json: answering_first_corrupt_json,
        postgres_answering_first_corrupt_json;
    safety_events: answering_first_safety_events,
        postgres_answering_first_safety_events;
    concurrent_writers: answering_first_concurrent_writers,
        postgres_answering_first_concurrent_writers;
    large_content: answering_first_large_content,
        postgres_answering_first_large_content;
    stats_counts_every_outcome: answering_first_stats_counts_every_outcome,
        postgres_answering_first_stats_counts_every_outcome;
    stats_filters: answering_first_stats_filters,
        postgres_answering_first_stats_filters;
    stats_buckets: answering_first_stats_buckets,
        postgres_answering_first_stats_buckets;
    stats_empty: answering_first_stats_empty,
        postgres_answering_first_stats_empty;
    stats_skip_malformed_json: answering_first_stats_skip_malformed_json,
        postgres_answering_first_stats_skip_malformed_json;
    retention_purges_payloads_and_keeps_outcomes: answering_first_retention_purges_payloads_and_keeps_outcomes,
        postgres_answering_first_retention_purges_payloads_and_keeps_outcomes;
    retention_sweeps_in_batches: answering_first_retention_sweeps_in_batches,
        postgres_answering_first_retention_sweeps_in_batches;
    long_prompts_read_back_whole: answering_first_long_prompts_read_back_whole,
        postgres_answering_first_long_prompts_read_back_whole;
}

// ---------------------------------------------------------------------------------------------
// Harness
// ---------------------------------------------------------------------------------------------

/// A store under test, a raw connection to its database and the place the database lives.
/// Fields drop in order: the store, the raw connection, then the place (file or database) itself.
struct Harness {
    store: Arc<dyn Store>,
    url: String,
    raw: Raw,
    place: Place,
}

enum Raw {
    Sqlite(Mutex<rusqlite::Connection>),
    Postgres(PgPool),
}

/// The raw SQLite connection.
fn sqlite(db: &Mutex<rusqlite::Connection>) -> MutexGuard<'_, rusqlite::Connection> {
    db.lock().unwrap()
}

#[allow(dead_code)] // the fields are held for their `Drop`
enum Place {
    Dir(tempfile::TempDir),
    Database(TestDatabase),
}

impl Harness {
    async fn sqlite() -> Self {
        Self::sqlite_with(Commit::BeforeReply).await
    }

    async fn sqlite_with(commit: Commit) -> Self {
        let dir = tempfile::tempdir().unwrap();
        // A directory that does not exist yet: opening creates it.
        let path = dir.path().join("data").join("bridle.db");
        let url = format!("sqlite://{}", path.display());
        let store = bridle_store::open_with(&url, commit).await.unwrap();
        assert_eq!(store.backend(), "sqlite");
        assert!(path.is_file());
        let raw = rusqlite::Connection::open(&path).unwrap();
        let journal: String = raw
            .query_row("PRAGMA journal_mode", [], |row| row.get(0))
            .unwrap();
        assert_eq!(journal, "wal");
        Self {
            store: Arc::from(store),
            url,
            raw: Raw::Sqlite(Mutex::new(raw)),
            place: Place::Dir(dir),
        }
    }

    async fn postgres() -> Self {
        Self::postgres_with(Commit::BeforeReply).await
    }

    async fn postgres_with(commit: Commit) -> Self {
        let database = TestDatabase::create().await;
        let url = database.url.clone();
        let store = bridle_store::open_with(&url, commit).await.unwrap();
        assert_eq!(store.backend(), "postgres");
        let raw = PgPool::connect(&url).await.unwrap();
        Self {
            store: Arc::from(store),
            url,
            raw: Raw::Postgres(raw),
            place: Place::Database(database),
        }
    }

    fn store(&self) -> &dyn Store {
        &*self.store
    }

    /// The raw connection, once every write the store answered is committed (a store answering
    /// first may still hold some).
    async fn raw(&self) -> &Raw {
        self.store.flush().await;
        &self.raw
    }
}

impl Raw {
    /// Overwrites a message's `violations` with `json` (valid JSON, so that both backends take it).
    async fn set_violations(&self, message_id: i64, json: &str) {
        let updated = match self {
            Self::Sqlite(db) => sqlite(db)
                .execute(
                    "UPDATE messages SET violations = ? WHERE id = ?",
                    rusqlite::params![json, message_id],
                )
                .unwrap() as u64,
            Self::Postgres(pool) => {
                sqlx::query("UPDATE messages SET violations = $1::jsonb WHERE id = $2")
                    .bind(json)
                    .bind(message_id)
                    .execute(pool)
                    .await
                    .unwrap()
                    .rows_affected()
            }
        };
        assert_eq!(updated, 1);
    }

    /// Overwrites a message's `repairs` with `json` (valid JSON).
    async fn set_repairs(&self, message_id: i64, json: &str) {
        let updated = match self {
            Self::Sqlite(db) => sqlite(db)
                .execute(
                    "UPDATE messages SET repairs = ? WHERE id = ?",
                    rusqlite::params![json, message_id],
                )
                .unwrap() as u64,
            Self::Postgres(pool) => {
                sqlx::query("UPDATE messages SET repairs = $1::jsonb WHERE id = $2")
                    .bind(json)
                    .bind(message_id)
                    .execute(pool)
                    .await
                    .unwrap()
                    .rows_affected()
            }
        };
        assert_eq!(updated, 1);
    }

    /// Sets when a message was stored (Unix ms).
    async fn set_created_at(&self, message_id: i64, at: i64) {
        let updated = match self {
            Self::Sqlite(db) => sqlite(db)
                .execute(
                    "UPDATE messages SET created_at = ? WHERE id = ?",
                    rusqlite::params![at, message_id],
                )
                .unwrap() as u64,
            Self::Postgres(pool) => {
                sqlx::query("UPDATE messages SET created_at = $1 WHERE id = $2")
                    .bind(at)
                    .bind(message_id)
                    .execute(pool)
                    .await
                    .unwrap()
                    .rows_affected()
            }
        };
        assert_eq!(updated, 1);
    }

    /// Overwrites a conversation's `context` with text that is not JSON, where the backend can
    /// hold it (SQLite stores JSON as text; PostgreSQL's JSONB refuses it). Returns whether it did.
    async fn set_context_text(&self, conversation_id: &str, text: &str) -> bool {
        match self {
            Self::Sqlite(db) => {
                let updated = sqlite(db)
                    .execute(
                        "UPDATE conversations SET context = ? WHERE id = ?",
                        rusqlite::params![text, conversation_id],
                    )
                    .unwrap();
                assert_eq!(updated, 1);
                true
            }
            Self::Postgres(pool) => {
                let refused =
                    sqlx::query("UPDATE conversations SET context = $1::jsonb WHERE id = $2")
                        .bind(text)
                        .bind(conversation_id)
                        .execute(pool)
                        .await;
                assert!(refused.is_err(), "JSONB took {text:?}");
                false
            }
        }
    }

    /// Rows of the readiness probe's table.
    async fn health_rows(&self) -> i64 {
        let sql = "SELECT COUNT(*) FROM store_health";
        match self {
            Self::Sqlite(db) => sqlite(db).query_row(sql, [], |row| row.get(0)).unwrap(),
            Self::Postgres(pool) => sqlx::query_scalar(sql).fetch_one(pool).await.unwrap(),
        }
    }

    /// Rows in sqlx's migration table.
    async fn applied_migrations(&self) -> i64 {
        let sql = "SELECT COUNT(*) FROM _sqlx_migrations WHERE success";
        match self {
            Self::Sqlite(db) => sqlite(db).query_row(sql, [], |row| row.get(0)).unwrap(),
            Self::Postgres(pool) => sqlx::query_scalar(sql).fetch_one(pool).await.unwrap(),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Fixtures
// ---------------------------------------------------------------------------------------------

/// A conversation of alice's under `tutor`, stored.
pub(crate) async fn alices_tutor_conversation(store: &dyn Store) -> Conversation {
    store
        .create_conversation(&new_conversation("alice", "tutor"))
        .await
        .unwrap()
}

pub(crate) fn new_conversation(user_id: &str, contract: &str) -> NewConversation {
    NewConversation {
        user_id: user_id.to_owned(),
        contract: contract.to_owned(),
        context: json!({"page": "lesson-3", "mode": "practice", "prompt": "Sé breve ✓"}),
    }
}

pub(crate) fn user_message(
    conversation: &Conversation,
    turn_id: &str,
    content: &str,
) -> NewMessage {
    NewMessage {
        conversation_id: conversation.id.clone(),
        turn_id: turn_id.to_owned(),
        role: MessageRole::User,
        content: content.to_owned(),
        value: None,
        is_validated: true,
        is_fallback: false,
        attempt: None,
        contract: conversation.contract.clone(),
        contract_version: "1.2.0".to_owned(),
        request_payload: None,
        raw_response: None,
        violations: Vec::new(),
        repairs: Vec::new(),
        provider: None,
        model: None,
        tokens_in: None,
        tokens_out: None,
        latency_ms: None,
        error: None,
        interrupted: None,
        route: None,
        context: None,
        answer: None,
        // Every message of a turn carries its request's ids (a round trip checks them).
        request_id: Some(format!("req-{turn_id}")),
        trace_id: Some("4bf92f3577b34da6a3ce929d0e0e4736".to_owned()),
    }
}

/// A valid attempt whose reply is `{"reply": text}`.
pub(crate) fn valid_attempt(
    conversation: &Conversation,
    turn_id: &str,
    attempt: u32,
    text: &str,
) -> NewMessage {
    let value = json!({"reply": text});
    NewMessage {
        role: MessageRole::Assistant,
        content: value.to_string(),
        value: Some(value.clone()),
        attempt: Some(attempt),
        request_payload: Some(json!({
            "model": "gpt-test",
            "temperature": 0,
            "messages": [{"role": "user", "content": "hi"}],
            "api_key": "[redacted]"
        })),
        raw_response: Some(json!({"choices": [{"message": {"content": value.to_string()}}]})),
        provider: Some("openai".to_owned()),
        model: Some("gpt-test".to_owned()),
        tokens_in: Some(120),
        tokens_out: Some(33),
        latency_ms: Some(812),
        ..user_message(conversation, turn_id, "")
    }
}

/// An attempt that broke the contract: unreadable text, with violations and repairs.
fn invalid_attempt(
    conversation: &Conversation,
    turn_id: &str,
    attempt: u32,
    text: &str,
) -> NewMessage {
    NewMessage {
        content: text.to_owned(),
        value: Some(json!({"reply": 7})),
        is_validated: false,
        violations: vec![
            Violation::new(
                "/reply",
                Rule::Schema(SchemaKeyword::Type),
                "reply must be a string",
            ),
            Violation::new(
                "",
                Rule::Schema(SchemaKeyword::Required),
                "missing property \"topic\"",
            ),
        ],
        repairs: vec![Repair::text(
            RepairKind::TrailingComma,
            2,
            "removed 2 trailing commas",
        )],
        ..valid_attempt(conversation, turn_id, attempt, "")
    }
}

/// An attempt whose provider call failed.
fn failed_attempt(conversation: &Conversation, turn_id: &str, attempt: u32) -> NewMessage {
    NewMessage {
        content: "provider timed out after 30s".to_owned(),
        value: None,
        is_validated: false,
        raw_response: None,
        tokens_in: None,
        tokens_out: None,
        error: Some("timeout".to_owned()),
        ..valid_attempt(conversation, turn_id, attempt, "")
    }
}

/// Bridle's fallback after the attempts ran out.
fn fallback(conversation: &Conversation, turn_id: &str) -> NewMessage {
    let value = json!({"reply": "Sorry, I could not answer that."});
    NewMessage {
        role: MessageRole::Assistant,
        content: value.to_string(),
        value: Some(value),
        is_validated: false,
        is_fallback: true,
        ..user_message(conversation, turn_id, "")
    }
}

pub(crate) fn turn_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

fn everything() -> PageRequest {
    PageRequest {
        offset: 0,
        limit: 500,
    }
}

/// Ids of the conversations `filter` lists (first page of 500), checking `total` agrees.
async fn listed(store: &dyn Store, filter: &ConversationFilter) -> Vec<String> {
    let page = store
        .list_conversations(filter, everything())
        .await
        .unwrap();
    assert_eq!(page.total, page.items.len() as u64, "{filter:?}");
    page.items.into_iter().map(|s| s.conversation.id).collect()
}

fn ids(conversations: &[&Conversation]) -> Vec<String> {
    conversations.iter().map(|c| c.id.clone()).collect()
}

/// How many messages of `conversation` are stored (invalid attempts included).
async fn stored_messages(store: &dyn Store, conversation: &Conversation) -> usize {
    store
        .messages(&conversation.id, View::Admin)
        .await
        .unwrap()
        .len()
}

pub(crate) fn message_ids(messages: &[Message]) -> Vec<i64> {
    messages.iter().map(|m| m.id).collect()
}

/// Creates a conversation at a later millisecond than any before it.
async fn create_later(store: &dyn Store, user_id: &str, contract: &str) -> Conversation {
    tokio::time::sleep(Duration::from_millis(3)).await;
    store
        .create_conversation(&new_conversation(user_id, contract))
        .await
        .unwrap()
}

pub(crate) fn is_foreign_key_violation(error: &StoreError) -> bool {
    error.is_foreign_key_violation()
}

// ---------------------------------------------------------------------------------------------
// Behaviours
// ---------------------------------------------------------------------------------------------

async fn create_and_get(h: Harness) {
    let store = h.store();
    let before = bridle_store::now_ms();
    let new = new_conversation("alice", "tutor");
    let created = store.create_conversation(&new).await.unwrap();
    let after = bridle_store::now_ms();

    assert_eq!(
        uuid::Uuid::parse_str(&created.id)
            .unwrap()
            .get_version_num(),
        7
    );
    assert_eq!(
        (created.user_id.as_str(), created.contract.as_str()),
        ("alice", "tutor")
    );
    assert_eq!(created.context, new.context);
    assert_eq!(created.state, json!({}));
    assert_eq!(created.status, ConversationStatus::Active);
    assert!((before..=after).contains(&created.created_at));
    assert_eq!(created.updated_at, created.created_at);

    assert_eq!(
        store.conversation(&created.id).await.unwrap(),
        Some(created.clone())
    );
    assert_eq!(
        store.conversation("no-such-conversation").await.unwrap(),
        None
    );

    let other = store
        .create_conversation(&new_conversation("bob", "quiz"))
        .await
        .unwrap();
    assert_ne!(other.id, created.id);
    assert_eq!(store.conversation(&other.id).await.unwrap(), Some(other));
}

async fn attempts_and_views(h: Harness) {
    let store = h.store();
    let conversation = alices_tutor_conversation(store).await;
    let (turn1, turn2) = (turn_id(), turn_id());
    let recorded = [
        user_message(&conversation, &turn1, "What is 2 + 2?"),
        invalid_attempt(&conversation, &turn1, 1, "{\"reply\": 7,}"),
        failed_attempt(&conversation, &turn1, 2),
        valid_attempt(&conversation, &turn1, 3, "4"),
        user_message(&conversation, &turn2, "And 3 + 3?"),
        fallback(&conversation, &turn2),
    ];
    let before = bridle_store::now_ms();
    let mut stored_ids = Vec::new();
    for message in &recorded {
        stored_ids.push(store.record_message(message).await.unwrap());
    }
    let after = bridle_store::now_ms();
    assert!(
        stored_ids.is_sorted() && stored_ids.windows(2).all(|w| w[0] < w[1]),
        "{stored_ids:?}"
    );

    // Admins see every attempt, exactly as recorded, in insertion order.
    let admin = store.messages(&conversation.id, View::Admin).await.unwrap();
    assert_eq!(message_ids(&admin), stored_ids);
    for (message, new) in admin.iter().zip(&recorded) {
        assert_eq!(&message.data, new);
        assert!((before..=after).contains(&message.created_at));
    }

    // Users see their own messages and the valid reply; not the failures, not the fallback.
    let user = store.messages(&conversation.id, View::User).await.unwrap();
    assert_eq!(
        message_ids(&user),
        vec![stored_ids[0], stored_ids[3], stored_ids[4]]
    );
    // ...without the request sent and the raw response (admin-only, and the largest columns).
    let without_payloads = NewMessage {
        request_payload: None,
        raw_response: None,
        ..recorded[3].clone()
    };
    assert!(recorded[3].request_payload.is_some() && recorded[3].raw_response.is_some());
    assert_eq!(user[1].data, without_payloads);
    assert_eq!(user[0].data, recorded[0]);

    // Recording bumped the conversation.
    let bumped = store.conversation(&conversation.id).await.unwrap().unwrap();
    assert!(
        bumped.updated_at >= admin[5].created_at && bumped.updated_at >= conversation.updated_at
    );

    // The listing counts every message and the invalid attempts (the fallback included).
    let page = store
        .list_conversations(&ConversationFilter::default(), everything())
        .await
        .unwrap();
    assert_eq!(page.total, 1);
    let summary = &page.items[0];
    assert_eq!(summary.conversation, bumped);
    assert_eq!((summary.message_count, summary.invalid_count), (6, 3));

    // Another conversation's messages are its own.
    assert!(
        store
            .messages("no-such-conversation", View::Admin)
            .await
            .unwrap()
            .is_empty()
    );
}

async fn filters(h: Harness) {
    let store = h.store();
    let c1 = create_later(store, "alice", "tutor").await;
    let c2 = create_later(store, "alice", "quiz").await;
    let c3 = create_later(store, "bob", "tutor").await;
    let c4 = create_later(store, "bob", "quiz").await;
    let (t1, t2, t3) = (turn_id(), turn_id(), turn_id());
    for message in [
        user_message(&c1, &t1, "Hello World"),
        valid_attempt(&c1, &t1, 1, "hi there"),
        user_message(&c2, &t2, "Explain photosynthesis"),
        invalid_attempt(&c2, &t2, 1, "{not json at all"),
        valid_attempt(&c2, &t2, 2, "plants make sugar"),
        user_message(&c3, &t3, "Ça va? ÉLAN vital"),
        fallback(&c3, &t3),
    ] {
        store.record_message(&message).await.unwrap();
    }
    assert!(
        store
            .set_status(&c3.id, ConversationStatus::Blocked)
            .await
            .unwrap()
    );

    let all = ConversationFilter::default();
    let cases: Vec<(&str, ConversationFilter, Vec<String>)> = vec![
        ("none", all.clone(), ids(&[&c4, &c3, &c2, &c1])),
        (
            "user",
            ConversationFilter {
                user_id: Some("alice".into()),
                ..all.clone()
            },
            ids(&[&c2, &c1]),
        ),
        (
            "unknown user",
            ConversationFilter {
                user_id: Some("carol".into()),
                ..all.clone()
            },
            vec![],
        ),
        (
            "contract",
            ConversationFilter {
                contract: Some("tutor".into()),
                ..all.clone()
            },
            ids(&[&c3, &c1]),
        ),
        (
            "from",
            ConversationFilter {
                created_from: Some(c2.created_at),
                ..all.clone()
            },
            ids(&[&c4, &c3, &c2]),
        ),
        (
            "to (exclusive)",
            ConversationFilter {
                created_to: Some(c3.created_at),
                ..all.clone()
            },
            ids(&[&c2, &c1]),
        ),
        (
            "range",
            ConversationFilter {
                created_from: Some(c2.created_at),
                created_to: Some(c4.created_at),
                ..all.clone()
            },
            ids(&[&c3, &c2]),
        ),
        (
            "text",
            ConversationFilter {
                text: Some("hello world".into()),
                ..all.clone()
            },
            ids(&[&c1]),
        ),
        (
            "text, other case",
            ConversationFilter {
                text: Some("PHOTOSYNTHESIS".into()),
                ..all.clone()
            },
            ids(&[&c2]),
        ),
        (
            "text in an invalid attempt",
            ConversationFilter {
                text: Some("NOT JSON".into()),
                ..all.clone()
            },
            ids(&[&c2]),
        ),
        (
            "text in a reply",
            ConversationFilter {
                text: Some("sugar".into()),
                ..all.clone()
            },
            ids(&[&c2]),
        ),
        (
            "text, non-ASCII",
            ConversationFilter {
                text: Some("ÉLAN".into()),
                ..all.clone()
            },
            ids(&[&c3]),
        ),
        (
            "text, nowhere",
            ConversationFilter {
                text: Some("xyzzy".into()),
                ..all.clone()
            },
            vec![],
        ),
        (
            "has invalid",
            ConversationFilter {
                has_invalid: Some(true),
                ..all.clone()
            },
            ids(&[&c3, &c2]),
        ),
        (
            "has no invalid",
            ConversationFilter {
                has_invalid: Some(false),
                ..all.clone()
            },
            ids(&[&c4, &c1]),
        ),
        (
            "blocked",
            ConversationFilter {
                blocked: Some(true),
                ..all.clone()
            },
            ids(&[&c3]),
        ),
        (
            "active",
            ConversationFilter {
                blocked: Some(false),
                ..all.clone()
            },
            ids(&[&c4, &c2, &c1]),
        ),
        (
            "user + active",
            ConversationFilter {
                user_id: Some("bob".into()),
                blocked: Some(false),
                ..all.clone()
            },
            ids(&[&c4]),
        ),
        (
            "user + has invalid",
            ConversationFilter {
                user_id: Some("alice".into()),
                has_invalid: Some(true),
                ..all.clone()
            },
            ids(&[&c2]),
        ),
        (
            "contract + text + blocked",
            ConversationFilter {
                contract: Some("tutor".into()),
                text: Some("vital".into()),
                blocked: Some(true),
                ..all.clone()
            },
            ids(&[&c3]),
        ),
        (
            "contract + range",
            ConversationFilter {
                contract: Some("quiz".into()),
                created_from: Some(c1.created_at),
                created_to: Some(c4.created_at),
                ..all.clone()
            },
            ids(&[&c2]),
        ),
        (
            "every filter",
            ConversationFilter {
                user_id: Some("alice".into()),
                contract: Some("quiz".into()),
                created_from: Some(c1.created_at),
                created_to: Some(c4.created_at + 1),
                text: Some("photo".into()),
                has_invalid: Some(true),
                blocked: Some(false),
                request_id: Some(format!("req-{t2}")),
            },
            ids(&[&c2]),
        ),
        (
            "request id",
            ConversationFilter {
                request_id: Some(format!("req-{t3}")),
                ..all.clone()
            },
            ids(&[&c3]),
        ),
        (
            "request id, a prefix only",
            ConversationFilter {
                request_id: Some("req-".into()),
                ..all.clone()
            },
            vec![],
        ),
        (
            "every filter, contradictory",
            ConversationFilter {
                user_id: Some("alice".into()),
                contract: Some("quiz".into()),
                created_from: Some(c1.created_at),
                created_to: Some(c4.created_at + 1),
                text: Some("photo".into()),
                has_invalid: Some(true),
                blocked: Some(true),
                request_id: None,
            },
            vec![],
        ),
    ];
    for (name, filter, expected) in cases {
        assert_eq!(listed(store, &filter).await, expected, "{name}");
    }

    // Counts come with every summary.
    let page = store.list_conversations(&all, everything()).await.unwrap();
    let counts: Vec<(u64, u64)> = page
        .items
        .iter()
        .map(|s| (s.message_count, s.invalid_count))
        .collect();
    assert_eq!(counts, vec![(0, 0), (2, 1), (3, 1), (2, 0)]);
}

async fn text_filter_is_literal(h: Harness) {
    let store = h.store();
    let percent = create_later(store, "u", "k").await;
    let underscore = create_later(store, "u", "k").await;
    let backslash = create_later(store, "u", "k").await;
    let plain = create_later(store, "u", "k").await;
    for (conversation, content) in [
        (&percent, "I am 100% sure"),
        (&underscore, "snake_case name"),
        (&backslash, r"C:\Users\me"),
        (&plain, "100 sure, snakeXcase, C:Users"),
    ] {
        store
            .record_message(&user_message(conversation, &turn_id(), content))
            .await
            .unwrap();
    }
    for (text, expected) in [
        ("%", ids(&[&percent])),
        ("100%", ids(&[&percent])),
        ("_", ids(&[&underscore])),
        ("e_c", ids(&[&underscore])),
        (r"\", ids(&[&backslash])),
        (r"C:\u", ids(&[&backslash])),
        ("%%", vec![]),
        ("", ids(&[&plain, &backslash, &underscore, &percent])),
    ] {
        let filter = ConversationFilter {
            text: Some(text.to_owned()),
            ..Default::default()
        };
        assert_eq!(listed(store, &filter).await, expected, "{text:?}");
    }
}

async fn pagination(h: Harness) {
    let store = h.store();
    let mut created = Vec::new();
    for i in 0..25 {
        let user = if i % 2 == 0 { "even" } else { "odd" };
        created.push(
            store
                .create_conversation(&new_conversation(user, "k"))
                .await
                .unwrap(),
        );
    }
    let newest_first: Vec<String> = created.iter().rev().map(|c| c.id.clone()).collect();
    let all = ConversationFilter::default();

    let mut paged = Vec::new();
    for (offset, size) in [(0, 10), (10, 10), (20, 5)] {
        let page = store
            .list_conversations(&all, PageRequest { offset, limit: 10 })
            .await
            .unwrap();
        assert_eq!(
            (page.total, page.offset, page.limit, page.items.len()),
            (25, offset, 10, size)
        );
        paged.extend(page.items.into_iter().map(|s| s.conversation.id));
    }
    assert_eq!(paged, newest_first);

    for offset in [25, 1000, u64::MAX] {
        let page = store
            .list_conversations(&all, PageRequest { offset, limit: 10 })
            .await
            .unwrap();
        assert!(page.items.is_empty(), "offset {offset}");
        assert_eq!((page.total, page.offset), (25, offset));
    }

    let page = store
        .list_conversations(
            &all,
            PageRequest {
                offset: 3,
                limit: 0,
            },
        )
        .await
        .unwrap();
    assert_eq!(page.limit, 1);
    assert_eq!(
        page.items
            .iter()
            .map(|s| s.conversation.id.clone())
            .collect::<Vec<_>>(),
        newest_first[3..4]
    );

    let page = store
        .list_conversations(
            &all,
            PageRequest {
                offset: 0,
                limit: 10_000,
            },
        )
        .await
        .unwrap();
    assert_eq!((page.limit, page.items.len(), page.total), (500, 25, 25));

    // Pagination applies after filtering.
    let even = ConversationFilter {
        user_id: Some("even".into()),
        ..all
    };
    let page = store
        .list_conversations(
            &even,
            PageRequest {
                offset: 5,
                limit: 5,
            },
        )
        .await
        .unwrap();
    let expected: Vec<String> = created
        .iter()
        .step_by(2)
        .rev()
        .skip(5)
        .take(5)
        .map(|c| c.id.clone())
        .collect();
    assert_eq!(page.total, 13);
    assert_eq!(
        page.items
            .into_iter()
            .map(|s| s.conversation.id)
            .collect::<Vec<_>>(),
        expected
    );
}

async fn status_and_state(h: Harness) {
    let store = h.store();
    let conversation = alices_tutor_conversation(store).await;

    tokio::time::sleep(Duration::from_millis(3)).await;
    assert!(
        store
            .set_status(&conversation.id, ConversationStatus::Blocked)
            .await
            .unwrap()
    );
    let blocked = store.conversation(&conversation.id).await.unwrap().unwrap();
    assert_eq!(blocked.status, ConversationStatus::Blocked);
    assert!(blocked.updated_at > conversation.updated_at);

    tokio::time::sleep(Duration::from_millis(3)).await;
    let state = json!({"progress": {"step": 3, "of": 5}, "topic": "fractions", "seen": ["½", "⅓"]});
    assert!(store.set_state(&conversation.id, &state).await.unwrap());
    let updated = store.conversation(&conversation.id).await.unwrap().unwrap();
    assert_eq!(updated.state, state);
    assert_eq!(updated.status, ConversationStatus::Blocked);
    assert!(updated.updated_at > blocked.updated_at);

    assert!(
        store
            .set_status(&conversation.id, ConversationStatus::Active)
            .await
            .unwrap()
    );
    let active = store.conversation(&conversation.id).await.unwrap().unwrap();
    assert_eq!(active.status, ConversationStatus::Active);
    assert_eq!(
        (active.context, active.created_at),
        (conversation.context, conversation.created_at)
    );

    assert!(
        !store
            .set_status("no-such-conversation", ConversationStatus::Blocked)
            .await
            .unwrap()
    );
    assert!(
        !store
            .set_state("no-such-conversation", &state)
            .await
            .unwrap()
    );
    assert_eq!(
        listed(store, &ConversationFilter::default()).await,
        vec![conversation.id]
    );
}

async fn foreign_keys(h: Harness) {
    let store = h.store();
    let conversation = alices_tutor_conversation(store).await;
    let other = store
        .create_conversation(&new_conversation("bob", "tutor"))
        .await
        .unwrap();
    let own = store
        .record_message(&user_message(&conversation, &turn_id(), "hi"))
        .await
        .unwrap();
    let foreign = store
        .record_message(&user_message(&other, &turn_id(), "hey"))
        .await
        .unwrap();

    let ghost = Conversation {
        id: "no-such-conversation".into(),
        ..conversation.clone()
    };
    let error = store
        .record_message(&user_message(&ghost, &turn_id(), "lost"))
        .await
        .unwrap_err();
    assert!(is_foreign_key_violation(&error), "{error}");
    assert!(
        store
            .messages(&ghost.id, View::Admin)
            .await
            .unwrap()
            .is_empty()
    );

    let event = |conversation_id: &str, message_id| NewSafetyEvent {
        conversation_id: conversation_id.to_owned(),
        message_id,
        level: "warning".into(),
        concerns: json!(["self_harm"]),
        action: "log".into(),
        notified_at: None,
    };
    for (name, bad) in [
        ("unknown conversation", event(&ghost.id, None)),
        (
            "unknown message",
            event(&conversation.id, Some(foreign + 1000)),
        ),
        (
            "another conversation's message",
            event(&conversation.id, Some(foreign)),
        ),
    ] {
        let error = store.record_safety_event(&bad).await.unwrap_err();
        assert!(is_foreign_key_violation(&error), "{name}: {error}");
    }
    assert!(
        store
            .record_safety_event(&event(&conversation.id, Some(own)))
            .await
            .is_ok()
    );
    assert_eq!(
        store.safety_events(&conversation.id).await.unwrap().len(),
        1
    );
    assert_eq!(stored_messages(store, &conversation).await, 1);
}

async fn created_with_first_message(h: Harness) {
    let store = h.store();
    let conversation = Conversation::start(&new_conversation("alice", "tutor"));
    assert_eq!(store.conversation(&conversation.id).await.unwrap(), None);
    let first = user_message(&conversation, &turn_id(), "hi");
    let id = store
        .create_conversation_with(&conversation, &first)
        .await
        .unwrap();
    let stored = store.conversation(&conversation.id).await.unwrap().unwrap();
    assert_eq!(
        Conversation {
            updated_at: conversation.updated_at,
            ..stored.clone()
        },
        conversation
    );
    assert!(stored.updated_at >= conversation.created_at);
    let messages = store.messages(&conversation.id, View::Admin).await.unwrap();
    assert_eq!(message_ids(&messages), [id]);
    assert_eq!(messages[0].data.content, "hi");

    // Both or neither: a first message that cannot be stored takes its conversation with it …
    let lost = Conversation::start(&new_conversation("bob", "tutor"));
    let ghost = Conversation {
        id: "no-such-conversation".into(),
        ..lost.clone()
    };
    let error = store
        .create_conversation_with(&lost, &user_message(&ghost, &turn_id(), "lost"))
        .await
        .unwrap_err();
    assert!(is_foreign_key_violation(&error), "{error}");
    assert_eq!(store.conversation(&lost.id).await.unwrap(), None);
    // … and a conversation that exists already takes no message.
    assert!(
        store
            .create_conversation_with(
                &conversation,
                &user_message(&conversation, &turn_id(), "again")
            )
            .await
            .is_err()
    );
    assert_eq!(stored_messages(store, &conversation).await, 1);
}

async fn turn_opening_comes_before_its_attempt(h: Harness) {
    let store = h.store();
    // A turn that starts its conversation: both stored, the user's message first.
    let conversation = Conversation::start(&new_conversation("alice", "tutor"));
    let turn = turn_id();
    let opening = store.open_turn(
        Some(&conversation),
        &user_message(&conversation, &turn, "hi"),
    );
    let (first, attempt) = store
        .record_after(opening, &valid_attempt(&conversation, &turn, 1, "hello"))
        .await
        .unwrap();
    assert!(
        store
            .conversation(&conversation.id)
            .await
            .unwrap()
            .is_some()
    );
    let messages = store.messages(&conversation.id, View::Admin).await.unwrap();
    assert_eq!(message_ids(&messages), [first, attempt]);
    assert_eq!(messages[0].data.content, "hi");

    // A later turn of the same conversation.
    let turn = turn_id();
    let opening = store.open_turn(None, &user_message(&conversation, &turn, "more"));
    let (second, reply) = store
        .record_after(opening, &valid_attempt(&conversation, &turn, 1, "sure"))
        .await
        .unwrap();
    let messages = store.messages(&conversation.id, View::Admin).await.unwrap();
    assert_eq!(message_ids(&messages), [first, attempt, second, reply]);

    // An opening that cannot be stored is the error of the write after it.
    let ghost = Conversation::start(&new_conversation("bob", "tutor"));
    let opening = store.open_turn(None, &user_message(&ghost, &turn_id(), "lost"));
    let error = store
        .record_after(opening, &valid_attempt(&conversation, &turn_id(), 1, "x"))
        .await
        .unwrap_err();
    assert!(is_foreign_key_violation(&error), "{error}");

    // One nobody settles is stored all the same.
    let turn = turn_id();
    drop(store.open_turn(None, &user_message(&conversation, &turn, "dropped")));
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !store
        .messages(&conversation.id, View::Admin)
        .await
        .unwrap()
        .iter()
        .any(|m| m.data.content == "dropped")
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the opening was never stored"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

async fn corrupt_json(h: Harness) {
    let store = h.store();
    let conversation = alices_tutor_conversation(store).await;
    let healthy = store
        .create_conversation(&new_conversation("bob", "tutor"))
        .await
        .unwrap();
    let turn = turn_id();
    let id = store
        .record_message(&valid_attempt(&conversation, &turn, 1, "ok"))
        .await
        .unwrap();
    store
        .record_message(&valid_attempt(&healthy, &turn_id(), 1, "ok"))
        .await
        .unwrap();

    // JSON of the wrong shape (both backends can hold it).
    h.raw()
        .await
        .set_violations(id, r#"{"not": "a list"}"#)
        .await;
    for view in [View::User, View::Admin] {
        let error = store.messages(&conversation.id, view).await.unwrap_err();
        let names_the_field = |what: &str| {
            what.contains("messages.violations") && what.contains(&format!("\"{id}\""))
        };
        assert!(
            matches!(&error, StoreError::Corrupt(what) if names_the_field(what)),
            "{error}"
        );
    }
    // Only that conversation's messages are affected.
    assert_eq!(
        store
            .messages(&healthy.id, View::Admin)
            .await
            .unwrap()
            .len(),
        1
    );

    // Text that is not JSON at all, where the backend can hold it.
    if h.raw()
        .await
        .set_context_text(&conversation.id, "{\"page\": \"lesson")
        .await
    {
        let error = store.conversation(&conversation.id).await.unwrap_err();
        assert!(
            matches!(&error, StoreError::Corrupt(what) if what.contains("conversations.context")),
            "{error}"
        );
        let error = store
            .list_conversations(&ConversationFilter::default(), everything())
            .await
            .unwrap_err();
        assert!(
            matches!(&error, StoreError::Corrupt(what) if what.contains("conversations.context")),
            "{error}"
        );
        h.raw().await.set_violations(id, "not json").await;
        let error = store
            .messages(&conversation.id, View::Admin)
            .await
            .unwrap_err();
        assert!(
            matches!(&error, StoreError::Corrupt(what) if what.contains("messages.violations")),
            "{error}"
        );
    }
    assert!(store.conversation(&healthy.id).await.unwrap().is_some());
}

async fn safety_events(h: Harness) {
    let store = h.store();
    let conversation = alices_tutor_conversation(store).await;
    let other = store
        .create_conversation(&new_conversation("bob", "tutor"))
        .await
        .unwrap();
    let message = store
        .record_message(&user_message(&conversation, &turn_id(), "help"))
        .await
        .unwrap();
    let events = [
        NewSafetyEvent {
            conversation_id: conversation.id.clone(),
            message_id: Some(message),
            level: "critical".into(),
            concerns: json!([{"kind": "self_harm", "quote": "I can't go on…"}]),
            action: "notify".into(),
            notified_at: Some(bridle_store::now_ms()),
        },
        NewSafetyEvent {
            conversation_id: conversation.id.clone(),
            message_id: None,
            level: "emergency".into(),
            concerns: json!({"kinds": ["violence"], "score": 0.97}),
            action: "block".into(),
            notified_at: None,
        },
    ];
    let before = bridle_store::now_ms();
    let mut stored_ids = Vec::new();
    for event in &events {
        stored_ids.push(store.record_safety_event(event).await.unwrap());
    }
    let after = bridle_store::now_ms();
    store
        .record_safety_event(&NewSafetyEvent {
            conversation_id: other.id.clone(),
            ..events[1].clone()
        })
        .await
        .unwrap();

    let stored = store.safety_events(&conversation.id).await.unwrap();
    assert_eq!(stored.iter().map(|e| e.id).collect::<Vec<_>>(), stored_ids);
    for (stored, event) in stored.iter().zip(&events) {
        assert_eq!(&stored.data, event);
        assert!((before..=after).contains(&stored.created_at));
    }
    assert_eq!(store.safety_events(&other.id).await.unwrap().len(), 1);
    assert!(
        store
            .safety_events("no-such-conversation")
            .await
            .unwrap()
            .is_empty()
    );
}

/// The readiness probe writes and commits, however often it runs, one row.
async fn probe_write_commits_one_row(h: Harness) {
    for _ in 0..3 {
        h.store.probe_write().await.unwrap();
    }
    assert_eq!(h.raw.health_rows().await, 1);
}

async fn reopen(h: Harness) {
    let Harness {
        store,
        url,
        raw,
        place,
    } = h;
    let conversation = alices_tutor_conversation(&*store).await;
    let id = store
        .record_message(&user_message(&conversation, &turn_id(), "remember me"))
        .await
        .unwrap();
    let conversation = store.conversation(&conversation.id).await.unwrap().unwrap();
    let migrations = match store.backend() {
        "sqlite" => 10,
        _ => 9,
    };
    drop(store);
    assert_eq!(raw.applied_migrations().await, migrations);

    // Opening again applies nothing and finds everything.
    let reopened = bridle_store::open(&url).await.unwrap();
    assert_eq!(raw.applied_migrations().await, migrations);
    assert_eq!(
        reopened.conversation(&conversation.id).await.unwrap(),
        Some(conversation.clone())
    );
    let messages = reopened
        .messages(&conversation.id, View::Admin)
        .await
        .unwrap();
    assert_eq!((messages.len(), messages[0].id), (1, id));

    // A second instance on the same database, side by side, sees the first's writes.
    let second = bridle_store::open(&url).await.unwrap();
    let next = second
        .record_message(&user_message(&conversation, &turn_id(), "again"))
        .await
        .unwrap();
    assert!(next > id);
    assert_eq!(
        reopened
            .messages(&conversation.id, View::User)
            .await
            .unwrap()
            .len(),
        2
    );
    assert_eq!(raw.applied_migrations().await, migrations);
    drop((reopened, second, raw, place));
}

async fn concurrent_writers(h: Harness) {
    const TASKS: usize = 20;
    const MESSAGES: usize = 10;
    let store = Arc::clone(&h.store);
    let mut conversations = Vec::new();
    for i in 0..4 {
        conversations.push(
            store
                .create_conversation(&new_conversation(&format!("user{i}"), "k"))
                .await
                .unwrap(),
        );
    }
    let mut tasks = tokio::task::JoinSet::new();
    for task in 0..TASKS {
        let store = Arc::clone(&store);
        let conversation = conversations[task % conversations.len()].clone();
        tasks.spawn(async move {
            let turn = turn_id();
            let mut written = Vec::new();
            for n in 0..MESSAGES {
                let content = format!("task {task} message {n}");
                written.push(
                    store
                        .record_message(&user_message(&conversation, &turn, &content))
                        .await?,
                );
            }
            Ok::<_, StoreError>(written)
        });
    }
    let mut all = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        let written = joined.unwrap().unwrap();
        assert!(
            written.windows(2).all(|w| w[0] < w[1]),
            "a task's messages keep their order"
        );
        all.extend(written);
    }
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), TASKS * MESSAGES);

    let page = store
        .list_conversations(&ConversationFilter::default(), everything())
        .await
        .unwrap();
    assert_eq!(
        page.items.iter().map(|s| s.message_count).sum::<u64>(),
        (TASKS * MESSAGES) as u64
    );
    for conversation in &conversations {
        let messages = store.messages(&conversation.id, View::Admin).await.unwrap();
        assert_eq!(messages.len(), TASKS / conversations.len() * MESSAGES);
        assert!(message_ids(&messages).is_sorted());
    }
}

async fn large_content(h: Harness) {
    let store = h.store();
    let conversation = alices_tutor_conversation(store).await;
    // About 1 MB of mixed scripts, emoji, quotes, backslashes and control characters (no NUL,
    // which PostgreSQL text cannot hold).
    let piece =
        "Grüße, 世界! 🦀 «ταχύ» \"quoted\" \\back\\slash\t\r\n\u{1}\u{1f}\u{7f}\u{fffd}\u{10ffff} ";
    let mut content = String::new();
    while content.len() < 1 << 20 {
        content.push_str(piece);
    }
    content.push_str("needle-at-the-end");
    let message = NewMessage {
        value: Some(json!({"reply": content, "items": [content.clone()]})),
        raw_response: Some(Value::String(content.clone())),
        ..valid_attempt(&conversation, &turn_id(), 1, "")
    };
    let message = NewMessage {
        content: content.clone(),
        ..message
    };
    let id = store.record_message(&message).await.unwrap();

    let stored = store.messages(&conversation.id, View::Admin).await.unwrap();
    assert_eq!(message_ids(&stored), vec![id]);
    assert_eq!(stored[0].data.content.len(), content.len());
    assert!(
        stored[0].data.content == content,
        "content differs after a round trip"
    );
    assert_eq!(stored[0].data, message);

    let filter = ConversationFilter {
        text: Some("NEEDLE-at-the-END".into()),
        ..Default::default()
    };
    assert_eq!(listed(store, &filter).await, vec![conversation.id.clone()]);

    // NUL cannot be stored by PostgreSQL; whatever the backend, it is never silently mangled.
    let with_nul = NewMessage {
        content: "a\0b".into(),
        ..user_message(&conversation, &turn_id(), "")
    };
    match store.record_message(&with_nul).await {
        Ok(id) => {
            let stored = store.messages(&conversation.id, View::Admin).await.unwrap();
            assert_eq!(
                stored.iter().find(|m| m.id == id).unwrap().data.content,
                "a\0b"
            );
        }
        Err(error) => assert!(
            matches!(
                error,
                StoreError::Database { .. } | StoreError::Unavailable { .. }
            ),
            "{error}"
        ),
    }
}

#[tokio::test]
async fn open_refuses_unusable_urls() {
    for url in [
        "mysql://localhost/db",
        "sqlite::memory:",
        "sqlite://?mode=memory",
        "postgres://h:notaport/db",
    ] {
        let error = bridle_store::open(url).await.unwrap_err();
        assert!(matches!(error, StoreError::Config(_)), "{url}: {error}");
    }
}

// ---------------------------------------------------------------------------------------------
// Statistics
// ---------------------------------------------------------------------------------------------

const MINUTE: i64 = 60_000;
const HOUR: i64 = 60 * MINUTE;
const DAY: i64 = 24 * HOUR;
/// The start of the seeded data: a day boundary (2023-11-15T00:00Z).
const T0: i64 = 472_224 * HOUR;

/// Records `message` as stored at `T0 + minute` minutes; returns its id.
async fn record_at(h: &Harness, message: NewMessage, minute: i64) -> i64 {
    let id = h.store().record_message(&message).await.unwrap();
    h.raw().await.set_created_at(id, T0 + minute * MINUTE).await;
    id
}

fn with_tokens(message: NewMessage, tokens_in: u64, tokens_out: u64) -> NewMessage {
    NewMessage {
        tokens_in: Some(tokens_in),
        tokens_out: Some(tokens_out),
        ..message
    }
}

/// Seeds eight turns on two contracts over two hours (times in minutes after `T0`; tokens in/out;
/// every turn opens with its user message):
///
/// | turn | contract | attempts                                                    | outcome     |
/// |------|----------|-------------------------------------------------------------|-------------|
/// | A    | tutor    | 1 valid @1 (100/10)                                         | first try   |
/// | B    | tutor    | 1 invalid @2 (110/11), 2 valid @3 (120/12, code_fence ×1)   | after retry |
/// | E    | quiz     | 1 provider error @4                                         | failed      |
/// | G    | quiz     | 1 invalid @5 (210/21, own violations), 2 valid @6 (220/22)  | after retry |
/// | H    | tutor    | 1 invalid @59 (130/13), 2 valid @61 (140/14)                | after retry |
/// | C    | tutor    | 1 invalid @70 (150/15), 2 provider error @71, 3 valid @72 (160/16) | after retry |
/// | D    | tutor    | 1–3 invalid @80–82 (170/17, 180/18, 190/19), fallback @83   | fallback    |
/// | F    | quiz     | 1 valid @90 (200/20)                                        | first try   |
///
/// The invalid attempts of the tutor turns break `type` and `required` and had two trailing
/// commas repaired; G's attempt 1 breaks `enum` twice, `maximum`, `maxItems` and `less_than`,
/// and had one trailing comma and three single quotes repaired. H starts in the first hour and
/// ends in the second. The fallback carries an `error`, as Bridle stores it.
async fn seed_turns(h: &Harness) {
    let store = h.store();
    let tutor = store
        .create_conversation(&new_conversation("alice", "tutor"))
        .await
        .unwrap();
    let quiz = store
        .create_conversation(&new_conversation("bob", "quiz"))
        .await
        .unwrap();
    let invalid = |turn: &str, attempt, tokens_in, tokens_out| {
        with_tokens(
            invalid_attempt(&tutor, turn, attempt, "{\"reply\": 7,}"),
            tokens_in,
            tokens_out,
        )
    };
    let valid = |conversation: &Conversation, turn: &str, attempt, tokens_in, tokens_out| {
        with_tokens(
            valid_attempt(conversation, turn, attempt, "ok"),
            tokens_in,
            tokens_out,
        )
    };

    let a = turn_id();
    record_at(h, user_message(&tutor, &a, "A"), 1).await;
    record_at(h, valid(&tutor, &a, 1, 100, 10), 1).await;

    let b = turn_id();
    record_at(h, user_message(&tutor, &b, "B"), 2).await;
    record_at(h, invalid(&b, 1, 110, 11), 2).await;
    let repaired = NewMessage {
        repairs: vec![Repair::text(
            RepairKind::CodeFence,
            1,
            "removed a code fence",
        )],
        ..valid(&tutor, &b, 2, 120, 12)
    };
    record_at(h, repaired, 3).await;

    let e = turn_id();
    record_at(h, user_message(&quiz, &e, "E"), 4).await;
    record_at(h, failed_attempt(&quiz, &e, 1), 4).await;

    let g = turn_id();
    record_at(h, user_message(&quiz, &g, "G"), 5).await;
    let broken = NewMessage {
        violations: vec![
            Violation::new(
                "/a",
                Rule::Schema(SchemaKeyword::Enum),
                "a must be one of x, y",
            ),
            Violation::new(
                "/b",
                Rule::Schema(SchemaKeyword::Enum),
                "b must be one of x, y",
            ),
            Violation::new(
                "/n",
                Rule::Schema(SchemaKeyword::Maximum),
                "n must be at most 3",
            ),
            Violation::new(
                "/items",
                Rule::Schema(SchemaKeyword::MaxItems),
                "at most 2 items",
            ),
            Violation::new("", Rule::LessThan, "a must be less than b"),
        ],
        repairs: vec![
            Repair::text(RepairKind::TrailingComma, 1, "removed a trailing comma"),
            Repair::text(RepairKind::SingleQuote, 3, "replaced 3 single quotes"),
        ],
        ..with_tokens(invalid_attempt(&quiz, &g, 1, "{'a': 'z',}"), 210, 21)
    };
    record_at(h, broken, 5).await;
    record_at(h, valid(&quiz, &g, 2, 220, 22), 6).await;

    let hh = turn_id();
    record_at(h, user_message(&tutor, &hh, "H"), 59).await;
    record_at(h, invalid(&hh, 1, 130, 13), 59).await;
    record_at(h, valid(&tutor, &hh, 2, 140, 14), 61).await;

    let c = turn_id();
    record_at(h, user_message(&tutor, &c, "C"), 70).await;
    record_at(h, invalid(&c, 1, 150, 15), 70).await;
    record_at(h, failed_attempt(&tutor, &c, 2), 71).await;
    record_at(h, valid(&tutor, &c, 3, 160, 16), 72).await;

    let d = turn_id();
    record_at(h, user_message(&tutor, &d, "D"), 80).await;
    record_at(h, invalid(&d, 1, 170, 17), 80).await;
    record_at(h, invalid(&d, 2, 180, 18), 81).await;
    record_at(h, invalid(&d, 3, 190, 19), 82).await;
    let fell_back = NewMessage {
        error: Some("fallback after 3 attempt(s): /reply: reply must be a string".into()),
        ..fallback(&tutor, &d)
    };
    record_at(h, fell_back, 83).await;

    let f = turn_id();
    record_at(h, user_message(&quiz, &f, "F"), 90).await;
    record_at(h, valid(&quiz, &f, 1, 200, 20), 90).await;
}

/// Turns by outcome: (first try valid, valid after retry, fallback, failed).
fn outcomes(
    first_try_valid: u64,
    valid_after_retry: u64,
    fallback: u64,
    failed: u64,
) -> TurnOutcomes {
    TurnOutcomes {
        turns: first_try_valid + valid_after_retry + fallback + failed,
        first_try_valid,
        valid_after_retry,
        fallback,
        failed,
    }
}

fn bucket(start: i64, outcomes: TurnOutcomes) -> ComplianceBucket {
    ComplianceBucket { start, outcomes }
}

fn per_attempts(counts: &[(u32, u64)]) -> Vec<AttemptsCount> {
    counts
        .iter()
        .map(|&(attempts, turns)| AttemptsCount { attempts, turns })
        .collect()
}

fn rules(counts: &[(&str, u64)]) -> Vec<RuleCount> {
    counts
        .iter()
        .map(|&(rule, count)| RuleCount {
            rule: Rule::from_name(rule),
            count,
        })
        .collect()
}

fn repairs(counts: &[(&str, u64)]) -> Vec<RepairCount> {
    counts
        .iter()
        .map(|&(kind, count)| RepairCount {
            kind: RepairKind::from_name(kind),
            count,
        })
        .collect()
}

/// The seeded attempts all went to one model: `attempts` of them, `valid` validated, none by
/// escalation or failover.
fn one_model(attempts: u64, valid: u64) -> Vec<ModelCount> {
    vec![ModelCount {
        model: "gpt-test".into(),
        attempts,
        valid,
        escalations: 0,
        failovers: 0,
    }]
}

fn range(from: Option<i64>, to: Option<i64>, contract: Option<&str>) -> StatsQuery {
    StatsQuery {
        from,
        to,
        contract: contract.map(str::to_owned),
        bucket_ms: HOUR,
    }
}

/// Every figure of the seeded turns, both hours, both contracts.
fn all_seeded() -> Stats {
    let totals = outcomes(2, 4, 1, 1);
    Stats {
        compliance: Compliance {
            bucket_ms: HOUR,
            series: vec![
                // A; B, G, H (started in this hour, ended in the next); E.
                bucket(T0, outcomes(1, 3, 0, 1)),
                // F; C; D.
                bucket(T0 + HOUR, outcomes(1, 1, 1, 0)),
            ],
            totals,
            compliance_rate: 0.75,
        },
        // A, E, F; B, G, H; C, D (the fallback is not an attempt).
        attempts_per_turn: per_attempts(&[(1, 3), (2, 3), (3, 2)]),
        // `type` and `required`: B, H, C once, D three times. G's two `enum`s count once. Ties in
        // code-point order (`maxItems` before `maximum`, whatever the database's collation).
        top_violated_rules: rules(&[
            ("required", 6),
            ("type", 6),
            ("enum", 1),
            ("less_than", 1),
            ("maxItems", 1),
            ("maximum", 1),
        ]),
        // 2 × (B, H, C, D × 3) + G's 1; G's 3; B's valid attempt's 1.
        repairs_by_kind: repairs(&[
            ("trailing_comma", 13),
            ("single_quote", 3),
            ("code_fence", 1),
        ]),
        tokens: TokenUsage {
            total_in: 2080,
            total_out: 208,
            // All but the final valid attempts of A, B, G, H, C, F (100 + 120 + 220 + 140 + 160
            // + 200 = 940 in).
            retries_in: 1140,
            retries_out: 114,
        },
        turns: 8,
        attempts: 15,
        // B, G, H, C: attempt 1; C's provider error; D's three; E's provider error.
        invalid_attempts: 9,
        // C's and E's; not D's fallback.
        provider_errors: 2,
        streaming: StreamingStats::default(),
        models: one_model(15, 6),
    }
}

async fn stats_counts_every_outcome(h: Harness) {
    seed_turns(&h).await;
    let store = h.store();
    let both_hours = range(Some(T0), Some(T0 + 2 * HOUR), None);
    assert_eq!(store.stats(&both_hours).await.unwrap(), all_seeded());

    // An open range runs from the first stored attempt (T0 + 1 min) to the last (T0 + 90 min):
    // the same two hours.
    assert_eq!(
        store.stats(&range(None, None, None)).await.unwrap(),
        all_seeded()
    );
    assert_eq!(
        store.stats(&range(Some(T0), None, None)).await.unwrap(),
        all_seeded()
    );
    assert_eq!(
        store
            .stats(&range(None, Some(T0 + 2 * HOUR), None))
            .await
            .unwrap(),
        all_seeded()
    );

    // Serialised for the console as documented.
    let json = serde_json::to_value(store.stats(&both_hours).await.unwrap()).unwrap();
    assert_eq!(
        json["compliance"]["series"][1],
        json!({"start": T0 + HOUR, "turns": 3, "first_try_valid": 1, "valid_after_retry": 1,
            "fallback": 1, "failed": 0})
    );
    assert_eq!(json["compliance"]["compliance_rate"], 0.75);
    assert_eq!(
        json["top_violated_rules"][0],
        json!({"rule": "required", "count": 6})
    );
    assert_eq!(
        json["attempts_per_turn"][2],
        json!({"attempts": 3, "turns": 2})
    );
}

async fn stats_filters(h: Harness) {
    seed_turns(&h).await;
    let store = h.store();

    let tutor = Stats {
        compliance: Compliance {
            bucket_ms: HOUR,
            series: vec![
                bucket(T0, outcomes(1, 2, 0, 0)),
                bucket(T0 + HOUR, outcomes(0, 1, 1, 0)),
            ],
            totals: outcomes(1, 3, 1, 0),
            compliance_rate: 0.8,
        },
        attempts_per_turn: per_attempts(&[(1, 1), (2, 2), (3, 2)]),
        top_violated_rules: rules(&[("required", 6), ("type", 6)]),
        repairs_by_kind: repairs(&[("trailing_comma", 12), ("code_fence", 1)]),
        tokens: TokenUsage {
            total_in: 1450,
            total_out: 145,
            retries_in: 930,
            retries_out: 93,
        },
        turns: 5,
        attempts: 11,
        invalid_attempts: 7,
        provider_errors: 1,
        streaming: StreamingStats::default(),
        models: one_model(11, 4),
    };
    assert_eq!(
        store
            .stats(&range(None, None, Some("tutor")))
            .await
            .unwrap(),
        tutor
    );

    // Quiz turns start at 4 (E) and end at 90 (F): still both hours.
    let quiz = Stats {
        compliance: Compliance {
            bucket_ms: HOUR,
            series: vec![
                bucket(T0, outcomes(0, 1, 0, 1)),
                bucket(T0 + HOUR, outcomes(1, 0, 0, 0)),
            ],
            totals: outcomes(1, 1, 0, 1),
            compliance_rate: 2.0 / 3.0,
        },
        attempts_per_turn: per_attempts(&[(1, 2), (2, 1)]),
        top_violated_rules: rules(&[
            ("enum", 1),
            ("less_than", 1),
            ("maxItems", 1),
            ("maximum", 1),
        ]),
        repairs_by_kind: repairs(&[("single_quote", 3), ("trailing_comma", 1)]),
        tokens: TokenUsage {
            total_in: 630,
            total_out: 63,
            retries_in: 210,
            retries_out: 21,
        },
        turns: 3,
        attempts: 4,
        invalid_attempts: 2,
        provider_errors: 1,
        streaming: StreamingStats::default(),
        models: one_model(4, 2),
    };
    assert_eq!(
        store.stats(&range(None, None, Some("quiz"))).await.unwrap(),
        quiz
    );

    // The second hour: C, D, F. H's valid attempt (@61) is in it, but H started before.
    let second_hour = Stats {
        compliance: Compliance {
            bucket_ms: HOUR,
            series: vec![bucket(T0 + HOUR, outcomes(1, 1, 1, 0))],
            totals: outcomes(1, 1, 1, 0),
            compliance_rate: 2.0 / 3.0,
        },
        attempts_per_turn: per_attempts(&[(1, 1), (3, 2)]),
        top_violated_rules: rules(&[("required", 4), ("type", 4)]),
        repairs_by_kind: repairs(&[("trailing_comma", 8)]),
        tokens: TokenUsage {
            total_in: 1050,
            total_out: 105,
            retries_in: 690,
            retries_out: 69,
        },
        turns: 3,
        attempts: 7,
        invalid_attempts: 5,
        provider_errors: 1,
        streaming: StreamingStats::default(),
        models: one_model(7, 2),
    };
    assert_eq!(
        store
            .stats(&range(Some(T0 + HOUR), Some(T0 + 2 * HOUR), None))
            .await
            .unwrap(),
        second_hour
    );
    // Open-ended: up to the last attempt.
    assert_eq!(
        store
            .stats(&range(Some(T0 + HOUR), None, None))
            .await
            .unwrap(),
        second_hour
    );

    // The first hour: A, B, E, G and all of H, whose valid attempt came after `to`.
    let first_hour = store
        .stats(&range(Some(T0), Some(T0 + HOUR), None))
        .await
        .unwrap();
    assert_eq!(
        first_hour.compliance.series,
        vec![bucket(T0, outcomes(1, 3, 0, 1))]
    );
    assert_eq!(
        first_hour.attempts_per_turn,
        per_attempts(&[(1, 2), (2, 3)])
    );
    assert_eq!(
        first_hour.tokens,
        TokenUsage {
            total_in: 100 + 110 + 120 + 210 + 220 + 130 + 140,
            total_out: 10 + 11 + 12 + 21 + 22 + 13 + 14,
            retries_in: 110 + 210 + 130,
            retries_out: 11 + 21 + 13,
        }
    );
    assert_eq!(
        (
            first_hour.turns,
            first_hour.attempts,
            first_hour.invalid_attempts,
            first_hour.provider_errors
        ),
        (5, 8, 4, 1)
    );

    // `from` is inclusive and `to` exclusive, to the millisecond: [@2, @5 + 1 ms) holds B, E and
    // G; [@2 + 1 ms, @5) holds E alone.
    let narrow = store
        .stats(&range(
            Some(T0 + 2 * MINUTE),
            Some(T0 + 5 * MINUTE + 1),
            None,
        ))
        .await
        .unwrap();
    assert_eq!(narrow.compliance.totals, outcomes(0, 2, 0, 1));
    let narrower = store
        .stats(&range(
            Some(T0 + 2 * MINUTE + 1),
            Some(T0 + 5 * MINUTE),
            None,
        ))
        .await
        .unwrap();
    assert_eq!(narrower.compliance.totals, outcomes(0, 0, 0, 1));

    // A contract and a range together: the quiz turns of the second hour (F).
    let combined = store
        .stats(&range(Some(T0 + HOUR), Some(T0 + 2 * HOUR), Some("quiz")))
        .await
        .unwrap();
    assert_eq!(combined.compliance.totals, outcomes(1, 0, 0, 0));
    assert_eq!(combined.compliance.compliance_rate, 1.0);
    assert_eq!(
        (combined.tokens.total_in, combined.tokens.retries_in),
        (200, 0)
    );
    assert!(combined.top_violated_rules.is_empty() && combined.repairs_by_kind.is_empty());

    // An unknown contract: nothing, over the range asked for.
    let unknown = store
        .stats(&range(Some(T0), Some(T0 + 2 * HOUR), Some("nope")))
        .await
        .unwrap();
    assert_eq!(
        unknown.compliance.series,
        vec![
            bucket(T0, TurnOutcomes::default()),
            bucket(T0 + HOUR, TurnOutcomes::default())
        ]
    );
    assert_eq!(
        (unknown.turns, unknown.compliance.compliance_rate),
        (0, 0.0)
    );
}

async fn stats_buckets(h: Harness) {
    seed_turns(&h).await;
    let store = h.store();

    // Too small a bucket is a minute: one bucket per minute of the two hours.
    let by_minute = store
        .stats(&StatsQuery {
            bucket_ms: 1,
            ..range(Some(T0), Some(T0 + 2 * HOUR), None)
        })
        .await
        .unwrap();
    assert_eq!(by_minute.compliance.bucket_ms, MINUTE);
    assert_eq!(by_minute.compliance.series.len(), 120);
    let busy: Vec<(i64, TurnOutcomes)> = by_minute
        .compliance
        .series
        .iter()
        .enumerate()
        .filter(|(_, b)| b.outcomes.turns > 0)
        .map(|(i, b)| {
            assert_eq!(b.start, T0 + i64::try_from(i).unwrap() * MINUTE);
            ((b.start - T0) / MINUTE, b.outcomes)
        })
        .collect();
    assert_eq!(
        busy,
        vec![
            (1, outcomes(1, 0, 0, 0)),
            (2, outcomes(0, 1, 0, 0)),
            (4, outcomes(0, 0, 0, 1)),
            (5, outcomes(0, 1, 0, 0)),
            (59, outcomes(0, 1, 0, 0)),
            (70, outcomes(0, 1, 0, 0)),
            (80, outcomes(0, 0, 1, 0)),
            (90, outcomes(1, 0, 0, 0)),
        ]
    );
    assert_eq!(by_minute.compliance.totals, all_seeded().compliance.totals);

    // Unaligned bounds: the buckets stay on the hour, the first holding `from`.
    let unaligned = store
        .stats(&range(Some(T0 + 30 * MINUTE), Some(T0 + 90 * MINUTE), None))
        .await
        .unwrap();
    assert_eq!(
        unaligned.compliance.series,
        vec![
            bucket(T0, outcomes(0, 1, 0, 0)),
            bucket(T0 + HOUR, outcomes(0, 1, 1, 0)),
        ]
    );

    // A bucket wider than the data: one, from midnight.
    let whole = store
        .stats(&StatsQuery {
            bucket_ms: 24 * HOUR,
            ..range(None, None, None)
        })
        .await
        .unwrap();
    assert_eq!(
        whole.compliance.series,
        vec![bucket(T0, outcomes(2, 4, 1, 1))]
    );

    // Since 1970 by the minute: widened to a multiple of a minute, at most 1000 buckets.
    let since_epoch = store
        .stats(&StatsQuery {
            bucket_ms: MINUTE,
            ..range(Some(0), Some(T0 + 2 * HOUR), None)
        })
        .await
        .unwrap();
    let width = since_epoch.compliance.bucket_ms;
    assert_eq!(width % MINUTE, 0);
    assert!(width * 999 < T0 + 2 * HOUR, "{width}");
    let series = &since_epoch.compliance.series;
    assert!(series.len() <= bridle_store::MAX_BUCKETS as usize && series.len() >= 999);
    assert_eq!(series[0].start, 0);
    assert!(series.windows(2).all(|w| w[1].start - w[0].start == width));
    assert!(series.last().unwrap().start + width >= T0 + 2 * HOUR);
    let seeded: u64 = series.iter().map(|b| b.outcomes.turns).sum();
    assert_eq!(seeded, 8);
    assert_eq!(
        since_epoch.compliance.totals,
        all_seeded().compliance.totals
    );
}

async fn stats_empty(h: Harness) {
    let store = h.store();
    let nothing = Stats {
        compliance: Compliance {
            bucket_ms: HOUR,
            series: Vec::new(),
            totals: TurnOutcomes::default(),
            compliance_rate: 0.0,
        },
        attempts_per_turn: Vec::new(),
        top_violated_rules: Vec::new(),
        repairs_by_kind: Vec::new(),
        tokens: TokenUsage::default(),
        turns: 0,
        attempts: 0,
        invalid_attempts: 0,
        provider_errors: 0,
        streaming: StreamingStats::default(),
        models: Vec::new(),
    };
    assert_eq!(store.stats(&StatsQuery::default()).await.unwrap(), nothing);
    assert_eq!(
        store
            .stats(&range(Some(T0), None, Some("tutor")))
            .await
            .unwrap(),
        nothing
    );
    // A closed range has its buckets, all empty.
    let closed = store
        .stats(&range(Some(T0), Some(T0 + 2 * HOUR), None))
        .await
        .unwrap();
    assert_eq!(
        closed,
        Stats {
            compliance: Compliance {
                series: vec![
                    bucket(T0, TurnOutcomes::default()),
                    bucket(T0 + HOUR, TurnOutcomes::default()),
                ],
                ..nothing.compliance.clone()
            },
            ..nothing.clone()
        }
    );
    // An empty or inverted range has none.
    for (from, to) in [(T0, T0), (T0 + HOUR, T0)] {
        assert_eq!(
            store
                .stats(&range(Some(from), Some(to), None))
                .await
                .unwrap(),
            nothing
        );
    }

    // User messages alone make no turn.
    let conversation = alices_tutor_conversation(store).await;
    store
        .record_message(&user_message(&conversation, &turn_id(), "anyone?"))
        .await
        .unwrap();
    assert_eq!(store.stats(&StatsQuery::default()).await.unwrap(), nothing);
}

async fn stats_skip_malformed_json(h: Harness) {
    let store = h.store();
    let conversation = alices_tutor_conversation(store).await;
    let turn = turn_id();
    let first = record_at(&h, invalid_attempt(&conversation, &turn, 1, "x"), 1).await;
    let second = record_at(&h, invalid_attempt(&conversation, &turn, 2, "y"), 2).await;
    let third = record_at(&h, invalid_attempt(&conversation, &turn, 3, "z"), 3).await;

    // Elements that are not violations or repairs, and arrays that are not arrays.
    h.raw()
        .await
        .set_violations(
            first,
            r#"[1, "parse", null, [{"rule": "nested"}], {"rule": 5}, {"path": ""},
                {"rule": "parse", "path": "", "message": "not JSON"}]"#,
        )
        .await;
    h.raw()
        .await
        .set_repairs(
            first,
            r#"[{"kind": "minus", "count": -1}, {"kind": "half", "count": 1.5},
                {"kind": 3, "count": 1}, {"kind": "big", "count": "2"}, "comment",
                {"kind": "comment", "count": 4}]"#,
        )
        .await;
    h.raw()
        .await
        .set_violations(second, r#"{"rule": "type", "path": ""}"#)
        .await;
    h.raw()
        .await
        .set_repairs(second, r#"{"kind": "comment", "count": 1}"#)
        .await;
    h.raw().await.set_violations(third, r#""type""#).await;

    let stats = store.stats(&range(None, None, None)).await.unwrap();
    assert_eq!(stats.top_violated_rules, rules(&[("parse", 1)]));
    assert_eq!(
        stats.repairs_by_kind,
        repairs(&[("comment", 4), ("trailing_comma", 2)])
    );
    assert_eq!(
        (stats.turns, stats.attempts, stats.invalid_attempts),
        (1, 3, 3)
    );

    // Text that is not JSON at all, where the backend can hold it.
    if h.raw().await.set_context_text(&conversation.id, "{").await {
        h.raw().await.set_violations(second, "not json").await;
        h.raw()
            .await
            .set_violations(third, "[{\"rule\": \"cut")
            .await;
        let stats = store.stats(&range(None, None, None)).await.unwrap();
        assert_eq!(stats.top_violated_rules, rules(&[("parse", 1)]));
    }
}

// ---------------------------------------------------------------------------------------------
// Retention
// ---------------------------------------------------------------------------------------------

async fn retention_purges_payloads_and_keeps_outcomes(h: Harness) {
    let store = h.store();
    let conversation = alices_tutor_conversation(store).await;
    let (old_turn, new_turn) = (turn_id(), turn_id());
    let question = record_at(&h, user_message(&conversation, &old_turn, "hi"), 0).await;
    let invalid = record_at(&h, invalid_attempt(&conversation, &old_turn, 1, "{"), 1).await;
    let valid = record_at(&h, valid_attempt(&conversation, &old_turn, 2, "ok"), 2).await;
    let recent = record_at(&h, valid_attempt(&conversation, &new_turn, 1, "new"), 100).await;
    let before_purge = store.messages(&conversation.id, View::Admin).await.unwrap();

    let range = |limit| PurgeRange {
        from: 0,
        before: T0 + 50 * MINUTE,
        limit,
    };
    // Oldest first, at most `limit` at a time; then nothing is left before the cut.
    let first = store.purge_payloads(range(1)).await.unwrap();
    assert_eq!(
        first,
        Purged {
            count: 1,
            through: Some(T0 + MINUTE)
        }
    );
    let second = store.purge_payloads(range(500)).await.unwrap();
    assert_eq!(
        second,
        Purged {
            count: 1,
            through: Some(T0 + 2 * MINUTE)
        }
    );
    assert_eq!(
        store.purge_payloads(range(500)).await.unwrap(),
        Purged::default()
    );

    let after = store.messages(&conversation.id, View::Admin).await.unwrap();
    for (was, now) in before_purge.iter().zip(&after) {
        if now.id == invalid || now.id == valid {
            assert_eq!(now.data.request_payload, None, "message {}", now.id);
            assert_eq!(now.data.raw_response, None, "message {}", now.id);
            assert!(now.payload_purged_at.is_some(), "message {}", now.id);
            // The validation outcome is kept whole.
            let kept = NewMessage {
                request_payload: None,
                raw_response: None,
                ..was.data.clone()
            };
            assert_eq!(now.data, kept, "message {}", now.id);
        } else {
            assert!(now.id == question || now.id == recent);
            assert_eq!(now, was, "message {} is untouched", now.id);
        }
    }
    // Users' history and statistics read the outcome, which stays.
    let user_view = store.messages(&conversation.id, View::User).await.unwrap();
    assert_eq!(message_ids(&user_view), vec![question, valid, recent]);
}

async fn retention_sweeps_in_batches(h: Harness) {
    let store = h.store();
    let conversation = alices_tutor_conversation(store).await;
    let count = bridle_store::retention::BATCH + 20;
    for n in 0..count {
        let turn = turn_id();
        let id = store
            .record_message(&valid_attempt(&conversation, &turn, 1, "x"))
            .await
            .unwrap();
        h.raw().await.set_created_at(id, T0 + i64::from(n)).await;
    }
    let kept = store
        .record_message(&valid_attempt(&conversation, &turn_id(), 1, "kept"))
        .await
        .unwrap();
    h.raw().await.set_created_at(kept, T0 + HOUR).await;

    let batches = std::sync::Mutex::new(Vec::new());
    let on_batch = |purged| batches.lock().unwrap().push(purged);
    let mut retention = bridle_store::retention::Retention::new(1);
    let cut = T0 + MINUTE;
    let purged = retention.sweep_before(store, &on_batch, cut).await.unwrap();
    assert_eq!(purged, u64::from(count));
    assert_eq!(
        *batches.lock().unwrap(),
        vec![u64::from(bridle_store::retention::BATCH), 20]
    );
    assert_eq!(
        retention.sweep_before(store, &on_batch, cut).await.unwrap(),
        0
    );

    let stored = store.messages(&conversation.id, View::Admin).await.unwrap();
    let with_payload: Vec<i64> = stored
        .iter()
        .filter(|m| m.data.request_payload.is_some())
        .map(|m| m.id)
        .collect();
    assert_eq!(with_payload, vec![kept]);
    assert_eq!(retention.cutoff(T0 + 2 * DAY), T0 + DAY);
}

// ---------------------------------------------------------------------------------------------
// Long prompts (each distinct one stored once)
// ---------------------------------------------------------------------------------------------

/// A valid attempt whose request (shaped as a provider's payload) has `system` as its system
/// prompt.
pub(crate) fn attempt_with_prompt(
    conversation: &Conversation,
    turn_id: &str,
    attempt: u32,
    system: &str,
) -> NewMessage {
    NewMessage {
        request_payload: Some(json!({
            "provider": "openai",
            "url": "http://127.0.0.1:9/v1/chat/completions",
            "headers": {"authorization": "[REDACTED]"},
            "body": {
                "model": "gpt-test",
                "messages": [
                    {"role": "system", "content": system},
                    {"role": "user", "content": "hi"},
                ],
            },
        })),
        ..valid_attempt(conversation, turn_id, attempt, "ok")
    }
}

/// A prompt of `bytes` bytes that differs from another of the same size by `seed`, with text
/// JSON must escape (quotes, a backslash, a newline, a non-ASCII letter).
pub(crate) fn prompt(seed: char, bytes: usize) -> String {
    let mut text = format!("You answer as \"{seed}\" in JSON\\only.\nÉtape: ");
    while text.len() < bytes {
        text.push(seed);
    }
    text
}

async fn long_prompts_read_back_whole(h: Harness) {
    let store = h.store();
    let conversation = alices_tutor_conversation(store).await;
    let (a, b) = (prompt('a', 6_000), prompt('b', 6_000));
    let turn = turn_id();
    let written = [
        attempt_with_prompt(&conversation, &turn, 1, &a),
        attempt_with_prompt(&conversation, &turn, 2, &a),
        attempt_with_prompt(&conversation, &turn_id(), 1, &b),
        attempt_with_prompt(&conversation, &turn_id(), 1, "short"),
    ];
    let mut ids = Vec::new();
    for message in &written {
        ids.push(store.record_message(message).await.unwrap());
    }
    let read = store.messages(&conversation.id, View::Admin).await.unwrap();
    assert_eq!(message_ids(&read), ids);
    for (message, was) in read.iter().zip(&written) {
        assert_eq!(&message.data, was, "message {}", message.id);
    }
    for (id, was) in ids.iter().zip(&written) {
        let one = store.message(*id).await.unwrap().unwrap();
        assert_eq!(&one.data, was, "message {id}");
    }
    let user_view = store.messages(&conversation.id, View::User).await.unwrap();
    assert_eq!(message_ids(&user_view), ids);
}

impl Harness {
    /// A query's single integer (SQL both backends read alike), once every answered write is
    /// committed.
    pub(crate) async fn count(&self, sql: &'static str) -> i64 {
        match self.raw().await {
            Raw::Sqlite(db) => sqlite(db).query_row(sql, [], |row| row.get(0)).unwrap(),
            Raw::Postgres(pool) => sqlx::query_scalar::<_, Option<i64>>(sql)
                .fetch_one(pool)
                .await
                .unwrap()
                .unwrap_or(0),
        }
    }
}

on_both_backends! {
    stores_each_distinct_prompt_once_and_retention_drops_unused_ones:
        sqlite_stores_each_distinct_prompt_once_and_retention_drops_unused_ones,
        postgres_stores_each_distinct_prompt_once_and_retention_drops_unused_ones;
}

async fn stores_each_distinct_prompt_once_and_retention_drops_unused_ones(h: Harness) {
    let store = h.store();
    let conversation = alices_tutor_conversation(store).await;
    let (a, b) = (prompt('a', 10_000), prompt('b', 10_000));
    let turn = turn_id();
    let first_a = attempt_with_prompt(&conversation, &turn, 1, &a);
    record_at(&h, first_a, 0).await;
    record_at(&h, attempt_with_prompt(&conversation, &turn, 2, &a), 1).await;
    record_at(&h, attempt_with_prompt(&conversation, &turn_id(), 1, &b), 2).await;
    record_at(
        &h,
        attempt_with_prompt(&conversation, &turn_id(), 1, "short"),
        3,
    )
    .await;

    assert_eq!(h.count("SELECT COUNT(*) FROM prompts").await, 2);
    assert_eq!(
        h.count("SELECT CAST(SUM(octet_length(text)) AS BIGINT) FROM prompts")
            .await,
        20_000
    );
    // No stored request holds a prompt: each is ~300 bytes, with "" where the prompt was.
    assert!(
        h.count("SELECT CAST(MAX(length(CAST(request_payload AS TEXT))) AS BIGINT) FROM messages")
            .await
            < 500
    );
    assert_eq!(
        h.count("SELECT COUNT(*) FROM messages WHERE prompt_pointer = '/body/messages/0/content'")
            .await,
        3
    );

    // Purging the first of the two requests that use `a` keeps `a`; purging the rest drops both.
    let range = |minutes, limit| PurgeRange {
        from: 0,
        before: T0 + minutes * MINUTE,
        limit,
    };
    assert_eq!(store.purge_payloads(range(1, 500)).await.unwrap().count, 1);
    assert_eq!(h.count("SELECT COUNT(*) FROM prompts").await, 2);
    let second_a = store.messages(&conversation.id, View::Admin).await.unwrap();
    assert_eq!(
        second_a[1].data.request_payload.as_ref().unwrap()["body"]["messages"][0]["content"],
        json!(a)
    );
    assert_eq!(store.purge_payloads(range(60, 500)).await.unwrap().count, 3);
    assert_eq!(h.count("SELECT COUNT(*) FROM prompts").await, 0);
    assert_eq!(
        h.count("SELECT COUNT(*) FROM messages WHERE prompt_hash IS NOT NULL")
            .await,
        0
    );
    let purged = store.messages(&conversation.id, View::Admin).await.unwrap();
    assert!(purged.iter().all(|m| m.data.request_payload.is_none()));

    // A prompt used again after its last user was purged is stored again.
    record_at(
        &h,
        attempt_with_prompt(&conversation, &turn_id(), 1, &a),
        90,
    )
    .await;
    assert_eq!(h.count("SELECT COUNT(*) FROM prompts").await, 1);
    let last = store.messages(&conversation.id, View::Admin).await.unwrap();
    assert_eq!(
        last[4].data.request_payload.as_ref().unwrap()["body"]["messages"][0]["content"],
        json!(a)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_a_prompt_that_cannot_be_put_back_is_a_corrupt_row_not_a_panic() {
    let h = Harness::sqlite().await;
    let store = h.store();
    let conversation = alices_tutor_conversation(store).await;
    let id = store
        .record_message(&attempt_with_prompt(
            &conversation,
            &turn_id(),
            1,
            &prompt('a', 2_000),
        ))
        .await
        .unwrap();
    let Raw::Sqlite(db) = &h.raw else {
        unreachable!()
    };
    sqlite(db)
        .execute(
            "UPDATE messages SET prompt_pointer = '/body/nowhere' WHERE id = ?",
            [id],
        )
        .unwrap();
    let error = store.message(id).await.unwrap_err();
    assert!(
        matches!(&error, StoreError::Corrupt(text) if text.contains("prompt_pointer")
            && text.contains("/body/nowhere")),
        "{error}"
    );
    assert!(store.messages(&conversation.id, View::Admin).await.is_err());
}
