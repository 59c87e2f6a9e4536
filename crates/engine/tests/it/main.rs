//! Engine integration tests: the attempt store on real SQLite and PostgreSQL, and the turn loop
//! against the mock LLM — in process, and over real HTTP on loopback with the OpenAI and
//! Anthropic providers.

#![allow(clippy::unwrap_used)]

mod http_turn;
mod policy;
mod providers;
mod store;
mod turn;
