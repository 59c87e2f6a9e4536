//! The data dir of `bridle serve` is its owner's alone: created `0700`, with the database, its
//! `-wal`, `-shm` and `-lock` files and the key file `0600`; an existing database others
//! could read is made private.

use crate::serve_in;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

const FILES: [&str; 5] = [
    "bridle.db",
    "bridle.db-wal",
    "bridle.db-shm",
    "bridle.db-lock",
    "api-keys.json",
];

/// Every file `0600`.
fn private() -> Vec<(&'static str, String)> {
    FILES.iter().map(|f| (*f, "600".to_owned())).collect()
}

/// Serves from `data` until the store answered a health check; the modes of its files.
async fn modes_after_serving(data: &Path) -> Vec<(&'static str, String)> {
    let (_server, url) = serve_in(data, &[]);
    let health = reqwest::get(format!("{url}/healthz")).await.unwrap();
    assert!(health.status().is_success());
    FILES
        .iter()
        .map(|f| (*f, format!("{:o}", mode(&data.join(f)))))
        .collect()
}

#[tokio::test]
async fn a_fresh_data_dir_and_its_files_are_private() {
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("data");
    let modes = modes_after_serving(&data).await;
    assert_eq!(mode(&data), 0o700);
    assert_eq!(modes, private());
}

#[tokio::test]
async fn an_existing_database_others_could_read_is_made_private() {
    let data = tempfile::tempdir().unwrap();
    std::fs::set_permissions(data.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    for file in ["bridle.db", "bridle.db-lock"] {
        let path = data.path().join(file);
        std::fs::write(&path, b"").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let modes = modes_after_serving(data.path()).await;
    assert_eq!(modes, private());
    // A directory Bridle did not create is left as it is (with a warning in the log).
    assert_eq!(mode(data.path()), 0o755);
}
