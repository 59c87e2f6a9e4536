//! [`PostgresStore`]: the backend for many gateway instances sharing one PostgreSQL database,
//! behind a connection pool. JSON is stored as JSONB (bound as text and cast, so both backends
//! serialise alike), booleans as BOOLEAN and times as BIGINT Unix milliseconds. Migrations run
//! under sqlx's advisory lock, so instances starting together apply them once.
//!
//! Messages are written by group commit ([`writer`], [`batch`]): concurrent turns share one
//! statement and one commit. Each distinct prompt is stored once ([`crate::prompts`]); the
//! foreign key from `messages.prompt_hash` makes that safe with several gateways writing and
//! sweeping at once (migration 8 says how). With `store_commit = "after_reply"` a message takes
//! its id from the sequence, is queued and answered; its commit follows within milliseconds, and
//! this instance's reads and other writes wait for the writes queued before them.

mod batch;
mod opening;
mod writer;

use super::Commit;
use super::listing::{self, TextMatch};
use super::migrations::{self, Embedded};
use super::prompts;
use super::rows::{self, Field, StoreRow};
use super::sql::{Bind, Placeholders, Query};
use super::stats::{self, Dialect, Plan, Tally};
use super::write_rows::{ConversationRow, MessageRow};
use super::{
    Conversation, ConversationFilter, ConversationStatus, ConversationSummary, Message,
    NewConversation, NewMessage, NewSafetyEvent, Page, PageRequest, Pending, PurgeRange, Purged,
    SafetyEvent, Source, Stats, StatsQuery, StoreError, StoreOptions, View, now_ms,
};
use super::{Purges, Reads, TurnWrites};
use async_trait::async_trait;
use batch::Write;
use futures::TryStreamExt;
use opening::Held;
use serde_json::Value;
use sqlx::postgres::{PgArguments, PgConnectOptions, PgPool, PgPoolOptions, PgRow};
use sqlx::types::Json;
use sqlx::{Arguments, AssertSqlSafe, Postgres, Row};
use std::str::FromStr;
use std::time::Duration;
use writer::Writer;

/// Connections in the pool unless `store_max_connections` says otherwise: one for each of the
/// writer's lanes, which write their batches at the same time, and two for reads (the admin
/// API, retention, the readiness probe) and the ids `after_reply` takes ahead.
pub const DEFAULT_POSTGRES_CONNECTIONS: u32 = writer::LANES as u32 + 2;

/// How long getting a connection (opening one included) may take.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(10);

/// The PostgreSQL migrations, in version order.
const MIGRATIONS: &[Embedded] = &[
    Embedded {
        version: 1,
        name: "initial",
        sql: include_str!("../migrations/postgres/0001_initial.sql"),
    },
    Embedded {
        version: 2,
        name: "stats_indexes",
        sql: include_str!("../migrations/postgres/0002_stats_indexes.sql"),
    },
    Embedded {
        version: 3,
        name: "interrupted",
        sql: include_str!("../migrations/postgres/0003_interrupted.sql"),
    },
    Embedded {
        version: 4,
        name: "payload_purged",
        sql: include_str!("../migrations/postgres/0004_payload_purged.sql"),
    },
    Embedded {
        version: 5,
        name: "store_health",
        sql: include_str!("../migrations/postgres/0005_store_health.sql"),
    },
    Embedded {
        version: 6,
        name: "route",
        sql: include_str!("../migrations/postgres/0006_route.sql"),
    },
    Embedded {
        version: 7,
        name: "message_turn",
        sql: include_str!("../migrations/postgres/0007_message_turn.sql"),
    },
    Embedded {
        version: 8,
        name: "request_ids",
        sql: include_str!("../migrations/postgres/0008_request_ids.sql"),
    },
    Embedded {
        version: 9,
        name: "prompts",
        sql: include_str!("../migrations/postgres/0009_prompts.sql"),
    },
];

/// Case-insensitive substring match (`ILIKE` folds case by the database's locale).
const TEXT_MATCH: TextMatch = TextMatch {
    before: "m.content ILIKE ",
    after: " ESCAPE '\\'",
};

/// Reading JSONB arrays for the statistics. `jsonb_array_elements` gets NULL (no rows) for a value
/// that is not an array; `->` on an element that is not an object is NULL; a count is cast only
/// when it is a plain integer that fits a BIGINT.
const STATS: Dialect = Dialect {
    violations: "jsonb_array_elements(CASE jsonb_typeof(m.violations) \
                 WHEN 'array' THEN m.violations END) AS e (value)",
    rule: "CASE jsonb_typeof(e.value -> 'rule') WHEN 'string' THEN e.value ->> 'rule' END",
    repairs: "jsonb_array_elements(CASE jsonb_typeof(m.repairs) \
              WHEN 'array' THEN m.repairs END) AS e (value)",
    repair_kind: "CASE jsonb_typeof(e.value -> 'kind') WHEN 'string' THEN e.value ->> 'kind' END",
    repair_count: "CASE WHEN jsonb_typeof(e.value -> 'count') = 'number' \
                   AND (e.value ->> 'count') ~ '^[0-9]{1,18}$' \
                   THEN CAST(e.value ->> 'count' AS BIGINT) END",
    // Ties are ordered by code point, as in SQLite, whatever the database's collation.
    binary_order: " COLLATE \"C\"",
};

/// The PostgreSQL store.
#[derive(Debug, Clone)]
pub struct PostgresStore {
    pool: PgPool,
    writer: Writer,
    commit: Commit,
}

impl PostgresStore {
    /// Connects to the database `postgres://…` names and applies the migrations; commits before
    /// each answer.
    pub async fn open(url: &str) -> Result<Self, StoreError> {
        Self::open_with(url, Commit::BeforeReply).await
    }

    /// [`PostgresStore::open`], committing as `commit` says.
    pub async fn open_with(url: &str, commit: Commit) -> Result<Self, StoreError> {
        let options = StoreOptions {
            commit,
            ..StoreOptions::default()
        };
        Self::open_with_options(url, options).await
    }

    /// [`PostgresStore::open`], as `options` say.
    pub async fn open_with_options(url: &str, options: StoreOptions) -> Result<Self, StoreError> {
        let StoreOptions {
            commit,
            max_connections,
        } = options;
        let max_connections = max_connections.unwrap_or(DEFAULT_POSTGRES_CONNECTIONS);
        if max_connections == 0 {
            return Err(StoreError::Config(
                "store_max_connections must be at least 1".to_owned(),
            ));
        }
        // The URL may carry a password: it is not repeated in the error.
        let options = PgConnectOptions::from_str(url)
            .map_err(|error| StoreError::Config(format!("invalid PostgreSQL URL: {error}")))?
            .application_name("bridle");
        let pool = PgPoolOptions::new()
            .max_connections(max_connections)
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .connect_with(options)
            .await
            .map_err(fault)?;
        migrations::migrator(MIGRATIONS)
            .run(&pool)
            .await
            .map_err(|error| StoreError::Migration {
                source: Box::new(error),
            })?;
        Ok(Self {
            writer: Writer::start(pool.clone()),
            pool,
            commit,
        })
    }

    /// Waits for the writes queued before the call when they may not be committed yet
    /// (`after_reply`), so that this instance reads what it wrote.
    async fn settle(&self) {
        if self.commit == Commit::AfterReply {
            self.writer.settled().await;
        }
    }

    /// Writes a message (and the conversation it starts): with the next batch, answered once
    /// committed; or, when `detach` and `after_reply`, with an id taken now, answered once
    /// queued.
    async fn write_message(
        &self,
        conversation: Option<&Conversation>,
        message: &NewMessage,
        detach: bool,
    ) -> Result<i64, StoreError> {
        let write = Write::one(
            conversation.map(ConversationRow::new).transpose()?,
            MessageRow::new(message)?,
        );
        self.send(write, detach).await
    }

    /// Writes `write` (one message) as [`PostgresStore::write_message`] says. A message
    /// PostgreSQL would refuse whatever happens (text holding NUL) is always waited for, so its
    /// error reaches the caller.
    async fn send(&self, mut write: Write, detach: bool) -> Result<i64, StoreError> {
        if !detach || self.commit == Commit::BeforeReply || write.refused() {
            let ids = self.writer.write(write).await?;
            return ids.first().copied().ok_or(StoreError::Closed);
        }
        let id: i64 =
            sqlx::query_scalar("SELECT nextval(pg_get_serial_sequence('messages', 'id'))")
                .fetch_one(&self.pool)
                .await
                .map_err(fault)?;
        if let Some(message) = write.messages.first_mut() {
            message.id = Some(id);
        }
        self.writer.write_detached(write).await?;
        Ok(id)
    }
}

/// A sqlx error as the store's: [`StoreError::Unavailable`] when the database is out of reach
/// (I/O, TLS, the pool without a connection, PostgreSQL's classes 08 — connection —, 53 —
/// insufficient resources — and 57P — operator intervention: shutdown, restart), a
/// [`StoreError::ForeignKey`] for a foreign key that did not match, else
/// [`StoreError::Database`].
fn fault(error: sqlx::Error) -> StoreError {
    let unavailable = match &error {
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(e) => e.code().is_some_and(|code| {
            code.starts_with("08") || code.starts_with("53") || code.starts_with("57P")
        }),
        _ => false,
    };
    let foreign_key = error
        .as_database_error()
        .is_some_and(|error| error.is_foreign_key_violation());
    let source: Source = Box::new(error);
    if unavailable {
        StoreError::Unavailable { source }
    } else if foreign_key {
        StoreError::ForeignKey { source }
    } else {
        StoreError::Database { source }
    }
}

/// A shared [`Query`]'s values as sqlx's arguments.
fn arguments(query: &Query) -> Result<PgArguments, StoreError> {
    let mut arguments = PgArguments::default();
    for bind in query.binds() {
        let added = match bind {
            Bind::Text(text) => arguments.add(text.clone()),
            Bind::Int(n) => arguments.add(*n),
        };
        added.map_err(|error| StoreError::Encode(error.to_string()))?;
    }
    Ok(arguments)
}

/// A shared [`Query`] as a sqlx statement.
fn statement(query: &Query) -> Result<sqlx::query::Query<'_, Postgres, PgArguments>, StoreError> {
    Ok(sqlx::query_with(
        AssertSqlSafe(query.sql().to_owned()),
        arguments(query)?,
    ))
}

impl StoreRow for PgRow {
    fn text(&self, column: &str) -> Result<String, StoreError> {
        self.try_get(column).map_err(fault)
    }

    fn opt_text(&self, column: &str) -> Result<Option<String>, StoreError> {
        self.try_get(column).map_err(fault)
    }

    fn int(&self, column: &str) -> Result<i64, StoreError> {
        self.try_get(column).map_err(fault)
    }

    fn opt_int(&self, column: &str) -> Result<Option<i64>, StoreError> {
        self.try_get(column).map_err(fault)
    }

    fn opt_int32(&self, column: &str) -> Result<Option<i32>, StoreError> {
        self.try_get(column).map_err(fault)
    }

    fn flag(&self, column: &str) -> Result<bool, StoreError> {
        self.try_get(column).map_err(fault)
    }

    fn opt_json(&self, field: Field<'_>) -> Result<Option<Value>, StoreError> {
        // JSONB always holds valid JSON; a wrong shape is caught by the caller's typed read.
        let value: Option<Json<Value>> = self.try_get(field.column).map_err(fault)?;
        Ok(value.map(|Json(value)| value))
    }
}

#[async_trait]
impl TurnWrites for PostgresStore {
    fn backend(&self) -> &'static str {
        "postgres"
    }

    fn write_failures(&self) -> Option<prometheus_client::metrics::counter::Counter> {
        (self.commit == Commit::AfterReply).then(|| self.writer.failures())
    }

    async fn flush(&self) {
        self.writer.settled().await;
    }

    async fn create_conversation(&self, new: &NewConversation) -> Result<Conversation, StoreError> {
        let conversation = Conversation::start(new);
        insert_conversation(&conversation)?
            .execute(&self.pool)
            .await
            .map_err(fault)?;
        Ok(conversation)
    }

    async fn create_conversation_with(
        &self,
        conversation: &Conversation,
        first: &NewMessage,
    ) -> Result<i64, StoreError> {
        self.write_message(Some(conversation), first, false).await
    }

    async fn set_status(&self, id: &str, status: ConversationStatus) -> Result<bool, StoreError> {
        self.settle().await;
        let done = sqlx::query(
            "UPDATE conversations SET status = $1, updated_at = GREATEST(updated_at, $2) \
             WHERE id = $3",
        )
        .bind(status.as_str())
        .bind(now_ms())
        .bind(id)
        .execute(&self.pool)
        .await
        .map_err(fault)?;
        Ok(done.rows_affected() > 0)
    }

    async fn probe_write(&self) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO store_health (id, checked_at) VALUES (1, $1) \
             ON CONFLICT (id) DO UPDATE SET checked_at = excluded.checked_at",
        )
        .bind(now_ms())
        .execute(&self.pool)
        .await
        .map_err(fault)?;
        Ok(())
    }

    async fn set_state(&self, id: &str, state: &Value) -> Result<bool, StoreError> {
        self.settle().await;
        let done = sqlx::query(
            "UPDATE conversations SET state = $1::jsonb, updated_at = GREATEST(updated_at, $2) \
             WHERE id = $3",
        )
        .bind(rows::to_json(state)?)
        .bind(now_ms())
        .bind(id)
        .execute(&self.pool)
        .await
        .map_err(fault)?;
        Ok(done.rows_affected() > 0)
    }

    async fn record_message(&self, message: &NewMessage) -> Result<i64, StoreError> {
        self.write_message(None, message, true).await
    }

    fn open_turn(&self, conversation: Option<&Conversation>, first: &NewMessage) -> Pending<i64> {
        let rows = conversation
            .map(ConversationRow::new)
            .transpose()
            .and_then(|conversation| Ok(Write::one(conversation, MessageRow::new(first)?)));
        let write = match rows {
            Ok(write) => write,
            Err(error) => return Pending::new(std::future::ready(Err(error))),
        };
        if self.commit == Commit::BeforeReply {
            // Held for the turn's first record after it: one transaction for both.
            return Held::pending(self.writer.clone(), write);
        }
        let store = self.clone();
        // Started now, on a task of its own, so that it runs while the model is called.
        let write = tokio::spawn(async move { store.send(write, true).await });
        Pending::new(async move { write.await.map_err(|_| StoreError::Closed)? })
    }

    async fn record_after(
        &self,
        opening: Pending<i64>,
        message: &NewMessage,
    ) -> Result<(i64, i64), StoreError> {
        if let Some(held) = opening.held::<Held>()
            && held.conversation_id() == message.conversation_id
            && let Ok(row) = MessageRow::new(message)
            && !batch::refused(&row)
            && let Some(ids) = held.write_with(row).await?
        {
            return Ok(ids);
        }
        // The opening by itself first, so the ids keep the turn's order.
        let first = opening.await?;
        Ok((first, self.record_message(message).await?))
    }

    async fn record_safety_event(&self, event: &NewSafetyEvent) -> Result<i64, StoreError> {
        // Its message must be committed first.
        self.settle().await;
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO safety_events \
             (conversation_id, message_id, level, concerns, action, notified_at, created_at) \
             VALUES ($1, $2, $3, $4::jsonb, $5, $6, $7) RETURNING id",
        )
        .bind(&event.conversation_id)
        .bind(event.message_id)
        .bind(&event.level)
        .bind(rows::to_json(&event.concerns)?)
        .bind(&event.action)
        .bind(event.notified_at)
        .bind(now_ms())
        .fetch_one(&self.pool)
        .await
        .map_err(fault)?;
        Ok(id)
    }
}

#[async_trait]
impl Reads for PostgresStore {
    async fn conversation(&self, id: &str) -> Result<Option<Conversation>, StoreError> {
        self.settle().await;
        let row = sqlx::query(
            "SELECT id, user_id, contract, context, state, status, created_at, updated_at \
             FROM conversations WHERE id = $1",
        )
        .bind(id)
        .fetch_optional(&self.pool)
        .await
        .map_err(fault)?;
        row.as_ref().map(rows::conversation).transpose()
    }

    async fn list_conversations(
        &self,
        filter: &ConversationFilter,
        page: PageRequest,
    ) -> Result<Page<ConversationSummary>, StoreError> {
        self.settle().await;
        let limit = listing::clamp_limit(page.limit);
        // One snapshot for the total and the page.
        let mut tx = self
            .pool
            .begin_with("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            .await
            .map_err(fault)?;
        let count = listing::count_query(Placeholders::Numbered, filter, TEXT_MATCH);
        let total: i64 =
            sqlx::query_scalar_with(AssertSqlSafe(count.sql().to_owned()), arguments(&count)?)
                .fetch_one(&mut *tx)
                .await
                .map_err(fault)?;
        let chosen = listing::page_query(Placeholders::Numbered, filter, TEXT_MATCH, page);
        let found = statement(&chosen)?
            .fetch_all(&mut *tx)
            .await
            .map_err(fault)?;
        tx.commit().await.map_err(fault)?;
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
        self.settle().await;
        let (sql, read): (_, fn(&PgRow) -> Result<Message, StoreError>) = match view {
            View::User => (
                rows::select_messages!(without_payloads "NULL::jsonb",
                    "WHERE conversation_id = $1 AND (role = 'user' OR is_validated) ORDER BY id"
                ),
                rows::message,
            ),
            View::Admin => (
                rows::select_messages!(prompts "WHERE conversation_id = $1 ORDER BY id"),
                prompts::message_with_prompt,
            ),
        };
        let found = sqlx::query(sql)
            .bind(conversation_id)
            .fetch_all(&self.pool)
            .await
            .map_err(fault)?;
        found.iter().map(read).collect()
    }

    async fn message(&self, id: i64) -> Result<Option<Message>, StoreError> {
        self.settle().await;
        let found = sqlx::query(rows::select_messages!(prompts "WHERE messages.id = $1"))
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .map_err(fault)?;
        found.as_ref().map(prompts::message_with_prompt).transpose()
    }

    async fn safety_events(&self, conversation_id: &str) -> Result<Vec<SafetyEvent>, StoreError> {
        self.settle().await;
        let found = sqlx::query(
            "SELECT id, conversation_id, message_id, level, concerns, action, notified_at, \
             created_at FROM safety_events WHERE conversation_id = $1 ORDER BY id",
        )
        .bind(conversation_id)
        .fetch_all(&self.pool)
        .await
        .map_err(fault)?;
        found.iter().map(rows::safety_event).collect()
    }

    async fn stats(&self, query: &StatsQuery) -> Result<Stats, StoreError> {
        self.settle().await;
        // One snapshot for every figure.
        let mut tx = self
            .pool
            .begin_with("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            .await
            .map_err(fault)?;
        let stored = match stats::stored_range_query(Placeholders::Numbered, query) {
            Some(range) => stats::stored_range(
                &statement(&range)?
                    .fetch_one(&mut *tx)
                    .await
                    .map_err(fault)?,
            )?,
            None => None,
        };
        let plan = Plan::new(query, stored);
        let mut tally = Tally::new(query, plan.as_ref());
        let Some(plan) = plan else {
            tx.commit().await.map_err(fault)?;
            return Ok(tally.finish(Vec::new(), Vec::new()));
        };
        let turns = stats::turns_query(Placeholders::Numbered, &plan);
        let mut rows = statement(&turns)?.fetch(&mut *tx);
        while let Some(row) = rows.try_next().await.map_err(fault)? {
            tally.add_turns(&row)?;
        }
        drop(rows);
        let rules = stats::rules_query(Placeholders::Numbered, &plan, STATS);
        let rules = statement(&rules)?
            .fetch_all(&mut *tx)
            .await
            .map_err(fault)?;
        let repairs = stats::repairs_query(Placeholders::Numbered, &plan, STATS);
        let repairs = statement(&repairs)?
            .fetch_all(&mut *tx)
            .await
            .map_err(fault)?;
        let models = stats::models::models_query(Placeholders::Numbered, &plan, STATS);
        let models = statement(&models)?
            .fetch_all(&mut *tx)
            .await
            .map_err(fault)?;
        tx.commit().await.map_err(fault)?;
        let mut stats = tally.finish(
            rules
                .iter()
                .map(stats::rule_count)
                .collect::<Result<_, _>>()?,
            repairs
                .iter()
                .map(stats::repair_count)
                .collect::<Result<_, _>>()?,
        );
        stats.models = models
            .iter()
            .map(stats::models::model_count)
            .collect::<Result<_, _>>()?;
        Ok(stats)
    }
}

#[async_trait]
impl Purges for PostgresStore {
    async fn purge_payloads(&self, range: PurgeRange) -> Result<Purged, StoreError> {
        self.settle().await;
        let purged: Vec<(i64, Option<String>)> = sqlx::query_as(
            "WITH chosen AS (SELECT id, prompt_hash FROM messages \
             WHERE role = 'assistant' AND created_at >= $2 AND created_at < $3 \
             AND (request_payload IS NOT NULL OR raw_response IS NOT NULL) \
             ORDER BY created_at LIMIT $4 FOR UPDATE) \
             UPDATE messages m SET request_payload = NULL, raw_response = NULL, \
             prompt_hash = NULL, prompt_pointer = NULL, payload_purged_at = $1 \
             FROM chosen WHERE m.id = chosen.id RETURNING m.created_at, chosen.prompt_hash",
        )
        .bind(now_ms())
        .bind(range.from)
        .bind(range.before)
        .bind(i64::from(range.limit))
        .fetch_all(&self.pool)
        .await
        .map_err(fault)?;
        let times: Vec<i64> = purged.iter().map(|(at, _)| *at).collect();
        let hashes: std::collections::BTreeSet<&String> = purged
            .iter()
            .filter_map(|(_, hash)| hash.as_ref())
            .collect();
        for hash in hashes {
            self.delete_prompt_if_unused(hash).await?;
        }
        Ok(Purged::of(&times))
    }
}

impl PostgresStore {
    /// Deletes the prompt `hash` when no message names it any more. A message committed by
    /// another gateway meanwhile makes the delete fail on the foreign key: the prompt is in use
    /// again and stays.
    async fn delete_prompt_if_unused(&self, hash: &str) -> Result<(), StoreError> {
        let deleted = sqlx::query(
            "DELETE FROM prompts WHERE hash = $1 \
             AND NOT EXISTS (SELECT 1 FROM messages WHERE prompt_hash = $1)",
        )
        .bind(hash)
        .execute(&self.pool)
        .await
        .map_err(fault);
        match deleted {
            Err(error) if error.is_foreign_key_violation() => Ok(()),
            Err(error) => Err(error),
            Ok(_) => Ok(()),
        }
    }
}

/// The statement that inserts `conversation`.
fn insert_conversation(
    conversation: &Conversation,
) -> Result<sqlx::query::Query<'_, Postgres, sqlx::postgres::PgArguments>, StoreError> {
    Ok(sqlx::query(
        "INSERT INTO conversations \
         (id, user_id, contract, context, state, status, created_at, updated_at) \
         VALUES ($1, $2, $3, $4::jsonb, $5::jsonb, $6, $7, $8)",
    )
    .bind(&conversation.id)
    .bind(&conversation.user_id)
    .bind(&conversation.contract)
    .bind(rows::to_json(&conversation.context)?)
    .bind(rows::to_json(&conversation.state)?)
    .bind(conversation.status.as_str())
    .bind(conversation.created_at)
    .bind(conversation.updated_at))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embeds_every_migration_file() {
        migrations::assert_embeds_directory("migrations/postgres", MIGRATIONS);
    }
}
