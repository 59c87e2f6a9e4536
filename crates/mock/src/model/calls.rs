//! Calls of tools by [`MockModel`]: which tool a request forces ([`MockModel::forced_call`] —
//! OpenAI's named or `required` `tool_choice`, Anthropic's `any`, or Anthropic's forced tool
//! when it is not Bridle's structured output), the [`Target`] whose value is a call's
//! arguments (generated from the tool's `parameters` schema), and the call a script step asks
//! for ([`MockModel::scripted_call`]). A tool the request does not offer is answered with an
//! HTTP 400 that names it ([`refused`]).

use super::{MockModel, Rules, Target};
use crate::request::{
    Conversation, MockCall, MockReply, MockRequest, MockTool, ReplyFormat, ReplyInfo, StopReason,
    Usage, quoted,
};
use crate::script::ScriptCall;
use serde_json::{Value, json};

/// The most tool names an error message lists.
const MAX_NAMED: usize = 10;

impl MockModel {
    /// The tool the request forces the model to call, if any; the error is the message of a
    /// 400 (the forced tool is not offered).
    fn forced_call(
        &self,
        request: &MockRequest,
        talk: &Conversation<'_>,
    ) -> Result<Option<MockTool>, String> {
        match &request.format {
            ReplyFormat::Call { name: Some(name) } => {
                request.tool(name).cloned().map(Some).ok_or_else(|| {
                    format!(
                        "tool_choice names the tool {}, which is not among the request's tools ({})",
                        quoted(name),
                        offered(request)
                    )
                })
            }
            ReplyFormat::Call { name: None } => request.tools.first().cloned().map(Some).ok_or_else(
                || "tool_choice asks for a tool call, but the request offers no tools".to_owned(),
            ),
            // Bridle's structured output forces a tool whose schema is the named contract's;
            // any other forced tool is a call like OpenAI's named `tool_choice`.
            ReplyFormat::Tool { name, schema } => Ok(talk
                .contract_name()
                .and_then(|contract| self.config.contracts.get(contract).ok())
                .filter(|contract| contract.schema().raw() != schema)
                .map(|_| MockTool {
                    name: name.clone(),
                    parameters: schema.clone(),
                })),
            _ => Ok(None),
        }
    }

    /// What the reply must meet: a forced call's arguments, else what [`MockModel::target`]
    /// finds; the error is the message of a 400 (the forced tool is not offered).
    pub(super) fn reply_target(
        &self,
        request: &MockRequest,
        talk: &Conversation<'_>,
    ) -> Result<Option<Target>, String> {
        Ok(match self.forced_call(request, talk)? {
            Some(tool) => Some(self.call_target(&tool)),
            None => self.target(request, talk),
        })
    }

    /// What a call of `tool` must meet: its parameters' schema (an object with no properties
    /// when it has none).
    fn call_target(&self, tool: &MockTool) -> Target {
        let schema = match &tool.parameters {
            Value::Null => json!({"type": "object", "properties": {}}),
            schema => schema.clone(),
        };
        let rules = match self.compile(&schema) {
            Some(contract) => Rules::Contract(contract),
            None => Rules::Unchecked(schema),
        };
        Target {
            rules,
            tool: Some(tool.name.clone()),
            call: None,
            forced: true,
        }
    }

    /// The call a script step asks for: of the offered tool it names, with its arguments or
    /// arguments generated from the tool's schema (for the request's `round`).
    pub(super) fn scripted_call(
        &self,
        request: &MockRequest,
        round: u64,
        call: &ScriptCall,
        info: ReplyInfo,
    ) -> MockReply {
        let Some(tool) = request.tool(&call.name) else {
            let message = format!(
                "the mock script asks for a call of the tool {}, which this request does not \
                 offer ({}; tool_choice \"none\" offers none)",
                quoted(&call.name),
                offered(request)
            );
            return refused(message, info);
        };
        let arguments = match &call.arguments {
            Some(arguments) => arguments.clone(),
            None => {
                self.generate(&self.call_target(tool), request, round, 0)
                    .value
            }
        };
        let talk = Conversation::read(request);
        let usage = Usage {
            prompt_tokens: Usage::estimate(talk.chars),
            completion_tokens: Usage::estimate(tool.name.len() + arguments.to_string().len()),
        };
        MockReply::Text {
            content: String::new(),
            calls: vec![MockCall {
                name: tool.name.clone(),
                arguments,
            }],
            usage,
            stop: StopReason::End,
            fault: None,
            pieces: None,
            info,
        }
    }
}

/// A 400 answer: the request asks for something the mock cannot do as asked.
pub(super) fn refused(message: String, info: ReplyInfo) -> MockReply {
    tracing::warn!(%message, "mock: request refused");
    MockReply::Http {
        status: 400,
        retry_after: None,
        message,
        fault: None,
        info,
    }
}

/// The request's tools, named for an error message.
fn offered(request: &MockRequest) -> String {
    if request.tools.is_empty() {
        return "it offers none".into();
    }
    let mut names: Vec<String> = request
        .tools
        .iter()
        .take(MAX_NAMED)
        .map(|t| quoted(&t.name))
        .collect();
    if request.tools.len() > MAX_NAMED {
        names.push(format!("and {} more", request.tools.len() - MAX_NAMED));
    }
    format!("it offers {}", names.join(", "))
}

#[cfg(test)]
mod tests;
