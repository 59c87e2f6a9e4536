//! Fixtures for the SQLite store's unit tests (`queue.rs`, `checkpoint.rs`, `commit.rs`): a
//! database file with a parent and a child table, a writer on it, writes that add rows or hold
//! the writing connection, and row counts read on a connection of their own.

#![allow(clippy::unwrap_used)]

use super::StoreError;
use super::queue::Writer;
use rusqlite::Connection;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// A database file with a parent table and a child table whose rows must name a parent.
pub(super) fn database() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.db");
    let setup = Connection::open(&path).unwrap();
    setup
        .execute_batch(
            "PRAGMA journal_mode = WAL;
             CREATE TABLE parent (id INTEGER PRIMARY KEY);
             CREATE TABLE child (id INTEGER PRIMARY KEY AUTOINCREMENT,
                                 parent INTEGER NOT NULL REFERENCES parent (id));
             INSERT INTO parent (id) VALUES (1);",
        )
        .unwrap();
    (dir, path)
}

pub(super) async fn add_child(writer: &Writer, parent: i64) -> Result<i64, StoreError> {
    writer
        .write(move |db| {
            db.prepare_cached("INSERT INTO child (parent) VALUES (?) RETURNING id")?
                .query_row([parent], |row| row.get(0))
        })
        .await
}

/// A writer on a fresh database with an empty table `blob (data)`.
pub(super) async fn blob_store() -> (tempfile::TempDir, PathBuf, Writer) {
    let (dir, path) = database();
    let writer = Writer::open(&path).unwrap();
    writer
        .write(|db| db.execute_batch("CREATE TABLE blob (data TEXT NOT NULL)"))
        .await
        .unwrap();
    (dir, path, writer)
}

/// Adds a row holding `data` to `blob`.
pub(super) async fn add_blob(writer: &Writer, data: &str) {
    let data = data.to_owned();
    writer
        .write(move |db| db.execute("INSERT INTO blob (data) VALUES (?)", [&data]))
        .await
        .unwrap();
}

/// Holds the writing connection for a while, so that the writes sent meanwhile queue up and
/// are committed as batches.
pub(super) fn hold(writer: &Arc<Writer>) -> tokio::task::JoinHandle<()> {
    let writer = Arc::clone(writer);
    tokio::spawn(async move {
        writer
            .write(|_| {
                std::thread::sleep(Duration::from_millis(100));
                Ok(())
            })
            .await
            .unwrap();
    })
}

pub(super) fn count(path: &Path) -> i64 {
    count_in(path, "child")
}

pub(super) fn count_blobs(path: &Path) -> i64 {
    count_in(path, "blob")
}

/// Rows in `table`, read on a connection of its own.
pub(super) fn count_in(path: &Path, table: &str) -> i64 {
    Connection::open(path)
        .unwrap()
        .query_row(&format!("SELECT count(*) FROM {table}"), [], |row| {
            row.get(0)
        })
        .unwrap()
}
