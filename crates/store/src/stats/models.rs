//! [`ModelCount`]: the attempts of a statistics range per configured model — how many went to
//! each, how many it got valid, and how many reached it by escalation or by failover (the
//! `route` of each attempt, `docs/escalation.md`). One row per model, at most [`TOP_MODELS`].

use super::{Dialect, Plan, push_contract, push_turns, unsigned};
use crate::StoreError;
use crate::rows::StoreRow;
use crate::sql::{Placeholders, Query};
use serde::{Deserialize, Serialize};

/// How many models are reported (those with the most attempts).
pub const TOP_MODELS: i64 = 50;

/// The attempts that went to one configured model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelCount {
    /// The configured model's name (`[models.NAME]`; attempts stored before escalation
    /// existed hold the upstream model's name). Empty for attempts stored without one.
    pub model: String,
    /// Attempts that went to it.
    pub attempts: u64,
    /// Of those, validated.
    pub valid: u64,
    /// Attempts it got because the model before it escalated to it.
    pub escalations: u64,
    /// Attempts it got standing in after another model's provider error.
    pub failovers: u64,
}

/// Attempts per model over the plan's turns: columns `model`, `attempts`, `valid`,
/// `escalations`, `failovers`; most attempts first (ties by name, in code-point order).
pub(crate) fn models_query(placeholders: Placeholders, plan: &Plan, dialect: Dialect) -> Query {
    let mut sql = Query::new(placeholders, "");
    push_turns(&mut sql, plan, false);
    sql.push(
        " SELECT a.model AS model, CAST(COUNT(*) AS BIGINT) AS attempts, \
         CAST(SUM(a.valid) AS BIGINT) AS valid, \
         CAST(SUM(CASE WHEN a.route = 'escalated' THEN 1 ELSE 0 END) AS BIGINT) AS escalations, \
         CAST(SUM(CASE WHEN a.route = 'failover' THEN 1 ELSE 0 END) AS BIGINT) AS failovers \
         FROM (SELECT COALESCE(m.model, '') AS model, m.route AS route, \
         CASE WHEN m.is_validated THEN 1 ELSE 0 END AS valid \
         FROM messages m JOIN turns t ON t.turn_id = m.turn_id \
         WHERE m.role = 'assistant' AND NOT m.is_fallback",
    );
    push_contract(&mut sql, plan, "m.contract");
    sql.push(") a GROUP BY a.model ORDER BY attempts DESC, a.model")
        .push(dialect.binary_order)
        .push(" LIMIT ")
        .push_bind(TOP_MODELS);
    sql
}

/// A row of [`models_query`].
pub(crate) fn model_count<R: StoreRow>(row: &R) -> Result<ModelCount, StoreError> {
    Ok(ModelCount {
        model: row.text("model")?,
        attempts: unsigned(row, "attempts")?,
        valid: unsigned(row, "valid")?,
        escalations: unsigned(row, "escalations")?,
        failovers: unsigned(row, "failovers")?,
    })
}
