//! [`Reads`] of the SQLite store, on its read-only connections ([`super::pool`]). Each read
//! first waits for the writes answered before it (`store_commit = "after_reply"`), then runs
//! its statements on a blocking thread; a listing or the statistics run theirs in one read
//! transaction, so that every figure comes from the same snapshot. The SQL of the listing and
//! of the statistics is shared with PostgreSQL (`listing.rs`, `stats.rs`); rows are read
//! through [`StoreRow`], as PostgreSQL's are.

use super::{SqliteStore, fault};
use crate::listing::{self, TextMatch};
use crate::prompts;
use crate::rows::{self, Field, StoreRow};
use crate::sql::{Bind, Placeholders, Query};
use crate::stats::{self, Dialect, Plan, Tally};
use crate::{
    Conversation, ConversationFilter, ConversationSummary, Message, Page, PageRequest, Reads,
    SafetyEvent, Stats, StatsQuery, StoreError, View,
};
use async_trait::async_trait;
use rusqlite::types::{ToSql, ToSqlOutput};
use rusqlite::{Connection, Params, Row};
use serde_json::Value;

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

impl StoreRow for Row<'_> {
    fn text(&self, column: &str) -> Result<String, StoreError> {
        self.get(column).map_err(fault)
    }

    fn opt_text(&self, column: &str) -> Result<Option<String>, StoreError> {
        self.get(column).map_err(fault)
    }

    fn int(&self, column: &str) -> Result<i64, StoreError> {
        self.get(column).map_err(fault)
    }

    fn opt_int(&self, column: &str) -> Result<Option<i64>, StoreError> {
        self.get(column).map_err(fault)
    }

    fn opt_int32(&self, column: &str) -> Result<Option<i32>, StoreError> {
        self.get(column).map_err(fault)
    }

    fn flag(&self, column: &str) -> Result<bool, StoreError> {
        self.get(column).map_err(fault)
    }

    fn opt_json(&self, field: Field<'_>) -> Result<Option<Value>, StoreError> {
        let text: Option<String> = self.get(field.column).map_err(fault)?;
        text.map(|text| serde_json::from_str(&text).map_err(|error| field.corrupt(error)))
            .transpose()
    }
}

impl ToSql for Bind {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        match self {
            Self::Text(text) => text.to_sql(),
            Self::Int(n) => n.to_sql(),
        }
    }
}

/// The rows `sql` returns with `params`, each read with `read`.
fn all<T>(
    db: &Connection,
    sql: &str,
    params: impl Params,
    mut read: impl FnMut(&Row<'_>) -> Result<T, StoreError>,
) -> Result<Vec<T>, StoreError> {
    let mut statement = db.prepare_cached(sql).map_err(fault)?;
    let mut found = statement.query(params).map_err(fault)?;
    let mut items = Vec::new();
    while let Some(row) = found.next().map_err(fault)? {
        items.push(read(row)?);
    }
    Ok(items)
}

/// The first row `sql` returns with `params`, read with `read`; `None` when there is none.
fn first<T>(
    db: &Connection,
    sql: &str,
    params: impl Params,
    read: impl FnOnce(&Row<'_>) -> Result<T, StoreError>,
) -> Result<Option<T>, StoreError> {
    let mut statement = db.prepare_cached(sql).map_err(fault)?;
    let mut found = statement.query(params).map_err(fault)?;
    found.next().map_err(fault)?.map(read).transpose()
}

/// The rows of a shared [`Query`], each read with `read`.
fn all_of<T>(
    db: &Connection,
    query: &Query,
    read: impl FnMut(&Row<'_>) -> Result<T, StoreError>,
) -> Result<Vec<T>, StoreError> {
    all(
        db,
        query.sql(),
        rusqlite::params_from_iter(query.binds()),
        read,
    )
}

/// The one row of a shared [`Query`], read with `read`.
fn one_of<T>(
    db: &Connection,
    query: &Query,
    read: impl FnOnce(&Row<'_>) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    first(
        db,
        query.sql(),
        rusqlite::params_from_iter(query.binds()),
        read,
    )?
    .ok_or_else(|| StoreError::Corrupt(format!("no row from {:?}", query.sql())))
}

#[async_trait]
impl Reads for SqliteStore {
    async fn conversation(&self, id: &str) -> Result<Option<Conversation>, StoreError> {
        // Answers already given are read back (`store_commit = "after_reply"`).
        self.writer.settled().await;
        let id = id.to_owned();
        self.readers
            .read(move |db| {
                first(
                    db,
                    "SELECT id, user_id, contract, context, state, status, created_at, \
                     updated_at FROM conversations WHERE id = ?",
                    [&id],
                    |row| rows::conversation(row),
                )
            })
            .await
    }

    async fn list_conversations(
        &self,
        filter: &ConversationFilter,
        page: PageRequest,
    ) -> Result<Page<ConversationSummary>, StoreError> {
        self.writer.settled().await;
        let limit = listing::clamp_limit(page.limit);
        let count = listing::count_query(Placeholders::Question, filter, TEXT_MATCH);
        let chosen = listing::page_query(Placeholders::Question, filter, TEXT_MATCH, page);
        self.readers
            .read(move |db| {
                // One read transaction: the total and the page come from the same snapshot.
                let tx = db.transaction().map_err(fault)?;
                let total = one_of(&tx, &count, |row| row.get::<_, i64>(0).map_err(fault))?;
                let items = all_of(&tx, &chosen, |row| rows::summary(row))?;
                tx.commit().map_err(fault)?;
                Ok(Page {
                    items,
                    total: listing::total(total),
                    offset: page.offset,
                    limit,
                })
            })
            .await
    }

    async fn messages(
        &self,
        conversation_id: &str,
        view: View,
    ) -> Result<Vec<Message>, StoreError> {
        self.writer.settled().await;
        let (sql, read): (_, fn(&Row<'_>) -> Result<Message, StoreError>) = match view {
            View::User => (
                rows::select_messages!(without_payloads "NULL",
                    "WHERE conversation_id = ? AND (role = 'user' OR is_validated) ORDER BY id"
                ),
                |row| rows::message(row),
            ),
            View::Admin => (
                rows::select_messages!(prompts "WHERE conversation_id = ? ORDER BY id"),
                |row| prompts::message_with_prompt(row),
            ),
        };
        let conversation_id = conversation_id.to_owned();
        self.readers
            .read(move |db| all(db, sql, [&conversation_id], read))
            .await
    }

    async fn message(&self, id: i64) -> Result<Option<Message>, StoreError> {
        self.writer.settled().await;
        self.readers
            .read(move |db| {
                first(
                    db,
                    rows::select_messages!(prompts "WHERE id = ?"),
                    [id],
                    |row| prompts::message_with_prompt(row),
                )
            })
            .await
    }

    async fn safety_events(&self, conversation_id: &str) -> Result<Vec<SafetyEvent>, StoreError> {
        self.writer.settled().await;
        let conversation_id = conversation_id.to_owned();
        self.readers
            .read(move |db| {
                all(
                    db,
                    "SELECT id, conversation_id, message_id, level, concerns, action, \
                     notified_at, created_at FROM safety_events WHERE conversation_id = ? \
                     ORDER BY id",
                    [&conversation_id],
                    |row| rows::safety_event(row),
                )
            })
            .await
    }

    async fn stats(&self, query: &StatsQuery) -> Result<Stats, StoreError> {
        self.writer.settled().await;
        let query = query.clone();
        self.readers
            .read(move |db| {
                // One read transaction: every figure comes from the same snapshot.
                let tx = db.transaction().map_err(fault)?;
                let stats = stats_in(&tx, &query)?;
                tx.commit().map_err(fault)?;
                Ok(stats)
            })
            .await
    }
}

/// The statistics `query` asks for, read on `db` (in a read transaction).
fn stats_in(db: &Connection, query: &StatsQuery) -> Result<Stats, StoreError> {
    let stored = match stats::stored_range_query(Placeholders::Question, query) {
        Some(range) => one_of(db, &range, |row| stats::stored_range(row))?,
        None => None,
    };
    let plan = Plan::new(query, stored);
    let mut tally = Tally::new(query, plan.as_ref());
    let Some(plan) = plan else {
        return Ok(tally.finish(Vec::new(), Vec::new()));
    };
    // The turns' rows are added as they come: memory does not grow with them.
    let turns = stats::turns_query(Placeholders::Question, &plan);
    all_of(db, &turns, |row| tally.add_turns(row))?;
    let rules = stats::rules_query(Placeholders::Question, &plan, STATS);
    let repairs = stats::repairs_query(Placeholders::Question, &plan, STATS);
    let models = stats::models::models_query(Placeholders::Question, &plan, STATS);
    let mut stats = tally.finish(
        all_of(db, &rules, |row| stats::rule_count(row))?,
        all_of(db, &repairs, |row| stats::repair_count(row))?,
    );
    stats.models = all_of(db, &models, |row| stats::models::model_count(row))?;
    Ok(stats)
}
