#!/usr/bin/env bash
# Soak: `bridle serve` (SQLite, every attempt stored) in front of `bridle mock-llm`, first at its
# maximum for a short while, then at 80 % of that rate for SOAK_SECONDS (default 600), sampling
# the gateway's resident memory every SAMPLE_SECONDS. Pass: no failed request, memory flat.
#
#   bench/soak/run.sh                      # 10 minutes
#   SOAK_SECONDS=60 bench/soak/run.sh      # a short run
#   STORE_URL=postgres://postgres@127.0.0.1:5432/test bench/soak/run.sh
#
# Writes bench/soak/results.md, bench/soak/rss.csv and docs/img/soak-rss.png (the plot needs
# matplotlib, installed into target/py). All three processes share the machine's cores, as on
# a one-box deployment. Mind the disk: each turn stores ~7 KB (SQLite keeps each prompt once).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
SOAK_SECONDS="${SOAK_SECONDS:-600}"
SAMPLE_SECONDS="${SAMPLE_SECONDS:-5}"
CONNECTIONS="${CONNECTIONS:-64}"
WORK="$(mktemp -d)"
DATA="$WORK/data"
KEY="soak-key-0123456789abcdef"
ADMIN_KEY="soak-admin-key-0123456789"
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

# shellcheck source=../lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
OHA="$(oha_bin)"
if [ ! -x "$ROOT/target/py/bin/python" ]; then python3 -m venv "$ROOT/target/py"; fi
PY="$ROOT/target/py/bin/python"
"$PY" -c "import matplotlib" 2>/dev/null ||
    "$PY" -m pip install --quiet --disable-pip-version-check "matplotlib==3.9.2"

echo "building bridle (release)" >&2
cargo build --release --quiet --manifest-path "$ROOT/Cargo.toml" -p bridle
BRIDLE="$ROOT/target/release/bridle"


"$BRIDLE" mock-llm --port 0 --seed 11 2>"$WORK/mock.log" &
pids+=("$!")
MOCK="$(url_in "$WORK/mock.log")"
store_env=()
if [ -n "${STORE_URL:-}" ]; then store_env=(BRIDLE__STORE_URL="$STORE_URL"); fi
env "${store_env[@]}" OPENAI_BASE_URL="$MOCK/v1" OPENAI_API_KEY="sk-soak" \
    BRIDLE_USER_KEYS="soak:$KEY" BRIDLE_ADMIN_KEY="$ADMIN_KEY" \
    BRIDLE__SERVER__LIMITS__ENABLED=false RUST_LOG=warn \
    "$BRIDLE" serve --bind 127.0.0.1:0 --data-dir "$DATA" 2>"$WORK/gateway.log" &
GATEWAY_PID=$!
pids+=("$GATEWAY_PID")
GATEWAY="$(url_in "$WORK/gateway.log")"
echo '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"I keep procrastinating, any tips?"}]}' >"$WORK/body.json"

# One oha run; prints its JSON summary file.
load() {
    local rate="$1" seconds="$2" out="$3"
    local args=(-z "${seconds}s" -c "$CONNECTIONS" --no-tui --output-format json -m POST
        -H "content-type: application/json" -H "authorization: Bearer $KEY"
        -H "x-bridle-contract: selfhelp-response" -D "$WORK/body.json")
    if [ "$rate" != "max" ]; then args+=(-q "$rate" --latency-correction); fi
    "$OHA" "${args[@]}" "$GATEWAY/v1/chat/completions" >"$out"
}
rps_of() { "$PY" -c 'import json,sys; print(int(json.load(open(sys.argv[1]))["summary"]["requestsPerSec"]))' "$1"; }

echo "maximum (20 s)" >&2
load max 20 "$WORK/max.json"
MAX=$(rps_of "$WORK/max.json")
RATE=$((MAX * 8 / 10))
echo "max $MAX req/s; soaking at $RATE req/s for $SOAK_SECONDS s" >&2

echo "seconds,rss_kib" >"$WORK/rss.csv"
(
    start=$(date +%s)
    while kill -0 "$GATEWAY_PID" 2>/dev/null; do
        rss=$(awk '/VmRSS/{print $2}' "/proc/$GATEWAY_PID/status" 2>/dev/null || echo "")
        [ -n "$rss" ] && echo "$(( $(date +%s) - start )),$rss" >>"$WORK/rss.csv"
        sleep "$SAMPLE_SECONDS"
    done
) &
SAMPLER=$!
pids+=("$SAMPLER")
load "$RATE" "$SOAK_SECONDS" "$WORK/soak.json"
# Memory is sampled while the load runs only: the stats query below reads every turn stored.
kill "$SAMPLER" 2>/dev/null || true
cp "$WORK/soak.json" "$ROOT/bench/soak/oha.json"

STORED=$(curl -s -H "authorization: Bearer $ADMIN_KEY" "$GATEWAY/admin/v1/stats" |
    "$PY" -c 'import json,sys; print(json.load(sys.stdin).get("turns", "?"))')
DB_BYTES=$(du -sb "$DATA" | cut -f1)
cp "$WORK/rss.csv" "$ROOT/bench/soak/rss.csv"
mkdir -p "$ROOT/docs/img"
"$PY" - "$WORK/soak.json" "$ROOT/bench/soak/rss.csv" "$ROOT/docs/img/soak-rss.png" \
    "$ROOT/bench/soak/results.md" "$MAX" "$RATE" "$SOAK_SECONDS" "$STORED" "$DB_BYTES" \
    "${STORE_URL:+postgresql}" <<'EOF'
import csv, json, subprocess, sys, datetime
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

soak, rss_csv, png, md, top, rate, seconds, stored, db_bytes = sys.argv[1:10]
store = sys.argv[10] if len(sys.argv) > 10 and sys.argv[10] else "sqlite"
r = json.load(open(soak))
s, p = r["summary"], r["latencyPercentiles"]
codes = r.get("statusCodeDistribution", {})
errors = r.get("errorDistribution", {})
# oha ends a timed run by abandoning the requests then in flight (at most one per connection):
# those are not answers of the server, counted apart.
cut = int(errors.pop("aborted due to deadline", 0))
total = sum(int(v) for v in codes.values()) + sum(int(v) for v in errors.values())
failed = total - int(codes.get("200", 0))
rows = [(int(a), int(b)) for a, b in csv.reader(open(rss_csv)) if a.isdigit()]
xs = [a / 60 for a, _ in rows]
ys = [b / 1024 for _, b in rows]
plt.figure(figsize=(8, 3.5))
plt.plot(xs, ys)
plt.xlabel("minutes into the soak")
plt.ylabel("gateway RSS (MiB)")
plt.title(f"bridle serve RSS at {rate} req/s ({store})")
plt.ylim(0, max(ys) * 1.2 if ys else 1)
plt.grid(alpha=0.3)
plt.tight_layout()
plt.savefig(png, dpi=100)
after_warmup = [y for x, y in zip(xs, ys) if x >= 1] or ys
cpu = subprocess.run(["sh", "-c", "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"],
                     capture_output=True, text=True).stdout.strip()
with open(md, "w") as f:
    f.write("# Soak\n\n")
    f.write(f"Measured {datetime.date.today()} by `bench/soak/run.sh`: oha 1.14.0, 64 connections, "
            f"`bridle serve` ({store}, every attempt stored) → `bridle mock-llm`, all on one machine "
            f"({subprocess.run(['nproc'], capture_output=True, text=True).stdout.strip()} cores, {cpu}).\n\n")
    f.write(f"| | value |\n|---|---|\n")
    f.write(f"| maximum (20 s, closed loop) | {top} req/s |\n")
    f.write(f"| soak rate (80 %) | {rate} req/s for {int(seconds)//60} min {int(seconds)%60} s |\n")
    f.write(f"| requests | {total} |\n")
    f.write(f"| failed (not 200, or no answer) | **{failed}** {dict(codes)} {dict(errors)} |\n")
    f.write(f"| in flight when the run's time was up (abandoned by oha) | {cut} |\n")
    f.write(f"| achieved | {s['requestsPerSec']:.0f} req/s |\n")
    f.write(f"| latency p50 / p99 / p99.9 | {p['p50']*1000:.2f} / {p['p99']*1000:.2f} / {p['p99.9']*1000:.2f} ms |\n")
    f.write(f"| RSS after 1 min → end | {after_warmup[0]:.0f} → {after_warmup[-1]:.0f} MiB (max {max(ys):.0f}) |\n")
    f.write(f"| turns stored | {stored} |\n")
    f.write(f"| data dir at the end | {int(db_bytes)/2**30:.2f} GiB |\n\n")
    f.write("![gateway RSS over the soak](../../docs/img/soak-rss.png)\n")
print(open(md).read())
if failed:
    sys.exit(f"{failed} requests failed")
EOF
