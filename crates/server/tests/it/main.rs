//! Server tests: `app()` with `oneshot` for every route, status code and role.

#![allow(clippy::unwrap_used)]

mod admin;
mod api;
mod authz;
mod context;
mod guards;
mod hardening;
mod limits;
mod metrics;
mod openai;
mod passthrough;
mod streaming;
mod web;
