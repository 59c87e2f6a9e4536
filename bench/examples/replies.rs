//! Writes the benchmark replies to a directory, for running other tools on the same input:
//! `cargo run -p bridle-bench --example replies -- OUT_DIR` → `valid-10KB.json`, … .

use bridle_bench::{invalid_reply, needs_repair, valid_reply};
use std::path::PathBuf;

fn main() -> std::io::Result<()> {
    let out = PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "bench-replies".into()),
    );
    std::fs::create_dir_all(&out)?;
    for (label, size) in [("1KB", 1_000), ("10KB", 10_000), ("100KB", 100_000)] {
        std::fs::write(
            out.join(format!("valid-{label}.json")),
            valid_reply(size).to_string(),
        )?;
        std::fs::write(
            out.join(format!("invalid-{label}.json")),
            invalid_reply(size).to_string(),
        )?;
        std::fs::write(out.join(format!("repair-{label}.txt")), needs_repair(size))?;
    }
    println!("{}", out.display());
    Ok(())
}
