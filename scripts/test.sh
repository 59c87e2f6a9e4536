#!/usr/bin/env bash
# Runs every Bridle test on a fresh machine: installs what the tests need, then formatting,
# lints, unit + integration + property + snapshot tests, doc tests, and a short fuzz run.
#
#   scripts/test.sh              everything
#   BRIDLE_FUZZ_SECONDS=0 ...    skip the fuzz run (default 30 s per target)
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n== %s\n' "$*"; }

step "tools"
command -v cargo-nextest >/dev/null 2>&1 || cargo install --locked cargo-nextest
fuzz_seconds="${BRIDLE_FUZZ_SECONDS:-30}"
if [ "$fuzz_seconds" != "0" ] && ! command -v cargo-fuzz >/dev/null 2>&1; then
  cargo install --locked cargo-fuzz
fi

step "format"
cargo fmt --all -- --check

step "lints"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "tests"
# Snapshots are compared, never rewritten, here.
export INSTA_UPDATE=no
cargo nextest run --workspace --locked --no-fail-fast
cargo test --workspace --doc --locked

if [ "$fuzz_seconds" != "0" ]; then
  step "fuzz (${fuzz_seconds}s per target)"
  # cargo-fuzz needs unstable compiler flags; the stable toolchain allows them this way.
  for target in $(cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz list); do
    RUSTC_BOOTSTRAP=1 cargo fuzz run --fuzz-dir fuzz --sanitizer none "$target" -- \
      -max_total_time="$fuzz_seconds" -max_len=65536 -rss_limit_mb=2048
  done
fi

step "all tests passed"
