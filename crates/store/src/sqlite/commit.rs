//! When the SQLite store commits a turn's writes relative to the answer ([`Commit`]): the lock
//! file that keeps servers of different modes off one database, and what answering first
//! (`after_reply`) needs — message ids given before the insert ([`AfterReply::next_id`]) and a
//! report for a write that fails once its answer is out ([`AfterReply::report`]).
//!
//! With `after_reply` a turn's messages are queued for the writer and the answer goes out at
//! once; they are committed with the next batch, or by the committer thread ([`committer`])
//! within [`super::queue`]'s hold of a few milliseconds. Every read of the store first waits for
//! the writes queued before it ([`super::queue::Writer::settled`]), so a conversation's history, its status and the
//! admin console see every answer already given. What the mode gives up: a process that dies
//! (a crash, `SIGKILL`, out of memory) loses the turns of its last few milliseconds although
//! their answers went out. Safety actions (a blocked conversation, a safety event) are still
//! committed before the answer.

use super::checkpoint::yield_to_requests;
use super::queue::{Combiner, HOLD_SOON, Shared, Writer};
use crate::{Commit, StoreError};
use prometheus_client::metrics::counter::Counter;
use std::fs::{File, TryLockError};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Weak, mpsc};

/// Message ids reserved at a time: the ceiling of the ids given out is committed (in
/// `sqlite_sequence`) ahead of them, so a server restarted after a crash starts above every id
/// it gave, committed or not. A new block is reserved once half of this one is given out.
const ID_BLOCK: i64 = 10_000;

/// The lock file of the database at `database` (beside it).
pub(super) fn lock_path(database: &Path) -> PathBuf {
    let mut name = database.as_os_str().to_owned();
    name.push("-lock");
    PathBuf::from(name)
}

/// Locks the database at `database` for a server committing as `commit`: shared by every
/// server committing before the answer; held alone by one answering first, whose message ids
/// come from a counter of its own (see [`AfterReply`]). The lock goes with the returned file
/// (and with the process).
pub(super) fn lock(database: &Path, commit: Commit) -> Result<File, StoreError> {
    let path = lock_path(database);
    let file = crate::private_files::open_file(&path).map_err(|error| {
        StoreError::Config(format!(
            "cannot open the lock file {}: {error}",
            path.display()
        ))
    })?;
    let locked = match commit {
        Commit::BeforeReply => file.try_lock_shared(),
        Commit::AfterReply => file.try_lock(),
    };
    match locked {
        Ok(()) => Ok(file),
        Err(TryLockError::WouldBlock) => Err(StoreError::Config(match commit {
            Commit::BeforeReply => format!(
                "the database {} is in use by a Bridle server with store_commit = \"after_reply\", which must have it to itself (lock file {})",
                database.display(),
                path.display()
            ),
            Commit::AfterReply => format!(
                "the database {} is in use by another Bridle server: store_commit = \"after_reply\" needs it to itself (lock file {})",
                database.display(),
                path.display()
            ),
        })),
        Err(TryLockError::Error(error)) => Err(StoreError::Config(format!(
            "cannot lock {}: {error}",
            path.display()
        ))),
    }
}

/// What the SQLite store needs to answer before committing.
#[derive(Debug)]
pub(super) struct AfterReply {
    /// The next message id. The store has the database to itself (the lock file), so no one
    /// else takes ids; `AUTOINCREMENT` takes the explicit ids as its own.
    next_id: AtomicI64,
    /// The highest id reserved in `sqlite_sequence` (committed): ids up to it never come again,
    /// whatever becomes of this process.
    ceiling: AtomicI64,
    /// A reservation is queued.
    reserving: AtomicBool,
    /// Writes that failed after their answer went out.
    failures: Counter,
}

impl AfterReply {
    /// Reserves the first block of ids above every id given so far (committed before this
    /// returns), and gives ids from there.
    pub async fn open(writer: &Writer) -> Result<Self, StoreError> {
        let last = writer.write(last_message_id).await?;
        let ceiling = last.saturating_add(ID_BLOCK);
        writer.write(move |db| reserve_ids(db, ceiling)).await?;
        Ok(Self {
            next_id: AtomicI64::new(last.saturating_add(1)),
            ceiling: AtomicI64::new(ceiling),
            reserving: AtomicBool::new(false),
            failures: Counter::default(),
        })
    }

    /// A new message id; reserves the next block once half of this one is given out. Should
    /// the writer be stalled until the block runs out (seconds of writes), ids go on past it:
    /// unique all the same, though a crash before the reservation commits could give them again
    /// after the restart (a warning says so).
    pub fn next_id(self: &Arc<Self>, writer: &Writer) -> i64 {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let ceiling = self.ceiling.load(Ordering::Acquire);
        if ceiling - id < ID_BLOCK / 2 && !self.reserving.swap(true, Ordering::AcqRel) {
            let target = ceiling.max(id).saturating_add(ID_BLOCK);
            let this = Arc::clone(self);
            writer.write_detached(
                move |db| reserve_ids(db, target),
                move |result| {
                    match result {
                        Ok(()) => {
                            this.ceiling.fetch_max(target, Ordering::AcqRel);
                        }
                        Err(error) => {
                            tracing::warn!(%error, "reserving message ids failed; tried again with the next id");
                        }
                    }
                    this.reserving.store(false, Ordering::Release);
                },
            );
        }
        if id > ceiling {
            tracing::warn!(
                id,
                ceiling,
                "message id given past the reserved ones (the store's writes are stalled)"
            );
        }
        id
    }

    /// The count of writes that failed after their answer went out.
    pub fn failures(&self) -> Counter {
        self.failures.clone()
    }

    /// What becomes of a write of `what` (a message of conversation `conversation`) once it is
    /// run: a failure is counted and logged as an error naming it.
    pub fn report<T>(
        &self,
        what: &'static str,
        conversation: String,
        turn: String,
    ) -> impl FnOnce(Result<T, StoreError>) + Send + 'static {
        let failures = self.failures.clone();
        move |result| {
            if let Err(error) = result {
                failures.inc();
                tracing::error!(
                    %error,
                    conversation,
                    turn,
                    "storing {what} failed after the answer went out (store_commit = after_reply): it is lost"
                );
            }
        }
    }
}

/// The committer thread: runs the queue [`HOLD_SOON`] after a detached write is queued
/// ([`Writer::write_detached`]), with whatever else is queued by then, at low priority (nice
/// 10): nobody waits for these writes, so their commits take the time the requests leave
/// (on the benchmark's one-core gateway, run inline on the runtime thread they held the
/// requests in flight for the length of a batch). Ends with the writer.
pub(super) fn committer(writer: &Weak<Shared>, due: &mpsc::Receiver<()>) {
    yield_to_requests();
    while due.recv().is_ok() {
        std::thread::sleep(HOLD_SOON);
        match writer.upgrade() {
            Some(shared) => shared.combine(Combiner::Blocking),
            None => break,
        }
    }
}

/// Records in `sqlite_sequence` that message ids up to `ceiling` are taken (never lowering it).
fn reserve_ids(db: &rusqlite::Connection, ceiling: i64) -> rusqlite::Result<()> {
    let updated = db
        .prepare_cached("UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = 'messages'")?
        .execute([ceiling])?;
    if updated == 0 {
        db.prepare_cached("INSERT INTO sqlite_sequence (name, seq) VALUES ('messages', ?)")?
            .execute([ceiling])?;
    }
    Ok(())
}

/// The highest message id SQLite has given (`sqlite_sequence`), or stored: ids start above it.
fn last_message_id(db: &rusqlite::Connection) -> rusqlite::Result<i64> {
    db.query_row(
        "SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'messages'), 0), \
         coalesce((SELECT max(id) FROM messages), 0))",
        [],
        |row| row.get(0),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sqlite::checkpoint::CHECKPOINTER_NICE;
    use crate::sqlite::queue::lock as guard;
    use crate::sqlite::testing::{blob_store, count_blobs};
    use std::sync::Mutex;
    use std::sync::atomic::AtomicUsize;
    use std::time::Duration;

    #[test]
    fn a_server_answering_first_has_the_database_to_itself() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("bridle.db");
        let first = lock(&db, Commit::BeforeReply).unwrap();
        let second = lock(&db, Commit::BeforeReply).unwrap();
        let refused = lock(&db, Commit::AfterReply).unwrap_err().to_string();
        assert!(refused.contains("needs it to itself"), "{refused}");
        drop((first, second));
        let alone = lock(&db, Commit::AfterReply).unwrap();
        let refused = lock(&db, Commit::BeforeReply).unwrap_err().to_string();
        assert!(refused.contains("after_reply"), "{refused}");
        assert!(lock(&db, Commit::AfterReply).is_err());
        drop(alone);
        lock(&db, Commit::AfterReply).unwrap();
    }

    /// A writer on a fresh database with a `messages` table holding ids 1 and 2 (3 was given
    /// and deleted).
    fn writer() -> (tempfile::TempDir, Writer) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bridle.db");
        rusqlite::Connection::open(&path)
            .unwrap()
            .execute_batch(
                "PRAGMA journal_mode = WAL;
                 CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, x TEXT);
                 INSERT INTO messages (x) VALUES ('a'), ('b'), ('c');
                 DELETE FROM messages WHERE id = 3;",
            )
            .unwrap();
        let writer = Writer::open(&path).unwrap();
        (dir, writer)
    }

    async fn sequence(writer: &Writer) -> i64 {
        writer
            .write(|db| {
                db.query_row(
                    "SELECT seq FROM sqlite_sequence WHERE name = 'messages'",
                    [],
                    |row| row.get(0),
                )
            })
            .await
            .unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn ids_go_on_from_the_highest_given_and_are_reserved_ahead() {
        let (_dir, writer) = writer();
        let ids = Arc::new(AfterReply::open(&writer).await.unwrap());
        // 3 was given (and deleted): AUTOINCREMENT never gives it again, nor do we.
        assert_eq!((ids.next_id(&writer), ids.next_id(&writer)), (4, 5));
        // A crash now would leave the database knowing that ids up to a block ahead are taken.
        assert_eq!(sequence(&writer).await, 3 + ID_BLOCK);
        // Half the block given: the next one is reserved.
        while ids.next_id(&writer) < 3 + ID_BLOCK / 2 + 1 {}
        writer.settled().await;
        assert_eq!(sequence(&writer).await, 3 + 2 * ID_BLOCK);
        assert_eq!(ids.ceiling.load(Ordering::Acquire), 3 + 2 * ID_BLOCK);
        // A store opened next starts above the reservation.
        let again = Arc::new(AfterReply::open(&writer).await.unwrap());
        assert_eq!(again.next_id(&writer), 3 + 2 * ID_BLOCK + 1);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failure_after_the_answer_is_counted() {
        let (_dir, writer) = writer();
        let ids = AfterReply::open(&writer).await.unwrap();
        ids.report::<i64>("an attempt", "c1".into(), "t1".into())(Ok(1));
        assert_eq!(ids.failures().get(), 0);
        ids.report::<i64>("an attempt", "c1".into(), "t1".into())(Err(StoreError::Closed));
        assert_eq!(ids.failures().get(), 1);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn detached_writes_are_committed_by_the_low_priority_committer() {
        let (_dir, path, writer) = blob_store().await;
        let ran_on = Arc::new(Mutex::new(Vec::new()));
        let failures = Arc::new(AtomicUsize::new(0));
        for n in 0..20 {
            let (ran_on, failures) = (Arc::clone(&ran_on), Arc::clone(&failures));
            let sql = if n == 7 {
                "INSERT INTO nowhere VALUES (?)"
            } else {
                "INSERT INTO blob (data) VALUES (?)"
            };
            writer.write_detached(
                move |db| {
                    let thread = std::thread::current();
                    #[cfg(target_os = "linux")]
                    let nice = rustix::process::getpriority_process(Some(rustix::thread::gettid()))
                        .unwrap_or(-1);
                    #[cfg(not(target_os = "linux"))]
                    let nice = CHECKPOINTER_NICE;
                    guard(&ran_on).push((thread.name().map(String::from), nice));
                    db.execute(sql, [n.to_string()])
                },
                move |result| {
                    if result.is_err() {
                        failures.fetch_add(1, Ordering::Relaxed);
                    }
                },
            );
        }
        // Nobody runs the queue but the committer.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while writer.shared.detached.load(Ordering::Acquire) > 0 {
            assert!(std::time::Instant::now() < deadline, "not committed");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(count_blobs(&path), 19);
        assert_eq!(failures.load(Ordering::Relaxed), 1);
        let ran_on = guard(&ran_on).clone();
        assert!(
            ran_on.iter().all(
                |(name, nice)| name.as_deref() == Some("bridle-sqlite-commit")
                    && *nice == CHECKPOINTER_NICE
            ),
            "{ran_on:?}"
        );
        // A read after `settled` sees what was queued just before it.
        let data = "read back".to_owned();
        writer.write_detached(
            move |db| db.execute("INSERT INTO blob (data) VALUES (?)", [&data]),
            |_| {},
        );
        writer.settled().await;
        assert_eq!(count_blobs(&path), 20);
    }
}
