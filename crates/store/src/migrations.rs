//! [`Embedded`] migrations: each backend's `migrations/<backend>/NNNN_name.sql` files, compiled
//! into the binary with `include_str!` and turned into a sqlx [`Migrator`]. Versions, descriptions
//! and checksums are the ones `sqlx::migrate!` would compute from the same files, so either way of
//! embedding sees the same applied history.

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

/// A migrator that applies `migrations` in version order, under the backend's migration lock.
pub(super) fn migrator(migrations: &[Embedded]) -> Migrator {
    Migrator::with_migrations(
        migrations
            .iter()
            .map(|m| {
                Migration::new(
                    m.version,
                    Cow::Owned(m.name.replace('_', " ")),
                    MigrationType::Simple,
                    m.sql.into_sql_str(),
                    false,
                )
            })
            .collect(),
    )
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
