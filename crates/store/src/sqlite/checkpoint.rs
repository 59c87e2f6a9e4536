//! The checkpointer: the thread that keeps the SQLite store's write-ahead log short off the
//! write path, the finisher thread that lets the log start over, and what the writer
//! ([`super::queue`]) does when the checkpointer falls behind.
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

use super::BUSY_TIMEOUT;
use super::queue::{Shared, lock};
use prometheus_client::metrics::histogram::exponential_buckets;
use rusqlite::Connection;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak, mpsc};
use std::time::Duration;

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
pub(super) const IDLE_CHECKPOINTER_SLEEPS: Duration = Duration::from_secs(1);

/// Writes after which the checkpointer finishes a checkpoint while holding the writing
/// connection.
pub(super) const FINISH_CHECKPOINT_AFTER: usize = 2048;

/// Passes a finishing checkpoint makes without holding the writer, at most, to catch up …
const CATCH_UP_PASSES: usize = 4;

/// … until at most this many frames are left to copy while holding it.
const FINISH_WHEN_LEFT: i64 = 64;

/// The checkpointer thread's nice value (Linux).
#[cfg(target_os = "linux")]
pub(super) const CHECKPOINTER_NICE: i32 = 10;

/// The log file is cut back to this size when it starts over (bytes). Above what a
/// [`FINISH_CHECKPOINT_AFTER`] cycle writes (~90 MB at ~21 frames of 4 KiB a turn), so the file
/// is written over in place: cut back at every start, it grew again each cycle, and those
/// writes were the slowest (bench/README.md). A log that grew past it (readers holding
/// checkpoints back) is still cut back.
pub(super) const JOURNAL_SIZE_LIMIT: i64 = 256 * 1024 * 1024;

/// Buckets of [`super::queue::Writer::pauses`]: 0.1 ms … ~6.6 s (the busy timeout is 5 s).
pub(super) fn pause_buckets() -> impl Iterator<Item = f64> {
    exponential_buckets(0.0001, 2.0, 17)
}

/// The checkpointer thread: a passive checkpoint every [`CHECKPOINT_EVERY`] once
/// [`PASS_AFTER_WRITES`] writes came in, else every [`CHECKPOINT_AT_LEAST_EVERY`] (or when
/// woken; with nothing left to copy, it sleeps until a commit wakes it),
/// finished while holding the writing connection after every [`FINISH_CHECKPOINT_AFTER`]
/// writes, until the last writer is gone (`woken`'s sender dropped); then a truncating one.
pub(super) fn checkpoints(
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

/// Lowers the calling thread's priority (Linux: nice 10): the checkpointer's copying is
/// background work, and on a busy core it waits for the threads that serve requests instead of
/// delaying them by the milliseconds a pass takes. An idle core still runs it at once.
pub(super) fn yield_to_requests() {
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
pub(super) type Finish = (Arc<Shared>, mpsc::SyncSender<rusqlite::Result<Progress>>);

/// The finisher thread: finishes checkpoints for the checkpointer until it is gone. Started by
/// the thread that opens the store, so it runs at that thread's priority (a thread inherits
/// its creator's nice value; so would a blocking thread the checkpointer had the runtime
/// start, which is why the checkpointer starts none).
pub(super) fn finisher(requests: &mpsc::Receiver<Finish>) {
    for (shared, answer) in requests {
        let _ = answer.send(shared.finish_checkpoint(None));
    }
}

impl Shared {
    /// Runs a `FULL` checkpoint on the writing connection, again while the checkpointer's pass
    /// keeps it busy (up to the busy timeout).
    pub(super) fn wait_for_checkpoint(&self, connection: &Connection) {
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
pub(super) struct Progress {
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
    use crate::sqlite::queue::Writer;
    use crate::sqlite::testing::*;
    use std::path::Path;
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
}
