//! The `xml` contract kind: a reply that is one XML document, read safely into the JSON value
//! the contract's JSON Schema validates ([`read`], guided by a [`Shape`] taken from that
//! schema), and the way back ([`write`]) for examples and the mock; [`query`] builds the
//! `<llmQuery>` a topic-analysis conversation sends, from the [`topic::TopicState`] kept
//! with the conversation, and [`query_check`] checks one an application built itself.

mod frame;
mod locate;
pub mod query;
pub mod query_check;
mod read;
mod run;
pub mod shape;
pub mod topic;
mod write;

pub use read::{MAX_DEPTH, MAX_NODES, XmlRead, read};
pub use shape::{Scalar, Shape};
pub use write::write;
