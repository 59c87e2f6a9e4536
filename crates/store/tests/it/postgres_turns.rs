//! One commit a turn on PostgreSQL (`store_commit = "before_reply"`): a turn's opening — its user
//! message, and the conversation when the turn starts it — is written by the same transaction as
//! the turn's first recorded message, and is never lost on the ways a turn can end without one:
//! the opening awaited by itself, an attempt PostgreSQL refuses, a caller that goes away while
//! the write is queued, an opening nobody settles. Which transaction wrote a row is its `xmin`.

use crate::store::{new_conversation, turn_id, user_message, valid_attempt};
use bridle_store::{self as store, Conversation, Store, View};
use bridle_testkit::TestDatabase;
use sqlx::PgPool;
use std::sync::Arc;
use std::time::{Duration, Instant};

async fn open(database: &TestDatabase) -> Arc<dyn Store> {
    Arc::from(store::open(&database.url).await.unwrap())
}

/// The transaction that last wrote the conversation `id`.
/// A turn that starts its conversation, its user message ("hi") opened on `store`.
fn opened(store: &dyn Store) -> (Conversation, String, bridle_store::Pending<i64>) {
    let conversation = Conversation::start(&new_conversation("alice", "tutor"));
    let turn = turn_id();
    let opening = store.open_turn(
        Some(&conversation),
        &user_message(&conversation, &turn, "hi"),
    );
    (conversation, turn, opening)
}

async fn conversation_writer(database: &TestDatabase, id: &str) -> String {
    let raw = PgPool::connect(&database.url).await.unwrap();
    let writer = sqlx::query_scalar("SELECT xmin::text FROM conversations WHERE id = $1")
        .bind(id)
        .fetch_one(&raw)
        .await
        .unwrap();
    raw.close().await;
    writer
}

/// Waits (up to 10 s) until the conversation holds a message whose content is `content`.
async fn until_stored(store: &dyn Store, conversation: &Conversation, content: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !store
        .messages(&conversation.id, View::Admin)
        .await
        .unwrap()
        .iter()
        .any(|m| m.data.content == content)
    {
        assert!(Instant::now() < deadline, "{content:?} was never stored");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turns_opening_and_first_attempt_are_one_transaction() {
    let database = TestDatabase::create().await;
    let store = open(&database).await;
    // A turn that starts its conversation: conversation, user message and first attempt.
    let (conversation, turn, opening) = opened(&*store);
    let (first, attempt) = store
        .record_after(opening, &valid_attempt(&conversation, &turn, 1, "hello"))
        .await
        .unwrap();
    assert!(first < attempt);
    let writers = database.message_writers(&turn).await;
    assert_eq!(writers.len(), 2);
    assert_eq!(writers[0], writers[1], "user message and first attempt");
    assert_eq!(
        conversation_writer(&database, &conversation.id).await,
        writers[0],
        "the conversation the turn starts"
    );
    // The turn's second attempt is a write (and a transaction) of its own.
    let second = store
        .record_message(&valid_attempt(&conversation, &turn, 2, "again"))
        .await
        .unwrap();
    assert!(attempt < second);
    let writers = database.message_writers(&turn).await;
    assert_eq!(writers.len(), 3);
    assert_ne!(writers[2], writers[0], "a later attempt commits by itself");

    // A later turn of the conversation: one transaction again, after the first turn's.
    let turn = turn_id();
    let opening = store.open_turn(None, &user_message(&conversation, &turn, "more"));
    let (user, reply) = store
        .record_after(opening, &valid_attempt(&conversation, &turn, 1, "sure"))
        .await
        .unwrap();
    assert!(second < user && user < reply);
    let writers = database.message_writers(&turn).await;
    assert_eq!(writers.len(), 2);
    assert_eq!(writers[0], writers[1]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_opening_awaited_by_itself_is_written_by_itself() {
    let database = TestDatabase::create().await;
    let store = open(&database).await;
    let conversation = Conversation::start(&new_conversation("alice", "tutor"));
    let turn = turn_id();
    let first = store
        .open_turn(
            Some(&conversation),
            &user_message(&conversation, &turn, "hi"),
        )
        .await
        .unwrap();
    let messages = store.messages(&conversation.id, View::Admin).await.unwrap();
    assert_eq!(messages.len(), 1);
    assert_eq!(
        (messages[0].id, messages[0].data.content.as_str()),
        (first, "hi")
    );
    let attempt = store
        .record_message(&valid_attempt(&conversation, &turn, 1, "hello"))
        .await
        .unwrap();
    assert!(first < attempt);
    let writers = database.message_writers(&turn).await;
    assert_ne!(writers[0], writers[1]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attempt_postgres_refuses_leaves_the_user_message_stored() {
    let database = TestDatabase::create().await;
    let store = open(&database).await;
    let (conversation, turn, opening) = opened(&*store);
    let mut refused = valid_attempt(&conversation, &turn, 1, "x");
    refused.content = "nul \0 inside".to_owned();
    assert!(store.record_after(opening, &refused).await.is_err());
    let messages = store.messages(&conversation.id, View::Admin).await.unwrap();
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0].data.content, "hi");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_that_goes_away_while_its_write_is_queued_keeps_it() {
    let database = TestDatabase::create().await;
    let store = open(&database).await;
    let (conversation, turn, opening) = opened(&*store);
    let attempt = valid_attempt(&conversation, &turn, 1, "hello");
    // Polled once (the job is queued), then dropped before its commit.
    let gone = tokio::time::timeout(Duration::ZERO, store.record_after(opening, &attempt)).await;
    assert!(
        gone.is_err(),
        "the write cannot be committed before it is polled again"
    );
    until_stored(&*store, &conversation, "hi").await;
    until_stored(&*store, &conversation, &attempt.content).await;
    let writers = database.message_writers(&turn).await;
    assert_eq!(writers.len(), 2);
    assert_eq!(writers[0], writers[1]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_opening_nobody_settles_is_stored() {
    let database = TestDatabase::create().await;
    let store = open(&database).await;
    let conversation = Conversation::start(&new_conversation("alice", "tutor"));
    // Never polled: the turn started its conversation and ended before recording anything.
    drop(store.open_turn(
        Some(&conversation),
        &user_message(&conversation, &turn_id(), "hi"),
    ));
    until_stored(&*store, &conversation, "hi").await;
    // Dropped by a task that is itself going away.
    let turn = turn_id();
    let opening = store.open_turn(None, &user_message(&conversation, &turn, "again"));
    tokio::spawn(async move { drop(opening) }).await.unwrap();
    until_stored(&*store, &conversation, "again").await;
}

/// Connections the store `bridle` holds on the test database now.
async fn connections(database: &TestDatabase) -> i64 {
    let raw = PgPool::connect(&database.url).await.unwrap();
    let open = sqlx::query_scalar(
        "SELECT count(*) FROM pg_stat_activity \
         WHERE datname = current_database() AND application_name = 'bridle'",
    )
    .fetch_one(&raw)
    .await
    .unwrap();
    raw.close().await;
    open
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_pool_keeps_to_max_connections() {
    use bridle_store::StoreOptions;
    let database = TestDatabase::create().await;
    let zero = StoreOptions {
        max_connections: Some(0),
        ..StoreOptions::default()
    };
    assert!(store::open_with_options(&database.url, zero).await.is_err());
    let two = StoreOptions {
        max_connections: Some(2),
        ..StoreOptions::default()
    };
    let store: Arc<dyn Store> =
        Arc::from(store::open_with_options(&database.url, two).await.unwrap());
    // Turns of many conversations at once, so that every lane of the writer is busy.
    let mut turns = tokio::task::JoinSet::new();
    for n in 0..64 {
        let store = Arc::clone(&store);
        turns.spawn(async move {
            let conversation = Conversation::start(&new_conversation("alice", "tutor"));
            let turn = turn_id();
            let opening = store.open_turn(
                Some(&conversation),
                &user_message(&conversation, &turn, &format!("hi {n}")),
            );
            store
                .record_after(opening, &valid_attempt(&conversation, &turn, 1, "hello"))
                .await
                .unwrap();
            store
                .messages(&conversation.id, View::Admin)
                .await
                .unwrap()
                .len()
        });
    }
    while let Some(stored) = turns.join_next().await {
        assert_eq!(stored.unwrap(), 2);
    }
    let open = connections(&database).await;
    assert!((1..=2).contains(&open), "{open} connections");
}
