"""`argus tune M,N,K [...]`: measure the GEMM library's configurations for each shape on this machine's GPU and
record the fastest, which every later `matmul` call on that GPU takes for problems of the same key (a thin shell
over `argus.agent.tune.tune_gemm`, the mechanism `argus solve --tune` uses for a solution's GEMMs too; the cache:
`argus.kernels.gemm_tuning`).

Each row: the shape, the model's configuration and its time, the fastest measured and its time, the speed-up,
and how many configurations were timed or left out (a configuration that does not verify or does not match the
float64 product is left out, with the reason in ``--json``). Exit status 0, or 2 for a user error (no GPU, a shape
that is not M,N,K, an FP8 or GEMV-class problem).

``--ray`` (or ``$ARGUS_RAY_ADDRESS``) verifies and compiles the configurations as CPU jobs on a Ray cluster, and
``--parallel K`` in a local pool of K worker processes (default: one process per configuration, at most one per
CPU). The correctness check and the timing stay in this process on its GPU, whatever the flags: the configurations
are timed interleaved with each other, a comparison that holds only in one process on one GPU (so the shapes are
tuned one after the other).
"""

from __future__ import annotations

import typer
from rich.console import Console

from argus.cli.errors import user_error
from argus.cli.executor_options import parallel_option, ray_executor, ray_option
from argus.cli.output import STDOUT, Column, emit_json, json_option, print_table
from argus.diagnostics import ArgusError


def _problem(text: str, dtype: str, out_dtype: str | None, layout: str, batch: int):  # noqa: ANN202
    from argus.kernels import matmul as mm

    parts = text.split(",")
    if len(parts) != 3 or not all(p.strip().isdigit() for p in parts):
        raise mm.GemmError(f"a shape is M,N,K (three positive integers), not {text!r}")
    if layout not in ("NN", "NT", "TN", "TT"):
        raise mm.GemmError(f"--layout is one of NN, NT, TN, TT (A then B: N as stored, T transposed), not {layout!r}")
    m, n, k = (int(p) for p in parts)
    a_major = "K" if layout[0] == "N" else "M"
    b_major = "N" if layout[1] == "N" else "K"
    return mm.GemmProblem(m, n, k, dtype, out_dtype or dtype, a_major, b_major, batch)


def tune(
    shapes: list[str] = typer.Argument(..., help="GEMM shapes M,N,K (C = A (M, K) @ B (K, N))"),  # noqa: B008
    dtype: str = typer.Option("bf16", "--dtype", help="the inputs' dtype: bf16, f16 or f32"),
    out_dtype: str | None = typer.Option(None, "--out-dtype", help="C's dtype (default: the inputs')"),
    layout: str = typer.Option("NT", "--layout", help="NN, NT (B as nn.Linear holds its weight), TN or TT"),
    batch: int = typer.Option(1, "--batch", help="independent products of the shape (bmm)"),
    budget: int | None = typer.Option(
        None,
        "--budget",
        help="configurations measured per shape (the model's first ones; default: as many as the model's measured "
        "ranking error needs, argus.agent.tune.default_gemm_budget)",
    ),
    rounds: int = typer.Option(30, "--rounds", help="interleaved timing rounds"),
    no_verify: bool = typer.Option(False, "--no-verify", help="skip verifying each configuration's kernels"),
    json_file: str | None = json_option("one object per shape: the tuned and the model's configuration and times"),
    ray: str | None = ray_option(
        "verify and compile the configurations", "local worker processes (the timing always runs here)"
    ),
    parallel: int | None = parallel_option(
        "configurations verified and compiled at once in a local pool of K worker processes (default: one "
        "process per configuration, at most one per CPU); the timing always runs here, one shape after the other"
    ),
) -> None:
    """Measure the GEMM configurations for each shape on this GPU and record the fastest for later calls."""
    from argus.agent.tune import check_tunable, default_gemm_budget, tune_gemm

    report = Console(stderr=json_file == STDOUT, soft_wrap=True)
    results = []
    try:
        problems = [_problem(s, dtype, out_dtype, layout, batch) for s in shapes]
        budget = default_gemm_budget() if budget is None else budget
        for problem in problems:
            check_tunable(problem, budget)  # every refusal before any worker starts
        with ray_executor(ray) as executor:
            for problem in problems:
                results.append(
                    tune_gemm(
                        problem,
                        budget=budget,
                        rounds=rounds,
                        verify=not no_verify,
                        on_step=lambda text, s=problem: report.print(f"{s.M}x{s.N}x{s.K}: {text}", markup=False),
                        executor=executor,
                        parallel=parallel,
                    )
                )
    except ArgusError as e:
        user_error(e)
    except ValueError as e:  # GemmError: a problem the library does not take
        report.print(f"error: {e}", markup=False)
        raise typer.Exit(2) from None
    columns = [
        Column("shape", identifier=True),
        Column("model's configuration"),
        Column("ms", justify="right"),
        Column("tuned configuration"),
        Column("ms ", justify="right"),
        Column("speed-up", justify="right"),
        Column("timed / left out", justify="right"),
    ]
    rows = [
        [
            f"{r.problem['M']}x{r.problem['N']}x{r.problem['K']} {r.problem['layout']}",
            r.heuristic,
            f"{r.heuristic_ms:.4f}",
            r.config,
            f"{r.ms:.4f}",
            f"{r.speedup:.3f}x",
            f"{len(r.timed)} / {len(r.skipped)}",
        ]
        for r in results
    ]
    print_table(columns, rows, console=report, title=f"GEMM tuning on {results[0].gpu}" if results else None)
    if results:
        report.print(f"recorded in {results[0].cache}", markup=False)
    if json_file is not None:
        written = emit_json([r.to_json() for r in results], json_file)
        if written is not None:
            report.print(f"wrote {written}", markup=False)
