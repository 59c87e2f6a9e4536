//! Peak live heap bytes while a reply streams through `StreamCheck` as the `stream` bench feeds
//! it (push + SSE encoding + throttled partials), relative to the reply's length; and the peak
//! once the complete check and `finish` run too.
//!
//! `cargo run --release -p bridle-bench --example stream_memory`
//!
//! The count comes from dhat's global allocator (the workspace forbids `unsafe_code`, which a
//! hand-written `GlobalAlloc` needs). A profiler is started just before each run, so only
//! blocks allocated during the run count: not the reply itself nor its list of deltas (which
//! stand for the provider's stream), but the check's own copy of the reply, its state, the
//! emitted events, the partial values, the SSE buffer and event data. A block grown by
//! `realloc` counts at its new size (the old block is not counted twice). Sizes are the sizes
//! asked for (a `String`'s capacity, not its length), without the allocator's own overhead.
//!
//! Columns: `new()` is what a fresh `StreamCheck` holds before any delta (for `json`, the
//! schema index: per contract, not per reply); the peak is shown in bytes, over the reply, and
//! without that fixed part over the reply.

use bridle_bench::{Wire, deltas, stream_case, stream_deltas, stream_end};
use bridle_core::{Context, Contract, Contracts, Emit, StreamCheck};

#[global_allocator]
static ALLOCATOR: dhat::Alloc = dhat::Alloc;

const CHARS: usize = 4;

/// What runs under the profiler.
#[derive(Clone, Copy)]
enum Variant {
    /// Push alone, emitted events dropped.
    PushOnly,
    /// Push + SSE (+ a partial every `n` deltas).
    Stream(Option<usize>),
}

/// What one run measured, in bytes.
struct Measured {
    /// Live after `StreamCheck::new`, before any delta.
    fixed: usize,
    /// Peak while streaming.
    peak: usize,
    /// Live once all deltas are in.
    live: usize,
    /// Peak including the complete check and `finish`.
    peak_end: usize,
}

fn main() {
    let contracts = Contracts::builtin().expect("built-in contracts");
    let (push, sse, partials) = (
        ("push only", Variant::PushOnly),
        ("push + SSE", Variant::Stream(None)),
        ("push + SSE + partial every 5", Variant::Stream(Some(5))),
    );
    let mut cases = vec![
        ("json", 5_306, push),
        ("json", 5_306, partials),
        ("markers", 5_306, push),
        ("markers", 5_306, sse),
        ("text", 5_306, push),
        ("text", 5_306, sse),
    ];
    for tokens in [1_000, 10_000, 100_000] {
        cases.extend([
            ("json", tokens, push),
            ("json", tokens, partials),
            ("markers", tokens, sse),
            ("text", tokens, sse),
        ]);
    }
    println!(
        "| kind | deltas | reply | variant | `new()` | peak streaming | / reply | − `new()`, / reply | live after | peak with check + finish | / reply |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for (kind, tokens, (label, variant)) in cases {
        let (name, ctx, reply) = stream_case(kind, tokens * CHARS).expect("a stream kind");
        let contract = contracts.get(name).expect("built-in contract");
        let pieces = deltas(&reply, CHARS);
        let m = measure(&contract, &ctx, &pieces, variant);
        let len = reply.len() as f64;
        let ratio = |bytes: usize| bytes as f64 / len;
        println!(
            "| {kind} | {} | {} B | {label} | {} B | {} B | **{:.2}×** | {:.2}× | {} B | {} B | {:.2}× |",
            pieces.len(),
            reply.len(),
            m.fixed,
            m.peak,
            ratio(m.peak),
            ratio(m.peak.saturating_sub(m.fixed)),
            m.live,
            m.peak_end,
            ratio(m.peak_end),
        );
    }
}

fn measure(contract: &Contract, ctx: &Context, pieces: &[&str], variant: Variant) -> Measured {
    // The contract indexes its schema for streaming once, on first use; that is the contract's
    // memory, not the attempt's.
    drop(StreamCheck::new(contract, ctx));
    let fixed = {
        let _profiler = dhat::Profiler::builder().testing().build();
        let check = StreamCheck::new(contract, ctx);
        let live = dhat::HeapStats::get().curr_bytes;
        drop(check);
        live
    };
    let _profiler = dhat::Profiler::builder().testing().build();
    let (mut buf, mut wire) = (String::new(), Wire::default());
    let mut check = match variant {
        Variant::PushOnly => {
            let mut check = StreamCheck::new(contract, ctx);
            let mut emitted: Vec<Emit> = Vec::new();
            for delta in pieces {
                check.push(delta, &mut emitted).expect("no early abort");
                emitted.clear();
            }
            check
        }
        Variant::Stream(every) => stream_deltas(contract, ctx, pieces, every, &mut buf, &mut wire)
            .expect("no early abort"),
    };
    let streamed = dhat::HeapStats::get();
    let checked = stream_end(contract, ctx, &mut check, &mut buf, &mut wire);
    assert!(checked.is_valid(), "{:?}", checked.violations);
    Measured {
        fixed,
        peak: streamed.max_bytes,
        live: streamed.curr_bytes,
        peak_end: dhat::HeapStats::get().max_bytes,
    }
}
