//! The admin API (`/admin/v1/…`, admin keys only): conversations with filters and real
//! pagination, every attempt of a conversation with its payload, violations and repairs, the
//! safety events, unblocking, and replaying an attempt.

use super::bodies::{AdminConversationBody, StatusBody};
use crate::AppState;
use crate::error::ApiError;
use crate::extract::{Admin, ApiQuery};
use axum::Json;
use axum::extract::{Path, State};
use bridle_engine::store::{
    ConversationFilter, ConversationStatus, ConversationSummary, Page, PageRequest, StatsQuery,
    View,
};
use serde::Deserialize;
use serde_json::Value;

/// Query parameters of the conversation listing.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    user: Option<String>,
    contract: Option<String>,
    /// Created at or after (Unix ms).
    from: Option<i64>,
    /// Created before (Unix ms).
    to: Option<i64>,
    /// Text in any message.
    q: Option<String>,
    has_invalid: Option<bool>,
    blocked: Option<bool>,
    /// The conversation with a message written for this request id (`x-request-id`).
    request_id: Option<String>,
    #[serde(default)]
    offset: u64,
    #[serde(default = "default_limit")]
    limit: u64,
}

fn default_limit() -> u64 {
    50
}

pub async fn conversations(
    State(state): State<AppState>,
    _admin: Admin,
    ApiQuery(q): ApiQuery<ListQuery>,
) -> Result<Json<Page<ConversationSummary>>, ApiError> {
    let request_id = q
        .request_id
        .map(|id| id.trim().to_owned())
        .filter(|id| !id.is_empty());
    if let Some(id) = &request_id
        && !crate::request_id::is_sane_request_id(id)
    {
        return Err(ApiError::BadRequest(
            "request_id is not a request id the gateway gives (at most 128 letters, digits and -_.:+=@/)"
                .into(),
        ));
    }
    let filter = ConversationFilter {
        user_id: q.user,
        contract: q.contract,
        created_from: q.from,
        created_to: q.to,
        text: q.q.filter(|t| !t.is_empty()),
        has_invalid: q.has_invalid,
        blocked: q.blocked,
        request_id,
    };
    let page = state
        .engine
        .store()
        .list_conversations(
            &filter,
            PageRequest {
                offset: q.offset,
                limit: q.limit,
            },
        )
        .await?;
    Ok(Json(page))
}

pub async fn conversation(
    State(state): State<AppState>,
    _admin: Admin,
    Path(id): Path<String>,
) -> Result<Json<AdminConversationBody>, ApiError> {
    let store = state.engine.store();
    let conversation = store
        .conversation(&id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("conversation {id} does not exist")))?;
    let messages = store.messages(&id, View::Admin).await?;
    let safety_events = store.safety_events(&id).await?;
    Ok(Json(AdminConversationBody {
        conversation,
        messages,
        safety_events,
        trace_url_template: state.telemetry.trace_url_template.clone(),
    }))
}

pub async fn unblock(
    State(state): State<AppState>,
    _admin: Admin,
    Path(id): Path<String>,
) -> Result<Json<StatusBody>, ApiError> {
    if !state
        .engine
        .store()
        .set_status(&id, ConversationStatus::Active)
        .await?
    {
        return Err(ApiError::NotFound(format!(
            "conversation {id} does not exist"
        )));
    }
    Ok(Json(StatusBody {
        id,
        status: ConversationStatus::Active,
    }))
}

/// Sends attempt `id`'s stored request again to its provider and checks the answer against
/// the attempt's contract; nothing is stored (see `bridle_engine::replay`).
pub async fn replay(
    State(state): State<AppState>,
    _admin: Admin,
    Path(id): Path<i64>,
) -> Result<Json<Value>, ApiError> {
    let replay = state.engine.replay(id).await?;
    Ok(Json(
        serde_json::to_value(replay).map_err(|e| ApiError::Internal(e.to_string()))?,
    ))
}

/// Query parameters of the statistics.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StatsParams {
    /// Turns started at or after (Unix ms).
    from: Option<i64>,
    /// Turns started before (Unix ms).
    to: Option<i64>,
    contract: Option<String>,
    /// Bucket of the compliance series, in ms (default one hour).
    bucket_ms: Option<i64>,
}

pub async fn stats(
    State(state): State<AppState>,
    _admin: Admin,
    ApiQuery(p): ApiQuery<StatsParams>,
) -> Result<Json<Value>, ApiError> {
    let query = StatsQuery {
        from: p.from,
        to: p.to,
        contract: p.contract,
        bucket_ms: p.bucket_ms.unwrap_or(StatsQuery::default().bucket_ms),
    };
    let stats = state.engine.store().stats(&query).await?;
    Ok(Json(
        serde_json::to_value(stats).map_err(|e| ApiError::Internal(e.to_string()))?,
    ))
}
