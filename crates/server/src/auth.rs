//! [`Keys`] and [`Caller`]: API keys with roles `user` (bound to a user id) and `admin`.
//!
//! Keys come from `BRIDLE_ADMIN_KEY`, `BRIDLE_USER_KEYS=user:key,user2:key2` and the key file
//! in the data dir (`api-keys.json`), which holds only SHA-256 hashes. On first start with no
//! key anywhere, an admin key and a demo user key are generated, stored hashed and returned once
//! so the server can print them. A request authenticates with `Authorization: Bearer KEY` (the
//! scheme in any case) or `x-api-key: KEY`; keys are high-entropy random strings, so a fast hash
//! is the right one.
//!
//! A user id is 1 to [`MAX_USER_ID_LEN`] characters of `A-Z a-z 0-9 . _ @ -` (well within the
//! [`MAX_ID_BYTES`](crate::limits::MAX_ID_BYTES) the rate limiter keys on), and no user key may
//! act as [`ADMIN_USER`], the id of the environment's and the generated admin key: such a user
//! would own (and read) what admins made. `BRIDLE_USER_KEYS` with a bad user id is refused; a
//! key file entry with one is skipped with a logged warning, so the file's other keys (and
//! its revocations) stay in force. The key file is changed under an advisory lock on a sibling
//! file ([`lock_file`]) and written `0600` from its creation.

use crate::error::ApiError;
use axum::http::HeaderMap;
use rand::RngExt;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// Longest user id, in characters (all ASCII, so bytes too).
pub const MAX_USER_ID_LEN: usize = 64;

// A user id is always one the rate limiter accepts: it never fails open on one.
const _: () = assert!(MAX_USER_ID_LEN <= crate::limits::MAX_ID_BYTES);

/// The user id admin keys from the environment (and the generated one) act as; no user key
/// may act as it (in any case).
pub const ADMIN_USER: &str = "admin";

/// What a key may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Own conversations, validated messages only.
    User,
    /// Everything, including every attempt and the admin API.
    Admin,
}

/// Who made a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// The user id the key is bound to (`admin` for admin keys).
    pub user_id: String,
    /// The key's role.
    pub role: Role,
}

impl Caller {
    /// Refuses non-admins with 403.
    pub fn require_admin(&self) -> Result<(), ApiError> {
        match self.role {
            Role::Admin => Ok(()),
            Role::User => Err(ApiError::Forbidden("this needs an admin key".into())),
        }
    }
}

/// One stored key: its hash, never the key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoredKey {
    /// Role.
    pub role: Role,
    /// Bound user id.
    pub user_id: String,
    /// Hex SHA-256 of the key.
    pub sha256: String,
}

impl StoredKey {
    /// The stored form of `key`.
    pub fn new(role: Role, user_id: &str, key: &str) -> Self {
        Self {
            role,
            user_id: user_id.to_owned(),
            sha256: hash(key),
        }
    }

    /// A short public name of the key: the first 12 hex digits of its hash.
    pub fn id(&self) -> &str {
        self.sha256.get(..12).unwrap_or(&self.sha256)
    }
}

/// Keys generated on first start, shown once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneratedKeys {
    /// The admin key.
    pub admin: String,
    /// The demo user's key (user id `demo`).
    pub user: String,
}

/// A key source that could not be read.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// `BRIDLE_USER_KEYS` is malformed.
    #[error("BRIDLE_USER_KEYS must look like user:key,user2:key2 (bad entry {0:?})")]
    BadUserKeys(String),
    /// A key is too short to be safe.
    #[error("API keys must be at least 16 characters ({0})")]
    TooShort(String),
    /// A user id a key may not act as.
    #[error("user id {user:?} refused: {reason}")]
    BadUserId {
        /// The user id (its first 80 characters).
        user: String,
        /// Why.
        reason: &'static str,
    },
    /// The key file could not be read or written.
    #[error("key file {path}: {message}")]
    File {
        /// The file.
        path: String,
        /// What went wrong.
        message: String,
    },
}

/// The accepted keys, by hash.
#[derive(Debug, Clone, Default)]
pub struct Keys {
    by_hash: HashMap<String, Caller>,
}

/// Whether a key of `role` may act as `user`: 1 to [`MAX_USER_ID_LEN`] characters of
/// `A-Z a-z 0-9 . _ @ -`, and not [`ADMIN_USER`] for a user key.
pub fn check_user_id(role: Role, user: &str) -> Result<(), KeyError> {
    let refuse = |reason| {
        Err(KeyError::BadUserId {
            user: user.chars().take(80).collect(),
            reason,
        })
    };
    if user.is_empty() {
        return refuse("a user id must not be empty");
    }
    if user.len() > MAX_USER_ID_LEN {
        return refuse("a user id is at most 64 characters");
    }
    if !user
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'@' | b'-'))
    {
        return refuse("a user id has only the characters A-Z a-z 0-9 . _ @ -");
    }
    if role == Role::User && user.eq_ignore_ascii_case(ADMIN_USER) {
        return refuse("\"admin\" is the admin keys' user id; a user key cannot act as it");
    }
    Ok(())
}

/// Hex SHA-256 of a key.
pub fn hash(key: &str) -> String {
    hex::encode(Sha256::digest(key.as_bytes()))
}

/// A new random key: `bk_` + 40 characters from [A-Za-z0-9] (≈ 238 bits).
pub fn generate_key() -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut rng = rand::rng();
    let body: String = (0..40)
        .map(|_| char::from(ALPHABET[rng.random_range(0..ALPHABET.len())]))
        .collect();
    format!("bk_{body}")
}

impl Keys {
    /// Keys from the environment values and the key file; generates and stores an admin and a
    /// demo user key when there are none at all.
    pub fn load(
        admin_key: Option<&str>,
        user_keys: Option<&str>,
        file: &Path,
    ) -> Result<(Self, Option<GeneratedKeys>), KeyError> {
        let mut keys = Self::from_sources(admin_key, user_keys, file)?;
        // A file whose every entry was skipped (logged) is not replaced.
        if !keys.by_hash.is_empty() || !read_file(file)?.is_empty() {
            return Ok((keys, None));
        }
        // Only now the lock (a read-only key file, a mounted secret, needs none), and the file
        // read again under it: a `bridle keys add` may have come first.
        let _lock = lock_file(file)?;
        if !read_file(file)?.is_empty() {
            return Ok((Self::from_sources(admin_key, user_keys, file)?, None));
        }
        let generated = GeneratedKeys {
            admin: generate_key(),
            user: generate_key(),
        };
        let entries = vec![
            StoredKey::new(Role::Admin, ADMIN_USER, &generated.admin),
            StoredKey::new(Role::User, "demo", &generated.user),
        ];
        write_file(file, &entries)?;
        keys.insert_stored(&entries);
        Ok((keys, Some(generated)))
    }

    /// Keys from the environment values and the key file, generating nothing (a reload).
    pub fn from_sources(
        admin_key: Option<&str>,
        user_keys: Option<&str>,
        file: &Path,
    ) -> Result<Self, KeyError> {
        let mut keys = Self::default();
        if let Some(key) = admin_key.map(str::trim).filter(|k| !k.is_empty()) {
            keys.add_key(key, Role::Admin, ADMIN_USER)?;
        }
        for entry in user_keys
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .filter(|e| !e.is_empty())
        {
            let Some((user, key)) = entry
                .split_once(':')
                .filter(|(u, k)| !u.trim().is_empty() && !k.trim().is_empty())
            else {
                return Err(KeyError::BadUserKeys(
                    entry.split(':').next().unwrap_or_default().to_owned(),
                ));
            };
            keys.add_key(key.trim(), Role::User, user.trim())?;
        }
        keys.insert_stored(&read_file(file)?);
        Ok(keys)
    }

    /// Puts the key file's entries in force, skipping (and logging) those whose user id a key
    /// of their role may not act as.
    fn insert_stored(&mut self, entries: &[StoredKey]) {
        for entry in entries {
            if let Err(error) = check_user_id(entry.role, &entry.user_id) {
                tracing::warn!(key = entry.id(), %error, "key file entry skipped: its key is refused");
                continue;
            }
            self.by_hash.insert(
                entry.sha256.clone(),
                Caller {
                    user_id: entry.user_id.clone(),
                    role: entry.role,
                },
            );
        }
    }

    /// Adds a key (for configuration and tests); refuses a short key and a user id a key of
    /// `role` may not act as ([`check_user_id`]).
    pub fn add_key(&mut self, key: &str, role: Role, user_id: &str) -> Result<(), KeyError> {
        check_user_id(role, user_id)?;
        if key.len() < 16 {
            return Err(KeyError::TooShort(
                format!("{role:?} key of {user_id}").to_lowercase(),
            ));
        }
        self.by_hash.insert(
            hash(key),
            Caller {
                user_id: user_id.to_owned(),
                role,
            },
        );
        Ok(())
    }

    /// The caller a request's headers authenticate, or 401.
    pub fn authenticate(&self, headers: &HeaderMap) -> Result<Caller, ApiError> {
        let bearer = headers
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(bearer_token);
        let key = bearer
            .or_else(|| headers.get("x-api-key").and_then(|v| v.to_str().ok()))
            .map(str::trim);
        let Some(key) = key.filter(|k| !k.is_empty()) else {
            return Err(ApiError::Unauthorized(
                "missing API key: send Authorization: Bearer KEY".into(),
            ));
        };
        self.by_hash
            .get(&hash(key))
            .cloned()
            .ok_or_else(|| ApiError::Unauthorized("invalid API key".into()))
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.by_hash.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.by_hash.is_empty()
    }
}

/// The credentials of an `Authorization` value of the `Bearer` scheme, named in any case
/// (RFC 9110 §11.1).
fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim_start().split_once([' ', '\t'])?;
    scheme.eq_ignore_ascii_case("bearer").then_some(token)
}

/// The advisory lock on a key file, held until dropped.
#[derive(Debug)]
pub struct KeyFileLock {
    _file: std::fs::File,
}

/// The lock file of `file`: `api-keys.json.lock` beside it.
fn lock_path(file: &Path) -> PathBuf {
    let mut name = file.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

/// Waits for and takes the key file's lock (an advisory lock on a sibling file, created
/// `0600`): hold it around a read, change and write of the file, so that concurrent changes
/// (`bridle keys add` twice at once) do not undo each other.
pub fn lock_file(file: &Path) -> Result<KeyFileLock, KeyError> {
    let path = lock_path(file);
    let error = |message: String| KeyError::File {
        path: path.display().to_string(),
        message,
    };
    if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
        bridle_engine::private_files::create_dir(dir).map_err(|e| error(e.to_string()))?;
        bridle_engine::private_files::warn_if_shared(dir);
    }
    let lock = bridle_engine::private_files::open_file(&path).map_err(|e| error(e.to_string()))?;
    lock.lock().map_err(|e| error(e.to_string()))?;
    Ok(KeyFileLock { _file: lock })
}

/// The entries of a key file (none when it does not exist).
pub fn read_file(file: &Path) -> Result<Vec<StoredKey>, KeyError> {
    let error = |message: String| KeyError::File {
        path: file.display().to_string(),
        message,
    };
    match std::fs::read_to_string(file) {
        Ok(text) => serde_json::from_str(&text).map_err(|e| error(e.to_string())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(error(e.to_string())),
    }
}

/// Writes a key file whole: to a temporary file beside it (`0600` from its creation), then
/// renamed over it, so a server reloading it never reads half a file. Hold [`lock_file`]
/// around reading, changing and writing it.
pub fn write_file(file: &Path, entries: &[StoredKey]) -> Result<(), KeyError> {
    let error = |message: String| KeyError::File {
        path: file.display().to_string(),
        message,
    };
    if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
        bridle_engine::private_files::create_dir(dir).map_err(|e| error(e.to_string()))?;
    }
    let text = serde_json::to_string_pretty(entries).map_err(|e| error(e.to_string()))?;
    let mut staged = file.as_os_str().to_owned();
    staged.push(".tmp");
    let staged = PathBuf::from(staged);
    let mut out = create_staged(&staged).map_err(|e| error(e.to_string()))?;
    out.write_all(text.as_bytes())
        .and_then(|()| out.sync_all())
        .map_err(|e| error(e.to_string()))?;
    std::fs::rename(&staged, file).map_err(|e| error(e.to_string()))
}

/// A new, empty staging file, `0600` from its creation (one a crash left is replaced).
fn create_staged(staged: &Path) -> std::io::Result<std::fs::File> {
    match std::fs::remove_file(staged) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    bridle_engine::private_files::options()
        .write(true)
        .create_new(true)
        .open(staged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(name: &str, value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(
            axum::http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
            HeaderValue::from_str(value).unwrap(),
        );
        h
    }

    #[test]
    fn first_start_generates_hashed_keys_once() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("api-keys.json");
        let (keys, generated) = Keys::load(None, None, &file).unwrap();
        let generated = generated.unwrap();
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(
            !text.contains(&generated.admin) && !text.contains(&generated.user),
            "keys are stored hashed"
        );
        let admin = keys
            .authenticate(&headers(
                "authorization",
                &format!("Bearer {}", generated.admin),
            ))
            .unwrap();
        assert_eq!(admin.role, Role::Admin);
        let user = keys
            .authenticate(&headers("x-api-key", &generated.user))
            .unwrap();
        assert_eq!((user.role, user.user_id.as_str()), (Role::User, "demo"));
        // The second start reads the file and generates nothing.
        let (again, none) = Keys::load(None, None, &file).unwrap();
        assert!(none.is_none());
        assert_eq!(again.len(), 2);
    }

    #[test]
    fn environment_keys_replace_generation() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("api-keys.json");
        let (keys, generated) = Keys::load(
            Some("admin-key-0123456789"),
            Some("ada:ada-key-0123456789, bob:bob-key-0123456789"),
            &file,
        )
        .unwrap();
        assert!(generated.is_none());
        assert!(!file.exists());
        assert_eq!(
            keys.authenticate(&headers("x-api-key", "bob-key-0123456789"))
                .unwrap()
                .user_id,
            "bob"
        );
        assert!(Keys::load(None, Some("nocolon"), &file).is_err());
        assert!(Keys::load(Some("short"), None, &file).is_err());
    }

    #[test]
    fn the_bearer_scheme_is_named_in_any_case() {
        let mut keys = Keys::default();
        keys.add_key("right-key-0123456789", Role::User, "ada")
            .unwrap();
        for value in [
            "Bearer right-key-0123456789",
            "bearer right-key-0123456789",
            "BEARER right-key-0123456789",
            "bEaReR \tright-key-0123456789",
        ] {
            let caller = keys.authenticate(&headers("authorization", value));
            assert_eq!(caller.unwrap().user_id, "ada", "{value}");
        }
        for value in ["Bearerright-key-0123456789", "Basic right-key-0123456789"] {
            assert!(
                keys.authenticate(&headers("authorization", value)).is_err(),
                "{value}"
            );
        }
    }

    #[test]
    fn user_ids_are_short_plain_and_not_admin_for_user_keys() {
        for user in [
            "ada",
            "a",
            "ada.lovelace@example.org",
            "u_1-2",
            &"x".repeat(64),
        ] {
            assert!(check_user_id(Role::User, user).is_ok(), "{user}");
        }
        assert!(check_user_id(Role::Admin, "admin").is_ok());
        for user in [
            "",
            &"x".repeat(65),
            &"x".repeat(crate::limits::MAX_ID_BYTES + 1),
            "a b",
            "ada:x",
            "ada\n",
            "é",
            "admin",
            "ADMIN",
        ] {
            assert!(check_user_id(Role::User, user).is_err(), "{user:?}");
        }
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("api-keys.json");
        let long = format!("{}:long-key-0123456789", "u".repeat(300));
        for env in [
            "admin:user-key-0123456789",
            "a b:user-key-0123456789",
            long.as_str(),
        ] {
            let refused = Keys::load(None, Some(env), &file).unwrap_err();
            assert!(matches!(refused, KeyError::BadUserId { .. }), "{refused}");
            assert!(refused.to_string().len() < 200, "{refused}");
        }
        assert!(!file.exists(), "nothing generated");
        let mut keys = Keys::default();
        assert!(
            keys.add_key("user-key-0123456789", Role::User, "Admin")
                .is_err()
        );
        assert!(keys.is_empty());
    }

    #[test]
    fn key_file_entries_with_a_refused_user_id_are_skipped_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("api-keys.json");
        let entries = [
            StoredKey::new(Role::User, "admin", "posing-as-admin-0123"),
            StoredKey::new(Role::User, &"u".repeat(300), "too-long-user-0123456"),
            StoredKey::new(Role::User, "ada", "ada-key-0123456789"),
            StoredKey::new(Role::Admin, "admin", "admin-key-0123456789"),
        ];
        write_file(&file, &entries).unwrap();
        let (keys, generated) = Keys::load(None, None, &file).unwrap();
        assert!(generated.is_none());
        assert_eq!(keys.len(), 2);
        for refused in ["posing-as-admin-0123", "too-long-user-0123456"] {
            assert!(keys.authenticate(&headers("x-api-key", refused)).is_err());
        }
        let admin = keys
            .authenticate(&headers("x-api-key", "admin-key-0123456789"))
            .unwrap();
        assert_eq!((admin.role, admin.user_id.as_str()), (Role::Admin, "admin"));
        // A file whose every entry is skipped is neither replaced nor completed.
        write_file(&file, &entries[..2]).unwrap();
        let (keys, generated) = Keys::load(None, None, &file).unwrap();
        assert!(generated.is_none() && keys.is_empty());
        assert_eq!(read_file(&file).unwrap(), entries[..2]);
    }

    #[cfg(unix)]
    #[test]
    fn the_key_file_is_staged_private_from_its_creation() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let staged = dir.path().join("api-keys.json.tmp");
        // One a crash left behind, readable by others.
        std::fs::write(&staged, "old").unwrap();
        std::fs::set_permissions(&staged, std::fs::Permissions::from_mode(0o644)).unwrap();
        let file = create_staged(&staged).unwrap();
        let mode = file.metadata().unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(file.metadata().unwrap().len(), 0);
        let lock = lock_file(&dir.path().join("api-keys.json")).unwrap();
        let lock_mode = std::fs::metadata(dir.path().join("api-keys.json.lock"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(lock_mode & 0o777, 0o600);
        drop(lock);
    }

    #[test]
    fn missing_and_wrong_keys_are_401() {
        let mut keys = Keys::default();
        keys.add_key("right-key-0123456789", Role::User, "ada")
            .unwrap();
        assert!(matches!(
            keys.authenticate(&HeaderMap::new()),
            Err(ApiError::Unauthorized(_))
        ));
        assert!(matches!(
            keys.authenticate(&headers("authorization", "Bearer wrong-key-0123456789")),
            Err(ApiError::Unauthorized(_))
        ));
        assert!(matches!(
            keys.authenticate(&headers("authorization", "Basic abc")),
            Err(ApiError::Unauthorized(_))
        ));
    }
}
