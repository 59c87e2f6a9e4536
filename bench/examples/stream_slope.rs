//! How the streaming cost grows with the reply: `json` and `markers` replies (and `text`) of
//! 10³, 10⁴ and 10⁵ deltas of 4 characters (4k, 40k, 400k characters), each streamed as the
//! `stream` bench does — push + SSE (+ a partial every 5 deltas for `json`), then the complete
//! check + `finish` — timed many times; prints the median per size and the least-squares slope
//! of log(time) against log(deltas).
//!
//! `cargo run --release -p bridle-bench --example stream_slope [-- SECONDS_PER_POINT]`
//!
//! Every contract's `max_bytes` (4 MiB for `selfhelp-response`, 1 MiB for `table-chat` and
//! `question-cards`) is above the largest reply, so the built-in contracts are used as they are.

use bridle_bench::{Wire, deltas, stream_case, stream_deltas, stream_end};
use bridle_core::{Context, Contract, Contracts, Emit, StreamCheck};
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

// The allocator the `bridle` binary ships with.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const SIZES: [usize; 3] = [1_000, 10_000, 100_000];
const CHARS: usize = 4;

/// A reply of one size, with its contract and context.
type Case = (Context, Arc<Contract>, String);

/// What is timed for one size.
#[derive(Clone, Copy)]
enum Variant {
    /// Push alone, emitted events dropped.
    PushOnly,
    /// Push + SSE (+ partials).
    Stream(Option<usize>),
    /// Push + SSE (+ partials), then the complete check + finish.
    Total(Option<usize>),
    /// The complete check + finish alone.
    End,
}

fn main() {
    let budget = std::env::args()
        .nth(1)
        .and_then(|s| s.parse::<f64>().ok())
        .map_or(Duration::from_secs(2), Duration::from_secs_f64);
    let contracts = Contracts::builtin().expect("built-in contracts");
    let variants: [(&str, &str, Variant); 12] = [
        (
            "json",
            "total, partial every 5 deltas",
            Variant::Total(Some(5)),
        ),
        ("json", "total, no partials", Variant::Total(None)),
        ("json", "push only", Variant::PushOnly),
        ("json", "end (check)", Variant::End),
        ("markers", "total", Variant::Total(None)),
        ("markers", "push + SSE", Variant::Stream(None)),
        ("markers", "push only", Variant::PushOnly),
        ("markers", "end (check + finish)", Variant::End),
        ("text", "total", Variant::Total(None)),
        ("text", "push + SSE", Variant::Stream(None)),
        ("text", "push only", Variant::PushOnly),
        ("text", "end (check + finish)", Variant::End),
    ];
    let replies: Vec<(&str, Vec<Case>)> = ["json", "markers", "text"]
        .into_iter()
        .map(|kind| {
            let sized = SIZES
                .iter()
                .map(|&n| {
                    let (name, ctx, reply) = stream_case(kind, n * CHARS).expect("a stream kind");
                    let contract = contracts.get(name).expect("built-in contract");
                    assert!(
                        reply.len() <= contract.limits().max_bytes,
                        "{kind}: {} B over the contract's limit",
                        reply.len()
                    );
                    (ctx, contract, reply)
                })
                .collect();
            (kind, sized)
        })
        .collect();

    println!(
        "| kind | variant | 10³ deltas | 10⁴ deltas | 10⁵ deltas | ns/delta at 10⁵ | slope 10³–10⁵ | slope 10⁴–10⁵ |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for (kind, label, variant) in variants {
        let sized = &replies.iter().find(|r| r.0 == kind).expect("kind").1;
        let pieces: Vec<Vec<&str>> = sized.iter().map(|c| deltas(&c.2, CHARS)).collect();
        let mut runs: Vec<Box<dyn FnMut() -> Duration + '_>> = sized
            .iter()
            .zip(&pieces)
            .map(|((ctx, contract, _), pieces)| {
                Box::new(move || run(contract, ctx, pieces, variant))
                    as Box<dyn FnMut() -> Duration>
            })
            .collect();
        let medians = time(budget, &mut runs);
        let points: Vec<(f64, f64)> = pieces
            .iter()
            .zip(&medians)
            .map(|(p, t)| (p.len() as f64, t.as_secs_f64()))
            .collect();
        let cells: Vec<String> = points
            .iter()
            .zip(&medians)
            .map(|(&(n, _), &t)| format!("{} ({n} d)", show(t)))
            .collect();
        let (n, t) = points[points.len() - 1];
        println!(
            "| {kind} | {label} | {} | {:.0} | **{:.3}** | {:.3} |",
            cells.join(" | "),
            t * 1e9 / n,
            slope(&points),
            slope(&points[points.len() - 2..])
        );
    }
}

/// One streamed attempt (or part of it) of `pieces`.
fn run(contract: &Contract, ctx: &Context, pieces: &[&str], variant: Variant) -> Duration {
    let (mut buf, mut wire) = (String::new(), Wire::default());
    match variant {
        Variant::PushOnly => {
            let started = Instant::now();
            let mut check = StreamCheck::new(contract, ctx);
            let mut emitted: Vec<Emit> = Vec::new();
            for delta in pieces {
                check
                    .push(black_box(delta), &mut emitted)
                    .expect("no early abort");
                emitted.clear();
            }
            black_box(check);
            started.elapsed()
        }
        Variant::Stream(every) => {
            let started = Instant::now();
            let check = stream_deltas(contract, ctx, black_box(pieces), every, &mut buf, &mut wire)
                .expect("no early abort");
            black_box((check, &wire));
            started.elapsed()
        }
        Variant::Total(every) => {
            let started = Instant::now();
            let mut check =
                stream_deltas(contract, ctx, black_box(pieces), every, &mut buf, &mut wire)
                    .expect("no early abort");
            let checked = stream_end(contract, ctx, &mut check, &mut buf, &mut wire);
            black_box((&checked, &wire));
            let took = started.elapsed();
            assert!(checked.is_valid(), "{:?}", checked.violations);
            took
        }
        Variant::End => {
            let mut check = stream_deltas(contract, ctx, pieces, None, &mut buf, &mut wire)
                .expect("no early abort");
            let started = Instant::now();
            let checked = stream_end(contract, ctx, &mut check, &mut buf, &mut wire);
            black_box((&checked, &wire));
            started.elapsed()
        }
    }
}

/// The median of each size's own timings, over as many runs of it as fit in `budget` (at
/// least 5, at most 2,000) after one warm-up run. The runs of all sizes are interleaved in
/// five rounds, so that a burst of load on the machine does not fall on one size alone.
fn time(budget: Duration, sizes: &mut [Box<dyn FnMut() -> Duration + '_>]) -> Vec<Duration> {
    const ROUNDS: usize = 5;
    let per_round: Vec<usize> = sizes
        .iter_mut()
        .map(|f| {
            let first = f().as_secs_f64().max(1e-9);
            let runs = (budget.as_secs_f64() / first).clamp(5.0, 2_000.0) as usize;
            runs.div_ceil(ROUNDS)
        })
        .collect();
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); sizes.len()];
    for _ in 0..ROUNDS {
        for ((f, &runs), times) in sizes.iter_mut().zip(&per_round).zip(&mut times) {
            times.extend((0..runs).map(|_| f()));
        }
    }
    times
        .into_iter()
        .map(|mut t| {
            t.sort();
            t[t.len() / 2]
        })
        .collect()
}

/// The least-squares slope of ln(time) against ln(deltas).
fn slope(points: &[(f64, f64)]) -> f64 {
    let logs: Vec<(f64, f64)> = points.iter().map(|&(n, t)| (n.ln(), t.ln())).collect();
    let count = logs.len() as f64;
    let mean_x = logs.iter().map(|p| p.0).sum::<f64>() / count;
    let mean_y = logs.iter().map(|p| p.1).sum::<f64>() / count;
    let cov: f64 = logs.iter().map(|p| (p.0 - mean_x) * (p.1 - mean_y)).sum();
    let var: f64 = logs.iter().map(|p| (p.0 - mean_x).powi(2)).sum();
    cov / var
}

fn show(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s >= 1.0 {
        format!("{s:.2} s")
    } else if s >= 1e-3 {
        format!("{:.2} ms", s * 1e3)
    } else {
        format!("{:.1} µs", s * 1e6)
    }
}
