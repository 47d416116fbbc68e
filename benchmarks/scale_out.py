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

Resumable runs (a run longer than one command's time limit, e.g. 600 s on a remote GPU machine): each run keeps
``<run>.segments.json`` under ``--out``: its run id in ``<run>.sqlite`` and one *segment* per command that worked on
it, with the segment's wall time (saved as each problem finishes, every few seconds, and when the command is
stopped by SIGTERM, so a killed command loses at most a few seconds of it) and how many problems it judged.
``--resume`` continues the unfinished runs from their stores (`run_kernelbench`'s ``resume``: the problems already
judged are kept, not judged again; the one in flight when the command stopped is judged again, and the time spent
on it stays in the segment's wall time); a finished run is skipped. ``--stop-after N`` ends the command after N
problems of the run (a clean way to fit a time limit). A run's throughput is the problems judged divided by the sum
of its segments' wall times; a segment's start-up (worker processes importing PyTorch) counts in it, as it does in
a run of one segment. The exit status is 75 while a chosen run is unfinished (``--resume`` continues it).

    python benchmarks/scale_out.py --level 1 --only 1-40 --runs local-1gpu --out out/so           # stopped at 600 s
    python benchmarks/scale_out.py --level 1 --only 1-40 --runs local-1gpu --out out/so --resume  # and so on
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from argus.eval.executor import Executor, LocalExecutor  # noqa: E402
from argus.eval.gate import GateOptions  # noqa: E402
from argus.eval.kernelbench import run_kernelbench, run_selection, start_run  # noqa: E402
from argus.tasks.kernelbench import CPU_SAMPLE, default_kernelbench_dir, discover  # noqa: E402

#: Seconds between saves of a running segment's wall time (what a command killed without warning loses at most).
HEARTBEAT_S = 5.0

#: The exit status while a chosen run is unfinished (``--resume`` continues it).
EXIT_UNFINISHED = 75


class SegmentEnd(Exception):
    """This command's segment of a run ends here (``--stop-after``, SIGTERM); the run continues with ``--resume``."""


def ids(spec: str) -> list[int] | None:
    """``"1-40,47"`` -> [1, ..., 40, 47]; empty -> None."""
    out: list[int] = []
    for part in (p.strip() for p in spec.split(",") if p.strip()):
        low, _, high = part.partition("-")
        out += list(range(int(low), int(high or low) + 1))
    return out or None


def baselines(spec: str) -> tuple[str, ...]:
    """``"eager,compile"`` -> ("eager", "compile"); empty -> () (none)."""
    return tuple(b.strip() for b in spec.split(",") if b.strip())


def executors(gpus: int, ray: str | None, timeout_s: float) -> list[tuple[str, Any]]:
    """(name, a function that opens the executor) for the three runs."""
    from argus.eval.ray_executor import RayExecutor

    if gpus >= 2:
        ray_init: dict = {} if ray else {"num_gpus": 2}  # a running cluster declares its own resources
        return [
            ("local-1gpu", lambda: LocalExecutor(devices=[0], timeout_s=timeout_s)),
            ("local-2gpu", lambda: LocalExecutor(devices=[0, 1], timeout_s=timeout_s)),
            ("ray-2gpu", lambda: RayExecutor(ray or "local", timeout_s=timeout_s, init_kwargs=ray_init)),
        ]
    cpu_init: dict = {} if ray else {"num_cpus": 2}
    return [
        ("local-1cpu", lambda: LocalExecutor(workers=1, timeout_s=timeout_s)),
        ("local-2cpu", lambda: LocalExecutor(workers=2, timeout_s=timeout_s)),
        ("ray-2cpu", lambda: RayExecutor(ray or "local", timeout_s=timeout_s, init_kwargs=cpu_init)),
    ]


class Segments:
    """A run's ``<run>.segments.json``: its run id and one entry per command (``wall_s``, ``judged``, ``ended``:
    running, stopped, finished), saved atomically from the driver and from the heartbeat thread."""

    def __init__(self, path: Path, state: dict[str, Any]) -> None:
        self.path, self.state = path, state
        self.lock = threading.Lock()
        self.start = 0.0

    def begin(self) -> dict[str, Any]:
        self.start = time.perf_counter()
        self.state["segments"].append({"wall_s": 0.0, "judged": 0, "ended": "running"})
        self.save()
        return self.state["segments"][-1]

    def save(self, ended: str | None = None) -> None:
        with self.lock:
            segment = self.state["segments"][-1] if self.state["segments"] else None
            if segment is not None and segment["ended"] == "running":
                segment["wall_s"] = round(time.perf_counter() - self.start, 2)
                segment["ended"] = ended or "running"
            temp = self.path.with_suffix(".tmp")
            temp.write_text(json.dumps(self.state, indent=1))
            os.replace(temp, self.path)


def run_segment(name: str, executor: Executor, args: argparse.Namespace, root: Path, out: Path) -> dict | None:
    """One command's segment of run `name` (a new run, or with ``--resume`` the unfinished one recorded under
    `out`); the run's record when it finished, None when the segment stopped first."""
    path, store = out / f"{name}.segments.json", out / f"{name}.sqlite"
    state = json.loads(path.read_text()) if args.resume and path.exists() else None
    if state is None:
        chosen = ids(args.only) or (sorted(CPU_SAMPLE.get(args.level, {})) if args.small else None)
        found = discover(root, args.level, chosen)
        run_id = start_run(store, args.level, args.solutions, len(found), ids=[p.problem_id for p in found],
                           executor=executor.describe())  # fmt: skip
        state = {"run": name, "run_id": run_id, "segments": []}
    segments = Segments(path, state)
    segment = segments.begin()
    beating = threading.Event()

    def heartbeat() -> None:
        while not beating.wait(HEARTBEAT_S):
            segments.save()

    def on_row(row: Any) -> None:
        segment["judged"] += 1
        segments.save()
        if args.stop_after and segment["judged"] >= args.stop_after:
            raise SegmentEnd(f"--stop-after {args.stop_after}")

    def on_term(signum: int, frame: Any) -> None:
        raise SegmentEnd("SIGTERM")

    beat = threading.Thread(target=heartbeat, daemon=True)
    beat.start()
    main_thread = threading.current_thread() is threading.main_thread()  # signal handlers: the main thread only
    previous = signal.signal(signal.SIGTERM, on_term) if main_thread else None
    ended = "interrupted"  # an exception other than the two ends below
    options = GateOptions(trials=args.trials, reps=args.reps, baselines=baselines(args.baselines))
    try:
        report = run_kernelbench(root, args.level, args.solutions, problems=run_selection(store, state["run_id"]),
                                 small=args.small, options=options,
                                 executor=executor, csv_path=out / f"{name}.csv", store_path=store,
                                 resume=state["run_id"], on_row=on_row)  # fmt: skip
        ended = "finished"
    except SegmentEnd as why:
        ended = "stopped"
        print(f"{name}: stopped ({why}) after {segment['judged']} problem(s); --resume continues it", flush=True)
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, previous)
        beating.set()
        beat.join()
        segments.save(ended)
    if ended != "finished":
        return None
    wall = sum(s["wall_s"] for s in state["segments"])
    return {
        "run": name,
        "problems": len(report.rows),
        "wall_s": round(wall, 2),
        "problems_per_min": round(60 * len(report.rows) / wall, 2),
        "segments": state["segments"],
        "judged": sum(s["judged"] for s in state["segments"]),
        "correct": report.summary["correct"],
        "jobs_per_gpu": jobs_per_gpu(report.rows),
        "processes": len({r.worker for r in report.rows if r.worker}),
        "stage_seconds": report.summary["executor"].get("stage_seconds", {}),
        "verdicts": {f"{r.problem_id}_{r.name}": [r.verdict, r.correct, r.code] for r in report.rows},
    }


def jobs_per_gpu(rows: list[Any]) -> dict[str, int]:
    """Jobs per GPU over every row of a run, its earlier segments' included (the executor's own summary counts the
    last segment's jobs only): a row's worker ``host:pid/gpu N`` counts for ``host/gpu N``; rows of CPU workers and
    rows without a worker are not counted."""
    counts: dict[str, int] = {}
    for r in rows:
        host, _, gpu = str(r.worker or "").partition("/gpu ")
        if gpu:
            place = f"{host.split(':')[0]}/gpu {gpu}"
            counts[place] = counts.get(place, 0) + 1
    return dict(sorted(counts.items()))


def main(argv: list[str] | None = None) -> int:
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
    parser.add_argument("--baselines", default="eager,compile", help="baselines timed beside each solution")
    parser.add_argument("--out", default="out/scale-out")
    parser.add_argument(
        "--runs",
        default="",
        help="which of the three runs, e.g. local-1gpu (default: all); the "
        "report covers every run recorded under --out, so runs may be made by separate commands",
    )
    parser.add_argument("--resume", action="store_true", help="continue the unfinished runs recorded under --out")
    parser.add_argument("--stop-after", type=int, default=0, help="end this command after N problems of a run")
    args = parser.parse_args(argv)

    import torch

    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    root = Path(args.problems) if args.problems else default_kernelbench_dir()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    chosen = {r.strip() for r in args.runs.split(",") if r.strip()}
    order = [name for name, _ in executors(gpus, args.ray, args.timeout)]
    if chosen - set(order):
        parser.error(f"--runs: unknown run(s) {sorted(chosen - set(order))}; the runs here are {order}")
    unfinished = False
    for name, make in executors(gpus, args.ray, args.timeout):
        if chosen and name not in chosen:
            continue
        if args.resume and (out / f"{name}.json").exists():
            print(f"{name}: finished already ({out / f'{name}.json'})", flush=True)
            continue
        (out / f"{name}.json").unlink(missing_ok=True)
        executor: Executor = make()
        try:
            run = run_segment(name, executor, args, root, out)
        finally:
            executor.close()
        if run is None:
            unfinished = True
            continue
        (out / f"{name}.json").write_text(json.dumps(run, indent=1))
        print(f"{name}: {run['problems']} problems in {run['wall_s']:.1f} s ({len(run['segments'])} segment(s))",
              flush=True)  # fmt: skip
    runs = [json.loads((out / f"{name}.json").read_text()) for name in order if (out / f"{name}.json").exists()]
    if not runs:
        print("no run finished yet: --resume continues", flush=True)
        return EXIT_UNFINISHED
    base = runs[0]["wall_s"]
    same = all(r["verdicts"] == runs[0]["verdicts"] for r in runs)
    doc = {
        "host": platform.node(),
        "gpus": gpus,
        "gpu_name": torch.cuda.get_device_name(0) if gpus else None,
        "torch": torch.__version__,
        "level": args.level,
        "options": {
            "trials": args.trials,
            "reps": args.reps,
            "solutions": args.solutions,
            "only": args.only,
            "baselines": args.baselines,
        },
        "small": args.small,
        "same_verdicts": same,
        "runs": runs,
    }
    (out / "scale-out.json").write_text(json.dumps(doc, indent=1))
    lines = [
        f"# KernelBench level {args.level} through the executor ({doc['gpu_name'] or 'CPU'}, {platform.node()})",
        "",
        "| run | problems | correct | wall s | segments | problems/min | speedup vs first | jobs per GPU |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        parts = "+".join(f"{s['wall_s']:g}" for s in r.get("segments", []))
        lines.append(
            f"| {r['run']} | {r['problems']} | {r['correct']} | {r['wall_s']} | {len(r.get('segments', []))} "
            f"({parts}) | {r['problems_per_min']} | {base / r['wall_s']:.2f}x | "
            f"{json.dumps(r['jobs_per_gpu']) if r['jobs_per_gpu'] else '(CPU)'} |"
        )
    lines += [
        "",
        f"same verdicts in all runs: {'yes' if same else 'NO'}",
        "",
        "wall s is the sum of the run's segments (one per command that worked on it, start-up included); "
        "problems/min is the problems judged divided by that sum.",
    ]
    (out / "scale-out.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    if not same:
        return 1
    return EXIT_UNFINISHED if unfinished else 0


if __name__ == "__main__":
    raise SystemExit(main())
