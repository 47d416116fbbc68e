"""`argus solve PROBLEM.py`: a PyTorch problem to a solution of verified DSL kernels, judged by the gate (a thin
shell over `argus.frontend.solve`).

Prints the partition (each kernel: its family and operators; each operator no template covers, with its family and
why), each kernel's verifier verdict and interpreter check, and the gate's verdict; the last line says whether the
problem is solved (correct, and every compute operator in an argus kernel). Exit status: 0 solved, 1 not solved
(incorrect, or operators left to PyTorch), 2 a user error (a file without ``Model``, a model that does not
export). ``--json`` alone prints `SolveResult.to_json()` to stdout (the report then goes to stderr); ``--json
FILE`` writes it there.

``--budget N`` (``--tune N``) tunes each generated kernel's policies with the agent's loop (`argus.agent.tune.Tuner`);
its candidates' gates go through the executor as `argus optimize`'s do: ``--parallel K`` keeps K in flight (a local
pool of K worker processes), and ``--ray`` (or ``$ARGUS_RAY_ADDRESS``) runs them on a Ray cluster, with the
verification of a library GEMM's configurations (docs/scale-out.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from argus.cli.errors import user_error
from argus.cli.eval_cmd import parse_assignments
from argus.cli.executor_options import parallel_option, ray_executor, ray_option
from argus.cli.output import STDOUT, Column, emit_json, json_option, print_table
from argus.diagnostics import ArgusError


def _fmt_error(value: float | None) -> str:
    if value is None:
        return "—"
    return "inf" if value == float("inf") else f"{value:.2g}"


def solve(
    problem: str = typer.Argument(..., help="a KernelBench-style problem file (Model, get_inputs, get_init_inputs)"),
    out: str | None = typer.Option(None, "--out", help="the solution file (default: PROBLEM_solution.py here)"),
    shape: list[str] = typer.Option(  # noqa: B008 - typer's idiom
        [], "--shape", help="module-level size overrides, NAME=VALUE (repeatable; commas allowed: batch_size=8,dim=256)"
    ),
    trials: int = typer.Option(5, "--trials", help="the gate's correctness trials"),
    no_judge: bool = typer.Option(False, "--no-judge", help="generate and check the kernels, skip the gate"),
    tune: int = typer.Option(
        0,
        "--tune",
        "--budget",
        help="tune each generated kernel's policies with the agent's bandit, N candidates a kernel, timed on the GPU "
        "(cached per kernel, sizes and GPU; without a GPU the defaults are kept and said)",
    ),
    store: str = typer.Option("argus-runs.db", "--store", help="with --tune: the run store of the tuning runs"),
    learn_across: bool = typer.Option(
        False,
        "--learn-across",
        help="with --tune: each search starts from what the store's earlier runs of its family and shape class "
        "learned (a sweep of problems into one --store learns across them)",
    ),
    parallel: int | None = parallel_option(
        "with --tune: candidates in flight in each kernel's search (default 1), gated through --ray, else a local "
        "pool of K worker processes; reproducible as argus optimize --parallel K"
    ),
    ray: str | None = ray_option("with --tune: gate the tuning candidates", "a local worker process"),
    llm: bool = typer.Option(
        False,
        "--llm",
        help="have the configured LLM (ARGUS_LLM_*) write a kernel for each operator no template covers; each is "
        "gated in a sandbox and repaired over --turns answers",
    ),
    turns: int = typer.Option(3, "--turns", help="with --llm: answers per operator (the first and the repairs)"),
    model: str | None = typer.Option(None, "--model", help="with --llm: the model (else ARGUS_LLM_MODEL)"),
    device: str | None = typer.Option(
        None,
        "--device",
        help="where the kernels are checked and the solution judged: cuda, cuda:N or cpu "
        "(default: the GPU when there is one)",
    ),
    json_file: str | None = json_option(
        '{"problem", "sizes", "status", "solved", "covered", "groups", "uncovered", "kernels", "solution", '
        '"specialized", "gate", "seconds"}'
    ),
) -> None:
    """Capture a PyTorch problem, generate verified argus kernels for what the templates cover, emit a ModelNew
    and judge it with the gate (on a GPU: compiled and timed against eager and torch.compile; on the CPU: the
    interpreter). No LLM.

    Exits 0 when the problem is solved (correct, every compute op in an argus kernel), 1 otherwise."""
    from argus.eval.executor import ray_address
    from argus.eval.gate import GateOptions
    from argus.frontend import solve as run_solve

    report = Console(stderr=json_file == STDOUT, soft_wrap=True)
    if tune < 0:
        raise typer.BadParameter("--tune takes a number of candidates per kernel (0: no tuning)")
    if turns < 1:
        raise typer.BadParameter("--turns is at least 1")
    if not tune and (parallel is not None or (ray is not None and ray_address(ray) is not None)):
        raise typer.BadParameter("--parallel and --ray apply to the tuning search: give --tune (--budget) N too")
    if learn_across and not tune:
        raise typer.BadParameter("--learn-across applies to the tuning search: give --tune (--budget) N too")
    writer = None
    provider = None
    if llm:
        from argus.agent.providers import make_provider
        from argus.agent.writer import solve_writer

        try:
            provider = make_provider(model=model) if model else make_provider()
        except ArgusError as e:
            user_error(e)
        writer = solve_writer(provider, Path(out).parent / "argus-written" if out else Path("argus-written"),
                              turns=turns, options=GateOptions(device=device, trials=2, baselines=()))  # fmt: skip
    tuner = None
    sizes: dict[str, Any] = {}
    for item in shape:
        sizes.update(parse_assignments(item))
    try:
        with ray_executor(ray if tune else "off") as executor, report.status("capturing") as status:
            if tune:  # its searches gate through the executor (None: the loop's own worker processes)
                from argus.agent.tune import Tuner

                tuner = Tuner(tune, store=store, executor=executor, parallel=parallel, learn_across=learn_across)
            result = run_solve(
                problem,
                sizes=sizes,
                out=out,
                judge=not no_judge,
                options=GateOptions(device=device, trials=trials),
                on_step=lambda text: status.update(text),
                tune=tuner,
                writer=writer,
            )
    except ArgusError as e:
        user_error(e)
    finally:
        if provider is not None:
            provider.close()

    sized = ", ".join(f"{k}={v!r}" for k, v in result.sizes.items())
    report.print(f"{result.problem}{f' [{sized}]' if sized else ''}", markup=False, highlight=False)
    if result.captured:  # torch.export could not: the problem was solved as torch._dynamo's graphs
        report.print(result.captured, markup=False, highlight=False)
    rows = [[k["kernel"], k["family"], " -> ".join(k["ops"])] for k in result.groups]
    rows += [[u["node"], f"not covered: {u['family']}", f"{u['op']}: {u['reason']}"] for u in result.uncovered]
    print_table([Column("kernel", identifier=True), Column("family"), Column("operators")], rows, console=report)
    for k in result.kernels:
        where = "interpreter" if k.checked_on == "cpu" else k.checked_on
        match = "match" if k.interpreter_ok else "MISMATCH"
        check = k.skipped or (
            f"{where}: {match} (max error {_fmt_error(k.interpreter_error)}, tolerance {k.tolerance:g})"
        )
        report.print(f"{k.name}: {k.verdict} ({k.verify_summary}); {check}", markup=False, highlight=False)
    for t in tuner.outcomes if tuner is not None else []:
        chosen = ", ".join(f"{k}={v!r}" for k, v in t.params.items()) or "its defaults"
        timing = f" ({t.start_ms:.4g} -> {t.best_ms:.4g} ms)" if t.start_ms and t.best_ms else ""
        report.print(f"tuned {t.kernel}: {chosen}{timing}; {t.note}", markup=False, highlight=False)
    for u in result.uncovered:
        if u.get("writer"):
            report.print(f"{u['node']}: no written kernel: {u['writer']}", markup=False, highlight=False)
    for name in result.specialized:
        report.print(f"specialized: argument {name} is folded into the graph (other values are refused)", markup=False)
    if result.gate is not None:
        report.print(f"gate: {result.gate.summary()}", markup=False, highlight=False)
        profile = result.gate.stage("profile")
        speedup = profile.details.get("speedup", {}) if profile is not None else {}
        if speedup:
            ratios = ", ".join(f"{v:.3g}x {k}" for k, v in speedup.items() if v is not None)
            report.print(f"speedup (interleaved, same process): {ratios}", markup=False, highlight=False)
    elif result.not_judged and result.not_judged != "--no-judge":
        report.print(f"not judged: {result.not_judged}", markup=False, highlight=False)
    report.print(f"wrote {result.solution}", markup=False, highlight=False)
    report.print(f"{result.problem}: {result.status()}", markup=False, highlight=False)
    if json_file is not None:
        doc = result.to_json()
        if tuner is not None:
            doc["tuned"] = [t.to_json() for t in tuner.outcomes]
        written = emit_json(doc, json_file)
        if written is not None:
            report.print(f"wrote {written}", markup=False, highlight=False)
    raise typer.Exit(0 if result.solved else 1)
