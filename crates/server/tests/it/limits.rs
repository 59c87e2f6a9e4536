//! The per-user limits: the in-process backend on Tokio's paused clock, the Redis backend on a
//! real Redis (`redis://127.0.0.1:6379`, or `BRIDLE_TEST_REDIS_URL`). Each Redis test works
//! under its own key prefix and deletes its keys at the end (every key also expires on its
//! own, so a failed test leaves nothing behind for long).

use std::sync::Arc;
use std::time::Duration;

use bridle_server::limits::{
    self, CONVERSATION_RETRY_AFTER, Lease, LimitError, LimitKind, Limiter, Limits, LimitsConfig,
    MemoryLimiter, RedisLimiter, Rejection,
};
use tokio::sync::Barrier;
use tokio::time::{Instant, advance, sleep};

const MINUTE: Duration = Duration::from_secs(60);
const TTL: Duration = Duration::from_secs(30);

fn limits(requests: u32, window: Duration, conversations: u32, lease_ttl: Duration) -> Limits {
    Limits::new(requests, window, conversations, lease_ttl).expect("valid limits")
}

fn memory(requests: u32, conversations: u32) -> MemoryLimiter {
    MemoryLimiter::new(limits(requests, MINUTE, conversations, TTL))
}

async fn admitted(limiter: &dyn Limiter, user: &str) -> bool {
    limiter
        .check_request(user)
        .await
        .expect("no store error")
        .is_ok()
}

async fn rejected(limiter: &dyn Limiter, user: &str) -> Rejection {
    match limiter.check_request(user).await.expect("no store error") {
        Ok(allowed) => panic!("expected a rejection, got {allowed:?}"),
        Err(rejection) => rejection,
    }
}

async fn lease(limiter: &dyn Limiter, user: &str, conversation: &str) -> Lease {
    match limiter
        .acquire_conversation(user, conversation)
        .await
        .expect("no store error")
    {
        Ok(lease) => lease,
        Err(rejection) => panic!("expected a lease on {conversation}, got {rejection}"),
    }
}

async fn refused(limiter: &dyn Limiter, user: &str, conversation: &str) -> Rejection {
    match limiter
        .acquire_conversation(user, conversation)
        .await
        .expect("no store error")
    {
        Ok(lease) => panic!("expected a rejection, got {lease:?}"),
        Err(rejection) => rejection,
    }
}

/// Runs `tasks` concurrent calls of `call` (released together by a barrier) on a
/// multi-threaded runtime and counts the admissions; admitted leases stay alive until counted.
async fn hammer<F, Fut>(tasks: usize, call: F) -> usize
where
    F: Fn(usize) -> Fut,
    Fut: Future<Output = bool> + Send + 'static,
{
    let barrier = Arc::new(Barrier::new(tasks));
    let handles: Vec<_> = (0..tasks)
        .map(|i| {
            let barrier = Arc::clone(&barrier);
            let call = call(i);
            tokio::spawn(async move {
                barrier.wait().await;
                call.await
            })
        })
        .collect();
    let mut admitted = 0;
    for handle in handles {
        if handle.await.expect("task finished") {
            admitted += 1;
        }
    }
    admitted
}

/// Spawnable request check that reports whether the request was admitted.
async fn request_task(limiter: Arc<dyn Limiter>, user: &'static str) -> bool {
    limiter
        .check_request(user)
        .await
        .expect("no store error")
        .is_ok()
}

/// Spawnable acquire of a conversation of its own; a lease is held for a while so that every
/// task competes with the holders.
async fn conversation_task(limiter: Arc<dyn Limiter>, user: &'static str, i: usize) -> bool {
    match limiter
        .acquire_conversation(user, &format!("c{i}"))
        .await
        .expect("no store error")
    {
        Ok(lease) => {
            sleep(Duration::from_millis(300)).await;
            drop(lease);
            true
        }
        Err(_) => false,
    }
}

// ---------------------------------------------------------------------------------------
// In process
// ---------------------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn memory_admits_exactly_the_limit_then_rejects_with_retry_after() {
    let limiter = memory(10, 3);
    for i in 0..10u32 {
        let allowed = limiter
            .check_request("ann")
            .await
            .expect("no store error")
            .expect("admitted");
        assert_eq!(allowed.limit, 10);
        assert_eq!(allowed.remaining, 9 - i);
        assert_eq!(
            allowed.reset_after,
            MINUTE - Duration::from_secs(u64::from(i))
        );
        advance(Duration::from_secs(1)).await;
    }
    // t = 10 s: the oldest request (t = 0) leaves the window at t = 60 s.
    let rejection = rejected(&limiter, "ann").await;
    assert_eq!(rejection.limit, LimitKind::RequestsPerMinute);
    assert_eq!(rejection.limit.as_str(), "requests_per_minute");
    assert_eq!(rejection.limit_value, 10);
    assert_eq!(rejection.retry_after, Duration::from_secs(50));
    assert_eq!(rejection.retry_after_secs(), 50);

    advance(Duration::from_millis(500)).await;
    let rejection = rejected(&limiter, "ann").await;
    assert_eq!(rejection.retry_after, Duration::from_millis(49_500));
    assert_eq!(rejection.retry_after_secs(), 50, "rounded up");
}

#[tokio::test(start_paused = true)]
async fn memory_window_slides_one_request_at_a_time() {
    let limiter = memory(3, 3);
    // Requests at t = 0, 10, 20 s.
    for _ in 0..3 {
        assert!(admitted(&limiter, "bob").await);
        advance(Duration::from_secs(10)).await;
    }
    // t = 30 s: full; the t = 0 request leaves at 60 s.
    assert_eq!(
        rejected(&limiter, "bob").await.retry_after,
        Duration::from_secs(30)
    );
    advance(Duration::from_secs(30) - Duration::from_millis(1)).await;
    assert_eq!(
        rejected(&limiter, "bob").await.retry_after,
        Duration::from_millis(1)
    );
    advance(Duration::from_millis(1)).await;
    // t = 60 s: exactly one slot is free again; then the t = 10 s request is next, at 70 s.
    assert!(admitted(&limiter, "bob").await);
    assert_eq!(
        rejected(&limiter, "bob").await.retry_after,
        Duration::from_secs(10)
    );
    // Never more than 3 in any 60 s: at 70 s and 80 s one slot each.
    advance(Duration::from_secs(10)).await;
    assert!(admitted(&limiter, "bob").await);
    rejected(&limiter, "bob").await;
    advance(Duration::from_secs(10)).await;
    assert!(admitted(&limiter, "bob").await);
    rejected(&limiter, "bob").await;
}

#[tokio::test(start_paused = true)]
async fn memory_rejected_requests_are_not_counted() {
    let limiter = memory(2, 3);
    assert!(admitted(&limiter, "cid").await);
    assert!(admitted(&limiter, "cid").await);
    for _ in 0..50 {
        rejected(&limiter, "cid").await;
        advance(Duration::from_secs(1)).await;
    }
    // t = 50 s: the retries did not push the window forward.
    let retry = rejected(&limiter, "cid").await.retry_after;
    assert_eq!(retry, Duration::from_secs(10));
    advance(retry).await;
    assert!(admitted(&limiter, "cid").await);
    assert!(admitted(&limiter, "cid").await);
    rejected(&limiter, "cid").await;
}

#[tokio::test(start_paused = true)]
async fn memory_users_are_independent() {
    let limiter = memory(2, 1);
    assert!(admitted(&limiter, "dee").await);
    assert!(admitted(&limiter, "dee").await);
    rejected(&limiter, "dee").await;
    assert!(admitted(&limiter, "eve").await);
    assert!(admitted(&limiter, "eve").await);

    let _dee = lease(&limiter, "dee", "c1").await;
    let _eve = lease(&limiter, "eve", "c1").await;
    refused(&limiter, "dee", "c2").await;
    refused(&limiter, "eve", "c2").await;
}

#[tokio::test]
async fn memory_conversations_three_leases_then_rejection_and_release_frees_a_slot() {
    let limiter = memory(10, 3);
    let a = lease(&limiter, "fay", "a").await;
    let b = lease(&limiter, "fay", "b").await;
    let c = lease(&limiter, "fay", "c").await;
    assert_eq!((a.user(), a.conversation()), ("fay", "a"));

    let rejection = refused(&limiter, "fay", "d").await;
    assert_eq!(rejection.limit, LimitKind::ConcurrentConversations);
    assert_eq!(rejection.limit.as_str(), "concurrent_conversations");
    assert_eq!(rejection.limit_value, 3);
    assert_eq!(rejection.retry_after, CONVERSATION_RETRY_AFTER);

    // An explicit release frees a slot.
    a.release().await.expect("released");
    let d = lease(&limiter, "fay", "d").await;
    refused(&limiter, "fay", "e").await;

    // Dropping a lease frees a slot.
    drop(b);
    let e = lease(&limiter, "fay", "e").await;
    refused(&limiter, "fay", "f").await;

    // Releasing by id frees a slot; the lease that held it becomes a no-op.
    limiter
        .release_conversation("fay", "c")
        .await
        .expect("released");
    let f = lease(&limiter, "fay", "f").await;
    drop(c);
    refused(&limiter, "fay", "g").await;
    // Releasing what holds no slot is fine.
    limiter
        .release_conversation("fay", "nothing")
        .await
        .expect("no-op");
    drop((d, e, f));
    let _g = lease(&limiter, "fay", "g").await;
}

#[tokio::test]
async fn memory_leases_on_one_conversation_share_its_slot_until_the_last_goes() {
    let limiter = memory(10, 2);
    let first = lease(&limiter, "gus", "a").await;
    let second = lease(&limiter, "gus", "a").await;
    let _b = lease(&limiter, "gus", "b").await;
    // "a" still holds one slot: a third conversation does not fit ...
    refused(&limiter, "gus", "c").await;
    // ... and keeps it while any lease on it remains.
    drop(first);
    refused(&limiter, "gus", "c").await;
    drop(second);
    let _c = lease(&limiter, "gus", "c").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 8)]
async fn memory_thousand_concurrent_requests_admit_exactly_the_limit() {
    let limiter: Arc<dyn Limiter> = Arc::new(memory(10, 3));
    let admitted = hammer(1_000, |_| request_task(Arc::clone(&limiter), "hal")).await;
    assert_eq!(admitted, 10);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 8)]
async fn memory_thousand_concurrent_acquires_never_exceed_the_limit() {
    let limiter: Arc<dyn Limiter> = Arc::new(memory(10, 3));
    let admitted = hammer(1_000, |i| conversation_task(Arc::clone(&limiter), "ida", i)).await;
    // Leases are held far longer than all the attempts take, so exactly 3 win.
    assert_eq!(admitted, 3);
}

#[tokio::test(start_paused = true)]
async fn memory_idle_users_are_evicted() {
    let limiter = memory(10, 3);
    for user in ["jan", "kim", "lou"] {
        assert!(admitted(&limiter, user).await);
    }
    let _held = lease(&limiter, "kim", "c").await;
    assert_eq!(limiter.tracked_users(), 3);
    advance(Duration::from_secs(59)).await;
    assert_eq!(limiter.evict_idle(), 0, "requests still in the window");
    advance(Duration::from_secs(1)).await;
    // jan and lou are idle; kim still holds a conversation.
    assert_eq!(limiter.evict_idle(), 2);
    assert_eq!(limiter.tracked_users(), 1);
    // An evicted user starts afresh.
    assert_eq!(
        limiter
            .check_request("jan")
            .await
            .expect("ok")
            .expect("admitted")
            .remaining,
        9
    );
}

#[tokio::test]
async fn invalid_ids_are_errors_not_decisions() {
    let limiter = memory(10, 3);
    assert!(matches!(
        limiter.check_request("").await,
        Err(LimitError::InvalidId { what: "user", .. })
    ));
    assert!(matches!(
        limiter
            .acquire_conversation("u", &"x".repeat(limits::MAX_ID_BYTES + 1))
            .await,
        Err(LimitError::InvalidId {
            what: "conversation",
            ..
        })
    ));
}

// ---------------------------------------------------------------------------------------
// Configuration and the 429 body
// ---------------------------------------------------------------------------------------

#[test]
fn config_defaults_are_the_specs() {
    let config: LimitsConfig = serde_json::from_str("{}").expect("defaults");
    assert_eq!(config, LimitsConfig::default());
    assert_eq!(config.requests_per_minute, 10);
    assert_eq!(config.concurrent_conversations, 3);
    assert_eq!(config.redis_url, None);
    config.validate().expect("defaults are valid");
    let limits = config.limits().expect("valid");
    assert_eq!(limits.window(), limits::REQUEST_WINDOW);
    assert_eq!(limits.lease_ttl(), Duration::from_secs(30));
}

#[test]
fn config_rejects_unknown_fields_and_invalid_values() {
    let unknown = serde_json::from_str::<LimitsConfig>(r#"{"requests_per_hour": 5}"#);
    assert!(unknown.is_err());

    let invalid = |config: LimitsConfig, field: &str| {
        let error = config.validate().expect_err("invalid");
        assert!(matches!(error, LimitError::InvalidConfig(_)));
        assert!(error.to_string().contains(field), "{error} names {field}");
    };
    let base = LimitsConfig::default;
    invalid(
        LimitsConfig {
            requests_per_minute: 0,
            ..base()
        },
        "requests_per_minute",
    );
    invalid(
        LimitsConfig {
            concurrent_conversations: 0,
            ..base()
        },
        "concurrent_conversations",
    );
    invalid(
        LimitsConfig {
            lease_ttl_secs: 0,
            ..base()
        },
        "lease_ttl_secs",
    );
    invalid(
        LimitsConfig {
            redis_timeout_ms: 0,
            ..base()
        },
        "redis_timeout_ms",
    );
    invalid(
        LimitsConfig {
            key_prefix: String::new(),
            ..base()
        },
        "key_prefix",
    );
    invalid(
        LimitsConfig {
            key_prefix: "has space".to_owned(),
            ..base()
        },
        "key_prefix",
    );
    let secret = LimitsConfig {
        redis_url: Some("http://:hunter2@host".to_owned()),
        ..base()
    };
    let error = secret.validate().expect_err("not a Redis URL");
    assert!(error.to_string().contains("redis_url"));
    assert!(!error.to_string().contains("hunter2"));
}

#[tokio::test]
async fn build_picks_the_backend_from_the_config() {
    let memory = limits::build(&LimitsConfig::default()).expect("memory limiter");
    assert!(format!("{memory:?}").starts_with("MemoryLimiter"));
    memory.health_check().await.expect("always healthy");

    let redis = limits::build(&LimitsConfig {
        redis_url: Some("redis://:hunter2@127.0.0.1:6379".to_owned()),
        ..LimitsConfig::default()
    })
    .expect("redis limiter (lazy: nothing connects yet)");
    let debug = format!("{redis:?}");
    assert!(debug.starts_with("RedisLimiter"), "{debug}");
    assert!(!debug.contains("hunter2"), "{debug}");
}

#[test]
fn a_redis_limiter_needs_a_runtime_and_says_so() {
    let result = RedisLimiter::new(
        "redis://127.0.0.1:6379",
        "p:",
        limits(10, MINUTE, 3, TTL),
        Duration::from_secs(1),
    );
    assert!(matches!(result, Err(LimitError::InvalidConfig(_))));
}

#[tokio::test(start_paused = true)]
async fn a_rejection_serializes_to_the_429_body() {
    let limiter = memory(1, 3);
    assert!(admitted(&limiter, "max").await);
    advance(Duration::from_millis(1_500)).await;
    let rejection = rejected(&limiter, "max").await;
    assert_eq!(rejection.retry_after_secs(), 59);
    let body = serde_json::to_value(&rejection).expect("serializable");
    assert_eq!(body["limit"], "requests_per_minute");
    assert_eq!(body["limit_value"], 1);
    assert_eq!(body["retry_after_secs"], 59);
    assert_eq!(
        body["message"],
        "rate limit reached: 1 requests per minute; retry after 59 s"
    );
}

// ---------------------------------------------------------------------------------------
// Redis
// ---------------------------------------------------------------------------------------

fn redis_url() -> String {
    std::env::var("BRIDLE_TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned())
}

/// A unique key prefix on the test Redis; [`TestRedis::cleanup`] deletes its keys.
struct TestRedis {
    url: String,
    prefix: String,
}

impl TestRedis {
    fn new() -> Self {
        Self {
            url: redis_url(),
            prefix: format!("bridle-test:{}:", uuid::Uuid::new_v4()),
        }
    }

    /// A limiter instance with its own connection manager.
    fn limiter(&self, limits: Limits) -> RedisLimiter {
        RedisLimiter::new(&self.url, &self.prefix, limits, Duration::from_secs(2))
            .expect("valid Redis limiter")
    }

    async fn connection(&self) -> redis::aio::MultiplexedConnection {
        redis::Client::open(self.url.as_str())
            .expect("valid URL")
            .get_multiplexed_async_connection()
            .await
            .unwrap_or_else(|e| {
                panic!(
                    "no Redis at {}: {e} (start redis-server or set BRIDLE_TEST_REDIS_URL)",
                    self.url
                )
            })
    }

    /// Every key under this test's prefix.
    async fn keys(&self) -> Vec<String> {
        let mut connection = self.connection().await;
        let mut cursor = 0u64;
        let mut keys = Vec::new();
        loop {
            let (next, batch): (u64, Vec<String>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(format!("{}*", self.prefix))
                .arg("COUNT")
                .arg(1_000)
                .query_async(&mut connection)
                .await
                .expect("SCAN");
            keys.extend(batch);
            if next == 0 {
                return keys;
            }
            cursor = next;
        }
    }

    async fn pttl(&self, key: &str) -> i64 {
        let mut connection = self.connection().await;
        redis::cmd("PTTL")
            .arg(format!("{}{key}", self.prefix))
            .query_async(&mut connection)
            .await
            .expect("PTTL")
    }

    async fn cleanup(self) {
        let keys = self.keys().await;
        if !keys.is_empty() {
            let mut connection = self.connection().await;
            let () = redis::cmd("DEL")
                .arg(&keys)
                .query_async(&mut connection)
                .await
                .expect("DEL");
        }
    }
}

/// Polls `acquire` until it yields a lease (background releases are asynchronous).
async fn eventually_lease(limiter: &dyn Limiter, user: &str, conversation: &str) -> Lease {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match limiter
            .acquire_conversation(user, conversation)
            .await
            .expect("no store error")
        {
            Ok(lease) => return lease,
            Err(rejection) if Instant::now() < deadline => {
                let _ = rejection;
                sleep(Duration::from_millis(20)).await;
            }
            Err(rejection) => panic!("still rejected after 5 s: {rejection}"),
        }
    }
}

#[tokio::test]
async fn redis_admits_exactly_the_limit_then_rejects_with_retry_after() {
    let redis = TestRedis::new();
    let limiter = redis.limiter(limits(10, MINUTE, 3, TTL));
    limiter.health_check().await.expect("Redis is reachable");
    for i in 0..10u32 {
        let allowed = limiter
            .check_request("ann")
            .await
            .expect("no store error")
            .expect("admitted");
        assert_eq!((allowed.limit, allowed.remaining), (10, 9 - i));
        assert!(allowed.reset_after <= MINUTE);
    }
    let rejection = rejected(&limiter, "ann").await;
    assert_eq!(rejection.limit, LimitKind::RequestsPerMinute);
    assert_eq!(rejection.limit_value, 10);
    // The oldest request is milliseconds old: it leaves the window in just under a minute.
    assert!(
        rejection.retry_after <= MINUTE && rejection.retry_after > MINUTE - Duration::from_secs(5),
        "{rejection:?}"
    );
    assert_eq!(rejection.retry_after_secs(), 60);
    // The request log expires with the window.
    let pttl = redis.pttl("requests:ann").await;
    assert!(pttl > 0 && pttl <= 60_000, "PTTL {pttl}");
    redis.cleanup().await;
}

#[tokio::test]
async fn redis_window_slides() {
    let redis = TestRedis::new();
    let window = Duration::from_millis(600);
    let limiter = redis.limiter(limits(3, window, 3, TTL));
    for _ in 0..3 {
        assert!(admitted(&limiter, "bob").await);
    }
    let retry = rejected(&limiter, "bob").await.retry_after;
    assert!(retry > Duration::ZERO && retry <= window, "{retry:?}");
    sleep(retry + Duration::from_millis(20)).await;
    // The whole burst has left the window: exactly three fit again.
    for _ in 0..3 {
        assert!(admitted(&limiter, "bob").await);
    }
    rejected(&limiter, "bob").await;
    redis.cleanup().await;
}

#[tokio::test]
async fn redis_conversations_three_leases_then_rejection_and_release_frees_a_slot() {
    let redis = TestRedis::new();
    let limiter = redis.limiter(limits(10, MINUTE, 3, TTL));
    let a = lease(&limiter, "fay", "a").await;
    let b = lease(&limiter, "fay", "b").await;
    let c = lease(&limiter, "fay", "c").await;
    assert_eq!((c.user(), c.conversation()), ("fay", "c"));

    let rejection = refused(&limiter, "fay", "d").await;
    assert_eq!(rejection.limit, LimitKind::ConcurrentConversations);
    assert_eq!(rejection.limit_value, 3);
    assert_eq!(rejection.retry_after_secs(), 5);

    a.release().await.expect("released");
    let d = lease(&limiter, "fay", "d").await;
    refused(&limiter, "fay", "e").await;

    // A dropped lease is released in the background.
    drop(b);
    let e = eventually_lease(&limiter, "fay", "e").await;
    refused(&limiter, "fay", "f").await;

    limiter
        .release_conversation("fay", "c")
        .await
        .expect("released");
    let f = lease(&limiter, "fay", "f").await;
    c.release().await.expect("a no-op now");
    refused(&limiter, "fay", "g").await;

    // Leases on one conversation share its slot until the last goes.
    let f2 = lease(&limiter, "fay", "f").await;
    f.release().await.expect("released");
    refused(&limiter, "fay", "g").await;
    f2.release().await.expect("released");
    let g = lease(&limiter, "fay", "g").await;

    let pttl = redis.pttl("leases:fay").await;
    assert!(pttl > 0 && pttl <= 30_000, "PTTL {pttl}");
    for lease in [d, e, g] {
        lease.release().await.expect("released");
    }
    assert!(
        redis.keys().await.is_empty(),
        "released leases leave no keys"
    );
    redis.cleanup().await;
}

#[tokio::test]
async fn redis_users_are_independent() {
    let redis = TestRedis::new();
    let limiter = redis.limiter(limits(2, MINUTE, 1, TTL));
    assert!(admitted(&limiter, "dee").await);
    assert!(admitted(&limiter, "dee").await);
    rejected(&limiter, "dee").await;
    assert!(admitted(&limiter, "eve").await);
    let dee = lease(&limiter, "dee", "c1").await;
    let eve = lease(&limiter, "eve", "c1").await;
    refused(&limiter, "dee", "c2").await;
    dee.release().await.expect("released");
    eve.release().await.expect("released");
    redis.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 8)]
async fn redis_two_instances_enforce_one_combined_limit() {
    let redis = TestRedis::new();
    let one: Arc<dyn Limiter> = Arc::new(redis.limiter(limits(10, MINUTE, 3, TTL)));
    let two: Arc<dyn Limiter> = Arc::new(redis.limiter(limits(10, MINUTE, 3, TTL)));

    // Alternating: 10 of 20 pass in all.
    let mut passed = 0;
    for i in 0..20 {
        let limiter = if i % 2 == 0 { &one } else { &two };
        if admitted(limiter.as_ref(), "ann").await {
            passed += 1;
        }
    }
    assert_eq!(passed, 10);

    // Concurrently from both instances: still 10 in all.
    let admitted = hammer(1_000, |i| {
        request_task(Arc::clone(if i % 2 == 0 { &one } else { &two }), "bob")
    })
    .await;
    assert_eq!(admitted, 10);

    // Conversations: two on one instance and one on the other fill the three slots.
    let a = lease(one.as_ref(), "cid", "a").await;
    let b = lease(one.as_ref(), "cid", "b").await;
    let c = lease(two.as_ref(), "cid", "c").await;
    refused(two.as_ref(), "cid", "d").await;
    refused(one.as_ref(), "cid", "d").await;
    // A conversation active on one instance takes no new slot on the other.
    let a2 = lease(two.as_ref(), "cid", "a").await;
    for lease in [a, b, c, a2] {
        lease.release().await.expect("released");
    }
    redis.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 8)]
async fn redis_thousand_concurrent_acquires_never_exceed_the_limit() {
    let redis = TestRedis::new();
    let limiter: Arc<dyn Limiter> = Arc::new(redis.limiter(limits(10, MINUTE, 3, TTL)));
    let admitted = hammer(1_000, |i| conversation_task(Arc::clone(&limiter), "ida", i)).await;
    assert_eq!(admitted, 3);
    redis.cleanup().await;
}

#[tokio::test]
async fn redis_leases_are_renewed_while_held_and_expire_when_their_instance_dies() {
    let redis = TestRedis::new();
    let ttl = Duration::from_millis(600);
    let crashing = redis.limiter(limits(10, MINUTE, 3, ttl));
    let survivor = redis.limiter(limits(10, MINUTE, 3, ttl));
    let leases = [
        lease(&crashing, "kim", "a").await,
        lease(&crashing, "kim", "b").await,
        lease(&crashing, "kim", "c").await,
    ];

    // Held for several TTLs: the keep-alive renews them.
    sleep(ttl * 3).await;
    refused(&survivor, "kim", "d").await;

    // The instance dies without releasing anything.
    let died = Instant::now();
    for lease in leases {
        std::mem::forget(lease);
    }
    drop(crashing);
    refused(&survivor, "kim", "d").await;

    // Within one TTL (plus the renewal that may have been in flight) the slots are free.
    let d = eventually_lease(&survivor, "kim", "d").await;
    assert!(died.elapsed() >= ttl / 2, "freed before expiry");
    assert!(died.elapsed() < ttl * 3, "freed after {:?}", died.elapsed());
    // The other two were renewed at slightly different moments: they expire close behind.
    let _e = eventually_lease(&survivor, "kim", "e").await;
    let _f = eventually_lease(&survivor, "kim", "f").await;
    assert!(
        died.elapsed() < ttl * 4,
        "all freed after {:?}",
        died.elapsed()
    );
    refused(&survivor, "kim", "g").await;
    d.release().await.expect("released");
    redis.cleanup().await;
}

#[tokio::test]
async fn redis_unreachable_is_an_error_not_a_panic() {
    // A port nobody listens on: bind one, then free it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port();
    let limiter = RedisLimiter::new(
        &format!("redis://127.0.0.1:{port}"),
        "bridle-test:unreachable:",
        limits(10, MINUTE, 3, TTL),
        Duration::from_millis(500),
    )
    .expect("connects lazily");

    let started = Instant::now();
    let errors = [
        limiter.check_request("ann").await.expect_err("store down"),
        limiter
            .acquire_conversation("ann", "a")
            .await
            .expect_err("store down"),
        limiter
            .release_conversation("ann", "a")
            .await
            .expect_err("store down"),
        limiter.health_check().await.expect_err("store down"),
    ];
    for error in &errors {
        assert!(error.is_store_failure(), "{error:?}");
        assert!(
            matches!(error, LimitError::Unavailable(_) | LimitError::Timeout(_)),
            "{error:?}"
        );
    }
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "each call is bounded"
    );
}

#[tokio::test]
async fn redis_that_never_answers_times_out() {
    // Accepts connections (the kernel does, from the backlog) but never says a word.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    let port = silent.local_addr().expect("bound").port();
    let timeout = Duration::from_millis(300);
    let limiter = RedisLimiter::new(
        &format!("redis://127.0.0.1:{port}"),
        "bridle-test:silent:",
        limits(10, MINUTE, 3, TTL),
        timeout,
    )
    .expect("connects lazily");

    let started = Instant::now();
    let error = limiter.check_request("ann").await.expect_err("no answer");
    assert!(error.is_store_failure(), "{error:?}");
    assert!(
        started.elapsed() < timeout * 3,
        "took {:?}",
        started.elapsed()
    );
    drop(silent);
}
