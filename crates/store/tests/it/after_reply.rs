//! The SQLite store answering before it commits (`store_commit = "after_reply"`): what differs
//! from committing first. Ids are given before the insert and never repeat, whatever mode a
//! restart uses; reads see every write answered before them; a write that fails once its answer
//! is out is counted and spares the writes around it; one such server has the database to itself.
//! (The behaviours both modes share run in `store.rs`, `answering_first_*`.)

use crate::store::{
    alices_tutor_conversation, is_foreign_key_violation, message_ids, new_conversation, turn_id,
    user_message, valid_attempt,
};
use bridle_store::{self as store, Commit, Conversation, StoreError, View};

/// A fresh database in a temporary directory, and its URL.
fn database() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("bridle.db").display());
    (dir, url)
}

/// Messages in the database file, counted on a connection of its own (not the store's).
fn rows_on_disk(url: &str) -> i64 {
    let path = url.strip_prefix("sqlite://").unwrap();
    let db = rusqlite::Connection::open(path).unwrap();
    db.query_row("SELECT count(*) FROM messages", [], |row| row.get(0))
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_answered_before_its_commit_is_read_back_at_once() {
    let (_dir, url) = database();
    let store = store::open_with(&url, Commit::AfterReply).await.unwrap();
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
    assert_eq!(attempt, first + 1);

    // The writer holds them for a few milliseconds; the reads wait for them.
    let stored = store.conversation(&conversation.id).await.unwrap();
    assert_eq!(stored.map(|c| c.id), Some(conversation.id.clone()));
    let messages = store.messages(&conversation.id, View::Admin).await.unwrap();
    assert_eq!(message_ids(&messages), [first, attempt]);
    assert_eq!(
        messages[1].data.value,
        Some(serde_json::json!({"reply": "hello"}))
    );

    // A later turn goes on from there.
    let turn = turn_id();
    let opening = store.open_turn(None, &user_message(&conversation, &turn, "more"));
    let (second, reply) = store
        .record_after(opening, &valid_attempt(&conversation, &turn, 1, "sure"))
        .await
        .unwrap();
    let user_view = store.messages(&conversation.id, View::User).await.unwrap();
    assert_eq!(message_ids(&user_view), [first, attempt, second, reply]);

    store.flush().await;
    assert_eq!(rows_on_disk(&url), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_failing_after_its_answer_is_counted_and_spares_the_others() {
    let (_dir, url) = database();
    let store = store::open_with(&url, Commit::AfterReply).await.unwrap();
    let failures = store
        .write_failures()
        .expect("a store answering first counts failures");
    let conversation = alices_tutor_conversation(&*store).await;
    // No such conversation: the answer is out before the foreign key refuses the row.
    let ghost = Conversation::start(&new_conversation("bob", "tutor"));
    let lost = store
        .record_message(&user_message(&ghost, &turn_id(), "lost"))
        .await
        .unwrap();
    // Queued right behind it, in the same batch.
    let kept = store
        .record_message(&user_message(&conversation, &turn_id(), "kept"))
        .await
        .unwrap();
    assert!(kept > lost);

    store.flush().await;
    assert_eq!(failures.get(), 1);
    let messages = store.messages(&conversation.id, View::Admin).await.unwrap();
    assert_eq!(message_ids(&messages), [kept]);
    assert!(
        store
            .messages(&ghost.id, View::Admin)
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_committing_first_counts_no_failures_and_returns_them() {
    let (_dir, url) = database();
    let store = store::open(&url).await.unwrap();
    assert!(store.write_failures().is_none());
    let ghost = Conversation::start(&new_conversation("bob", "tutor"));
    let error = store
        .record_message(&user_message(&ghost, &turn_id(), "lost"))
        .await
        .unwrap_err();
    assert!(is_foreign_key_violation(&error), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn message_ids_never_repeat_across_restarts_in_either_mode() {
    let (_dir, url) = database();
    let mut last = 0;
    for commit in [
        Commit::AfterReply,
        Commit::BeforeReply,
        Commit::AfterReply,
        Commit::AfterReply,
    ] {
        let store = store::open_with(&url, commit).await.unwrap();
        let conversation = alices_tutor_conversation(&*store).await;
        for text in ["one", "two"] {
            let id = store
                .record_message(&user_message(&conversation, &turn_id(), text))
                .await
                .unwrap();
            assert!(id > last, "{commit:?}: id {id} after {last}");
            last = id;
        }
        store.flush().await;
    }
    assert_eq!(rows_on_disk(&url), 8);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_answering_first_has_the_database_to_itself() {
    let (_dir, url) = database();
    let alone = store::open_with(&url, Commit::AfterReply).await.unwrap();
    let refused = |error: StoreError| match error {
        StoreError::Config(message) => message,
        other => panic!("not a configuration error: {other}"),
    };
    let second = refused(
        store::open_with(&url, Commit::AfterReply)
            .await
            .unwrap_err(),
    );
    assert!(second.contains("needs it to itself"), "{second}");
    let committing = refused(store::open(&url).await.unwrap_err());
    assert!(committing.contains("after_reply"), "{committing}");
    drop(alone);

    // Servers committing first share it, and then one answering first is refused.
    let one = store::open(&url).await.unwrap();
    let two = store::open(&url).await.unwrap();
    assert!(store::open_with(&url, Commit::AfterReply).await.is_err());
    drop((one, two));
    store::open_with(&url, Commit::AfterReply).await.unwrap();
}
