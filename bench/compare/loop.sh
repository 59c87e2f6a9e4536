#!/usr/bin/env bash
# Comparison 6 of bench/run: the closed loop. `bridle mock-llm` with 25 % faulty replies (the
# content faults, each fixable by feedback that names what it broke) as the model; Bridle's turn
# loop (`bridle serve`, OpenAI-compatible endpoint, `x-bridle-contract: selfhelp-response`)
# against one mock, Instructor (SelfhelpResponse Pydantic model, with and without the rule
# validators) against others started the same way; the same questions. Calls are counted at each mock (its request log), tokens are
# the usage the mock reported. Writes $RESULTS/loop.json.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
: "${PEERS:?}" "${RESULTS:?}"
TURNS="${LOOP_TURNS:-400}"
ATTEMPTS="${LOOP_ATTEMPTS:-3}"
FAULTS="fence,prose,trailing_comma,wrong_key,missing_required,wrong_enum,truncate,plain_text"
KEY="bench-key-0123456789abcdef"
WORK="$(mktemp -d)"
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT
exec 2>>"$RESULTS/loop.log"

cargo build --release --quiet --manifest-path "$ROOT/Cargo.toml" -p bridle
BRIDLE="$ROOT/target/release/bridle"
# shellcheck source=../lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
mock() {
    "$BRIDLE" mock-llm --port 0 --seed 7 --fault-rate 0.25 --faults "$FAULTS" >/dev/null 2>"$WORK/$1.log" &
    pids+=("$!")
}
PYLOOP="$PEERS/loop/bin/python"
cd "$ROOT/bench/compare/py"

mock mock-bridle
MOCK_B="$(url_in "$WORK/mock-bridle.log")"
OPENAI_BASE_URL="$MOCK_B/v1" OPENAI_API_KEY="sk-bench" BRIDLE_USER_KEYS="bench:$KEY" \
    BRIDLE_ADMIN_KEY="bench-admin-key-0123456789" BRIDLE__SERVER__LIMITS__ENABLED=false \
    RUST_LOG=warn "$BRIDLE" serve --bind 127.0.0.1:0 --data-dir "$WORK/data" 2>"$WORK/gateway.log" &
pids+=("$!")
GATEWAY="$(url_in "$WORK/gateway.log")"
"$PYLOOP" loop_bridle.py "$GATEWAY" "$KEY" "$TURNS" "$("$BRIDLE" --version | awk '{print $2}')" >"$WORK/bridle.json"
curl -sf "$MOCK_B/_mock/requests" >"$WORK/mock-bridle.json"

# Instructor twice, each against a fresh mock: the model with the contract's rules as validators
# (what Bridle checks), and the JSON Schema alone (rules not checked).
for variant in instructor:1 instructor-schema:0; do
    name="${variant%%:*}"
    mock "mock-$name"
    url="$(url_in "$WORK/mock-$name.log")"
    SELFHELP_RULES="${variant##*:}" "$PYLOOP" loop_instructor.py "$url/v1" "$TURNS" "$ATTEMPTS" >"$WORK/$name.json"
    curl -sf "$url/_mock/requests" >"$WORK/mock-$name.json"
done

"$PYLOOP" loop_summary.py "$WORK" "$FAULTS" "$ATTEMPTS" >"$RESULTS/loop.json"
