"""The timing method every tool in bench/run uses (see bench/compare/timing.rs): warm-up calls
for a fifth of the budget (at least one), a batch size chosen from the warm-up so a batch lasts
about a millisecond, then batches until the budget is spent (at least 5); the result is the
median time per call over the batches."""

import os
import statistics
import time

BATCH_NS = 1_000_000
MIN_SAMPLES = 5


def budget():
    """Seconds per measured case: BENCH_SECONDS (default 1)."""
    return float(os.environ.get("BENCH_SECONDS", "1"))


def measure(f, seconds=None):
    seconds = budget() if seconds is None else seconds
    start = time.perf_counter_ns()
    calls = 0
    while calls == 0 or time.perf_counter_ns() - start < seconds * 2e8:
        f()
        calls += 1
    once = max((time.perf_counter_ns() - start) // calls, 1)
    batch = max(BATCH_NS // once, 1)
    per_call = []
    begin = time.perf_counter()
    while len(per_call) < MIN_SAMPLES or time.perf_counter() - begin < seconds:
        t = time.perf_counter_ns()
        for _ in range(batch):
            f()
        per_call.append((time.perf_counter_ns() - t) / batch)
    return {"median_ns": statistics.median(per_call), "samples": len(per_call), "batch": batch}


def measure_long(f, seconds, min_runs=3):
    """For calls that take from milliseconds to many seconds (streaming): whole calls, at least
    `min_runs` of them (one when it alone outlasts the budget), until `seconds` are spent;
    median."""
    runs = []
    begin = time.perf_counter()
    # A run longer than the whole budget is not repeated.
    while (len(runs) < min_runs and not (runs and runs[0] > seconds * 1e9)) \
            or time.perf_counter() - begin < seconds:
        t = time.perf_counter_ns()
        f()
        runs.append(time.perf_counter_ns() - t)
    return {"median_ns": statistics.median(runs), "samples": len(runs), "batch": 1}
