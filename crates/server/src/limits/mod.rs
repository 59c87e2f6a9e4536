//! Per-user limits of the gateway: requests per minute and concurrent conversations.
//!
//! Two backends implement one [`Limiter`] trait:
//!
//! - [`MemoryLimiter`]: in-process, for a single gateway instance (and tests);
//! - [`RedisLimiter`]: shared by every gateway instance through one Redis server.
//!
//! [`build`] picks the backend from a [`LimitsConfig`]: Redis when `redis_url` is set,
//! in-process otherwise.
//!
//! # The request limit: a sliding-window log
//!
//! "10 requests per minute" is enforced literally: a request is admitted when fewer than
//! `requests_per_minute` requests of that user were admitted in the 60 seconds before it, so
//! **no 60-second span ever contains more than the limit**. Each user's state is the log of the
//! admission times inside the window (at most `requests_per_minute` entries — 10 by default,
//! 10,000 at most), which also gives an exact `Retry-After`: the moment the oldest counted
//! request leaves the window. Rejected requests are not logged, so a client that keeps
//! retrying too early is not locked out for longer.
//!
//! The alternatives were rejected on purpose. A calendar-minute counter (what the old gateway
//! did) admits twice the limit across a minute boundary. A token bucket / GCRA with a burst of
//! `N` and a refill of `N` per minute admits `2N - 1` requests within one minute (the burst,
//! then the refill). A two-bucket "sliding window counter" is an approximation. The log costs
//! `O(N)` memory per active user, which is tiny for the limits a gateway uses.
//!
//! # The conversation limit: leases
//!
//! [`Limiter::acquire_conversation`] takes a [`Lease`] on one of the user's
//! `concurrent_conversations` slots. A slot belongs to a *conversation*: several leases on the
//! same conversation (two turns of one conversation at once) share one slot, and the slot is
//! freed when the last of them is released. A lease is released by [`Lease::release`], by
//! dropping it, or, for every lease of a conversation at once, by
//! [`Limiter::release_conversation`].
//!
//! In process, dropping a lease frees its slot synchronously, so a slot cannot leak. In Redis a
//! lease is a key with a TTL (`lease_ttl_secs`) that a background task of the lease renews
//! every third of the TTL while the lease is alive; if the gateway instance crashes, its
//! leases stop being renewed and expire, so a crashed instance cannot hold slots for longer
//! than the TTL.
//!
//! # Atomicity
//!
//! Every decision is one atomic step: under a per-shard mutex in process, inside one Lua
//! script in Redis (Redis runs a script without interleaving other commands). There is no
//! read-then-write window in which two requests can both see the last free slot.
//!
//! # Answering a rejection
//!
//! A [`Rejection`] becomes HTTP **429 Too Many Requests** with
//! `Retry-After: {rejection.retry_after_secs()}` (whole seconds, rounded up, at least 1) and a
//! body from its `Serialize` impl. Never 500: being limited is not a server fault.
//!
//! # When Redis is down: fail open to a local limiter (recommended)
//!
//! A store failure is a [`LimitError`] (`Unavailable`, `Timeout`, `UnexpectedReply`); the
//! limiter never guesses. The recommended server policy is to **fail open, but not unlimited**:
//! log at `warn`, and decide with a per-instance [`MemoryLimiter`] built from the same
//! [`Limits`] until Redis answers again. The limits then hold per instance instead of across
//! instances (at most `instances × limit`), so an outage of the limit store neither takes the
//! gateway down nor removes the cost protection. Failing closed (HTTP 503, never 429, since
//! the user did nothing wrong) is only right where exceeding a limit is worse than refusing
//! every user. Every Redis call is bounded by `redis_timeout_ms`, so a dead store costs a
//! request at most that long.

// Code on the request path must not panic, whatever the workspace lints say.
#![warn(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::unreachable,
    clippy::todo,
    clippy::unimplemented
)]

mod memory;
mod redis;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize, Serializer, ser::SerializeStruct};

pub use self::memory::MemoryLimiter;
pub use self::redis::RedisLimiter;

/// The window of the request limit: the limit is per minute.
pub const REQUEST_WINDOW: Duration = Duration::from_secs(60);

/// The `Retry-After` of a conversation-limit rejection.
///
/// A conversation slot frees when another conversation of the user ends, which nobody can
/// predict; this is a polling interval short enough to feel responsive and long enough not to
/// turn waiting clients into load.
pub const CONVERSATION_RETRY_AFTER: Duration = Duration::from_secs(5);

/// Largest accepted `requests_per_minute` (bounds the per-user request log).
pub const MAX_REQUESTS_PER_MINUTE: u32 = 10_000;

/// Largest accepted `concurrent_conversations`.
pub const MAX_CONCURRENT_CONVERSATIONS: u32 = 1_000;

/// Longest accepted user or conversation id, in bytes.
pub const MAX_ID_BYTES: usize = 256;

/// Which limit rejected a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LimitKind {
    /// Too many requests in the last minute.
    RequestsPerMinute,
    /// Too many conversations active at once.
    ConcurrentConversations,
}

impl LimitKind {
    /// The limit's name as the API reports it: `requests_per_minute` or
    /// `concurrent_conversations` (also the name of its configuration key).
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::RequestsPerMinute => "requests_per_minute",
            Self::ConcurrentConversations => "concurrent_conversations",
        }
    }
}

impl fmt::Display for LimitKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A request or conversation refused by a limit: answer HTTP 429 with `Retry-After`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Rejection {
    /// The limit that was reached.
    pub limit: LimitKind,
    /// The configured value of that limit (e.g. 10 requests per minute).
    pub limit_value: u32,
    /// How long to wait before trying again: exact for the request limit (when the oldest
    /// counted request leaves the window), [`CONVERSATION_RETRY_AFTER`] for the conversation
    /// limit. Never zero.
    pub retry_after: Duration,
}

impl Rejection {
    pub(crate) fn requests(limit_value: u32, retry_after: Duration) -> Self {
        Self {
            limit: LimitKind::RequestsPerMinute,
            limit_value,
            retry_after: retry_after.max(Duration::from_millis(1)),
        }
    }

    pub(crate) fn conversations(limit_value: u32) -> Self {
        Self {
            limit: LimitKind::ConcurrentConversations,
            limit_value,
            retry_after: CONVERSATION_RETRY_AFTER,
        }
    }

    /// The value of the `Retry-After` header: whole seconds, rounded up, at least 1.
    #[must_use]
    pub fn retry_after_secs(&self) -> u64 {
        let d = self.retry_after;
        let secs = d.as_secs().saturating_add(u64::from(d.subsec_nanos() > 0));
        secs.max(1)
    }
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.limit {
            LimitKind::RequestsPerMinute => write!(
                f,
                "rate limit reached: {} requests per minute",
                self.limit_value
            )?,
            LimitKind::ConcurrentConversations => write!(
                f,
                "limit reached: {} concurrent conversations",
                self.limit_value
            )?,
        }
        write!(f, "; retry after {} s", self.retry_after_secs())
    }
}

/// The body of a 429 answer:
/// `{"limit": "requests_per_minute", "limit_value": 10, "retry_after_secs": 6, "message": "…"}`.
impl Serialize for Rejection {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("Rejection", 4)?;
        s.serialize_field("limit", &self.limit)?;
        s.serialize_field("limit_value", &self.limit_value)?;
        s.serialize_field("retry_after_secs", &self.retry_after_secs())?;
        s.serialize_field("message", &self.to_string())?;
        s.end()
    }
}

/// A request admitted by the request limit; the values suit `RateLimit-*` headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Allowed {
    /// The configured number of requests per window.
    pub limit: u32,
    /// How many more requests the window has room for right now.
    pub remaining: u32,
    /// When the oldest counted request leaves the window (one more slot then frees).
    pub reset_after: Duration,
}

/// The outcome of [`Limiter::check_request`].
pub type Decision = Result<Allowed, Rejection>;

/// The limit store failed, or the limiter was given something it cannot use.
///
/// Never a statement about the user: the server answers these per its fail-open/closed policy
/// (see the module documentation), never with 429.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LimitError {
    /// The configuration is invalid (found by [`LimitsConfig::validate`] or a constructor).
    #[error("invalid limits configuration: {0}")]
    InvalidConfig(String),
    /// A user or conversation id is empty or longer than [`MAX_ID_BYTES`].
    #[error("invalid {what} id: {reason}")]
    InvalidId {
        /// `"user"` or `"conversation"`.
        what: &'static str,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// Redis could not be reached or answered with an error.
    #[error("the Redis limit store is unavailable: {0}")]
    Unavailable(::redis::RedisError),
    /// Redis did not answer within the configured timeout.
    #[error("the Redis limit store did not answer within {0:?}")]
    Timeout(Duration),
    /// Redis answered something the limit scripts never return.
    #[error("the Redis limit store answered unexpectedly: {0}")]
    UnexpectedReply(String),
}

impl LimitError {
    /// Whether the limit store could not decide (unreachable, timed out or confused) — the
    /// case for the fail-open/closed policy — as opposed to a caller or configuration mistake.
    #[must_use]
    pub const fn is_store_failure(&self) -> bool {
        matches!(
            self,
            Self::Unavailable(_) | Self::Timeout(_) | Self::UnexpectedReply(_)
        )
    }
}

/// Per-user limits, shared by every gateway instance when a Redis store is used.
///
/// Implementations are cheap to share (`Arc<dyn Limiter>`) and safe to call concurrently;
/// every method is one atomic decision.
#[async_trait]
pub trait Limiter: Send + Sync + fmt::Debug {
    /// Counts one request of `user` against the request limit, or rejects it.
    ///
    /// An admitted request is counted at once; a rejected one is not counted at all.
    async fn check_request(&self, user: &str) -> Result<Decision, LimitError>;

    /// Takes a conversation slot of `user` for `conversation`, or rejects it when the user
    /// already has `concurrent_conversations` other conversations active.
    ///
    /// Acquiring a conversation the user already holds always succeeds and takes no further
    /// slot. The slot is freed when every lease on the conversation is released or dropped
    /// (or, in Redis, has expired). If the call fails or is cancelled after Redis recorded the
    /// lease, that lease is never renewed and expires after its TTL.
    async fn acquire_conversation(
        &self,
        user: &str,
        conversation: &str,
    ) -> Result<Result<Lease, Rejection>, LimitError>;

    /// Frees the slot of `conversation` now, whatever leases on it still exist (they become
    /// no-ops). Releasing a conversation that holds no slot is not an error.
    async fn release_conversation(&self, user: &str, conversation: &str) -> Result<(), LimitError>;

    /// Whether the limiter can decide right now (Redis: reachable, scripts loaded). For
    /// readiness probes and start-up checks; always `Ok` in process.
    async fn health_check(&self) -> Result<(), LimitError> {
        Ok(())
    }
}

/// A conversation slot, held until the lease is released or dropped.
///
/// Dropping the lease releases it: synchronously in process, in a background task in Redis
/// (where, if that fails, the lease expires after its TTL). Prefer [`Lease::release`] where
/// the outcome matters.
#[must_use = "dropping a Lease releases the conversation slot at once"]
#[derive(Debug)]
pub struct Lease {
    inner: LeaseInner,
}

#[derive(Debug)]
enum LeaseInner {
    Memory(memory::MemoryLease),
    Redis(redis::RedisLease),
}

impl Lease {
    /// The user the slot belongs to.
    #[must_use]
    pub fn user(&self) -> &str {
        match &self.inner {
            LeaseInner::Memory(lease) => lease.user(),
            LeaseInner::Redis(lease) => lease.user(),
        }
    }

    /// The conversation that holds the slot.
    #[must_use]
    pub fn conversation(&self) -> &str {
        match &self.inner {
            LeaseInner::Memory(lease) => lease.conversation(),
            LeaseInner::Redis(lease) => lease.conversation(),
        }
    }

    /// Releases the lease now and reports whether the store recorded it.
    ///
    /// On a Redis error the lease is abandoned (no longer renewed) and expires after its TTL.
    pub async fn release(self) -> Result<(), LimitError> {
        match self.inner {
            LeaseInner::Memory(lease) => {
                lease.release();
                Ok(())
            }
            LeaseInner::Redis(lease) => lease.release().await,
        }
    }
}

/// Validated limits, as the backends use them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    requests: u32,
    window: Duration,
    conversations: u32,
    lease_ttl: Duration,
}

impl Limits {
    /// Shortest accepted window or lease TTL.
    pub const MIN_DURATION: Duration = Duration::from_millis(100);

    /// Limits of `requests` per `window` and `conversations` concurrent conversations whose
    /// Redis leases live `lease_ttl` unless renewed.
    ///
    /// The server always uses a 60-second window ([`LimitsConfig::limits`]); other windows and
    /// short TTLs exist for tests.
    ///
    /// # Errors
    /// [`LimitError::InvalidConfig`] when a count is 0 or above its maximum, or a duration is
    /// shorter than [`Limits::MIN_DURATION`].
    pub fn new(
        requests: u32,
        window: Duration,
        conversations: u32,
        lease_ttl: Duration,
    ) -> Result<Self, LimitError> {
        if !(1..=MAX_REQUESTS_PER_MINUTE).contains(&requests) {
            return Err(LimitError::InvalidConfig(format!(
                "requests_per_minute must be between 1 and {MAX_REQUESTS_PER_MINUTE}, not {requests}"
            )));
        }
        if !(1..=MAX_CONCURRENT_CONVERSATIONS).contains(&conversations) {
            return Err(LimitError::InvalidConfig(format!(
                "concurrent_conversations must be between 1 and {MAX_CONCURRENT_CONVERSATIONS}, not {conversations}"
            )));
        }
        for (name, value) in [("window", window), ("lease TTL", lease_ttl)] {
            if value < Self::MIN_DURATION {
                return Err(LimitError::InvalidConfig(format!(
                    "the {name} must be at least {:?}, not {value:?}",
                    Self::MIN_DURATION
                )));
            }
        }
        Ok(Self {
            requests,
            window,
            conversations,
            lease_ttl,
        })
    }

    /// Requests admitted per window.
    #[must_use]
    pub const fn requests(&self) -> u32 {
        self.requests
    }

    /// The window of the request limit (60 s in the server).
    #[must_use]
    pub const fn window(&self) -> Duration {
        self.window
    }

    /// Conversations a user may have active at once.
    #[must_use]
    pub const fn conversations(&self) -> u32 {
        self.conversations
    }

    /// How long a Redis lease lives without renewal.
    #[must_use]
    pub const fn lease_ttl(&self) -> Duration {
        self.lease_ttl
    }
}

/// The `[limits]` section of the server configuration.
#[derive(Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct LimitsConfig {
    /// Enforce the limits at all. Default true; false for a gateway whose callers are limited
    /// elsewhere (and for load tests).
    pub enabled: bool,
    /// Requests a user may send per minute (sliding window). Default 10.
    pub requests_per_minute: u32,
    /// Conversations a user may have active at once. Default 3.
    pub concurrent_conversations: u32,
    /// `redis://[user][:password@]host[:port][/db]`: share the limits across instances
    /// through this Redis. Unset: limits are kept in process (one instance only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redis_url: Option<String>,
    /// Prefix of every Redis key, so several deployments can share one Redis.
    /// Default `bridle:limits:`.
    pub key_prefix: String,
    /// How long a conversation lease survives in Redis without renewal (a crashed instance's
    /// slots free after this). Default 30.
    pub lease_ttl_secs: u64,
    /// Longest wait for one Redis decision before it fails with [`LimitError::Timeout`].
    /// Default 500.
    pub redis_timeout_ms: u64,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            requests_per_minute: 10,
            concurrent_conversations: 3,
            redis_url: None,
            key_prefix: "bridle:limits:".to_owned(),
            lease_ttl_secs: 30,
            redis_timeout_ms: 500,
        }
    }
}

/// Redacts the password so that logging the configuration cannot leak it.
impl fmt::Debug for LimitsConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LimitsConfig")
            .field("enabled", &self.enabled)
            .field("requests_per_minute", &self.requests_per_minute)
            .field("concurrent_conversations", &self.concurrent_conversations)
            .field("redis_url", &self.redis_url.as_deref().map(redact_url))
            .field("key_prefix", &self.key_prefix)
            .field("lease_ttl_secs", &self.lease_ttl_secs)
            .field("redis_timeout_ms", &self.redis_timeout_ms)
            .finish()
    }
}

impl LimitsConfig {
    /// Largest accepted `lease_ttl_secs` (one day).
    pub const MAX_LEASE_TTL_SECS: u64 = 86_400;
    /// Largest accepted `redis_timeout_ms` (one minute).
    pub const MAX_REDIS_TIMEOUT_MS: u64 = 60_000;
    /// Longest accepted `key_prefix`, in bytes.
    pub const MAX_KEY_PREFIX_BYTES: usize = 64;

    /// Checks every field without connecting anywhere.
    ///
    /// # Errors
    /// [`LimitError::InvalidConfig`] naming the first invalid field.
    pub fn validate(&self) -> Result<(), LimitError> {
        self.check()
            .map_err(|e| LimitError::InvalidConfig(e.to_string()))
    }

    /// Checks every field without connecting anywhere; the error names the first invalid one
    /// (`requests_per_minute`), relative to the section.
    ///
    /// # Errors
    /// The first invalid field and what is wrong with it.
    pub fn check(&self) -> Result<(), bridle_core::ConfigError> {
        use bridle_core::ConfigError;
        let within = |key: &str, value: u64, max: u64| {
            if (1..=max).contains(&value) {
                Ok(())
            } else {
                Err(ConfigError::new(
                    key,
                    format!("must be between 1 and {max}, not {value}"),
                ))
            }
        };
        within(
            "requests_per_minute",
            self.requests_per_minute.into(),
            MAX_REQUESTS_PER_MINUTE.into(),
        )?;
        within(
            "concurrent_conversations",
            self.concurrent_conversations.into(),
            MAX_CONCURRENT_CONVERSATIONS.into(),
        )?;
        within(
            "lease_ttl_secs",
            self.lease_ttl_secs,
            Self::MAX_LEASE_TTL_SECS,
        )?;
        within(
            "redis_timeout_ms",
            self.redis_timeout_ms,
            Self::MAX_REDIS_TIMEOUT_MS,
        )?;
        if let Some(url) = &self.redis_url {
            // Parsing only; the message never repeats the URL, which may hold a password.
            ::redis::Client::open(url.as_str()).map_err(|e| {
                ConfigError::new(
                    "redis_url",
                    format!("is not a usable Redis URL ({:?})", e.kind()),
                )
            })?;
        }
        check_key_prefix(&self.key_prefix)
    }

    /// The validated limits, with the 60-second window of "per minute".
    ///
    /// # Errors
    /// [`LimitError::InvalidConfig`] when a limit is out of range.
    pub fn limits(&self) -> Result<Limits, LimitError> {
        if !(1..=Self::MAX_LEASE_TTL_SECS).contains(&self.lease_ttl_secs) {
            return Err(LimitError::InvalidConfig(format!(
                "lease_ttl_secs must be between 1 and {}, not {}",
                Self::MAX_LEASE_TTL_SECS,
                self.lease_ttl_secs
            )));
        }
        Limits::new(
            self.requests_per_minute,
            REQUEST_WINDOW,
            self.concurrent_conversations,
            Duration::from_secs(self.lease_ttl_secs),
        )
    }

    /// The validated `redis_timeout_ms`.
    ///
    /// # Errors
    /// [`LimitError::InvalidConfig`] when it is 0 or above [`Self::MAX_REDIS_TIMEOUT_MS`].
    pub fn redis_timeout(&self) -> Result<Duration, LimitError> {
        if !(1..=Self::MAX_REDIS_TIMEOUT_MS).contains(&self.redis_timeout_ms) {
            return Err(LimitError::InvalidConfig(format!(
                "redis_timeout_ms must be between 1 and {}, not {}",
                Self::MAX_REDIS_TIMEOUT_MS,
                self.redis_timeout_ms
            )));
        }
        Ok(Duration::from_millis(self.redis_timeout_ms))
    }
}

/// The limiter `config` asks for: [`RedisLimiter`] when `redis_url` is set (no connection is
/// made yet; use [`Limiter::health_check`] to check it at start-up), [`MemoryLimiter`]
/// otherwise.
///
/// Must be called within a Tokio runtime when `redis_url` is set.
///
/// # Errors
/// [`LimitError::InvalidConfig`] when the configuration is invalid.
pub fn build(config: &LimitsConfig) -> Result<Arc<dyn Limiter>, LimitError> {
    config.validate()?;
    let limits = config.limits()?;
    match &config.redis_url {
        Some(url) => Ok(Arc::new(RedisLimiter::new(
            url,
            &config.key_prefix,
            limits,
            config.redis_timeout()?,
        )?)),
        None => Ok(Arc::new(MemoryLimiter::new(limits))),
    }
}

/// Rejects ids the stores should not key on: empty or longer than [`MAX_ID_BYTES`].
fn check_id(what: &'static str, id: &str) -> Result<(), LimitError> {
    if id.is_empty() {
        return Err(LimitError::InvalidId {
            what,
            reason: "it is empty",
        });
    }
    if id.len() > MAX_ID_BYTES {
        return Err(LimitError::InvalidId {
            what,
            reason: "it is longer than 256 bytes",
        });
    }
    Ok(())
}

/// A Redis key prefix: 1 to [`LimitsConfig::MAX_KEY_PREFIX_BYTES`] bytes, no whitespace or
/// control characters.
fn check_key_prefix(prefix: &str) -> Result<(), bridle_core::ConfigError> {
    use bridle_core::ConfigError;
    if prefix.is_empty() || prefix.len() > LimitsConfig::MAX_KEY_PREFIX_BYTES {
        return Err(ConfigError::new(
            "key_prefix",
            format!(
                "must be 1 to {} bytes long",
                LimitsConfig::MAX_KEY_PREFIX_BYTES
            ),
        ));
    }
    if prefix.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(ConfigError::new(
            "key_prefix",
            "must not contain whitespace or control characters",
        ));
    }
    Ok(())
}

/// `scheme://user:secret@host/…` → `scheme://***@host/…`; anything else unchanged.
fn redact_url(url: &str) -> String {
    redact_url_with(url, "***")
}

/// `scheme://user:secret@host/…` → `scheme://{marker}@host/…`; anything else unchanged.
pub(crate) fn redact_url_with(url: &str, marker: &str) -> String {
    let Some(scheme_end) = url.find("://") else {
        return url.to_owned();
    };
    let (scheme, rest) = url.split_at(scheme_end + 3);
    let authority_end = rest.find('/').unwrap_or(rest.len());
    match rest.get(..authority_end).and_then(|a| a.rfind('@')) {
        Some(at) => format!("{scheme}{marker}{}", rest.get(at..).unwrap_or_default()),
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_rounds_up_to_whole_seconds_and_at_least_one() {
        let secs = |ms| Rejection::requests(10, Duration::from_millis(ms)).retry_after_secs();
        assert_eq!(secs(0), 1);
        assert_eq!(secs(1), 1);
        assert_eq!(secs(1_000), 1);
        assert_eq!(secs(1_001), 2);
        assert_eq!(secs(5_999), 6);
        assert_eq!(Rejection::conversations(3).retry_after_secs(), 5);
    }

    #[test]
    fn urls_lose_their_credentials_in_debug_output() {
        assert_eq!(
            redact_url("redis://user:pw@host:6379/0"),
            "redis://***@host:6379/0"
        );
        assert_eq!(redact_url("redis://:p@ss@host"), "redis://***@host");
        assert_eq!(redact_url("redis://host:6379"), "redis://host:6379");
        assert_eq!(redact_url("not a url"), "not a url");
        let config = LimitsConfig {
            redis_url: Some("redis://:hunter2@localhost".to_owned()),
            ..LimitsConfig::default()
        };
        assert!(!format!("{config:?}").contains("hunter2"));
    }

    #[test]
    fn ids_are_checked() {
        assert!(check_id("user", "u").is_ok());
        assert!(check_id("user", "").is_err());
        assert!(check_id("user", &"x".repeat(MAX_ID_BYTES)).is_ok());
        assert!(check_id("user", &"x".repeat(MAX_ID_BYTES + 1)).is_err());
    }
}
