//! [`KeyRing`]: the accepted API keys of a running server, replaced whole when the key file
//! changes — keys are added and revoked (rotated) without a restart.
//!
//! The server checks the key file's modification time and size every `[server] key_reload_ms`
//! and reloads it on a change; `SIGHUP` reloads at once. A reload that fails (a malformed file)
//! keeps the keys in force and logs the error; an entry whose user id is refused (see
//! [`crate::auth::check_user_id`]) is skipped with a logged warning, the rest put in force. Keys from the environment (`BRIDLE_ADMIN_KEY`,
//! `BRIDLE_USER_KEYS`) stay as the process started with them: a process cannot see its
//! environment change, so rotate through the key file (`bridle keys`).

use crate::auth::{Caller, KeyError, Keys};
use crate::error::ApiError;
use axum::http::HeaderMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime};

/// Where a reload reads keys from.
#[derive(Debug, Clone)]
pub struct KeySource {
    /// `BRIDLE_ADMIN_KEY`, as the process started.
    pub admin_key: Option<String>,
    /// `BRIDLE_USER_KEYS`, as the process started.
    pub user_keys: Option<String>,
    /// The key file.
    pub file: PathBuf,
}

impl KeySource {
    /// The keys these sources hold now.
    pub fn read(&self) -> Result<Keys, KeyError> {
        Keys::from_sources(
            self.admin_key.as_deref(),
            self.user_keys.as_deref(),
            &self.file,
        )
    }
}

/// The keys in force, swapped whole on reload.
#[derive(Debug)]
pub struct KeyRing {
    current: RwLock<Arc<Keys>>,
    source: Option<KeySource>,
    /// The key file as it was when the ring was made, so a change made before the watcher
    /// starts is not missed.
    first_stamp: Option<Stamp>,
}

/// What tells a changed file apart.
type Stamp = (SystemTime, u64, u64);

impl From<Keys> for KeyRing {
    /// A fixed set of keys (no source to reload from).
    fn from(keys: Keys) -> Self {
        Self {
            current: RwLock::new(Arc::new(keys)),
            source: None,
            first_stamp: None,
        }
    }
}

impl KeyRing {
    /// `keys`, reloadable from `source`.
    /// Make it right after reading `keys` from `source`: a change of the file after this is
    /// noticed by the watcher.
    pub fn new(keys: Keys, source: KeySource) -> Self {
        Self {
            current: RwLock::new(Arc::new(keys)),
            first_stamp: stamp(&source.file),
            source: Some(source),
        }
    }

    /// The keys in force.
    pub fn keys(&self) -> Arc<Keys> {
        // A poisoned lock still holds a whole `Arc`: swapping it cannot be torn.
        Arc::clone(&self.current.read().unwrap_or_else(|e| e.into_inner()))
    }

    /// The caller a request's headers authenticate, or 401.
    pub fn authenticate(&self, headers: &HeaderMap) -> Result<Caller, ApiError> {
        self.keys().authenticate(headers)
    }

    /// Number of keys in force.
    pub fn len(&self) -> usize {
        self.keys().len()
    }

    /// True when no key is in force.
    pub fn is_empty(&self) -> bool {
        self.keys().is_empty()
    }

    /// Reads the sources again and puts what they hold in force; on an error the keys in
    /// force stay. Returns the number of keys now in force.
    pub fn reload(&self) -> Result<usize, KeyError> {
        let Some(source) = &self.source else {
            return Ok(self.len());
        };
        let keys = source.read()?;
        let count = keys.len();
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(keys);
        Ok(count)
    }

    /// Reloads whenever the key file changes (checked every `every`) and on `SIGHUP`, until
    /// the task is aborted. `None` when there is nothing to reload from.
    pub fn spawn_watcher(self: &Arc<Self>, every: Duration) -> Option<tokio::task::JoinHandle<()>> {
        let file = self.source.as_ref()?.file.clone();
        let ring = Arc::clone(self);
        Some(tokio::spawn(async move {
            let mut seen = ring.first_stamp;
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let mut hangup = hangup_signal();
            loop {
                let signalled = tokio::select! {
                    _ = tick.tick() => false,
                    () = next_hangup(&mut hangup) => true,
                };
                let now = stamp(&file);
                if !signalled && now == seen {
                    continue;
                }
                seen = now;
                match ring.reload() {
                    Ok(0) => {
                        tracing::warn!(file = %file.display(), "API keys reloaded: none left, every request is refused")
                    }
                    Ok(count) => tracing::info!(file = %file.display(), count, "API keys reloaded"),
                    Err(error) => {
                        tracing::error!(%error, "API keys not reloaded; the keys in force stay")
                    }
                }
            }
        }))
    }
}

/// What tells a changed file: its modification time, size and (on Unix) inode, which a file
/// replaced by rename changes (None when it is missing).
fn stamp(file: &Path) -> Option<Stamp> {
    let meta = std::fs::metadata(file).ok()?;
    #[cfg(unix)]
    let inode = std::os::unix::fs::MetadataExt::ino(&meta);
    #[cfg(not(unix))]
    let inode = 0;
    Some((meta.modified().ok()?, meta.len(), inode))
}

#[cfg(unix)]
type Hangup = Option<tokio::signal::unix::Signal>;
#[cfg(not(unix))]
type Hangup = ();

#[cfg(unix)]
fn hangup_signal() -> Hangup {
    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()).ok()
}

#[cfg(not(unix))]
fn hangup_signal() -> Hangup {}

#[cfg(unix)]
async fn next_hangup(hangup: &mut Hangup) {
    match hangup {
        Some(signal) => {
            if signal.recv().await.is_none() {
                std::future::pending::<()>().await;
            }
        }
        None => std::future::pending().await,
    }
}

#[cfg(not(unix))]
async fn next_hangup(_: &mut Hangup) {
    std::future::pending().await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::{Role, StoredKey, write_file};
    use axum::http::HeaderValue;

    fn bearer(key: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(
            axum::http::header::AUTHORIZATION,
            HeaderValue::from_str(&format!("Bearer {key}")).unwrap(),
        );
        h
    }

    const OLD: &str = "old-key-0000000000000000";
    const NEW: &str = "new-key-0000000000000000";
    const ENV_ADMIN: &str = "env-admin-key-00000000000";

    fn ring(dir: &Path) -> Arc<KeyRing> {
        let source = KeySource {
            admin_key: Some(ENV_ADMIN.into()),
            user_keys: None,
            file: dir.join("api-keys.json"),
        };
        write_file(&source.file, &[StoredKey::new(Role::User, "ada", OLD)]).unwrap();
        Arc::new(KeyRing::new(source.read().unwrap(), source))
    }

    #[test]
    fn a_reload_puts_the_new_file_in_force_and_keeps_environment_keys() {
        let dir = tempfile::tempdir().unwrap();
        let ring = ring(dir.path());
        assert_eq!(ring.authenticate(&bearer(OLD)).unwrap().user_id, "ada");
        write_file(
            &dir.path().join("api-keys.json"),
            &[StoredKey::new(Role::User, "ada", NEW)],
        )
        .unwrap();
        assert_eq!(ring.reload().unwrap(), 2);
        assert!(ring.authenticate(&bearer(OLD)).is_err(), "revoked");
        assert_eq!(ring.authenticate(&bearer(NEW)).unwrap().user_id, "ada");
        assert_eq!(
            ring.authenticate(&bearer(ENV_ADMIN)).unwrap().role,
            Role::Admin
        );
    }

    #[test]
    fn a_broken_file_keeps_the_keys_in_force() {
        let dir = tempfile::tempdir().unwrap();
        let ring = ring(dir.path());
        std::fs::write(dir.path().join("api-keys.json"), "{not json").unwrap();
        assert!(ring.reload().is_err());
        assert_eq!(ring.authenticate(&bearer(OLD)).unwrap().user_id, "ada");
    }

    #[tokio::test]
    async fn the_watcher_notices_a_changed_file() {
        let dir = tempfile::tempdir().unwrap();
        let ring = ring(dir.path());
        let watcher = ring.spawn_watcher(Duration::from_millis(20)).unwrap();
        write_file(
            &dir.path().join("api-keys.json"),
            &[
                StoredKey::new(Role::User, "ada", OLD),
                StoredKey::new(Role::User, "bob", NEW),
            ],
        )
        .unwrap();
        let mut accepted = false;
        for _ in 0..250 {
            if ring.authenticate(&bearer(NEW)).is_ok() {
                accepted = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        watcher.abort();
        assert!(accepted, "the new key is accepted without a restart");
    }
}
