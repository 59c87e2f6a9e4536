//! [`Readers`]: the SQLite store's read-only connections. A read waits (asynchronously) for one
//! of a few permits, then runs on one of tokio's blocking threads with an idle connection — or
//! a new one, up to the pool's size — so that no read, however long (the statistics), holds a
//! runtime thread, and a read never waits for the writer (WAL).
//!
//! Hand-written rather than taken from a pool crate: for rusqlite 0.39 there is `r2d2_sqlite`
//! (deadpool's adaptor follows rusqlite 0.38 and 0.40), whose r2d2 blocks a thread while a
//! caller waits for a connection, starts threads of its own and checks connections before use;
//! what the store needs is a handful of connections to a local file, opened on first use and
//! kept, never checked or re-opened (a file does not go stale), waited for without blocking —
//! a semaphore and a list.

use super::queue::lock;
use super::{Access, connect};
use crate::StoreError;
use rusqlite::Connection;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use tokio::sync::Semaphore;

/// The SQLite store's reading connections (cheap to clone).
#[derive(Clone)]
pub(super) struct Readers {
    /// The database file.
    path: Arc<PathBuf>,
    /// Connections not in use.
    idle: Arc<Mutex<Vec<Connection>>>,
    /// One per connection the pool may have open: a read holds one while it runs.
    permits: Arc<Semaphore>,
}

impl std::fmt::Debug for Readers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Readers")
            .field("idle", &lock(&self.idle).len())
            .field("free", &self.permits.available_permits())
            .finish_non_exhaustive()
    }
}

impl Readers {
    /// Up to `size` read-only connections to the database file at `path`; one is opened now,
    /// so that a file that cannot be read fails here.
    pub fn open(path: &Path, size: usize) -> Result<Self, StoreError> {
        let first = connect(path, Access::Read)?;
        Ok(Self {
            path: Arc::new(path.to_owned()),
            idle: Arc::new(Mutex::new(vec![first])),
            permits: Arc::new(Semaphore::new(size)),
        })
    }

    /// Runs `work` with a reading connection on a blocking thread and returns its result. A
    /// connection is kept for the next read whatever `work` returned (a transaction it left
    /// open is rolled back when the `Transaction` is dropped).
    pub async fn read<T, F>(&self, work: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let permit = Arc::clone(&self.permits)
            .acquire_owned()
            .await
            .map_err(|_| StoreError::Closed)?;
        let (path, idle) = (Arc::clone(&self.path), Arc::clone(&self.idle));
        let read = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            let kept = lock(&idle).pop();
            let mut connection = match kept {
                Some(connection) => connection,
                None => connect(&path, Access::Read)?,
            };
            let result = work(&mut connection);
            lock(&idle).push(connection);
            result
        });
        match read.await {
            Ok(result) => result,
            Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
            // The runtime is shutting down.
            Err(_) => Err(StoreError::Closed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sqlite::testing::database;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn reads_share_a_few_read_only_connections() {
        let (_dir, path) = database();
        let readers = Readers::open(&path, 2).unwrap();
        let reads: Vec<_> = (0..20)
            .map(|_| {
                let readers = readers.clone();
                tokio::spawn(async move {
                    readers
                        .read(|db| {
                            std::thread::sleep(std::time::Duration::from_millis(5));
                            db.query_row("SELECT count(*) FROM parent", [], |row| {
                                row.get::<_, i64>(0)
                            })
                            .map_err(super::super::fault)
                        })
                        .await
                })
            })
            .collect();
        for read in reads {
            assert_eq!(read.await.unwrap().unwrap(), 1);
        }
        // Never more connections than permits, and they are kept.
        assert_eq!(lock(&readers.idle).len(), 2);
        // Read-only: a write through a reader is refused.
        let refused = readers
            .read(|db| {
                db.execute("INSERT INTO parent (id) VALUES (2)", [])
                    .map_err(super::super::fault)
            })
            .await
            .unwrap_err();
        assert!(refused.to_string().contains("readonly"), "{refused}");
    }
}
