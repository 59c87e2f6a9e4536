//! The SQLite store's migrator: applies the embedded migrations (`migrations/sqlite/`) in
//! version order on the writing connection when the store opens, each in a transaction of its
//! own together with the row that records it. The record is the table sqlx's migrator kept
//! (`_sqlx_migrations`: version, description, when, success, the SQL's SHA-384 checksum, the
//! time it took), read and written the way sqlx did, so a database of an older Bridle — migrated
//! by sqlx — opens, and one of this Bridle would open with it. As with sqlx, a database is
//! refused ([`MigrationError`]) when a migration was left half applied, when an applied one has
//! changed since, or when it has one this Bridle does not know (a newer Bridle's).
//!
//! Two servers opening one database at once are kept apart by `BEGIN IMMEDIATE`: the second
//! waits (up to the busy timeout) and finds the migration applied.

use crate::StoreError;
use crate::migrations::Embedded;
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use std::collections::BTreeMap;

/// The table of applied migrations, as sqlx names and creates it.
const CREATE_TABLE: &str = "CREATE TABLE IF NOT EXISTS _sqlx_migrations (
    version BIGINT PRIMARY KEY,
    description TEXT NOT NULL,
    installed_on TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
    success BOOLEAN NOT NULL,
    checksum BLOB NOT NULL,
    execution_time BIGINT NOT NULL
);";

/// Why the migrations could not be applied (the source of a [`StoreError::Migration`]).
#[derive(Debug, thiserror::Error)]
pub(super) enum MigrationError {
    /// A migration was started and not finished.
    #[error("migration {0} is partially applied; fix and remove row from `_sqlx_migrations` table")]
    Dirty(i64),
    /// An applied migration's SQL is not what this Bridle has.
    #[error("migration {0} was previously applied but has been modified")]
    Modified(i64),
    /// An applied migration this Bridle does not have.
    #[error("migration {0} was previously applied but is missing in the resolved migrations")]
    Missing(i64),
    /// A migration's SQL failed.
    #[error("while executing migration {version}: {source}")]
    Execute {
        /// Its version.
        version: i64,
        /// The database's error.
        source: rusqlite::Error,
    },
    /// Reading or writing the record failed.
    #[error("while executing migrations: {0}")]
    Record(#[from] rusqlite::Error),
}

/// Applies the `migrations` (in version order) that `connection`'s database lacks. Any
/// failure is a [`StoreError::Migration`] (as it was with sqlx's migrator).
pub(super) fn run(connection: &mut Connection, migrations: &[Embedded]) -> Result<(), StoreError> {
    apply(connection, migrations).map_err(|error| StoreError::Migration {
        source: Box::new(error),
    })
}

fn apply(connection: &mut Connection, migrations: &[Embedded]) -> Result<(), MigrationError> {
    connection.execute_batch(CREATE_TABLE)?;
    let applied = applied(connection)?;
    let mut ordered = migrations.to_vec();
    ordered.sort_by_key(|m| m.version);
    if let Some(version) = applied
        .keys()
        .find(|version| !ordered.iter().any(|m| m.version == **version))
    {
        return Err(MigrationError::Missing(*version));
    }
    for migration in &ordered {
        match applied.get(&migration.version) {
            Some(checksum) if *checksum != migration.checksum() => {
                return Err(MigrationError::Modified(migration.version));
            }
            Some(_) => {}
            None => apply_one(connection, migration)?,
        }
    }
    Ok(())
}

/// The applied migrations' checksums by version; a [`MigrationError::Dirty`] when one failed.
fn applied(connection: &Connection) -> Result<BTreeMap<i64, Vec<u8>>, MigrationError> {
    let dirty: Option<i64> = connection
        .query_row(
            "SELECT version FROM _sqlx_migrations WHERE success = false ORDER BY version LIMIT 1",
            [],
            |row| row.get(0),
        )
        .optional()?;
    if let Some(version) = dirty {
        return Err(MigrationError::Dirty(version));
    }
    let mut statement =
        connection.prepare("SELECT version, checksum FROM _sqlx_migrations ORDER BY version")?;
    let rows = statement.query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Applies `migration` and records it, in one transaction — unless another server did so
/// meanwhile; then records how long it took (as sqlx did: after the commit).
fn apply_one(connection: &mut Connection, migration: &Embedded) -> Result<(), MigrationError> {
    let started = std::time::Instant::now();
    let tx = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let theirs: Option<Vec<u8>> = tx
        .query_row(
            "SELECT checksum FROM _sqlx_migrations WHERE version = ?",
            [migration.version],
            |row| row.get(0),
        )
        .optional()?;
    match theirs {
        Some(checksum) if checksum == migration.checksum() => return Ok(()),
        Some(_) => return Err(MigrationError::Modified(migration.version)),
        None => {}
    }
    tx.execute_batch(migration.sql)
        .map_err(|source| MigrationError::Execute {
            version: migration.version,
            source,
        })?;
    tx.execute(
        "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
         VALUES (?1, ?2, TRUE, ?3, -1)",
        params![
            migration.version,
            migration.description(),
            migration.checksum()
        ],
    )?;
    tx.commit()?;
    let nanos = i64::try_from(started.elapsed().as_nanos()).unwrap_or(i64::MAX);
    connection.execute(
        "UPDATE _sqlx_migrations SET execution_time = ?1 WHERE version = ?2",
        params![nanos, migration.version],
    )?;
    tracing::info!(
        version = migration.version,
        name = migration.name,
        "SQLite migration applied"
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sqlite::MIGRATIONS;

    fn database() -> (tempfile::TempDir, Connection) {
        let dir = tempfile::tempdir().unwrap();
        let connection = Connection::open(dir.path().join("m.db")).unwrap();
        (dir, connection)
    }

    /// The record: (version, description, success, checksum) in version order.
    fn record(connection: &Connection) -> Vec<(i64, String, bool, Vec<u8>)> {
        let mut statement = connection
            .prepare(
                "SELECT version, description, success, checksum FROM _sqlx_migrations \
                 ORDER BY version",
            )
            .unwrap();
        statement
            .query_map([], |row| {
                Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
            })
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap()
    }

    #[test]
    fn applies_each_migration_once_and_records_it_as_sqlx_did() {
        let (_dir, mut db) = database();
        run(&mut db, &MIGRATIONS[..5]).unwrap();
        run(&mut db, MIGRATIONS).unwrap();
        run(&mut db, MIGRATIONS).unwrap();
        let expected: Vec<_> = MIGRATIONS
            .iter()
            .map(|m| (m.version, m.description(), true, m.checksum()))
            .collect();
        assert_eq!(record(&db), expected);
        let (unmeasured, installed): (i64, i64) = db
            .query_row(
                "SELECT count(*) FILTER (WHERE execution_time < 0), \
                 count(*) FILTER (WHERE installed_on IS NOT NULL) FROM _sqlx_migrations",
                [],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .unwrap();
        assert_eq!(
            (unmeasured, installed),
            (0, i64::try_from(MIGRATIONS.len()).unwrap())
        );
        db.execute(
            "INSERT INTO store_health (id, checked_at) VALUES (1, 2)",
            [],
        )
        .unwrap();
    }

    #[test]
    fn refuses_a_changed_a_half_applied_or_an_unknown_migration() {
        let cases: [(&str, &str); 3] = [
            (
                "UPDATE _sqlx_migrations SET checksum = x'00' WHERE version = 2",
                "migration 2 was previously applied but has been modified",
            ),
            (
                "UPDATE _sqlx_migrations SET success = false WHERE version = 4",
                "migration 4 is partially applied",
            ),
            (
                "INSERT INTO _sqlx_migrations (version, description, success, checksum, \
                 execution_time) VALUES (99, 'from the future', TRUE, x'00', 1)",
                "migration 99 was previously applied but is missing",
            ),
        ];
        for (change, said) in cases {
            let (_dir, mut db) = database();
            run(&mut db, MIGRATIONS).unwrap();
            db.execute(change, []).unwrap();
            let error = run(&mut db, MIGRATIONS).unwrap_err();
            assert!(
                matches!(error, StoreError::Migration { .. }) && error.to_string().contains(said),
                "{error}"
            );
            assert!(!error.is_unavailable());
        }
    }

    #[test]
    fn a_failing_migration_leaves_nothing_behind() {
        let (_dir, mut db) = database();
        let broken = [
            MIGRATIONS[0],
            Embedded {
                version: 2,
                name: "broken",
                sql: "CREATE TABLE half (x INTEGER); INSERT INTO nowhere VALUES (1);",
            },
        ];
        let error = run(&mut db, &broken).unwrap_err();
        assert!(
            error.to_string().contains("while executing migration 2"),
            "{error}"
        );
        assert_eq!(record(&db).len(), 1);
        let half: i64 = db
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE name = 'half'",
                [],
                |row| row.get(0),
            )
            .unwrap();
        assert_eq!(half, 0);
    }
}
