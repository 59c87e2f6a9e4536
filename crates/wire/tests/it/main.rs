//! Round trips of recorded request and response bodies through the wire types.

#![allow(clippy::unwrap_used)]

mod anthropic;
mod openai;
