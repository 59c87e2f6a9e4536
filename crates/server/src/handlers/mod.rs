//! Thin handlers: extract, call the engine, map the result.

pub mod admin;
pub(crate) mod bodies;
pub mod contracts;
pub mod conversations;
pub mod health;
pub mod openai;
mod openai_passthrough;
mod openai_request;
pub mod openai_stream;
pub mod sse;
