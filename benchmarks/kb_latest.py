"""Where a set of KernelBench problems stands: every problem's latest judged row across judge CSVs (`argus
kernelbench --csv`), later files replacing earlier ones, and per level the problems judged, the correct ones, the
geometric means of the speedups over eager and `torch.compile` (correct, timed rows), and how many are at or above
eager. Rows from different device calls are each a ratio to a baseline measured in their own run (interleaved);
this only picks the latest row per problem, it times nothing.

    python benchmarks/kb_latest.py A.csv B.csv ... [--match conv] [--rows]

`--match`: a regular expression (case-insensitive) on the problem's name; `--rows`: also print every row kept.
"""

from __future__ import annotations

import argparse
import csv
import math
import re
import sys
from pathlib import Path


def latest(paths: list[Path], match: str) -> dict[tuple[int, int], dict[str, str]]:
    """(level, problem id) -> its row in the last of `paths` that has it, for names matching `match`."""
    pattern = re.compile(match, re.IGNORECASE)
    rows: dict[tuple[int, int], dict[str, str]] = {}
    for path in paths:
        with path.open(newline="") as f:
            for row in csv.DictReader(f):
                if pattern.search(row["name"]):
                    rows[(int(row["level"]), int(row["problem_id"]))] = row | {"file": str(path)}
    return rows


def geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def summary(rows: dict[tuple[int, int], dict[str, str]]) -> list[str]:
    out = []
    for level in sorted({lv for lv, _ in rows}):
        kept = [r for (lv, _), r in sorted(rows.items()) if lv == level]
        correct = [r for r in kept if r["correct"] == "True"]
        timed = [r for r in correct if r["speedup_eager"] and r["speedup_compile"]]
        eager = [float(r["speedup_eager"]) for r in timed]
        compiled = [float(r["speedup_compile"]) for r in timed]
        flagged = [r["problem_id"] for r in timed if r["flags"]]
        out.append(
            f"level {level}: {len(correct)} of {len(kept)} judged correct, {len(timed)} timed: geometric mean "
            f"{geomean(eager):.2f}x eager, {geomean(compiled):.2f}x torch.compile; {sum(v >= 1.0 for v in eager)} at "
            f"or above eager" + (f"; flagged: {', '.join(flagged)}" if flagged else "")
        )
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("csv", nargs="+", type=Path)
    parser.add_argument("--match", default="conv")
    parser.add_argument("--rows", action="store_true")
    args = parser.parse_args()
    missing = [str(p) for p in args.csv if not p.is_file()]
    if missing:
        print(f"no such CSV: {', '.join(missing)}", file=sys.stderr)
        return 2
    rows = latest(args.csv, args.match)
    if args.rows:
        print("| level | id | verdict | x eager | x compile | ms | flags | from |")
        print("|---|---|---|---:|---:|---:|---|---|")
        for (level, pid), r in sorted(rows.items()):
            ms = f"{float(r['time_ms']):.3f}" if r["time_ms"] else ""
            se = f"{float(r['speedup_eager']):.2f}" if r["speedup_eager"] else ""
            sc = f"{float(r['speedup_compile']):.2f}" if r["speedup_compile"] else ""
            print(f"| {level} | {pid} | {r['verdict']} | {se} | {sc} | {ms} | {r['flags']} | {r['file']} |")
    for line in summary(rows):
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
