//! Bridle's files are its owner's alone: the data dir is created `0700`, and the files Bridle
//! keeps there — the SQLite database with its `-wal` and `-shm`, the `-lock` file, the key file
//! — are created `0600` (SQLite gives `-wal` and `-shm` the database file's mode, so the
//! database file is created here, `0600`, before SQLite opens it). Modes are set when a file
//! or directory is created, never by a `chmod` after, so there is no moment when others may
//! read it.
//!
//! What exists already (made by an older version, or by hand) is handled so: a file of Bridle's
//! that others may read is tightened to `0600` (logged); a directory Bridle did not create is
//! left as it is, with a warning when others may read it — it may be a directory the operator
//! shares on purpose (or `data_dir = "."`). On systems other than Unix nothing is changed.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::Path;

/// The mode of a directory Bridle creates for its files.
pub const DIR_MODE: u32 = 0o700;

/// The mode of a file Bridle creates.
pub const FILE_MODE: u32 = 0o600;

/// Creates `dir` (its missing parents with the usual mode, `dir` itself [`DIR_MODE`]); one that
/// exists is left as it is (see [`warn_if_shared`]).
pub fn create_dir(dir: &Path) -> io::Result<()> {
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    let mut builder = std::fs::DirBuilder::new();
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, DIR_MODE);
    match builder.create(dir) {
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists && dir.is_dir() => Ok(()),
        other => other,
    }
}

/// Logs a warning when others may read `dir`, a directory of Bridle's files.
pub fn warn_if_shared(dir: &Path) {
    if let Some(mode) = open_to_others(dir) {
        tracing::warn!(
            dir = %dir.display(),
            mode = format!("{mode:o}"),
            "others may read this directory of Bridle's files; the files are private, `chmod 700` it to hide their names too"
        );
    }
}

/// Options that create a file [`FILE_MODE`] (an existing file keeps its mode: see
/// [`tighten`]).
pub fn options() -> OpenOptions {
    let mut options = OpenOptions::new();
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, FILE_MODE);
    options
}

/// Creates `file` [`FILE_MODE`] when it is missing (empty); an existing one is [`tighten`]ed.
pub fn create_file(file: &Path) -> io::Result<()> {
    match options().write(true).create_new(true).open(file) {
        Ok(_) => Ok(()),
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {
            tighten(file);
            Ok(())
        }
        Err(error) => Err(error),
    }
}

/// Opens (creating it [`FILE_MODE`] when missing) `file` for writing, without truncating it;
/// an existing one is [`tighten`]ed.
pub fn open_file(file: &Path) -> io::Result<File> {
    let opened = options()
        .write(true)
        .create(true)
        .truncate(false)
        .open(file)?;
    tighten(file);
    Ok(opened)
}

/// Takes the group's and others' access away from an existing `file` of Bridle's, logging it;
/// a file that is missing or already private is left alone. Failing (a file of another owner)
/// is logged, not an error: the file still works.
pub fn tighten(file: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let Some(mode) = open_to_others(file) else {
            return;
        };
        let private = std::fs::Permissions::from_mode(mode & !0o077);
        match std::fs::set_permissions(file, private) {
            Ok(()) => tracing::warn!(
                file = %file.display(),
                was = format!("{mode:o}"),
                "made a file others could read private (0600)"
            ),
            Err(error) => tracing::warn!(
                file = %file.display(),
                mode = format!("{mode:o}"),
                %error,
                "others may read this file and it could not be made private"
            ),
        }
    }
    #[cfg(not(unix))]
    let _ = file;
}

/// The permission bits of `path` when the group or others have any access to it.
fn open_to_others(path: &Path) -> Option<u32> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path).ok()?.permissions().mode() & 0o7777;
        (mode & 0o077 != 0).then_some(mode)
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}

#[cfg(test)]
#[cfg(unix)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn new_dirs_and_files_are_private() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("a/data");
        create_dir(&dir).unwrap();
        assert_eq!(mode(&dir), 0o700);
        let file = dir.join("bridle.db");
        create_file(&file).unwrap();
        assert_eq!(mode(&file), 0o600);
        let lock = dir.join("bridle.db-lock");
        drop(open_file(&lock).unwrap());
        assert_eq!(mode(&lock), 0o600);
        // Again, on what exists: no error, nothing truncated.
        std::fs::write(&file, b"kept").unwrap();
        create_dir(&dir).unwrap();
        create_file(&file).unwrap();
        assert_eq!(std::fs::read(&file).unwrap(), b"kept");
    }

    #[test]
    fn existing_files_others_may_read_are_tightened() {
        let root = tempfile::tempdir().unwrap();
        let (db, lock) = (root.path().join("bridle.db"), root.path().join("x-lock"));
        for file in [&db, &lock] {
            std::fs::write(file, b"old").unwrap();
            std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o644)).unwrap();
        }
        create_file(&db).unwrap();
        drop(open_file(&lock).unwrap());
        assert_eq!((mode(&db), mode(&lock)), (0o600, 0o600));
        assert_eq!(std::fs::read(&db).unwrap(), b"old");
        // A directory that exists is left as it is.
        std::fs::set_permissions(root.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        create_dir(root.path()).unwrap();
        warn_if_shared(root.path());
        assert_eq!(mode(root.path()), 0o755);
    }
}
