//! [`Writer`]: the SQLite store's one writing connection, with group commit by combining; and
//! the checkpointer thread that keeps the write-ahead log short off the write path.
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
//!
//! Automatic checkpoints are off on the writing connection: a checkpoint run by the connection that
//! commits would stall the write that triggered it while the whole log is copied into the database
//! file. Instead the checkpointer thread runs a `PASSIVE` checkpoint on a connection of its own
//! every [`CHECKPOINT_EVERY`] while writes come in quickly (every [`CHECKPOINT_AT_LEAST_EVERY`]
//! while they trickle in: a pass costs its `fsync`s however little it copies); it copies the bulk
//! of the log without blocking writes or readers. Passes are frequent because each starts with an
//! `fsync` of the log, and an `fsync` costs what it has to flush: small passes keep every `fsync`
//! short, the one in the pause below included. An idle checkpointer (nothing left to copy) sleeps
//! until the next commit wakes it. Under a steady stream of writes such a checkpoint never catches
//! up with the end of the log (new frames arrive while it copies), and SQLite starts the log over
//! only once every frame is copied; so after every [`FINISH_CHECKPOINT_AFTER`] writes the
//! checkpointer has the finisher thread (at normal priority, since the writes wait for it) take
//! the writing connection for a moment — writes queue meanwhile — and finish the copy: only the
//! frames written since the checkpointer's last pass, a short pause. The next transaction
//! starts the log over, writing over the log file in place.
//! Should the checkpointer not keep up (a core that is never idle, a slow disk), from twice that
//! many writes on the writes wait: the combiner, moved to a blocking thread, runs `FULL`
//! checkpoints until one completes, so the log stays bounded. When the store is closed the
//! checkpointer runs a last `TRUNCATE` checkpoint.

use super::StoreError;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use rusqlite::{Connection, OpenFlags};
use std::path::Path;
#[cfg(test)]
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, TryLockError, Weak, mpsc};
use std::time::Duration;
use tokio::sync::oneshot;

/// Most writes committed in one transaction.
const MAX_BATCH: usize = 256;

/// Most batches a combiner runs on a runtime thread before it hands the queue to a blocking
/// thread.
const INLINE_BATCHES: usize = 4;

/// How often the checkpointer copies the log into the database file while writes come in.
/// Every 100 ms, the finishing pause took ~5 ms on the benchmark's disk (two `fsync`s of
/// 100 ms of log and database writes); every 10 ms, ~1 ms (bench/README.md, gateway section).
const CHECKPOINT_EVERY: Duration = Duration::from_millis(10);

/// Writes after which a tick brings a pass; with fewer, the pass waits for
/// [`CHECKPOINT_AT_LEAST_EVERY`]. A pass costs two `fsync`s however little it copies: at 250
/// turns/s, a pass every 10 ms made the CPU per turn twice what it is at 1,000/s (1.35 against
/// 0.65 ms, bench/README.md); at 1,000/s (~20 writes a tick) passes still come every tick.
const PASS_AFTER_WRITES: usize = 16;

/// The longest a pass waits for [`PASS_AFTER_WRITES`] while writes come in.
const CHECKPOINT_AT_LEAST_EVERY: Duration = Duration::from_millis(50);

/// How long a checkpointer with nothing left to copy sleeps unless a commit wakes it.
const IDLE_CHECKPOINTER_SLEEPS: Duration = Duration::from_secs(1);

/// Writes after which the checkpointer finishes a checkpoint while holding the writing
/// connection.
const FINISH_CHECKPOINT_AFTER: usize = 2048;

/// Passes a finishing checkpoint makes without holding the writer, at most, to catch up …
const CATCH_UP_PASSES: usize = 4;

/// … until at most this many frames are left to copy while holding it.
const FINISH_WHEN_LEFT: i64 = 64;

/// The checkpointer thread's nice value (Linux).
#[cfg(target_os = "linux")]
const CHECKPOINTER_NICE: i32 = 10;

/// How long a connection waits for another's lock (a migration, a checkpoint) before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The log file is cut back to this size when it starts over (bytes). Above what a
/// [`FINISH_CHECKPOINT_AFTER`] cycle writes (~90 MB at ~21 frames of 4 KiB a turn), so the file
/// is written over in place: cut back at every start, it grew again each cycle, and those
/// writes were the slowest (bench/README.md). A log that grew past it (readers holding
/// checkpoints back) is still cut back.
const JOURNAL_SIZE_LIMIT: i64 = 256 * 1024 * 1024;

/// The longest a write queued with [`Writer::write_soon`] waits for another write to take it
/// along into its commit before it is committed on its own.
const HOLD_SOON: Duration = Duration::from_millis(5);

/// Detached writes ([`Writer::write_detached`]) waiting for their commit past which the store
/// stops answering first and has its callers wait for their commits again
/// ([`Writer::backlogged`]): with a stalled disk, a queue nobody waits on would grow without
/// bound (~10 KB a turn). About four seconds of writes at 1,000 turns a second.
const MAX_DETACHED: usize = 8192;

/// Prepared statements kept per connection.
const STATEMENT_CACHE: usize = 32;

/// One write: it runs inside a transaction, and its result waits for the commit.
trait Job: Send {
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
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Writer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer")
            .field("queued", &lock(&self.shared.queue).len())
            .finish_non_exhaustive()
    }
}

/// What the writer's clones and the checkpointer share.
struct Shared {
    /// The writing connection; whoever holds it runs the queue.
    connection: Mutex<Connection>,
    /// Jobs waiting for a combiner, oldest first.
    queue: Mutex<Vec<Box<dyn Job>>>,
    /// Writes committed since the last finished checkpoint.
    since_checkpoint: AtomicUsize,
    /// Writes queued with [`Writer::write_detached`] and not yet committed (or failed).
    detached: AtomicUsize,
    /// Wakes the checkpointer before its tick once [`FINISH_CHECKPOINT_AFTER`] writes are
    /// reached, or when it sleeps idle. Dropped with the last writer: the checkpointer then
    /// makes its last checkpoint and ends.
    wake: mpsc::SyncSender<()>,
    /// Has the committer thread run the queue soon ([`Writer::write_detached`]).
    commit_due: mpsc::SyncSender<()>,
    /// The checkpointer found nothing to copy and sleeps until the next commit wakes it.
    checkpointer_idle: AtomicBool,
    /// A timer will run the queue for writes queued with [`Writer::write_soon`].
    flush_due: AtomicBool,
    /// Every frame of the log is in the database file: the next commit starts the log over,
    /// and SQLite syncs the new log's header in that commit — an `fsync` in the commit path, the
    /// only one (0.3–1 ms on the benchmark's disk, up to ~15 ms on a slow day). So the next
    /// batch runs on a blocking thread, never inline on a runtime thread, where that `fsync`
    /// would stall every request the thread serves.
    log_copied: AtomicBool,
    /// The thread of each batch that ran while [`Shared::log_copied`] was set (tests).
    #[cfg(test)]
    restarted_on: Mutex<Vec<Option<String>>>,
    /// The runtime the store was opened on, if any: its blocking threads take over a long
    /// queue.
    runtime: Option<tokio::runtime::Handle>,
    /// How long each hold of the writes lasted: the finishing checkpoint that lets the log
    /// start over, or a checkpointer that fell behind being caught up ([`Writer::pauses`]).
    pauses: Histogram,
    /// The nice value of each thread that finished a checkpoint (tests).
    #[cfg(all(test, target_os = "linux"))]
    finished_at_nice: Mutex<Vec<i32>>,
}

/// `mutex`'s guard; a poisoned mutex (a panic while it was held) is taken as it is: the
/// connection and the queue stay usable.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Where a combiner runs.
#[derive(Clone, Copy, PartialEq)]
enum Combiner {
    /// On a runtime thread: a few batches, then the rest goes to a blocking thread.
    Inline,
    /// On a thread of its own (a blocking thread, the checkpointer): until the queue is empty.
    Blocking,
}

impl Shared {
    /// Runs the queued jobs unless someone else holds the connection (then they do).
    fn combine(self: &Arc<Self>, combiner: Combiner) {
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

    /// Runs a `FULL` checkpoint on the writing connection, again while the checkpointer's pass
    /// keeps it busy (up to the busy timeout).
    fn wait_for_checkpoint(&self, connection: &Connection) {
        let started = std::time::Instant::now();
        loop {
            match checkpoint(connection, "FULL") {
                Ok(progress) if progress.complete() => {
                    self.since_checkpoint.store(0, Ordering::Relaxed);
                    break;
                }
                Ok(progress) if progress.busy && started.elapsed() < BUSY_TIMEOUT => {
                    std::thread::sleep(Duration::from_millis(1));
                }
                // A reader on an old snapshot: the writes go on, and the next batch tries again.
                Ok(_) => break,
                Err(error) => {
                    tracing::warn!(%error, "SQLite checkpoint failed");
                    break;
                }
            }
        }
        self.pauses.observe(started.elapsed().as_secs_f64());
    }

    /// Has the queue run on a blocking thread of the runtime (normal priority: the
    /// checkpointer's is low) — the caller's runtime, else the one the store was opened on — or
    /// here when there is none.
    fn hand_over(self: &Arc<Self>) {
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
    /// migrations applied) and starts the checkpointer thread. It ends when the last clone of
    /// the writer is dropped, after a final `TRUNCATE` checkpoint.
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
            pauses: Histogram::new(pause_buckets()),
            #[cfg(all(test, target_os = "linux"))]
            finished_at_nice: Mutex::new(Vec::new()),
        });
        let weak = Arc::downgrade(&shared);
        let committing = Arc::downgrade(&shared);
        let (finish, finishes) = mpsc::channel::<Finish>();
        let thread = |name: &str| std::thread::Builder::new().name(name.into());
        let failed = |error| StoreError::Config(format!("cannot start a thread: {error}"));
        thread("bridle-sqlite-finish")
            .spawn(move || finisher(&finishes))
            .map_err(failed)?;
        thread("bridle-sqlite-commit")
            .spawn(move || committer(&committing, &due))
            .map_err(failed)?;
        thread("bridle-sqlite-checkpoint")
            .spawn(move || checkpoints(&checkpointer, &weak, &woken, &finish))
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

/// Buckets of [`Writer::pauses`]: 0.1 ms … ~6.6 s (the busy timeout is 5 s).
fn pause_buckets() -> impl Iterator<Item = f64> {
    exponential_buckets(0.0001, 2.0, 17)
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
                job.deliver(Some(error.into()));
            }
        }
        // One write failed: every write of the batch runs again on its own.
        Err(_) => {
            for mut job in batch {
                let alone = in_transaction(connection, |connection| job.run(connection));
                job.deliver(alone.err().map(StoreError::from));
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

/// The checkpointer thread: a passive checkpoint every [`CHECKPOINT_EVERY`] once
/// [`PASS_AFTER_WRITES`] writes came in, else every [`CHECKPOINT_AT_LEAST_EVERY`] (or when
/// woken; with nothing left to copy, it sleeps until a commit wakes it),
/// finished while holding the writing connection after every [`FINISH_CHECKPOINT_AFTER`]
/// writes, until the last writer is gone (`woken`'s sender dropped); then a truncating one.
fn checkpoints(
    connection: &Connection,
    writer: &Weak<Shared>,
    woken: &mpsc::Receiver<()>,
    finisher: &mpsc::Sender<Finish>,
) {
    yield_to_requests();
    // A failure repeats every tick while it lasts (a full disk): said once, and its end said.
    let mut failing = false;
    let mut sleep = CHECKPOINT_EVERY;
    // When the last pass ran, and the writes counted then.
    let mut last_pass = std::time::Instant::now();
    let mut writes_at_last_pass = 0;
    loop {
        match woken.recv_timeout(sleep) {
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            // Woken from idle by a commit: the next pass comes a tick later, with the commits
            // of that tick (a pass per commit would be an fsync per commit).
            Ok(()) if sleep == IDLE_CHECKPOINTER_SLEEPS => {
                sleep = CHECKPOINT_EVERY;
                continue;
            }
            // A tick: a pass once enough was written, or once it has waited long enough.
            Err(mpsc::RecvTimeoutError::Timeout) if sleep == CHECKPOINT_EVERY => {
                let written = writer
                    .upgrade()
                    .map_or(0, |shared| shared.since_checkpoint.load(Ordering::Relaxed));
                // (The count starts over when a checkpoint finishes.)
                let new = written.checked_sub(writes_at_last_pass).unwrap_or(written);
                if new < PASS_AFTER_WRITES && last_pass.elapsed() < CHECKPOINT_AT_LEAST_EVERY {
                    continue;
                }
            }
            _ => {}
        }
        last_pass = std::time::Instant::now();
        let mut result = checkpoint(connection, "PASSIVE");
        if let Some(shared) = writer.upgrade() {
            if shared.since_checkpoint.load(Ordering::Relaxed) >= FINISH_CHECKPOINT_AFTER {
                // Catch up first without holding the writer (each pass copies what was written
                // during the last), so that the pause of the writes is short.
                for _ in 0..CATCH_UP_PASSES {
                    match &result {
                        Ok(progress) if progress.left() > FINISH_WHEN_LEFT => {
                            result = checkpoint(connection, "PASSIVE");
                        }
                        _ => break,
                    }
                }
                result = finish_checkpoint(connection, &shared, finisher);
            }
            writes_at_last_pass = shared.since_checkpoint.load(Ordering::Relaxed);
            // Nothing left to copy: sleep until the next commit (it wakes an idle checkpointer).
            let idle = matches!(&result, Ok(progress) if progress.left() == 0);
            shared.checkpointer_idle.store(idle, Ordering::Relaxed);
            if matches!(&result, Ok(progress) if progress.complete()) {
                shared.log_copied.store(true, Ordering::Release);
            }
            sleep = if idle {
                IDLE_CHECKPOINTER_SLEEPS
            } else {
                CHECKPOINT_EVERY
            };
        }
        match result {
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

/// The committer thread: runs the queue [`HOLD_SOON`] after a detached write is queued
/// ([`Writer::write_detached`]), with whatever else is queued by then, at low priority (nice
/// 10): nobody waits for these writes, so their commits take the time the requests leave
/// (on the benchmark's one-core gateway, run inline on the runtime thread they held the
/// requests in flight for the length of a batch). Ends with the writer.
fn committer(writer: &Weak<Shared>, due: &mpsc::Receiver<()>) {
    yield_to_requests();
    while due.recv().is_ok() {
        std::thread::sleep(HOLD_SOON);
        match writer.upgrade() {
            Some(shared) => shared.combine(Combiner::Blocking),
            None => break,
        }
    }
}

/// Lowers the calling thread's priority (Linux: nice 10): the checkpointer's copying is
/// background work, and on a busy core it waits for the threads that serve requests instead of
/// delaying them by the milliseconds a pass takes. An idle core still runs it at once.
fn yield_to_requests() {
    #[cfg(target_os = "linux")]
    if let Err(error) =
        rustix::process::setpriority_process(Some(rustix::thread::gettid()), CHECKPOINTER_NICE)
    {
        tracing::debug!(%error, "cannot lower the SQLite checkpointer's priority");
    }
}

/// Copies the rest of the log while no write can add to it (holding the writing connection),
/// then runs the writes that queued meanwhile. A reader still on an old snapshot can keep it
/// from completing; then it is tried again at the next tick.
///
/// The writes wait for this pass, so it runs at the server's normal priority: on the finisher
/// thread ([`finisher`]), with the writing connection itself, while the checkpointer (nice 10;
/// unprivileged, a thread cannot raise its priority again) waits for it. Run by the
/// checkpointer, a busy core gave it a tenth of the CPU and stretched the pause: a priority
/// inversion (bench/README.md, seventh session). Should the finisher be gone, it runs here.
fn finish_checkpoint(
    connection: &Connection,
    shared: &Arc<Shared>,
    finisher: &mpsc::Sender<Finish>,
) -> rusqlite::Result<Progress> {
    let (done, finished) = mpsc::sync_channel(1);
    if finisher.send((Arc::clone(shared), done)).is_ok()
        && let Ok(progress) = finished.recv()
    {
        return progress;
    }
    shared.finish_checkpoint(Some(connection))
}

/// A request to the finisher thread: finish the checkpoint of this writer, and answer.
type Finish = (Arc<Shared>, mpsc::SyncSender<rusqlite::Result<Progress>>);

/// The finisher thread: finishes checkpoints for the checkpointer until it is gone. Started by
/// the thread that opens the store, so it runs at that thread's priority (a thread inherits
/// its creator's nice value; so would a blocking thread the checkpointer had the runtime
/// start, which is why the checkpointer starts none).
fn finisher(requests: &mpsc::Receiver<Finish>) {
    for (shared, answer) in requests {
        let _ = answer.send(shared.finish_checkpoint(None));
    }
}

impl Shared {
    /// [`finish_checkpoint`]'s pass, with `checkpointing` (the writing connection when `None`).
    fn finish_checkpoint(
        self: &Arc<Self>,
        checkpointing: Option<&Connection>,
    ) -> rusqlite::Result<Progress> {
        let held = lock(&self.connection);
        #[cfg(all(test, target_os = "linux"))]
        lock(&self.finished_at_nice).push(
            rustix::process::getpriority_process(Some(rustix::thread::gettid())).unwrap_or(-1),
        );
        let started = std::time::Instant::now();
        let progress = checkpoint(checkpointing.unwrap_or(&*held), "PASSIVE");
        let pause = started.elapsed();
        if matches!(&progress, Ok(done) if done.complete()) {
            self.log_copied.store(true, Ordering::Release);
        }
        drop(held);
        self.pauses.observe(pause.as_secs_f64());
        self.hand_over();
        if let Ok(done) = &progress {
            if done.complete() {
                self.since_checkpoint.store(0, Ordering::Relaxed);
            }
            tracing::debug!(
                ?pause,
                frames = done.log,
                complete = done.complete(),
                "SQLite checkpoint finished"
            );
        }
        progress
    }
}

/// Where a checkpoint left the log.
#[derive(Debug, Clone, Copy)]
struct Progress {
    /// Another connection held a lock the checkpoint needed.
    busy: bool,
    /// Frames in the log.
    log: i64,
    /// Frames of it copied into the database file.
    copied: i64,
}

impl Progress {
    /// Every frame is in the database file: the next write transaction starts the log over.
    fn complete(self) -> bool {
        !self.busy && self.log == self.copied
    }

    /// Frames not copied yet.
    fn left(self) -> i64 {
        self.log - self.copied
    }
}

/// Runs `PRAGMA wal_checkpoint(MODE)`.
fn checkpoint(connection: &Connection, mode: &str) -> rusqlite::Result<Progress> {
    connection.query_row(&format!("PRAGMA wal_checkpoint({mode})"), [], |row| {
        Ok(Progress {
            busy: row.get::<_, i64>(0)? != 0,
            log: row.get(1)?,
            copied: row.get(2)?,
        })
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

    /// A writer on a fresh database with an empty table `blob (data)`.
    async fn blob_store() -> (tempfile::TempDir, PathBuf, Writer) {
        let (dir, path) = database();
        let writer = Writer::open(&path).unwrap();
        writer
            .write(|db| db.execute_batch("CREATE TABLE blob (data TEXT NOT NULL)"))
            .await
            .unwrap();
        (dir, path, writer)
    }

    /// Adds a row holding `data` to `blob`.
    async fn add_blob(writer: &Writer, data: &str) {
        let data = data.to_owned();
        writer
            .write(move |db| db.execute("INSERT INTO blob (data) VALUES (?)", [&data]))
            .await
            .unwrap();
    }

    /// Holds the writing connection for a while, so that the writes sent meanwhile queue up and
    /// are committed as batches.
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
        count_in(path, "child")
    }

    fn count_blobs(path: &Path) -> i64 {
        count_in(path, "blob")
    }

    /// Rows in `table`, read on a connection of its own.
    fn count_in(path: &Path, table: &str) -> i64 {
        Connection::open(path)
            .unwrap()
            .query_row(&format!("SELECT count(*) FROM {table}"), [], |row| {
                row.get(0)
            })
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
                    lock(&ran_on).push((thread.name().map(String::from), nice));
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
        let ran_on = lock(&ran_on).clone();
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
        let (_dir, path, writer) = blob_store().await;
        let wal = path.with_extension("db-wal");
        let data = "x".repeat(8 * 1024);
        let mut largest = 0;
        // 10,000 writes of 8 KiB (~17 KB of log frames each): ~170 MB if the log never started
        // over. It starts over after 2,048 writes when the checkpointer keeps up, after 4,096
        // (~70 MB) at the latest when it does not (a loaded machine).
        for _ in 0..10_000 {
            add_blob(&writer, &data).await;
            largest = largest.max(std::fs::metadata(&wal).map_or(0, |m| m.len()));
        }
        assert!(
            largest < 80 * 1024 * 1024,
            "the log grew to {largest} bytes: it did not start over in time"
        );
        // Each start over paused the writes once, and each pause is in the series.
        let pauses = writer.pauses();
        assert!(
            pauses.count() >= 2,
            "10,000 writes made {} pauses, at least 2 expected",
            pauses.count()
        );
        assert!(
            pauses.sum() > 0.0 && pauses.sum() < 60.0,
            "{}",
            pauses.sum()
        );
    }

    /// The commit that starts the log over syncs its header (an `fsync` in the commit path):
    /// such a commit is run by a blocking thread, never inline on the runtime's thread.
    #[tokio::test]
    async fn the_commit_that_starts_the_log_over_runs_off_the_runtime() {
        let (_dir, path, writer) = blob_store().await;
        let wal = path.with_extension("db-wal");
        let runtime_thread = std::thread::current().name().map(String::from);
        let data = "x".repeat(1024);
        let first = log_generation(&wal);
        for _ in 0..3 * FINISH_CHECKPOINT_AFTER {
            add_blob(&writer, &data).await;
        }
        assert_ne!(log_generation(&wal), first, "the log never started over");
        let restarted_on = lock(&writer.shared.restarted_on).clone();
        assert!(!restarted_on.is_empty(), "no commit followed a copied log");
        assert!(
            restarted_on.iter().all(|thread| *thread != runtime_thread),
            "a commit that started the log over ran on the runtime's thread: {restarted_on:?}"
        );
    }

    /// The writes wait while a checkpoint is finished, so it is finished at the priority of the
    /// thread that opened the store, not at the checkpointer's nice 10 (on a busy core that
    /// thread got a tenth of the CPU and the pause stretched).
    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn checkpoints_are_finished_at_the_openers_priority() {
        let opener = rustix::process::getpriority_process(Some(rustix::thread::gettid())).unwrap();
        let (_dir, _path, writer) = blob_store().await;
        let data = "x".repeat(1024);
        for _ in 0..3 * FINISH_CHECKPOINT_AFTER {
            add_blob(&writer, &data).await;
        }
        let finished = lock(&writer.shared.finished_at_nice).clone();
        assert!(!finished.is_empty(), "no checkpoint was finished");
        assert!(
            finished.iter().all(|&nice| nice == opener),
            "finished at nice {finished:?}, the opener runs at {opener}"
        );
    }

    /// The log's checkpoint sequence number (bytes 12..16 of its header; it changes every time
    /// the log starts over), if the log has a header yet.
    fn log_generation(wal: &Path) -> Option<u32> {
        use std::io::Read;
        let mut header = [0; 16];
        std::fs::File::open(wal)
            .ok()?
            .read_exact(&mut header)
            .ok()?;
        Some(u32::from_be_bytes(header[12..16].try_into().ok()?))
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_log_is_written_over_in_place_when_it_starts_over() {
        let (_dir, path) = database();
        let writer = Writer::open(&path).unwrap();
        let wal = path.with_extension("db-wal");
        // One write of 72 MiB: a log larger than the 64 MiB it was once cut back to.
        writer
            .write(|db| {
                db.execute_batch("CREATE TABLE blob (data TEXT NOT NULL)")?;
                let data = "y".repeat(8 * 1024 * 1024);
                for _ in 0..9 {
                    db.execute("INSERT INTO blob (data) VALUES (?)", [&data])?;
                }
                Ok(())
            })
            .await
            .unwrap();
        let mut size = std::fs::metadata(&wal).unwrap().len();
        assert!(size > 72 * 1024 * 1024, "{size}");
        let generation = log_generation(&wal);
        // Small writes until the log starts over (once the checkpointer has copied it).
        let started = std::time::Instant::now();
        while log_generation(&wal) == generation {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "the log never started over"
            );
            writer
                .write(|db| db.execute("INSERT INTO blob (data) VALUES ('z')", []))
                .await
                .unwrap();
            let now = std::fs::metadata(&wal).unwrap().len();
            assert!(
                now >= size,
                "the log was cut back from {size} to {now} bytes"
            );
            size = now;
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Frames in the log and frames of it copied into the database file, read from the shared
    /// WAL index (`-shm`: `mxFrame` in its header, `nBackfill` after the two header copies).
    fn log_copied(path: &Path) -> (u32, u32) {
        let index = std::fs::read(path.with_extension("db-shm")).unwrap();
        let word = |at: usize| u32::from_ne_bytes(index[at..at + 4].try_into().unwrap());
        (word(16), word(96))
    }

    /// Whether every frame of the log at `path` is copied within `within`.
    async fn copied_within(path: &Path, within: Duration) -> bool {
        let started = std::time::Instant::now();
        loop {
            let (log, copied) = log_copied(path);
            if log == copied {
                return true;
            }
            if started.elapsed() >= within {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_commit_wakes_the_idle_checkpointer() {
        let (_dir, path) = database();
        let writer = Writer::open(&path).unwrap();
        add_child(&writer, 1).await.unwrap();
        // Copied, then a pass with nothing left: the checkpointer sleeps until a commit.
        tokio::time::sleep(Duration::from_millis(200)).await;
        let (log, copied) = log_copied(&path);
        assert_eq!(log, copied, "the first write is copied within 200 ms");
        add_child(&writer, 1).await.unwrap();
        assert!(
            copied_within(&path, IDLE_CHECKPOINTER_SLEEPS / 2).await,
            "the write was not copied until the idle checkpointer's sleep ran out"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_trickle_of_writes_is_copied_in_few_passes() {
        let (_dir, path) = database();
        let writer = Writer::open(&path).unwrap();
        // Two writes a tick for 400 ms: a pass every tick would copy ~40 times.
        let mut copies = 0;
        let mut last_copied = 0;
        let started = std::time::Instant::now();
        while started.elapsed() < Duration::from_millis(400) {
            add_child(&writer, 1).await.unwrap();
            for _ in 0..5 {
                let (_, copied) = log_copied(&path);
                // A pass raises the count of frames copied; a log that starts over (after a
                // pass that copied it all) sets it back to 0, which is no pass.
                if copied != last_copied && copied != 0 {
                    copies += 1;
                }
                last_copied = copied;
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
        assert!(
            copies <= 12,
            "{copies} passes copied the log in 400 ms of a write every ~5 ms"
        );
        // And it all gets copied soon after.
        assert!(
            copied_within(&path, Duration::from_secs(3)).await,
            "the log was not copied ({copies} passes before)"
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
