//! Store integration tests: every behaviour on a fresh SQLite file and a fresh PostgreSQL
//! database, the SQLite store's answer-then-commit mode, retention sweeps, and SQLite databases
//! of older Bridles.

#![allow(clippy::unwrap_used)]

mod after_reply;
mod postgres_turns;
mod postgres_writes;
mod sqlite_upgrade;
mod store;
