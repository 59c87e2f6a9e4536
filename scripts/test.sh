#!/usr/bin/env bash
# Runs every Bridle test on a fresh machine: installs what the tests need, then formatting,
# lints, unit + integration + property + snapshot tests, doc tests, the browser tests of the web
# pages (headless Chromium), the Python package's pytest suite against its built wheel, the
# documentation check, and a short fuzz run.
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

step "python client"
# The OpenAI-compatible endpoint is tested with the official openai package, in a venv of its own.
if [ ! -x target/py/bin/python ] || ! target/py/bin/python -c "import openai" 2>/dev/null; then
  python3 -m venv target/py
  target/py/bin/pip install --quiet --disable-pip-version-check "openai==3.54.0"
fi
target/py/bin/python -c "import openai; print('openai', openai.__version__)"

step "json schema test suite"
# The official JSON-Schema-Test-Suite, as shipped in the sdist of Python's jsonschema (never
# committed); crates/core/tests/it/schema_suite.rs runs it (and fetches it itself when run alone).
suite="${CARGO_TARGET_DIR:-target}/json-schema-test-suite-4.26.0"
if [ ! -d "$suite/tests" ]; then
  tmp="$(mktemp -d)"
  target/py/bin/pip download --quiet --disable-pip-version-check --no-binary :all: --no-deps \
    "jsonschema==4.26.0" -d "$tmp"
  tar -xzf "$tmp/jsonschema-4.26.0.tar.gz" -C "$tmp" jsonschema-4.26.0/json
  mkdir -p "$(dirname "$suite")"
  mv "$tmp/jsonschema-4.26.0/json" "$suite"
  rm -rf "$tmp"
fi
echo "JSON-Schema-Test-Suite in $suite"

step "javascript client"
# ... and with the official openai npm package, pinned by crates/cli/tests/js/package-lock.json.
npm ci --silent --no-audit --no-fund --prefix crates/cli/tests/js
(cd crates/cli/tests/js && node -e 'import("openai/version").then((m) => console.log("openai (npm)", m.VERSION))')

step "services"
# The store tests use the real PostgreSQL on 127.0.0.1:5432 (database "test", trust auth).
if [ -z "${BRIDLE_TEST_POSTGRES_URL:-}" ]; then
  if ! pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then
    echo "PostgreSQL is not answering on 127.0.0.1:5432; trying to start it"
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n 1)" main start || true
    for _ in $(seq 1 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 1; done
  fi
  pg_isready -h 127.0.0.1 -p 5432
fi
# The shared rate-limit tests use the real Redis on 127.0.0.1:6379.
if [ -z "${BRIDLE_TEST_REDIS_URL:-}" ]; then
  if ! redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
    echo "Redis is not answering on 127.0.0.1:6379; trying to start it"
    redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no || true
    for _ in $(seq 1 30); do redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 && break; sleep 1; done
  fi
  redis-cli -h 127.0.0.1 -p 6379 ping
fi

step "format"
cargo fmt --all -- --check

step "dependency directions"
scripts/check-deps.sh

step "lints"
cargo clippy --workspace --all-targets --locked -- -D warnings
# The mock as the providers use it: the model alone, without its HTTP front ends.
cargo clippy -p bridle-mock --no-default-features --all-targets --locked -- -D warnings

step "tests"
# Snapshots are compared, never rewritten, here.
export INSTA_UPDATE=no
log="$(mktemp)"
trap 'rm -f "$log" "$log.fuzz" "$log.browser" "$log.python"' EXIT
cargo nextest run --workspace --locked --no-fail-fast 2>&1 | tee -a "$log"
cargo test --workspace --doc --locked 2>&1 | tee -a "$log"
# Count what ran: nextest's summary plus each doc-test result line.
unit=$(grep -oE 'tests run: [0-9]+ passed' "$log" | grep -oE '[0-9]+' | tail -n 1)
doc=$(grep -oE 'test result: ok\. [0-9]+ passed' "$log" | grep -oE '[0-9]+ passed' | awk '{s += $1} END {print s + 0}')
total=$(( ${unit:-0} + ${doc:-0} ))

step "browser"
# The web pages in headless Chromium (Debian's chromium, driven by playwright-core) against the
# real server and mock LLM: tests/browser/*.test.mjs, Node's built-in test runner.
if [ ! -x /usr/bin/chromium ]; then
  apt-get update && apt-get install -y chromium
fi
if ! command -v npm >/dev/null 2>&1; then
  apt-get update && apt-get install -y nodejs npm
fi
lock=tests/browser/package-lock.json
stamp=tests/browser/node_modules/.package-lock.json
if [ ! -d tests/browser/node_modules ] || [ ! -f "$stamp" ] || [ "$lock" -nt "$stamp" ]; then
  (cd tests/browser && npm ci --no-audit --no-fund)
fi
cargo build -p bridle --locked
BRIDLE_BIN="${CARGO_TARGET_DIR:-target}/debug/bridle" node --test tests/browser/ 2>&1 | tee "$log.browser"
browser=$(grep -E '^# pass [0-9]+' "$log.browser" | grep -oE '[0-9]+' | tail -n 1)
total=$(( total + ${browser:-0} ))

step "python package"
# The bridle Python package (python/, docs/python.md): its Rust side formatted and linted, the
# wheel built once (release, maturin), installed into a fresh venv with the test requirements,
# and the pytest suite run against it with the bridle binary built above (parts 2 and 3 start
# `bridle mock-llm` and `bridle serve` from it; docs/python.md's examples run too).
tools=target/pytools
if ! "$tools/bin/maturin" --version 2>/dev/null | grep -q '^maturin 1.16.0$'; then
  rm -rf "$tools"
  python3 -m venv "$tools"
  "$tools/bin/pip" install --quiet --disable-pip-version-check "maturin==1.16.0"
fi
cargo fmt --manifest-path python/Cargo.toml -- --check
cargo clippy --manifest-path python/Cargo.toml --all-targets --locked -- -D warnings
wheels=target/wheels
rm -f "$wheels"/bridle-*.whl
CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}" "$tools/bin/maturin" build --release --locked \
  --quiet --manifest-path python/Cargo.toml --out "$wheels"
pyvenv=target/pyvenv
rm -rf "$pyvenv"
python3 -m venv "$pyvenv"
"$pyvenv/bin/pip" install --quiet --disable-pip-version-check -r python/requirements-test.txt \
  "$wheels"/bridle-*.whl
BRIDLE_BIN="${CARGO_TARGET_DIR:-target}/debug/bridle" "$pyvenv/bin/pytest" -q -p no:cacheprovider \
  python/tests 2>&1 | tee "$log.python"
python=$(grep -oE '[0-9]+ passed' "$log.python" | grep -oE '[0-9]+' | tail -n 1)
total=$(( total + ${python:-0} ))

step "docs"
# Links and anchors resolve, the README's commands run, docs/cli.md's flags exist
# (docs/testing.md, "The documentation check"); uses the binary built above.
scripts/check-docs.sh

if [ "$fuzz_seconds" != "0" ]; then
  step "fuzz (${fuzz_seconds}s per target)"
  # cargo-fuzz needs unstable compiler flags; the stable toolchain allows them this way.
  for target in $(cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz list); do
    # libFuzzer logs every new input; keep its log and show the end (all of it on a failure).
    if ! RUSTC_BOOTSTRAP=1 cargo fuzz run --fuzz-dir fuzz --sanitizer none "$target" -- \
      -max_total_time="$fuzz_seconds" -max_len=65536 -rss_limit_mb=2048 >"$log.fuzz" 2>&1; then
      tail -n 60 "$log.fuzz"
      echo "fuzz target $target failed (artifacts in fuzz/artifacts/$target)"
      exit 1
    fi
    grep -E '^Done [0-9]+ runs' "$log.fuzz" | sed "s/^/$target: /"
  done
fi

step "done"
echo "tests: ${total} passed, 0 failed"
