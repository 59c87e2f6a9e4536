//! The timing method shared by every tool in `bench/run` (the Python and Node scripts implement
//! the same): warm-up calls for a fifth of the budget (at least one; JIT compilers and caches
//! settle), a batch size chosen from the warm-up so a batch lasts about a millisecond, then
//! batches until the budget is spent (at least 5); the result is the median time per call over
//! the batches.

use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// A batch lasts about this long.
const BATCH: Duration = Duration::from_millis(1);
/// Fewest batches per measurement.
const MIN_SAMPLES: usize = 5;

/// The time per measured case: `BENCH_SECONDS` (default 1).
pub fn budget() -> Duration {
    std::env::var("BENCH_SECONDS")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .map_or(Duration::from_secs(1), Duration::from_secs_f64)
}

/// [`measure_for`] with the default [`budget`].
pub fn measure(f: impl FnMut()) -> Value {
    measure_for(budget(), f)
}

/// Median time per call of `f`: `{"median_ns", "samples", "batch"}`.
pub fn measure_for(budget: Duration, mut f: impl FnMut()) -> Value {
    let start = Instant::now();
    let mut calls = 0u32;
    while calls == 0 || start.elapsed() < budget / 5 {
        f();
        calls += 1;
    }
    let once = (start.elapsed() / calls).max(Duration::from_nanos(1));
    let batch = usize::try_from((BATCH.as_nanos() / once.as_nanos()).max(1)).unwrap_or(1);
    let mut per_call = Vec::new();
    let begin = Instant::now();
    while per_call.len() < MIN_SAMPLES || begin.elapsed() < budget {
        let t = Instant::now();
        for _ in 0..batch {
            f();
        }
        per_call.push(t.elapsed().as_nanos() as f64 / batch as f64);
    }
    per_call.sort_by(f64::total_cmp);
    let n = per_call.len();
    let median = if n % 2 == 1 {
        per_call[n / 2]
    } else {
        (per_call[n / 2 - 1] + per_call[n / 2]) / 2.0
    };
    json!({"median_ns": median, "samples": n, "batch": batch})
}
