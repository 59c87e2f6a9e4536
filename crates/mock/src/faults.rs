//! [`Fault`]: the typed ways the mock model misbehaves, and [`Fault::apply`], which breaks a
//! generated value the way the fault says and reports the text and the **target** — the JSON
//! pointer of what it broke (`""` for a whole-reply fault), which is where Bridle's check will
//! report it and what good retry feedback names.
//!
//! Content faults change the reply: three that Bridle repairs without a retry (`fence`,
//! `prose`, `trailing_comma`), three that break the schema (`wrong_key`, `missing_required`,
//! `wrong_enum` — the only ones that still make sense for a forced tool call's input), and
//! `truncate` and `plain_text`. Two rule faults keep the reply valid for the schema and break one
//! of the contract's declared rules ([`crate::rule_break`]): `broken_rule` (a `unique`,
//! `less_than` or `implies` rule) and `broken_expr` (an expression rule); they are drawn only
//! when asked for, never in the default mix. Transport faults replace, delay or spoil the answer (`http500`,
//! `http429`, `slow`, `broken_stream`, `reset`, `invalid_utf8`, `garbage`).

use crate::generate::Generated;
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::{RngExt, SeedableRng};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;
use std::str::FromStr;

/// A string no generated value contains, marking where [`Fault::Truncate`] cuts.
const CUT_MARK: &str = "BRIDLE_MOCK_CUT_MARK_7f3a";

/// One way the mock model misbehaves. Serialised as `{"kind": "wrong_key"}`,
/// `{"kind": "http429", "retry_after_secs": 2}`, `{"kind": "slow", "ms": 500}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "RawFault", into = "RawFault")]
pub enum Fault {
    /// The JSON inside a ```` ```json ```` code fence (repaired, no retry).
    Fence,
    /// The JSON between sentences of prose (repaired, no retry).
    Prose,
    /// A trailing comma before the last closing bracket (repaired, no retry).
    TrailingComma,
    /// A required key of an object renamed (`text` → `label`), preferably inside an array.
    WrongKey,
    /// A required property dropped.
    MissingRequired,
    /// An `enum` (or `const`) value replaced by a plausible wrong word (`warning` → `caution`).
    WrongEnum,
    /// The reply cut off inside a string value.
    Truncate,
    /// Prose with no JSON at all.
    PlainText,
    /// Valid for the schema, but one of the contract's `unique`, `less_than` or `implies` rules
    /// broken (nothing, when the contract has none the mock can break).
    BrokenRule,
    /// Valid for the schema, but one of the contract's expression rules broken (nothing, when
    /// the contract has none the mock can break).
    BrokenExpr,
    /// HTTP 500 with an error body.
    Http500,
    /// HTTP 429 with `Retry-After`.
    Http429 {
        /// Seconds sent in `Retry-After` (default 1).
        retry_after_secs: u64,
    },
    /// The answer comes `ms` milliseconds late.
    Slow {
        /// Delay in milliseconds.
        ms: u64,
    },
    /// A stream cut off mid-way, without its final events (HTTP 500 when not streaming).
    BrokenStream,
    /// The connection closed without any HTTP response (no status line, no headers).
    Reset,
    /// A 200 answer whose body is not valid UTF-8: bytes that are no character inside the
    /// reply's content (streamed: inside one content delta's frame).
    InvalidUtf8,
    /// A 200 answer whose body is not what it says: an HTML error page sent as
    /// `application/json` (streamed: an SSE frame whose data is HTML, not JSON).
    Garbage,
}

/// The wire form of a [`Fault`]: `kind` plus the parameters of the kinds that have one, and
/// nothing else (a misspelt parameter in a script is an error, not silently ignored).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFault {
    kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    retry_after_secs: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ms: Option<u64>,
}

impl TryFrom<RawFault> for Fault {
    type Error = String;

    fn try_from(raw: RawFault) -> Result<Self, Self::Error> {
        let fault = match (raw.kind.as_str(), raw.retry_after_secs, raw.ms) {
            ("http429", secs, None) => Self::Http429 {
                retry_after_secs: secs.unwrap_or(1),
            },
            ("slow", None, Some(ms)) => Self::Slow { ms },
            ("slow", _, None) => return Err("fault \"slow\" needs \"ms\"".into()),
            (kind, None, None) => kind.parse().map_err(|e: UnknownFault| e.to_string())?,
            (kind, _, _) => {
                return Err(format!("fault {kind:?} takes no such parameter"));
            }
        };
        Ok(fault)
    }
}

impl From<Fault> for RawFault {
    fn from(fault: Fault) -> Self {
        let (retry_after_secs, ms) = match fault {
            Fault::Http429 { retry_after_secs } => (Some(retry_after_secs), None),
            Fault::Slow { ms } => (None, Some(ms)),
            _ => (None, None),
        };
        Self {
            kind: fault.name().to_owned(),
            retry_after_secs,
            ms,
        }
    }
}

/// A fault applied to a value: the reply text, the broken value (for the faults that keep it
/// JSON) and the pointer of what was broken.
#[derive(Debug, Clone, PartialEq)]
pub struct Broken {
    /// The fault that was applied.
    pub fault: Fault,
    /// The reply text.
    pub text: String,
    /// The broken value, for [`Fault::is_structural`] faults (a forced tool call's input).
    pub value: Option<Value>,
    /// JSON pointer of the broken place; `""` when the whole reply is at fault.
    pub target: String,
}

/// A fault name that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown fault {0:?}: expected fence, prose, trailing_comma, wrong_key, missing_required, \
     wrong_enum, truncate, plain_text, broken_rule, broken_expr, http500, http429[:SECS], slow[:MS], broken_stream, reset, \
     invalid_utf8 or garbage"
)]
pub struct UnknownFault(pub String);

impl Fault {
    /// Every content fault.
    pub const CONTENT: [Fault; 8] = [
        Self::Fence,
        Self::Prose,
        Self::TrailingComma,
        Self::WrongKey,
        Self::MissingRequired,
        Self::WrongEnum,
        Self::Truncate,
        Self::PlainText,
    ];

    /// The faults that break a declared rule of the contract (drawn only when asked for).
    pub const RULES: [Fault; 2] = [Self::BrokenRule, Self::BrokenExpr];

    /// The default fault mix: every content fault, HTTP 500 and HTTP 429.
    pub fn default_mix() -> Vec<Fault> {
        let mut mix = Self::CONTENT.to_vec();
        mix.push(Self::Http500);
        mix.push(Self::Http429 {
            retry_after_secs: 1,
        });
        mix
    }

    /// The snake_case name (`wrong_key`, `http429`).
    pub fn name(&self) -> &'static str {
        match self {
            Self::Fence => "fence",
            Self::Prose => "prose",
            Self::TrailingComma => "trailing_comma",
            Self::WrongKey => "wrong_key",
            Self::MissingRequired => "missing_required",
            Self::WrongEnum => "wrong_enum",
            Self::Truncate => "truncate",
            Self::PlainText => "plain_text",
            Self::BrokenRule => "broken_rule",
            Self::BrokenExpr => "broken_expr",
            Self::Http500 => "http500",
            Self::Http429 { .. } => "http429",
            Self::Slow { .. } => "slow",
            Self::BrokenStream => "broken_stream",
            Self::Reset => "reset",
            Self::InvalidUtf8 => "invalid_utf8",
            Self::Garbage => "garbage",
        }
    }

    /// Every transport fault that takes no parameter.
    pub const PLAIN_TRANSPORT: [Fault; 5] = [
        Self::Http500,
        Self::BrokenStream,
        Self::Reset,
        Self::InvalidUtf8,
        Self::Garbage,
    ];

    /// True for faults of the transport, not of the reply text (HTTP errors, delay, cut stream,
    /// closed connection, unreadable body).
    pub fn is_transport(&self) -> bool {
        !Self::CONTENT.contains(self) && !self.is_rule()
    }

    /// True for the faults that break a declared rule of the contract ([`Fault::RULES`]).
    pub fn is_rule(&self) -> bool {
        Self::RULES.contains(self)
    }

    /// True for the faults Bridle repairs without a retry.
    pub fn is_repairable(&self) -> bool {
        matches!(self, Self::Fence | Self::Prose | Self::TrailingComma)
    }

    /// True for the faults that break the value but keep it JSON (usable on a tool's input).
    pub fn is_structural(&self) -> bool {
        matches!(
            self,
            Self::WrongKey | Self::MissingRequired | Self::WrongEnum
        )
    }

    /// Breaks `generated` the way this content fault says, choosing where with `seed`.
    /// `None` for a transport fault, for a rule fault (it needs the contract:
    /// [`crate::rule_break::apply`]), or when the value offers nothing to break (no required
    /// key, no enum, no string to cut, a scalar root for a trailing comma).
    pub fn apply(&self, generated: &Generated, seed: u64) -> Option<Broken> {
        let mut rng = StdRng::seed_from_u64(seed);
        let value = &generated.value;
        let whole = |text: String| Broken {
            fault: *self,
            text,
            value: None,
            target: String::new(),
        };
        let structural = |broken: Value, target: String| Broken {
            fault: *self,
            text: broken.to_string(),
            value: Some(broken),
            target,
        };
        match self {
            Self::Fence => Some(whole(format!("```json\n{}\n```", pretty(value)))),
            Self::Prose => Some(whole(format!(
                "Here is the reply you asked for:\n\n{value}\n\nLet me know if you would like any changes."
            ))),
            Self::TrailingComma => {
                if !matches!(value, Value::Object(m) if !m.is_empty())
                    && !matches!(value, Value::Array(a) if !a.is_empty())
                {
                    return None;
                }
                let mut text = pretty(value);
                let at = text.rfind('\n')?;
                text.insert(at, ',');
                Some(whole(text))
            }
            Self::WrongKey | Self::MissingRequired => {
                let (pointer, key) = pick_required(generated, &mut rng, *self == Self::WrongKey)?;
                let mut broken = value.clone();
                let Some(Value::Object(object)) = broken.pointer_mut(&pointer) else {
                    return None;
                };
                let member = object.remove(&key)?;
                if *self == Self::WrongKey {
                    let renamed = wrong_key(&key, object);
                    object.insert(renamed, member);
                }
                Some(structural(broken, pointer))
            }
            Self::WrongEnum => {
                let candidates: Vec<(&str, Value)> = generated
                    .spots
                    .enums
                    .iter()
                    .filter_map(|spot| {
                        let current = value.pointer(&spot.pointer)?;
                        if !spot.allowed.contains(current) {
                            return None;
                        }
                        let wrong = wrong_word(current, &spot.allowed)?;
                        Some((spot.pointer.as_str(), wrong))
                    })
                    .collect();
                let (pointer, wrong) = candidates.choose(&mut rng)?.clone();
                let mut broken = value.clone();
                *broken.pointer_mut(pointer)? = wrong;
                Some(structural(broken, pointer.to_owned()))
            }
            Self::Truncate => truncate(value, &mut rng).map(|(text, target)| Broken {
                fault: *self,
                text,
                value: None,
                target,
            }),
            Self::PlainText => Some(whole(plain_text(value, &mut rng))),
            Self::BrokenRule
            | Self::BrokenExpr
            | Self::Http500
            | Self::Http429 { .. }
            | Self::Slow { .. }
            | Self::BrokenStream
            | Self::Reset
            | Self::InvalidUtf8
            | Self::Garbage => None,
        }
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Http429 { retry_after_secs } => write!(f, "http429:{retry_after_secs}"),
            Self::Slow { ms } => write!(f, "slow:{ms}"),
            other => f.write_str(other.name()),
        }
    }
}

impl FromStr for Fault {
    type Err = UnknownFault;

    /// Reads `wrong_key`, `http429`, `http429:3` (seconds), `slow:500` (milliseconds), …
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let unknown = || UnknownFault(s.to_owned());
        let (name, arg) = match s.trim().split_once(':') {
            Some((name, arg)) => (name, Some(arg.parse::<u64>().map_err(|_| unknown())?)),
            None => (s.trim(), None),
        };
        let plain = Self::CONTENT
            .into_iter()
            .chain(Self::RULES)
            .chain(Self::PLAIN_TRANSPORT)
            .find(|f| f.name() == name);
        match (plain, name, arg) {
            (Some(fault), _, None) => Ok(fault),
            (None, "http429", arg) => Ok(Self::Http429 {
                retry_after_secs: arg.unwrap_or(1),
            }),
            (None, "slow", arg) => Ok(Self::Slow {
                ms: arg.unwrap_or(1000),
            }),
            _ => Err(unknown()),
        }
    }
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
}

/// An object and one of its required keys present in it; objects inside arrays first when
/// `prefer_array_items`.
fn pick_required(
    generated: &Generated,
    rng: &mut StdRng,
    prefer_array_items: bool,
) -> Option<(String, String)> {
    let usable: Vec<(&str, Vec<&String>, bool)> = generated
        .spots
        .objects
        .iter()
        .filter_map(|spot| {
            let object = generated.value.pointer(&spot.pointer)?.as_object()?;
            let keys: Vec<&String> = spot
                .required
                .iter()
                .filter(|k| object.contains_key(*k))
                .collect();
            (!keys.is_empty()).then_some((spot.pointer.as_str(), keys, spot.in_array))
        })
        .collect();
    let in_arrays: Vec<_> = usable.iter().filter(|(_, _, a)| *a).collect();
    let (pointer, keys, _) = if prefer_array_items && !in_arrays.is_empty() {
        *in_arrays.choose(rng)?
    } else {
        usable.choose(rng)?
    };
    let key = keys.choose(rng)?;
    Some(((*pointer).to_owned(), (*key).clone()))
}

/// A plausible wrong name for `key`, not already used in `object`.
fn wrong_key(key: &str, object: &serde_json::Map<String, Value>) -> String {
    let known = match key {
        "text" => Some("label"),
        "label" => Some("text"),
        "content" => Some("body"),
        "title" => Some("name"),
        "name" => Some("title"),
        "type" => Some("kind"),
        "id" => Some("identifier"),
        "url" => Some("link"),
        "value" => Some("val"),
        "message" => Some("msg"),
        "description" => Some("desc"),
        "options" => Some("choices"),
        "fields" => Some("inputs"),
        "model" => Some("model_name"),
        _ => None,
    };
    let base = match known {
        Some(name) => name.to_owned(),
        None if key.contains('_') => camel(key),
        None if key.chars().any(char::is_uppercase) => crate::words::snake(key),
        None => match key.strip_suffix('s') {
            Some(singular) if !singular.is_empty() => singular.to_owned(),
            _ => format!("{key}s"),
        },
    };
    let mut name = base.clone();
    let mut n = 1;
    while object.contains_key(&name) || name == key {
        name = format!("{base}_{n}");
        n += 1;
    }
    name
}

/// `danger_level` → `dangerLevel`.
fn camel(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    let mut upper = false;
    for c in key.chars() {
        if c == '_' {
            upper = !out.is_empty();
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// A plausible wrong word in place of `current`, not among `allowed`.
fn wrong_word(current: &Value, allowed: &[Value]) -> Option<Value> {
    let current = match current {
        Value::Null => return Some(Value::String("none".into())).filter(|v| !allowed.contains(v)),
        Value::String(s) => s.as_str(),
        _ => return None,
    };
    let known = match current {
        "text" => "paragraph",
        "heading" => "title",
        "info" => "note",
        "warning" => "caution",
        "error" => "danger",
        "success" => "ok",
        "code" => "snippet",
        "critical" => "high",
        "emergency" => "urgent",
        "image" => "picture",
        "video" => "movie",
        "audio" => "sound",
        "radio" => "single_choice",
        "checkbox" => "multiple_choice",
        "select" => "dropdown",
        "textarea" => "long_text",
        "number" => "numeric",
        "scale" => "slider",
        "send_message" => "send",
        "navigate" => "link",
        "external_link" => "url",
        "default" => "normal",
        "bold" => "strong",
        "italic" => "emphasis",
        "quote" => "blockquote",
        "response" => "reply",
        _ => "",
    };
    let mut capitalised = current.chars();
    let capitalised: String = capitalised
        .next()
        .map(|c| c.to_uppercase().chain(capitalised).collect())
        .unwrap_or_default();
    [
        known.to_owned(),
        capitalised,
        format!("{current}_other"),
        "other".to_owned(),
    ]
    .into_iter()
    .map(Value::String)
    .find(|v| v.as_str().is_some_and(|s| !s.is_empty()) && !allowed.contains(v))
}

/// The value's compact JSON cut off inside one of its strings (a long one, preferably).
fn truncate(value: &Value, rng: &mut StdRng) -> Option<(String, String)> {
    let mut strings = Vec::new();
    collect_strings(value, &mut String::new(), &mut strings, 0);
    let long: Vec<&(String, String)> = strings.iter().filter(|(_, s)| s.len() >= 8).collect();
    let (pointer, original) = if long.is_empty() {
        strings
            .iter()
            .filter(|(_, s)| !s.is_empty())
            .collect::<Vec<_>>()
            .choose(rng)
            .copied()?
    } else {
        long.choose(rng).copied()?
    };
    let mut marked = value.clone();
    *marked.pointer_mut(pointer)? = Value::String(CUT_MARK.to_owned());
    let text = marked.to_string();
    let at = text.find(&format!("\"{CUT_MARK}\""))?;
    let escaped = Value::String(original.clone()).to_string();
    let inner = escaped
        .get(1..escaped.len().saturating_sub(1))
        .unwrap_or_default();
    let keep = cut_point(inner, rng);
    Some((
        format!("{}\"{}", &text[..at], &inner[..keep]),
        pointer.clone(),
    ))
}

/// Where to cut escaped string text: after a space in its middle part when there is one,
/// never inside an escape sequence.
fn cut_point(inner: &str, rng: &mut StdRng) -> usize {
    let len = inner.len();
    let mut wanted = rng.random_range(len * 3 / 10..=len * 6 / 10).min(len);
    while !inner.is_char_boundary(wanted) {
        wanted -= 1;
    }
    let mut at = inner[..wanted]
        .rfind(' ')
        .filter(|i| *i > len / 5)
        .map_or(wanted, |i| i + 1);
    let backslashes = inner[..at]
        .bytes()
        .rev()
        .take_while(|b| *b == b'\\')
        .count();
    if backslashes % 2 == 1 {
        at -= 1;
    }
    at
}

fn collect_strings(
    value: &Value,
    pointer: &mut String,
    out: &mut Vec<(String, String)>,
    depth: usize,
) {
    if depth > 64 {
        return;
    }
    let mut visit = |token: &str, child: &Value, out: &mut Vec<(String, String)>| {
        let mark = pointer.len();
        pointer.push('/');
        pointer.push_str(&token.replace('~', "~0").replace('/', "~1"));
        collect_strings(child, pointer, out, depth + 1);
        pointer.truncate(mark);
    };
    match value {
        Value::String(s) => out.push((pointer.clone(), s.clone())),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                visit(&i.to_string(), item, out);
            }
        }
        Value::Object(map) => {
            for (key, child) in map {
                visit(key, child, out);
            }
        }
        _ => {}
    }
}

/// A conversational answer with no JSON in it, reusing the value's sentences.
fn plain_text(value: &Value, rng: &mut StdRng) -> String {
    let mut strings = Vec::new();
    collect_strings(value, &mut String::new(), &mut strings, 0);
    let mut sentences: Vec<String> = strings
        .into_iter()
        .map(|(_, s)| s.replace(['{', '}', '[', ']'], ""))
        .filter(|s| s.contains(' ') && s.ends_with(['.', '!', '?']))
        .take(2)
        .collect();
    if sentences.is_empty() {
        sentences.push(crate::words::sentence(rng).to_owned());
    }
    format!("Sure, happy to help with that. {}", sentences.join(" "))
}

#[cfg(test)]
mod tests;
