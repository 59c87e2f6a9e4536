//! [`Embedded`] migrations: each backend's `migrations/<backend>/NNNN_name.sql` files, compiled
//! into the binary with `include_str!`. PostgreSQL's are applied by a sqlx [`Migrator`]
//! ([`migrator`]); SQLite's by the store's own migrator (`sqlite/migrate.rs`), which keeps the
//! same table. Versions, descriptions and checksums ([`Embedded::description`],
//! [`Embedded::checksum`]) are the ones `sqlx::migrate!` would compute from the same files, so
//! every way of applying them sees the same applied history.

use sha2::{Digest, Sha384};
use sqlx::SqlSafeStr;
use sqlx::migrate::{Migration, MigrationType, Migrator};
use std::borrow::Cow;

/// One migration file, embedded.
#[derive(Debug, Clone, Copy)]
pub(super) struct Embedded {
    /// The file name's numeric prefix.
    pub version: i64,
    /// The rest of the file name, without `.sql`.
    pub name: &'static str,
    /// The file's contents.
    pub sql: &'static str,
}

impl Embedded {
    /// The description recorded for it: the name with `_` as spaces.
    pub fn description(&self) -> String {
        self.name.replace('_', " ")
    }

    /// The checksum recorded for it: the SHA-384 of its SQL.
    pub fn checksum(&self) -> Vec<u8> {
        Sha384::digest(self.sql.as_bytes()).to_vec()
    }

    /// It as sqlx's migration.
    fn migration(&self) -> Migration {
        Migration::new(
            self.version,
            Cow::Owned(self.description()),
            MigrationType::Simple,
            self.sql.into_sql_str(),
            false,
        )
    }
}

/// A sqlx migrator (PostgreSQL's) that applies `migrations` in version order, under the
/// backend's migration lock.
pub(super) fn migrator(migrations: &[Embedded]) -> Migrator {
    Migrator::with_migrations(migrations.iter().map(Embedded::migration).collect())
}

/// Checks that `embedded` is exactly the `.sql` files of `dir` (relative to the crate root), so a
/// new migration file cannot be forgotten.
#[cfg(test)]
pub(super) fn assert_embeds_directory(dir: &str, embedded: &[Embedded]) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let mut files: Vec<(String, String)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "sql"))
        .map(|path| {
            let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
            (stem, std::fs::read_to_string(&path).unwrap())
        })
        .collect();
    files.sort();
    let embedded: Vec<(String, String)> = embedded
        .iter()
        .map(|m| (format!("{:04}_{}", m.version, m.name), m.sql.to_owned()))
        .collect();
    assert_eq!(
        embedded,
        files,
        "migrations embedded vs files in {}",
        dir.display()
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the SQLite store records by itself is what sqlx recorded (and still records for
    /// PostgreSQL): a database migrated by either opens with the other.
    #[test]
    fn descriptions_and_checksums_are_sqlx_s() {
        let sql = "CREATE TABLE t (x INTEGER);\n-- a comment\n";
        let embedded = Embedded {
            version: 3,
            name: "bump_trigger",
            sql,
        };
        let sqlx = embedded.migration();
        assert_eq!(sqlx.version, 3);
        assert_eq!(sqlx.description, "bump trigger");
        assert_eq!(embedded.description(), sqlx.description);
        assert_eq!(embedded.checksum(), sqlx.checksum.to_vec());
        assert_eq!(embedded.checksum().len(), 48);
    }
}
