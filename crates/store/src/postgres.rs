//! [`PostgresStore`]: the backend for many gateway instances sharing one PostgreSQL database,
//! behind a connection pool. JSON is stored as JSONB (bound as text and cast, so both backends
//! serialise alike), booleans as BOOLEAN and times as BIGINT Unix milliseconds. Migrations run
//! under sqlx's advisory lock, so instances starting together apply them once.

use super::listing::{self, TextMatch};
use super::migrations::{self, Embedded};
use super::rows::{self, EncodedMessage, Field, StoreRow};
use super::sql::{Bind, Placeholders, Query};
use super::stats::{self, Dialect, Plan, Tally};
use super::{
    Conversation, ConversationFilter, ConversationStatus, ConversationSummary, Interruption,
    Message, NewConversation, NewMessage, NewSafetyEvent, Page, PageRequest, Pending, PurgeRange,
    Purged, Route, SafetyEvent, Source, Stats, StatsQuery, StoreError, View, now_ms,
};
use super::{Purges, Reads, TurnWrites};
use async_trait::async_trait;
use futures::TryStreamExt;
use serde_json::Value;
use sqlx::postgres::{PgArguments, PgConnectOptions, PgPool, PgPoolOptions, PgRow};
use sqlx::types::Json;
use sqlx::{Arguments, AssertSqlSafe, Postgres, Row};
use std::str::FromStr;
use std::time::Duration;

/// Connections in the pool.
const POOL_SIZE: u32 = 10;

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
}

impl PostgresStore {
    /// Connects to the database `postgres://…` names and applies the migrations.
    pub async fn open(url: &str) -> Result<Self, StoreError> {
        // The URL may carry a password: it is not repeated in the error.
        let options = PgConnectOptions::from_str(url)
            .map_err(|error| StoreError::Config(format!("invalid PostgreSQL URL: {error}")))?
            .application_name("bridle");
        let pool = PgPoolOptions::new()
            .max_connections(POOL_SIZE)
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
        Ok(Self { pool })
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
        let encoded = EncodedMessage::new(first)?;
        let mut tx = self.pool.begin().await.map_err(fault)?;
        insert_conversation(conversation)?
            .execute(&mut *tx)
            .await
            .map_err(fault)?;
        let id = insert_message(first, encoded)
            .fetch_one(&mut *tx)
            .await
            .map_err(fault)?;
        tx.commit().await.map_err(fault)?;
        Ok(id)
    }

    async fn set_status(&self, id: &str, status: ConversationStatus) -> Result<bool, StoreError> {
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
        let encoded = EncodedMessage::new(message)?;
        // One statement, hence one transaction: the insert and the conversation's bump.
        Ok(insert_message(message, encoded)
            .fetch_one(&self.pool)
            .await
            .map_err(fault)?)
    }

    fn open_turn(&self, conversation: Option<&Conversation>, first: &NewMessage) -> Pending<i64> {
        let store = self.clone();
        let conversation = conversation.cloned();
        let first = first.clone();
        // Started now, on a task of its own, so that it runs while the model is called.
        let write = tokio::spawn(async move {
            match conversation {
                Some(conversation) => store.create_conversation_with(&conversation, &first).await,
                None => store.record_message(&first).await,
            }
        });
        Box::pin(async move { write.await.map_err(|_| StoreError::Closed)? })
    }

    async fn record_after(
        &self,
        opening: Pending<i64>,
        message: &NewMessage,
    ) -> Result<(i64, i64), StoreError> {
        // Connections of a pool commit in any order: the opening first, so the ids keep the
        // turn's order.
        let first = opening.await?;
        Ok((first, self.record_message(message).await?))
    }

    async fn record_safety_event(&self, event: &NewSafetyEvent) -> Result<i64, StoreError> {
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
        let sql = match view {
            View::User => rows::select_messages!(without_payloads "NULL::jsonb",
                "WHERE conversation_id = $1 AND (role = 'user' OR is_validated) ORDER BY id"
            ),
            View::Admin => rows::select_messages!("WHERE conversation_id = $1 ORDER BY id"),
        };
        let found = sqlx::query(sql)
            .bind(conversation_id)
            .fetch_all(&self.pool)
            .await
            .map_err(fault)?;
        found.iter().map(rows::message).collect()
    }

    async fn message(&self, id: i64) -> Result<Option<Message>, StoreError> {
        let found = sqlx::query(rows::select_messages!("WHERE id = $1"))
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .map_err(fault)?;
        found.as_ref().map(rows::message).transpose()
    }

    async fn safety_events(&self, conversation_id: &str) -> Result<Vec<SafetyEvent>, StoreError> {
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
        let times: Vec<i64> = sqlx::query_scalar(
            "UPDATE messages SET request_payload = NULL, raw_response = NULL, \
             payload_purged_at = $1 WHERE id IN (SELECT id FROM messages \
             WHERE role = 'assistant' AND created_at >= $2 AND created_at < $3 \
             AND (request_payload IS NOT NULL OR raw_response IS NOT NULL) \
             ORDER BY created_at LIMIT $4) RETURNING created_at",
        )
        .bind(now_ms())
        .bind(range.from)
        .bind(range.before)
        .bind(i64::from(range.limit))
        .fetch_all(&self.pool)
        .await
        .map_err(fault)?;
        Ok(Purged::of(&times))
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

/// The statement that inserts `message` (`encoded`: its JSON columns) and bumps its
/// conversation's `updated_at`; it returns the message's id.
fn insert_message(
    message: &NewMessage,
    encoded: EncodedMessage,
) -> sqlx::query::QueryScalar<'_, Postgres, i64, sqlx::postgres::PgArguments> {
    sqlx::query_scalar(
        "WITH inserted AS (\
         INSERT INTO messages (conversation_id, turn_id, role, content, value, is_validated, \
         is_fallback, attempt, contract, contract_version, request_payload, raw_response, \
         violations, repairs, provider, model, tokens_in, tokens_out, latency_ms, error, \
         interrupted, route, created_at, context, answer, request_id, trace_id) \
         VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7, $8, $9, $10, $11::jsonb, $12::jsonb, \
         $13::jsonb, $14::jsonb, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24::jsonb, \
         $25::jsonb, $26, $27) \
         RETURNING id, conversation_id, created_at) \
         UPDATE conversations c SET updated_at = GREATEST(c.updated_at, inserted.created_at) \
         FROM inserted WHERE c.id = inserted.conversation_id RETURNING inserted.id",
    )
    .bind(&message.conversation_id)
    .bind(&message.turn_id)
    .bind(message.role.as_str())
    .bind(&message.content)
    .bind(encoded.value)
    .bind(message.is_validated)
    .bind(message.is_fallback)
    .bind(encoded.attempt)
    .bind(&message.contract)
    .bind(&message.contract_version)
    .bind(encoded.request_payload)
    .bind(encoded.raw_response)
    .bind(encoded.violations)
    .bind(encoded.repairs)
    .bind(&message.provider)
    .bind(&message.model)
    .bind(encoded.tokens_in)
    .bind(encoded.tokens_out)
    .bind(encoded.latency_ms)
    .bind(&message.error)
    .bind(message.interrupted.map(Interruption::as_str))
    .bind(message.route.map(Route::as_str))
    .bind(now_ms())
    .bind(encoded.context)
    .bind(encoded.answer)
    .bind(&message.request_id)
    .bind(&message.trace_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embeds_every_migration_file() {
        migrations::assert_embeds_directory("migrations/postgres", MIGRATIONS);
    }
}
