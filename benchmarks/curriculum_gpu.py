"""KLineage's curriculum comparison on a GPU, one curriculum per process (and per GPU), then combined.

Each curriculum — ``none`` (no knowledge base), ``curated`` (the shipped entries), ``curated+mined`` (plus the
skills of a directory) — runs the same agent loop (bandit planner, transform coder, `argus.agent.curriculum.
agent_runner`) from the same start kernel with the same budget; every candidate is gated and timed on the GPU at
the start task's first benchmark size. ``--combine`` reads the per-curriculum JSON files and prints the comparison
(`argus.agent.curriculum.compare`: best time, steps to 90 % of the best any curriculum reached).

Usage (repository root, on a GPU machine)::

    PYTHONPATH=src python benchmarks/curriculum_gpu.py --arm curated --target gemm_residual_naive \\
        --budget 12 --skills skills/ --out out/curated.json
    PYTHONPATH=src python benchmarks/curriculum_gpu.py --combine out/none.json out/curated.json out/curated+mined.json
    PYTHONPATH=src python benchmarks/curriculum_gpu.py --admit --skills skills/ --out out/admission.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

try:
    import argus  # noqa: F401
except ImportError:  # run from a checkout without PYTHONPATH=src
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))


def run_arm(args: argparse.Namespace) -> dict:
    from argus.agent.loop import Budget
    from argus.agent.curriculum import agent_runner, curricula

    entries = curricula(args.skills)[args.arm]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    runner = agent_runner(store=out.with_suffix(".db"), timeout_s=args.timeout_s, seed=args.seed)
    t0 = time.monotonic()
    trajectory = runner(args.target, entries, Budget(candidates=args.budget, wall_s=args.wall_s))
    report = {
        "arm": args.arm,
        "target": args.target,
        "budget": args.budget,
        "wall_s_cap": args.wall_s,
        "seed": args.seed,
        "entries": len(entries),
        "mined_entries": sum(1 for e in entries if getattr(getattr(e, "provenance", None), "source", "") == "mined"),
        "wall_s": time.monotonic() - t0,
        "trajectory": list(trajectory),
        "actions": list(getattr(trajectory, "actions", None) or []),
    }
    out.write_text(json.dumps(report, indent=1, default=str))
    print(json.dumps({k: v for k, v in report.items() if k != "actions"}, default=str))
    for a in report["actions"]:
        print(f"  step {a['step']}: {a['action']} (entry {a['entry_id']}{', mined' if a['mined'] else ''})")
    return report


def combine(files: list[str]) -> None:
    from argus.agent.curriculum import compare

    reports = [json.loads(Path(f).read_text()) for f in files]
    by_arm = {r["arm"]: r for r in reports}
    results = compare(
        reports[0]["target"],
        reports[0]["budget"],
        lambda target, entries, budget: by_arm[entries]["trajectory"],  # replay: the arm's name stands for it
        {name: name for name in by_arm},
    )
    print(f"target {reports[0]['target']}, budget {reports[0]['budget']} gated candidates per curriculum")
    print("| curriculum | entries (mined) | candidates gated | best ms | steps to 90 % of the best | wall s |")
    print("|---|---|---|---|---|---|")
    for r in results:
        rep = by_arm[r.curriculum]
        best = f"{r.best_ms:.4f}" if r.best_ms else "-"
        print(f"| {r.curriculum} | {rep['entries']} ({rep['mined_entries']}) | {len(rep['trajectory']) - 1} | {best} "
              f"| {r.steps_to_90} | {rep['wall_s']:.0f} |")  # fmt: skip


def admit_all(args: argparse.Namespace) -> None:
    """Every skill of the directory replayed on its held-out move (`argus.lineage.skills.held_out_moves`), timed on
    the GPU at the given size for every task."""
    from argus.lineage.skills import admit, held_out_moves, load_skills

    sizes = {t: dict(args.size) for t in ("gemm", "gemm_nt", "gemm_residual", "gemm_nt_residual")}
    rows = []
    for skill in load_skills(args.skills):
        moves = [m for m in held_out_moves(skill) if m.get("held_out")]
        if not moves:
            rows.append({"skill": skill.id, "verdict": "no held-out move"})
            print(rows[-1], flush=True)
            continue
        t0 = time.monotonic()
        try:
            record = admit(skill, moves[0]["kernel"], sizes=sizes)
        except Exception as e:  # noqa: BLE001 - one skill's failure is recorded, the others go on
            record = {"verdict": "error", "error": f"{type(e).__name__}: {e}"}
        rows.append({"skill": skill.id, "on": moves[0]["kernel"], "seconds": time.monotonic() - t0, **record})
        print(json.dumps(rows[-1], default=str)[:600], flush=True)
    Path(args.out).write_text(json.dumps(rows, indent=1, default=str))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arm", choices=("none", "curated", "curated+mined"))
    parser.add_argument("--target", default="gemm_residual_naive")
    parser.add_argument("--budget", type=int, default=12)
    parser.add_argument("--wall-s", type=float, default=None)
    parser.add_argument("--timeout-s", type=float, default=150)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skills", default=None, help="mined skills directory")
    parser.add_argument("--out", default="out/curriculum.json")
    parser.add_argument("--combine", nargs="+", default=None, help="per-curriculum JSON files to compare")
    parser.add_argument("--admit", action="store_true", help="replay every skill on its held-out move")
    parser.add_argument("--size", default="M=4096,N=4096,K=4096", help="gate size for --admit")
    args = parser.parse_args(argv)
    if args.combine:
        combine(args.combine)
    elif args.admit:
        args.size = {k: int(v) for k, v in (kv.split("=") for kv in args.size.split(","))}
        admit_all(args)
    elif args.arm:
        run_arm(args)
    else:
        parser.error("give --arm, --combine or --admit")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
