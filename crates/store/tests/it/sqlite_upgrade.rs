//! A SQLite database made by an older Bridle — migrated by sqlx's migrator, which recorded each
//! migration in `_sqlx_migrations` — opens with this one: what is stored reads back, the
//! missing migrations are applied and recorded the same way, and none is applied twice. The
//! old database is built here as sqlx built it: the migration files, then the rows sqlx wrote
//! (version, description, success, SHA-384 checksum, execution time in ns).

use crate::store::{turn_id, user_message, valid_attempt};
use bridle_store::{self as store, Conversation, ConversationStatus, View};
use serde_json::json;
use sha2::{Digest, Sha384};

/// The SQLite migration files, as older Bridles had them: (version, name, SQL).
const FILES: [(i64, &str, &str); 10] = [
    (
        1,
        "initial",
        include_str!("../../migrations/sqlite/0001_initial.sql"),
    ),
    (
        2,
        "stats_indexes",
        include_str!("../../migrations/sqlite/0002_stats_indexes.sql"),
    ),
    (
        3,
        "bump_trigger",
        include_str!("../../migrations/sqlite/0003_bump_trigger.sql"),
    ),
    (
        4,
        "interrupted",
        include_str!("../../migrations/sqlite/0004_interrupted.sql"),
    ),
    (
        5,
        "payload_purged",
        include_str!("../../migrations/sqlite/0005_payload_purged.sql"),
    ),
    (
        6,
        "prompts",
        include_str!("../../migrations/sqlite/0006_prompts.sql"),
    ),
    (
        7,
        "store_health",
        include_str!("../../migrations/sqlite/0007_store_health.sql"),
    ),
    (
        8,
        "route",
        include_str!("../../migrations/sqlite/0008_route.sql"),
    ),
    (
        9,
        "message_turn",
        include_str!("../../migrations/sqlite/0009_message_turn.sql"),
    ),
    (
        10,
        "request_ids",
        include_str!("../../migrations/sqlite/0010_request_ids.sql"),
    ),
];

/// A database at `path` as sqlx's migrator left it after applying the first `applied`
/// migrations, holding one conversation and one message of its time (a whole request).
fn old_database(path: &std::path::Path, applied: usize) -> rusqlite::Connection {
    let db = rusqlite::Connection::open(path).unwrap();
    db.pragma_update(None, "journal_mode", "WAL").unwrap();
    db.execute_batch(
        "CREATE TABLE IF NOT EXISTS _sqlx_migrations (
    version BIGINT PRIMARY KEY,
    description TEXT NOT NULL,
    installed_on TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
    success BOOLEAN NOT NULL,
    checksum BLOB NOT NULL,
    execution_time BIGINT NOT NULL
);",
    )
    .unwrap();
    for (version, name, sql) in &FILES[..applied] {
        db.execute_batch(sql).unwrap();
        db.execute(
            "INSERT INTO _sqlx_migrations ( version, description, success, checksum, \
             execution_time ) VALUES ( ?1, ?2, TRUE, ?3, ?4 )",
            rusqlite::params![
                version,
                name.replace('_', " "),
                Sha384::digest(sql.as_bytes()).to_vec(),
                1_234_567 * version,
            ],
        )
        .unwrap();
    }
    db.execute(
        "INSERT INTO conversations (id, user_id, contract, context, state, status, created_at, \
         updated_at) VALUES ('c-old', 'alice', 'tutor', '{\"page\":\"p\"}', '{}', 'blocked', \
         1000, 2000)",
        [],
    )
    .unwrap();
    db.execute(
        "INSERT INTO messages (conversation_id, turn_id, role, content, value, is_validated, \
         is_fallback, attempt, contract, contract_version, request_payload, raw_response, \
         violations, repairs, provider, model, tokens_in, tokens_out, latency_ms, error, \
         created_at) VALUES ('c-old', 't-old', 'assistant', '{\"reply\":\"hi\"}', \
         '{\"reply\":\"hi\"}', 1, 0, 1, 'tutor', '1.0.0', '{\"body\":{\"system\":\"old\"}}', \
         '{\"ok\":true}', '[]', '[]', 'openai', 'gpt', 10, 2, 30, NULL, 2000)",
        [],
    )
    .unwrap();
    db
}

/// The record of applied migrations: (version, description, success, checksum, time).
fn record(db: &rusqlite::Connection) -> Vec<(i64, String, bool, Vec<u8>, i64)> {
    let mut statement = db
        .prepare(
            "SELECT version, description, success, checksum, execution_time \
             FROM _sqlx_migrations ORDER BY version",
        )
        .unwrap();
    statement
        .query_map([], |row| {
            Ok((
                row.get(0)?,
                row.get(1)?,
                row.get(2)?,
                row.get(3)?,
                row.get(4)?,
            ))
        })
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_migrated_by_an_older_bridle_opens_and_is_brought_up_to_date() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bridle.db");
    // An older Bridle: before the prompts table and the readiness probe's row.
    let raw = old_database(&path, 5);
    let before = record(&raw);
    let store = store::open(&format!("sqlite://{}", path.display()))
        .await
        .unwrap();

    // What the old Bridle stored reads back as it was.
    let old = store.conversation("c-old").await.unwrap().unwrap();
    assert_eq!(
        (old.user_id.as_str(), old.status, old.context.clone()),
        ("alice", ConversationStatus::Blocked, json!({"page": "p"}))
    );
    let messages = store.messages("c-old", View::Admin).await.unwrap();
    assert_eq!(messages.len(), 1);
    assert_eq!(
        messages[0].data.request_payload,
        Some(json!({"body": {"system": "old"}}))
    );

    // The first five are left as they were; the later ones are applied and recorded as sqlx would.
    let after = record(&raw);
    assert_eq!(after[..5], before[..]);
    assert_eq!(after.len(), FILES.len());
    for (row, (version, name, sql)) in after[5..].iter().zip(&FILES[5..]) {
        assert_eq!(
            (&row.0, &row.1, row.2, &row.3),
            (
                version,
                &name.replace('_', " "),
                true,
                &Sha384::digest(sql.as_bytes()).to_vec()
            )
        );
        assert!(row.4 >= 0, "execution time {}", row.4);
    }

    // And the new tables work: a probe, a new turn with its prompt stored apart.
    store.probe_write().await.unwrap();
    let conversation = Conversation {
        id: "c-new".into(),
        ..old
    };
    let turn = turn_id();
    store
        .create_conversation_with(&conversation, &user_message(&conversation, &turn, "hi"))
        .await
        .unwrap();
    let mut attempt = valid_attempt(&conversation, &turn, 1, "hello");
    attempt.request_payload = Some(json!({"body": {"system": "s".repeat(2000)}}));
    store.record_message(&attempt).await.unwrap();
    let stored = store.messages("c-new", View::Admin).await.unwrap();
    assert_eq!(stored[1].data, attempt);
    let prompts: i64 = raw
        .query_row("SELECT count(*) FROM prompts", [], |row| row.get(0))
        .unwrap();
    assert_eq!(prompts, 1);
    drop(store);

    // Opened again: nothing is applied twice.
    let again = store::open(&format!("sqlite://{}", path.display()))
        .await
        .unwrap();
    assert_eq!(record(&raw), after);
    assert_eq!(again.messages("c-new", View::User).await.unwrap().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_whose_migration_was_changed_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bridle.db");
    let raw = old_database(&path, 7);
    raw.execute(
        "UPDATE _sqlx_migrations SET checksum = x'0102' WHERE version = 3",
        [],
    )
    .unwrap();
    let error = store::open(&format!("sqlite://{}", path.display()))
        .await
        .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("migration 3 was previously applied but has been modified"),
        "{error}"
    );
}
