//! Bridle's contract core: everything that decides whether an LLM reply meets its contract,
//! with no I/O, no async and no clock.
//!
//! A [`Contract`] (loaded from a manifest plus JSON Schema files, see [`manifest`]) gives
//! [`Contract::instructions`] for the prompt, [`Contract::check`] for a reply — repair, parse,
//! coercions, JSON Schema, declared rules → [`Checked`] — and [`Contract::feedback`] for a retry.
//! [`Contracts`] holds the built-in contracts and any the user adds.
//!
//! ```
//! use bridle_core::{Contracts, Context, RepairKind, Rule, SchemaKeyword};
//!
//! let contracts = Contracts::builtin().unwrap();
//! let contract = contracts.get("selfhelp-response").unwrap();
//! let checked = contract.check("```json\n{\"type\": \"response\"}\n```", &Context::new());
//! assert!(!checked.is_valid());
//! assert_eq!(checked.repairs[0].kind, RepairKind::CodeFence);
//! let required = Rule::Schema(SchemaKeyword::Required);
//! assert!(checked.violations.iter().any(|v| v.rule == required));
//! println!("{}", contract.feedback(&checked));
//! ```

pub mod cards;
mod check;
pub mod coerce;
pub mod config_error;
pub mod context;
pub mod contract;
pub mod error;
pub mod expr;
pub mod fallback;
mod feedback;
mod instructions;
pub mod manifest;
pub mod markers;
mod names;
pub mod pointer;
pub mod registry;
pub mod repair;
mod repair_kind;
pub mod report;
mod rule;
pub mod rules;
pub mod schema;
pub mod stream;
pub mod text;
pub mod tool_call;
pub mod xml;

pub use config_error::ConfigError;
pub use context::Context;
pub use contract::{Checked, Contract, Kind};
pub use error::ContractError;
pub use feedback::{MAX_CHARS as MAX_FEEDBACK_CHARS, MAX_ITEMS as MAX_FEEDBACK_ITEMS};
pub use names::UnknownName;
pub use registry::Contracts;
pub use repair::{Ambiguity, Repaired, RootHint, Truncation, repair};
pub use repair_kind::RepairKind;
pub use report::{Repair, Violation};
pub use rule::{Rule, SchemaKeyword};
pub use stream::{Abort, Emit, StreamCheck};
pub use tool_call::ToolCall;
