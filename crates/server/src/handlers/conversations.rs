//! The native conversation API: start, list own, read one, send a message, read the user view.
//!
//! The list view never carries a conversation's context (an application's prompt can be tens of
//! KiB, and a page of them megabytes): each item has a short `summary` of it instead; the
//! single-conversation read returns the whole context.

use super::sse;
use crate::AppState;
use crate::auth::{Caller, Role};
use crate::error::ApiError;
use crate::extract::{ApiJson, ApiQuery};
use axum::Json;
use axum::extract::{Path, State};
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

/// Longest text of one context value in a summary, in characters.
const SUMMARY_VALUE_CHARS: usize = 40;
/// Longest summary, in characters.
const SUMMARY_CHARS: usize = 160;

/// A short line describing `context` for a list: its scalar facts (`page: forms · mode:
/// discovery`), the prompt left out, each value and the whole line cut to a few dozen
/// characters.
fn summary(context: &Value) -> String {
    let facts = context
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(key, value)| {
            let text = match value {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                Value::Bool(b) => b.to_string(),
                _ => return None,
            };
            (key != "prompt").then(|| {
                format!(
                    "{}: {}",
                    cut(key, SUMMARY_VALUE_CHARS),
                    cut(&text, SUMMARY_VALUE_CHARS)
                )
            })
        });
    cut(&facts.collect::<Vec<_>>().join(" · "), SUMMARY_CHARS)
}

/// `text` cut to `chars` characters, with `…` when it was longer.
fn cut(text: &str, chars: usize) -> String {
    match text.char_indices().nth(chars) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

fn listed_json(c: &Conversation) -> Value {
    json!({"id": c.id, "contract": c.contract, "summary": summary(&c.context), "status": c.status, "created_at": c.created_at, "updated_at": c.updated_at})
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
    state.admit(&caller.user_id).await?;
    let mut context = body.context;
    if let Some(prompt) = body.prompt {
        context.insert("prompt".into(), Value::String(prompt));
    }
    let context = Value::Object(context);
    let bytes = serde_json::to_vec(&context).map_or(usize::MAX, |v| v.len());
    if bytes > state.settings.max_context_bytes {
        return Err(ApiError::Unprocessable(format!(
            "the context and prompt take {bytes} bytes as JSON; the limit is {}",
            state.settings.max_context_bytes
        )));
    }
    let conversation = state
        .engine
        .start_conversation(&caller.user_id, &body.contract, context)
        .await?;
    Ok((StatusCode::CREATED, Json(conversation_json(&conversation))))
}

pub async fn list(
    State(state): State<AppState>,
    caller: Caller,
    ApiQuery(page): ApiQuery<PageQuery>,
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
        .map(|s| listed_json(&s.conversation))
        .collect();
    Ok(Json(
        json!({"items": items, "total": page.total, "offset": page.offset, "limit": page.limit}),
    ))
}

/// `GET /v1/conversations/{id}`: one conversation, its whole context included.
pub async fn read(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let conversation = readable(&state, &caller, &id).await?;
    Ok(Json(conversation_json(&conversation)))
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
    let running = state.turns.start(&conversation.id).ok_or_else(|| {
        ApiError::TurnInProgress(
            "a reply to this conversation is still being made; send again once it has come".into(),
        )
    })?;
    let lease = state.hold(&caller.user_id, &conversation.id).await?;
    if sse::wants_events(&headers) {
        return Ok(sse::turn_events(
            &state,
            sse::StreamedTurn {
                conversation_id: conversation.id,
                content: body.content,
                model: body.model,
                lease,
                running,
            },
        ));
    }
    let outcome = state
        .engine
        .send(&conversation.id, &body.content, body.model.as_deref())
        .await?;
    drop((lease, running));
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
