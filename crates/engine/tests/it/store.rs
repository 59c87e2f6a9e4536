//! The attempt store's suite, written once and run against both backends: SQLite (a file in a
//! temporary directory) and a real PostgreSQL (a fresh database per test, dropped afterwards even
//! when the test fails; admin URL from `BRIDLE_TEST_POSTGRES_URL`, default
//! `postgres://postgres@127.0.0.1:5432/test`). Each behaviour is one `async fn` taking a
//! [`Harness`]; `on_both_backends!` makes a `sqlite_<behaviour>` and a `postgres_<behaviour>` test.

#![allow(clippy::unwrap_used)]

use bridle_core::{Repair, Violation};
use bridle_engine::store::{
    self, Conversation, ConversationFilter, ConversationStatus, Message, MessageRole,
    NewConversation, NewMessage, NewSafetyEvent, PageRequest, Store, StoreError, View,
};
use serde_json::{Value, json};
use sqlx::{AssertSqlSafe, Connection, Executor, PgConnection, PgPool, SqlitePool};
use std::sync::Arc;
use std::time::Duration;

const DEFAULT_POSTGRES_URL: &str = "postgres://postgres@127.0.0.1:5432/test";

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
    corrupt_json: sqlite_corrupt_json, postgres_corrupt_json;
    safety_events: sqlite_safety_events, postgres_safety_events;
    reopen: sqlite_reopen, postgres_reopen;
    concurrent_writers: sqlite_concurrent_writers, postgres_concurrent_writers;
    large_content: sqlite_large_content, postgres_large_content;
}

// ---------------------------------------------------------------------------------------------
// Harness
// ---------------------------------------------------------------------------------------------

/// A store under test, a raw connection to its database and the place the database lives.
/// Fields drop in order: the store, the raw pool, then the place (file or database) itself.
struct Harness {
    store: Arc<dyn Store>,
    url: String,
    raw: Raw,
    place: Place,
}

enum Raw {
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

#[allow(dead_code)] // the fields are held for their `Drop`
enum Place {
    Dir(tempfile::TempDir),
    Database(TestDatabase),
}

impl Harness {
    async fn sqlite() -> Self {
        let dir = tempfile::tempdir().unwrap();
        // A directory that does not exist yet: opening creates it.
        let path = dir.path().join("data").join("bridle.db");
        let url = format!("sqlite://{}", path.display());
        let store = store::open(&url).await.unwrap();
        assert_eq!(store.backend(), "sqlite");
        assert!(path.is_file());
        let raw = SqlitePool::connect(&url).await.unwrap();
        let journal: String = sqlx::query_scalar("PRAGMA journal_mode")
            .fetch_one(&raw)
            .await
            .unwrap();
        assert_eq!(journal, "wal");
        Self {
            store: Arc::from(store),
            url,
            raw: Raw::Sqlite(raw),
            place: Place::Dir(dir),
        }
    }

    async fn postgres() -> Self {
        let database = TestDatabase::create().await;
        let url = database.url.clone();
        let store = store::open(&url).await.unwrap();
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
}

impl Raw {
    /// Overwrites a message's `violations` with `json` (valid JSON, so that both backends take it).
    async fn set_violations(&self, message_id: i64, json: &str) {
        let updated = match self {
            Self::Sqlite(pool) => sqlx::query("UPDATE messages SET violations = ? WHERE id = ?")
                .bind(json)
                .bind(message_id)
                .execute(pool)
                .await
                .unwrap()
                .rows_affected(),
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

    /// Overwrites a conversation's `context` with text that is not JSON, where the backend can
    /// hold it (SQLite stores JSON as text; PostgreSQL's JSONB refuses it). Returns whether it did.
    async fn set_context_text(&self, conversation_id: &str, text: &str) -> bool {
        match self {
            Self::Sqlite(pool) => {
                let updated = sqlx::query("UPDATE conversations SET context = ? WHERE id = ?")
                    .bind(text)
                    .bind(conversation_id)
                    .execute(pool)
                    .await
                    .unwrap();
                assert_eq!(updated.rows_affected(), 1);
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

    /// Rows in sqlx's migration table.
    async fn applied_migrations(&self) -> i64 {
        let sql = "SELECT COUNT(*) FROM _sqlx_migrations WHERE success";
        match self {
            Self::Sqlite(pool) => sqlx::query_scalar(sql).fetch_one(pool).await.unwrap(),
            Self::Postgres(pool) => sqlx::query_scalar(sql).fetch_one(pool).await.unwrap(),
        }
    }
}

/// A PostgreSQL database of its own for one test, dropped (`WITH (FORCE)`) when this is dropped.
pub(crate) struct TestDatabase {
    admin_url: String,
    name: String,
    pub(crate) url: String,
}

impl TestDatabase {
    pub(crate) async fn create() -> Self {
        let admin_url = std::env::var("BRIDLE_TEST_POSTGRES_URL")
            .unwrap_or_else(|_| DEFAULT_POSTGRES_URL.to_owned());
        let name = format!("bridle_test_{}", uuid::Uuid::now_v7().simple());
        let mut admin = PgConnection::connect(&admin_url).await.unwrap();
        // A database name cannot be a bound parameter; this one is generated above.
        admin
            .execute(AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .await
            .unwrap();
        admin.close().await.unwrap();
        let url = with_database(&admin_url, &name);
        Self {
            admin_url,
            name,
            url,
        }
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        // `Drop` cannot await, and may run while the test's runtime unwinds: drop the database
        // from a thread with a runtime of its own.
        let admin_url = self.admin_url.clone();
        let sql = format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name);
        let dropped = std::thread::spawn(move || -> Result<(), String> {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())?;
            runtime
                .block_on(async {
                    let mut admin = PgConnection::connect(&admin_url).await?;
                    admin.execute(AssertSqlSafe(sql)).await?;
                    admin.close().await
                })
                .map_err(|e| e.to_string())
        })
        .join()
        .unwrap_or_else(|_| Err("the cleanup thread panicked".to_owned()));
        if let Err(error) = dropped {
            if std::thread::panicking() {
                eprintln!("could not drop test database {}: {error}", self.name);
            } else {
                panic!("could not drop test database {}: {error}", self.name);
            }
        }
    }
}

/// `url` with its database replaced by `database` (query parameters kept).
fn with_database(url: &str, database: &str) -> String {
    let (base, query) = url
        .split_once('?')
        .map_or((url, None), |(base, query)| (base, Some(query)));
    let authority = base.find("://").map_or(0, |i| i + 3);
    let server = base[authority..]
        .find('/')
        .map_or(base, |i| &base[..authority + i]);
    match query {
        Some(query) => format!("{server}/{database}?{query}"),
        None => format!("{server}/{database}"),
    }
}

#[test]
fn with_database_replaces_only_the_database() {
    for (url, expected) in [
        (
            "postgres://postgres@127.0.0.1:5432/test",
            "postgres://postgres@127.0.0.1:5432/x",
        ),
        (
            "postgres://u:p@h/test?sslmode=disable",
            "postgres://u:p@h/x?sslmode=disable",
        ),
        ("postgresql://h:5432", "postgresql://h:5432/x"),
    ] {
        assert_eq!(with_database(url, "x"), expected);
    }
}

// ---------------------------------------------------------------------------------------------
// Fixtures
// ---------------------------------------------------------------------------------------------

fn new_conversation(user_id: &str, contract: &str) -> NewConversation {
    NewConversation {
        user_id: user_id.to_owned(),
        contract: contract.to_owned(),
        context: json!({"page": "lesson-3", "mode": "practice", "prompt": "Sé breve ✓"}),
    }
}

fn user_message(conversation: &Conversation, turn_id: &str, content: &str) -> NewMessage {
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
    }
}

/// A valid attempt whose reply is `{"reply": text}`.
fn valid_attempt(
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
            Violation::new("/reply", "type", "reply must be a string"),
            Violation::new("", "required", "missing property \"topic\""),
        ],
        repairs: vec![Repair::text(
            "trailing_comma",
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

fn turn_id() -> String {
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

fn message_ids(messages: &[Message]) -> Vec<i64> {
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

fn is_foreign_key_violation(error: &StoreError) -> bool {
    matches!(error, StoreError::Database(e)
        if e.as_database_error().is_some_and(|d| d.is_foreign_key_violation()))
}

// ---------------------------------------------------------------------------------------------
// Behaviours
// ---------------------------------------------------------------------------------------------

async fn create_and_get(h: Harness) {
    let store = h.store();
    let before = store::now_ms();
    let new = new_conversation("alice", "tutor");
    let created = store.create_conversation(&new).await.unwrap();
    let after = store::now_ms();

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
    let conversation = store
        .create_conversation(&new_conversation("alice", "tutor"))
        .await
        .unwrap();
    let (turn1, turn2) = (turn_id(), turn_id());
    let recorded = [
        user_message(&conversation, &turn1, "What is 2 + 2?"),
        invalid_attempt(&conversation, &turn1, 1, "{\"reply\": 7,}"),
        failed_attempt(&conversation, &turn1, 2),
        valid_attempt(&conversation, &turn1, 3, "4"),
        user_message(&conversation, &turn2, "And 3 + 3?"),
        fallback(&conversation, &turn2),
    ];
    let before = store::now_ms();
    let mut stored_ids = Vec::new();
    for message in &recorded {
        stored_ids.push(store.record_message(message).await.unwrap());
    }
    let after = store::now_ms();
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
    assert_eq!(user[1].data, recorded[3]);

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
            },
            ids(&[&c2]),
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
    let conversation = store
        .create_conversation(&new_conversation("alice", "tutor"))
        .await
        .unwrap();

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
    let conversation = store
        .create_conversation(&new_conversation("alice", "tutor"))
        .await
        .unwrap();
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
    assert_eq!(
        store
            .messages(&conversation.id, View::Admin)
            .await
            .unwrap()
            .len(),
        1
    );
}

async fn corrupt_json(h: Harness) {
    let store = h.store();
    let conversation = store
        .create_conversation(&new_conversation("alice", "tutor"))
        .await
        .unwrap();
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
    h.raw.set_violations(id, r#"{"not": "a list"}"#).await;
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
    if h.raw
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
        h.raw.set_violations(id, "not json").await;
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
    let conversation = store
        .create_conversation(&new_conversation("alice", "tutor"))
        .await
        .unwrap();
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
            notified_at: Some(store::now_ms()),
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
    let before = store::now_ms();
    let mut stored_ids = Vec::new();
    for event in &events {
        stored_ids.push(store.record_safety_event(event).await.unwrap());
    }
    let after = store::now_ms();
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

async fn reopen(h: Harness) {
    let Harness {
        store,
        url,
        raw,
        place,
    } = h;
    let conversation = store
        .create_conversation(&new_conversation("alice", "tutor"))
        .await
        .unwrap();
    let id = store
        .record_message(&user_message(&conversation, &turn_id(), "remember me"))
        .await
        .unwrap();
    let conversation = store.conversation(&conversation.id).await.unwrap().unwrap();
    drop(store);
    assert_eq!(raw.applied_migrations().await, 1);

    // Opening again applies nothing and finds everything.
    let reopened = store::open(&url).await.unwrap();
    assert_eq!(raw.applied_migrations().await, 1);
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
    let second = store::open(&url).await.unwrap();
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
    assert_eq!(raw.applied_migrations().await, 1);
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
    let conversation = store
        .create_conversation(&new_conversation("alice", "tutor"))
        .await
        .unwrap();
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
        Err(error) => assert!(matches!(error, StoreError::Database(_)), "{error}"),
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
        let error = store::open(url).await.unwrap_err();
        assert!(matches!(error, StoreError::Config(_)), "{url}: {error}");
    }
}
