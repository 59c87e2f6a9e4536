//! The Redis backend: limits shared by every gateway instance.
//!
//! Each decision is one Lua script (`EVALSHA`, loaded on first use by the `redis` crate), so it
//! is atomic across instances, and uses the Redis server's clock, so instances with skewed
//! clocks agree. Keys, all under the configured prefix and expiring on their own:
//!
//! - `{prefix}requests:{user}`: list of the user's admission times in the window;
//! - `{prefix}leases:{user}`: sorted set, lease id → expiry;
//! - `{prefix}lease-conversations:{user}`: hash, lease id → conversation.
//!
//! A lease is renewed every third of its TTL by a task that lives as long as the [`Lease`]
//! value, and holds the limiter only weakly: when the process dies (or the limiter is dropped)
//! renewals stop and the lease expires. Requires Redis 5 or later (scripts that call `TIME`
//! and then write); not for Redis Cluster (a script's keys would be in different slots).
//!
//! Every call is bounded by the configured timeout; the connection manager reconnects in the
//! background after a failure.

use std::collections::hash_map::RandomState;
use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ::redis::aio::{ConnectionManager, ConnectionManagerConfig};
use ::redis::{Client, FromRedisValue, Script, ScriptInvocation};
use async_trait::async_trait;
use tokio::task::JoinHandle;
use tokio::time::{Instant, MissedTickBehavior};

use super::{
    Allowed, Decision, Lease, LeaseInner, LimitError, Limiter, Limits, Rejection, check_id,
    check_key_prefix, redact_url,
};

/// Per-user limits kept in Redis, shared by every instance that uses the same Redis and key
/// prefix.
///
/// Cloning is cheap and shares the connection.
#[derive(Clone)]
pub struct RedisLimiter {
    inner: Arc<Inner>,
}

struct Inner {
    connection: ConnectionManager,
    /// The URL without credentials, for `Debug`.
    url: String,
    prefix: String,
    limits: Limits,
    timeout: Duration,
    scripts: Scripts,
    /// Random per limiter, so lease ids never collide across instances.
    instance: u64,
    next_lease: AtomicU64,
}

struct Scripts {
    requests: Script,
    acquire: Script,
    renew: Script,
    release: Script,
}

impl Scripts {
    fn new() -> Self {
        Self {
            requests: Script::new(include_str!("requests.lua")),
            acquire: Script::new(include_str!("acquire.lua")),
            renew: Script::new(include_str!("renew.lua")),
            release: Script::new(include_str!("release.lua")),
        }
    }

    fn all(&self) -> [&Script; 4] {
        [&self.requests, &self.acquire, &self.renew, &self.release]
    }
}

impl fmt::Debug for RedisLimiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisLimiter")
            .field("url", &self.inner.url)
            .field("prefix", &self.inner.prefix)
            .field("limits", &self.inner.limits)
            .field("timeout", &self.inner.timeout)
            .finish_non_exhaustive()
    }
}

impl RedisLimiter {
    /// A limiter on the Redis at `url`, with every key under `key_prefix`, each call bounded
    /// by `timeout`.
    ///
    /// Connects lazily: nothing is sent until the first decision, so the gateway can start
    /// while Redis is down; call [`Limiter::health_check`] to check the connection now.
    ///
    /// # Errors
    /// [`LimitError::InvalidConfig`] when the URL or prefix is invalid, the timeout is zero,
    /// or no Tokio runtime is running (the connection manager needs one).
    pub fn new(
        url: &str,
        key_prefix: &str,
        limits: Limits,
        timeout: Duration,
    ) -> Result<Self, LimitError> {
        check_key_prefix(key_prefix).map_err(|e| LimitError::InvalidConfig(e.to_string()))?;
        if timeout.is_zero() {
            return Err(LimitError::InvalidConfig(
                "the Redis timeout must not be zero".to_owned(),
            ));
        }
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(LimitError::InvalidConfig(
                "a RedisLimiter must be created within a Tokio runtime".to_owned(),
            ));
        }
        // The error never repeats the URL, which may hold a password.
        let client = Client::open(url).map_err(|e| {
            LimitError::InvalidConfig(format!(
                "redis_url is not a usable Redis URL ({:?})",
                e.kind()
            ))
        })?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(timeout))
            .set_response_timeout(Some(timeout))
            // One quick retry per connection attempt: a limiter must answer fast, and the
            // manager tries again on the next call anyway.
            .set_number_of_retries(1)
            .set_min_delay(Duration::from_millis(50))
            .set_max_delay(timeout);
        let connection = ConnectionManager::new_lazy_with_config(client, config)
            .map_err(LimitError::Unavailable)?;
        Ok(Self {
            inner: Arc::new(Inner {
                connection,
                url: redact_url(url),
                prefix: key_prefix.to_owned(),
                limits,
                timeout,
                scripts: Scripts::new(),
                instance: random_u64(),
                next_lease: AtomicU64::new(0),
            }),
        })
    }

    /// The limits this limiter enforces.
    #[must_use]
    pub fn limits(&self) -> Limits {
        self.inner.limits
    }
}

impl Inner {
    fn requests_key(&self, user: &str) -> String {
        format!("{}requests:{user}", self.prefix)
    }

    fn leases_key(&self, user: &str) -> String {
        format!("{}leases:{user}", self.prefix)
    }

    fn owners_key(&self, user: &str) -> String {
        format!("{}lease-conversations:{user}", self.prefix)
    }

    fn lease_invocation<'a>(&self, script: &'a Script, user: &str) -> ScriptInvocation<'a> {
        let mut invocation = script.prepare_invoke();
        invocation
            .key(self.leases_key(user))
            .key(self.owners_key(user));
        invocation
    }

    fn ttl_ms(&self) -> u64 {
        duration_ms(self.limits.lease_ttl)
    }

    /// Runs a script (EVALSHA, loading it when Redis does not know it yet) within the timeout.
    async fn run<T: FromRedisValue>(
        &self,
        invocation: &ScriptInvocation<'_>,
    ) -> Result<T, LimitError> {
        let mut connection = self.connection.clone();
        match tokio::time::timeout(self.timeout, invocation.invoke_async(&mut connection)).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(error)) => Err(LimitError::Unavailable(error)),
            Err(_) => Err(LimitError::Timeout(self.timeout)),
        }
    }

    async fn renew(&self, user: &str, lease: &str) -> Result<bool, LimitError> {
        let mut invocation = self.lease_invocation(&self.scripts.renew, user);
        invocation.arg(lease).arg(self.ttl_ms());
        match self.run::<i64>(&invocation).await? {
            1 => Ok(true),
            0 => Ok(false),
            other => Err(unexpected("renew", &other)),
        }
    }

    async fn release(&self, user: &str, what: &str, id: &str) -> Result<(), LimitError> {
        let mut invocation = self.lease_invocation(&self.scripts.release, user);
        invocation.arg(what).arg(id);
        let removed: i64 = self.run(&invocation).await?;
        tracing::debug!(user, what, id, removed, "released conversation leases");
        Ok(())
    }
}

#[async_trait]
impl Limiter for RedisLimiter {
    async fn check_request(&self, user: &str) -> Result<Decision, LimitError> {
        check_id("user", user)?;
        let inner = &self.inner;
        let limit = inner.limits.requests;
        let mut invocation = inner.scripts.requests.prepare_invoke();
        invocation
            .key(inner.requests_key(user))
            .arg(limit)
            .arg(duration_ms(inner.limits.window));
        let reply: Vec<i64> = inner.run(&invocation).await?;
        match reply.as_slice() {
            &[1, remaining, reset_ms] => Ok(Ok(Allowed {
                limit,
                remaining: u32::try_from(remaining).unwrap_or(0),
                reset_after: ms_duration(reset_ms),
            })),
            &[0, _, retry_ms] => {
                let rejection = Rejection::requests(limit, ms_duration(retry_ms));
                tracing::debug!(user, retry_after = ?rejection.retry_after, "request limit reached");
                Ok(Err(rejection))
            }
            other => Err(unexpected("requests", &other)),
        }
    }

    async fn acquire_conversation(
        &self,
        user: &str,
        conversation: &str,
    ) -> Result<Result<Lease, Rejection>, LimitError> {
        check_id("user", user)?;
        check_id("conversation", conversation)?;
        let inner = &self.inner;
        let limit = inner.limits.conversations;
        let lease_id = format!(
            "{:016x}-{}",
            inner.instance,
            inner.next_lease.fetch_add(1, Ordering::Relaxed)
        );
        let mut invocation = inner.lease_invocation(&inner.scripts.acquire, user);
        invocation
            .arg(conversation)
            .arg(&lease_id)
            .arg(limit)
            .arg(inner.ttl_ms());
        let reply: Vec<i64> = inner.run(&invocation).await?;
        match reply.as_slice() {
            &[1, _] => {}
            &[0, _] => {
                tracing::debug!(user, conversation, "conversation limit reached");
                return Ok(Err(Rejection::conversations(limit)));
            }
            other => return Err(unexpected("acquire", &other)),
        }
        let keepalive = spawn_keepalive(
            Arc::downgrade(&self.inner),
            user.to_owned(),
            lease_id.clone(),
            inner.limits.lease_ttl / 3,
        );
        Ok(Ok(Lease {
            inner: LeaseInner::Redis(RedisLease {
                limiter: Arc::downgrade(&self.inner),
                user: user.to_owned(),
                conversation: conversation.to_owned(),
                id: lease_id,
                keepalive,
                released: false,
            }),
        }))
    }

    async fn release_conversation(&self, user: &str, conversation: &str) -> Result<(), LimitError> {
        check_id("user", user)?;
        check_id("conversation", conversation)?;
        self.inner.release(user, "conversation", conversation).await
    }

    async fn health_check(&self) -> Result<(), LimitError> {
        let inner = &self.inner;
        let mut connection = inner.connection.clone();
        let check = async {
            for script in inner.scripts.all() {
                script.load_async(&mut connection).await?;
            }
            Ok(())
        };
        match tokio::time::timeout(inner.timeout, check).await {
            Ok(result) => result.map_err(LimitError::Unavailable),
            Err(_) => Err(LimitError::Timeout(inner.timeout)),
        }
    }
}

/// Renews the lease every `period` until the lease is dropped (the task is aborted), the lease
/// is gone from Redis, or the limiter no longer exists.
fn spawn_keepalive(
    limiter: Weak<Inner>,
    user: String,
    lease: String,
    period: Duration,
) -> JoinHandle<()> {
    let period = period.max(Duration::from_millis(10));
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval_at(Instant::now() + period, period);
        ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            // Upgraded only for the call, so a sleeping keep-alive never keeps the limiter.
            let Some(limiter) = limiter.upgrade() else {
                return;
            };
            match limiter.renew(&user, &lease).await {
                Ok(true) => {}
                Ok(false) => {
                    tracing::info!(user, lease, "conversation lease is gone; renewal stops");
                    return;
                }
                Err(error) => {
                    tracing::warn!(user, lease, %error, "could not renew conversation lease");
                }
            }
        }
    })
}

/// A Redis lease: renewed while alive, released (in the background) when dropped.
pub(super) struct RedisLease {
    limiter: Weak<Inner>,
    user: String,
    conversation: String,
    id: String,
    keepalive: JoinHandle<()>,
    /// Set once released, so `Drop` does not release again.
    released: bool,
}

impl RedisLease {
    pub(super) fn user(&self) -> &str {
        &self.user
    }

    pub(super) fn conversation(&self) -> &str {
        &self.conversation
    }

    /// Stops renewing and removes the lease from Redis. If this future is dropped before it
    /// finishes, `Drop` releases in the background instead.
    pub(super) async fn release(mut self) -> Result<(), LimitError> {
        self.keepalive.abort();
        let result = match self.limiter.upgrade() {
            Some(limiter) => limiter.release(&self.user, "lease", &self.id).await,
            // The limiter is gone, and with it every way to reach Redis: the lease expires.
            None => Ok(()),
        };
        self.released = true;
        if let Err(error) = &result {
            tracing::warn!(user = self.user, lease = self.id, %error,
                "could not release conversation lease; it expires after its TTL");
        }
        result
    }
}

impl Drop for RedisLease {
    fn drop(&mut self) {
        self.keepalive.abort();
        if self.released {
            return;
        }
        let (Some(limiter), Ok(runtime)) = (
            self.limiter.upgrade(),
            tokio::runtime::Handle::try_current(),
        ) else {
            tracing::debug!(
                user = self.user,
                lease = self.id,
                "conversation lease dropped without a runtime; it expires after its TTL"
            );
            return;
        };
        let user = std::mem::take(&mut self.user);
        let id = std::mem::take(&mut self.id);
        runtime.spawn(async move {
            if let Err(error) = limiter.release(&user, "lease", &id).await {
                tracing::warn!(user, lease = id, %error,
                    "could not release dropped conversation lease; it expires after its TTL");
            }
        });
    }
}

impl fmt::Debug for RedisLease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisLease")
            .field("user", &self.user)
            .field("conversation", &self.conversation)
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

fn unexpected(script: &str, reply: &dyn fmt::Debug) -> LimitError {
    LimitError::UnexpectedReply(format!("script {script} returned {reply:?}"))
}

fn duration_ms(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// A non-negative millisecond count from a script as a duration (negative → zero).
fn ms_duration(ms: i64) -> Duration {
    Duration::from_millis(u64::try_from(ms).unwrap_or(0))
}

/// 64 random bits from the standard library: `RandomState` is seeded from the operating
/// system's randomness; the process id and the time make instances differ even if it were not.
fn random_u64() -> u64 {
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos());
    hasher.write_u128(nanos);
    hasher.finish()
}
