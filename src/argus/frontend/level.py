"""`argus kernelbench --generate`: `argus solve` over the problems of a KernelBench level, then the level's judge.

Each problem is solved in a worker process of the run's executor (`solve_job`: capture, partition, kernels generated,
verified and checked where the worker runs — the GPU it is pinned to, else the interpreter, which skips kernels
past `argus.frontend.solve.INTERPRETER_ELEMENTS` and says so); a problem that crashes or hangs its worker costs its
own row, not the run. The solutions are written to one directory, named as the problem files
(`argus.tasks.kernelbench.find_solution` finds them). Then `argus.eval.kernelbench.run_kernelbench` judges them
with the usual protocol, and each row also says whether every compute operator ran in an argus kernel
(``covered``) and which ones did not (``uncovered``); a problem `solve` could not take is a rejected row with
`solve`'s error.

A file already at a solution's path is replaced only when `argus solve` wrote it (its first line says so);
anything else there is refused before any work (`SOLVE_WRITE`), so a directory of hand-written solutions is never
overwritten. A solution left from an earlier run is removed before its problem is solved again, so a problem
`solve` fails on this time is not judged by an old file.

Resume: with a run store, every problem's `solve` result is recorded as it arrives (key ``solve:<problem>``) and
every judged row as usual; `resume` continues that run, solving only the problems without a recorded result or
whose solution file is not in `solutions_dir` (looked for by its name there: the store and the directory may have
moved to another machine, solved on a CPU and judged on a GPU) and judging only the problems without a row.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from argus.frontend.emit import GENERATED_MARK
from argus.frontend.errors import FrontendError

#: The run store's key prefix of a problem's `solve` result.
SOLVE_KEY = "solve:"


def written_by_solve(path: Path) -> bool:
    """Whether the file at `path` is a solution `argus solve` wrote (its docstring opens by saying so)."""
    try:
        with path.open(encoding="utf-8", errors="replace") as f:
            return GENERATED_MARK in f.read(400)
    except OSError:
        return False


def solve_job(problem_path: str, out: str, sizes: dict[str, Any], device: str | None) -> dict[str, Any]:
    """Solve one problem (no judging: the level's judge does it) into `out`, in a worker. `sizes`: overrides for the
    names the problem assigns (others ignored). Returns `SolveResult.to_json()`, or ``{"error": {"code",
    "reason"}}`` when `solve` refused the problem."""
    from argus.diagnostics import ArgusError
    from argus.eval.gate import GateOptions
    from argus.frontend.solve import solve
    from argus.tasks.kernelbench import load_problem

    try:
        applied = dict(load_problem(problem_path, sizes, strict=False).sizes)
        result = solve(problem_path, sizes=applied, out=out, judge=False, options=GateOptions(device=device))
    except ArgusError as e:
        return {"error": {"code": e.code, "reason": str(e)}}
    return result.to_json()


@dataclass
class LevelReport:
    """What `solve_level` did: each problem's `solve` result (its JSON, or ``{"error"}``) by problem id, what the
    judge was given (`argus.eval.kernelbench.Generated`), the judge's report (None with ``judge=False``) and the run
    id in the store (None without one)."""

    solved: dict[int, dict[str, Any]] = field(default_factory=dict)
    generated: dict[int, Any] = field(default_factory=dict)
    kernelbench: Any = None
    run_id: str | None = None


def generated_from(payload: Mapping[str, Any]) -> Any:
    """The judge's view (`Generated`) of one problem's `solve_job` result, or of an executor's failure
    (``{"error"}``)."""
    from argus.eval.kernelbench import Generated

    if "error" in payload:
        err = payload["error"]
        return Generated(None, None, "", err.get("code") or "COMPILE_MISSING", err.get("reason") or "")
    uncovered = "; ".join(f"{u['op']}: {u['reason']}" for u in payload.get("uncovered", []))
    return Generated(payload["solution"], bool(payload.get("covered")), uncovered)


def _check_targets(targets: Iterable[Path]) -> None:
    """Refuse, before any work, to replace a file `argus solve` did not write."""
    foreign = [t for t in targets if t.exists() and (not t.is_file() or not written_by_solve(t))]
    if foreign:
        names = ", ".join(str(t) for t in foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
        raise FrontendError(
            "SOLVE_WRITE",
            f"cannot write the solutions: {names} {'is' if len(foreign) == 1 else 'are'} there, not written by "
            "argus solve (nothing was changed)",
            "move them, or pass another --solutions directory (generated solutions are written there)",
        )


def solve_level(
    problems_dir: Path | str,
    level: int,
    solutions_dir: Path | str,
    *,
    executor: Any,
    problems: Iterable[int] | None = None,
    sizes: Mapping[str, Any] | None = None,
    small: bool = False,
    judge: bool = True,
    options: Any = None,
    store_path: Path | str | None = None,
    resume: str | None = None,
    csv_path: Path | str | None = None,
    on_solved: Callable[[Any, dict[str, Any]], None] | None = None,
    on_row: Callable[[Any], None] | None = None,
    on_start: Callable[[str], None] | None = None,
) -> LevelReport:
    """Solve the problems of `level` into `solutions_dir`, then judge them (see the module docstring).

    `executor`: where the jobs run (`argus.eval.executor`), the caller's; `problems`, `sizes`, `small`, `options`,
    `csv_path`: as for `argus.eval.kernelbench.run_kernelbench`; `options.device` is also where `solve` checks the
    kernels (None: the worker's GPU when it has one). `on_solved(problem, payload)` and `on_row(row)`: progress;
    `on_start(run_id)`: the run's id in the store, before any work (to resume it)."""
    from argus.eval.executor import GateJob, Resource
    from argus.eval.gate import GateOptions
    from argus.eval.kernelbench import resumed_rows, run_kernelbench, start_run
    from argus.eval.store import ResultStore
    from argus.tasks.kernelbench import CPU_SAMPLE, discover

    options = options or GateOptions()
    sample = CPU_SAMPLE.get(level, {})
    ids = list(problems) if problems is not None else (sorted(sample) if small else None)
    found = discover(problems_dir, level, ids)
    out_dir = Path(solutions_dir).resolve()
    targets = {p.problem_id: out_dir / p.path.name for p in found}
    _check_targets(targets.values())
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise FrontendError("SOLVE_WRITE", f"cannot create {out_dir}: {e}", None) from None

    report = LevelReport()
    store = ResultStore(store_path) if store_path else None
    try:
        if resume is not None:
            if store is None:
                from argus.tasks.base import TaskError

                raise TaskError(
                    "TASK_KERNELBENCH_RESUME", f"--resume {resume} needs the run store it is in (--store FILE)"
                )
            resumed_rows(store, resume, level)  # refuses a run that is not a KernelBench run of this level
            report.run_id = resume
            for r in store.results(resume):
                key, payload = r["key"], r["payload"]
                if not key.startswith(SOLVE_KEY) or not isinstance(payload, dict) or "solve" not in payload:
                    continue
                pid = next((p.problem_id for p in found if p.key == key[len(SOLVE_KEY) :]), None)
                solved = dict(payload["solve"])
                if pid is None:
                    continue  # not asked for now
                if "error" not in solved:
                    # the solution is looked for in this run's directory (the run may have moved: solved on one
                    # machine, judged on another); gone, it is solved again
                    if not targets[pid].is_file():
                        continue
                    solved["solution"] = str(targets[pid])
                report.solved[pid] = solved
        elif store_path is not None:
            report.run_id = start_run(
                store_path,
                level,
                out_dir,
                len(found),
                generate=True,
                ids=[p.problem_id for p in found],
                executor=executor.describe(),
            )
        if report.run_id is not None and on_start is not None:
            on_start(report.run_id)

        resource = Resource.GPU if executor.gpus() > 0 else Resource.CPU
        jobs = []
        by_key = {}
        for p in found:
            if p.problem_id in report.solved:
                continue
            target = targets[p.problem_id]
            if target.exists():  # an earlier run's solution (checked above): never judged for this run
                target.unlink()
            problem_sizes = {**(sample.get(p.problem_id, {}) if small else {}), **dict(sizes or {})}
            kwargs = {"problem_path": str(p.path), "out": str(target), "sizes": problem_sizes, "device": options.device}
            job = GateJob(SOLVE_KEY + p.key, "argus.frontend.level:solve_job", kwargs, resource)
            jobs.append(job)
            by_key[job.key] = p
        for result in executor.run(jobs) if jobs else ():
            p = by_key[result.key]
            payload = result.value if result.ok else {"error": {"code": result.code, "reason": result.reason}}
            report.solved[p.problem_id] = payload
            if store is not None and report.run_id is not None:
                status = payload["status"] if "error" not in payload else "error"
                store.put(report.run_id, result.key, status, {"solve": payload})
            if on_solved is not None:
                on_solved(p, payload)
    finally:
        if store is not None:
            store.close()

    report.generated = {pid: generated_from(payload) for pid, payload in report.solved.items()}
    if judge:
        report.kernelbench = run_kernelbench(
            problems_dir,
            level,
            out_dir,
            problems=[p.problem_id for p in found],
            sizes=sizes,
            small=small,
            store_path=store_path,
            csv_path=csv_path,
            options=options,
            on_row=on_row,
            executor=executor,
            generated=report.generated,
            resume=report.run_id,
        )
    return report
