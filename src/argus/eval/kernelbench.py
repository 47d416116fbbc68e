"""KernelBench's runner: gate the solution files of KernelBench problems (loaded by `argus.tasks.kernelbench`) with
KernelBench's protocol plus argus's defences, one worker process per problem, and summarize the run as KernelBench
does (fast_p).

Protocol (`evaluate_problem`, `run_kernelbench`):

* reference and candidate are constructed from ``get_init_inputs()`` with PyTorch's generator at the same seed
  (so the identity solution gets the reference's weights, as in KernelBench);
* correctness: the gate's ``correct`` stage (`argus.eval.correctness`) — KernelBench runs 5 trials at fp32
  1e-4 / half 1e-2; argus runs ``trials`` (default 6) on fresh inputs from several distributions, against a
  float64 copy of the reference, with poisoned memory and the input, precision and caching checks;
* timing (GPU): 100 repetitions with CUDA events after warm-up, L2 flushed between them, against PyTorch eager
  and ``torch.compile`` of the reference, timed in the same process by the same harness;
* summary (`summarize`): ``fast_p`` for p in {0, 1, 1.5, 2} — the fraction of *all* problems evaluated that are
  correct and faster than the baseline by more than p (``fast_0`` is the fraction correct) — and the geometric
  mean and median speedup over the correct, timed problems; each against eager and against ``torch.compile``.

Problem sizes: `argus.tasks.kernelbench.load_problem` overrides module-level sizes, and ``small`` runs its
`CPU_SAMPLE` at sizes a CPU can take.
"""

from __future__ import annotations

import collections
import csv
import math
import statistics
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from argus.eval.candidates import ModuleCandidate
from argus.eval.executor import Executor, GateJob, LocalExecutor, Resource
from argus.eval.gate import GateOptions, gate_module
from argus.eval.isolation import failure_status
from argus.eval.results import GateResult, StageResult, Status
from argus.eval.store import ResultStore
from argus.tasks.kernelbench import CPU_SAMPLE, ProblemFile, discover, find_solution, load_problem

#: The speedup thresholds of KernelBench's fast_p.
FAST_P = (0.0, 1.0, 1.5, 2.0)


# ---------------------------------------------------------------------------------------------------------------
# evaluation


@dataclass
class Row:
    """One problem's outcome (a CSV row)."""

    level: int
    problem_id: int
    name: str
    solution: str
    verdict: str = "error"
    correct: bool = False
    failed_stage: str | None = None
    code: str | None = None
    reason: str = ""
    trials: int = 0
    max_abs_err: float | None = None
    max_rel_norm: float | None = None
    time_ms: float | None = None
    eager_ms: float | None = None
    compile_ms: float | None = None
    speedup_eager: float | None = None
    speedup_compile: float | None = None
    timing: str = "skipped"
    flags: str = ""
    sizes: str = ""
    seconds: float = 0.0
    worker: str = ""

    def to_json(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def row_from_gate(problem: ProblemFile, solution: str, gate: Any, seconds: float) -> Row:
    """A `Row` from a `GateResult` (or its JSON)."""
    if isinstance(gate, dict):
        gate = GateResult.from_json(gate)
    row = Row(problem.level, problem.problem_id, problem.name, solution, seconds=round(seconds, 3))
    row.verdict = gate.verdict
    row.sizes = ";".join(f"{k}={v}" for k, v in gate.sizes.items())
    row.flags = ";".join(f.code for f in gate.flags)
    failed = gate.failed_stage
    if failed is not None:
        row.failed_stage, row.code, row.reason = failed.stage, failed.code, failed.reason
    else:
        bad = next((s for s in gate.stages if s.status.value == "error"), None)
        if bad is not None:
            row.failed_stage, row.code, row.reason = bad.stage, bad.code, bad.reason
    correct = gate.stage("correct")
    if correct is not None:
        row.correct = correct.status.value == "passed" and failed is None
        row.trials = int(correct.details.get("trials_passed", 0) or 0)
        row.max_abs_err = correct.details.get("max_abs_err")
        row.max_rel_norm = correct.details.get("max_rel_norm")
    profile = gate.stage("profile")
    if profile is not None and profile.status.value == "passed":
        t = profile.details["timing"]
        row.time_ms = t["median_ms"]
        row.timing = t["method"] + (" interleaved" if profile.details.get("timing_method") == "interleaved" else "")
        base = profile.details.get("baselines", {})
        row.eager_ms = base.get("eager", {}).get("timing", {}).get("median_ms")
        row.compile_ms = base.get("compile", {}).get("timing", {}).get("median_ms")
        sp = profile.details.get("speedup", {})
        row.speedup_eager, row.speedup_compile = sp.get("eager"), sp.get("compile")
    elif profile is not None:
        row.timing = f"skipped: {profile.reason}"
    return row


def evaluate_problem(
    problem: ProblemFile,
    solution: str | Path | None,
    *,
    sizes: Mapping[str, Any] | None = None,
    strict_sizes: bool = False,
    options: Any = None,
) -> dict[str, Any]:
    """Evaluate one problem: `solution` is ``"identity"`` (``ModelNew`` = the problem's own ``Model``), a solution
    file, or None (no solution: the row says so). Returns ``{"row": Row json, "gate": GateResult json}``."""
    start = time.perf_counter()
    options = options or GateOptions()
    task = load_problem(problem.path, sizes, strict=strict_sizes)
    if solution is None:
        gate = GateResult("none", task.name, dict(task.sizes))
        gate.stages.append(
            StageResult("compile", Status.FAILED, "COMPILE_MISSING", "no solution file for this problem")
        )
        label = "none"
    elif str(solution) == "identity":
        # the problem's own Model, loaded from its file like any solution (in the sandbox)
        candidate = ModuleCandidate("identity", path=problem.path, attr="Model")
        gate = gate_module(task, candidate, options)
        label = "identity"
    else:
        path = Path(solution)
        gate = gate_module(task, ModuleCandidate(path.name, path=path), options)
        label = path.name
    row = row_from_gate(problem, label, gate, time.perf_counter() - start)
    return {"row": row.to_json(), "gate": gate.to_json()}


def evaluate_problem_job(
    problem_path: str,
    level: int,
    problem_id: int,
    name: str,
    solution: str | None,
    sizes: dict[str, Any] | None,
    strict_sizes: bool,
    options: dict[str, Any],
) -> dict[str, Any]:
    """`evaluate_problem` with plain arguments, for a worker process (`argus.eval.isolation`)."""
    problem = ProblemFile(level, problem_id, name, Path(problem_path))
    return evaluate_problem(
        problem, solution, sizes=sizes, strict_sizes=strict_sizes, options=GateOptions.from_dict(options)
    )


# ---------------------------------------------------------------------------------------------------------------
# summary and CSV


def _geomean(values: list[float]) -> float | None:
    return math.exp(statistics.fmean(math.log(v) for v in values)) if values else None


def summarize(rows: list[Row]) -> dict[str, Any]:
    """fast_p (p in `FAST_P`), geometric mean and median speedup, against eager and against ``torch.compile``
    (see the module docstring). fast_p for p > 0 is None when no problem was timed (no GPU)."""
    n = len(rows)
    correct = [r for r in rows if r.correct]
    out: dict[str, Any] = {
        "problems": n,
        "correct": len(correct),
        "fast_0": len(correct) / n if n else None,
        "timed": sum(1 for r in correct if r.time_ms is not None),
    }
    for baseline in ("eager", "compile"):
        speeds = [getattr(r, f"speedup_{baseline}") for r in correct]
        timed = [s for s in speeds if s is not None]
        entry: dict[str, Any] = {}
        for p in FAST_P:
            key = f"fast_{p:g}"
            if p == 0:
                entry[key] = out["fast_0"]
            else:
                entry[key] = (sum(1 for s in timed if s > p) / n) if timed and n else None
        entry["geomean"] = _geomean(timed)
        entry["median"] = statistics.median(timed) if timed else None
        entry["timed"] = len(timed)
        out[baseline] = entry
    return out


def write_csv(rows: list[Row], path: Path | str) -> Path:
    """Write `rows` as CSV (a header of `Row`'s fields)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    names = list(Row.__dataclass_fields__)
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=names)
        writer.writeheader()
        for r in rows:
            writer.writerow({k: ("" if v is None else v) for k, v in r.to_json().items()})
    return path


def read_csv(path: Path | str) -> list[dict[str, str]]:
    with Path(path).open(newline="") as f:
        return list(csv.DictReader(f))


@dataclass
class KernelBenchReport:
    """The rows of a run, its summary, and where it was written."""

    rows: list[Row]
    summary: dict[str, Any]
    run_id: str | None = None
    csv_path: Path | None = None
    store_path: Path | None = None
    gates: list[dict[str, Any]] = field(default_factory=list)


def run_kernelbench(
    problems_dir: Path | str,
    level: int,
    solutions: str | Path,
    *,
    problems: Iterable[int] | None = None,
    sizes: Mapping[str, Any] | None = None,
    small: bool = False,
    workers: int = 1,
    devices: list[int] | None = None,
    timeout_s: float = 600.0,
    isolate: bool = True,
    store_path: Path | str | None = None,
    csv_path: Path | str | None = None,
    options: Any = None,
    on_row: Callable[[Row], None] | None = None,
    executor: Executor | None = None,
) -> KernelBenchReport:
    """Evaluate the solutions for the problems of `level` (see the module docstring).

    Args:
        solutions: a directory of solution files (`find_solution`), or ``"identity"``.
        problems: problem ids (default: all of the level; with `small`, those of `CPU_SAMPLE`).
        sizes: module-level overrides applied to every problem that assigns the name.
        small: use `CPU_SAMPLE`'s sizes (and its problems, unless `problems` is given).
        workers, devices, timeout_s, isolate: worker processes (`argus.eval.isolation`): `workers` of them, or one
            per GPU index in `devices`; ``isolate=False`` runs in this process (no containment; for debugging).
        executor: where the jobs run (`argus.eval.executor`: a `LocalExecutor`, a Ray executor); the caller's, not
            closed here. None: a local pool from `workers`, `devices` and `timeout_s`. Each problem is one job,
            on a GPU when the executor has any, else on a CPU; the row and the store record which worker ran it.
        store_path: SQLite file the results are written to as they arrive (`argus.eval.store`).
        csv_path: where to write the CSV: rewritten as each row arrives, so that a run stopped from outside leaves
            the rows it finished.
        on_row: called with each row as it arrives (progress).
    """
    options = options or GateOptions()
    sample = CPU_SAMPLE.get(level, {})
    ids = list(problems) if problems is not None else (sorted(sample) if small else None)
    found = discover(problems_dir, level, ids)
    owned = executor is None and isolate
    if owned:
        executor = LocalExecutor(workers, devices=devices, timeout_s=timeout_s)
    try:
        return _run(found, level, solutions, small, sample, sizes, store_path, csv_path, options, on_row, executor)
    finally:
        if owned and executor is not None:
            executor.close()


def _run(
    found: list[ProblemFile],
    level: int,
    solutions: str | Path,
    small: bool,
    sample: Mapping[int, dict[str, Any]],
    sizes: Mapping[str, Any] | None,
    store_path: Path | str | None,
    csv_path: Path | str | None,
    options: Any,
    on_row: Callable[[Row], None] | None,
    executor: Executor | None,
) -> KernelBenchReport:
    """`run_kernelbench`'s body: the jobs through `executor` (None: in this process), the rows, the store."""
    described = executor.describe() if executor is not None else {"backend": "in-process"}
    resource = Resource.GPU if executor is not None and executor.gpus() > 0 else Resource.CPU
    store = ResultStore(store_path) if store_path else None
    meta = {"level": level, "solutions": str(solutions), "problems": len(found), "executor": described}
    run_id = store.start_run("kernelbench", meta) if store else None
    option_fields = options.to_dict()
    jobs = []
    for p in found:
        if str(solutions) == "identity":
            solution: str | None = "identity"
        else:
            hit = find_solution(solutions, p)
            solution = str(hit) if hit else None
        problem_sizes = {**(sample.get(p.problem_id, {}) if small else {}), **dict(sizes or {})}
        kwargs = {
            "problem_path": str(p.path),
            "level": p.level,
            "problem_id": p.problem_id,
            "name": p.name,
            "solution": solution,
            "sizes": problem_sizes,
            "strict_sizes": False,
            "options": option_fields,
        }
        jobs.append((p, solution, GateJob(p.key, "argus.eval.kernelbench:evaluate_problem_job", kwargs, resource)))

    rows: list[Row] = []
    gates: list[dict[str, Any]] = []
    ran_on: dict[str, dict[str, Any]] = {}

    def accept(p: ProblemFile, solution: str | None, payload: dict[str, Any] | None, result: Any) -> None:
        """Record one problem: its gate's payload, or (None) the executor's `JobResult` that says why there is none;
        `result` also names the worker (None when run in this process)."""
        if payload is not None:
            row = Row(**payload["row"])
            gate = payload["gate"]
        else:
            g = GateResult(Path(solution).name if solution else "none", p.key)
            status = failure_status(result)
            g.stages.append(StageResult("isolation", status, result.code, result.reason, result.details))
            gate = g.to_json()
            row = row_from_gate(p, Path(solution).name if solution else "none", g, result.seconds)
        entry: dict[str, Any] = {"gate": gate}
        if result is not None and result.worker is not None:
            row.worker = result.worker.label()
            ran_on[p.key] = entry["worker"] = {**result.worker.to_json(), "attempts": result.attempts}
        entry["row"] = row.to_json()
        rows.append(row)
        gates.append(gate)
        if store is not None and run_id is not None:  # the driver alone writes the store, as results arrive
            store.put(run_id, p.key, row.verdict, entry)
        if csv_path:  # the rows so far: a run stopped from outside (a time limit) leaves what it finished
            write_csv(sorted(rows, key=lambda r: r.problem_id), csv_path)
        if on_row is not None:
            on_row(row)

    if executor is not None:
        by_key = {job.key: (p, s) for p, s, job in jobs}
        for result in executor.run([job for _, _, job in jobs]):
            p, s = by_key[result.key]
            accept(p, s, result.value if result.ok else None, result)
    else:
        for p, s, job in jobs:
            accept(p, s, evaluate_problem_job(**job.kwargs), None)
    rows.sort(key=lambda r: r.problem_id)
    summary = summarize(rows)
    summary["executor"] = {
        **described,
        "jobs_per_worker": dict(collections.Counter(r.worker for r in rows if r.worker)),
        "jobs_per_gpu": dict(
            collections.Counter(f"{w['host']}/gpu {w['gpu']}" for w in ran_on.values() if w["gpu"] is not None)
        ),
        "ran_on": ran_on,
    }
    if store is not None and run_id is not None:
        store.finish_run(run_id, summary)
    written = write_csv(rows, csv_path) if csv_path else None
    return KernelBenchReport(rows, summary, run_id, written, Path(store_path) if store_path else None, gates)
