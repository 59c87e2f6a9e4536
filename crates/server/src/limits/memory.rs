//! The in-process backend: exact limits for one gateway instance.
//!
//! Users are spread over [`SHARDS`] mutex-protected maps, so unrelated users rarely contend;
//! each decision takes one shard lock for a few hundred nanoseconds and never holds it across
//! an `.await`. Memory stays bounded: a user whose requests have all left the window and who
//! holds no conversation is *idle* and is evicted by the amortised sweep that runs whenever a
//! shard has doubled since its last sweep (or by [`MemoryLimiter::evict_idle`]).
//!
//! Time is [`tokio::time::Instant`], so tests can run on Tokio's paused clock.

use std::collections::hash_map::RandomState;
use std::collections::{HashMap, VecDeque};
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use tokio::time::Instant;

use super::{
    Allowed, Decision, Lease, LeaseInner, LimitError, Limiter, Limits, Rejection, check_id,
};

/// Number of independently locked maps of users.
const SHARDS: usize = 16;

/// A shard is swept once it holds at least this many users (and then again each time it
/// doubles), so small deployments never pay for sweeps.
const MIN_SWEEP_LEN: usize = 256;

/// Per-user limits kept in this process.
///
/// Cloning is cheap and shares the state.
#[derive(Debug, Clone)]
pub struct MemoryLimiter {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    limits: Limits,
    hasher: RandomState,
    shards: [Mutex<Shard>; SHARDS],
    next_lease: AtomicU64,
}

#[derive(Debug)]
struct Shard {
    users: HashMap<String, UserState>,
    /// The next sweep runs when `users.len()` exceeds this.
    sweep_at: usize,
}

#[derive(Debug, Default)]
struct UserState {
    /// Admission times of the requests still in the window, oldest first.
    requests: VecDeque<Instant>,
    /// Active conversations and the ids of the leases holding each (never empty).
    conversations: HashMap<String, Vec<u64>>,
}

impl UserState {
    /// Forgets the requests that have left the window.
    fn prune(&mut self, now: Instant, window: Duration) {
        while self.requests.front().is_some_and(|&at| at + window <= now) {
            self.requests.pop_front();
        }
    }

    fn is_idle(&mut self, now: Instant, window: Duration) -> bool {
        self.prune(now, window);
        self.requests.is_empty() && self.conversations.is_empty()
    }
}

impl MemoryLimiter {
    /// An in-process limiter enforcing `limits`.
    #[must_use]
    pub fn new(limits: Limits) -> Self {
        let shards = std::array::from_fn(|_| {
            Mutex::new(Shard {
                users: HashMap::new(),
                sweep_at: MIN_SWEEP_LEN,
            })
        });
        Self {
            shared: Arc::new(Shared {
                limits,
                hasher: RandomState::new(),
                shards,
                next_lease: AtomicU64::new(0),
            }),
        }
    }

    /// The limits this limiter enforces.
    #[must_use]
    pub fn limits(&self) -> Limits {
        self.shared.limits
    }

    /// How many users currently have state (for metrics and tests).
    #[must_use]
    pub fn tracked_users(&self) -> usize {
        self.shared
            .shards
            .iter()
            .map(|shard| lock(shard).users.len())
            .sum()
    }

    /// Forgets every idle user now and returns how many were forgotten. Not needed for bounded
    /// memory (sweeps run by themselves as the map grows); useful for a periodic clean-up task.
    pub fn evict_idle(&self) -> usize {
        let now = Instant::now();
        self.shared
            .shards
            .iter()
            .map(|shard| lock(shard).sweep(now, self.shared.limits.window))
            .sum()
    }
}

impl Shared {
    fn shard(&self, user: &str) -> MutexGuard<'_, Shard> {
        // The remainder is below `SHARDS`, so it fits a `usize` and indexes the array in bounds.
        let index = (self.hasher.hash_one(user) % SHARDS as u64) as usize;
        #[expect(clippy::indexing_slicing, reason = "index < SHARDS by construction")]
        let shard = &self.shards[index];
        lock(shard)
    }

    /// Removes one lease, or every lease of the conversation when `lease` is `None`.
    fn release(&self, user: &str, conversation: &str, lease: Option<u64>) {
        let now = Instant::now();
        let mut shard = self.shard(user);
        let Some(state) = shard.users.get_mut(user) else {
            return;
        };
        if let Some(holders) = state.conversations.get_mut(conversation) {
            match lease {
                Some(id) => holders.retain(|&held| held != id),
                None => holders.clear(),
            }
            if holders.is_empty() {
                state.conversations.remove(conversation);
            }
        }
        if state.is_idle(now, self.limits.window) {
            shard.users.remove(user);
        }
    }
}

impl Shard {
    /// Evicts idle users once the shard has doubled since the last sweep (amortised O(1)).
    fn maybe_sweep(&mut self, now: Instant, window: Duration) {
        if self.users.len() >= self.sweep_at {
            self.sweep(now, window);
        }
    }

    fn sweep(&mut self, now: Instant, window: Duration) -> usize {
        let before = self.users.len();
        self.users.retain(|_, state| !state.is_idle(now, window));
        self.sweep_at = self.users.len().saturating_mul(2).max(MIN_SWEEP_LEN);
        before - self.users.len()
    }
}

/// Locks a shard. A panic while holding the lock cannot leave a shard half-updated (every
/// update is a single push, pop or insert), so a poisoned lock is safe to keep using.
fn lock(shard: &Mutex<Shard>) -> MutexGuard<'_, Shard> {
    shard.lock().unwrap_or_else(PoisonError::into_inner)
}

#[async_trait]
impl Limiter for MemoryLimiter {
    async fn check_request(&self, user: &str) -> Result<Decision, LimitError> {
        check_id("user", user)?;
        let Limits {
            requests: limit,
            window,
            ..
        } = self.shared.limits;
        let now = Instant::now();
        let mut shard = self.shared.shard(user);
        shard.maybe_sweep(now, window);
        let state = shard.users.entry(user.to_owned()).or_default();
        state.prune(now, window);

        let counted = state.requests.len();
        let limit_len = limit as usize;
        if counted < limit_len {
            state.requests.push_back(now);
            let oldest = state.requests.front().copied().unwrap_or(now);
            return Ok(Ok(Allowed {
                limit,
                remaining: u32::try_from(limit_len - counted - 1).unwrap_or(0),
                reset_after: (oldest + window).saturating_duration_since(now),
            }));
        }
        // One more request fits once all but `limit - 1` of the counted ones have left the
        // window, i.e. when the one at index `counted - limit` does.
        let frees_at = state
            .requests
            .get(counted - limit_len)
            .map_or(now, |&at| at + window);
        let rejection = Rejection::requests(limit, frees_at.saturating_duration_since(now));
        tracing::debug!(user, retry_after = ?rejection.retry_after, "request limit reached");
        Ok(Err(rejection))
    }

    async fn acquire_conversation(
        &self,
        user: &str,
        conversation: &str,
    ) -> Result<Result<Lease, Rejection>, LimitError> {
        check_id("user", user)?;
        check_id("conversation", conversation)?;
        let limit = self.shared.limits.conversations;
        let id = self.shared.next_lease.fetch_add(1, Ordering::Relaxed);
        {
            let now = Instant::now();
            let mut shard = self.shared.shard(user);
            shard.maybe_sweep(now, self.shared.limits.window);
            let state = shard.users.entry(user.to_owned()).or_default();
            if let Some(holders) = state.conversations.get_mut(conversation) {
                holders.push(id);
            } else if state.conversations.len() < limit as usize {
                state
                    .conversations
                    .insert(conversation.to_owned(), vec![id]);
            } else {
                tracing::debug!(user, conversation, "conversation limit reached");
                return Ok(Err(Rejection::conversations(limit)));
            }
        }
        Ok(Ok(Lease {
            inner: LeaseInner::Memory(MemoryLease {
                shared: Arc::clone(&self.shared),
                user: user.to_owned(),
                conversation: conversation.to_owned(),
                id,
            }),
        }))
    }

    async fn release_conversation(&self, user: &str, conversation: &str) -> Result<(), LimitError> {
        check_id("user", user)?;
        check_id("conversation", conversation)?;
        self.shared.release(user, conversation, None);
        Ok(())
    }
}

/// An in-process lease: releases its slot when dropped.
pub(super) struct MemoryLease {
    shared: Arc<Shared>,
    user: String,
    conversation: String,
    id: u64,
}

impl MemoryLease {
    pub(super) fn user(&self) -> &str {
        &self.user
    }

    pub(super) fn conversation(&self) -> &str {
        &self.conversation
    }

    /// Releases now (the same as dropping).
    pub(super) fn release(self) {
        drop(self);
    }
}

impl Drop for MemoryLease {
    fn drop(&mut self) {
        self.shared
            .release(&self.user, &self.conversation, Some(self.id));
    }
}

impl std::fmt::Debug for MemoryLease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryLease")
            .field("user", &self.user)
            .field("conversation", &self.conversation)
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limiter(requests: u32, conversations: u32) -> MemoryLimiter {
        MemoryLimiter::new(
            Limits::new(
                requests,
                Duration::from_secs(60),
                conversations,
                Duration::from_secs(30),
            )
            .expect("valid limits"),
        )
    }

    #[tokio::test(start_paused = true)]
    async fn a_released_last_conversation_of_an_otherwise_idle_user_evicts_the_user() {
        let limiter = limiter(10, 3);
        let lease = limiter.acquire_conversation("u", "c").await;
        assert!(matches!(lease, Ok(Ok(_))));
        assert_eq!(limiter.tracked_users(), 1);
        drop(lease);
        assert_eq!(limiter.tracked_users(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn shards_sweep_idle_users_as_they_grow() {
        let limiter = limiter(10, 3);
        let old_users = SHARDS * MIN_SWEEP_LEN * 4;
        for i in 0..old_users {
            assert!(matches!(
                limiter.check_request(&format!("old{i}")).await,
                Ok(Ok(_))
            ));
        }
        assert_eq!(limiter.tracked_users(), old_users);
        tokio::time::advance(Duration::from_secs(60)).await;
        // Every shard passes twice its size at the last sweep, so each sweeps once more and
        // drops all of its (now idle) old users.
        let new_users = old_users * 3;
        for i in 0..new_users {
            assert!(matches!(
                limiter.check_request(&format!("new{i}")).await,
                Ok(Ok(_))
            ));
        }
        assert_eq!(limiter.tracked_users(), new_users);
        assert_eq!(limiter.evict_idle(), 0);
    }
}
