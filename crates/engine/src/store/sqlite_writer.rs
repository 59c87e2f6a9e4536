//! [`Writer`]: the SQLite store's one writing connection, on a thread of its own, with group
//! commit; and the checkpointer that keeps the write-ahead log short off the write path.
//!
//! Every write of the SQLite store is a job sent to the writer thread. The thread takes every
//! job that is waiting (up to [`MAX_BATCH`]), runs them in one `BEGIN IMMEDIATE … COMMIT` and
//! only then answers each caller: a caller is told its write is done once it is committed, as
//! before, but concurrent turns share one commit — the pages they both touch (the messages
//! table's last leaf, its indexes' last leaves, the conversation row, `sqlite_sequence`) are
//! written to the log once per batch instead of once per write. Should any job of a batch fail
//! (a foreign key, a full disk), the batch is rolled back and its jobs are run again one by one,
//! each in its own transaction, so one bad write never takes others down with it.
//!
//! Statements run on the thread itself (rusqlite, prepared statements cached), so a write costs
//! one hand-off to the thread and one back, whatever it does.
//!
//! Automatic checkpoints are off on the writing connection: a checkpoint run by the connection
//! that commits would stall every queued write while it copies the whole log into the database
//! file. Instead the checkpointer thread runs a `PASSIVE` checkpoint on a connection of its own
//! every [`CHECKPOINT_EVERY`]; it copies the bulk of the log without blocking the writer or
//! readers. Under a steady stream of writes such a checkpoint never catches up with the end of
//! the log (new frames arrive while it copies), and SQLite starts the log over only once every
//! frame is copied; so the writer thread, between two batches and after every
//! [`FINISH_CHECKPOINT_AFTER`] writes, finishes the copy itself — only the frames written since
//! the checkpointer's last pass, a short pause — and the next transaction starts the log over.
//! When the checkpointer holds the log every time the writer tries (a slow disk under load),
//! the writer's passive attempt never gets its turn; from twice that many writes on, it runs a
//! `FULL` checkpoint, which waits for the checkpointer's pass and then finishes the copy.
//! When the store is closed the checkpointer runs a last `TRUNCATE` checkpoint.

use super::StoreError;
use rusqlite::{Connection, OpenFlags};
use std::path::Path;
#[cfg(test)]
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::Duration;
use tokio::sync::oneshot;

/// Most writes committed in one transaction.
const MAX_BATCH: usize = 256;

/// How often the checkpointer copies the log into the database file.
const CHECKPOINT_EVERY: Duration = Duration::from_millis(100);

/// Writes after which the writer thread finishes a checkpoint between two batches.
const FINISH_CHECKPOINT_AFTER: usize = 2048;

/// How long a connection waits for another's lock (a migration, a checkpoint) before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The log file is cut back to this size when it is reset (bytes).
const JOURNAL_SIZE_LIMIT: i64 = 64 * 1024 * 1024;

/// Prepared statements kept per connection.
const STATEMENT_CACHE: usize = 32;

/// One write: it runs inside a transaction, and its result waits for the commit.
trait Job: Send {
    /// Runs the write; the result is kept until [`Job::deliver`].
    fn run(&mut self, connection: &Connection) -> rusqlite::Result<()>;
    /// Answers the caller: the kept result once committed, or `failure`.
    fn deliver(self: Box<Self>, failure: Option<StoreError>);
}

/// A [`Job`] made of a closure and the channel its caller waits on.
struct Op<T, F> {
    work: F,
    done: Option<T>,
    reply: oneshot::Sender<Result<T, StoreError>>,
}

impl<T, F> Job for Op<T, F>
where
    T: Send,
    F: FnMut(&Connection) -> rusqlite::Result<T> + Send,
{
    fn run(&mut self, connection: &Connection) -> rusqlite::Result<()> {
        self.done = Some((self.work)(connection)?);
        Ok(())
    }

    fn deliver(self: Box<Self>, failure: Option<StoreError>) {
        let result = match (failure, self.done) {
            (Some(error), _) => Err(error),
            (None, Some(value)) => Ok(value),
            (None, None) => Err(StoreError::Closed),
        };
        // The caller may have gone away (its request was dropped); the write stands.
        let _ = self.reply.send(result);
    }
}

/// The SQLite store's writing connection (cheap to clone: a channel to its thread).
#[derive(Debug, Clone)]
pub(super) struct Writer {
    jobs: mpsc::Sender<Box<dyn Job>>,
}

impl std::fmt::Debug for dyn Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Job")
    }
}

impl Writer {
    /// Opens the writing connection to the database file at `path` (which must exist, with its
    /// migrations applied) and starts the writer and checkpointer threads. Both end when the
    /// last clone of the writer is dropped, after a final `TRUNCATE` checkpoint.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        let connection = connect(path)?;
        // SQLite quietly opens a file it may not write (a read-only volume) for reading only;
        // a store that cannot record attempts must not start.
        if connection.is_readonly(rusqlite::MAIN_DB)? {
            return Err(StoreError::Config(format!(
                "the database {} is read-only (a read-only file or volume): Bridle must be able to record every attempt",
                path.display()
            )));
        }
        connection.pragma_update(None, "wal_autocheckpoint", 0)?;
        connection.pragma_update(None, "journal_size_limit", JOURNAL_SIZE_LIMIT)?;
        let checkpointer = connect(path)?;
        let (jobs, queue) = mpsc::channel::<Box<dyn Job>>();
        let (stop, stopped) = mpsc::channel::<()>();
        std::thread::Builder::new()
            .name("bridle-sqlite-checkpoint".into())
            .spawn(move || checkpoints(&checkpointer, &stopped))
            .map_err(|error| StoreError::Config(format!("cannot start a thread: {error}")))?;
        std::thread::Builder::new()
            .name("bridle-sqlite-writer".into())
            .spawn(move || {
                write_batches(&connection, &queue);
                // Closing the store: the checkpointer makes its last checkpoint and ends.
                drop(stop);
            })
            .map_err(|error| StoreError::Config(format!("cannot start a thread: {error}")))?;
        Ok(Self { jobs })
    }

    /// Runs `work` on the writing connection inside a transaction (shared with whatever other
    /// writes are waiting) and returns its result once that transaction is committed. `work`
    /// may run more than once (again on its own when another write of its batch failed): it
    /// must only write, never act outside the database.
    pub async fn write<T, F>(&self, work: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnMut(&Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        self.jobs
            .send(Box::new(Op {
                work,
                done: None,
                reply,
            }))
            .map_err(|_| StoreError::Closed)?;
        answer.await.map_err(|_| StoreError::Closed)?
    }
}

/// A connection to the database file at `path`, set up as the store's connections are.
fn connect(path: &Path) -> Result<Connection, StoreError> {
    let connection = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    connection.busy_timeout(BUSY_TIMEOUT)?;
    connection.pragma_update(None, "journal_mode", "WAL")?;
    connection.pragma_update(None, "synchronous", "NORMAL")?;
    connection.pragma_update(None, "foreign_keys", true)?;
    connection.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    Ok(connection)
}

/// The writer thread: batches of waiting jobs, each batch one transaction, until every sender
/// is gone.
fn write_batches(connection: &Connection, queue: &mpsc::Receiver<Box<dyn Job>>) {
    let mut batch: Vec<Box<dyn Job>> = Vec::with_capacity(MAX_BATCH);
    let mut since_checkpoint = 0;
    while let Ok(first) = queue.recv() {
        batch.push(first);
        while batch.len() < MAX_BATCH {
            match queue.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        since_checkpoint += batch.len();
        let together = in_transaction(connection, |connection| {
            batch.iter_mut().try_for_each(|job| job.run(connection))
        });
        match together {
            Ok(()) => batch.drain(..).for_each(|job| job.deliver(None)),
            Err(error) if batch.len() == 1 => {
                if let Some(job) = batch.pop() {
                    job.deliver(Some(error.into()));
                }
            }
            // One write failed: every write of the batch runs again on its own.
            Err(_) => {
                for mut job in batch.drain(..) {
                    let alone = in_transaction(connection, |connection| job.run(connection));
                    job.deliver(alone.err().map(StoreError::from));
                }
            }
        }
        if since_checkpoint >= FINISH_CHECKPOINT_AFTER {
            // Should the checkpointer hold the log the whole time (a slow disk under load), a
            // passive checkpoint here never gets its turn; past twice the mark, a full one waits
            // for it (up to the busy timeout) and then finishes, so the log stays bounded.
            let mode = if since_checkpoint >= 2 * FINISH_CHECKPOINT_AFTER {
                "FULL"
            } else {
                "PASSIVE"
            };
            match checkpoint(connection, mode) {
                Ok(true) => since_checkpoint = 0,
                // Busy (the checkpointer is at work) or not complete: again after the next batch.
                Ok(false) => {}
                Err(error) => tracing::warn!(%error, "SQLite checkpoint failed"),
            }
        }
    }
}

/// Runs `work` in one immediate transaction: committed when it succeeds, rolled back otherwise.
fn in_transaction(
    connection: &Connection,
    work: impl FnOnce(&Connection) -> rusqlite::Result<()>,
) -> rusqlite::Result<()> {
    connection.execute_batch("BEGIN IMMEDIATE")?;
    let result = work(connection).and_then(|()| connection.execute_batch("COMMIT"));
    if result.is_err() && !connection.is_autocommit() {
        // Nothing to do if the rollback fails too: the connection stays usable either way,
        // and the caller is told of the first error.
        let _ = connection.execute_batch("ROLLBACK");
    }
    result
}

/// The checkpointer thread: a passive checkpoint every [`CHECKPOINT_EVERY`] until `stop`'s
/// sender is dropped, then a truncating one.
fn checkpoints(connection: &Connection, stop: &mpsc::Receiver<()>) {
    // A failure repeats every tick while it lasts (a full disk): said once, and its end said.
    let mut failing = false;
    while let Err(mpsc::RecvTimeoutError::Timeout) = stop.recv_timeout(CHECKPOINT_EVERY) {
        match checkpoint(connection, "PASSIVE") {
            Err(error) if !failing => {
                failing = true;
                tracing::warn!(%error, "SQLite checkpoints fail; retrying every tick until they succeed");
            }
            Ok(_) if failing => {
                failing = false;
                tracing::info!("SQLite checkpoints succeed again");
            }
            _ => {}
        }
    }
    if let Err(error) = checkpoint(connection, "TRUNCATE") {
        tracing::warn!(%error, "SQLite checkpoint on closing failed");
    }
}

/// Runs `PRAGMA wal_checkpoint(MODE)`; whether every frame of the log is now in the database
/// file (so that the next write transaction starts the log over).
fn checkpoint(connection: &Connection, mode: &str) -> rusqlite::Result<bool> {
    connection.query_row(&format!("PRAGMA wal_checkpoint({mode})"), [], |row| {
        let (busy, log, copied): (i64, i64, i64) = (row.get(0)?, row.get(1)?, row.get(2)?);
        Ok(busy == 0 && log == copied)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// A database file with a parent table and a child table whose rows must name a parent.
    fn database() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.db");
        let setup = Connection::open(&path).unwrap();
        setup
            .execute_batch(
                "PRAGMA journal_mode = WAL;
                 CREATE TABLE parent (id INTEGER PRIMARY KEY);
                 CREATE TABLE child (id INTEGER PRIMARY KEY AUTOINCREMENT,
                                     parent INTEGER NOT NULL REFERENCES parent (id));
                 INSERT INTO parent (id) VALUES (1);",
            )
            .unwrap();
        (dir, path)
    }

    async fn add_child(writer: &Writer, parent: i64) -> Result<i64, StoreError> {
        writer
            .write(move |db| {
                db.prepare_cached("INSERT INTO child (parent) VALUES (?) RETURNING id")?
                    .query_row([parent], |row| row.get(0))
            })
            .await
    }

    /// Keeps the writer thread busy for a while, so that the writes sent meanwhile queue up and
    /// are committed as one batch.
    fn hold(writer: &Arc<Writer>) -> tokio::task::JoinHandle<()> {
        let writer = Arc::clone(writer);
        tokio::spawn(async move {
            writer
                .write(|_| {
                    std::thread::sleep(Duration::from_millis(100));
                    Ok(())
                })
                .await
                .unwrap();
        })
    }

    fn count(path: &Path) -> i64 {
        Connection::open(path)
            .unwrap()
            .query_row("SELECT count(*) FROM child", [], |row| row.get(0))
            .unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_writes_are_each_committed_once_with_their_own_ids() {
        let (_dir, path) = database();
        let writer = Arc::new(Writer::open(&path).unwrap());
        let held = hold(&writer);
        tokio::time::sleep(Duration::from_millis(20)).await;
        let tasks: Vec<_> = (0..500)
            .map(|_| {
                let writer = Arc::clone(&writer);
                tokio::spawn(async move { add_child(&writer, 1).await.unwrap() })
            })
            .collect();
        let mut ids = Vec::new();
        for task in tasks {
            ids.push(task.await.unwrap());
        }
        held.await.unwrap();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), 500, "every write got an id of its own");
        assert_eq!(count(&path), 500, "and is in the database once answered");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failing_write_never_takes_the_others_of_its_batch_down() {
        let (_dir, path) = database();
        let writer = Arc::new(Writer::open(&path).unwrap());
        let held = hold(&writer);
        tokio::time::sleep(Duration::from_millis(20)).await;
        // Every fifth write names a parent that does not exist; all are queued behind the held
        // job, so they are tried as batches first.
        let tasks: Vec<_> = (0..200)
            .map(|n| {
                let writer = Arc::clone(&writer);
                let parent = if n % 5 == 0 { 99 } else { 1 };
                tokio::spawn(async move { (parent, add_child(&writer, parent).await) })
            })
            .collect();
        for task in tasks {
            match task.await.unwrap() {
                (1, result) => assert!(result.is_ok(), "{result:?}"),
                (_, result) => {
                    let error = result.unwrap_err();
                    assert!(error.is_foreign_key_violation(), "{error}");
                }
            }
        }
        held.await.unwrap();
        assert_eq!(count(&path), 160);
    }

    #[tokio::test]
    async fn closing_the_store_checkpoints_the_log_into_the_database_file() {
        let (_dir, path) = database();
        let writer = Writer::open(&path).unwrap();
        for _ in 0..100 {
            add_child(&writer, 1).await.unwrap();
        }
        drop(writer);
        let wal = path.with_extension("db-wal");
        let mut truncated = false;
        for _ in 0..200 {
            if std::fs::metadata(&wal).map_or(true, |m| m.len() == 0) {
                truncated = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(truncated, "the log is emptied when the store closes");
        assert_eq!(count(&path), 100);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_log_starts_over_under_a_steady_stream_of_writes() {
        let (_dir, path) = database();
        let writer = Writer::open(&path).unwrap();
        writer
            .write(|db| db.execute_batch("CREATE TABLE blob (data TEXT NOT NULL)"))
            .await
            .unwrap();
        let wal = path.with_extension("db-wal");
        let data = "x".repeat(8 * 1024);
        let mut largest = 0;
        // 6,000 writes of 8 KiB: about 100 MB of log frames if the log never started over.
        for _ in 0..6_000 {
            let data = data.clone();
            writer
                .write(move |db| db.execute("INSERT INTO blob (data) VALUES (?)", [&data]))
                .await
                .unwrap();
            largest = largest.max(std::fs::metadata(&wal).map_or(0, |m| m.len()));
        }
        assert!(
            largest < 64 * 1024 * 1024,
            "the log grew to {largest} bytes: it never started over"
        );
    }

    #[tokio::test]
    async fn a_failed_write_is_an_error_and_the_connection_goes_on() {
        let (_dir, path) = database();
        let writer = Writer::open(&path).unwrap();
        let error = writer
            .write(|db| db.execute("INSERT INTO nowhere VALUES (1)", []))
            .await
            .unwrap_err();
        assert!(error.to_string().contains("no such table"), "{error}");
        // The connection goes on working after a failed write.
        assert!(add_child(&writer, 1).await.is_ok());
    }
}
