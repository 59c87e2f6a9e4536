//! The PostgreSQL store's group commit and prompt store under concurrency: one bad write in a
//! batch fails alone; two gateways (two stores, each with its pool and writer) write turns that
//! share prompts while a third sweeps them, and no message ever loses its prompt, no write fails,
//! and no prompt outlives its last user.

use crate::store::{
    alices_tutor_conversation, attempt_with_prompt, is_foreign_key_violation, new_conversation,
    prompt, turn_id, user_message,
};
use bridle_store::{self as store, Commit, Conversation, PurgeRange, Store, View};
use bridle_testkit::TestDatabase;
use sqlx::PgPool;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_bad_write_in_a_batch_fails_alone() {
    let database = TestDatabase::create().await;
    let store: Arc<dyn Store> = Arc::from(store::open(&database.url).await.unwrap());
    let conversation = alices_tutor_conversation(&*store).await;
    let missing = Conversation::start(&new_conversation("nobody", "tutor"));
    // Sent together, so that they share batches: every fifth names a conversation that does
    // not exist.
    let mut writes = tokio::task::JoinSet::new();
    for n in 0..60 {
        let store = Arc::clone(&store);
        let target = if n % 5 == 0 {
            missing.clone()
        } else {
            conversation.clone()
        };
        writes.spawn(async move {
            let message = user_message(&target, &turn_id(), &format!("message {n}"));
            (n, store.record_message(&message).await)
        });
    }
    let mut stored = 0;
    while let Some(done) = writes.join_next().await {
        let (n, result) = done.unwrap();
        match result {
            Ok(_) => {
                assert_ne!(n % 5, 0, "message {n} names no conversation");
                stored += 1;
            }
            Err(error) => {
                assert_eq!(n % 5, 0, "message {n} failed: {error}");
                assert!(is_foreign_key_violation(&error), "{error}");
            }
        }
    }
    assert_eq!(stored, 48);
    let messages = store.messages(&conversation.id, View::Admin).await.unwrap();
    assert_eq!(messages.len(), 48);
}

/// Turns of `seconds`' worth from one gateway, alternating three prompts; the ids it was given.
async fn write_turns(
    store: Arc<dyn Store>,
    conversation: Conversation,
    prompts: Arc<Vec<String>>,
    stop: Arc<AtomicBool>,
) -> Vec<i64> {
    let mut ids = Vec::new();
    let mut n = 0;
    while !stop.load(Ordering::Relaxed) {
        let turn = turn_id();
        let opening = store.open_turn(None, &user_message(&conversation, &turn, "hi"));
        let attempt = attempt_with_prompt(&conversation, &turn, 1, &prompts[n % prompts.len()]);
        let (first, second) = store
            .record_after(opening, &attempt)
            .await
            .expect("no write fails, whatever the sweeper does");
        ids.extend([first, second]);
        n += 1;
    }
    ids
}

/// Sweeps everything stored so far, again and again, until told to stop; the attempts purged.
async fn sweep(store: Arc<dyn Store>, stop: Arc<AtomicBool>) -> u64 {
    let mut purged = 0;
    while !stop.load(Ordering::Relaxed) {
        let range = PurgeRange {
            from: 0,
            before: i64::MAX,
            limit: 7,
        };
        purged += store.purge_payloads(range).await.unwrap().count;
    }
    purged
}

async fn two_gateways_and_a_sweeper(commit: Commit) {
    let database = TestDatabase::create().await;
    let open =
        || async { Arc::<dyn Store>::from(store::open_with(&database.url, commit).await.unwrap()) };
    let (gateway_a, gateway_b, sweeper) = (open().await, open().await, open().await);
    let conversation = gateway_a
        .create_conversation(&new_conversation("alice", "tutor"))
        .await
        .unwrap();
    let prompts = Arc::new(vec![
        prompt('a', 5_000),
        prompt('b', 5_000),
        prompt('c', 5_000),
    ]);
    let stop = Arc::new(AtomicBool::new(false));
    let mut writers = tokio::task::JoinSet::new();
    for gateway in [&gateway_a, &gateway_b, &gateway_a, &gateway_b] {
        writers.spawn(write_turns(
            Arc::clone(gateway),
            conversation.clone(),
            Arc::clone(&prompts),
            Arc::clone(&stop),
        ));
    }
    let sweeping = tokio::spawn(sweep(Arc::clone(&sweeper), Arc::clone(&stop)));
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    stop.store(true, Ordering::Relaxed);
    let mut written = 0;
    while let Some(ids) = writers.join_next().await {
        written += ids.unwrap().len();
    }
    let purged = sweeping.await.unwrap();
    assert!(purged > 0, "the sweeper ran while the gateways wrote");
    gateway_a.flush().await;
    gateway_b.flush().await;

    // Every attempt still holding its request reads back with its whole prompt; the others were
    // purged whole.
    let messages = sweeper
        .messages(&conversation.id, View::Admin)
        .await
        .unwrap();
    assert_eq!(messages.len(), written);
    for message in messages.iter().filter(|m| m.data.attempt.is_some()) {
        match &message.data.request_payload {
            Some(payload) => {
                let system = payload["body"]["messages"][0]["content"].as_str().unwrap();
                assert!(
                    prompts.iter().any(|p| p == system),
                    "message {}",
                    message.id
                );
            }
            None => assert!(
                message.payload_purged_at.is_some(),
                "message {}",
                message.id
            ),
        }
    }

    // A last sweep of everything leaves no prompt behind.
    let everything = PurgeRange {
        from: 0,
        before: i64::MAX,
        limit: 1_000_000,
    };
    sweeper.purge_payloads(everything).await.unwrap();
    let raw = PgPool::connect(&database.url).await.unwrap();
    let left: i64 = sqlx::query_scalar("SELECT count(*) FROM prompts")
        .fetch_one(&raw)
        .await
        .unwrap();
    assert_eq!(left, 0);
    raw.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_gateways_and_a_sweeper_lose_no_prompt() {
    two_gateways_and_a_sweeper(Commit::BeforeReply).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_gateways_answering_first_and_a_sweeper_lose_no_prompt() {
    two_gateways_and_a_sweeper(Commit::AfterReply).await;
}
