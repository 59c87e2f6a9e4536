//! [`MockRequest`] and [`MockReply`]: the provider-neutral chat request the mock model answers
//! and its typed answer, shared by the HTTP front ends (OpenAI, Anthropic) and in-process
//! callers; plus [`Conversation`], the facts the model reads from a request (system text, the
//! turn's user message, Bridle's retry feedback, the tool results since it, and from them the
//! attempt number). Tools are typed too: the offered ones ([`MockTool`]), a forced call
//! ([`ReplyFormat::Call`]), the calls an assistant message made ([`CallMade`]) and the `tool`
//! messages answering them ([`MockMessage::tool_result`]).

use crate::faults::Fault;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::time::Duration;

/// How Bridle's retry feedback starts (see `bridle_core` feedback).
pub const FEEDBACK_PREFIX: &str = "Your previous reply did not meet the contract";

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions.
    System,
    /// The user (or Bridle's retry feedback).
    User,
    /// The model (its text, and the tools it called: [`MockMessage::calls`]).
    Assistant,
    /// The result of a tool call (OpenAI `role: "tool"`, an Anthropic `tool_result` block),
    /// answering the call [`MockMessage::call_id`].
    Tool,
}

/// A call of a tool with its id: one the model made earlier in the conversation, as the client
/// sends it back (an assistant message's OpenAI `tool_calls` entry or Anthropic `tool_use`
/// block), or one the mock server answered with (its request log).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallMade {
    /// The call's id (`call_…`, `toolu_…`), which the tool result names.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments (JSON text that is not JSON is kept as a JSON string).
    pub arguments: Value,
}

/// One message of a chat: its text, and the calls of an assistant message or the call a tool
/// result answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MockMessage {
    /// Author.
    pub role: Role,
    /// Text (several parts joined by newlines); a tool message's result.
    pub content: String,
    /// An assistant message's calls of tools.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<CallMade>,
    /// A tool message: the id of the call it answers (`None` when the client sent none, as
    /// OpenAI's legacy `function` role does).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
}

impl MockMessage {
    /// A message of `role` with `content` (no calls).
    pub fn new(role: Role, content: impl Into<String>) -> Self {
        Self {
            role,
            content: content.into(),
            calls: Vec::new(),
            call_id: None,
        }
    }

    /// An assistant message with `content` (may be empty) that called `calls`.
    pub fn assistant_calls(content: impl Into<String>, calls: Vec<CallMade>) -> Self {
        Self {
            calls,
            ..Self::new(Role::Assistant, content)
        }
    }

    /// The result `content` of the call `call_id` (a tool message).
    pub fn tool_result(call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            call_id: Some(call_id.into()),
            ..Self::new(Role::Tool, content)
        }
    }

    /// True for a user message carrying Bridle's retry feedback.
    pub fn is_feedback(&self) -> bool {
        self.role == Role::User
            && self
                .content
                .lines()
                .any(|line| line.trim_start().starts_with(FEEDBACK_PREFIX))
    }

    /// True for a user (or tool) message that reports validation errors in the words other
    /// retry loops use (Pydantic's "1 validation error for …", as Instructor sends it back).
    /// Read as feedback only right after a reply of the model.
    pub fn is_validation_report(&self) -> bool {
        matches!(self.role, Role::User | Role::Tool)
            && self.content.to_lowercase().contains("validation error")
    }
}

/// What form the reply must take, as the request asks natively.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ReplyFormat {
    /// Nothing asked natively (a contract may still be named in the system prompt).
    #[default]
    Free,
    /// OpenAI `response_format: {"type": "json_object"}`.
    JsonObject,
    /// OpenAI `response_format: {"type": "json_schema", …}`.
    JsonSchema {
        /// The schema.
        schema: Value,
    },
    /// A forced tool call whose input is the reply: Bridle's structured output through a tool
    /// (Anthropic `tool_choice: {"type": "tool"}`). The reply is the tool's input — the named
    /// contract's value, faults included. When the system prompt names a contract whose schema
    /// is not the tool's, the request is no such trick: the model calls the tool as
    /// [`ReplyFormat::Call`] does, with arguments from the tool's schema.
    Tool {
        /// Tool name.
        name: String,
        /// The tool's `input_schema`.
        schema: Value,
    },
    /// A call of an offered tool is forced: OpenAI `tool_choice: {"type": "function", …}`
    /// (`name`) or `"required"` (no name: the first offered tool), Anthropic `{"type": "any"}`.
    /// The reply is a call ([`MockReply::Text`] with `calls`, no text) whose arguments are
    /// generated from the tool's `parameters` schema (structural content faults apply). A name
    /// the request's tools do not have gets an HTTP 400 answer.
    Call {
        /// The tool to call; `None`: the first of [`MockRequest::tools`].
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
    },
}

/// A function tool the request offers the model (OpenAI `tools`, Anthropic `tools`). With
/// `tool_choice: "none"` the front ends offer none. The model calls one on its own only when
/// a script step asks ([`crate::Step::Call`]) or, in a question-card mode, `present_question`;
/// [`ReplyFormat::Call`] forces a call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MockTool {
    /// The function's name.
    pub name: String,
    /// Its parameters' JSON Schema (`parameters`, `input_schema`).
    pub parameters: Value,
}

/// A call of an offered tool in a reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MockCall {
    /// The tool's name.
    pub name: String,
    /// The arguments.
    pub arguments: Value,
}

/// A chat request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MockRequest {
    /// The model name asked for (echoed in replies and in `model` properties).
    pub model: String,
    /// System, history, user message and, on retries, bad replies and feedback.
    pub messages: Vec<MockMessage>,
    /// Native structured output asked for.
    #[serde(default)]
    pub format: ReplyFormat,
    /// Whether the answer is streamed (only [`Fault::BrokenStream`] cares).
    #[serde(default)]
    pub stream: bool,
    /// Function tools the model may call. Unforced, the mock calls `present_question` when a
    /// contract with question cards is in a card mode, and a tool a script step names; it
    /// calls no other tool.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<MockTool>,
}

impl MockRequest {
    /// A non-streamed request for `model` with `messages` and no native format.
    pub fn new(model: impl Into<String>, messages: Vec<MockMessage>) -> Self {
        Self {
            model: model.into(),
            messages,
            format: ReplyFormat::Free,
            stream: false,
            tools: Vec::new(),
        }
    }

    /// The offered tool named `name`, if any.
    pub fn tool(&self, name: &str) -> Option<&MockTool> {
        self.tools.iter().find(|t| t.name == name)
    }
}

/// Estimated tokens (≈ characters / 4).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Tokens of the request's messages (and schema).
    pub prompt_tokens: u64,
    /// Tokens of the reply.
    pub completion_tokens: u64,
}

impl Usage {
    /// ≈ one token per four characters, at least one.
    pub fn estimate(chars: usize) -> u64 {
        (chars as u64).div_ceil(4).max(1)
    }
}

/// Why a text reply ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model finished.
    End,
    /// The reply was cut off (the token limit; [`Fault::Truncate`]).
    Length,
}

/// Facts about an answer, whatever its form.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplyInfo {
    /// A stable id for the answer (same request → same id).
    pub id: String,
    /// 1 + the number of retry feedback messages in the request.
    pub attempt: u32,
    /// Wait this long before answering (latency plus any [`Fault::Slow`]).
    pub delay: Duration,
    /// For a content fault: the JSON pointer it broke (`""` for the whole reply).
    pub target: Option<String>,
}

/// The mock model's answer.
#[derive(Debug, Clone, PartialEq)]
pub enum MockReply {
    /// A text reply (JSON text, possibly broken by a content fault, or conversation), and the
    /// offered tools it calls.
    Text {
        /// The reply text.
        content: String,
        /// Calls of offered tools (then `content` is what the model says besides; it may be
        /// empty).
        calls: Vec<MockCall>,
        /// Token estimate.
        usage: Usage,
        /// Why it ended.
        stop: StopReason,
        /// The fault applied, if any.
        fault: Option<Fault>,
        /// The content deltas a streamed answer sends, when a script set them (a `pieces`
        /// step; they make `content` together); `None`: `content` cut into even pieces.
        pieces: Option<Vec<String>>,
        /// Id, attempt, delay, target.
        info: ReplyInfo,
    },
    /// A forced tool call whose input is the generated value.
    ToolCall {
        /// The tool's name.
        name: String,
        /// The tool input.
        input: Value,
        /// Token estimate.
        usage: Usage,
        /// The fault applied, if any (only structural faults reach a tool input).
        fault: Option<Fault>,
        /// The input's JSON text in the deltas a streamed answer sends, when a script set them
        /// (a `pieces` step whose text is the input); `None`: the input's JSON cut evenly.
        pieces: Option<Vec<String>>,
        /// Id, attempt, delay, target.
        info: ReplyInfo,
    },
    /// An HTTP error instead of an answer.
    Http {
        /// 500 or 429 for a fault; 400 for a request the mock cannot answer as asked (a forced
        /// tool, or one a script step calls, that the request does not offer).
        status: u16,
        /// `Retry-After` in seconds.
        retry_after: Option<u64>,
        /// Error message for the body.
        message: String,
        /// The transport fault; `None` for a 400.
        fault: Option<Fault>,
        /// Id, attempt, delay.
        info: ReplyInfo,
    },
    /// A stream that sends the start of `content` and then breaks off.
    BrokenStream {
        /// The whole reply the stream was sending (text, or a tool input's JSON).
        content: String,
        /// The forced tool's name, when the stream was a tool call.
        tool: Option<String>,
        /// Token estimate.
        usage: Usage,
        /// Id, attempt, delay.
        info: ReplyInfo,
    },
    /// No answer at all: the connection is closed before anything is sent ([`Fault::Reset`]).
    Reset {
        /// Id, attempt, delay.
        info: ReplyInfo,
    },
    /// `reply`, spoiled on the wire by `fault` ([`Fault::InvalidUtf8`], [`Fault::Garbage`]):
    /// the HTTP front ends send the reply's bytes corrupted.
    Corrupt {
        /// The transport fault that spoils the answer.
        fault: Fault,
        /// The answer as it would have been sent.
        reply: Box<MockReply>,
    },
}

impl ReplyInfo {
    /// The id of the answer's `index`th call as the OpenAI front end sends it
    /// (`call_mock_<answer id>_<index>`): the same for the same request under the same seed.
    pub fn call_id(&self, index: usize) -> String {
        format!("call_mock_{}_{index}", self.id)
    }
}

impl MockReply {
    /// Id, attempt, delay and target.
    pub fn info(&self) -> &ReplyInfo {
        match self {
            Self::Text { info, .. }
            | Self::ToolCall { info, .. }
            | Self::Http { info, .. }
            | Self::BrokenStream { info, .. }
            | Self::Reset { info } => info,
            Self::Corrupt { reply, .. } => reply.info(),
        }
    }

    /// The fault applied, if any.
    pub fn fault(&self) -> Option<Fault> {
        match self {
            Self::Text { fault, .. } | Self::ToolCall { fault, .. } => *fault,
            Self::Http { fault, .. } => *fault,
            Self::BrokenStream { .. } => Some(Fault::BrokenStream),
            Self::Reset { .. } => Some(Fault::Reset),
            Self::Corrupt { fault, .. } => Some(*fault),
        }
    }

    /// The calls of tools the answer makes (a forced tool's input as a call of it), with the
    /// ids `id_of(index)` gives the `index`th of them.
    pub fn calls(&self, id_of: impl Fn(usize) -> String) -> Vec<CallMade> {
        let made = |(index, (name, arguments)): (usize, (&String, &Value))| CallMade {
            id: id_of(index),
            name: name.clone(),
            arguments: arguments.clone(),
        };
        match self {
            Self::Text { calls, .. } => calls
                .iter()
                .map(|c| (&c.name, &c.arguments))
                .enumerate()
                .map(made)
                .collect(),
            Self::ToolCall { name, input, .. } => vec![made((0, (name, input)))],
            Self::Corrupt { reply, .. } => reply.calls(id_of),
            _ => Vec::new(),
        }
    }

    /// The HTTP status this answer is given with; 0 when none is sent ([`MockReply::Reset`]).
    pub fn status(&self) -> u16 {
        match self {
            Self::Http { status, .. } => *status,
            Self::Reset { .. } => 0,
            _ => 200,
        }
    }
}

/// What the model reads from a request.
#[derive(Debug, Clone)]
pub(crate) struct Conversation<'r> {
    /// Every system message, joined.
    pub system: String,
    /// The first user message that is not feedback (names the conversation).
    pub first_user: &'r str,
    /// The last user message that is not feedback (names the turn).
    pub turn_user: &'r str,
    /// How many user messages are not feedback.
    pub user_turns: u64,
    /// The retry feedback messages (Bridle's, or another loop's validation report), in order.
    pub feedback: Vec<&'r str>,
    /// How many of them are another loop's validation reports.
    pub reports: usize,
    /// Tool results since the turn's user message (each a round of call → result → answer).
    pub rounds: u64,
    /// Characters of every message.
    pub chars: usize,
}

impl<'r> Conversation<'r> {
    pub(crate) fn read(request: &'r MockRequest) -> Self {
        let mut talk = Self {
            system: String::new(),
            first_user: "",
            turn_user: "",
            user_turns: 0,
            feedback: Vec::new(),
            reports: 0,
            rounds: 0,
            chars: 0,
        };
        let mut after_reply = false;
        for message in &request.messages {
            talk.chars += message.content.chars().count()
                + message
                    .calls
                    .iter()
                    .map(|c| c.name.len() + c.arguments.to_string().len())
                    .sum::<usize>();
            let follows_reply =
                std::mem::replace(&mut after_reply, message.role == Role::Assistant);
            match message.role {
                Role::System => {
                    if !talk.system.is_empty() {
                        talk.system.push('\n');
                    }
                    talk.system.push_str(&message.content);
                }
                Role::User if message.is_feedback() => talk.feedback.push(&message.content),
                Role::User | Role::Tool if follows_reply && message.is_validation_report() => {
                    talk.feedback.push(&message.content);
                    talk.reports += 1;
                }
                Role::User => {
                    if talk.user_turns == 0 {
                        talk.first_user = &message.content;
                    }
                    talk.turn_user = &message.content;
                    talk.user_turns += 1;
                    talk.rounds = 0;
                }
                Role::Tool => talk.rounds += 1,
                Role::Assistant => {}
            }
        }
        talk
    }

    /// 1 + the number of feedback messages.
    pub(crate) fn attempt(&self) -> u32 {
        u32::try_from(self.feedback.len())
            .unwrap_or(u32::MAX - 1)
            .saturating_add(1)
    }

    /// Identifies the turn: its conversation's first user message, its own user message and
    /// how many turns came before.
    pub(crate) fn turn_key(&self) -> u64 {
        mix(&[fnv(self.first_user), fnv(self.turn_user), self.user_turns])
    }

    /// Identifies the request's round within its turn: the turn, and the tool results since
    /// its user message (the turn's own key when there are none).
    pub(crate) fn round_key(&self) -> u64 {
        match self.rounds {
            0 => self.turn_key(),
            rounds => mix(&[self.turn_key(), rounds]),
        }
    }

    /// The name of the contract Bridle's instructions name, if any.
    pub(crate) fn contract_name(&self) -> Option<&str> {
        const MARK: &str = "that meets the contract \"";
        let start = self.system.find(MARK)? + MARK.len();
        let rest = &self.system[start..];
        rest.find('"').map(|end| &rest[..end])
    }

    /// The schema on the line after `JSON Schema (…) of the reply:` in the system prompt.
    pub(crate) fn prompt_schema(&self) -> Option<Value> {
        let mut lines = self.system.lines();
        while let Some(line) = lines.next() {
            let line = line.trim();
            if line.starts_with("JSON Schema (") && line.ends_with(") of the reply:") {
                return lines
                    .next()
                    .and_then(|next| serde_json::from_str(next.trim()).ok());
            }
        }
        None
    }
}

/// The most characters of a name (a tool's, a role's) an error message repeats.
const MAX_NAME_CHARS: usize = 100;

/// `name` in quotes for an error message, at most [`MAX_NAME_CHARS`] of it.
pub(crate) fn quoted(name: &str) -> String {
    let short: String = name.chars().take(MAX_NAME_CHARS).collect();
    let more = if short.len() < name.len() { "…" } else { "" };
    format!("{short:?}{more}")
}

/// FNV-1a of `text`: a stable hash (the standard hasher may change between Rust versions).
pub(crate) fn fnv(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Combines numbers into one well-mixed seed (splitmix64 over each part).
pub(crate) fn mix(parts: &[u64]) -> u64 {
    parts.iter().fold(0x9e37_79b9_7f4a_7c15, |acc, part| {
        let mut z = (acc ^ part).wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(messages: &[(Role, &str)]) -> MockRequest {
        MockRequest::new(
            "m",
            messages
                .iter()
                .map(|(role, text)| MockMessage::new(*role, *text))
                .collect(),
        )
    }

    #[test]
    fn attempts_count_feedback_and_turns_are_named_by_user_messages() {
        let first = request(&[(Role::System, "s"), (Role::User, "hello")]);
        let retry = request(&[
            (Role::System, "s"),
            (Role::User, "hello"),
            (Role::Assistant, "{}"),
            (
                Role::User,
                "Your previous reply did not meet the contract \"x\". Problems found: 1.",
            ),
        ]);
        let next_turn = request(&[
            (Role::System, "s"),
            (Role::User, "hello"),
            (Role::Assistant, "{}"),
            (Role::User, "and now?"),
        ]);
        let (a, b, c) = (
            Conversation::read(&first),
            Conversation::read(&retry),
            Conversation::read(&next_turn),
        );
        assert_eq!((a.attempt(), b.attempt(), c.attempt()), (1, 2, 1));
        assert_eq!(a.turn_key(), b.turn_key());
        assert_ne!(a.turn_key(), c.turn_key());
        assert_eq!(c.first_user, "hello");
    }

    #[test]
    fn tool_results_are_rounds_of_the_turn_and_a_report_in_one_is_feedback() {
        let call = || {
            MockMessage::assistant_calls(
                "",
                vec![CallMade {
                    id: "call_1".into(),
                    name: "f".into(),
                    arguments: serde_json::json!({}),
                }],
            )
        };
        let base = request(&[(Role::System, "s"), (Role::User, "hello")]);
        let mut after = base.clone();
        after.messages.push(call());
        after
            .messages
            .push(MockMessage::tool_result("call_1", "42"));
        let mut report = base.clone();
        report.messages.push(call());
        report.messages.push(MockMessage::tool_result(
            "call_1",
            "1 validation error for F\nx\n  Field required",
        ));
        let (a, b, c) = (
            Conversation::read(&base),
            Conversation::read(&after),
            Conversation::read(&report),
        );
        // A result: the same turn, a round further, not a retry.
        assert_eq!((b.turn_key(), b.rounds, b.attempt()), (a.turn_key(), 1, 1));
        assert_ne!(b.round_key(), a.round_key());
        assert_eq!(a.round_key(), a.turn_key());
        // A report in a tool message right after the call: feedback (Instructor's tool mode).
        assert_eq!((c.rounds, c.attempt(), c.reports), (0, 2, 1));
        // A new user message starts a new turn with no rounds.
        let mut next = after.clone();
        next.messages.push(MockMessage::new(Role::User, "and now?"));
        let d = Conversation::read(&next);
        assert_eq!((d.rounds, d.user_turns), (0, 2));
        assert!(b.chars > a.chars, "calls count towards the prompt");
    }

    #[test]
    fn contract_and_schema_are_read_from_the_system_prompt() {
        let prompt = "Reply with a single JSON value that meets the contract \"ticket\" (version 1.0.0).\n\
                      Output only the JSON.\n\nJSON Schema (draft-07) of the reply:\n{\"type\":\"object\"}\n";
        let r = request(&[(Role::System, prompt), (Role::User, "hi")]);
        let talk = Conversation::read(&r);
        assert_eq!(talk.contract_name(), Some("ticket"));
        assert_eq!(
            talk.prompt_schema(),
            Some(serde_json::json!({"type": "object"}))
        );
        let plain = request(&[(Role::System, "Be nice."), (Role::User, "hi")]);
        let talk = Conversation::read(&plain);
        assert_eq!((talk.contract_name(), talk.prompt_schema()), (None, None));
    }

    #[test]
    fn usage_is_about_four_characters_a_token() {
        assert_eq!(Usage::estimate(0), 1);
        assert_eq!(Usage::estimate(8), 2);
        assert_eq!(Usage::estimate(9), 3);
    }
}
