//! [`Writer`]: the SQLite store's one writing connection, with group commit by combining. (The
//! threads that keep its log short are in [`super::checkpoint`]; the one that commits the writes
//! nobody waits for, in [`super::commit`].)
//!
//! Every write of the SQLite store is a job put in the writer's queue. The caller then tries to
//! take the connection: when no one holds it, the caller becomes the *combiner* and runs every
//! job that is waiting (up to [`MAX_BATCH`] at a time) in one `BEGIN IMMEDIATE … COMMIT`, answers
//! each job's caller once that transaction is committed, and goes on until the queue is empty.
//! When someone holds it, the caller just waits for its answer: the holder runs the job with its
//! next batch. Concurrent turns thus share one commit — the pages they all touch (the messages
//! table's last leaf, its indexes' last leaves, the conversation row, `sqlite_sequence`) are
//! written to the log once per batch instead of once per write — and a write costs no hand-off
//! to another thread: on a lightly loaded server the write runs at once on the caller's own
//! thread, without waking anyone. (An earlier version ran every write on a writer thread of its
//! own; its two thread switches per write were the largest single cost of a turn.)
//!
//! A write nobody waits on at once (a turn's opening, stored while the model is called) is
//! queued with [`Writer::write_soon`]: it does not take the connection but waits to be taken
//! along by the next write that does — same transaction, ahead of it — or, after
//! [`HOLD_SOON`], is committed on a timer with whatever else is queued by then. On one core
//! the combiner runs as soon as a write is queued, so writes rarely wait to share a commit;
//! held back, a turn's two writes share one.
//!
//! A combiner on a runtime thread runs at most [`INLINE_BATCHES`] batches and hands what is
//! still queued to a blocking thread (`spawn_blocking`), so one request never waits behind a
//! stream of others' writes. Should any job of a batch fail (a foreign key, a full disk), the
//! batch is rolled back and its jobs are run again one by one, each in its own transaction, so
//! one bad write never takes others down with it. A job is run even when its caller has gone
//! away meanwhile (the request was dropped): the write stands.

use super::StoreError;
use super::checkpoint::{self, FINISH_CHECKPOINT_AFTER, JOURNAL_SIZE_LIMIT};
use super::{Access, commit, connect, fault};
use prometheus_client::metrics::histogram::Histogram;
use rusqlite::Connection;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, TryLockError, Weak, mpsc};
use std::time::Duration;
use tokio::sync::oneshot;

/// Most writes committed in one transaction.
const MAX_BATCH: usize = 256;

/// Most batches a combiner runs on a runtime thread before it hands the queue to a blocking
/// thread.
const INLINE_BATCHES: usize = 4;

/// The longest a write queued with [`Writer::write_soon`] waits for another write to take it
/// along into its commit before it is committed on its own.
pub(super) const HOLD_SOON: Duration = Duration::from_millis(5);

/// Detached writes ([`Writer::write_detached`]) waiting for their commit past which the store
/// stops answering first and has its callers wait for their commits again
/// ([`Writer::backlogged`]): with a stalled disk, a queue nobody waits on would grow without
/// bound (~10 KB a turn). About four seconds of writes at 1,000 turns a second.
const MAX_DETACHED: usize = 8192;

/// One write: it runs inside a transaction, and its result waits for the commit.
pub(super) trait Job: Send {
    /// Runs the write; the result is kept until [`Job::deliver`].
    fn run(&mut self, connection: &Connection) -> rusqlite::Result<()>;
    /// Answers the caller: the kept result once committed, or `failure`.
    fn deliver(self: Box<Self>, failure: Option<StoreError>);
}

/// A [`Job`] nobody waits on ([`Writer::write_detached`]): its result goes to `done`.
struct Detached<T, F, G> {
    work: F,
    value: Option<T>,
    done: Option<G>,
    shared: Weak<Shared>,
}

impl<T, F, G> Job for Detached<T, F, G>
where
    T: Send,
    F: FnMut(&Connection) -> rusqlite::Result<T> + Send,
    G: FnOnce(Result<T, StoreError>) + Send,
{
    fn run(&mut self, connection: &Connection) -> rusqlite::Result<()> {
        self.value = Some((self.work)(connection)?);
        Ok(())
    }

    fn deliver(mut self: Box<Self>, failure: Option<StoreError>) {
        let result = match (failure, self.value.take()) {
            (Some(error), _) => Err(error),
            (None, Some(value)) => Ok(value),
            (None, None) => Err(StoreError::Closed),
        };
        if let Some(done) = self.done.take() {
            done(result);
        }
        if let Some(shared) = self.shared.upgrade() {
            shared.detached.fetch_sub(1, Ordering::AcqRel);
        }
    }
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

/// The SQLite store's writing connection (cheap to clone).
#[derive(Clone)]
pub(super) struct Writer {
    pub(super) shared: Arc<Shared>,
}

impl std::fmt::Debug for Writer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer")
            .field("queued", &lock(&self.shared.queue).len())
            .finish_non_exhaustive()
    }
}

/// What the writer's clones and the checkpointer share.
pub(super) struct Shared {
    /// The writing connection; whoever holds it runs the queue.
    pub(super) connection: Mutex<Connection>,
    /// Jobs waiting for a combiner, oldest first.
    pub(super) queue: Mutex<Vec<Box<dyn Job>>>,
    /// Writes committed since the last finished checkpoint.
    pub(super) since_checkpoint: AtomicUsize,
    /// Writes queued with [`Writer::write_detached`] and not yet committed (or failed).
    pub(super) detached: AtomicUsize,
    /// Wakes the checkpointer before its tick once [`FINISH_CHECKPOINT_AFTER`] writes are
    /// reached, or when it sleeps idle. Dropped with the last writer: the checkpointer then
    /// makes its last checkpoint and ends.
    pub(super) wake: mpsc::SyncSender<()>,
    /// Has the committer thread run the queue soon ([`Writer::write_detached`]).
    pub(super) commit_due: mpsc::SyncSender<()>,
    /// The checkpointer found nothing to copy and sleeps until the next commit wakes it.
    pub(super) checkpointer_idle: AtomicBool,
    /// A timer will run the queue for writes queued with [`Writer::write_soon`].
    pub(super) flush_due: AtomicBool,
    /// Every frame of the log is in the database file: the next commit starts the log over,
    /// and SQLite syncs the new log's header in that commit — an `fsync` in the commit path, the
    /// only one (0.3–1 ms on the benchmark's disk, up to ~15 ms on a slow day). So the next
    /// batch runs on a blocking thread, never inline on a runtime thread, where that `fsync`
    /// would stall every request the thread serves.
    pub(super) log_copied: AtomicBool,
    /// The thread of each batch that ran while [`Shared::log_copied`] was set (tests).
    #[cfg(test)]
    pub(super) restarted_on: Mutex<Vec<Option<String>>>,
    /// The runtime the store was opened on, if any: its blocking threads take over a long
    /// queue.
    pub(super) runtime: Option<tokio::runtime::Handle>,
    /// How long each hold of the writes lasted: the finishing checkpoint that lets the log
    /// start over, or a checkpointer that fell behind being caught up ([`Writer::pauses`]).
    pub(super) pauses: Histogram,
    /// The nice value of each thread that finished a checkpoint (tests).
    #[cfg(all(test, target_os = "linux"))]
    pub(super) finished_at_nice: Mutex<Vec<i32>>,
}

/// `mutex`'s guard; a poisoned mutex (a panic while it was held) is taken as it is: the
/// connection and the queue stay usable.
pub(super) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Where a combiner runs.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Combiner {
    /// On a runtime thread: a few batches, then the rest goes to a blocking thread.
    Inline,
    /// On a thread of its own (a blocking thread, the checkpointer): until the queue is empty.
    Blocking,
}

impl Shared {
    /// Runs the queued jobs unless someone else holds the connection (then they do).
    pub(super) fn combine(self: &Arc<Self>, combiner: Combiner) {
        loop {
            let connection = match self.connection.try_lock() {
                Ok(connection) => connection,
                Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
                Err(TryLockError::WouldBlock) => return,
            };
            let mut batches = 0;
            loop {
                // The checkpointer does not keep up (a core that is never idle, a slow disk):
                // the writes wait for a checkpoint, on a blocking thread, so the log stays
                // bounded.
                let overdue =
                    self.since_checkpoint.load(Ordering::Relaxed) >= 2 * FINISH_CHECKPOINT_AFTER;
                let restarts = self.log_copied.load(Ordering::Acquire);
                if combiner == Combiner::Inline
                    && (batches == INLINE_BATCHES || overdue || restarts)
                    && self.runtime.is_some()
                {
                    drop(connection);
                    self.hand_over();
                    return;
                }
                if overdue {
                    self.wait_for_checkpoint(&connection);
                }
                let batch: Vec<Box<dyn Job>> = {
                    let mut queue = lock(&self.queue);
                    let take = queue.len().min(MAX_BATCH);
                    queue.drain(..take).collect()
                };
                if batch.is_empty() {
                    break;
                }
                let written = batch.len()
                    + self
                        .since_checkpoint
                        .fetch_add(batch.len(), Ordering::Relaxed);
                #[cfg(test)]
                if restarts {
                    lock(&self.restarted_on).push(std::thread::current().name().map(Into::into));
                }
                run_batch(&connection, batch);
                if restarts {
                    self.log_copied.store(false, Ordering::Release);
                }
                batches += 1;
                let idle = self.checkpointer_idle.load(Ordering::Relaxed)
                    && self.checkpointer_idle.swap(false, Ordering::Relaxed);
                if idle || written >= FINISH_CHECKPOINT_AFTER {
                    // Full already, or the checkpointer is just busy: either way it will look.
                    let _ = self.wake.try_send(());
                }
            }
            drop(connection);
            // A job queued after the last look but before the connection was let go found it
            // held and left the work to us: look again.
            if lock(&self.queue).is_empty() {
                return;
            }
        }
    }

    /// Has the queue run after [`HOLD_SOON`] unless a timer is already set (it runs whatever
    /// is queued by then); with no runtime to time it, at once.
    fn flush_soon(self: &Arc<Self>) {
        if self.flush_due.swap(true, Ordering::AcqRel) {
            return;
        }
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                let shared = Arc::clone(self);
                runtime.spawn(async move {
                    tokio::time::sleep(HOLD_SOON).await;
                    // Cleared first: a write queued from now on sets a timer of its own
                    // unless this run takes it along.
                    shared.flush_due.store(false, Ordering::Release);
                    shared.combine(Combiner::Inline);
                });
            }
            Err(_) => {
                self.flush_due.store(false, Ordering::Release);
                self.combine(Combiner::Blocking);
            }
        }
    }

    /// Has the queue run on a blocking thread of the runtime (normal priority: the
    /// checkpointer's is low) — the caller's runtime, else the one the store was opened on — or
    /// here when there is none.
    pub(super) fn hand_over(self: &Arc<Self>) {
        // A job queued after this look finds the connection free and runs itself.
        if lock(&self.queue).is_empty() {
            return;
        }
        let runtime = tokio::runtime::Handle::try_current()
            .ok()
            .or_else(|| self.runtime.clone());
        match runtime {
            Some(runtime) => {
                let shared = Arc::clone(self);
                runtime.spawn_blocking(move || shared.combine(Combiner::Blocking));
            }
            None => self.combine(Combiner::Blocking),
        }
    }
}

impl Drop for Shared {
    /// The last writer is gone: jobs whose callers went away are still run.
    fn drop(&mut self) {
        let jobs = std::mem::take(self.queue.get_mut().unwrap_or_else(PoisonError::into_inner));
        if !jobs.is_empty() {
            let connection = self
                .connection
                .get_mut()
                .unwrap_or_else(PoisonError::into_inner);
            run_batch(connection, jobs);
        }
    }
}

impl Writer {
    /// Opens the writing connection to the database file at `path` (which must exist, with its
    /// migrations applied) and starts the writer's threads (see [`Writer::start`]).
    #[cfg(test)]
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        Self::start(writing_connection(path)?, path)
    }

    /// Takes `connection` (from [`writing_connection`], to the database file at `path`) as the
    /// writing connection and starts the checkpointer thread, the finisher and the committer.
    /// They end when the last clone of the writer is dropped, the checkpointer after a final
    /// `TRUNCATE` checkpoint.
    pub fn start(connection: Connection, path: &Path) -> Result<Self, StoreError> {
        let checkpointer = connect(path, Access::Write)?;
        let (wake, woken) = mpsc::sync_channel::<()>(1);
        let (commit_due, due) = mpsc::sync_channel::<()>(1);
        let shared = Arc::new(Shared {
            connection: Mutex::new(connection),
            queue: Mutex::new(Vec::new()),
            since_checkpoint: AtomicUsize::new(0),
            detached: AtomicUsize::new(0),
            wake,
            commit_due,
            checkpointer_idle: AtomicBool::new(false),
            flush_due: AtomicBool::new(false),
            log_copied: AtomicBool::new(false),
            #[cfg(test)]
            restarted_on: Mutex::new(Vec::new()),
            runtime: tokio::runtime::Handle::try_current().ok(),
            pauses: Histogram::new(checkpoint::pause_buckets()),
            #[cfg(all(test, target_os = "linux"))]
            finished_at_nice: Mutex::new(Vec::new()),
        });
        let weak = Arc::downgrade(&shared);
        let committing = Arc::downgrade(&shared);
        let (finish, finishes) = mpsc::channel::<checkpoint::Finish>();
        let thread = |name: &str| std::thread::Builder::new().name(name.into());
        let failed = |error| StoreError::Config(format!("cannot start a thread: {error}"));
        thread("bridle-sqlite-finish")
            .spawn(move || checkpoint::finisher(&finishes))
            .map_err(failed)?;
        thread("bridle-sqlite-commit")
            .spawn(move || commit::committer(&committing, &due))
            .map_err(failed)?;
        thread("bridle-sqlite-checkpoint")
            .spawn(move || checkpoint::checkpoints(&checkpointer, &weak, &woken, &finish))
            .map_err(failed)?;
        Ok(Self { shared })
    }

    /// The lengths of the pauses of the writes (seconds): once every [`FINISH_CHECKPOINT_AFTER`]
    /// writes, the checkpointer holds them while it copies the last of the log, so that the log
    /// can start over; on a disk, that hold is two `fsync`s, and the writes queued meanwhile —
    /// the requests waiting on them — wait that long (bench/README.md, gateway section). The
    /// waits for a checkpointer that fell behind count too. A handle on the writer's own
    /// series: the engine registers it as `bridle_store_write_pause_seconds`.
    pub fn pauses(&self) -> Histogram {
        self.shared.pauses.clone()
    }

    /// Runs `work` on the writing connection inside a transaction (shared with whatever other
    /// writes are waiting) and returns its result once that transaction is committed. `work`
    /// may run more than once (again on its own when another write of its batch failed): it
    /// must only write, never act outside the database. It may run on the calling thread.
    pub async fn write<T, F>(&self, work: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnMut(&Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        let answer = self.queue(work);
        // No await between queueing and combining: once queued, the job is run whatever
        // becomes of this future.
        self.shared.combine(Combiner::Inline);
        answer.await
    }

    /// Queues `work` like [`Writer::write`] but does not run it now: it is committed with the
    /// next write that runs — in the same transaction, before any write queued after it — or
    /// on its own after [`HOLD_SOON`], whichever comes first. For a write nobody waits on at
    /// once (a turn's opening message, stored while the model is called): it shares a commit
    /// instead of costing one. Queued before this returns; the future resolves once committed,
    /// and need not be awaited (the write stands).
    pub fn write_soon<T, F>(
        &self,
        work: F,
    ) -> impl Future<Output = Result<T, StoreError>> + Send + 'static
    where
        T: Send + 'static,
        F: FnMut(&Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        let answer = self.queue(work);
        self.shared.flush_soon();
        answer
    }

    /// Queues `work` like [`Writer::write_soon`] for a caller that does not wait for it at all:
    /// its answer has gone out already (`store_commit = "after_reply"`). It is committed by the
    /// committer thread ([`HOLD_SOON`] later, with whatever else is queued then) unless another
    /// write takes it along first; its result goes to `done`, on whichever thread ran it (a
    /// failure is lost unless `done` reports it). [`Writer::settled`] waits for it.
    pub fn write_detached<T, F, G>(&self, work: F, done: G)
    where
        T: Send + 'static,
        F: FnMut(&Connection) -> rusqlite::Result<T> + Send + 'static,
        G: FnOnce(Result<T, StoreError>) + Send + 'static,
    {
        self.shared.detached.fetch_add(1, Ordering::AcqRel);
        lock(&self.shared.queue).push(Box::new(Detached {
            work,
            value: None,
            done: Some(done),
            shared: Arc::downgrade(&self.shared),
        }));
        // Already due unless the committer took the last signal: either way it runs the queue.
        let _ = self.shared.commit_due.try_send(());
    }

    /// Too many detached writes wait for their commit ([`MAX_DETACHED`]): callers should wait
    /// for theirs ([`Writer::write`]) until the writer catches up.
    pub fn backlogged(&self) -> bool {
        self.shared.detached.load(Ordering::Acquire) >= MAX_DETACHED
    }

    /// Returns once every write queued with [`Writer::write_detached`] before this call is
    /// committed (or has failed): a read after it sees them. At once when none is pending;
    /// else by committing an empty write queued behind them (writes commit in queue order).
    pub async fn settled(&self) {
        if self.shared.detached.load(Ordering::Acquire) > 0 {
            // Its own failure is no concern of the caller's: the writes it waits for report
            // theirs.
            let _ = self.write(|_| Ok(())).await;
        }
    }

    /// Puts `work` in the queue (now, not when the future is first polled); the future
    /// resolves to its result once committed.
    fn queue<T, F>(&self, work: F) -> impl Future<Output = Result<T, StoreError>> + Send + 'static
    where
        T: Send + 'static,
        F: FnMut(&Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        lock(&self.shared.queue).push(Box::new(Op {
            work,
            done: None,
            reply,
        }));
        async move { answer.await.map_err(|_| StoreError::Closed)? }
    }
}

/// The writing connection to the database file at `path`: set up as every connection of the
/// store, without automatic checkpoints (the checkpointer makes them) and with the log's size
/// limit. A database SQLite could only open for reading (a read-only file or volume) is refused:
/// a store that cannot record attempts must not start.
pub(super) fn writing_connection(path: &Path) -> Result<Connection, StoreError> {
    let connection = connect(path, Access::Write)?;
    // SQLite quietly opens a file it may not write for reading only.
    if connection.is_readonly(rusqlite::MAIN_DB).map_err(fault)? {
        return Err(StoreError::Config(format!(
            "the database {} is read-only (a read-only file or volume): Bridle must be able to record every attempt",
            path.display()
        )));
    }
    connection
        .pragma_update(None, "wal_autocheckpoint", 0)
        .map_err(fault)?;
    connection
        .pragma_update(None, "journal_size_limit", JOURNAL_SIZE_LIMIT)
        .map_err(fault)?;
    Ok(connection)
}

/// Runs `batch` as one transaction and answers its jobs; when that fails, each job again in a
/// transaction of its own.
fn run_batch(connection: &Connection, mut batch: Vec<Box<dyn Job>>) {
    let together = in_transaction(connection, |connection| {
        batch.iter_mut().try_for_each(|job| job.run(connection))
    });
    match together {
        Ok(()) => batch.into_iter().for_each(|job| job.deliver(None)),
        Err(error) if batch.len() == 1 => {
            if let Some(job) = batch.pop() {
                job.deliver(Some(fault(error)));
            }
        }
        // One write failed: every write of the batch runs again on its own.
        Err(_) => {
            for mut job in batch {
                let alone = in_transaction(connection, |connection| job.run(connection));
                job.deliver(alone.err().map(fault));
            }
        }
    }
}

/// Runs `work` in one immediate transaction: committed when it succeeds, rolled back otherwise.
fn in_transaction(
    connection: &Connection,
    work: impl FnOnce(&Connection) -> rusqlite::Result<()>,
) -> rusqlite::Result<()> {
    control(connection, "BEGIN IMMEDIATE")?;
    let result = work(connection).and_then(|()| control(connection, "COMMIT"));
    if result.is_err() && !connection.is_autocommit() {
        // Nothing to do if the rollback fails too: the connection stays usable either way,
        // and the caller is told of the first error.
        let _ = control(connection, "ROLLBACK");
    }
    result
}

/// Runs a transaction-control statement from the connection's statement cache: `execute_batch`
/// would parse and prepare it again on every commit (~1.5 % of the gateway's CPU a turn).
fn control(connection: &Connection, sql: &str) -> rusqlite::Result<()> {
    connection.prepare_cached(sql)?.execute([]).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sqlite::testing::*;
    use std::sync::Arc;
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

    fn add_child_soon(
        writer: &Writer,
    ) -> impl Future<Output = Result<i64, StoreError>> + Send + 'static {
        writer.write_soon(|db| {
            db.prepare_cached("INSERT INTO child (parent) VALUES (1) RETURNING id")?
                .query_row([], |row| row.get(0))
        })
    }

    // One runtime thread: the hold's timer cannot fire between the steps below.
    #[tokio::test(flavor = "current_thread")]
    async fn a_write_queued_soon_is_taken_along_by_the_next_write() {
        use futures::FutureExt;
        let (_dir, path) = database();
        let writer = Writer::open(&path).unwrap();
        let soon = add_child_soon(&writer);
        assert_eq!(count(&path), 0, "held back, not committed on its own");
        let later = add_child(&writer, 1).await.unwrap();
        let first = soon
            .now_or_never()
            .expect("committed by the time the later write is")
            .unwrap();
        assert!(first < later, "stored before the write queued after it");
        assert_eq!(count(&path), 2);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn writes_queued_soon_are_committed_on_their_own_after_a_moment() {
        let (_dir, path) = database();
        let writer = Writer::open(&path).unwrap();
        // Nobody waits on this one: it is committed all the same.
        drop(add_child_soon(&writer));
        let awaited = add_child_soon(&writer);
        let id = tokio::time::timeout(Duration::from_secs(10), awaited)
            .await
            .expect("committed without another write to take it along")
            .unwrap();
        assert_eq!(id, 2);
        assert_eq!(count(&path), 2);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_long_queue_is_run_to_the_end_when_its_combiner_hands_it_over() {
        let (_dir, path) = database();
        let writer = Arc::new(Writer::open(&path).unwrap());
        let held = hold(&writer);
        tokio::time::sleep(Duration::from_millis(20)).await;
        // More batches than a combiner runs on a runtime thread.
        let writes = MAX_BATCH * (INLINE_BATCHES + 2);
        let tasks: Vec<_> = (0..writes)
            .map(|_| {
                let writer = Arc::clone(&writer);
                tokio::spawn(async move { add_child(&writer, 1).await.unwrap() })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
        held.await.unwrap();
        assert_eq!(count(&path), i64::try_from(writes).unwrap());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_write_whose_caller_went_away_is_committed_all_the_same() {
        use futures::FutureExt;
        let (_dir, path) = database();
        let writer = Arc::new(Writer::open(&path).unwrap());
        let held = hold(&writer);
        tokio::time::sleep(Duration::from_millis(20)).await;
        // Polled once (queued behind the held write), then dropped.
        assert!(add_child(&writer, 1).now_or_never().is_none());
        held.await.unwrap();
        // Run by the holder, or handed to a blocking thread (the first commit to a fresh log,
        // which syncs its header, never runs on a runtime thread): committed either way.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while count(&path) < 1 && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(count(&path), 1);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn detached_writes_queued_past_the_limit_say_so_until_committed() {
        let (_dir, path, writer) = blob_store().await;
        let writer = Arc::new(writer);
        let held = hold(&writer);
        tokio::time::sleep(Duration::from_millis(20)).await;
        for n in 0..MAX_DETACHED {
            assert!(!writer.backlogged(), "backlogged at {n}");
            writer.write_detached(
                move |db| db.execute("INSERT INTO blob (data) VALUES (?)", [n.to_string()]),
                |_| {},
            );
        }
        assert!(writer.backlogged());
        held.await.unwrap();
        writer.settled().await;
        assert!(!writer.backlogged());
        assert_eq!(count_blobs(&path), i64::try_from(MAX_DETACHED).unwrap());
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
