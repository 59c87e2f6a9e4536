//! [`Writer`]: group commit for the PostgreSQL store. Every write — one message, or a turn's
//! opening and first attempt together ([`super::opening`]), with the conversation it starts, if
//! any — is a job in a queue; a task takes every job waiting in its queue (up to
//! [`MAX_BATCH`]) and writes them in one statement ([`super::batch`]): concurrent turns share a
//! round trip and a commit instead of paying one each. While a batch is written the next one
//! gathers, so batches grow with the load by themselves and a lone write goes out at once.
//!
//! There are [`LANES`] queues, each with its task, and a conversation's writes always go to the
//! same one (by a hash of its id), so they are written in the order they were queued — a turn's
//! user message before its attempts, a conversation before its messages — while the lanes'
//! batches are in flight together: a commit waits for the disk's `fsync` (~4 ms here), and
//! PostgreSQL flushes concurrent commits together, so one lane alone would leave the database
//! idle between its batches.
//!
//! Guarantees, as with one transaction per job: a job's messages are committed together (a
//! turn's user message and first attempt: both or neither) and get their ids in the job's
//! order; a job's caller is answered only once its batch is committed (`store_commit =
//! "before_reply"`); a failed batch is written again job by
//! job, so one bad write (a conversation that does not exist) never takes the others down; a
//! job runs even when its caller has gone away. A deadlock, a serialisation failure or a prompt
//! a sweeper deleted under the write is retried ([`ATTEMPTS`] in all).
//!
//! Back-pressure: the queue holds at most [`MAX_QUEUED`] jobs; past that, writers wait for room,
//! so a slow database slows the turns down instead of growing memory. With `store_commit =
//! "after_reply"` nobody waits for the commit: jobs carry their ids already and their failures
//! are logged and counted (`bridle_store_write_failures`).

use super::batch::{self, Write};
use crate::StoreError;
use prometheus_client::metrics::counter::Counter;
use sqlx::PgPool;
use tokio::sync::{mpsc, oneshot};

/// Most messages written by one statement.
const MAX_BATCH: usize = 256;

/// Most jobs waiting for the writer before writers wait for room: about four seconds of turns
/// at 1,000 a second.
const MAX_QUEUED: usize = 8192;

/// Tries of one write before its error is final (deadlocks, lost prompt races).
const ATTEMPTS: usize = 3;

/// Queues (and writing tasks), each a share of the conversations.
pub(super) const LANES: usize = 8;

/// Where a job's messages' ids (or its error) go.
type Reply = oneshot::Sender<Result<Vec<i64>, StoreError>>;

/// One job of the queue.
enum Job {
    /// A write; its result goes to `reply`, or, when nobody waits on it, to the log.
    Write {
        write: Box<Write>,
        reply: Option<Reply>,
    },
    /// Answered once every job queued before it is written (or has failed).
    Barrier(oneshot::Sender<()>),
}

/// The queues' sending ends; cheap to clone.
#[derive(Debug, Clone)]
pub(super) struct Writer {
    lanes: Vec<mpsc::Sender<Job>>,
    failures: Counter,
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Write { .. } => "Write",
            Self::Barrier(_) => "Barrier",
        })
    }
}

impl Writer {
    /// Starts the writing tasks on the current runtime.
    pub fn start(pool: PgPool) -> Self {
        let failures = Counter::default();
        let lanes = (0..LANES)
            .map(|_| {
                let (queue, jobs) = mpsc::channel(MAX_QUEUED / LANES);
                tokio::spawn(run(pool.clone(), jobs, failures.clone()));
                queue
            })
            .collect();
        Self { lanes, failures }
    }

    /// The queue of the conversation `conversation_id`.
    fn lane(&self, conversation_id: &str) -> &mpsc::Sender<Job> {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        conversation_id.hash(&mut hasher);
        let index = usize::try_from(hasher.finish() % LANES as u64).unwrap_or(0);
        &self.lanes[index % self.lanes.len()]
    }

    /// Writes `write` with the next batch; its messages' ids once committed.
    pub async fn write(&self, write: Write) -> Result<Vec<i64>, StoreError> {
        let lane = self.lane(write.conversation_id()).clone();
        let mut write = Some(write);
        self.write_taken(&lane, || write.take())
            .await?
            .ok_or(StoreError::Closed)
    }

    /// Writes what `take` gives (messages of the conversation `conversation_id`) with the next
    /// batch; its messages' ids once committed, or `None` when `take` gave nothing. `take` is
    /// called once the queue has room, and the job is queued at once: a caller that goes away
    /// while waiting for room has taken nothing, one that goes away later leaves a queued job,
    /// which runs all the same.
    pub async fn write_of(
        &self,
        conversation_id: &str,
        take: impl FnOnce() -> Option<Write>,
    ) -> Result<Option<Vec<i64>>, StoreError> {
        let lane = self.lane(conversation_id).clone();
        self.write_taken(&lane, take).await
    }

    async fn write_taken(
        &self,
        lane: &mpsc::Sender<Job>,
        take: impl FnOnce() -> Option<Write>,
    ) -> Result<Option<Vec<i64>>, StoreError> {
        let room = lane.reserve().await.map_err(|_| StoreError::Closed)?;
        let Some(write) = take() else {
            return Ok(None);
        };
        let (reply, answer) = oneshot::channel();
        room.send(Job::Write {
            write: Box::new(write),
            reply: Some(reply),
        });
        answer.await.map_err(|_| StoreError::Closed)?.map(Some)
    }

    /// Queues `write` (whose messages have their ids already, or take them from the batch)
    /// without waiting for its commit; waits only for room in the queue.
    pub async fn write_detached(&self, write: Write) -> Result<(), StoreError> {
        self.lane(write.conversation_id())
            .clone()
            .send(Job::Write {
                write: Box::new(write),
                reply: None,
            })
            .await
            .map_err(|_| StoreError::Closed)
    }

    /// Queues `write` from where nothing can wait (a destructor): at once when its queue has
    /// room, else from a task of its own on the current runtime. Its failure is logged and
    /// counted. Only a writer without a runtime (the process shutting down) loses it, and logs
    /// that.
    pub fn write_from_drop(&self, write: Write) {
        let lane = self.lane(write.conversation_id()).clone();
        let job = Job::Write {
            write: Box::new(write),
            reply: None,
        };
        let job = match lane.try_send(job) {
            Ok(()) => return,
            Err(mpsc::error::TrySendError::Full(job)) => job,
            Err(mpsc::error::TrySendError::Closed(_)) => {
                self.lost_from_drop();
                return;
            }
        };
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    let _ = lane.send(job).await;
                });
            }
            Err(_) => self.lost_from_drop(),
        }
    }

    fn lost_from_drop(&self) {
        self.failures.inc();
        tracing::error!("a turn's user message could not be queued: the store is closing");
    }

    /// Waits until every write queued before the call is committed or has failed.
    pub async fn settled(&self) {
        for lane in &self.lanes {
            let (reply, answer) = oneshot::channel();
            if lane.send(Job::Barrier(reply)).await.is_ok() {
                let _ = answer.await;
            }
        }
    }

    /// Writes nobody waited on that failed.
    pub fn failures(&self) -> Counter {
        self.failures.clone()
    }
}

/// The writing task: batch after batch until every sender is gone.
async fn run(pool: PgPool, mut jobs: mpsc::Receiver<Job>, failures: Counter) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    while jobs.recv_many(&mut batch, MAX_BATCH).await > 0 {
        commit(&pool, std::mem::take(&mut batch), &failures).await;
    }
}

/// Writes one batch and answers its jobs.
async fn commit(pool: &PgPool, jobs: Vec<Job>, failures: &Counter) {
    let mut writes = Vec::with_capacity(jobs.len());
    let mut barriers = Vec::new();
    for job in jobs {
        match job {
            Job::Write { write, reply } => writes.push((write, reply)),
            Job::Barrier(done) => barriers.push(done),
        }
    }
    if !writes.is_empty() {
        match write_with_retries(pool, writes.iter().map(|(w, _)| w.as_ref())).await {
            Ok(ids) => {
                let mut ids = ids.into_iter();
                for (write, reply) in writes {
                    let own: Vec<i64> = ids.by_ref().take(write.messages.len()).collect();
                    deliver(reply, Ok(own), failures);
                }
            }
            Err(error) if writes.len() == 1 => {
                if let Some((_, reply)) = writes.pop() {
                    deliver(reply, Err(error), failures);
                }
            }
            Err(_) => {
                // One by one: each job gets its own outcome.
                for (write, reply) in writes {
                    let result = write_with_retries(pool, std::iter::once(write.as_ref())).await;
                    deliver(reply, result, failures);
                }
            }
        }
    }
    for done in barriers {
        let _ = done.send(());
    }
}

/// [`batch::write`], again after a deadlock, a serialisation failure or a lost prompt race.
async fn write_with_retries<'a>(
    pool: &PgPool,
    writes: impl Iterator<Item = &'a Write> + Clone,
) -> Result<Vec<i64>, StoreError> {
    let mut tries = 1;
    loop {
        match batch::write(pool, writes.clone()).await {
            Err(error)
                if tries < ATTEMPTS && (batch::lost_prompt(&error) || batch::retryable(&error)) =>
            {
                tries += 1;
            }
            done => return done,
        }
    }
}

/// Answers a job's caller, or logs and counts its failure when nobody waits.
fn deliver(reply: Option<Reply>, result: Result<Vec<i64>, StoreError>, failures: &Counter) {
    match reply {
        // The caller may have gone away: the write stands all the same.
        Some(reply) => {
            let _ = reply.send(result);
        }
        None => {
            if let Err(error) = result {
                failures.inc();
                tracing::error!(%error, "a message nobody waited for could not be stored");
            }
        }
    }
}
