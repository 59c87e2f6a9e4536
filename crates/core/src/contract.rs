//! [`Contract`]: a named definition of a valid reply, and [`Checked`], the result of checking one.
//!
//! A contract gives three things: [`Contract::instructions`] (the text for the system prompt),
//! [`Contract::check`] (raw reply → repaired, parsed, coerced, validated value with violations
//! and repairs) and [`Contract::feedback`] (the bounded retry message built from a failed check).
//! [`Contract::tools`] says which function tools to offer the model, and
//! [`Contract::check_reply`] checks a reply together with the tool calls in it.
//! All are pure: no I/O, no clock, same input → same output.

use crate::coerce::Coercion;
use crate::context::Context;
use crate::error::ContractError;
use crate::fallback::{Fallback, FallbackReply};
use crate::manifest::DEFAULT_MAX_BYTES;
use crate::report::{Repair, Violation};
use crate::rules::DeclaredRule;
use crate::schema::Schema;
use crate::tool_call::ToolCall;
use serde::Serialize;
use serde_json::Value;

/// How a contract's replies are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A JSON document (lenient repair, then JSON parse).
    Json,
    /// One XML document, read safely into JSON as the schema's shape says (see [`crate::xml`]).
    Xml,
    /// Plain text with marker sections (`SUGGESTED_VALUES:`, payload markers) read into
    /// `{message, suggested_values, suggested_actions, payload}` (see [`crate::markers`]).
    Markers,
    /// Plain text read into `{message}`, with question cards (see [`crate::cards`]) when the
    /// manifest has `[cards]`: `{message, question_cards}`.
    Text,
}

impl Kind {
    /// The manifest name of the kind.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Json => "json",
            Self::Xml => "xml",
            Self::Markers => "markers",
            Self::Text => "text",
        }
    }
}

/// Size limits a contract enforces on replies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest reply accepted, in bytes.
    pub max_bytes: usize,
}

/// A loaded, validated contract.
#[derive(Debug)]
pub struct Contract {
    pub(crate) name: String,
    pub(crate) version: semver::Version,
    pub(crate) kind: Kind,
    pub(crate) description: String,
    pub(crate) origin: String,
    pub(crate) schema: Schema,
    pub(crate) rules: Vec<DeclaredRule>,
    pub(crate) coercions: Vec<Coercion>,
    pub(crate) example: Option<Value>,
    /// Schema and example as compact JSON text in the author's key order, for the prompt.
    pub(crate) schema_text: String,
    pub(crate) example_text: Option<String>,
    pub(crate) fallback: Option<Fallback>,
    pub(crate) guidance: String,
    pub(crate) limits: Limits,
    /// For the `xml` kind: the root element and the shape the schema gives it.
    pub(crate) xml: Option<XmlSpec>,
    /// For the `markers` kind: the registered payload types, pages and actions.
    pub(crate) markers: Option<crate::markers::MarkerSpec>,
    /// What the conversation keeps from valid replies.
    pub(crate) state: Option<StateKind>,
    /// For the `text` kind: question-card detection, when the manifest has `[cards]`.
    pub(crate) cards: Option<CardSpec>,
    /// The schema indexed for the streaming reader, built on first use.
    pub(crate) stream_index: std::sync::OnceLock<std::sync::Arc<crate::stream::SchemaIndex>>,
    /// The instructions of a `json` or `xml` contract (they depend on nothing else), rendered
    /// on first use.
    pub(crate) instructions: std::sync::OnceLock<String>,
    /// What the contract's author should know, found at load (see [`Contract::warnings`]).
    pub(crate) warnings: Vec<String>,
}

/// The warnings of `schema` (compiled from `file`), each naming the file.
pub(crate) fn warnings_of(file: &str, schema: &Schema) -> Vec<String> {
    schema
        .warnings()
        .iter()
        .map(|w| format!("{file}: {w}"))
        .collect()
}

/// `[cards]` of a `text` contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CardSpec {
    /// Offer the `present_question` tool to providers with tool use (spec/04 option B).
    pub tool: bool,
}

/// What a conversation keeps from a contract's valid replies (`[state]` in the manifest).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StateKind {
    /// The topic state of spec/05 ([`crate::xml::topic::TopicState`]) under the state's
    /// `topic` key; each user message is sent as an `<llmQuery>` built from it.
    Topic,
}

/// The key of the conversation state that holds the topic state.
const TOPIC_KEY: &str = "topic";

/// How an `xml` contract's documents are read.
#[derive(Debug, Clone)]
pub struct XmlSpec {
    /// The root element's name.
    pub root: String,
    /// What the schema says about each element.
    pub shape: crate::xml::Shape,
}

/// The outcome of checking one reply.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Checked {
    /// The parsed (repaired, coerced) value, when the reply could be read at all — also when it
    /// then broke the schema or a rule.
    pub value: Option<Value>,
    /// Every way the reply breaks the contract; empty means valid.
    pub violations: Vec<Violation>,
    /// Every change made to read it.
    pub repairs: Vec<Repair>,
}

impl Checked {
    /// True when the reply meets the contract (possibly after repairs).
    pub fn is_valid(&self) -> bool {
        self.violations.is_empty() && self.value.is_some()
    }

    pub(crate) fn rejected(violation: Violation, repairs: Vec<Repair>) -> Self {
        Self {
            value: None,
            violations: vec![violation],
            repairs,
        }
    }
}

impl Contract {
    /// A contract made from an ad-hoc JSON Schema (`bridle check --schema`, `response_format`):
    /// no rules, no coercions, no example.
    pub fn from_schema(name: &str, schema: Value) -> Result<Self, ContractError> {
        let text = schema.to_string();
        Self::from_parsed_schema(name, schema, text)
    }

    /// Like [`Contract::from_schema`], from the schema's JSON text (its key order is kept in the
    /// prompt).
    pub fn from_schema_text(name: &str, text: &str) -> Result<Self, ContractError> {
        let schema: Value = serde_json::from_str(text).map_err(|e| ContractError::NotJson {
            origin: format!("schema:{name}"),
            file: name.to_owned(),
            message: e.to_string(),
        })?;
        Self::from_parsed_schema(name, schema, crate::instructions::minify(text))
    }

    fn from_parsed_schema(
        name: &str,
        schema: Value,
        schema_text: String,
    ) -> Result<Self, ContractError> {
        let schema = Schema::compile(schema, &[]).map_err(|source| ContractError::Schema {
            origin: format!("schema:{name}"),
            file: name.to_owned(),
            source,
        })?;
        let warnings = warnings_of("schema", &schema);
        Ok(Self {
            name: name.to_owned(),
            version: semver::Version::new(0, 0, 0),
            kind: Kind::Json,
            description: String::new(),
            origin: format!("schema:{name}"),
            schema,
            rules: Vec::new(),
            coercions: Vec::new(),
            example: None,
            schema_text,
            example_text: None,
            fallback: None,
            guidance: String::new(),
            limits: Limits {
                max_bytes: DEFAULT_MAX_BYTES,
            },
            xml: None,
            markers: None,
            state: None,
            cards: None,
            stream_index: std::sync::OnceLock::new(),
            instructions: std::sync::OnceLock::new(),
            warnings,
        })
    }

    /// What the contract's author should know, found at load and not worth refusing it for:
    /// each a sentence naming the file and place, today a `format` Bridle does not know (and
    /// so does not check). At most 20 per schema file. The CLI prints them on stderr and
    /// `bridle serve` logs them at start-up.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// For an `xml` contract, the root element's name.
    pub fn xml_root(&self) -> Option<&str> {
        self.xml.as_ref().map(|x| x.root.as_str())
    }

    /// For a `markers` contract, its payload types, pages and actions.
    pub fn markers(&self) -> Option<&crate::markers::MarkerSpec> {
        self.markers.as_ref()
    }

    /// The contract's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The contract's semantic version.
    pub fn version(&self) -> &semver::Version {
        &self.version
    }

    /// How replies are read.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// One-line description from the manifest.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// Where the contract was loaded from (`builtin:NAME`, a directory, `schema:NAME`).
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The compiled JSON Schema.
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// The declared rules.
    pub fn rules(&self) -> &[DeclaredRule] {
        &self.rules
    }

    /// The example reply, if the manifest has one.
    pub fn example(&self) -> Option<&Value> {
        self.example.as_ref()
    }

    /// Size limits.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Validates an already-parsed value: schema, then declared rules (expression rules see an
    /// empty context).
    pub fn validate(&self, value: &Value) -> Vec<Violation> {
        self.validate_in(value, &Context::new())
    }

    /// Validates an already-parsed value under the turn's context: schema, then declared rules.
    pub fn validate_in(&self, value: &Value, context: &Context) -> Vec<Violation> {
        let mut violations = if self.schema.is_valid(value) {
            Vec::new()
        } else {
            self.schema.violations(value)
        };
        let inputs = crate::expr::ExprInputs::new(value, context);
        for rule in &self.rules {
            rule.check_in(&inputs, &mut violations);
        }
        if let Some(markers) = &self.markers {
            markers.validate_payload(value, &mut violations);
        }
        violations
    }

    /// Checks a raw reply: size and emptiness, repair, parse, coercions, schema, rules.
    /// The same as [`Contract::check_reply`] with no tool calls.
    pub fn check(&self, raw: &str, context: &Context) -> Checked {
        crate::check::check(self, raw, context)
    }

    /// Checks a reply made of text and the tool calls the model made. When the contract offers
    /// a tool in `context` (see [`Contract::tools`]), each `present_question` call becomes a
    /// question card after those found in the text, bad arguments are violations at
    /// `/tool_calls/K/arguments…`, and a call to another tool is an `unknown_tool` violation;
    /// the text may then be empty. Otherwise calls are ignored and `raw` is checked alone
    /// (see [`crate::tool_call`]).
    pub fn check_reply(&self, raw: &str, tool_calls: &[ToolCall], context: &Context) -> Checked {
        crate::tool_call::check_reply(self, raw, tool_calls, context)
    }

    /// The function tools to offer the model in `context`, as OpenAI function tool bodies
    /// (`{"type": "function", "function": {name, description, parameters}}`): the
    /// `present_question` tool for a `text` contract with `[cards] tool = true` in the
    /// discovery and clarification modes; none otherwise.
    pub fn tools(&self, context: &Context) -> Vec<Value> {
        match crate::tool_call::offering(self, context) {
            Some(_) => vec![crate::cards::present_question_tool()],
            None => Vec::new(),
        }
    }

    /// Checks a raw reply given as bytes; bytes that are not UTF-8 are a violation.
    pub fn check_bytes(&self, raw: &[u8], context: &Context) -> Checked {
        match std::str::from_utf8(raw) {
            Ok(text) => self.check(text, context),
            Err(e) => Checked::rejected(
                Violation::new(
                    "",
                    crate::Rule::Encoding,
                    format!(
                        "the reply is not valid UTF-8 text (invalid byte at offset {})",
                        e.valid_up_to()
                    ),
                ),
                Vec::new(),
            ),
        }
    }

    /// The result for a reply of `size` bytes that is over the limit, without reading it.
    pub fn too_large(&self, size: u64) -> Checked {
        Checked::rejected(
            crate::check::too_large(size, self.limits.max_bytes),
            Vec::new(),
        )
    }

    /// The text for the system prompt: the schema, the rules, the guidance and one example.
    pub fn instructions(&self, context: &Context) -> String {
        crate::instructions::render(self, context, &[])
    }

    /// Like [`Contract::instructions`], knowing the values of the conversation's earlier valid
    /// replies (oldest first): a `markers` contract lists the payloads among them.
    pub fn instructions_with_history(&self, context: &Context, history: &[Value]) -> String {
        crate::instructions::render(self, context, history)
    }

    /// For a `text` contract with question cards, how they are produced.
    pub fn cards(&self) -> Option<CardSpec> {
        self.cards
    }

    /// What the conversation keeps from valid replies, if anything.
    pub fn state_kind(&self) -> Option<StateKind> {
        self.state
    }

    /// The user's `message` as sent to the model: unchanged, or — for a contract that keeps
    /// topic state — the `<llmQuery>` carrying it with the conversation's topic context. A
    /// message that already is an `<llmQuery>` (an application that builds its own) is sent as
    /// written when it follows spec 05's query rules, and refused when it does not — never
    /// wrapped in a second query.
    pub fn user_prompt(
        &self,
        message: &str,
        state: &Value,
        conversation_id: &str,
        message_count: u64,
    ) -> Result<String, crate::xml::query::QueryError> {
        match self.state {
            Some(StateKind::Topic) if is_own_query(message) => {
                match crate::xml::query_check::check(message).first() {
                    None => Ok(message.to_owned()),
                    Some(v) => Err(crate::xml::query::QueryError::InvalidQuery(
                        own_query_fault(v),
                    )),
                }
            }
            Some(StateKind::Topic) => crate::xml::topic::TopicState::from_value(&state[TOPIC_KEY])
                .query(message, conversation_id, message_count),
            None => Ok(message.to_owned()),
        }
    }

    /// What the system prompt should add from the conversation's state (the running summary of
    /// a topic conversation); `None` when there is nothing.
    pub fn state_note(&self, state: &Value) -> Option<String> {
        match self.state {
            Some(StateKind::Topic) => {
                let topic = crate::xml::topic::TopicState::from_value(&state[TOPIC_KEY]);
                (!topic.summary.is_empty())
                    .then(|| format!("Summary of the conversation so far: {}", topic.summary))
            }
            None => None,
        }
    }

    /// The conversation's state after the valid reply `value`; `None` when the contract keeps
    /// no state.
    pub fn next_state(&self, state: &Value, value: &Value) -> Option<Value> {
        match self.state? {
            StateKind::Topic => {
                let mut topic = crate::xml::topic::TopicState::from_value(&state[TOPIC_KEY]);
                topic.update(value);
                let mut next = match state {
                    Value::Object(map) => map.clone(),
                    _ => serde_json::Map::new(),
                };
                next.insert(TOPIC_KEY.to_owned(), topic.to_value());
                Some(Value::Object(next))
            }
        }
    }

    /// The reply text a model would write for `value` (a value of this contract): JSON text,
    /// an XML document, or the message with its marker sections. Used to send valid replies
    /// back as history, and by the mock model.
    pub fn reply_text(&self, value: &Value) -> String {
        match (self.kind, &self.xml, &self.markers) {
            (Kind::Xml, Some(xml), _) => crate::xml::write(value, &xml.root),
            (Kind::Markers, _, Some(markers)) => crate::markers::write(value, markers),
            (Kind::Text, _, _) => crate::cards::write(value),
            _ => value.to_string(),
        }
    }

    /// The reply to give when the attempts run out, carrying over what the manifest's
    /// `[fallback]` names (the most severe safety assessment, …) from `attempts` — the parsed
    /// values of the attempts that could be read. `None` when the contract has no fallback.
    /// The result always meets the contract.
    pub fn fallback(&self, attempts: &[&Value]) -> Option<Value> {
        let fallback = self.fallback.as_ref()?;
        let valid = |v: &Value| self.validate(v).is_empty();
        let base = match &fallback.reply {
            FallbackReply::Template(value) => value.clone(),
            FallbackReply::LastText { sentence } => {
                let cards = self.cards.is_some();
                attempts
                    .iter()
                    .rev()
                    .filter_map(|a| {
                        crate::fallback::plain_text(a, self.kind, self.markers.as_ref())
                    })
                    .map(|text| crate::fallback::plain_reply(&text, self.kind, cards))
                    .find(|reply| valid(reply))
                    .unwrap_or_else(|| crate::fallback::plain_reply(sentence, self.kind, cards))
            }
        };
        Some(fallback.build(base, attempts, &self.rules, valid))
    }

    /// True when the contract has a fallback reply.
    pub fn has_fallback(&self) -> bool {
        self.fallback.is_some()
    }

    /// The retry message for a failed check (empty for a valid one).
    pub fn feedback(&self, checked: &Checked) -> String {
        crate::feedback::render(self, checked)
    }
}

/// Whether a user's message is an `<llmQuery>` document the application built itself.
fn is_own_query(message: &str) -> bool {
    message
        .trim_start()
        .strip_prefix('<')
        .is_some_and(|rest| rest.starts_with(crate::xml::query_check::ROOT))
}

/// The first rule an application's own query breaks, in at most 200 characters.
fn own_query_fault(violation: &Violation) -> String {
    let text = if violation.path.is_empty() {
        violation.message.clone()
    } else {
        format!("{} (at {})", violation.message, violation.path)
    };
    text.chars().take(200).collect()
}
