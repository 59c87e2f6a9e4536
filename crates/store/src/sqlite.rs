//! [`SqliteStore`]: the embedded backend. One database file (created, with its directory, when
//! missing) in WAL mode with `synchronous=NORMAL`, foreign keys on and a busy timeout; JSON is
//! stored as text and booleans as 0/1. Reads go through a small sqlx pool (in WAL mode they
//! never wait for the writer); every write goes to the one writing connection ([`Writer`]),
//! which commits the writes that are waiting together (group commit) and keeps checkpoints off
//! the write path. Each write is one statement (a trigger bumps the conversation when a message
//! is stored), or two in one transaction for a conversation that starts with its first message.

use super::listing::{self, TextMatch};
use super::migrations::{self, Embedded};
use super::prompts;
use super::rows::{self, EncodedMessage, Field, StoreRow};
use super::sqlite_commit::{self, AfterReply};
use super::sqlite_writer::Writer;
use super::stats::{self, Dialect, Plan, Tally};
use super::{
    Commit, Conversation, ConversationFilter, ConversationStatus, ConversationSummary,
    Interruption, Message, NewConversation, NewMessage, NewSafetyEvent, Page, PageRequest, Pending,
    PurgeRange, Purged, SafetyEvent, Stats, StatsQuery, StoreError, View, now_ms,
};
use super::{Purges, Reads, TurnWrites};
use async_trait::async_trait;
use futures::TryStreamExt;
use rusqlite::params;
use serde_json::Value;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteRow,
    SqliteSynchronous,
};
use sqlx::{Row, Sqlite};
use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

/// How long a connection waits for another's write lock before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Reading connections: SQLite has one writer at a time, and a few readers suffice.
const POOL_SIZE: u32 = 4;

/// The SQLite migrations, in version order.
const MIGRATIONS: &[Embedded] = &[
    Embedded {
        version: 1,
        name: "initial",
        sql: include_str!("../migrations/sqlite/0001_initial.sql"),
    },
    Embedded {
        version: 2,
        name: "stats_indexes",
        sql: include_str!("../migrations/sqlite/0002_stats_indexes.sql"),
    },
    Embedded {
        version: 3,
        name: "bump_trigger",
        sql: include_str!("../migrations/sqlite/0003_bump_trigger.sql"),
    },
    Embedded {
        version: 4,
        name: "interrupted",
        sql: include_str!("../migrations/sqlite/0004_interrupted.sql"),
    },
    Embedded {
        version: 5,
        name: "payload_purged",
        sql: include_str!("../migrations/sqlite/0005_payload_purged.sql"),
    },
    Embedded {
        version: 6,
        name: "prompts",
        sql: include_str!("../migrations/sqlite/0006_prompts.sql"),
    },
    Embedded {
        version: 7,
        name: "store_health",
        sql: include_str!("../migrations/sqlite/0007_store_health.sql"),
    },
];

/// Case-insensitive substring match. SQLite's `lower()` folds ASCII letters only (there is no
/// ICU in the bundled build), and it is applied to both sides so that they are folded alike.
const TEXT_MATCH: TextMatch = TextMatch {
    before: "lower(m.content) LIKE lower(",
    after: ") ESCAPE '\\'",
};

/// Reading JSON arrays for the statistics. `json_each` runs only on text that is valid JSON and an
/// array (the nested `CASE`s evaluate in order, so `json_type` never sees malformed text); an
/// element's members are read only when it is an object.
const STATS: Dialect = Dialect {
    violations: "json_each(CASE WHEN json_valid(m.violations) THEN \
                 CASE json_type(m.violations) WHEN 'array' THEN m.violations END END) AS e",
    rule: "CASE e.type WHEN 'object' THEN CASE json_type(e.value, '$.rule') \
           WHEN 'text' THEN json_extract(e.value, '$.rule') END END",
    repairs: "json_each(CASE WHEN json_valid(m.repairs) THEN \
              CASE json_type(m.repairs) WHEN 'array' THEN m.repairs END END) AS e",
    repair_kind: "CASE e.type WHEN 'object' THEN CASE json_type(e.value, '$.kind') \
                  WHEN 'text' THEN json_extract(e.value, '$.kind') END END",
    repair_count: "CASE e.type WHEN 'object' THEN CASE json_type(e.value, '$.count') \
                   WHEN 'integer' THEN json_extract(e.value, '$.count') END END",
    // SQLite's default collation (BINARY) already compares UTF-8 bytes, i.e. code points.
    binary_order: "",
};

/// The SQLite store.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    /// Readers (WAL: they never wait for the writer).
    pool: SqlitePool,
    /// The one writing connection: writers queue for its thread, in order, instead of sleeping
    /// in SQLite's busy handler (which backs off in steps of up to 100 ms under contention).
    writer: Writer,
    /// Set when turns are answered before their messages are committed.
    after_reply: Option<Arc<AfterReply>>,
    /// The database's lock file, locked for as long as the store is open.
    _lock: Arc<std::fs::File>,
    /// The database file (its disk's free space is part of the readiness probe).
    path: Arc<std::path::PathBuf>,
}

impl SqliteStore {
    /// Opens (creating if missing) the database file `sqlite://PATH` names and applies the
    /// migrations. In-memory databases are refused: each pooled connection would see its own.
    pub async fn open(url: &str) -> Result<Self, StoreError> {
        Self::open_with(url, Commit::BeforeReply).await
    }

    /// [`SqliteStore::open`], committing turns as `commit` says (`sqlite_commit.rs`).
    pub async fn open_with(url: &str, commit: Commit) -> Result<Self, StoreError> {
        if names_memory_database(url) {
            return Err(StoreError::Config(format!(
                "in-memory SQLite ({url:?}) is not supported: use sqlite://PATH"
            )));
        }
        let options = SqliteConnectOptions::from_str(url)
            .map_err(|error| StoreError::Config(format!("invalid SQLite URL {url:?}: {error}")))?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .foreign_keys(true)
            .busy_timeout(BUSY_TIMEOUT);
        let path = options.get_filename().to_path_buf();
        if path.as_os_str().is_empty() {
            return Err(StoreError::Config(format!(
                "SQLite URL {url:?} names no file: use sqlite://PATH"
            )));
        }
        if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
            // Once, at start-up, before any connection exists: a blocking call is harmless here.
            crate::private_files::create_dir(dir).map_err(|error| {
                StoreError::Config(format!(
                    "cannot create directory {}: {error}",
                    dir.display()
                ))
            })?;
            crate::private_files::warn_if_shared(dir);
        }
        private_database(&path)?;
        let lock = sqlite_commit::lock(&path, commit)?;
        // Migrations on a connection of their own, closed before the writer opens.
        let migrating = SqlitePoolOptions::new()
            .max_connections(1)
            .connect_with(options.clone())
            .await?;
        migrations::migrator(MIGRATIONS).run(&migrating).await?;
        migrating.close().await;
        let writer = Writer::open(&path)?;
        // A local file does not go stale: no ping (a round trip to the connection's thread)
        // before each use.
        let pool = SqlitePoolOptions::new()
            .max_connections(POOL_SIZE)
            .test_before_acquire(false)
            .connect_with(options)
            .await?;
        let after_reply = match commit {
            Commit::BeforeReply => None,
            Commit::AfterReply => Some(Arc::new(AfterReply::open(&writer).await?)),
        };
        Ok(Self {
            pool,
            writer,
            after_reply,
            _lock: Arc::new(lock),
            path: Arc::new(path),
        })
    }
}

impl SqliteStore {
    /// `message` as it is stored; with its id already when turns are answered before their
    /// messages are committed.
    fn message_row(&self, message: &NewMessage) -> Result<MessageRow, StoreError> {
        let mut row = MessageRow::new(message)?;
        row.id = self
            .after_reply
            .as_ref()
            .map(|after_reply| after_reply.next_id(&self.writer));
        Ok(row)
    }

    /// What answering before the commit needs, when the store does so now: not while its
    /// writer is backlogged (a stalled disk), where callers wait for their commits again.
    fn answering_first(&self) -> Option<&AfterReply> {
        self.after_reply
            .as_deref()
            .filter(|_| !self.writer.backlogged())
    }

    /// Runs `sql` (`UPDATE conversations SET <column> = ?, updated_at = max(updated_at, ?)
    /// WHERE id = ?`) with `value`; whether conversation `id` exists.
    async fn update_conversation(
        &self,
        sql: &'static str,
        value: String,
        id: &str,
    ) -> Result<bool, StoreError> {
        let (id, now) = (id.to_owned(), now_ms());
        let changed = self
            .writer
            .write(move |db| db.prepare_cached(sql)?.execute(params![value, now, id]))
            .await?;
        Ok(changed > 0)
    }
}

/// Least free space on the database's disk for the store to be ready for turns: a few turns'
/// worth of pages and log.
const MIN_FREE_BYTES: u64 = 1024 * 1024;

/// The bytes an unprivileged writer may still take on the disk holding `database`, when the
/// system says.
fn free_bytes(database: &Path) -> Option<u64> {
    let dir = database
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let stats = rustix::fs::statvfs(dir).ok()?;
    Some(stats.f_bavail.saturating_mul(stats.f_frsize))
}

/// The readiness probe's write (one row, written over each time).
const PROBE_WRITE: &str = "INSERT INTO store_health (id, checked_at) VALUES (1, ?1) \
     ON CONFLICT (id) DO UPDATE SET checked_at = excluded.checked_at";

/// Creates the database file `0600` before SQLite opens it, so that SQLite gives its `-wal`
/// and `-shm` the same mode; tightens those of an existing database (see
/// [`crate::private_files`]).
fn private_database(path: &Path) -> Result<(), StoreError> {
    crate::private_files::create_file(path).map_err(|error| {
        StoreError::Config(format!(
            "cannot create the database {}: {error}",
            path.display()
        ))
    })?;
    for suffix in ["-wal", "-shm"] {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        crate::private_files::tighten(Path::new(&name));
    }
    Ok(())
}

/// Whether a `sqlite:` URL names an in-memory database (`sqlite::memory:`, `?mode=memory`).
fn names_memory_database(url: &str) -> bool {
    let rest = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))
        .unwrap_or(url);
    let (database, params) = rest.split_once('?').unwrap_or((rest, ""));
    database == ":memory:" || params.split('&').any(|param| param == "mode=memory")
}

impl StoreRow for SqliteRow {
    fn text(&self, column: &str) -> Result<String, sqlx::Error> {
        self.try_get(column)
    }

    fn opt_text(&self, column: &str) -> Result<Option<String>, sqlx::Error> {
        self.try_get(column)
    }

    fn int(&self, column: &str) -> Result<i64, sqlx::Error> {
        self.try_get(column)
    }

    fn opt_int(&self, column: &str) -> Result<Option<i64>, sqlx::Error> {
        self.try_get(column)
    }

    fn opt_int32(&self, column: &str) -> Result<Option<i32>, sqlx::Error> {
        self.try_get(column)
    }

    fn flag(&self, column: &str) -> Result<bool, sqlx::Error> {
        self.try_get(column)
    }

    fn opt_json(&self, field: Field<'_>) -> Result<Option<Value>, StoreError> {
        let text: Option<String> = self.try_get(field.column)?;
        text.map(|text| serde_json::from_str(&text).map_err(|error| field.corrupt(error)))
            .transpose()
    }
}

#[async_trait]
impl TurnWrites for SqliteStore {
    fn backend(&self) -> &'static str {
        "sqlite"
    }

    fn write_pauses(&self) -> Option<prometheus_client::metrics::histogram::Histogram> {
        Some(self.writer.pauses())
    }

    fn write_failures(&self) -> Option<prometheus_client::metrics::counter::Counter> {
        self.after_reply
            .as_ref()
            .map(|after_reply| after_reply.failures())
    }

    async fn flush(&self) {
        self.writer.settled().await;
    }

    async fn create_conversation(&self, new: &NewConversation) -> Result<Conversation, StoreError> {
        let conversation = Conversation::start(new);
        let row = ConversationRow::new(&conversation)?;
        self.writer.write(move |db| row.insert(db)).await?;
        Ok(conversation)
    }

    async fn create_conversation_with(
        &self,
        conversation: &Conversation,
        first: &NewMessage,
    ) -> Result<i64, StoreError> {
        let row = ConversationRow::new(conversation)?;
        let message = self.message_row(first)?;
        self.writer
            .write(move |db| {
                row.insert(db)?;
                message.insert(db)
            })
            .await
    }

    async fn set_status(&self, id: &str, status: ConversationStatus) -> Result<bool, StoreError> {
        self.update_conversation(
            "UPDATE conversations SET status = ?, updated_at = max(updated_at, ?) WHERE id = ?",
            status.as_str().to_owned(),
            id,
        )
        .await
    }

    async fn probe_write(&self) -> Result<(), StoreError> {
        let now = now_ms();
        self.writer
            .write(move |db| {
                db.prepare_cached(PROBE_WRITE)?.execute(params![now])?;
                Ok(())
            })
            .await?;
        // A full disk can still take a small write into pages the log already holds, while
        // every turn, which needs new pages, fails: the free space decides too.
        match free_bytes(&self.path) {
            Some(free_bytes) if free_bytes < MIN_FREE_BYTES => {
                Err(StoreError::DiskFull { free_bytes })
            }
            _ => Ok(()),
        }
    }

    async fn set_state(&self, id: &str, state: &Value) -> Result<bool, StoreError> {
        self.update_conversation(
            "UPDATE conversations SET state = ?, updated_at = max(updated_at, ?) WHERE id = ?",
            rows::to_json(state)?,
            id,
        )
        .await
    }

    async fn record_message(&self, message: &NewMessage) -> Result<i64, StoreError> {
        let row = self.message_row(message)?;
        match (self.answering_first(), row.id) {
            (Some(after_reply), Some(id)) => {
                let report = after_reply.report(
                    "a message",
                    row.conversation_id.clone(),
                    row.turn_id.clone(),
                );
                self.writer.write_detached(move |db| row.insert(db), report);
                Ok(id)
            }
            _ => self.writer.write(move |db| row.insert(db)).await,
        }
    }

    fn open_turn(&self, conversation: Option<&Conversation>, first: &NewMessage) -> Pending<i64> {
        let rows = conversation
            .map(ConversationRow::new)
            .transpose()
            .and_then(|conversation| Ok((conversation, self.message_row(first)?)));
        let (conversation, message) = match rows {
            Ok(rows) => rows,
            Err(error) => return Box::pin(std::future::ready(Err(error))),
        };
        let answered_first = self
            .answering_first()
            .zip(message.id)
            .map(|(after_reply, id)| {
                let report = after_reply.report(
                    "a turn's opening",
                    message.conversation_id.clone(),
                    message.turn_id.clone(),
                );
                (id, report)
            });
        let write = move |db: &rusqlite::Connection| {
            if let Some(conversation) = &conversation {
                conversation.insert(db)?;
            }
            message.insert(db)
        };
        match answered_first {
            Some((id, report)) => {
                self.writer.write_detached(write, report);
                Box::pin(std::future::ready(Ok(id)))
            }
            None => Box::pin(self.writer.write_soon(write)),
        }
    }

    async fn record_after(
        &self,
        opening: Pending<i64>,
        message: &NewMessage,
    ) -> Result<(i64, i64), StoreError> {
        // The opening is in the writer's queue already: this write, queued after it, runs it
        // along (same commit, unless it was committed meanwhile). Either write failing is the
        // error.
        let id = self.record_message(message).await;
        let first = opening.await?;
        Ok((first, id?))
    }

    async fn record_safety_event(&self, event: &NewSafetyEvent) -> Result<i64, StoreError> {
        let concerns = rows::to_json(&event.concerns)?;
        let event = event.clone();
        let now = now_ms();
        self.writer
            .write(move |db| {
                db.prepare_cached(
                    "INSERT INTO safety_events \
                     (conversation_id, message_id, level, concerns, action, notified_at, \
                     created_at) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id",
                )?
                .query_row(
                    params![
                        event.conversation_id,
                        event.message_id,
                        event.level,
                        concerns,
                        event.action,
                        event.notified_at,
                        now,
                    ],
                    |found| found.get(0),
                )
            })
            .await
    }
}

#[async_trait]
impl Reads for SqliteStore {
    async fn conversation(&self, id: &str) -> Result<Option<Conversation>, StoreError> {
        // Answers already given are read back (`store_commit = "after_reply"`).
        self.writer.settled().await;
        let row = sqlx::query(
            "SELECT id, user_id, contract, context, state, status, created_at, updated_at \
             FROM conversations WHERE id = ?",
        )
        .bind(id)
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(rows::conversation).transpose()
    }

    async fn list_conversations(
        &self,
        filter: &ConversationFilter,
        page: PageRequest,
    ) -> Result<Page<ConversationSummary>, StoreError> {
        self.writer.settled().await;
        let limit = listing::clamp_limit(page.limit);
        // One read transaction: the total and the page come from the same snapshot.
        let mut tx = self.pool.begin().await?;
        let total: i64 = listing::count_query::<Sqlite>(filter, TEXT_MATCH)
            .build_query_scalar()
            .fetch_one(&mut *tx)
            .await?;
        let found = listing::page_query::<Sqlite>(filter, TEXT_MATCH, page)
            .build()
            .fetch_all(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(Page {
            items: found.iter().map(rows::summary).collect::<Result<_, _>>()?,
            total: listing::total(total),
            offset: page.offset,
            limit,
        })
    }

    async fn messages(
        &self,
        conversation_id: &str,
        view: View,
    ) -> Result<Vec<Message>, StoreError> {
        self.writer.settled().await;
        let (sql, read): (_, fn(&SqliteRow) -> Result<Message, StoreError>) = match view {
            View::User => (
                rows::select_messages!(without_payloads "NULL",
                    "WHERE conversation_id = ? AND (role = 'user' OR is_validated) ORDER BY id"
                ),
                rows::message,
            ),
            View::Admin => (
                rows::select_messages!(prompts "WHERE conversation_id = ? ORDER BY id"),
                message_with_prompt,
            ),
        };
        let found = sqlx::query(sql)
            .bind(conversation_id)
            .fetch_all(&self.pool)
            .await?;
        found.iter().map(read).collect()
    }

    async fn message(&self, id: i64) -> Result<Option<Message>, StoreError> {
        self.writer.settled().await;
        let found = sqlx::query(rows::select_messages!(prompts "WHERE id = ?"))
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
        found.as_ref().map(message_with_prompt).transpose()
    }

    async fn safety_events(&self, conversation_id: &str) -> Result<Vec<SafetyEvent>, StoreError> {
        self.writer.settled().await;
        let found = sqlx::query(
            "SELECT id, conversation_id, message_id, level, concerns, action, notified_at, \
             created_at FROM safety_events WHERE conversation_id = ? ORDER BY id",
        )
        .bind(conversation_id)
        .fetch_all(&self.pool)
        .await?;
        found.iter().map(rows::safety_event).collect()
    }

    async fn stats(&self, query: &StatsQuery) -> Result<Stats, StoreError> {
        self.writer.settled().await;
        // One read transaction: every figure comes from the same snapshot.
        let mut tx = self.pool.begin().await?;
        let stored = match stats::stored_range_query::<Sqlite>(query) {
            Some(mut range) => stats::stored_range(&range.build().fetch_one(&mut *tx).await?)?,
            None => None,
        };
        let plan = Plan::new(query, stored);
        let mut tally = Tally::new(query, plan.as_ref());
        let Some(plan) = plan else {
            tx.commit().await?;
            return Ok(tally.finish(Vec::new(), Vec::new()));
        };
        let mut turns = stats::turns_query::<Sqlite>(&plan);
        let mut rows = turns.build().fetch(&mut *tx);
        while let Some(row) = rows.try_next().await? {
            tally.add_turns(&row)?;
        }
        drop(rows);
        let rules = stats::rules_query::<Sqlite>(&plan, STATS)
            .build()
            .fetch_all(&mut *tx)
            .await?;
        let repairs = stats::repairs_query::<Sqlite>(&plan, STATS)
            .build()
            .fetch_all(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(tally.finish(
            rules
                .iter()
                .map(stats::rule_count)
                .collect::<Result<_, _>>()?,
            repairs
                .iter()
                .map(stats::repair_count)
                .collect::<Result<_, _>>()?,
        ))
    }
}

#[async_trait]
impl Purges for SqliteStore {
    async fn purge_payloads(&self, range: PurgeRange) -> Result<Purged, StoreError> {
        let now = now_ms();
        let times = self
            .writer
            .write(move |db| {
                let chosen = db
                    .prepare_cached(
                        "SELECT id, prompt_hash FROM messages \
                         WHERE role = 'assistant' AND created_at >= ? AND created_at < ? \
                         AND (request_payload IS NOT NULL OR raw_response IS NOT NULL) \
                         ORDER BY created_at LIMIT ?",
                    )?
                    .query_map(params![range.from, range.before, range.limit], |row| {
                        Ok((row.get::<_, i64>(0)?, row.get::<_, Option<String>>(1)?))
                    })?
                    .collect::<rusqlite::Result<Vec<_>>>()?;
                let mut purge = db.prepare_cached(
                    "UPDATE messages SET request_payload = NULL, raw_response = NULL, \
                     prompt_hash = NULL, prompt_pointer = NULL, payload_purged_at = ? \
                     WHERE id = ? RETURNING created_at",
                )?;
                let times = chosen
                    .iter()
                    .map(|(id, _)| purge.query_row(params![now, id], |row| row.get::<_, i64>(0)))
                    .collect::<rusqlite::Result<Vec<i64>>>()?;
                // A prompt goes with the last request that used it.
                let hashes: std::collections::BTreeSet<&String> = chosen
                    .iter()
                    .filter_map(|(_, hash)| hash.as_ref())
                    .collect();
                let mut unused = db.prepare_cached(
                    "DELETE FROM prompts WHERE hash = ?1 \
                     AND NOT EXISTS (SELECT 1 FROM messages WHERE prompt_hash = ?1)",
                )?;
                for hash in hashes {
                    unused.execute(params![hash])?;
                }
                Ok(times)
            })
            .await?;
        Ok(Purged::of(&times))
    }
}

/// A message read with [`rows::select_messages`]`!(prompts …)`, its prompt back in its request.
fn message_with_prompt(row: &SqliteRow) -> Result<Message, StoreError> {
    let mut message = rows::message(row)?;
    prompts::restore(row, message.id, message.data.request_payload.as_mut())?;
    Ok(message)
}

/// A message as the writer thread inserts it: owned columns, JSON already encoded.
#[derive(Debug)]
struct MessageRow {
    /// Given before the insert (`store_commit = "after_reply"`); else the database gives it.
    id: Option<i64>,
    conversation_id: String,
    turn_id: String,
    role: &'static str,
    content: String,
    is_validated: bool,
    is_fallback: bool,
    contract: String,
    contract_version: String,
    provider: Option<String>,
    model: Option<String>,
    error: Option<String>,
    interrupted: Option<&'static str>,
    created_at: i64,
    encoded: EncodedMessage,
}

impl MessageRow {
    /// `message` as it is stored: its prompt apart, its JSON as text, the time of now.
    fn new(message: &NewMessage) -> Result<Self, StoreError> {
        Ok(Self {
            id: None,
            conversation_id: message.conversation_id.clone(),
            turn_id: message.turn_id.clone(),
            role: message.role.as_str(),
            content: message.content.clone(),
            is_validated: message.is_validated,
            is_fallback: message.is_fallback,
            contract: message.contract.clone(),
            contract_version: message.contract_version.clone(),
            provider: message.provider.clone(),
            model: message.model.clone(),
            error: message.error.clone(),
            interrupted: message.interrupted.map(Interruption::as_str),
            created_at: now_ms(),
            encoded: EncodedMessage::prompt_apart(message)?,
        })
    }

    /// Inserts the prompt (once) and the message, whose id it returns; the trigger of migration
    /// 3 bumps the conversation.
    fn insert(&self, db: &rusqlite::Connection) -> rusqlite::Result<i64> {
        let e = &self.encoded;
        let (prompt_hash, prompt_pointer) = match &e.prompt {
            Some(prompt) => {
                db.prepare_cached(
                    "INSERT INTO prompts (hash, text) VALUES (?, ?) ON CONFLICT DO NOTHING",
                )?
                .execute(params![prompt.hash, prompt.text])?;
                (Some(&prompt.hash), Some(&prompt.pointer))
            }
            None => (None, None),
        };
        db.prepare_cached(
            "INSERT INTO messages (id, conversation_id, turn_id, role, content, value, \
             is_validated, is_fallback, attempt, contract, contract_version, \
             request_payload, raw_response, violations, repairs, provider, model, \
             tokens_in, tokens_out, latency_ms, error, interrupted, created_at, \
             prompt_hash, prompt_pointer) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) \
             RETURNING id",
        )?
        .query_row(
            params![
                self.id,
                self.conversation_id,
                self.turn_id,
                self.role,
                self.content,
                e.value,
                self.is_validated,
                self.is_fallback,
                e.attempt,
                self.contract,
                self.contract_version,
                e.request_payload,
                e.raw_response,
                e.violations,
                e.repairs,
                self.provider,
                self.model,
                e.tokens_in,
                e.tokens_out,
                e.latency_ms,
                self.error,
                self.interrupted,
                self.created_at,
                prompt_hash,
                prompt_pointer,
            ],
            |found| found.get(0),
        )
    }
}

/// A conversation as the writer inserts it.
struct ConversationRow {
    conversation: Conversation,
    context: String,
    state: String,
}

impl ConversationRow {
    fn new(conversation: &Conversation) -> Result<Self, StoreError> {
        Ok(Self {
            context: rows::to_json(&conversation.context)?,
            state: rows::to_json(&conversation.state)?,
            conversation: conversation.clone(),
        })
    }

    fn insert(&self, db: &rusqlite::Connection) -> rusqlite::Result<usize> {
        let row = &self.conversation;
        db.prepare_cached(
            "INSERT INTO conversations \
             (id, user_id, contract, context, state, status, created_at, updated_at) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        )?
        .execute(params![
            row.id,
            row.user_id,
            row.contract,
            self.context,
            self.state,
            row.status.as_str(),
            row.created_at,
            row.updated_at,
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embeds_every_migration_file() {
        migrations::assert_embeds_directory("migrations/sqlite", MIGRATIONS);
    }

    #[test]
    fn recognises_in_memory_urls() {
        for url in [
            "sqlite::memory:",
            "sqlite://:memory:",
            "sqlite://?mode=memory",
            "sqlite:x.db?mode=memory",
        ] {
            assert!(names_memory_database(url), "{url}");
        }
        for url in [
            "sqlite://data/bridle.db",
            "sqlite:///var/lib/bridle.db",
            "sqlite:memory.db",
        ] {
            assert!(!names_memory_database(url), "{url}");
        }
    }
}
