//! Provider integration tests: the in-process mock and the OpenAI and Anthropic providers over
//! real HTTP on loopback against `bridle-mock`'s front ends.

#![allow(clippy::unwrap_used)]

mod providers;
mod traces;
