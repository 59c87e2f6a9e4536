//! [`SqliteStore`]: the embedded backend, on one driver (rusqlite) for its reads, writes and
//! migrations. One database file (created, with its directory, when missing) in WAL mode with
//! `synchronous=NORMAL`, foreign keys on and a busy timeout; JSON is stored as text and booleans
//! as 0/1. Its parts:
//!
//! - `migrate.rs` applies the migrations when the store opens, on the writing connection,
//!   recorded in the table sqlx kept (`_sqlx_migrations`), so a database of any Bridle opens;
//! - `pool.rs` keeps the read-only connections every read runs on (in WAL mode they never wait
//!   for the writer), and `reads.rs` is [`Reads`](crate::Reads) on them;
//! - `writes.rs` is [`TurnWrites`](crate::TurnWrites) and [`Purges`](crate::Purges): every write
//!   goes to the one writing connection, `queue.rs`'s writer, which commits the writes that are
//!   waiting together (group commit);
//! - `checkpoint.rs` keeps checkpoints off the write path; `commit.rs` is what answering before
//!   the commit needs (`store_commit`); `prompts.rs` stores each distinct prompt once.
//!
//! A rusqlite error becomes a [`StoreError`] where it arises ([`fault`]): unavailable (busy,
//! locked, full, read-only, I/O), a foreign key, or another database error, with the driver's
//! error as its source.

mod checkpoint;
mod commit;
mod migrate;
mod pool;
mod queue;
mod reads;
#[cfg(test)]
mod testing;
mod writes;

use super::migrations::Embedded;
use super::{Commit, Source, StoreError};
use commit::AfterReply;
use pool::Readers;
use queue::Writer;
use rusqlite::{Connection, OpenFlags};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// How long a connection waits for another's lock (a migration, a checkpoint, the writer)
/// before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Prepared statements kept per connection.
const STATEMENT_CACHE: usize = 32;

/// Reading connections: SQLite has one writer at a time, and a few readers suffice.
const READERS: usize = 4;

/// The SQLite migrations, in version order.
const MIGRATIONS: &[Embedded] = &[
    Embedded {
        version: 1,
        name: "initial",
        sql: include_str!("../../migrations/sqlite/0001_initial.sql"),
    },
    Embedded {
        version: 2,
        name: "stats_indexes",
        sql: include_str!("../../migrations/sqlite/0002_stats_indexes.sql"),
    },
    Embedded {
        version: 3,
        name: "bump_trigger",
        sql: include_str!("../../migrations/sqlite/0003_bump_trigger.sql"),
    },
    Embedded {
        version: 4,
        name: "interrupted",
        sql: include_str!("../../migrations/sqlite/0004_interrupted.sql"),
    },
    Embedded {
        version: 5,
        name: "payload_purged",
        sql: include_str!("../../migrations/sqlite/0005_payload_purged.sql"),
    },
    Embedded {
        version: 6,
        name: "prompts",
        sql: include_str!("../../migrations/sqlite/0006_prompts.sql"),
    },
    Embedded {
        version: 7,
        name: "store_health",
        sql: include_str!("../../migrations/sqlite/0007_store_health.sql"),
    },
    Embedded {
        version: 8,
        name: "route",
        sql: include_str!("../../migrations/sqlite/0008_route.sql"),
    },
    Embedded {
        version: 9,
        name: "message_turn",
        sql: include_str!("../../migrations/sqlite/0009_message_turn.sql"),
    },
    Embedded {
        version: 10,
        name: "request_ids",
        sql: include_str!("../../migrations/sqlite/0010_request_ids.sql"),
    },
];

/// The SQLite store.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    /// Readers (WAL: they never wait for the writer).
    readers: Readers,
    /// The one writing connection: writers queue for it, in order, instead of sleeping in
    /// SQLite's busy handler (which backs off in steps of up to 100 ms under contention).
    writer: Writer,
    /// Set when turns are answered before their messages are committed.
    after_reply: Option<Arc<AfterReply>>,
    /// The database's lock file, locked for as long as the store is open.
    _lock: Arc<std::fs::File>,
    /// The database file (its disk's free space is part of the readiness probe).
    path: Arc<PathBuf>,
}

impl SqliteStore {
    /// Opens (creating if missing) the database file `sqlite://PATH` names and applies the
    /// migrations. In-memory databases are refused: each connection would see its own.
    pub async fn open(url: &str) -> Result<Self, StoreError> {
        Self::open_with(url, Commit::BeforeReply).await
    }

    /// [`SqliteStore::open`], committing turns as `commit` says (`commit.rs`).
    pub async fn open_with(url: &str, commit: Commit) -> Result<Self, StoreError> {
        if names_memory_database(url) {
            return Err(StoreError::Config(format!(
                "in-memory SQLite ({url:?}) is not supported: use sqlite://PATH"
            )));
        }
        let path = database_path(url)?;
        if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
            // Once, at start-up, before any connection exists: a blocking call is harmless here.
            crate::private_files::create_dir(dir).map_err(|error| {
                StoreError::Config(format!(
                    "cannot create directory {}: {error}",
                    dir.display()
                ))
            })?;
            crate::private_files::warn_if_shared(dir);
        }
        private_database(&path)?;
        let lock = commit::lock(&path, commit)?;
        // The migrations run on the writing connection before the writer starts (at start-up:
        // blocking is harmless here too).
        let mut connection = queue::writing_connection(&path)?;
        migrate::run(&mut connection, MIGRATIONS)?;
        let writer = Writer::start(connection, &path)?;
        let readers = Readers::open(&path, READERS)?;
        let after_reply = match commit {
            Commit::BeforeReply => None,
            Commit::AfterReply => Some(Arc::new(AfterReply::open(&writer).await?)),
        };
        Ok(Self {
            readers,
            writer,
            after_reply,
            _lock: Arc::new(lock),
            path: Arc::new(path),
        })
    }
}

/// What a connection of the store is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    /// Reads only (opened read-only).
    Read,
    /// The writer's and the checkpointer's.
    Write,
}

/// A connection to the database file at `path` (which must exist), set up as the store's
/// connections are: busy timeout, foreign keys, a statement cache; a writing one also puts the
/// database in WAL mode with `synchronous=NORMAL` (a read-only one finds it so: the writing
/// connection opens first).
fn connect(path: &Path, access: Access) -> Result<Connection, StoreError> {
    let mode = match access {
        Access::Read => OpenFlags::SQLITE_OPEN_READ_ONLY,
        Access::Write => OpenFlags::SQLITE_OPEN_READ_WRITE,
    };
    let connection =
        Connection::open_with_flags(path, mode | OpenFlags::SQLITE_OPEN_NO_MUTEX).map_err(fault)?;
    connection.busy_timeout(BUSY_TIMEOUT).map_err(fault)?;
    if access == Access::Write {
        connection
            .pragma_update(None, "journal_mode", "WAL")
            .map_err(fault)?;
        connection
            .pragma_update(None, "synchronous", "NORMAL")
            .map_err(fault)?;
    }
    connection
        .pragma_update(None, "foreign_keys", true)
        .map_err(fault)?;
    connection.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    Ok(connection)
}

/// A rusqlite error as the store's: [`StoreError::Unavailable`] when the database cannot take
/// the operation for now (busy or locked by another connection, the disk full, read-only or
/// failing, the file not openable), [`StoreError::ForeignKey`] for a foreign key that did not
/// match, else [`StoreError::Database`].
fn fault(error: rusqlite::Error) -> StoreError {
    let failure = match &error {
        rusqlite::Error::SqliteFailure(failure, _) => Some(*failure),
        _ => None,
    };
    let source: Source = Box::new(error);
    match failure {
        Some(failure)
            if matches!(
                failure.code,
                rusqlite::ErrorCode::DiskFull
                    | rusqlite::ErrorCode::ReadOnly
                    | rusqlite::ErrorCode::DatabaseBusy
                    | rusqlite::ErrorCode::DatabaseLocked
                    | rusqlite::ErrorCode::SystemIoFailure
                    | rusqlite::ErrorCode::CannotOpen
            ) =>
        {
            StoreError::Unavailable { source }
        }
        Some(failure) if failure.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_FOREIGNKEY => {
            StoreError::ForeignKey { source }
        }
        _ => StoreError::Database { source },
    }
}

/// Creates the database file `0600` before SQLite opens it, so that SQLite gives its `-wal`
/// and `-shm` the same mode; tightens those of an existing database (see
/// [`crate::private_files`]).
fn private_database(path: &Path) -> Result<(), StoreError> {
    crate::private_files::create_file(path).map_err(|error| {
        StoreError::Config(format!(
            "cannot create the database {}: {error}",
            path.display()
        ))
    })?;
    for suffix in ["-wal", "-shm"] {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        crate::private_files::tighten(Path::new(&name));
    }
    Ok(())
}

/// Whether a `sqlite:` URL names an in-memory database (`sqlite::memory:`, `?mode=memory`).
fn names_memory_database(url: &str) -> bool {
    let rest = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))
        .unwrap_or(url);
    let (database, params) = rest.split_once('?').unwrap_or((rest, ""));
    database == ":memory:" || params.split('&').any(|param| param == "mode=memory")
}

/// The database file a `sqlite://PATH` (or `sqlite:PATH`) URL names, percent-decoded (`%3F`
/// for a `?` in the name). Its query parameters are checked as they always were — `mode`
/// (`ro`, `rw`, `rwc`), `cache` (`private`, `shared`), `immutable`, `vfs`; anything else is a
/// configuration error — but change nothing: the writing connection never heeded them, and
/// the readers are read-only whatever they say.
fn database_path(url: &str) -> Result<PathBuf, StoreError> {
    let invalid =
        |detail: String| StoreError::Config(format!("invalid SQLite URL {url:?}: {detail}"));
    let rest = url
        .trim_start_matches("sqlite://")
        .trim_start_matches("sqlite:");
    let (database, params) = rest.split_once('?').unwrap_or((rest, ""));
    for pair in params.split('&').filter(|pair| !pair.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let decode = |text: &str| {
            percent_decode(&text.replace('+', " "))
                .ok_or_else(|| invalid(format!("{text:?} is not UTF-8 once decoded")))
        };
        let (key, value) = (decode(key)?, decode(value)?);
        let known = match key.as_str() {
            "mode" => matches!(value.as_str(), "ro" | "rw" | "rwc" | "memory"),
            "cache" => matches!(value.as_str(), "private" | "shared"),
            "immutable" => matches!(value.as_str(), "true" | "false" | "1" | "0"),
            "vfs" => true,
            _ => {
                return Err(invalid(format!(
                    "unknown query parameter `{key}` while parsing connection URL"
                )));
            }
        };
        if !known {
            return Err(invalid(format!("unknown value {value:?} for `{key}`")));
        }
    }
    let path = percent_decode(database)
        .ok_or_else(|| invalid("the file name is not UTF-8 once decoded".to_owned()))?;
    if path.is_empty() {
        return Err(StoreError::Config(format!(
            "SQLite URL {url:?} names no file: use sqlite://PATH"
        )));
    }
    Ok(PathBuf::from(path))
}

/// `text` with each `%XX` (two hex digits) replaced by the byte it names; a `%` not followed by
/// two hex digits stays as it is. `None` when the bytes are not UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        let escaped = (bytes[at] == b'%')
            .then(|| bytes.get(at + 1..at + 3))
            .flatten()
            .and_then(|hex| std::str::from_utf8(hex).ok())
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match escaped {
            Some(byte) => {
                decoded.push(byte);
                at += 3;
            }
            None => {
                decoded.push(bytes[at]);
                at += 1;
            }
        }
    }
    String::from_utf8(decoded).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::migrations;

    #[test]
    fn embeds_every_migration_file() {
        migrations::assert_embeds_directory("migrations/sqlite", MIGRATIONS);
    }

    #[test]
    fn recognises_in_memory_urls() {
        for url in [
            "sqlite::memory:",
            "sqlite://:memory:",
            "sqlite://?mode=memory",
            "sqlite:x.db?mode=memory",
        ] {
            assert!(names_memory_database(url), "{url}");
        }
        for url in [
            "sqlite://data/bridle.db",
            "sqlite:///var/lib/bridle.db",
            "sqlite:memory.db",
        ] {
            assert!(!names_memory_database(url), "{url}");
        }
    }

    #[test]
    fn urls_name_their_file_as_sqlx_read_them() {
        for (url, path) in [
            ("sqlite://data/bridle.db", "data/bridle.db"),
            ("sqlite:///var/lib/bridle.db", "/var/lib/bridle.db"),
            ("sqlite:bridle.db", "bridle.db"),
            ("sqlite://a%3Fb%20c.db", "a?b c.db"),
            ("sqlite://100%.db", "100%.db"),
            ("sqlite://x.db?mode=rwc&cache=shared", "x.db"),
            ("sqlite://x.db?mode=ro&immutable=1&vfs=unix", "x.db"),
        ] {
            assert_eq!(database_path(url).unwrap(), Path::new(path), "{url}");
        }
        for (url, said) in [
            (
                "sqlite://x.db?journal=wal",
                "unknown query parameter `journal`",
            ),
            (
                "sqlite://x.db?mode=fast",
                "unknown value \"fast\" for `mode`",
            ),
            ("sqlite://", "names no file"),
            ("sqlite://%FF.db", "not UTF-8"),
        ] {
            let error = database_path(url).unwrap_err();
            assert!(
                matches!(&error, StoreError::Config(text) if text.contains(said)),
                "{url}: {error}"
            );
        }
    }

    #[test]
    fn driver_errors_are_wrapped_by_what_they_mean() {
        let failure = |code: i32| {
            fault(rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(code),
                Some("detail".to_owned()),
            ))
        };
        for code in [
            rusqlite::ffi::SQLITE_BUSY,
            rusqlite::ffi::SQLITE_BUSY_SNAPSHOT,
            rusqlite::ffi::SQLITE_LOCKED,
            rusqlite::ffi::SQLITE_FULL,
            rusqlite::ffi::SQLITE_READONLY,
            rusqlite::ffi::SQLITE_IOERR_FSYNC,
            rusqlite::ffi::SQLITE_CANTOPEN,
        ] {
            let error = failure(code);
            assert!(error.is_unavailable(), "{code}: {error:?}");
            assert!(matches!(error, StoreError::Unavailable { .. }), "{code}");
        }
        let error = failure(rusqlite::ffi::SQLITE_CONSTRAINT_FOREIGNKEY);
        assert!(error.is_foreign_key_violation() && !error.is_unavailable());
        for error in [
            failure(rusqlite::ffi::SQLITE_CONSTRAINT_CHECK),
            failure(rusqlite::ffi::SQLITE_ERROR),
            fault(rusqlite::Error::InvalidColumnName("x".to_owned())),
        ] {
            assert!(
                matches!(&error, StoreError::Database { .. })
                    && !error.is_unavailable()
                    && !error.is_foreign_key_violation(),
                "{error:?}"
            );
        }
        // The driver's text is kept for the log, under the store's own words.
        assert_eq!(
            failure(rusqlite::ffi::SQLITE_BUSY).to_string(),
            "database error: detail"
        );
    }
}
