//! [`ChatCall`]: one call of the OpenAI-compatible endpoint under a contract — the chat as the
//! client sent it, the context it gives, and its [`Passthrough`]: the function tools, tool
//! choice and options it sends beside the chat, which go to the model with every attempt as
//! they came. The contract applies to content replies; a reply that calls one of the client's
//! tools ends the turn as that call ([`crate::TurnOutcome::tool_calls`]), for the client to run
//! and answer in its next call.

use crate::providers::{CallOptions, ChatMessage, ChatRequest};
use bridle_core::Contract;
use bridle_wire::openai::ToolChoice;
use serde_json::{Map, Value};

/// What a client sends beside the chat that reaches the model as it came.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Passthrough {
    /// The client's function tools (OpenAI tool bodies).
    pub tools: Vec<Value>,
    /// The client's tool choice.
    pub tool_choice: Option<ToolChoice>,
    /// The client's other options (`seed`, `stop`, `user`, …).
    pub options: CallOptions,
}

impl Passthrough {
    /// The names of the client's function tools.
    pub fn tool_names(&self) -> impl Iterator<Item = String> + '_ {
        crate::providers::offered_functions(&self.tools).map(|function| function.name)
    }

    /// Adds the client's tools, tool choice and options to an attempt's `request` (after the
    /// contract's own tools, if any).
    pub(crate) fn apply(&self, request: &mut ChatRequest) {
        request.tools.extend(self.tools.iter().cloned());
        request.tool_choice.clone_from(&self.tool_choice);
        request.options.clone_from(&self.options);
    }
}

/// One enforced call of the OpenAI-compatible endpoint.
#[derive(Debug, Clone, Copy)]
pub struct ChatCall<'a> {
    /// Who calls.
    pub user_id: &'a str,
    /// The contract its replies must meet (a named one, or one made from its schema).
    pub contract: &'a Contract,
    /// The chat, as sent.
    pub messages: &'a [ChatMessage],
    /// The configured model asked for (`None`: the default model).
    pub model: Option<&'a str>,
    /// Its context: string facts such as `page` and `mode`.
    pub context: &'a Map<String, Value>,
    /// What goes to the model beside the chat.
    pub passthrough: &'a Passthrough,
    /// The ids of the HTTP request the call runs for, stored with its messages.
    pub ids: Option<&'a crate::store::RequestIds>,
}
