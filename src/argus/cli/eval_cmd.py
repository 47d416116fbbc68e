"""`argus bench` and `argus kernelbench`: the gate and the benchmark harness from the command line (thin shells
over `argus.eval.bench.run_bench` and `argus.eval.kernelbench.run_kernelbench`).

Tables follow `argus.cli.output`: kernel names and shapes are never cut; piped, the table is tab-separated. ``--json``
and ``--markdown`` alone print that document to stdout (the human report then goes to stderr); with a FILE they write
it there. The documents:

* ``bench --json``: ``{"target", "task", "gpu", "timing", "rows", "baselines", "gates", "environment"}``, a row
  per kernel and size (`argus.eval.bench.BenchRow`: ``kernel``, ``task``, ``sizes``, ``verdict``, ``correct``,
  ``max_rel_norm``, ``time_ms``, ``tflops``, ``gbps``, ``fraction_of_ceiling``, ``ratios``, ``flags``, ...);
* ``kernelbench --json``: ``{"level", "solutions", "summary", "rows", "csv", "store", "run_id"}``, a row per problem
  (the CSV's columns);
* ``--markdown``: the table(s) as GitHub markdown under a heading.

While ``kernelbench`` runs, a terminal shows the executor's progress live under the bar (`executor_view`: jobs
queued, running and done in total and per GPU or worker, the running jobs by the last gate stage they finished, each
stage's wall time so far); anywhere else (a pipe, a file, CI) each finished problem prints one plain line with the
same counts (`progress_line`). The summary's ``executor.stage_seconds`` totals the stages' wall time.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import typer
from rich.console import Console, Group, RenderableType
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from argus.cli.errors import user_error
from argus.cli.executor_options import ray_option
from argus.cli.output import (
    STDOUT,
    Column,
    check_one_stdout,
    emit_json,
    emit_text,
    json_option,
    markdown_option,
    markdown_table,
    print_table,
)
from argus.diagnostics import ArgusError

err = Console(stderr=True, soft_wrap=True)
out = Console(soft_wrap=True)


def _fmt(value: Any, spec: str = ".4g", suffix: str = "") -> str:
    if value is None:
        return "—"
    return f"{value:{spec}}{suffix}"


def _progress(executor: Any = None) -> Progress:
    """The bars of a run on stderr; with an `executor`, its progress live under them (`executor_view`)."""
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    if executor is not None:
        return _ExecutorProgress(executor, *columns, console=err, transient=True)
    return Progress(*columns, console=err, transient=True)


def _stages_text(snapshot: Any) -> list[str]:
    parts = []
    if snapshot.after_stage:
        parts.append("running after " + ", ".join(f"{k} {v}" for k, v in snapshot.after_stage.items()))
    if snapshot.stage_seconds:
        parts.append(
            "stage wall time "
            + ", ".join(f"{k} {v:.1f} s/{snapshot.stage_jobs.get(k, 0)}" for k, v in snapshot.stage_seconds.items())
        )
    return parts


def progress_line(snapshot: Any) -> str:
    """An executor's `argus.eval.executor.Progress` on one plain line: totals, per place, stages."""
    if snapshot.running_known:
        head = f"{snapshot.queued} queued, {snapshot.running} running, {snapshot.done} done"
    else:
        head = f"{snapshot.queued} submitted (queued or running), {snapshot.done} done"
    head += f" ({snapshot.failed} failed)" if snapshot.failed else ""
    places = [
        f"{name}: {c.running} running, {c.done} done" if snapshot.running_known else f"{name}: {c.done} done"
        for name, c in snapshot.places.items()
    ]
    return "; ".join([head, *places, *_stages_text(snapshot), *([snapshot.note] if snapshot.note else [])])


def executor_view(snapshot: Any) -> RenderableType:
    """An executor's `argus.eval.executor.Progress` for a live display: a table per GPU or worker (jobs wait in one
    queue, so only the total has queued jobs), then the stages."""
    table = Table(box=None, pad_edge=False, show_edge=False)
    for name in ("place", "queued", "running", "done", "failed"):
        table.add_column(name, justify="left" if name == "place" else "right")
    unknown = "?" if not snapshot.running_known else None
    for name, c in snapshot.places.items():
        table.add_row(name, "", unknown or str(c.running), str(c.done), str(c.failed))
    table.add_row(
        "all", str(snapshot.queued), unknown or str(snapshot.running), str(snapshot.done), str(snapshot.failed)
    )
    lines = _stages_text(snapshot)
    if not snapshot.running_known:
        lines.append("which submitted jobs run is not known: queued counts both")
    if snapshot.note:
        lines.append(snapshot.note)
    return Group(table, *(Text(line) for line in lines))


class _ExecutorProgress(Progress):
    """The run's bars with the executor's progress (`executor_view`) under them, refreshed with them."""

    def __init__(self, executor: Any, *columns: Any, **kwargs: Any) -> None:
        self.executor = executor  # before Progress's own setup, which may render
        super().__init__(*columns, **kwargs)

    def get_renderables(self) -> Any:
        yield self.make_tasks_table(self.tasks)
        yield executor_view(self.executor.progress())


def parse_assignments(text: str) -> dict[str, Any]:
    """``"batch_size=2,input_shape=(256,)"`` -> ``{"batch_size": 2, "input_shape": (256,)}``: comma-separated
    ``NAME=VALUE`` pairs, each value a Python literal (commas inside parentheses belong to the value)."""
    parts, depth, current = [], 0, ""
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    parts.append(current)
    result: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in parts)):
        name, _, value = part.partition("=")
        name = name.strip()
        try:
            parsed = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError):
            raise typer.BadParameter(f"cannot read {part!r}: write NAME=VALUE with a Python literal value") from None
        if not name.isidentifier():
            raise typer.BadParameter(f"cannot read {part!r}: {name!r} is not a name")
        result[name] = parsed
    return result


def bench(
    name_or_task: str = typer.Argument(
        ..., help="a built-in task (all its library kernels), a library kernel, or FILE.py:NAME (a kernel of your own)"
    ),
    baselines: str = typer.Option(
        "",
        "--baselines",
        help="comma-separated baselines (eager, compile, cublas, sdpa-flash, ...; default: the task's)",
    ),
    shapes: str = typer.Option(
        "", "--shapes", help="problem sizes, ';' between shapes: 'M=4096,N=4096,K=4096;M=8192,N=8192,K=8192'"
    ),
    json_file: str | None = json_option(
        'every result with all its gate stages: {"target", "task", "gpu", "timing", "rows", "baselines", "gates", '
        '"environment"}'
    ),
    plot_file: str | None = typer.Option(None, "--plot", help="bar chart of the ratios to the baselines (PNG)"),
    trials: int = typer.Option(6, "--trials", help="correctness trials per kernel and size"),
    reps: int = typer.Option(100, "--reps", help="timed repetitions (GPU); interleaved: rounds"),
    timing: str = typer.Option(
        "interleaved",
        "--timing",
        help="interleaved: each kernel and its baselines timed together in one worker, one launch each per round, "
        "order rotating (the GPU clock drifts: ratios from separate timings move 5-10 %); sequential: baselines "
        "timed once per size on their own, before the kernels",
    ),
    markdown_file: str | None = markdown_option("the table, headed by the target, device and timing method,"),
    timeout: float = typer.Option(900.0, "--timeout", help="time limit per kernel and size, in seconds"),
    isolate: bool = typer.Option(True, "--isolate/--no-isolate", help="run each kernel in a worker process"),
    store: str | None = typer.Option(None, "--store", help="SQLite file results are written to as they arrive"),
) -> None:
    """Kernels through the gate against their baselines (library kernels, or yours): time, TFLOP/s, % of ceiling,
    ratios.

    Without a GPU, correctness runs on the CPU interpreter and timing is skipped (said in the table).

    Piped, the table is tab-separated. --json or --markdown alone: the document to stdout, the report to stderr."""
    from argus.eval.bench import parse_shapes, plot_ratios, ratio_cell, run_bench, size_label
    from argus.eval.gate import GateOptions

    if timing not in ("interleaved", "sequential"):
        raise typer.BadParameter(f"--timing is 'interleaved' or 'sequential', not {timing!r}")
    check_one_stdout(json=json_file, markdown=markdown_file)
    report_to = Console(stderr=STDOUT in (json_file, markdown_file), soft_wrap=True)  # stdout: the document alone
    try:
        shape_list = parse_shapes(shapes) if shapes.strip() else None
        names = [b.strip() for b in baselines.split(",") if b.strip()] or None
        options = GateOptions(trials=trials, reps=reps, timing=timing)
        with _progress() as progress:
            bar = progress.add_task("starting", total=None)

            def on_progress(done: int, total: int, what: str) -> None:
                progress.update(bar, completed=done, total=total, description=what)

            report = run_bench(
                name_or_task,
                baselines=names,
                shapes=shape_list,
                options=options,
                isolate=isolate,
                timeout_s=timeout,
                store_path=store,
                on_progress=on_progress,
            )
    except ArgusError as e:
        user_error(e)

    base_names = list(dict.fromkeys(n for r in report.rows for n in r.ratios)) or (names or [])
    env = report.environment
    device = env.get("gpu", {}).get("name") if report.gpu else "CPU (no CUDA GPU)"
    title = f"argus bench {report.target} — task {report.task} on {device}, torch {env.get('torch')}"
    columns = [Column("kernel", identifier=True), Column("shape", identifier=True), Column("verdict"),
               Column("rel. error", justify="right")]  # fmt: skip
    if report.gpu:  # GB/s and % ceiling last: left out first on a narrow terminal
        quartiles = " [q1, q3]" if report.timing.get("method") == "interleaved" else ""
        columns += [Column(c, justify="right") for c in ("time (ms)", "TFLOP/s")]
        columns += [Column(f"x {b}{quartiles}", justify="right") for b in base_names]
        columns += [Column(c, justify="right", optional=True) for c in ("GB/s", "% ceiling")]
    else:
        columns.append(Column("timing", min_width=24))
    rows = []
    for r in report.rows:
        verdict = r.verdict if not r.flags else f"{r.verdict} ({', '.join(r.flags)})"
        cells = [r.kernel, size_label(r.sizes), verdict, _fmt(r.max_rel_norm, ".1e")]
        if report.gpu:
            ceiling = r.fraction_of_ceiling * 100 if r.fraction_of_ceiling is not None else None
            cells += [_fmt(r.time_ms), _fmt(r.tflops, ".1f"), *[ratio_cell(r, b) for b in base_names]]
            cells += [_fmt(r.gbps, ".0f"), _fmt(ceiling, ".0f", "%")]
        else:
            cells.append(f"skipped: {r.timing_skipped}" if r.timing_skipped else "—")
        rows.append(cells)
    report_to.print(title, markup=False, highlight=False)
    print_table(columns, rows, console=report_to)
    report_to.print(report.timing_line(), markup=False, highlight=False)
    for label, b in report.baselines.items():
        if "error" in b:
            report_to.print(f"baselines at {label}: {b['error']}", markup=False, highlight=False)
            continue
        parts = []
        for name, check in b.get("checks", {}).items():
            timing = b.get("timings", {}).get(name, {})
            t = timing.get("timing", {}).get("median_ms")
            if t is None:  # interleaved: timed with each kernel; the medians of its rows
                row_ms = [ms for r in report.rows if size_label(r.sizes) == label for ms in [r.baseline_ms.get(name)]]
                row_ms = [ms for ms in row_ms if ms is not None]
            else:
                row_ms = []
            state = (
                "computes the task"
                if check.get("correct")
                else f"WRONG: {check['reason']}"
                if "reason" in check
                else f"not run: {check.get('skipped')}"
            )
            if t is not None:
                state += f", {t:.4g} ms"
            elif row_ms:
                shown = f"{row_ms[0]:.4g}" if min(row_ms) == max(row_ms) else f"{min(row_ms):.4g}–{max(row_ms):.4g}"
                state += f", {shown} ms (timed with each kernel)"
            parts.append(f"{name}: {state}")
        report_to.print(f"baselines at {label}: " + "; ".join(parts), markup=False, highlight=False)
    for r in report.rows:
        if not r.correct:
            report_to.print(f"{r.kernel} [{size_label(r.sizes)}]: {r.summary}", markup=False, highlight=False)
    if not report.gpu:
        report_to.print("timing skipped: no CUDA GPU here (correctness ran on the CPU interpreter)", highlight=False)
    if json_file is not None and (written := emit_json(report.to_json(), json_file)) is not None:
        report_to.print(f"wrote {written}", markup=False, highlight=False)
    if markdown_file is not None and (written := emit_text(report.to_markdown(), markdown_file)) is not None:
        report_to.print(f"wrote {written}", markup=False, highlight=False)
    if plot_file is not None:
        try:
            plotted = plot_ratios(report, plot_file)
        except ImportError:
            err.print("--plot needs Pillow: pip install 'argus-kernels[viz]'")
            raise typer.Exit(2) from None
        if plotted:
            report_to.print(f"wrote {plot_file}", markup=False, highlight=False)
        else:
            report_to.print(f"no ratios to plot (timing skipped): {plot_file} not written", markup=False)
    raise typer.Exit(0 if all(r.correct for r in report.rows) else 1)


def kernelbench(
    problems_dir: str | None = typer.Option(
        None,
        "--problems",
        help="KernelBench problems directory (default: $ARGUS_KERNELBENCH_DIR or ../shared/kernelbench)",
    ),
    level: int = typer.Option(1, "--level", help="problem level (1, 2, 3)"),
    solutions_dir: str | None = typer.Option(
        None,
        "--solutions",
        help="directory of solution files (defining ModelNew), or 'identity' (the default); with --generate, where "
        "the solutions are written (default: argus-solutions/levelN)",
    ),
    generate: bool = typer.Option(
        False, "--generate", help="write the solutions with argus solve (no LLM), then judge them; adds 'covered'"
    ),
    no_judge: bool = typer.Option(False, "--no-judge", help="with --generate: write the solutions, judge nothing"),
    csv_file: str = typer.Option("kernelbench.csv", "--csv", help="where to write one row per problem"),
    only: str = typer.Option("", "--only", help="comma-separated problem ids (default: all of the level)"),
    small: bool = typer.Option(False, "--small", help="the CPU sample with its small sizes (argus.tasks.kernelbench)"),
    sizes: str = typer.Option("", "--sizes", help="module-level overrides for every problem, e.g. batch_size=2"),
    workers: int = typer.Option(0, "--workers", help="worker processes (0: one per GPU, or 1 without a GPU)"),
    timeout: float = typer.Option(600.0, "--timeout", help="time limit per problem (and per solve), in seconds"),
    store: str | None = typer.Option(None, "--store", help="SQLite file results are written to as they arrive"),
    resume: str | None = typer.Option(
        None, "--resume", help="continue run RUN of --store: problems with a row there are not run again"
    ),
    trials: int = typer.Option(6, "--trials", help="correctness trials per problem (KernelBench: 5)"),
    reps: int = typer.Option(100, "--reps", help="timed repetitions (GPU)"),
    baselines: str = typer.Option(
        "eager,compile", "--baselines", help="baselines timed beside each solution (eager, compile; '' for none)"
    ),
    ray: str | None = ray_option("run the problems", "the local worker pool"),
    json_file: str | None = json_option(
        '{"level", "solutions", "summary", "rows", "csv", "store", "run_id"}, a row per problem (the CSV\'s columns; '
        'with --generate also "generated": each problem\'s argus solve result)'
    ),
    markdown_file: str | None = markdown_option("the summary and a table of the problems"),
) -> None:
    """Evaluate KernelBench solutions: correctness with argus's defences, speedup vs eager and torch.compile,
    fast_p, geometric mean and median; writes a CSV. With --generate, argus solve writes the solutions first (no
    LLM) and each row says whether every compute operator ran in an argus kernel. Exits 1 when the harness could
    not decide a problem.

    Piped, the table is tab-separated. --json or --markdown alone: the document to stdout, the report to stderr."""
    from argus.eval.device import has_gpu
    from argus.eval.executor import open_executor
    from argus.eval.gate import GateOptions
    from argus.eval.kernelbench import run_kernelbench, start_run
    from argus.tasks.kernelbench import default_kernelbench_dir, discover

    check_one_stdout(json=json_file, markdown=markdown_file)
    report_to = Console(stderr=STDOUT in (json_file, markdown_file), soft_wrap=True)  # stdout: the document alone
    root = Path(problems_dir) if problems_dir else default_kernelbench_dir()
    try:
        ids = [int(x) for x in only.split(",") if x.strip()] or None
    except ValueError:
        raise typer.BadParameter(f"--only takes comma-separated problem ids, got {only!r}") from None
    if no_judge and not generate:
        raise typer.BadParameter("--no-judge goes with --generate (without it there is nothing but the judging)")
    if resume and not store:
        raise typer.BadParameter("--resume RUN needs --store FILE, the run store RUN was written to")
    if resume and ids is None and not small:
        # a resumed run continues over the problems it was started with, not the whole level (with --generate that
        # would solve every other problem, on whatever machine resumes it)
        from argus.eval.kernelbench import run_selection

        try:
            ids = run_selection(store, resume)
        except ArgusError as e:
            user_error(e)
    if generate and solutions_dir == "identity":
        raise typer.BadParameter("--generate writes solutions: --solutions names a directory, not 'identity'")
    solutions = solutions_dir or (f"argus-solutions/level{level}" if generate else "identity")
    overrides = parse_assignments(sizes)
    chosen = tuple(b.strip() for b in baselines.split(",") if b.strip())
    unknown = sorted(set(chosen) - {"eager", "compile"})
    if unknown:
        raise typer.BadParameter(f"--baselines for KernelBench are eager and compile, not {', '.join(unknown)}")
    devices = None
    if workers <= 0:
        if has_gpu():
            import torch

            devices = list(range(torch.cuda.device_count()))
        workers = 1
    options = GateOptions(trials=trials, reps=reps, baselines=chosen)
    level_report = None
    try:
        if ids is None and not small:
            total = len(discover(root, level))
        else:
            from argus.tasks.kernelbench import CPU_SAMPLE

            total = len(ids) if ids is not None else len(CPU_SAMPLE.get(level, {}))
        with (
            open_executor(ray, workers=workers, devices=devices, timeout_s=timeout) as executor,
            _progress(executor) as progress,
        ):
            live = err.is_terminal  # else one plain line per finished problem
            judged = [0]
            judge_bar = progress.add_task(f"level {level}", total=total, visible=not generate)

            def started(run_id: str) -> None:
                progress.console.print(
                    f"run {run_id} in {store} (continue it with --store {store} --resume {run_id})",
                    markup=False,
                    highlight=False,
                )

            def on_row(row: Any) -> None:
                progress.update(
                    judge_bar, advance=1, visible=True, description=f"level {level}: {row.problem_id}_{row.name}"
                )
                judged[0] += 1
                if not live:
                    err.print(
                        f"[{judged[0]}/{total}] {row.problem_id}_{row.name}: {row.verdict} | "
                        + progress_line(executor.progress()),
                        markup=False,
                        highlight=False,
                    )

            if generate:
                from argus.frontend.level import solve_level

                solve_bar = progress.add_task(f"solving level {level}", total=total)

                def on_solved(problem: Any, payload: dict[str, Any]) -> None:
                    status = payload.get("status") or f"not solved ({payload['error']['code']})"
                    progress.update(solve_bar, advance=1, description=f"solved {problem.key}: {status}")

                level_report = solve_level(
                    root,
                    level,
                    solutions,
                    executor=executor,
                    problems=ids,
                    sizes=overrides,
                    small=small,
                    judge=not no_judge,
                    options=options,
                    store_path=store,
                    resume=resume,
                    csv_path=csv_file,
                    on_solved=on_solved,
                    on_row=on_row,
                    on_start=started,
                )
                report = level_report.kernelbench
            else:
                run_id = resume
                if store and run_id is None:
                    run_id = start_run(store, level, solutions, total, ids=ids, executor=executor.describe())
                if run_id is not None:
                    started(run_id)
                report = run_kernelbench(
                    root,
                    level,
                    solutions,
                    problems=ids,
                    sizes=overrides,
                    small=small,
                    workers=workers,
                    devices=devices,
                    timeout_s=timeout,
                    store_path=store,
                    csv_path=csv_file,
                    options=options,
                    on_row=on_row,
                    executor=executor,
                    resume=run_id,
                )
    except ArgusError as e:
        user_error(e)

    if report is None:  # --generate --no-judge: the solutions and their coverage
        assert level_report is not None
        _print_generated(level_report, solutions, report_to, json_file, store)
        raise typer.Exit(0)

    s = report.summary
    title = f"KernelBench level {level}: {solutions} — {s['correct']}/{s['problems']} correct"
    if "solved" in s:
        title += f", {s['solved']} solved (correct, every compute operator in an argus kernel)"
    columns = [Column("baseline", identifier=True)]
    columns += [Column(c, justify="right") for c in ("fast_0", "fast_1", "fast_1.5", "fast_2", "geomean", "median")]
    columns.append(Column("timed", justify="right"))
    rows = [
        [baseline, *[_fmt(s[baseline][k], ".2f") for k in ("fast_0", "fast_1", "fast_1.5", "fast_2")],
         _fmt(s[baseline]["geomean"], ".3f", "x"), _fmt(s[baseline]["median"], ".3f", "x"), str(s[baseline]["timed"])]
        for baseline in ("eager", "compile")
    ]  # fmt: skip
    report_to.print(title, markup=False, highlight=False)
    print_table(columns, rows, console=report_to)
    for r in report.rows:
        if not r.correct:
            report_to.print(f"  {r.problem_id}_{r.name}: {r.verdict} [{r.code}] {r.reason}", markup=False)
        elif r.covered is False:
            report_to.print(f"  {r.problem_id}_{r.name}: correct, not covered: {r.uncovered}", markup=False)
    if s["timed"] == 0:
        report_to.print("timing skipped: no CUDA GPU here; fast_p for p > 0 and speedups need a GPU", highlight=False)
    ran = s.get("executor", {})
    per_place = ran.get("jobs_per_gpu") or ran.get("jobs_per_worker") or {}
    if per_place:
        shown = ", ".join(f"{k} {v}" for k, v in sorted(per_place.items()))
        report_to.print(f"jobs per {'GPU' if ran.get('jobs_per_gpu') else 'worker'}: {shown}", markup=False)
    if ran.get("stage_seconds"):
        shown = ", ".join(f"{k} {v:.1f} s" for k, v in ran["stage_seconds"].items())
        report_to.print(f"stage wall time (summed over problems): {shown}", markup=False, highlight=False)
    if note := executor.progress().note:  # e.g. Ray's live progress lost mid-run (the results are unaffected)
        s.setdefault("executor", {})["progress_note"] = note
        report_to.print(f"progress: {note}", markup=False, highlight=False)
    wrote = [str(report.csv_path)] + ([str(report.store_path)] if report.store_path else [])
    if json_file is not None:
        doc = {"level": level, "solutions": solutions, "summary": s, "rows": [r.to_json() for r in report.rows],
               "csv": wrote[0], "store": str(report.store_path) if report.store_path else None,
               "run_id": report.run_id}  # fmt: skip
        if level_report is not None:
            doc["generated"] = {str(k): v for k, v in sorted(level_report.solved.items())}
        if (written := emit_json(doc, json_file)) is not None:
            wrote.append(str(written))
    if markdown_file is not None:
        problems = [Column("problem", identifier=True), Column("verdict"), Column("code"),
                    Column("x eager", justify="right"), Column("x compile", justify="right")]  # fmt: skip
        problem_rows = [
            [f"{r.problem_id}_{r.name}", r.verdict, r.code or "—", _fmt(r.speedup_eager, ".3f", "x"),
             _fmt(r.speedup_compile, ".3f", "x")]
            for r in report.rows
        ]  # fmt: skip
        if level_report is not None:
            problems.append(Column("covered"))
            for line, r in zip(problem_rows, report.rows, strict=True):
                line.append("—" if r.covered is None else ("yes" if r.covered else f"no: {r.uncovered}"))
        text = f"### {title}\n\n" + markdown_table(columns, rows) + "\n" + markdown_table(problems, problem_rows)
        if (written := emit_text(text, markdown_file)) is not None:
            wrote.append(str(written))
    report_to.print(f"wrote {', '.join(wrote)}", markup=False, highlight=False)
    # a harness error (not a rejected candidate) is a failure of the run
    raise typer.Exit(1 if any(r.verdict == "error" for r in report.rows) else 0)


def _print_generated(
    level_report: Any, solutions: str, console: Console, json_file: str | None, store: str | None
) -> None:
    """`--generate --no-judge`'s report: each problem's solve status, coverage and kernels' check."""
    from argus.frontend.level import generated_from

    columns = [Column("problem", identifier=True), Column("status"), Column("kernels", justify="right"),
               Column("not covered")]  # fmt: skip
    rows = []
    for pid, payload in sorted(level_report.solved.items()):
        name = Path(payload.get("solution") or f"{pid}").stem if "error" not in payload else str(pid)
        if "error" in payload:
            rows.append([name, f"not solved: {payload['error']['code']}", "—", payload["error"]["reason"]])
            continue
        uncovered = generated_from(payload).uncovered
        rows.append([name, payload["status"], str(len(payload.get("kernels", []))), uncovered or "—"])
    print_table(columns, rows, console=console)
    judge = f"argus kernelbench --solutions {solutions}"
    if level_report.run_id is not None:  # the same run, its coverage kept: --generate solves nothing solved already
        judge = f"argus kernelbench --generate --solutions {solutions} --store {store} --resume {level_report.run_id}"
    console.print(f"solutions in {solutions}; judge them (on a GPU at full size) with {judge}", markup=False)
    if json_file is not None:
        doc = {"solutions": solutions, "run_id": level_report.run_id,
               "generated": {str(k): v for k, v in sorted(level_report.solved.items())}}  # fmt: skip
        if (written := emit_json(doc, json_file)) is not None:
            console.print(f"wrote {written}", markup=False, highlight=False)
