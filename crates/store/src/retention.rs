//! [`Retention`]: the sweep that purges stored request payloads and raw replies older than
//! `[retention] payload_days` (shared/spec/02 asks for a retention policy for payloads).
//!
//! Only `request_payload` and `raw_response` go; every attempt's validation outcome stays —
//! content, parsed value, violations, repairs, flags, tokens, latency — so statistics, the admin
//! timeline and the users' history are unchanged. A purged attempt carries `payload_purged_at`;
//! it can no longer be replayed. The sweep purges in short transactions of [`BATCH`] attempts,
//! oldest first, and remembers how far it got, so it never reads the same stretch of history
//! twice while the process runs.

use crate::{PurgeRange, Store, StoreError, now_ms};
use std::time::Duration;

/// Attempts purged per transaction.
pub const BATCH: u32 = 500;

/// One day in milliseconds.
const DAY_MS: i64 = 24 * 60 * 60 * 1000;

/// The retention sweep's state: the age limit and how far earlier sweeps got.
#[derive(Debug, Clone)]
pub struct Retention {
    max_age: Duration,
    /// Attempts stored before this (Unix ms) were all purged by an earlier sweep.
    done_until: i64,
}

impl Retention {
    /// A sweep purging payloads older than `days` days.
    pub fn new(days: u32) -> Self {
        Self {
            max_age: Duration::from_millis(u64::from(days).saturating_mul(DAY_MS as u64)),
            done_until: 0,
        }
    }

    /// The cut-off of a sweep at `now` (Unix ms): attempts stored before it are purged.
    pub fn cutoff(&self, now: i64) -> i64 {
        now.saturating_sub(i64::try_from(self.max_age.as_millis()).unwrap_or(i64::MAX))
    }

    /// Purges what is older than the limit now; returns how many attempts were purged.
    /// `purged` hears each committed batch's count (the engine counts them in its metrics).
    pub async fn sweep(
        &mut self,
        store: &dyn Store,
        purged: &(dyn Fn(u64) + Send + Sync),
    ) -> Result<u64, StoreError> {
        self.sweep_before(store, purged, self.cutoff(now_ms()))
            .await
    }

    /// Purges every attempt stored before `before` (Unix ms) that still has a payload;
    /// `on_batch` hears each committed batch's count.
    pub async fn sweep_before(
        &mut self,
        store: &dyn Store,
        on_batch: &(dyn Fn(u64) + Send + Sync),
        before: i64,
    ) -> Result<u64, StoreError> {
        let mut total = 0;
        loop {
            let range = PurgeRange {
                from: self.done_until,
                before,
                limit: BATCH,
            };
            let purged = store.purge_payloads(range).await?;
            total += purged.count;
            on_batch(purged.count);
            match purged.through {
                // Rows stored in the same millisecond as the last one purged may remain.
                Some(through) if purged.count == u64::from(BATCH) => self.done_until = through,
                _ => {
                    self.done_until = self.done_until.max(before);
                    return Ok(total);
                }
            }
        }
    }
}
