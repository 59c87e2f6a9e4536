//! [`Keys`] and [`Caller`]: API keys with roles `user` (bound to a user id) and `admin`.
//!
//! Keys come from `BRIDLE_ADMIN_KEY`, `BRIDLE_USER_KEYS=user:key,user2:key2` and the key file
//! in the data dir (`api-keys.json`), which holds only SHA-256 hashes. On first start with no
//! key anywhere, an admin key and a demo user key are generated, stored hashed and returned once
//! so the server can print them. A request authenticates with `Authorization: Bearer KEY` or
//! `x-api-key: KEY`; keys are high-entropy random strings, so a fast hash is the right one.

use crate::error::ApiError;
use axum::http::HeaderMap;
use rand::RngExt;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::Path;

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
        if !keys.by_hash.is_empty() {
            return Ok((keys, None));
        }
        let generated = GeneratedKeys {
            admin: generate_key(),
            user: generate_key(),
        };
        let entries = vec![
            StoredKey::new(Role::Admin, "admin", &generated.admin),
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
            keys.add_key(key, Role::Admin, "admin")?;
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

    fn insert_stored(&mut self, entries: &[StoredKey]) {
        for entry in entries {
            self.by_hash.insert(
                entry.sha256.clone(),
                Caller {
                    user_id: entry.user_id.clone(),
                    role: entry.role,
                },
            );
        }
    }

    /// Adds a key (for configuration and tests).
    pub fn add_key(&mut self, key: &str, role: Role, user_id: &str) -> Result<(), KeyError> {
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
            .and_then(|v| {
                v.strip_prefix("Bearer ")
                    .or_else(|| v.strip_prefix("bearer "))
            });
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

/// Writes a key file whole: to a temporary file beside it, then renamed over it, so a server
/// reloading it never reads half a file.
pub fn write_file(file: &Path, entries: &[StoredKey]) -> Result<(), KeyError> {
    let error = |message: String| KeyError::File {
        path: file.display().to_string(),
        message,
    };
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir).map_err(|e| error(e.to_string()))?;
    }
    let text = serde_json::to_string_pretty(entries).map_err(|e| error(e.to_string()))?;
    let mut staged = file.as_os_str().to_owned();
    staged.push(".tmp");
    let staged = std::path::PathBuf::from(staged);
    std::fs::write(&staged, text).map_err(|e| error(e.to_string()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&staged, std::fs::Permissions::from_mode(0o600))
            .map_err(|e| error(e.to_string()))?;
    }
    std::fs::rename(&staged, file).map_err(|e| error(e.to_string()))
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
