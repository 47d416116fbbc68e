"""Issue #26's comparison on a GPU: none / curated / curated + mined / + cross-problem priors over a sweep of
problems (`argus.agent.curriculum.compare_sweep`), one arm per invocation so that the arms fit separate calls (or
separate GPUs), then combined.

    PYTHONPATH=src python benchmarks/sweep_gpu.py --arm curated+mined+priors --budget 6 \\
        --skills benchmarks/results/2026-11-21-h200-agent-klineage/skills --out out/ \\
        gemm_residual_naive@M=4096,N=4096,K=4096 gemm_residual_naive@M=2048,N=8192,K=1024
    PYTHONPATH=src python benchmarks/sweep_gpu.py --combine out/*.json

Each arm runs the agent's loop (bandit planner, transform coder, no LLM) on every problem in order with its own run
store (``out/ARM.db``), every candidate gated (compile, verify, correct) and timed on the GPU at the problem's sizes.
Each arm's JSON holds, per problem, the best time after each step and the action each step took (and which entry
named it). ``--combine`` prints, per problem, each arm's best time and the steps it took to come within 90 % of
the best any arm reached, and the geometric means over the problems.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

try:
    import argus  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))


def _problems(texts: list[str]) -> list:
    from argus.agent.curriculum import Problem

    out = []
    for text in texts:
        target, _, dims = text.partition("@")
        sizes = {k: int(v) for k, v in (kv.split("=") for kv in dims.split(","))} if dims else None
        out.append(Problem(target, sizes))
    return out


def run_arm(arm: str, problems: list, budget: int, skills: str | None, out: Path, timeout_s: float) -> None:
    from argus.agent.curriculum import sweep_curricula, sweep_runner

    arms, learns = sweep_curricula(skills)
    runner = sweep_runner(out, learns, timeout_s=timeout_s)
    rows = []
    for p in problems:
        t0 = time.monotonic()
        trajectory = runner(arm, p, arms[arm], budget)
        rows.append({"label": p.label, "target": p.target, "sizes": p.sizes, "trajectory": list(trajectory),
                     "actions": list(getattr(trajectory, "actions", None) or []),
                     "wall_s": time.monotonic() - t0})  # fmt: skip
        print(json.dumps({k: v for k, v in rows[-1].items() if k != "actions"}), flush=True)
        for a in rows[-1]["actions"]:
            print(f"  step {a['step']}: {a['action']} (entry {a['entry_id']}{', mined' if a['mined'] else ''})")
        # after every problem (a call cut short keeps what it did); no "+" in the name (it travels through $OUT)
        doc = {"arm": arm, "budget": budget, "entries": len(arms[arm]), "learns": learns[arm], "problems": rows}
        (out / f"{arm.replace('+', '_')}.json").write_text(json.dumps(doc, indent=1, default=str))


def combine(files: list[str]) -> None:
    from argus.agent.curriculum import Problem, Trajectory, compare_sweep

    docs = [json.loads(Path(f).read_text()) for f in files]
    problems = [Problem(r["target"], r["sizes"]) for r in docs[0]["problems"]]
    by = {(d["arm"], r["label"]): r for d in docs for r in d["problems"]}

    def replay(arm, problem, entries, budget):  # noqa: ANN001, ANN202
        r = by[(arm, problem.label)]
        return Trajectory(r["trajectory"], r["actions"])

    report = compare_sweep(problems, docs[0]["budget"], replay, {d["arm"]: () for d in docs})
    for d in docs:
        for rows in report.results.values():
            for r in rows:
                if r.curriculum == d["arm"]:
                    r.entries = d["entries"]
    budget = max(d["budget"] for d in docs)
    print(f"budget {budget} gated candidates per problem and arm (the none arm has nothing to apply)")
    print("| problem | arm | entries | best ms | steps to 90 % of the best | steps a mined skill named |")
    print("|---|---|---|---|---|---|")
    for label, rows in report.results.items():
        for r in rows:
            mined = ", ".join(str(a["step"]) for a in r.mined_actions) or "—"
            best = f"{r.best_ms:.4f}" if r.best_ms else "-"
            print(f"| {label} | {r.curriculum} | {r.entries} | {best} | {r.steps_to_90} | {mined} |")
    print("\n| arm | quality (geo. mean of best / problem's best) | candidates to 90 % (geo. mean) | never |")
    print("|---|---|---|---|")
    for arm, s in report.summary().items():
        q = f"{s['quality']:.3f}" if s["quality"] else "-"
        c = f"{s['candidates']:.2f}" if s["candidates"] else "-"
        print(f"| {arm} | {q} | {c} | {s['never']}/{s['problems']} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("problems", nargs="*", help="KERNEL@M=..,N=..,K=.. in sweep order")
    parser.add_argument("--arm", choices=("none", "curated", "curated+mined", "curated+mined+priors"))
    parser.add_argument("--budget", type=int, default=6)
    parser.add_argument("--skills", default=None)
    parser.add_argument("--out", type=Path, default=Path("out"))
    parser.add_argument("--timeout-s", type=float, default=300)
    parser.add_argument("--combine", nargs="+")
    args = parser.parse_args()
    if args.combine:
        combine(args.combine)
        return 0
    if not args.arm or not args.problems:
        parser.error("give --arm and the problems, or --combine FILES")
    args.out.mkdir(parents=True, exist_ok=True)
    run_arm(args.arm, _problems(args.problems), args.budget, args.skills, args.out, args.timeout_s)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
