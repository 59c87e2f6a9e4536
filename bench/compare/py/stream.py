"""Comparison 4 (bench/run): jiter's partial mode re-parsing the reply so far after every
4-character delta (partial_mode="trailing-strings": an unfinished string is kept, as the Node
peers do), on the same streamed replies as Bridle. The deltas are cut at character boundaries
and encoded once; each delta is appended to the bytes so far, which are parsed whole.

usage: stream.py INPUT_DIR  → JSON on stdout
STREAM_SECONDS (default 3): time per size; a size whose single run takes longer than
STREAM_CAP_SECONDS (default 20) is the last one run."""

import json
import os
import sys
from importlib.metadata import version
from pathlib import Path

import jiter

from timing import measure_long


def deltas(text, n):
    return [text[i:i + n].encode() for i in range(0, len(text), n)]


def main():
    inputs = Path(sys.argv[1])
    manifest = json.loads((inputs / "manifest.json").read_text())
    seconds = float(os.environ.get("STREAM_SECONDS", "3"))
    cap = float(os.environ.get("STREAM_CAP_SECONDS", "20"))
    rows = []
    for case in manifest["stream"]:
        pieces = deltas((inputs / case["file"]).read_text(), case["delta_chars"])

        def run():
            so_far = b""
            for piece in pieces:
                so_far += piece
                jiter.from_json(so_far, partial_mode="trailing-strings")
        stats = measure_long(run, seconds)
        rows.append({"file": case["file"], "scale": case["scale"], "deltas": len(pieces),
                     "total": stats})
        if stats["median_ns"] > cap * 1e9:
            break
    json.dump({"jiter": {"version": version("jiter"), "rows": rows}}, sys.stdout, indent=1)


main()
