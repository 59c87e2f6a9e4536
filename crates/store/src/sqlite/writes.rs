//! The SQLite store's writes ([`TurnWrites`], [`Purges`]): each is a job for the writer
//! ([`super::queue`]) — one statement (a trigger bumps the conversation when a message is
//! stored), or two in one transaction for a conversation that starts with its first message —
//! and the rows they insert ([`MessageRow`], with its prompt apart: [`super::prompts`]). With
//! `store_commit = "after_reply"` a message gets its id before the insert and may be answered
//! before its commit ([`super::commit`]). The readiness probe ([`TurnWrites::probe_write`])
//! also checks the free space of the database's disk.

use super::SqliteStore;
use super::commit::AfterReply;
use crate::rows;
use crate::write_rows::{ConversationRow, MessageRow};
use crate::{
    Conversation, ConversationStatus, NewConversation, NewMessage, NewSafetyEvent, Pending,
    PurgeRange, Purged, Purges, StoreError, TurnWrites, now_ms,
};
use async_trait::async_trait;
use rusqlite::params;
use serde_json::Value;
use std::path::Path;

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
            Err(error) => return Pending::new(std::future::ready(Err(error))),
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
                Pending::new(std::future::ready(Ok(id)))
            }
            None => Pending::new(self.writer.write_soon(write)),
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

impl MessageRow {
    /// Inserts the prompt (once) and the message, whose id it returns; the trigger of migration
    /// 3 bumps the conversation.
    fn insert(&self, db: &rusqlite::Connection) -> rusqlite::Result<i64> {
        let e = &self.encoded;
        let (prompt_hash, prompt_pointer) = match &self.prompt {
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
             tokens_in, tokens_out, latency_ms, error, interrupted, route, context, answer, \
             created_at, prompt_hash, prompt_pointer, request_id, trace_id) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, \
             ?, ?) \
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
                self.route,
                e.context,
                e.answer,
                self.created_at,
                prompt_hash,
                prompt_pointer,
                self.request_id,
                self.trace_id,
            ],
            |found| found.get(0),
        )
    }
}

impl ConversationRow {
    /// Inserts the conversation.
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
