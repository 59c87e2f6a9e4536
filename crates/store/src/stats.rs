//! [`Reads::stats`](super::Reads::stats): the figures the admin console charts — turn outcomes
//! over time, attempts per turn, the rules broken most, repairs, tokens — aggregated in SQL that
//! both backends share; the few places where their SQL differs (reading JSON arrays, ordering
//! text by code point) are a [`Dialect`]. [`Stats`] says what a turn, its start and its outcome
//! are.
//!
//! # Memory
//!
//! Nothing is loaded per message or per turn. The database groups the turns and returns one row
//! per (bucket, attempt count, outcome) — at most [`MAX_BUCKETS`] × a handful × 4 — which streams
//! into a [`Tally`] of fixed size, the top [`TOP_RULES`] rules, and one row per repair kind (a
//! vocabulary fixed by Bridle and the contracts), and one row per model ([`models`], at most
//! [`models::TOP_MODELS`]). Every value is a bound parameter.
//!
//! The figures come from one read snapshot; the backends run the queries in one transaction.

use super::StoreError;
use super::rows::StoreRow;
use super::sql::{Placeholders, Query};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub(super) mod models;
pub use models::ModelCount;

/// The smallest bucket of the series: one minute.
pub const MIN_BUCKET_MS: i64 = 60_000;

/// The most buckets a series has; a smaller requested bucket is widened (to a multiple of itself).
pub const MAX_BUCKETS: i64 = 1_000;

/// How many of the most violated rules are reported.
pub const TOP_RULES: i64 = 20;

/// Times are clamped to `0..=MAX_TIME` (about 146 million years after 1970: no message is stored
/// outside it), which keeps the bucket arithmetic far from overflow.
const MAX_TIME: i64 = 1 << 62;

/// What [`Reads::stats`](super::Reads::stats) aggregates. Times before 1970 count as 1970 and
/// times after 2^62 ms as 2^62 ms: no message is stored outside that span.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct StatsQuery {
    /// Turns that started at or after this time (Unix ms, on `messages.created_at`); from the
    /// first stored assistant message when `None`.
    pub from: Option<i64>,
    /// Turns that started before this time (Unix ms, exclusive); up to the last stored assistant
    /// message when `None`.
    pub to: Option<i64>,
    /// Only this contract's messages.
    pub contract: Option<String>,
    /// The series' bucket size in ms: at least [`MIN_BUCKET_MS`], and widened to a multiple of
    /// itself when the range would need more than [`MAX_BUCKETS`]. [`Compliance::bucket_ms`] says
    /// which size was used.
    pub bucket_ms: i64,
}

impl Default for StatsQuery {
    /// Everything stored, by the hour.
    fn default() -> Self {
        Self {
            from: None,
            to: None,
            contract: None,
            bucket_ms: 3_600_000,
        }
    }
}

/// The admin console's statistics over the turns a [`StatsQuery`] selects.
///
/// A *turn* is the assistant messages (its attempts and, when they ran out, the fallback) that
/// share one `turn_id`; the user's message is not part of it. A turn *starts* at its first
/// assistant message's `created_at`, and it is counted — in the range and in a bucket of the
/// series — by that time alone: a turn that started in the range brings all of its messages, also
/// those stored after `to`, and one that started before `from` brings none. So a turn is never
/// split between ranges or buckets, and every figure describes the same turns. With a contract
/// filter, only that contract's messages are considered.
///
/// Each turn has exactly one outcome, the first that applies: *first try valid* (its attempt 1 was
/// validated), *valid after retry* (another attempt was validated), *fallback* (it ended with
/// Bridle's fallback) or *failed* (none of these: a provider error ended it, or the attempts ran
/// out without a fallback). A turn still under way counts as failed until it ends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    /// Turn outcomes over time.
    pub compliance: Compliance,
    /// How many turns took how many attempts, fewest attempts first. A turn's attempt count is
    /// its assistant messages that are not the fallback (0 for a turn stored with a fallback
    /// only).
    pub attempts_per_turn: Vec<AttemptsCount>,
    /// The [`TOP_RULES`] rules broken by the most attempts, most first (ties by rule name, in
    /// code-point order). An attempt counts once per rule, however many of its violations name
    /// it.
    pub top_violated_rules: Vec<RuleCount>,
    /// Repairs applied, per kind: the sum of the repairs' `count` over all attempts; most first
    /// (ties by kind, in code-point order).
    pub repairs_by_kind: Vec<RepairCount>,
    /// Tokens spent.
    pub tokens: TokenUsage,
    /// Turns (as [`Compliance::totals`]).
    pub turns: u64,
    /// Attempts: the turns' assistant messages that are not fallbacks.
    pub attempts: u64,
    /// Attempts that were not validated, provider errors included.
    pub invalid_attempts: u64,
    /// Attempts whose provider call failed (`error` set; fallbacks, which also carry an `error`
    /// saying why they were needed, are not attempts).
    pub provider_errors: u64,
    /// Streamed attempts that did not run to their end.
    #[serde(default)]
    pub streaming: StreamingStats,
    /// Attempts per configured model, with those that reached it by escalation or failover;
    /// most attempts first, at most [`models::TOP_MODELS`].
    #[serde(default)]
    pub models: Vec<ModelCount>,
}

/// Streamed attempts stopped before their end, and what early abort saved.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamingStats {
    /// Attempts stopped early because what had arrived already broke the contract (counted in
    /// `invalid_attempts` too).
    pub aborted_attempts: u64,
    /// Attempts stopped because the client went away (not counted as invalid).
    pub cancelled_attempts: u64,
    /// Output tokens the aborted attempts had produced (estimated from their text).
    pub aborted_tokens_out: u64,
    /// Output tokens not generated thanks to early abort, estimated: each aborted attempt
    /// would have been as long as the range's average valid final reply.
    pub tokens_saved: u64,
}

/// Turn outcomes over time, and in all.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Compliance {
    /// The bucket size used (ms): the requested one, clamped.
    pub bucket_ms: i64,
    /// Every bucket of the range, oldest first, empty ones included. Buckets are aligned to
    /// multiples of `bucket_ms` since 1970 (hours, days… in UTC), the first holding the range's
    /// start and the last its end. Empty when the range is: no bounds given and nothing stored.
    pub series: Vec<ComplianceBucket>,
    /// All turns of the range.
    pub totals: TurnOutcomes,
    /// (first try valid + valid after retry) / turns; 0 when there are no turns.
    pub compliance_rate: f64,
}

/// The turns that started in one bucket of the series.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ComplianceBucket {
    /// Unix ms; the bucket ends where the next begins.
    pub start: i64,
    /// Its turns by outcome.
    #[serde(flatten)]
    pub outcomes: TurnOutcomes,
}

/// Turns by outcome; the four outcomes add up to `turns`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnOutcomes {
    /// Turns.
    pub turns: u64,
    /// Attempt 1 was validated.
    pub first_try_valid: u64,
    /// A later attempt was validated.
    pub valid_after_retry: u64,
    /// Ended with Bridle's fallback.
    pub fallback: u64,
    /// None of the above (a provider error ended it, or it is still under way).
    pub failed: u64,
}

impl TurnOutcomes {
    /// Counts `turns` more turns with `outcome`.
    fn add(&mut self, outcome: Outcome, turns: u64) {
        let slot = match outcome {
            Outcome::FirstTryValid => &mut self.first_try_valid,
            Outcome::ValidAfterRetry => &mut self.valid_after_retry,
            Outcome::Fallback => &mut self.fallback,
            Outcome::Failed => &mut self.failed,
        };
        add(slot, turns);
        add(&mut self.turns, turns);
    }

    /// The share of turns that ended valid; 0 without turns.
    fn compliance_rate(&self) -> f64 {
        if self.turns == 0 {
            return 0.0;
        }
        // Precision is lost only beyond 2^53 turns.
        (self.first_try_valid.saturating_add(self.valid_after_retry)) as f64 / self.turns as f64
    }
}

/// How many turns took a number of attempts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttemptsCount {
    /// Attempts in the turn.
    pub attempts: u32,
    /// Turns that took that many.
    pub turns: u64,
}

/// How many attempts broke a rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuleCount {
    /// Rule name ([`Violation::rule`](bridle_core::Violation::rule)).
    pub rule: bridle_core::Rule,
    /// Attempts with at least one violation of it.
    pub count: u64,
}

/// How many repairs of a kind were made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RepairCount {
    /// Repair kind ([`Repair::kind`](bridle_core::Repair::kind)).
    pub kind: bridle_core::RepairKind,
    /// Sum of the repairs' `count`.
    pub count: u64,
}

/// Tokens spent by the turns' attempts, as the providers reported them (an attempt without a
/// reported figure counts 0).
///
/// A turn's *final valid attempt* is its validated attempt stored last (Bridle stops at the first
/// valid one, so it is that one). Retries are every other assistant message of the turn: the
/// invalid attempts and provider errors before the valid one, and all attempts of a turn that
/// never validated (a fallback is computed without a provider call and carries no tokens). So
/// `total - retries` is what the turns would have cost had every valid answer come at once.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenUsage {
    /// Prompt tokens of all attempts.
    pub total_in: u64,
    /// Completion tokens of all attempts.
    pub total_out: u64,
    /// Prompt tokens of the attempts that are not their turn's final valid attempt.
    pub retries_in: u64,
    /// Completion tokens of the attempts that are not their turn's final valid attempt.
    pub retries_out: u64,
}

/// A turn's outcome, as the turns query codes it (`outcome` column).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    FirstTryValid,
    ValidAfterRetry,
    Fallback,
    Failed,
}

impl Outcome {
    /// The outcome [`TURN_COLUMNS`] codes as `code`.
    fn from_code(code: i64) -> Option<Self> {
        match code {
            0 => Some(Self::FirstTryValid),
            1 => Some(Self::ValidAfterRetry),
            2 => Some(Self::Fallback),
            3 => Some(Self::Failed),
            _ => None,
        }
    }
}

/// How a backend reads the JSON arrays `violations` and `repairs` of attempt `m`, and orders text
/// by code point. Every array-reading fragment tolerates a column that is not an array of objects
/// of the expected shape: such elements, or such rows, contribute nothing (the listing and
/// [`Reads::messages`](super::Reads::messages) report them as corrupt; statistics stay available).
#[derive(Debug, Clone, Copy)]
pub(super) struct Dialect {
    /// A `FROM` item `e`: one row per element of `m.violations` (none when it is not an array).
    pub violations: &'static str,
    /// The element's `rule` when it is a string, else NULL.
    pub rule: &'static str,
    /// A `FROM` item `e`: one row per element of `m.repairs` (none when it is not an array).
    pub repairs: &'static str,
    /// The element's `kind` when it is a string, else NULL.
    pub repair_kind: &'static str,
    /// The element's `count` when it is an integer (a negative one is dropped later), else NULL.
    pub repair_count: &'static str,
    /// Appended to a text expression in `ORDER BY` to order by code point (as Rust does).
    pub binary_order: &'static str,
}

/// The range, the buckets and the contract of one statistics request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Plan {
    /// Turns that started at or after this (Unix ms)…
    from: i64,
    /// …and before this are counted; `from < to`.
    to: i64,
    /// The bucket size (ms), a multiple of the requested one.
    bucket_ms: i64,
    /// The first bucket's start: a multiple of `bucket_ms`, at most `from`.
    origin: i64,
    /// Buckets from `origin` to past `to`: `1..=MAX_BUCKETS`.
    buckets: i64,
    /// Only this contract's messages.
    contract: Option<String>,
}

impl Plan {
    /// The plan for `query`, where `stored` is the `created_at` of the first and last stored
    /// assistant messages (of the query's contract) when there are any; it closes open ends of
    /// the range. `None` when the range is empty (or open with nothing stored).
    pub fn new(query: &StatsQuery, stored: Option<(i64, i64)>) -> Option<Self> {
        let (first, last) = stored.unzip();
        let from = query.from.or(first)?.clamp(0, MAX_TIME);
        let to = query
            .to
            .or_else(|| last.map(|last| last.saturating_add(1)))?
            .clamp(0, MAX_TIME);
        if from >= to {
            return None;
        }
        let step = requested_bucket_ms(query.bucket_ms);
        // Buckets of `step × k` with the smallest k that covers the range in MAX_BUCKETS; the
        // alignment may add one bucket, hence the loop (it ends: once `bucket_ms` exceeds the
        // range, two buckets cover it). Every value stays below 2 × MAX_TIME < i64::MAX.
        let mut bucket_ms = step * div_ceil(div_ceil(to - from, step), MAX_BUCKETS);
        loop {
            let origin = from / bucket_ms * bucket_ms;
            let buckets = div_ceil(to - origin, bucket_ms);
            if buckets <= MAX_BUCKETS {
                return Some(Self {
                    from,
                    to,
                    bucket_ms,
                    origin,
                    buckets,
                    contract: query.contract.clone(),
                });
            }
            bucket_ms += step;
        }
    }
}

/// The requested bucket size, clamped to `MIN_BUCKET_MS..=MAX_TIME`.
fn requested_bucket_ms(bucket_ms: i64) -> i64 {
    bucket_ms.clamp(MIN_BUCKET_MS, MAX_TIME)
}

/// `n / d` rounded up, for `n >= 0` and `d > 0`.
fn div_ceil(n: i64, d: i64) -> i64 {
    n / d + i64::from(n % d != 0)
}

/// Adds without overflowing (a sum that large is already meaningless).
fn add(total: &mut u64, n: u64) {
    *total = total.saturating_add(n);
}

/// The query for the `created_at` of the first and last assistant messages of the query's
/// contract (columns `first` and `last`, NULL when there are none), which close an open range;
/// `None` when the query gives both ends.
pub(super) fn stored_range_query(placeholders: Placeholders, query: &StatsQuery) -> Option<Query> {
    if query.from.is_some() && query.to.is_some() {
        return None;
    }
    // Two single-aggregate subqueries, so that each is one index probe.
    let mut sql = Query::new(placeholders, "SELECT ");
    push_stored_time(&mut sql, "MIN", query);
    sql.push(" AS first, ");
    push_stored_time(&mut sql, "MAX", query);
    sql.push(" AS last");
    Some(sql)
}

/// Pushes `(SELECT <aggregate>(created_at) …)` over the assistant messages of the query's contract.
fn push_stored_time(sql: &mut Query, aggregate: &str, query: &StatsQuery) {
    sql.push(format_args!(
        "(SELECT {aggregate}(created_at) FROM messages WHERE role = 'assistant'"
    ));
    if let Some(contract) = &query.contract {
        sql.push(" AND contract = ").push_bind(contract.clone());
    }
    sql.push(")");
}

/// Reads the row of [`stored_range_query`].
pub(super) fn stored_range<R: StoreRow>(row: &R) -> Result<Option<(i64, i64)>, StoreError> {
    Ok(row.opt_int("first")?.zip(row.opt_int("last")?))
}

/// The per-turn aggregates of [`push_turns`] that the turns query needs. Outcome codes are those
/// of [`Outcome::from_code`]. A valid attempt is validated and not a fallback (fallbacks are
/// stored unvalidated; `NOT m.is_fallback` guards against a row saying otherwise).
const TURN_COLUMNS: &str = ", \
     SUM(CASE WHEN m.is_fallback THEN 0 ELSE 1 END) AS attempts, \
     SUM(CASE WHEN m.is_fallback OR m.is_validated OR m.interrupted = 'cancelled' \
     THEN 0 ELSE 1 END) AS invalid, \
     SUM(CASE WHEN m.interrupted = 'aborted' THEN 1 ELSE 0 END) AS aborted, \
     SUM(CASE WHEN m.interrupted = 'cancelled' THEN 1 ELSE 0 END) AS cancelled, \
     SUM(CASE WHEN m.interrupted = 'aborted' THEN COALESCE(m.tokens_out, 0) ELSE 0 END) \
     AS aborted_out, \
     SUM(CASE WHEN m.error IS NOT NULL AND NOT m.is_fallback THEN 1 ELSE 0 END) \
     AS provider_errors, \
     SUM(COALESCE(m.tokens_in, 0)) AS tokens_in, \
     SUM(COALESCE(m.tokens_out, 0)) AS tokens_out, \
     MAX(CASE WHEN m.is_validated AND NOT m.is_fallback THEN m.id END) AS final_id, \
     CASE \
     WHEN MAX(CASE WHEN m.is_validated AND NOT m.is_fallback AND m.attempt = 1 \
     THEN 1 ELSE 0 END) = 1 THEN 0 \
     WHEN MAX(CASE WHEN m.is_validated AND NOT m.is_fallback THEN 1 ELSE 0 END) = 1 THEN 1 \
     WHEN MAX(CASE WHEN m.is_fallback THEN 1 ELSE 0 END) = 1 THEN 2 \
     ELSE 3 END AS outcome";

/// Pushes `WITH touched AS (…), turns AS (…)`: `turns` has one row per turn that started in the
/// plan's range, with `turn_id` and, `with_columns`, the aggregates of [`TURN_COLUMNS`] and
/// `bucket`, the index of the bucket the turn started in. `touched` finds the candidate turns
/// through the assistant messages stored in the range (an index range scan); each turn's messages
/// are then found by `turn_id` (an index lookup).
fn push_turns(sql: &mut Query, plan: &Plan, with_columns: bool) {
    sql.push(
        "WITH touched AS (SELECT DISTINCT turn_id FROM messages \
         WHERE role = 'assistant' AND created_at >= ",
    )
    .push_bind(plan.from)
    .push(" AND created_at < ")
    .push_bind(plan.to);
    push_contract(sql, plan, "contract");
    sql.push("), turns AS (SELECT m.turn_id");
    if with_columns {
        sql.push(TURN_COLUMNS)
            .push(", (MIN(m.created_at) - ")
            .push_bind(plan.origin)
            .push(") / ")
            .push_bind(plan.bucket_ms)
            .push(" AS bucket");
    }
    sql.push(
        " FROM messages m WHERE m.turn_id IN (SELECT turn_id FROM touched) \
         AND m.role = 'assistant'",
    );
    push_contract(sql, plan, "m.contract");
    // A touched turn has a message before `to`, so it started before `to`.
    sql.push(" GROUP BY m.turn_id HAVING MIN(m.created_at) >= ")
        .push_bind(plan.from)
        .push(")");
}

/// Pushes ` AND <column> = <contract>` when the plan has a contract.
fn push_contract(sql: &mut Query, plan: &Plan, column: &str) {
    if let Some(contract) = &plan.contract {
        sql.push(format_args!(" AND {column} = "))
            .push_bind(contract.clone());
    }
}

/// The turns grouped by (bucket, attempts, outcome), with their counts and token sums: the rows
/// [`Tally::add_turns`] reads. Every column is a BIGINT.
pub(super) fn turns_query(placeholders: Placeholders, plan: &Plan) -> Query {
    let mut sql = Query::new(placeholders, "");
    push_turns(&mut sql, plan, true);
    // The final valid attempt's tokens, found by its id, are what is not retries.
    sql.push(
        " SELECT CAST(t.bucket AS BIGINT) AS bucket, \
         CAST(t.attempts AS BIGINT) AS attempts, \
         CAST(t.outcome AS BIGINT) AS outcome, \
         CAST(COUNT(*) AS BIGINT) AS turns, \
         CAST(SUM(t.invalid) AS BIGINT) AS invalid, \
         CAST(SUM(t.provider_errors) AS BIGINT) AS provider_errors, \
         CAST(SUM(t.aborted) AS BIGINT) AS aborted, \
         CAST(SUM(t.cancelled) AS BIGINT) AS cancelled, \
         CAST(SUM(t.aborted_out) AS BIGINT) AS aborted_out, \
         CAST(SUM(t.tokens_in) AS BIGINT) AS tokens_in, \
         CAST(SUM(t.tokens_out) AS BIGINT) AS tokens_out, \
         CAST(SUM(COALESCE(f.tokens_in, 0)) AS BIGINT) AS final_in, \
         CAST(SUM(COALESCE(f.tokens_out, 0)) AS BIGINT) AS final_out \
         FROM turns t LEFT JOIN messages f ON f.id = t.final_id \
         GROUP BY t.bucket, t.attempts, t.outcome",
    );
    sql
}

/// Pushes the attempts (not fallbacks) of the plan's turns, each joined with the elements `e` of
/// one of its JSON arrays (`elements`, a [`Dialect`] `FROM` item): ` FROM … WHERE …`.
fn push_attempt_elements(sql: &mut Query, plan: &Plan, elements: &str) {
    sql.push(" FROM messages m JOIN turns t ON t.turn_id = m.turn_id, ")
        .push(elements)
        .push(" WHERE m.role = 'assistant' AND NOT m.is_fallback");
    push_contract(sql, plan, "m.contract");
}

/// The [`TOP_RULES`] rules broken by the most attempts: columns `rule` and `attempts`.
pub(super) fn rules_query(placeholders: Placeholders, plan: &Plan, dialect: Dialect) -> Query {
    let mut sql = Query::new(placeholders, "");
    push_turns(&mut sql, plan, false);
    sql.push(" SELECT v.rule AS rule, CAST(COUNT(DISTINCT v.id) AS BIGINT) AS attempts FROM (")
        .push("SELECT m.id AS id, ")
        .push(dialect.rule)
        .push(" AS rule");
    push_attempt_elements(&mut sql, plan, dialect.violations);
    sql.push(
        ") v WHERE v.rule IS NOT NULL GROUP BY v.rule \
         ORDER BY attempts DESC, v.rule",
    )
    .push(dialect.binary_order)
    .push(" LIMIT ")
    .push_bind(TOP_RULES);
    sql
}

/// Repairs per kind: columns `kind` and `total`.
pub(super) fn repairs_query(placeholders: Placeholders, plan: &Plan, dialect: Dialect) -> Query {
    let mut sql = Query::new(placeholders, "");
    push_turns(&mut sql, plan, false);
    sql.push(" SELECT r.kind AS kind, CAST(SUM(r.n) AS BIGINT) AS total FROM (SELECT ")
        .push(dialect.repair_kind)
        .push(" AS kind, ")
        .push(dialect.repair_count)
        .push(" AS n");
    push_attempt_elements(&mut sql, plan, dialect.repairs);
    sql.push(
        ") r WHERE r.kind IS NOT NULL AND r.n >= 0 GROUP BY r.kind \
         ORDER BY total DESC, r.kind",
    )
    .push(dialect.binary_order);
    sql
}

/// A row of [`rules_query`].
pub(super) fn rule_count<R: StoreRow>(row: &R) -> Result<RuleCount, StoreError> {
    Ok(RuleCount {
        rule: bridle_core::Rule::from_name(&row.text("rule")?),
        count: unsigned(row, "attempts")?,
    })
}

/// A row of [`repairs_query`].
pub(super) fn repair_count<R: StoreRow>(row: &R) -> Result<RepairCount, StoreError> {
    Ok(RepairCount {
        kind: bridle_core::RepairKind::from_name(&row.text("kind")?),
        count: unsigned(row, "total")?,
    })
}

/// A count or sum column, which cannot be negative (token columns are checked `>= 0`).
fn unsigned<R: StoreRow>(row: &R, column: &'static str) -> Result<u64, StoreError> {
    let n = row.int(column)?;
    u64::try_from(n).map_err(|_| invariant(format_args!("{column} is negative ({n})")))
}

/// The error for a statistics row that cannot be what the query computes.
fn invariant(detail: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(format!("statistics: {detail}"))
}

/// The statistics being summed from the rows of [`turns_query`]; its size does not depend on the
/// number of rows.
#[derive(Debug)]
pub(super) struct Tally {
    bucket_ms: i64,
    series: Vec<ComplianceBucket>,
    totals: TurnOutcomes,
    attempts_per_turn: BTreeMap<u32, u64>,
    attempts: u64,
    invalid_attempts: u64,
    provider_errors: u64,
    tokens: TokenUsage,
    streaming: StreamingStats,
    /// Output tokens of the valid final attempts.
    final_out: u64,
}

impl Tally {
    /// Zero figures over the plan's buckets (none without a plan).
    pub fn new(query: &StatsQuery, plan: Option<&Plan>) -> Self {
        let (bucket_ms, series) = match plan {
            Some(plan) => (
                plan.bucket_ms,
                (0..plan.buckets)
                    .map(|i| ComplianceBucket {
                        start: plan.origin + i * plan.bucket_ms,
                        outcomes: TurnOutcomes::default(),
                    })
                    .collect(),
            ),
            None => (requested_bucket_ms(query.bucket_ms), Vec::new()),
        };
        Self {
            bucket_ms,
            series,
            totals: TurnOutcomes::default(),
            attempts_per_turn: BTreeMap::new(),
            attempts: 0,
            invalid_attempts: 0,
            provider_errors: 0,
            tokens: TokenUsage::default(),
            streaming: StreamingStats::default(),
            final_out: 0,
        }
    }

    /// Adds one row of [`turns_query`].
    pub fn add_turns<R: StoreRow>(&mut self, row: &R) -> Result<(), StoreError> {
        let bucket = row.int("bucket")?;
        let outcome = row.int("outcome")?;
        let outcome = Outcome::from_code(outcome)
            .ok_or_else(|| invariant(format_args!("outcome {outcome}")))?;
        let attempts = row.int("attempts")?;
        let attempts = u32::try_from(attempts)
            .map_err(|_| invariant(format_args!("{attempts} attempts in a turn")))?;
        let turns = unsigned(row, "turns")?;
        // The query puts every turn in one of the plan's buckets.
        let slot = usize::try_from(bucket)
            .ok()
            .and_then(|i| self.series.get_mut(i))
            .ok_or_else(|| invariant(format_args!("bucket {bucket} outside the range")))?;
        slot.outcomes.add(outcome, turns);
        self.totals.add(outcome, turns);
        add(self.attempts_per_turn.entry(attempts).or_default(), turns);
        add(
            &mut self.attempts,
            u64::from(attempts).saturating_mul(turns),
        );
        add(&mut self.invalid_attempts, unsigned(row, "invalid")?);
        add(&mut self.provider_errors, unsigned(row, "provider_errors")?);
        add(
            &mut self.streaming.aborted_attempts,
            unsigned(row, "aborted")?,
        );
        add(
            &mut self.streaming.cancelled_attempts,
            unsigned(row, "cancelled")?,
        );
        add(
            &mut self.streaming.aborted_tokens_out,
            unsigned(row, "aborted_out")?,
        );
        add(&mut self.final_out, unsigned(row, "final_out")?);
        let (tokens_in, tokens_out) = (unsigned(row, "tokens_in")?, unsigned(row, "tokens_out")?);
        add(&mut self.tokens.total_in, tokens_in);
        add(&mut self.tokens.total_out, tokens_out);
        // The final attempt is one of the turn's, so its tokens are part of the turn's.
        add(
            &mut self.tokens.retries_in,
            tokens_in.saturating_sub(unsigned(row, "final_in")?),
        );
        add(
            &mut self.tokens.retries_out,
            tokens_out.saturating_sub(unsigned(row, "final_out")?),
        );
        Ok(())
    }

    /// The statistics, with the rules and repairs read separately.
    pub fn finish(
        self,
        top_violated_rules: Vec<RuleCount>,
        repairs_by_kind: Vec<RepairCount>,
    ) -> Stats {
        let mut streaming = self.streaming;
        let valid = self
            .totals
            .first_try_valid
            .saturating_add(self.totals.valid_after_retry);
        if let Some(mean) = self.final_out.checked_div(valid) {
            streaming.tokens_saved = streaming
                .aborted_attempts
                .saturating_mul(mean)
                .saturating_sub(streaming.aborted_tokens_out);
        }
        Stats {
            compliance: Compliance {
                bucket_ms: self.bucket_ms,
                series: self.series,
                totals: self.totals,
                compliance_rate: self.totals.compliance_rate(),
            },
            attempts_per_turn: self
                .attempts_per_turn
                .into_iter()
                .map(|(attempts, turns)| AttemptsCount { attempts, turns })
                .collect(),
            top_violated_rules,
            repairs_by_kind,
            tokens: self.tokens,
            turns: self.totals.turns,
            attempts: self.attempts,
            invalid_attempts: self.invalid_attempts,
            provider_errors: self.provider_errors,
            streaming,
            models: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: i64 = 3_600_000;

    fn query(from: Option<i64>, to: Option<i64>, bucket_ms: i64) -> StatsQuery {
        StatsQuery {
            from,
            to,
            contract: None,
            bucket_ms,
        }
    }

    fn plan(from: Option<i64>, to: Option<i64>, bucket_ms: i64) -> Option<Plan> {
        Plan::new(
            &query(from, to, bucket_ms),
            Some((10 * HOUR + 5, 12 * HOUR)),
        )
    }

    /// (bucket_ms, origin, buckets) of a plan.
    fn shape(plan: &Plan) -> (i64, i64, i64) {
        (plan.bucket_ms, plan.origin, plan.buckets)
    }

    #[test]
    fn buckets_are_aligned_and_cover_the_range() {
        let plan = plan(Some(HOUR + 1), Some(3 * HOUR), HOUR).unwrap();
        assert_eq!((plan.from, plan.to), (HOUR + 1, 3 * HOUR));
        assert_eq!(shape(&plan), (HOUR, HOUR, 2));
        let plan = self::plan(Some(HOUR + 1), Some(3 * HOUR + 1), HOUR).unwrap();
        assert_eq!(shape(&plan), (HOUR, HOUR, 3));
        let plan = self::plan(Some(0), Some(1), HOUR).unwrap();
        assert_eq!(shape(&plan), (HOUR, 0, 1));
    }

    #[test]
    fn open_ends_are_closed_by_the_stored_messages() {
        let plan = plan(None, None, HOUR).unwrap();
        assert_eq!((plan.from, plan.to), (10 * HOUR + 5, 12 * HOUR + 1));
        assert_eq!(shape(&plan), (HOUR, 10 * HOUR, 3));
        let plan = self::plan(Some(11 * HOUR), None, HOUR).unwrap();
        assert_eq!((plan.from, plan.to), (11 * HOUR, 12 * HOUR + 1));
        let plan = self::plan(None, Some(11 * HOUR), HOUR).unwrap();
        assert_eq!((plan.from, plan.to), (10 * HOUR + 5, 11 * HOUR));
        // Nothing stored: an open range is empty; a closed one is not.
        assert_eq!(Plan::new(&query(None, Some(HOUR), HOUR), None), None);
        assert_eq!(Plan::new(&query(Some(0), None, HOUR), None), None);
        assert!(Plan::new(&query(Some(0), Some(HOUR), HOUR), None).is_some());
    }

    #[test]
    fn empty_and_inverted_ranges_have_no_plan() {
        assert_eq!(plan(Some(HOUR), Some(HOUR), HOUR), None);
        assert_eq!(plan(Some(2 * HOUR), Some(HOUR), HOUR), None);
        // Everything stored is before `from`, or after `to`.
        assert_eq!(plan(Some(13 * HOUR), None, HOUR), None);
        assert_eq!(plan(None, Some(10 * HOUR), HOUR), None);
        assert_eq!(plan(Some(-5 * HOUR), Some(-HOUR), HOUR), None);
    }

    #[test]
    fn small_buckets_are_clamped_to_a_minute() {
        for asked in [i64::MIN, -1, 0, 1, 59_999] {
            let plan = plan(Some(0), Some(HOUR), asked).unwrap();
            assert_eq!(shape(&plan), (MIN_BUCKET_MS, 0, 60), "{asked}");
        }
    }

    #[test]
    fn long_ranges_widen_buckets_to_a_multiple() {
        // 2000 hours by the hour: two-hour buckets.
        let plan = plan(Some(0), Some(2000 * HOUR), HOUR).unwrap();
        assert_eq!(shape(&plan), (2 * HOUR, 0, 1000));
        // 1000 hours from half past: aligned, hours would need 1001 buckets.
        let plan = self::plan(Some(HOUR / 2), Some(HOUR / 2 + 1000 * HOUR), HOUR).unwrap();
        assert_eq!(shape(&plan), (2 * HOUR, 0, 501));
        // The widest range, in the widest and the narrowest buckets.
        for asked in [i64::MIN, MIN_BUCKET_MS, HOUR, i64::MAX] {
            let plan = self::plan(Some(i64::MIN), Some(i64::MAX), asked).unwrap();
            assert_eq!((plan.from, plan.to), (0, MAX_TIME));
            assert!((1..=MAX_BUCKETS).contains(&plan.buckets), "{asked}");
            assert_eq!(plan.bucket_ms % requested_bucket_ms(asked), 0);
            assert!(plan.origin + plan.buckets * plan.bucket_ms >= plan.to);
        }
    }

    #[test]
    fn bucket_counts_fit_near_the_limit() {
        for span in (998 * HOUR..1003 * HOUR).step_by(usize::try_from(HOUR / 7).unwrap()) {
            for start in [0, 1, HOUR - 1, HOUR / 2] {
                let plan = plan(Some(start), Some(start + span), HOUR).unwrap();
                assert!(plan.buckets <= MAX_BUCKETS, "{start} {span}");
                assert!(plan.origin <= plan.from);
                assert!(plan.origin + plan.buckets * plan.bucket_ms >= plan.to);
                assert!(plan.origin + (plan.buckets - 1) * plan.bucket_ms < plan.to);
            }
        }
    }

    const DIALECT: Dialect = Dialect {
        violations: "elements(m.violations) AS e",
        rule: "e.rule",
        repairs: "elements(m.repairs) AS e",
        repair_kind: "e.kind",
        repair_count: "e.count",
        binary_order: " COLLATE binary",
    };

    #[test]
    fn every_value_is_a_bound_parameter() {
        let plan = Plan::new(
            &StatsQuery {
                from: Some(1_234_567),
                to: Some(7_654_321),
                contract: Some("x'; DROP TABLE messages; --".into()),
                bucket_ms: HOUR,
            },
            None,
        )
        .unwrap();
        let queries = [
            turns_query(Placeholders::Numbered, &plan),
            rules_query(Placeholders::Numbered, &plan, DIALECT),
            repairs_query(Placeholders::Numbered, &plan, DIALECT),
        ];
        for query in &queries {
            let sql = query.sql();
            assert!(
                !sql.contains("DROP") && !sql.contains("1234567") && !sql.contains("7654321"),
                "{sql}"
            );
            assert!(sql.contains("created_at >= $1 AND created_at < $2 AND contract = $3"));
            assert!(sql.contains("AND m.contract = $"), "{sql}");
        }
        assert!(queries[0].sql().contains("- $4) / $5 AS bucket"));
        assert!(
            queries[1]
                .sql()
                .ends_with("ORDER BY attempts DESC, v.rule COLLATE binary LIMIT $7")
        );
        assert!(
            queries[2]
                .sql()
                .ends_with("ORDER BY total DESC, r.kind COLLATE binary")
        );
        let range = stored_range_query(
            Placeholders::Question,
            &StatsQuery {
                contract: Some("tutor".into()),
                ..StatsQuery::default()
            },
        )
        .unwrap();
        assert_eq!(
            range.sql(),
            "SELECT (SELECT MIN(created_at) FROM messages WHERE role = 'assistant' \
             AND contract = ?) AS first, (SELECT MAX(created_at) FROM messages \
             WHERE role = 'assistant' AND contract = ?) AS last"
        );
    }

    #[test]
    fn a_closed_range_needs_no_stored_range() {
        assert!(
            stored_range_query(Placeholders::Question, &query(Some(0), Some(1), HOUR)).is_none()
        );
        assert!(stored_range_query(Placeholders::Question, &query(Some(0), None, HOUR)).is_some());
        assert!(stored_range_query(Placeholders::Question, &query(None, Some(1), HOUR)).is_some());
    }

    #[test]
    fn rates_and_outcomes() {
        let mut outcomes = TurnOutcomes::default();
        assert_eq!(outcomes.compliance_rate(), 0.0);
        outcomes.add(Outcome::FirstTryValid, 2);
        outcomes.add(Outcome::ValidAfterRetry, 1);
        outcomes.add(Outcome::Fallback, 1);
        outcomes.add(Outcome::Failed, 4);
        assert_eq!(
            outcomes,
            TurnOutcomes {
                turns: 8,
                first_try_valid: 2,
                valid_after_retry: 1,
                fallback: 1,
                failed: 4
            }
        );
        assert_eq!(outcomes.compliance_rate(), 3.0 / 8.0);
        for code in 0..4 {
            assert!(Outcome::from_code(code).is_some());
        }
        assert_eq!(Outcome::from_code(4), None);
    }

    #[test]
    fn serialises_as_the_console_reads_it() {
        let stats = Tally::new(&query(None, None, 0), None).finish(Vec::new(), Vec::new());
        let json = serde_json::to_value(&stats).unwrap();
        assert_eq!(json["compliance"]["bucket_ms"], MIN_BUCKET_MS);
        assert_eq!(json["compliance"]["compliance_rate"], 0.0);
        let bucket = ComplianceBucket {
            start: HOUR,
            outcomes: TurnOutcomes {
                turns: 3,
                first_try_valid: 1,
                valid_after_retry: 1,
                fallback: 1,
                failed: 0,
            },
        };
        let json = serde_json::to_value(bucket).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"start": HOUR, "turns": 3, "first_try_valid": 1,
                "valid_after_retry": 1, "fallback": 1, "failed": 0})
        );
        assert_eq!(
            serde_json::from_value::<ComplianceBucket>(json).unwrap(),
            bucket
        );
        let back: Stats = serde_json::from_value(serde_json::to_value(&stats).unwrap()).unwrap();
        assert_eq!(back, stats);
        let query: StatsQuery = serde_json::from_str(r#"{"contract": "tutor"}"#).unwrap();
        assert_eq!(query.bucket_ms, HOUR);
    }
}
