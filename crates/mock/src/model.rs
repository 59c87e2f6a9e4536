//! [`MockModel`]: the mock LLM itself — reads a [`MockRequest`], finds what the reply must
//! meet (a contract named in Bridle's instructions, else the native schema, else the schema in
//! the prompt, else nothing: conversational text), generates a valid value and decides, from a
//! [`Script`](crate::Script) or a seeded draw, which fault the request gets.
//!
//! Everything is derived from the seed, the conversation and the attempt number, so a retry
//! can recompute what the previous attempt did without server state: a content fault given at
//! attempt k is fixed at attempt k+1 when the feedback names its target (any feedback for
//! a whole-reply fault; Bridle's, or another loop's Pydantic validation report) and repeated otherwise — good feedback fixes a fault, bad feedback does
//! not. Tools: a forced call, or one a script step asks for, is answered as a call of the tool
//! with arguments generated from its schema ([`calls`]); after tool results the model answers
//! as usual (each round of call → result → answer is keyed apart). The only state kept is which script turn a conversation is on and how many transport
//! faults in a row an identical request got (so that a retry after HTTP 500 draws afresh).

use crate::config::{ConfigError, MockConfig};
use crate::faults::{Broken, Fault};
use crate::generate::{Generated, Hints, generate, generate_valid};
use crate::request::{
    Conversation, MockCall, MockReply, MockRequest, ReplyFormat, ReplyInfo, StopReason, Usage, mix,
};
use crate::safety::{Assessment, SafetyMode};
use crate::script::{ScriptCall, Step};
use crate::words;
use bridle_core::{Context, Contract};
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::{RngExt, SeedableRng};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

// Tags that keep the random streams of one request apart.
const VALUE: u64 = 1;
const CONTENT: u64 = 2;
const TRANSPORT: u64 = 3;
const APPLY: u64 = 4;
const TEXT: u64 = 5;
/// State entries kept before the maps are cleared (a long-running mock must not grow forever).
const MAX_STATE: usize = 100_000;
/// Ad-hoc schemas kept compiled.
const MAX_COMPILED: usize = 64;

mod calls;

/// The mock model. Cheap to share (`Arc`); `respond` takes `&self`.
#[derive(Debug)]
pub struct MockModel {
    config: MockConfig,
    state: Mutex<State>,
    compiled: Mutex<HashMap<String, Arc<Contract>>>,
}

#[derive(Debug, Default)]
struct State {
    next_script_turn: usize,
    turns: HashMap<u64, TurnState>,
    /// Transport faults answered in a row to the same (turn, attempt): an identical request
    /// after one is a retry, and draws afresh.
    streaks: HashMap<(u64, u32), u32>,
}

#[derive(Debug, Clone, Copy)]
struct TurnState {
    script_turn: usize,
    next_entry: usize,
    last_was_transport: bool,
}

/// What the reply must meet, and whether it is a forced tool call's input or asks its
/// question with a call of an offered tool.
struct Target {
    rules: Rules,
    tool: Option<String>,
    /// The offered tool the reply calls (`present_question`): the generated value is then
    /// `{"message", "arguments"}` and content faults break the arguments.
    call: Option<String>,
    /// The reply is a forced call of `tool` (not Bridle's structured output through it): the
    /// value is the call's arguments.
    forced: bool,
}

/// Where Bridle reports what is wrong with the first call's arguments.
const CALL_ARGUMENTS: &str = "/tool_calls/0/arguments";

enum Rules {
    /// A contract (named, or an ad-hoc schema compiled as one): values are checked.
    Contract(Arc<Contract>),
    /// A schema that does not compile: values are generated without a check.
    Unchecked(Value),
}

/// What the content of an answer is to be.
#[derive(Debug, Clone, PartialEq)]
enum Plan {
    Valid,
    /// A content fault, applied with the choices of the attempt that first drew it.
    Faulty(Fault, u32),
    /// This text; `pieces`: the deltas a stream sends it in (they make `text` together).
    Literal {
        text: String,
        pieces: Option<Vec<String>>,
    },
    /// A call of an offered tool (a script step).
    Call(ScriptCall),
}

impl MockModel {
    /// A model with `config` (checked first).
    pub fn new(config: MockConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        Ok(Self {
            config,
            state: Mutex::new(State::default()),
            compiled: Mutex::new(HashMap::new()),
        })
    }

    /// The settings.
    pub fn config(&self) -> &MockConfig {
        &self.config
    }

    /// Forgets script progress and transport streaks (a script starts again from turn 1).
    pub fn reset(&self) {
        *self.state.lock().unwrap_or_else(PoisonError::into_inner) = State::default();
    }

    /// Answers one request. Never panics; any request gets an answer.
    pub fn respond(&self, request: &MockRequest) -> MockReply {
        let talk = Conversation::read(request);
        let attempt = talk.attempt();
        let turn = talk.turn_key();
        let round = talk.round_key();
        let (transport, scripted, streak) = self.decide(turn, round, talk.rounds, attempt);
        let mut info = ReplyInfo {
            id: format!(
                "{:016x}",
                mix(&[round, u64::from(attempt), u64::from(streak)])
            ),
            attempt,
            delay: Duration::from_millis(self.config.latency_ms),
            target: None,
        };
        match transport {
            Some(Fault::Http500) => return http(500, None, Fault::Http500, info),
            Some(fault @ Fault::Http429 { retry_after_secs }) => {
                return http(429, Some(retry_after_secs), fault, info);
            }
            Some(Fault::BrokenStream) if !request.stream => {
                return http(500, None, Fault::BrokenStream, info);
            }
            Some(Fault::Slow { ms }) => info.delay += Duration::from_millis(ms),
            Some(Fault::Reset) => return MockReply::Reset { info },
            _ => {}
        }
        let reply = match scripted {
            Some(Plan::Call(call)) => self.scripted_call(request, round, &call, info),
            scripted => self.answer(request, &talk, round, transport, scripted, info),
        };
        match transport {
            Some(fault @ (Fault::InvalidUtf8 | Fault::Garbage)) => MockReply::Corrupt {
                fault,
                reply: Box::new(reply),
            },
            _ => reply,
        }
    }

    /// The answer's content — scripted, valid or broken by a content fault — as text, a forced
    /// tool's input, calls of offered tools, or a stream that breaks off.
    fn answer(
        &self,
        request: &MockRequest,
        talk: &Conversation<'_>,
        turn: u64,
        transport: Option<Fault>,
        scripted: Option<Plan>,
        mut info: ReplyInfo,
    ) -> MockReply {
        let pieces = match &scripted {
            Some(Plan::Literal { pieces, .. }) => pieces.clone(),
            _ => None,
        };
        let target = match self.reply_target(request, talk) {
            Ok(target) => target,
            Err(message) => return calls::refused(message, info),
        };
        let forced = target.as_ref().is_some_and(|t| t.forced);
        let (content, value, fault, stop) =
            self.content(request, talk, turn, target.as_ref(), scripted, &mut info);
        let schema_chars = match &request.format {
            ReplyFormat::JsonSchema { schema } | ReplyFormat::Tool { schema, .. } => {
                schema.to_string().len()
            }
            _ => 0,
        };
        let usage = Usage {
            prompt_tokens: Usage::estimate(talk.chars + schema_chars),
            completion_tokens: Usage::estimate(content.chars().count()),
        };
        let (tool, call) = match target {
            Some(target) => (target.tool, target.call),
            None => (None, None),
        };
        if transport == Some(Fault::BrokenStream) {
            return MockReply::BrokenStream {
                content,
                tool,
                usage,
                info,
            };
        }
        let fault = fault.or(transport);
        let arguments = value.as_ref().and_then(|v| v.get("arguments")).cloned();
        if let (Some(name), Some(arguments)) = (call, arguments) {
            let usage = Usage {
                completion_tokens: Usage::estimate(
                    content.chars().count() + arguments.to_string().len(),
                ),
                ..usage
            };
            return MockReply::Text {
                content,
                calls: vec![MockCall { name, arguments }],
                usage,
                stop,
                fault,
                pieces,
                info,
            };
        }
        match (tool, value) {
            (Some(name), Some(arguments)) if forced => MockReply::Text {
                content: String::new(),
                calls: vec![MockCall { name, arguments }],
                usage,
                stop: StopReason::End,
                fault,
                pieces: None,
                info,
            },
            (Some(name), Some(input)) => MockReply::ToolCall {
                name,
                input,
                usage,
                fault,
                pieces,
                info,
            },
            _ => MockReply::Text {
                content,
                calls: Vec::new(),
                usage,
                stop,
                fault,
                pieces,
                info,
            },
        }
    }

    /// The reply's content, its value, fault and stop reason: conversation (scripted or drawn)
    /// when nothing is to be met, else `target`'s value as the plan — scripted or drawn — says.
    fn content(
        &self,
        request: &MockRequest,
        talk: &Conversation<'_>,
        turn: u64,
        target: Option<&Target>,
        scripted: Option<Plan>,
        info: &mut ReplyInfo,
    ) -> (String, Option<Value>, Option<Fault>, StopReason) {
        match target {
            None => {
                let mut rng = StdRng::seed_from_u64(mix(&[self.config.seed, turn, TEXT]));
                let text = match scripted {
                    Some(Plan::Literal { text, .. }) => text,
                    _ => words::paragraph(&mut rng),
                };
                (text, None, None, StopReason::End)
            }
            Some(target) => {
                let generated = self.generate(target, request, turn, 0);
                let plan = match scripted {
                    Some(plan) => plan,
                    None => self.content_plan(talk, turn, &generated, target),
                };
                // Another loop's retry after a validation report on a valid-to-the-mock reply
                // (a rule it was never told): a model trying again writes a new reply, and so
                // does the mock — a fresh value for this attempt.
                let generated = if plan == Plan::Valid && talk.reports > 0 {
                    self.generate(target, request, turn, u64::from(talk.attempt()))
                } else {
                    generated
                };
                self.realise(plan, &generated, target, turn, info)
            }
        }
    }

    /// The transport fault for this request, the scripted content plan (`None`: draw it), and
    /// how many transport faults in a row the same request got before. `round`: the request's
    /// round of the turn (`turn` itself before any tool result), `rounds` the tool results.
    fn decide(
        &self,
        turn: u64,
        round: u64,
        rounds: u64,
        attempt: u32,
    ) -> (Option<Fault>, Option<Plan>, u32) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if state.turns.len() > MAX_STATE || state.streaks.len() > MAX_STATE {
            state.turns.clear();
            state.streaks.clear();
        }
        let key = (round, attempt);
        let streak = state.streaks.get(&key).copied().unwrap_or(0);
        let (transport, plan) = match &self.config.script {
            Some(script) => {
                let position = match state.turns.get(&turn).copied() {
                    Some(known) if attempt > 1 || rounds > 0 || known.last_was_transport => {
                        Some(known)
                    }
                    _ if attempt == 1 && rounds == 0 => {
                        let fresh = TurnState {
                            script_turn: state.next_script_turn,
                            next_entry: 0,
                            last_was_transport: false,
                        };
                        state.next_script_turn += 1;
                        Some(fresh)
                    }
                    _ => None,
                };
                let step =
                    position.map_or(Step::Valid, |p| script.step(p.script_turn, p.next_entry));
                let (transport, plan) = match step {
                    Step::Valid => (None, Plan::Valid),
                    Step::Reply(text) => (None, Plan::Literal { text, pieces: None }),
                    Step::Pieces(pieces) => (
                        None,
                        Plan::Literal {
                            text: pieces.concat(),
                            pieces: Some(pieces),
                        },
                    ),
                    Step::Call(call) => (None, Plan::Call(call)),
                    Step::Fault(f) if f.is_transport() => (Some(f), Plan::Valid),
                    Step::Fault(f) => (None, Plan::Faulty(f, attempt)),
                };
                if let Some(mut p) = position {
                    p.next_entry += 1;
                    p.last_was_transport = transport.is_some();
                    state.turns.insert(turn, p);
                }
                (transport, Some(plan))
            }
            None => {
                let parts = [round, u64::from(attempt), u64::from(streak), TRANSPORT];
                (self.draw(&parts).filter(Fault::is_transport), None)
            }
        };
        // A transport fault (a timeout after `slow` included) is retried with the same request.
        if transport.is_some() {
            state.streaks.insert(key, streak.saturating_add(1));
        } else {
            state.streaks.remove(&key);
        }
        (transport, plan, streak)
    }

    /// A fault from the mix with probability `fault_rate`, drawn from the stream `parts`.
    fn draw(&self, parts: &[u64]) -> Option<Fault> {
        let mut all = vec![self.config.seed];
        all.extend_from_slice(parts);
        let mut rng = StdRng::seed_from_u64(mix(&all));
        let rate = self.config.fault_rate.clamp(0.0, 1.0);
        if rate <= 0.0 || !rng.random_bool(rate) {
            return None;
        }
        self.config.faults.choose(&mut rng).copied()
    }

    fn draw_content(&self, turn: u64, attempt: u32) -> Plan {
        match self.draw(&[turn, u64::from(attempt), CONTENT]) {
            Some(fault) if !fault.is_transport() => Plan::Faulty(fault, attempt),
            _ => Plan::Valid,
        }
    }

    /// Attempt 1 draws; attempt k+1 repeats attempt k's fault unless the feedback after it
    /// names the fault's target (then it is valid), and draws afresh after a valid attempt.
    fn content_plan(
        &self,
        talk: &Conversation<'_>,
        turn: u64,
        generated: &Generated,
        target: &Target,
    ) -> Plan {
        let mut plan = self.draw_content(turn, 1);
        for (index, feedback) in talk.feedback.iter().enumerate() {
            let next = u32::try_from(index).map_or(u32::MAX, |i| i.saturating_add(2));
            plan = match plan {
                Plan::Faulty(fault, origin) => {
                    match self.break_value(fault, origin, generated, target, turn) {
                        Some(broken) if !mentions(feedback, &broken.target) => {
                            Plan::Faulty(fault, origin)
                        }
                        _ => Plan::Valid,
                    }
                }
                _ => self.draw_content(turn, next),
            };
        }
        plan
    }

    fn target(&self, request: &MockRequest, talk: &Conversation<'_>) -> Option<Target> {
        let tool = match &request.format {
            ReplyFormat::Tool { name, .. } => Some(name.clone()),
            _ => None,
        };
        if let Some(contract) = talk
            .contract_name()
            .and_then(|name| self.config.contracts.get(name).ok())
        {
            let asks_by_call = tool.is_none()
                && contract.kind() == bridle_core::Kind::Text
                && contract.cards().is_some()
                && crate::kinds::card_mode(&talk.system).is_some();
            let call = request
                .tool(bridle_core::cards::TOOL_NAME)
                .filter(|_| asks_by_call)
                .map(|t| t.name.clone());
            return Some(Target {
                rules: Rules::Contract(contract),
                tool,
                call,
                forced: false,
            });
        }
        let schema = match &request.format {
            ReplyFormat::JsonSchema { schema } | ReplyFormat::Tool { schema, .. } => {
                Some(schema.clone())
            }
            _ => None,
        }
        .or_else(|| talk.prompt_schema())
        .or_else(|| {
            (request.format == ReplyFormat::JsonObject).then(|| {
                json!({"type": "object", "required": ["message"],
                       "properties": {"message": {"type": "string"}}})
            })
        })?;
        let rules = match self.compile(&schema) {
            Some(contract) => Rules::Contract(contract),
            None => Rules::Unchecked(schema),
        };
        Some(Target {
            rules,
            tool,
            call: None,
            forced: false,
        })
    }

    /// The ad-hoc schema compiled as a contract (for validation), cached; `None` when it does
    /// not compile (values are then generated without a check).
    fn compile(&self, schema: &Value) -> Option<Arc<Contract>> {
        let key = schema.to_string();
        let mut cache = self.compiled.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(contract) = cache.get(&key) {
            return Some(Arc::clone(contract));
        }
        match Contract::from_schema("reply", schema.clone()) {
            Ok(contract) => {
                if cache.len() >= MAX_COMPILED {
                    cache.clear();
                }
                let contract = Arc::new(contract);
                cache.insert(key, Arc::clone(&contract));
                Some(contract)
            }
            Err(e) => {
                tracing::warn!(error = %e, "mock: schema does not compile; replies are not checked");
                None
            }
        }
    }

    /// The turn's valid value; `salt` other than 0 draws another one (a later attempt's).
    fn generate(&self, target: &Target, request: &MockRequest, turn: u64, salt: u64) -> Generated {
        let asked = Conversation::read(request).turn_user;
        let hints = Hints {
            model: if request.model.is_empty() {
                Hints::default().model
            } else {
                request.model.clone()
            },
            topic: crate::topic::topic_of(asked),
            ..Hints::default()
        };
        let seed = match salt {
            0 => mix(&[self.config.seed, turn, VALUE]),
            salt => mix(&[self.config.seed, turn, VALUE, salt]),
        };
        let generated = match &target.rules {
            _ if target.call.is_some() => crate::kinds::generate_call(seed),
            Rules::Contract(contract) if contract.kind() == bridle_core::Kind::Markers => {
                let talk = Conversation::read(request);
                let context = crate::kinds::context_from_prompt(&talk.system);
                crate::kinds::generate_markers(contract, &context, &hints, seed)
                    .unwrap_or_else(|| generate_valid(contract, &hints, seed))
            }
            Rules::Contract(contract) if contract.kind() == bridle_core::Kind::Text => {
                let talk = Conversation::read(request);
                crate::kinds::generate_text(contract, &talk.system, seed)
            }
            Rules::Contract(contract) => generate_valid(contract, &hints, seed),
            Rules::Unchecked(schema) => generate(schema, &hints, seed),
        };
        let mut generated = generated;
        if let (SafetyMode::Message, Rules::Contract(contract)) =
            (self.config.safety, &target.rules)
        {
            // The safety assessment follows the message (when the contract still holds).
            let mut assessed = generated.value.clone();
            Assessment::of(asked).apply(&mut assessed);
            if assessed != generated.value && contract.validate(&assessed).is_empty() {
                generated.value = assessed;
            }
        }
        if !generated.valid {
            tracing::warn!(
                tries = generated.tries,
                "mock: no valid value found; answering the last one"
            );
        }
        generated
    }

    /// `fault` applied with the choices of attempt `origin`. For a forced tool call only the
    /// structural faults make sense; any other is replaced by one of them. Otherwise a fault
    /// that finds nothing to break becomes [`Fault::PlainText`].
    fn break_value(
        &self,
        fault: Fault,
        origin: u32,
        generated: &Generated,
        target: &Target,
        turn: u64,
    ) -> Option<Broken> {
        let seed = mix(&[self.config.seed, turn, u64::from(origin), APPLY]);
        if target.call.is_some() {
            // Only the structural faults break a call's arguments; the others leave it valid.
            if !fault.is_structural() {
                return None;
            }
            let mut broken = fault.apply(generated, seed)?;
            let inside = broken.target.strip_prefix("/arguments").unwrap_or("");
            broken.target = format!("{CALL_ARGUMENTS}{inside}");
            return Some(broken);
        }
        let candidates: Vec<Fault> = if fault.is_rule() {
            // Breaks a rule of the contract or nothing: never replaced by another fault.
            vec![fault]
        } else if target.tool.is_some() {
            if fault.is_structural() {
                vec![fault]
            } else {
                let mut structural: Vec<Fault> = self
                    .config
                    .faults
                    .iter()
                    .copied()
                    .filter(Fault::is_structural)
                    .collect();
                if structural.is_empty() {
                    structural = vec![Fault::WrongKey, Fault::MissingRequired, Fault::WrongEnum];
                }
                let start = (seed % structural.len() as u64) as usize;
                structural.rotate_left(start);
                structural
            }
        } else {
            vec![fault, Fault::PlainText]
        };
        let mut broken = candidates.iter().find_map(|f| {
            if f.is_rule() {
                return match &target.rules {
                    Rules::Contract(contract) => {
                        crate::rule_break::apply(contract, generated, *f, seed)
                    }
                    Rules::Unchecked(_) => None,
                };
            }
            let broken = f.apply(generated, seed)?;
            match &target.rules {
                Rules::Contract(contract) => {
                    crate::kinds::reshape(contract, broken, generated, seed)
                }
                Rules::Unchecked(_) => Some(broken),
            }
        })?;
        if let Rules::Contract(contract) = &target.rules {
            refine_target(contract, &mut broken);
        }
        Some(broken)
    }

    /// The content for `plan`: text, tool input, fault and stop reason; sets the target.
    fn realise(
        &self,
        plan: Plan,
        generated: &Generated,
        target: &Target,
        turn: u64,
        info: &mut ReplyInfo,
    ) -> (String, Option<Value>, Option<Fault>, StopReason) {
        let valid = || {
            let text = match &target.rules {
                _ if target.call.is_some() => message_of(&generated.value),
                Rules::Contract(contract) if contract.kind() != bridle_core::Kind::Json => {
                    contract.reply_text(&generated.value)
                }
                Rules::Contract(_) => generated.text(),
                Rules::Unchecked(_) => generated.text(),
            };
            (text, Some(generated.value.clone()), None, StopReason::End)
        };
        match plan {
            Plan::Valid => valid(),
            Plan::Literal { text, .. } => {
                let value = serde_json::from_str(&text).ok();
                (text, value, None, StopReason::End)
            }
            // Answered before a value is made (`MockModel::scripted_call`).
            Plan::Call(_) => valid(),
            Plan::Faulty(fault, origin) => {
                match self.break_value(fault, origin, generated, target, turn) {
                    Some(broken) => {
                        info.target = Some(broken.target);
                        let stop = if broken.fault == Fault::Truncate {
                            StopReason::Length
                        } else {
                            StopReason::End
                        };
                        let text = match (&target.call, &broken.value) {
                            (Some(_), Some(value)) => message_of(value),
                            _ => broken.text,
                        };
                        (text, broken.value, Some(broken.fault), stop)
                    }
                    None => valid(),
                }
            }
        }
    }
}

/// The text of a `{"message", "arguments"}` call reply.
fn message_of(value: &Value) -> String {
    value
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

fn http(status: u16, retry_after: Option<u64>, fault: Fault, info: ReplyInfo) -> MockReply {
    let message = match status {
        429 => {
            "Rate limit reached for requests (mock fault). Retry after the delay in Retry-After."
        }
        _ => "The server had an error while processing your request (mock fault).",
    };
    MockReply::Http {
        status,
        retry_after,
        message: message.to_owned(),
        fault: Some(fault),
        info,
    }
}

/// Points the target at the place Bridle's check reports: the deepest reported ancestor of the
/// broken place (a `oneOf` reports at its parent), the place itself, or the first violation.
fn refine_target(contract: &Contract, broken: &mut Broken) {
    let checked = contract.check(&broken.text, &Context::new());
    if checked.violations.is_empty() {
        return;
    }
    let paths: Vec<&str> = checked.violations.iter().map(|v| v.path.as_str()).collect();
    let target = broken.target.as_str();
    if paths.iter().any(|p| *p == target || is_under(p, target)) {
        return;
    }
    let refined = paths
        .iter()
        .filter(|p| is_under(target, p))
        .max_by_key(|p| p.len())
        .or_else(|| paths.first());
    if let Some(refined) = refined {
        broken.target = (*refined).to_owned();
    }
}

/// True when `pointer` is strictly inside `ancestor`.
fn is_under(pointer: &str, ancestor: &str) -> bool {
    pointer.len() > ancestor.len()
        && pointer.starts_with(ancestor)
        && pointer.as_bytes().get(ancestor.len()) == Some(&b'/')
}

/// True when `feedback` names `target` (or something inside it); any feedback names the root.
/// Bridle's feedback names JSON pointers (`/safety/danger_level`); another loop's validation
/// report names Pydantic locations, each on a line of its own (`safety.danger_level`).
pub(crate) fn mentions(feedback: &str, target: &str) -> bool {
    if target.is_empty() {
        return true;
    }
    let pointer = feedback.match_indices(target).any(|(at, _)| {
        let after = feedback[at + target.len()..].chars().next();
        !matches!(after, Some(c) if c.is_alphanumeric() || c == '_' || c == '-')
    });
    let dotted = target.trim_start_matches('/').replace('/', ".");
    pointer
        || feedback.lines().map(str::trim).any(|line| {
            line.strip_prefix(dotted.as_str())
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
        })
}

#[cfg(test)]
mod tests;
