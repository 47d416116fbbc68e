"""Throughput of a KernelBench sweep through the executor: the local pool on one GPU, the local pool on two, Ray on
two (docs/scale-out.md). Writes the wall time, problems per minute, the speedups and whether the verdicts agree.

    python benchmarks/scale_out.py --level 1 --only 1-40 --out out/scale-out        # a machine with two GPUs
    python benchmarks/scale_out.py --level 1 --small --out out/scale-out-cpu        # CPU smoke test: CPU workers

With GPUs, "1" is ``LocalExecutor(devices=[0])``, "2" is ``LocalExecutor(devices=[0, 1])`` and "ray-2" is a private
Ray instance on this machine with two GPUs (``--ray ADDRESS`` uses a running cluster instead). Without a GPU the
same three runs use 1, 2 and 2 CPU workers. Each run writes its CSV and SQLite store under ``--out``; the report is
``scale-out.md`` and ``scale-out.json`` there. The solutions default to the identity (KernelBench's own ``Model``).
``--runs local-1gpu`` makes one of the runs (each run's record is ``<run>.json`` under ``--out``; the report covers
every run recorded there), so the three can be made by separate commands on the same machine.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from argus.eval.executor import Executor, LocalExecutor  # noqa: E402
from argus.eval.gate import GateOptions  # noqa: E402
from argus.eval.kernelbench import run_kernelbench  # noqa: E402
from argus.tasks.kernelbench import default_kernelbench_dir  # noqa: E402


def ids(spec: str) -> list[int] | None:
    """``"1-40,47"`` -> [1, ..., 40, 47]; empty -> None."""
    out: list[int] = []
    for part in (p.strip() for p in spec.split(",") if p.strip()):
        low, _, high = part.partition("-")
        out += list(range(int(low), int(high or low) + 1))
    return out or None


def executors(gpus: int, ray: str | None, timeout_s: float) -> list[tuple[str, Any]]:
    """(name, a function that opens the executor) for the three runs."""
    from argus.eval.ray_executor import RayExecutor

    if gpus >= 2:
        ray_init = {"num_gpus": 2}
        return [
            ("local-1gpu", lambda: LocalExecutor(devices=[0], timeout_s=timeout_s)),
            ("local-2gpu", lambda: LocalExecutor(devices=[0, 1], timeout_s=timeout_s)),
            ("ray-2gpu", lambda: RayExecutor(ray or "local", timeout_s=timeout_s, init_kwargs=ray_init)),
        ]
    return [
        ("local-1cpu", lambda: LocalExecutor(workers=1, timeout_s=timeout_s)),
        ("local-2cpu", lambda: LocalExecutor(workers=2, timeout_s=timeout_s)),
        ("ray-2cpu", lambda: RayExecutor(ray or "local", timeout_s=timeout_s, init_kwargs={"num_cpus": 2})),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--level", type=int, default=1)
    parser.add_argument("--only", default="", help="problem ids, e.g. 1-40")
    parser.add_argument("--small", action="store_true", help="the CPU sample at its small sizes")
    parser.add_argument("--solutions", default="identity")
    parser.add_argument("--problems", default=None, help="KernelBench directory (default: argus's default)")
    parser.add_argument("--ray", default=None, help="a running cluster's address (default: a private instance)")
    parser.add_argument("--trials", type=int, default=6)
    parser.add_argument("--reps", type=int, default=100)
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--out", default="out/scale-out")
    parser.add_argument(
        "--runs",
        default="",
        help="which of the three runs, e.g. local-1gpu (default: all); the "
        "report covers every run recorded under --out, so runs may be made by separate commands",
    )
    args = parser.parse_args()

    import torch

    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    root = Path(args.problems) if args.problems else default_kernelbench_dir()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    options = GateOptions(trials=args.trials, reps=args.reps)
    chosen = {r.strip() for r in args.runs.split(",") if r.strip()}
    order = [name for name, _ in executors(gpus, args.ray, args.timeout)]
    if chosen - set(order):
        parser.error(f"--runs: unknown run(s) {sorted(chosen - set(order))}; the runs here are {order}")
    for name, make in executors(gpus, args.ray, args.timeout):
        if chosen and name not in chosen:
            continue
        executor: Executor = make()
        try:
            start = time.perf_counter()
            report = run_kernelbench(root, args.level, args.solutions, problems=ids(args.only), small=args.small,
                                     options=options, executor=executor, csv_path=out / f"{name}.csv",
                                     store_path=out / f"{name}.sqlite")  # fmt: skip
            wall = time.perf_counter() - start
        finally:
            executor.close()
        verdicts = {f"{r.problem_id}_{r.name}": [r.verdict, r.correct, r.code] for r in report.rows}
        run = {
            "run": name,
            "problems": len(report.rows),
            "wall_s": round(wall, 2),
            "problems_per_min": round(60 * len(report.rows) / wall, 2),
            "correct": report.summary["correct"],
            "jobs_per_gpu": report.summary["executor"]["jobs_per_gpu"],
            "processes": len(report.summary["executor"]["jobs_per_worker"]),
            "verdicts": verdicts,
        }  # fmt: skip
        (out / f"{name}.json").write_text(json.dumps(run, indent=1))
        print(f"{name}: {len(report.rows)} problems in {wall:.1f} s", flush=True)
    runs = [json.loads((out / f"{name}.json").read_text()) for name in order if (out / f"{name}.json").exists()]
    base = runs[0]["wall_s"]
    same = all(r["verdicts"] == runs[0]["verdicts"] for r in runs)
    doc = {
        "host": platform.node(),
        "gpus": gpus,
        "gpu_name": torch.cuda.get_device_name(0) if gpus else None,
        "torch": torch.__version__,
        "level": args.level,
        "options": {"trials": args.trials, "reps": args.reps, "solutions": args.solutions, "only": args.only},
        "small": args.small,
        "same_verdicts": same,
        "runs": runs,
    }
    (out / "scale-out.json").write_text(json.dumps(doc, indent=1))
    lines = [
        f"# KernelBench level {args.level} through the executor ({doc['gpu_name'] or 'CPU'}, {platform.node()})",
        "",
        "| run | problems | correct | wall s | problems/min | speedup vs first | jobs per GPU |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        lines.append(
            f"| {r['run']} | {r['problems']} | {r['correct']} | {r['wall_s']} | {r['problems_per_min']} | "
            f"{base / r['wall_s']:.2f}x | {json.dumps(r['jobs_per_gpu']) if r['jobs_per_gpu'] else '(CPU)'} |"
        )
    lines += ["", f"same verdicts in all runs: {'yes' if same else 'NO'}"]
    (out / "scale-out.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
