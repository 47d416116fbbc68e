"""What the sandbox costs the gate: KernelBench's identity solution gated with the candidate in its own sandboxed
process (`argus.eval.judge`, the default) and in the judge's own process (``GateOptions(sandbox=False)``, the
design before the sandbox), problem by problem, the two modes alternating (which one goes first alternates too).

    python benchmarks/sandbox_overhead.py --cpu-sample          # level 1's CPU sample (CI-sized), on the CPU
    python benchmarks/sandbox_overhead.py --gpu --ids 1,19,23   # KernelBench's own sizes on the GPU

Prints a table (per problem: gate seconds in each mode, the sandbox's start and transfer seconds, the verdicts and,
on a GPU, the candidate's median and its speedup over eager in each mode) and the totals; `--json FILE` writes
the rows.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))


def gate_row(problem, sizes, sandbox: bool, device: str, reps: int) -> dict:
    from argus.eval.candidates import ModuleCandidate
    from argus.eval.gate import GateOptions, gate_module
    from argus.tasks.kernelbench import load_problem

    task = load_problem(problem.path, sizes, strict=False)
    options = GateOptions(device=device, sandbox=sandbox, reps=reps, baselines=("eager",))
    start = time.perf_counter()
    result = gate_module(task, ModuleCandidate("identity", path=problem.path, attr="Model"), options)
    seconds = time.perf_counter() - start
    profile = result.stage("profile")
    timing = result.timing or {}
    speedup = (profile.details.get("speedup") or {}).get("eager") if profile is not None else None
    info = result.environment.get("sandbox") or {}
    correct = result.stage("correct")
    drawn = (correct.details.get("sandbox") or {}).get("inputs_drawn_in_sandbox") if correct is not None else None
    return {
        "verdict": result.verdict,
        "code": result.failed_stage.code if result.failed_stage is not None else None,
        "reason": result.failed_stage.reason[:300] if result.failed_stage is not None else None,
        "seconds": round(seconds, 3),
        "start_s": info.get("start_s"),
        "transfer_s": info.get("transfer_s"),
        "trials_drawn_in_sandbox": drawn,
        "median_ms": timing.get("median_ms"),
        "speedup_eager": speedup,
        "protections": {
            k: info.get(k)
            for k in ("net_namespace", "pid_namespace", "mnt_namespace", "filesystem_read_only", "capabilities")
        }
        if info
        else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cpu-sample", action="store_true", help="level 1's CPU sample at its small sizes")
    parser.add_argument("--gpu", action="store_true", help="on the GPU at KernelBench's sizes")
    parser.add_argument("--level", type=int, default=1)
    parser.add_argument("--ids", default=None, help="problem ids (default: the CPU sample's)")
    parser.add_argument("--reps", type=int, default=50)
    parser.add_argument("--json", default=None)
    parser.add_argument("--fresh", action="store_true", help="each gate in a fresh judge process (as a worker's "
                        "first job: no memory cached by an earlier gate on the GPU)")  # fmt: skip
    parser.add_argument("--one", nargs=2, metavar=("ID", "MODE"), help=argparse.SUPPRESS)
    args = parser.parse_args()

    import torch

    from argus.tasks.kernelbench import CPU_SAMPLE, default_kernelbench_dir, discover

    device = "cuda" if args.gpu else "cpu"
    ids = [int(i) for i in args.ids.split(",")] if args.ids else sorted(CPU_SAMPLE[args.level])
    problems = discover(default_kernelbench_dir(), args.level, ids)
    if args.one:  # a child of --fresh: one row, as JSON on the last line
        (problem,) = [p for p in problems if p.problem_id == int(args.one[0])]
        sizes = CPU_SAMPLE[args.level].get(problem.problem_id, {}) if args.cpu_sample else {}
        print(json.dumps(gate_row(problem, sizes, args.one[1] == "sandbox", device, args.reps)))
        return
    print(f"# {platform.node()} python {platform.python_version()} torch {torch.__version__}", end="")
    if args.gpu:
        print(f" gpu {torch.cuda.get_device_name(0)} cuda {torch.version.cuda}", end="")
    print(f" cores {os.cpu_count()}")
    rows, totals = [], {"sandbox": 0.0, "in-process": 0.0}
    header = ("problem", "mode", "verdict", "gate s", "start s", "xfer s", "median ms", "x eager")
    print("| " + " | ".join(header) + " |\n|" + "---|" * len(header))
    for n, problem in enumerate(problems):
        sizes = CPU_SAMPLE[args.level].get(problem.problem_id, {}) if args.cpu_sample else {}
        order = [True, False] if n % 2 == 0 else [False, True]
        for sandbox in order:
            if args.fresh:
                import subprocess

                cmd = [sys.executable, __file__, "--one", str(problem.problem_id), "sandbox" if sandbox else "in"]
                cmd += ["--level", str(args.level), "--ids", str(problem.problem_id), "--reps", str(args.reps)]
                cmd += ["--gpu"] if args.gpu else ["--cpu-sample"] if args.cpu_sample else []
                done = subprocess.run(cmd, capture_output=True, text=True)
                lines = done.stdout.strip().splitlines()
                row = json.loads(lines[-1]) if lines and lines[-1].startswith("{") else {
                    "verdict": "error", "code": "BENCH_CHILD", "reason": done.stderr[-300:], "seconds": 0.0,
                    "start_s": None, "transfer_s": None, "median_ms": None, "speedup_eager": None,
                    "protections": None, "trials_drawn_in_sandbox": None,
                }  # fmt: skip
            else:
                row = gate_row(problem, sizes, sandbox, device, args.reps)
            mode = "sandbox" if sandbox else "in-process"
            totals[mode] += row["seconds"]
            row.update(problem=problem.key, mode=mode)
            rows.append(row)
            fmt = lambda v: "" if v is None else (f"{v:.4g}" if isinstance(v, float) else str(v))  # noqa: E731
            cells = (problem.key, mode, row["verdict"] + (f" {row['code']}" if row["code"] else ""), row["seconds"],
                     row["start_s"], row["transfer_s"], row["median_ms"], row["speedup_eager"])  # fmt: skip
            print("| " + " | ".join(fmt(c) for c in cells) + " |", flush=True)
            if row["reason"]:
                print(f"<!-- {row['reason']} -->", flush=True)
    print(f"\ntotal gate seconds: sandbox {totals['sandbox']:.1f}, in-process {totals['in-process']:.1f} "
          f"({len(problems)} problems)")  # fmt: skip
    if rows and rows[0].get("protections"):
        print("protections:", json.dumps(next(r["protections"] for r in rows if r["protections"])))
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "totals": totals}, indent=1))


if __name__ == "__main__":
    main()
