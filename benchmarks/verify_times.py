"""Verification time of every library kernel and every corpus kernel, each in a fresh process (`verify`, the
`seconds` its result reports: tracing excluded), with the slowest check of each. Issue 24's target is under
10 s on the CI machine's 2 cores; docs/verify.md section 6 records the runs.

    python benchmarks/verify_times.py                 # everything, a markdown table on stdout
    python benchmarks/verify_times.py --only grouped  # names containing "grouped"
    python benchmarks/verify_times.py --json out.json

Run it on an otherwise idle machine (give `uptime`'s load with the numbers): Z3's time is one core's, and other
processes on two cores slow it directly.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "verify" / "corpus"
TARGET_S = 10.0


def targets(only: str | None) -> list[tuple[str, str]]:
    """(kind, name) of the library kernels and the corpus kernels (a corpus file's `KERNEL`, with its `PARAMS`)."""
    from argus.kernels import all_kernels

    out = [("library", e.name) for e in all_kernels()]
    out += [("corpus", p.stem.removeprefix("kernels_")) for p in sorted(CORPUS.glob("kernels_*.py"))]
    return [t for t in out if only is None or only in t[1]]


def verify_one(kind: str, name: str) -> dict:
    """Verify one kernel in this process: its verdict, seconds and checks (`Result.to_json`)."""
    from argus.verify import verify

    if kind == "library":
        from argus.kernels import get_kernel

        result = verify(get_kernel(name))
    else:
        module = importlib.import_module(f"tests.verify.corpus.kernels_{name}")
        result = verify(module.KERNEL, **getattr(module, "PARAMS", {}))
    data = result.to_json()
    return {
        "verdict": data["verdict"],
        "seconds": data["seconds"],
        "checks": data.get("checks", []),
        "not_checked": data.get("not_checked", []),
    }


def run_one(kind: str, name: str, timeout: float) -> dict:
    """`verify_one` in a fresh process."""
    try:
        proc = subprocess.run(
            [sys.executable, __file__, "--one", f"{kind}:{name}"],
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])},
        )
    except subprocess.TimeoutExpired:
        return {"verdict": "timeout", "seconds": None, "slowest": None, "not_checked": []}
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        return {"verdict": f"error: {tail[0][:80]}", "seconds": None, "slowest": None, "not_checked": []}
    data = json.loads(proc.stdout)
    checks = sorted(data["checks"], key=lambda c: -c.get("seconds", 0.0))
    slowest = f"{checks[0]['check']} ({checks[0]['seconds']:.1f} s)" if checks else None
    return {
        "verdict": data["verdict"],
        "seconds": data["seconds"],
        "slowest": slowest,
        "not_checked": data["not_checked"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", help="only names containing this")
    ap.add_argument("--json", help="also write the rows here")
    ap.add_argument("--timeout", type=float, default=600.0)
    ap.add_argument("--one", help=argparse.SUPPRESS)  # KIND:NAME, in this process (the worker of `run_one`)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(verify_one(*args.one.split(":", 1))))
        return
    rows = []
    load = os.getloadavg()[0]
    print(f"load {load:.2f}, {os.cpu_count()} cores", file=sys.stderr)
    for kind, name in targets(args.only):
        r = run_one(kind, name, args.timeout)
        rows.append({"kind": kind, "name": name, **r})
        print(f"{kind:8} {name:50} {r['verdict']:9} {r['seconds']}", file=sys.stderr, flush=True)
    print("| kind | kernel | verdict | seconds | slowest check | not checked |")
    print("|---|---|---|---|---|---|")
    for r in sorted(rows, key=lambda r: -(r["seconds"] or 0.0)):
        secs = "—" if r["seconds"] is None else f"{r['seconds']:.1f}"
        if r["seconds"] is not None and r["seconds"] >= TARGET_S:
            secs = f"**{secs}**"
        skipped = ", ".join(sorted({c["check"] for c in r["not_checked"]})) or "—"
        print(f"| {r['kind']} | `{r['name']}` | {r['verdict']} | {secs} | {r['slowest'] or '—'} | {skipped} |")
    over = [r for r in rows if r["seconds"] is None or r["seconds"] >= TARGET_S]
    total = sum(r["seconds"] or 0.0 for r in rows)
    print(f"\n{len(rows)} kernels, {total:.0f} s in all; {len(over)} at or over {TARGET_S:.0f} s (load {load:.2f}).")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps({"load": load, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
