"""Tables of bench/gateway/run.sh's trials (Markdown, on stdout).

Input: one tab-separated line per trial — rate, trial, direct p50 and p99, Bridle rps, p50,
p95, p99, p99.9 and success rate (ms where a time), then the CPU time (ms) the rest of the
machine took during the direct run and during the Bridle run.

Per rate: the median trial's added latency (Bridle's percentile minus direct's, from the same
trial) with the range over all trials, and how many trials met the target (added p99 ≤ 1 ms).
Then every trial, so a slow one can be told apart from a busy machine.
"""

import statistics
import sys

TARGET_MS = 1.0


def main(path):
    trials = []
    with open(path) as lines:
        for line in lines:
            f = line.split("\t")
            if len(f) < 12:
                continue
            rate, trial = int(f[0]), int(f[1])
            d50, d99, g_rps, g50, g95, g99, g999, ok, d_other, g_other = map(float, f[2:12])
            trials.append(dict(rate=rate, trial=trial, d50=d50, d99=d99, rps=g_rps, g50=g50,
                               g95=g95, g99=g99, g999=g999, ok=ok, d_other=d_other,
                               g_other=g_other, add50=g50 - d50, add99=g99 - d99))
    rates = sorted({t["rate"] for t in trials})
    print("| rate (req/s) | trials | added p50 ms: median (range) | added p99 ms: median (range) "
          "| trials with added p99 ≤ 1 ms | Bridle p99 ms: median | direct p99 ms: median "
          "| rest of the machine's CPU a trial, ms: median (range) |")
    print("|---|---|---|---|---|---|---|---|")
    for rate in rates:
        of = [t for t in trials if t["rate"] == rate]

        def spread(key, digits=2):
            values = [t[key] for t in of]
            return (f"{statistics.median(values):.{digits}f} "
                    f"({min(values):.{digits}f}–{max(values):.{digits}f})")

        met = sum(1 for t in of if t["add99"] <= TARGET_MS)
        print(f"| {rate} | {len(of)} | {spread('add50')} | **{spread('add99')}** | {met} of {len(of)} "
              f"| {statistics.median(t['g99'] for t in of):.2f} "
              f"| {statistics.median(t['d99'] for t in of):.2f} | {spread('g_other', 0)} |")
    print()
    print("Every trial (direct, then through Bridle, back to back):")
    print()
    print("| rate | trial | direct p50 / p99 ms | Bridle p50 / p95 / p99 / p99.9 ms | added p50 / p99 ms "
          "| Bridle rps | success | rest of the machine's CPU, ms (direct / Bridle run) |")
    print("|---|---|---|---|---|---|---|---|")
    for t in trials:
        print(f"| {t['rate']} | {t['trial']} | {t['d50']:.2f} / {t['d99']:.2f} "
              f"| {t['g50']:.2f} / {t['g95']:.2f} / {t['g99']:.2f} / {t['g999']:.2f} "
              f"| {t['add50']:.2f} / **{t['add99']:.2f}** | {t['rps']:.0f} | {t['ok']:.4f} "
              f"| {t['d_other']:.0f} / {t['g_other']:.0f} |")


if __name__ == "__main__":
    main(sys.argv[1])
