//! Bridle's side of `bench/run` (issue 9): writes the inputs every tool is timed on, then times
//! Bridle on those very files and prints one JSON object, as the peers' scripts in `py/` and
//! `node/` do for theirs.
//!
//! ```sh
//! cargo run --release -p bridle-bench --example compare -- gen DIR    # write the inputs
//! cargo run --release -p bridle-bench --example compare -- time DIR   # time Bridle on them
//! ```
//!
//! `BENCH_SECONDS` (default 1) is the time spent per measured case. A measurement is the median,
//! over many samples, of the time per call, a sample being a batch of calls that lasts about a
//! millisecond (see `timing.rs`; the Python and Node scripts use the same method).

#[path = "bridle_cases.rs"]
mod cases;
#[path = "timing.rs"]
mod timing;

use bridle_bench::{
    Wire, deltas, invalid_reply, stream_deltas, stream_end, topic_reply, valid_reply, with_chars,
};
use bridle_core::{Context, Contract, Contracts, StreamCheck};
use serde_json::{Value, json};
use std::hint::black_box;
use std::path::{Path, PathBuf};
use timing::measure;

// The allocator the `bridle` binary ships with.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Reply sizes of comparison 1.
const CHECK_SIZES: [(&str, usize); 3] = [("1KB", 1_000), ("10KB", 10_000), ("100KB", 100_000)];
/// Tokens of the streamed reply of comparison 4 (≈ 4 characters a token), and its multiples.
const STREAM_TOKENS: usize = 5_306;
const STREAM_SCALES: [usize; 4] = [1, 2, 4, 8];
/// Characters per streamed delta.
const DELTA_CHARS: usize = 4;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match (args.first().map(String::as_str), args.get(1)) {
        (Some("gen"), Some(dir)) => generate(Path::new(dir)),
        (Some("time"), Some(dir)) => time(Path::new(dir)),
        _ => {
            eprintln!("usage: compare (gen|time) DIR");
            std::process::exit(2);
        }
    }
}

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap_or_else(|e| panic!("writing {name}: {e}"));
}

fn read(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("reading {name}: {e}"))
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the bench crate sits in the workspace")
        .to_path_buf()
}

/// Writes every input: the check replies, the XML reply, the streamed replies, the repair corpus
/// as JSON (from the project-written text files in `bench/compare/repair/`) and a manifest.
fn generate(dir: &Path) {
    std::fs::create_dir_all(dir).expect("input directory");
    let contracts = Contracts::builtin().expect("built-in contracts");
    let selfhelp = contracts
        .get("selfhelp-response")
        .expect("selfhelp-response");
    let topic = contracts.get("topic-analysis").expect("topic-analysis");
    let ctx = Context::new();
    let mut manifest = json!({"check": [], "xml": [], "stream": []});
    for (label, size) in CHECK_SIZES {
        for (variant, text) in [
            ("valid", valid_reply(size).to_string()),
            ("invalid", invalid_reply(size).to_string()),
        ] {
            let checked = selfhelp.check(&text, &ctx);
            assert_eq!(checked.is_valid(), variant == "valid", "{variant} {label}");
            let name = format!("check-{variant}-{label}.json");
            write(dir, &name, &text);
            push(
                &mut manifest["check"],
                json!({"file": name, "size": label, "variant": variant, "bytes": text.len()}),
            );
        }
    }
    let xml = topic_reply(10_000);
    assert!(topic.check(&xml, &ctx).is_valid());
    write(dir, "xml-10KB.xml", &xml);
    push(
        &mut manifest["xml"],
        json!({"file": "xml-10KB.xml", "size": "10KB", "bytes": xml.len()}),
    );
    for scale in STREAM_SCALES {
        let chars = STREAM_TOKENS * scale * DELTA_CHARS;
        let reply = with_chars(chars, |n| valid_reply(n).to_string());
        assert!(selfhelp.check(&reply, &ctx).is_valid());
        let name = format!("stream-{scale}x.json");
        write(dir, &name, &reply);
        push(
            &mut manifest["stream"],
            json!({"file": name, "scale": scale, "bytes": reply.len(),
                   "chars": reply.chars().count(), "deltas": deltas(&reply, DELTA_CHARS).len(),
                   "delta_chars": DELTA_CHARS}),
        );
    }
    let corpus = cases::load(&repo_root().join("bench/compare/repair"));
    write(
        dir,
        "repair-cases.json",
        &serde_json::to_string_pretty(&corpus).expect("json"),
    );
    manifest["repair"] = json!({"file": "repair-cases.json", "cases": corpus.len()});
    manifest["schema"] = json!(repo_root().join("contracts/selfhelp-response/schema.json"));
    write(
        dir,
        "manifest.json",
        &serde_json::to_string_pretty(&manifest).expect("json"),
    );
    eprintln!("inputs written to {}", dir.display());
}

fn push(list: &mut Value, item: Value) {
    if let Value::Array(items) = list {
        items.push(item);
    }
}

/// Times Bridle on the inputs `generate` wrote; prints one JSON object.
fn time(dir: &Path) {
    let manifest: Value = serde_json::from_str(&read(dir, "manifest.json")).expect("manifest");
    let contracts = Contracts::builtin().expect("built-in contracts");
    let selfhelp = contracts
        .get("selfhelp-response")
        .expect("selfhelp-response");
    let topic = contracts.get("topic-analysis").expect("topic-analysis");
    let ctx = Context::new();
    let mut out = json!({"tool": "bridle", "version": env!("CARGO_PKG_VERSION")});

    // 1. The full check (size, parse — the repair scan when it does not parse — coercions,
    // schema with every error, declared rules), and serde_json's parse alone as the floor.
    let mut check = Vec::new();
    for case in manifest["check"].as_array().expect("check list") {
        let text = read(dir, case["file"].as_str().expect("file"));
        let checked = selfhelp.check(&text, &ctx);
        let full = measure(|| {
            black_box(selfhelp.check(black_box(&text), &ctx));
        });
        let parse = measure(|| {
            black_box(serde_json::from_str::<Value>(black_box(&text)).ok());
        });
        let value: Value = serde_json::from_str(&text).expect("json");
        let validate = measure(|| {
            black_box(selfhelp.validate(black_box(&value)));
        });
        check.push(json!({"file": case["file"], "valid": checked.is_valid(),
            "errors": checked.violations.len(), "check": full, "parse": parse,
            "validate": validate}));
    }
    out["check"] = json!(check);

    // 2. XML: the safe read into JSON + schema validation.
    let mut xml = Vec::new();
    for case in manifest["xml"].as_array().expect("xml list") {
        let text = read(dir, case["file"].as_str().expect("file"));
        let valid = topic.check(&text, &ctx).is_valid();
        let full = measure(|| {
            black_box(topic.check(black_box(&text), &ctx));
        });
        xml.push(json!({"file": case["file"], "valid": valid, "check": full}));
    }
    out["xml"] = json!(xml);

    // 3. Repair: each case through a contract's check (any JSON, or `selfhelp-response`).
    out["repair"] = repair(dir, &manifest, &selfhelp, &ctx);

    // 4. Streaming.
    out["stream"] = stream(dir, &manifest, &selfhelp, &ctx);
    println!("{}", serde_json::to_string_pretty(&out).expect("json"));
}

fn repair(dir: &Path, manifest: &Value, selfhelp: &Contract, ctx: &Context) -> Value {
    let any = Contract::from_schema("any", json!({})).expect("the empty schema");
    let corpus: Vec<Value> = serde_json::from_str(&read(
        dir,
        manifest["repair"]["file"].as_str().expect("file"),
    ))
    .expect("corpus");
    let mut results = Vec::new();
    for case in &corpus {
        let input = case["input"].as_str().expect("input");
        let contract = if case["contract"] == "selfhelp-response" {
            selfhelp
        } else {
            &any
        };
        let checked = contract.check(input, ctx);
        let value = checked.value.clone().filter(|_| checked.is_valid());
        let stats = timing::measure_for(timing::budget() / 10, || {
            black_box(contract.check(black_box(input), ctx));
        });
        results.push(json!({"name": case["name"], "accepted": value.is_some(),
            "exact": value.is_some() && value.as_ref() == Some(&case["expected"]),
            "output": value, "median_ns": stats["median_ns"]}));
    }
    json!(results)
}

fn stream(dir: &Path, manifest: &Value, selfhelp: &Contract, ctx: &Context) -> Value {
    let mut results = Vec::new();
    for case in manifest["stream"].as_array().expect("stream list") {
        let text = read(dir, case["file"].as_str().expect("file"));
        let pieces = deltas(&text, DELTA_CHARS);
        let mut buf = String::new();
        let mut wire = Wire::default();
        // The incremental check: every delta pushed (violations a continuation cannot fix stop
        // the stream), then the complete check at the end.
        let incremental = measure(|| {
            let mut check =
                stream_deltas(selfhelp, ctx, &pieces, None, &mut buf, &mut wire).expect("no abort");
            black_box(stream_end(selfhelp, ctx, &mut check, &mut buf, &mut wire));
        });
        // As the engine streams to a client: plus the value so far, throttled (100 ms at 50
        // tokens/s = 5 deltas, and an eighth more reply), SSE-encoded.
        let throttled = measure(|| {
            let mut check = stream_deltas(selfhelp, ctx, &pieces, Some(5), &mut buf, &mut wire)
                .expect("no abort");
            black_box(stream_end(selfhelp, ctx, &mut check, &mut buf, &mut wire));
        });
        // Like the peers: the value so far after every delta (quadratic by nature).
        let every = (pieces.len() <= 12_000).then(|| {
            measure(|| {
                let mut check = StreamCheck::new(selfhelp, ctx);
                let mut emitted = Vec::new();
                for delta in &pieces {
                    check.push(delta, &mut emitted).expect("no abort");
                    emitted.clear();
                    black_box(check.partial());
                }
                black_box(selfhelp.check(check.raw(), ctx));
            })
        });
        results.push(json!({"file": case["file"], "scale": case["scale"],
            "deltas": pieces.len(), "incremental": incremental,
            "partials_throttled": throttled, "partial_every_delta": every}));
    }
    json!(results)
}
