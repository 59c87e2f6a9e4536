//! The prompt of each attempt: [`base_messages`] (system text — the contract's instructions,
//! the "Application state" section, the application's prompt, the note of the conversation's
//! state — then history and the user's message, or the chat a client sent whole, as
//! [`crate::GivenChat`] read it) and [`request`], which adds the previous attempt's bad reply
//! and its feedback and addresses it to the attempt's model.

use super::{MAX_HISTORY_MESSAGES, TurnInput};
use crate::config::ModelConfig;
use crate::providers::{ChatMessage, ChatRequest, ResponseFormat, Role};
use crate::store::{MessageRole, StoreError, View};
use serde_json::Value;

/// System message (contract instructions + the application's prompt), then the validated
/// history, then the user's message — or, for a chat the client sent whole, its own messages.
pub(super) async fn base_messages(input: &TurnInput<'_>) -> Result<Vec<ChatMessage>, StoreError> {
    let app_prompt = |mut system: String| {
        if let Some(state) = input.app_state {
            system.push_str("\n\n");
            system.push_str(&crate::turn_context::app_state_section(state));
        }
        if let Some(prompt) = input.app_prompt.filter(|p| !p.trim().is_empty()) {
            system.push_str("\n\n");
            system.push_str(prompt.trim());
        }
        system
    };
    let state_note = |mut system: String| {
        if let Some(note) = input.contract.state_note(&input.conversation.state) {
            system.push_str("\n\n");
            system.push_str(&note);
        }
        system
    };
    if let Some(given) = input.given_messages {
        let mut system = state_note(app_prompt(
            input
                .contract
                .instructions_with_history(input.context, &given.earlier),
        ));
        for message in given.messages.iter().filter(|m| m.role.is_instructions()) {
            system.push_str("\n\n");
            system.push_str(message.content.trim());
        }
        let mut messages = vec![ChatMessage::new(Role::System, system)];
        messages.extend(
            given
                .messages
                .iter()
                .filter(|m| !m.role.is_instructions())
                .cloned(),
        );
        return Ok(messages);
    }
    let history = input
        .store
        .messages(&input.conversation.id, View::User)
        .await?;
    let skip = history.len().saturating_sub(MAX_HISTORY_MESSAGES);
    let history = &history[skip..];
    let earlier: Vec<Value> = history
        .iter()
        .filter(|m| m.data.role == MessageRole::Assistant)
        .filter_map(|m| m.data.value.clone())
        .collect();
    let system = state_note(app_prompt(
        input
            .contract
            .instructions_with_history(input.context, &earlier),
    ));
    let mut messages = vec![ChatMessage::new(Role::System, system)];
    for message in history {
        let role = match message.data.role {
            MessageRole::User => Role::User,
            MessageRole::Assistant => Role::Assistant,
        };
        // A valid reply is sent back in its clean form (repaired, coerced), written the way
        // the contract's replies are written (JSON, XML, text with markers).
        let content = match (&message.data.role, &message.data.value) {
            (MessageRole::Assistant, Some(value)) => input.contract.reply_text(value),
            _ => message.data.content.clone(),
        };
        messages.push(ChatMessage::new(role, content));
    }
    // The engine checked that the message can be sent (`Engine::send`); should that change,
    // the plain message is sent rather than nothing.
    let count = u64::try_from(history.len())
        .unwrap_or(u64::MAX)
        .saturating_add(1);
    let sent = input
        .contract
        .user_prompt(
            input.user_message,
            &input.conversation.state,
            crate::turn_context::topic_id(input.context, &input.conversation.id),
            count,
        )
        .unwrap_or_else(|_| input.user_message.to_owned());
    messages.push(ChatMessage::new(Role::User, sent));
    Ok(messages)
}

/// The request of an attempt to `model`: `base`, then the correction (the previous attempt's
/// bad reply and its feedback) when there is one.
pub(super) fn request(
    input: &TurnInput<'_>,
    model: &ModelConfig,
    tools: &[Value],
    base: &[ChatMessage],
    correction: Option<&(String, String)>,
) -> ChatRequest {
    let mut messages = base.to_vec();
    if let Some((bad_reply, feedback)) = correction {
        messages.push(ChatMessage::new(Role::Assistant, bad_reply.clone()));
        messages.push(ChatMessage::new(Role::User, feedback.clone()));
    }
    let response_format = model
        .native_structured_output
        .then(|| ResponseFormat::JsonSchema {
            name: input.contract.name().to_owned(),
            schema: input.contract.schema().raw().clone(),
        });
    let mut request = ChatRequest {
        model: model.model.clone(),
        messages,
        temperature: model.temperature,
        max_tokens: model.max_tokens,
        response_format,
        tools: tools.to_vec(),
        ..ChatRequest::default()
    };
    if let Some(passthrough) = input.passthrough {
        passthrough.apply(&mut request);
    }
    request
}
