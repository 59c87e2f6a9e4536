// The timing method every tool in bench/run uses (see bench/compare/timing.rs): warm-up calls
// for a fifth of the budget (at least one; the JIT settles), a batch size chosen from the
// warm-up so a batch lasts about a millisecond, then batches until the budget is spent (at least
// 5); the result is the median time per call over the batches.

const BATCH_NS = 1_000_000n;
const MIN_SAMPLES = 5;

export function budget() {
  return Number(process.env.BENCH_SECONDS ?? "1");
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const n = s.length;
  return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

export function measure(f, seconds = budget()) {
  const start = process.hrtime.bigint();
  let calls = 0n;
  while (calls === 0n || Number(process.hrtime.bigint() - start) < seconds * 2e8) {
    f();
    calls++;
  }
  let once = (process.hrtime.bigint() - start) / calls;
  if (once < 1n) once = 1n;
  const batch = Number(BATCH_NS / once > 1n ? BATCH_NS / once : 1n);
  const perCall = [];
  const begin = performance.now();
  while (perCall.length < MIN_SAMPLES || performance.now() - begin < seconds * 1000) {
    const t = process.hrtime.bigint();
    for (let i = 0; i < batch; i++) f();
    perCall.push(Number(process.hrtime.bigint() - t) / batch);
  }
  return { median_ns: median(perCall), samples: perCall.length, batch };
}

// For calls from milliseconds to many seconds (streaming; `f` may be async): whole calls, at
// least `minRuns`, until `seconds` are spent; median.
export async function measureLong(f, seconds, minRuns = 3) {
  const runs = [];
  const begin = performance.now();
  // A run longer than the whole budget is not repeated.
  while ((runs.length < minRuns && !(runs.length && runs[0] > seconds * 1e9)) ||
         performance.now() - begin < seconds * 1000) {
    const t = process.hrtime.bigint();
    await f();
    runs.push(Number(process.hrtime.bigint() - t));
  }
  return { median_ns: median(runs), samples: runs.length, batch: 1 };
}

// The installed version of a package, from its package.json.
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
const require = createRequire(import.meta.url);
export function version(name) {
  const main = require.resolve(name);
  let dir = main;
  for (;;) {
    dir = dir.slice(0, dir.lastIndexOf("/"));
    try {
      const pkg = JSON.parse(readFileSync(`${dir}/package.json`, "utf8"));
      if (pkg.name === name) return pkg.version;
    } catch {}
    if (!dir) return "?";
  }
}

export function readJson(path) {
  return JSON.parse(readFileSync(path, "utf8"));
}
