//! The native conversation API: start, list own, read one, send a message, read the user view.
//!
//! The list view never carries a conversation's context (an application's prompt can be tens of
//! KiB, and a page of them megabytes): each item has a short `summary` of it instead; the
//! single-conversation read returns the whole context.

use super::bodies::{ConversationBody, HistoryBody, ListedConversation, PageBody, TurnBody};
use super::sse;
use crate::AppState;
use crate::auth::{Caller, Role};
use crate::error::ApiError;
use crate::extract::{ApiJson, ApiQuery};
use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use bridle_engine::UserTurn;
use bridle_engine::answer::Answers;
use bridle_engine::store::{
    Conversation, ConversationFilter, ConversationStatus, PageRequest, View,
};
use serde::Deserialize;
use serde_json::{Map, Value};

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
    /// The user's message (or, with `answer`, left out).
    #[serde(default)]
    content: String,
    /// Answers to the last reply's question cards, by id, instead of a typed message.
    answer: Option<Answers>,
    model: Option<String>,
    /// This turn's context, merged over the conversation's: string facts (`page`, `mode`,
    /// `language`, …), `prompt`, and the application's state under `app_state`.
    context: Option<Map<String, Value>>,
}

impl SendBody {
    /// Refuses an empty message, one past `max_chars` characters and a context past
    /// `max_context_bytes` of JSON (422).
    fn check(&self, max_chars: usize, max_context_bytes: usize) -> Result<(), ApiError> {
        if self.answer.is_some() {
            if !self.content.is_empty() {
                return Err(ApiError::Unprocessable(
                    "send either content or an answer, not both".into(),
                ));
            }
            return self.check_context(max_context_bytes);
        }
        self.check_context(max_context_bytes)?;
        if self.content.trim().is_empty() {
            return Err(ApiError::Unprocessable("the message is empty".into()));
        }
        let chars = self.content.chars().count();
        if chars > max_chars {
            return Err(ApiError::Unprocessable(format!(
                "the message has {chars} characters; the limit is {max_chars}"
            )));
        }
        Ok(())
    }

    /// Refuses a context past `max_context_bytes` of JSON (422).
    fn check_context(&self, max_context_bytes: usize) -> Result<(), ApiError> {
        if let Some(context) = &self.context {
            let bytes = serde_json::to_vec(context).map_or(usize::MAX, |v| v.len());
            if bytes > max_context_bytes {
                return Err(ApiError::Unprocessable(format!(
                    "the message's context takes {bytes} bytes as JSON; the limit is {max_context_bytes}"
                )));
            }
        }
        Ok(())
    }
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

fn listed(c: &Conversation) -> ListedConversation<'_> {
    ListedConversation {
        id: &c.id,
        contract: &c.contract,
        summary: summary(&c.context),
        status: c.status,
        created_at: c.created_at,
        updated_at: c.updated_at,
    }
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
) -> Result<Response, ApiError> {
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
    Ok((
        StatusCode::CREATED,
        Json(ConversationBody::from(&conversation)),
    )
        .into_response())
}

pub async fn list(
    State(state): State<AppState>,
    caller: Caller,
    ApiQuery(page): ApiQuery<PageQuery>,
) -> Result<Response, ApiError> {
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
    Ok(Json(PageBody {
        items: page.items.iter().map(|s| listed(&s.conversation)).collect(),
        total: page.total,
        offset: page.offset,
        limit: page.limit,
    })
    .into_response())
}

/// `GET /v1/conversations/{id}`: one conversation, its whole context included.
pub async fn read(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let conversation = readable(&state, &caller, &id).await?;
    Ok(Json(ConversationBody::from(&conversation)).into_response())
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
    body.check(
        state.settings.max_message_chars,
        state.settings.max_context_bytes,
    )?;
    let (running, lease) = begin_turn(&state, &caller, &conversation.id).await?;
    let ids = crate::request_id::current();
    if sse::wants_events(&headers) {
        return Ok(sse::turn_events(
            &state,
            sse::StreamedTurn {
                conversation_id: conversation.id,
                content: body.content,
                model: body.model,
                context: body.context,
                answer: body.answer,
                lease,
                running,
            },
        ));
    }
    let turn = UserTurn {
        content: &body.content,
        model: body.model.as_deref(),
        context: body.context.as_ref(),
        answer: body.answer.as_ref(),
        ids: ids.as_ref(),
    };
    let outcome = state.engine.send_message(&conversation.id, &turn).await?;
    drop((lease, running));
    Ok(Json(TurnBody::new(conversation.id, outcome)).into_response())
}

/// Admits a turn of `conversation` by `caller`: a request counted against their rate, the
/// conversation's one running turn taken (409 when one runs), a concurrent-conversation slot
/// held. Both are held until the turn ends.
async fn begin_turn(
    state: &AppState,
    caller: &Caller,
    conversation: &str,
) -> Result<(crate::turns::Running, Option<crate::limits::Lease>), ApiError> {
    state.admit(&caller.user_id).await?;
    let running = state.turns.start(conversation).ok_or_else(|| {
        ApiError::TurnInProgress(
            "a reply to this conversation is still being made; send again once it has come".into(),
        )
    })?;
    let lease = state.hold(&caller.user_id, conversation).await?;
    Ok((running, lease))
}

pub async fn history(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let conversation = readable(&state, &caller, &id).await?;
    let messages = state
        .engine
        .store()
        .messages(&conversation.id, View::User)
        .await?;
    Ok(Json(HistoryBody {
        conversation_id: &conversation.id,
        messages: messages.iter().map(Into::into).collect(),
    })
    .into_response())
}
