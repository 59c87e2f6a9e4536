//! `bridle-mock`: the mock LLM of Bridle. [`MockModel`] answers chat requests with realistic,
//! schema-driven replies — valid for the contract Bridle's instructions name, or for the
//! request's own JSON Schema — and misbehaves on purpose in typed, reproducible ways
//! ([`Fault`]), from a seeded draw or a [`Script`]. Faults are fixable: when Bridle's retry
//! feedback names what a fault broke, the next attempt is valid; when it does not, the fault is
//! repeated — so good feedback and bad feedback can be told apart in tests.
//!
//! Use it in process ([`MockModel::respond`]) or, with the `http` feature (on by default), over
//! HTTP (`serve`, `MockServer`) with the OpenAI Chat Completions (also at Azure OpenAI's
//! deployment URLs), Anthropic Messages and Gemini `generateContent` formats, streaming included — in deltas of a
//! set size or scripted ones, paced, re-cut into small network writes, and with how each stream
//! ended (read through, or dropped by the client) in the request log. Tools: a forced call
//! (`tool_choice` naming a tool, `required`, Anthropic `any`) is answered with a call whose
//! arguments are generated from the tool's schema, a script step can ask for a call under
//! `auto`, tool results are read and answered, and offered a `present_question` tool in a
//! question-card mode it asks its question with a tool call.
//!
//! ```
//! use bridle_mock::{MockConfig, MockMessage, MockModel, MockReply, MockRequest, Role};
//!
//! let model = MockModel::new(MockConfig::new().with_seed(7)).unwrap();
//! let contracts = bridle_core::Contracts::builtin().unwrap();
//! let contract = contracts.get("selfhelp-response").unwrap();
//! let system = contract.instructions(&bridle_core::Context::new());
//! let request = MockRequest::new("gpt-test", vec![
//!     MockMessage::new(Role::System, system),
//!     MockMessage::new(Role::User, "I can't sleep."),
//! ]);
//! let MockReply::Text { content, .. } = model.respond(&request) else { unreachable!() };
//! assert!(contract.check(&content, &bridle_core::Context::new()).is_valid());
//! ```

#[cfg(feature = "http")]
mod anthropic;
mod config;
#[cfg(feature = "http")]
mod corrupt;
mod faults;
mod fixes;
#[cfg(feature = "http")]
mod gemini;
mod generate;
mod kinds;
mod log;
mod model;
#[cfg(feature = "http")]
mod openai;
mod request;
#[cfg(feature = "http")]
mod reset;
mod rule_break;
mod safety;
mod scalars;
mod script;
#[cfg(feature = "http")]
mod server;
mod settings;
mod shape;
#[cfg(feature = "http")]
mod stream;
mod topic;
mod words;

pub use config::{
    ConfigError, DEFAULT_STREAM_PIECE_CHARS, MAX_DELAY_MS, MAX_RETRY_AFTER_SECS, MockConfig,
};
pub use faults::{Broken, Fault, UnknownFault};
pub use generate::{
    Generated, Hints, MAX_REPLY_BYTES, MAX_TRIES, MAX_TRIES_BYTES, generate, generate_valid,
};
pub use log::{Answer, LoggedRequest, StreamEnd};
pub use model::MockModel;
pub use request::{
    CallMade, FEEDBACK_PREFIX, MockCall, MockMessage, MockReply, MockRequest, MockTool,
    ReplyFormat, ReplyInfo, Role, StopReason, Usage,
};
pub use safety::{Assessment, Level, SafetyMode};
pub use script::{Script, ScriptCall, ScriptError, ScriptTurn, Step};
#[cfg(feature = "http")]
pub use server::{MockServer, app, serve};
pub use settings::{MockSettings, RawMockSettings};
