//! [`Script`]: a scripted run of the mock model, read from JSON — what each request of each
//! turn gets, so a test can say exactly "wrong key first, then valid" or "429, then valid".
//!
//! ```json
//! {"turns": [
//!   {"attempts": [{"fault": {"kind": "wrong_key"}}, {"valid": true}]},
//!   {"attempts": [{"reply": "literal text"}]},
//!   {"attempts": [{"pieces": ["SUGG", "ESTED_VALUES: [\"a\"]"]}]},
//!   {"attempts": [{"fault": {"kind": "http429", "retry_after_secs": 1}}]},
//!   {"attempts": [{"call": {"name": "get_weather"}}, {"reply": "Sunny."}]}
//! ]}
//! ```
//!
//! Each attempt is exactly one of `{"valid": true}` (a valid reply), `{"fault": {...}}` (a
//! [`Fault`]), `{"reply": "..."}` (this exact text), `{"pieces": ["...", ...]}` (the text
//! the pieces make together; a streamed answer sends exactly those pieces as its content
//! deltas — to test a client on a marker or a key split across deltas) or `{"call": {"name":
//! "...", "arguments": {...}}}` (a call of the offered tool `name`, with these arguments or,
//! without them, arguments generated from the tool's schema; a tool the request does not offer
//! gets an HTTP 400 answer naming it).
//!
//! Turns are consumed in order: a request that starts a turn (no retry feedback in it, no tool
//! result after its user message, and not a retry after a transport fault) takes the next
//! script turn; each later request of that turn — a retry, or the request that brings the
//! results of a call back — takes the turn's next entry. Past the end of a turn's entries, or of
//! the script, replies are valid.

use crate::faults::Fault;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::Path;

/// What one request gets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RawStep", into = "RawStep")]
pub enum Step {
    /// A valid reply.
    Valid,
    /// The fault applied to a valid reply (or, for a transport fault, instead of it).
    Fault(Fault),
    /// This exact reply text.
    Reply(String),
    /// The reply text these pieces make together, streamed as exactly these content deltas
    /// (at least one piece).
    Pieces(Vec<String>),
    /// A call of an offered tool, whatever `tool_choice` says (except `"none"`, which offers
    /// no tools).
    Call(ScriptCall),
}

/// The call a [`Step::Call`] makes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptCall {
    /// The tool's name: one the request offers.
    pub name: String,
    /// These exact arguments; `None`: arguments generated from the tool's schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
}

/// The entries of one turn, for its successive requests.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptTurn {
    /// What the first, second, … request of the turn gets.
    pub attempts: Vec<Step>,
}

/// A whole script.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// The turns, in the order they are started.
    pub turns: Vec<ScriptTurn>,
}

/// A script that could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    /// The file could not be read.
    #[error("cannot read the mock script {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The text is not a valid script.
    #[error("the mock script is not valid: {0}")]
    Invalid(#[from] serde_json::Error),
}

impl Script {
    /// Reads a script from JSON text.
    pub fn from_json(text: &str) -> Result<Self, ScriptError> {
        Ok(serde_json::from_str(text)?)
    }

    /// Reads a script file.
    pub fn load(path: &Path) -> Result<Self, ScriptError> {
        let text = std::fs::read_to_string(path).map_err(|source| ScriptError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Self::from_json(&text)
    }

    /// The step for request `request` (0-based) of script turn `turn`; `Valid` past the end.
    pub fn step(&self, turn: usize, request: usize) -> Step {
        self.turns
            .get(turn)
            .and_then(|t| t.attempts.get(request))
            .cloned()
            .unwrap_or(Step::Valid)
    }
}

/// The wire form of a [`Step`]: exactly one of `valid: true`, `fault`, `reply`, `pieces`,
/// `call`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStep {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    valid: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    fault: Option<Fault>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reply: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pieces: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    call: Option<ScriptCall>,
}

impl TryFrom<RawStep> for Step {
    type Error = String;

    fn try_from(raw: RawStep) -> Result<Self, Self::Error> {
        match (raw.valid, raw.fault, raw.reply, raw.pieces, raw.call) {
            (Some(true), None, None, None, None) => Ok(Self::Valid),
            (None, Some(fault), None, None, None) => Ok(Self::Fault(fault)),
            (None, None, Some(reply), None, None) => Ok(Self::Reply(reply)),
            (None, None, None, Some(pieces), None) if pieces.is_empty() => {
                Err("\"pieces\" must list at least one piece of the reply".into())
            }
            (None, None, None, Some(pieces), None) => Ok(Self::Pieces(pieces)),
            (None, None, None, None, Some(call)) if call.name.trim().is_empty() => {
                Err("\"call\" must name the tool to call (\"name\")".into())
            }
            (None, None, None, None, Some(call)) => Ok(Self::Call(call)),
            (Some(false), None, None, None, None) => Err(
                "\"valid\": false says nothing about the reply; use a \"fault\" or a \"reply\""
                    .into(),
            ),
            _ => Err(
                "each attempt is exactly one of {\"valid\": true}, {\"fault\": {...}}, \
                 {\"reply\": \"...\"}, {\"pieces\": [\"...\", ...]}, \
                 {\"call\": {\"name\": \"...\"}}"
                    .into(),
            ),
        }
    }
}

impl From<Step> for RawStep {
    fn from(step: Step) -> Self {
        match step {
            Step::Valid => Self {
                valid: Some(true),
                ..Self::default()
            },
            Step::Fault(fault) => Self {
                fault: Some(fault),
                ..Self::default()
            },
            Step::Reply(reply) => Self {
                reply: Some(reply),
                ..Self::default()
            },
            Step::Pieces(pieces) => Self {
                pieces: Some(pieces),
                ..Self::default()
            },
            Step::Call(call) => Self {
                call: Some(call),
                ..Self::default()
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_example_reads() {
        let script = Script::from_json(
            r#"{"turns": [
                {"attempts": [{"fault": {"kind": "wrong_key"}}, {"valid": true}]},
                {"attempts": [{"reply": "literal text"}]},
                {"attempts": [{"pieces": ["SUGG", "ESTED_VALUES: [\"a\"]"]}]},
                {"attempts": [{"fault": {"kind": "http429", "retry_after_secs": 1}}]},
                {"attempts": [{"call": {"name": "get_weather"}}, {"reply": "Sunny."}]}
            ]}"#,
        )
        .unwrap();
        assert_eq!(script.step(0, 0), Step::Fault(Fault::WrongKey));
        assert_eq!(script.step(0, 1), Step::Valid);
        assert_eq!(script.step(0, 2), Step::Valid);
        assert_eq!(script.step(1, 0), Step::Reply("literal text".into()));
        assert_eq!(
            script.step(2, 0),
            Step::Pieces(vec!["SUGG".into(), "ESTED_VALUES: [\"a\"]".into()])
        );
        assert_eq!(
            script.step(3, 0),
            Step::Fault(Fault::Http429 {
                retry_after_secs: 1
            })
        );
        assert_eq!(
            script.step(4, 0),
            Step::Call(ScriptCall {
                name: "get_weather".into(),
                arguments: None
            })
        );
        assert_eq!(script.step(4, 1), Step::Reply("Sunny.".into()));
        assert_eq!(script.step(9, 0), Step::Valid);
        let again = Script::from_json(&serde_json::to_string(&script).unwrap()).unwrap();
        assert_eq!(again, script);
    }

    #[test]
    fn every_step_form_round_trips_through_its_wire_form() {
        let cases = [
            (Step::Valid, r#"{"valid":true}"#),
            (Step::Fault(Fault::Fence), r#"{"fault":{"kind":"fence"}}"#),
            (Step::Reply("hi".into()), r#"{"reply":"hi"}"#),
            (
                Step::Pieces(vec!["SUGG".into(), "ESTED".into()]),
                r#"{"pieces":["SUGG","ESTED"]}"#,
            ),
            (Step::Pieces(vec![String::new()]), r#"{"pieces":[""]}"#),
            (
                Step::Call(ScriptCall {
                    name: "f".into(),
                    arguments: None,
                }),
                r#"{"call":{"name":"f"}}"#,
            ),
            (
                Step::Call(ScriptCall {
                    name: "f".into(),
                    arguments: Some(serde_json::json!({"city": "Oslo"})),
                }),
                r#"{"call":{"name":"f","arguments":{"city":"Oslo"}}}"#,
            ),
            (
                Step::Pieces(vec!["é".into(), "🙂".into()]),
                r#"{"pieces":["é","🙂"]}"#,
            ),
        ];
        for (step, wire) in cases {
            assert_eq!(serde_json::to_string(&step).unwrap(), wire);
            assert_eq!(serde_json::from_str::<Step>(wire).unwrap(), step, "{wire}");
        }
    }

    #[test]
    fn bad_steps_are_refused_with_a_reason() {
        let cases = [
            (r#"{"valid": false}"#, "says nothing about the reply"),
            (r#"{"valid": true, "reply": "x"}"#, "exactly one of"),
            (r#"{}"#, "exactly one of"),
            (r#"{"fault": {"kind": "gremlins"}}"#, "unknown fault"),
            (r#"{"fault": "fence"}"#, ""),
            (
                r#"{"pieces": []}"#,
                "\"pieces\" must list at least one piece",
            ),
            (
                r#"{"pieces": ["a"], "reply": "a"}"#,
                "{\"pieces\": [\"...\", ...]}",
            ),
            (r#"{"pieces": ["a"], "valid": true}"#, "exactly one of"),
            (r#"{"pieces": "ab"}"#, ""),
            (r#"{"pieces": ["a", 1]}"#, ""),
            (r#"{"piece": ["a"]}"#, "unknown field"),
            (r#"{"call": {"name": " "}}"#, "must name the tool"),
            (r#"{"call": {}}"#, "missing field `name`"),
            (
                r#"{"call": {"name": "f", "args": {}}}"#,
                "unknown field `args`",
            ),
            (r#"{"call": {"name": "f"}, "reply": "x"}"#, "exactly one of"),
        ];
        for (step, reason) in cases {
            let text = format!(r#"{{"turns": [{{"attempts": [{step}]}}]}}"#);
            let error = Script::from_json(&text).unwrap_err().to_string();
            assert!(error.contains(reason), "{step}: {error}");
        }
        assert!(Script::from_json(r#"{"turns": [], "extra": 1}"#).is_err());
        let missing = Script::load(Path::new("/nonexistent/script.json")).unwrap_err();
        assert!(missing.to_string().contains("/nonexistent/script.json"));
    }
}
