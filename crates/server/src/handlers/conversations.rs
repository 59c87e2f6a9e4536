//! The native conversation API: start, list own, send a message, read the user view.

use super::sse;
use crate::AppState;
use crate::auth::{Caller, Role};
use crate::error::ApiError;
use crate::extract::ApiJson;
use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use bridle_engine::store::{
    Conversation, ConversationFilter, ConversationStatus, MessageRole, PageRequest, View,
};
use serde::Deserialize;
use serde_json::{Map, Value, json};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateBody {
    contract: String,
    #[serde(default)]
    context: Map<String, Value>,
    prompt: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SendBody {
    content: String,
    model: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct PageQuery {
    #[serde(default)]
    offset: u64,
    #[serde(default = "default_limit")]
    limit: u64,
}

fn default_limit() -> u64 {
    50
}

fn conversation_json(c: &Conversation) -> Value {
    json!({"id": c.id, "contract": c.contract, "context": c.context, "status": c.status, "created_at": c.created_at, "updated_at": c.updated_at})
}

/// The conversation, if the caller may read it: its user, or an admin. Other users get 404,
/// so ids of other users' conversations are not confirmed.
async fn readable(state: &AppState, caller: &Caller, id: &str) -> Result<Conversation, ApiError> {
    match state.engine.store().conversation(id).await? {
        Some(c) if c.user_id == caller.user_id || caller.role == Role::Admin => Ok(c),
        _ => Err(ApiError::NotFound(format!(
            "conversation {id} does not exist"
        ))),
    }
}

/// The conversation, if the caller may write to it: only its user. An admin reads every
/// conversation but never speaks in a user's name (403), so the audit trail stays the user's.
async fn writable(state: &AppState, caller: &Caller, id: &str) -> Result<Conversation, ApiError> {
    let conversation = readable(state, caller, id).await?;
    if conversation.user_id != caller.user_id {
        return Err(ApiError::Forbidden(
            "only the conversation's user can send messages to it".into(),
        ));
    }
    Ok(conversation)
}

pub async fn create(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<CreateBody>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let mut context = body.context;
    if let Some(prompt) = body.prompt {
        context.insert("prompt".into(), Value::String(prompt));
    }
    let conversation = state
        .engine
        .start_conversation(&caller.user_id, &body.contract, Value::Object(context))
        .await?;
    Ok((StatusCode::CREATED, Json(conversation_json(&conversation))))
}

pub async fn list(
    State(state): State<AppState>,
    caller: Caller,
    Query(page): Query<PageQuery>,
) -> Result<Json<Value>, ApiError> {
    let filter = ConversationFilter {
        user_id: Some(caller.user_id.clone()),
        ..ConversationFilter::default()
    };
    let page = state
        .engine
        .store()
        .list_conversations(
            &filter,
            PageRequest {
                offset: page.offset,
                limit: page.limit,
            },
        )
        .await?;
    let items: Vec<Value> = page
        .items
        .iter()
        .map(|s| conversation_json(&s.conversation))
        .collect();
    Ok(Json(
        json!({"items": items, "total": page.total, "offset": page.offset, "limit": page.limit}),
    ))
}

pub async fn send(
    State(state): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<SendBody>,
) -> Result<Response, ApiError> {
    let conversation = writable(&state, &caller, &id).await?;
    if conversation.status == ConversationStatus::Blocked {
        let language = conversation.context.get("language").and_then(Value::as_str);
        return Err(ApiError::Blocked(
            state.engine.policy().blocked_answer(language),
        ));
    }
    let chars = body.content.chars().count();
    if body.content.trim().is_empty() {
        return Err(ApiError::Unprocessable("the message is empty".into()));
    }
    if chars > state.settings.max_message_chars {
        return Err(ApiError::Unprocessable(format!(
            "the message has {chars} characters; the limit is {}",
            state.settings.max_message_chars
        )));
    }
    state.admit(&caller.user_id).await?;
    let lease = state.hold(&caller.user_id, &conversation.id).await?;
    if sse::wants_events(&headers) {
        return Ok(sse::turn_events(
            &state,
            sse::StreamedTurn {
                conversation_id: conversation.id,
                content: body.content,
                model: body.model,
                lease,
            },
        ));
    }
    let outcome = state
        .engine
        .send(&conversation.id, &body.content, body.model.as_deref())
        .await?;
    Ok(Json(json!({
        "conversation_id": conversation.id,
        "turn_id": outcome.turn_id,
        "message_id": outcome.message_id,
        "value": outcome.value,
        "attempts": outcome.attempts,
        "repairs": outcome.repairs,
        "fallback": outcome.fallback,
        "usage": outcome.usage,
        "safety": outcome.safety,
    }))
    .into_response())
}

pub async fn history(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let conversation = readable(&state, &caller, &id).await?;
    let messages = state
        .engine
        .store()
        .messages(&conversation.id, View::User)
        .await?;
    let items: Vec<Value> = messages
        .iter()
        .map(|m| match m.data.role {
            MessageRole::User => json!({"id": m.id, "role": "user", "content": m.data.content, "created_at": m.created_at}),
            MessageRole::Assistant => json!({"id": m.id, "role": "assistant", "value": m.data.value, "created_at": m.created_at}),
        })
        .collect();
    Ok(Json(
        json!({"conversation_id": conversation.id, "messages": items}),
    ))
}
