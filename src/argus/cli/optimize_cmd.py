"""`argus optimize NAME|FILE.py:function`: the optimization loop from the command line (a thin shell over
`argus.agent.loop.optimize`), with a line per candidate as it is gated, and a final report: the best kernel and its
parameters, the trajectory table, and optionally a PNG plot of speedup against step.

Without a GPU, times come from the static cost model (`argus.eval.costmodel`) and the report says they are
estimates. Exit status: 0 when the run finished, 1 when it failed (the starting kernel was rejected), 2 on a usage
error (unknown kernel, no LLM configured for ``--planner llm`` / ``--coder llm``, unknown run).

What it prints and the ``--json`` file are scrubbed of secrets (`argus.agent.providers.secrets.scrub_secrets`): a
rationale or an error that quotes a key shows ``[REDACTED:NAME]``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from argus.agent.providers.secrets import scrub_secrets
from argus.cli.executor_options import parallel_option, ray_executor, ray_option
from argus.cli.output import STDOUT, Column, emit_json, json_option, print_table


def _fmt(value: Any, spec: str = ".4g", suffix: str = "") -> str:
    return "—" if value is None else f"{value:{spec}}{suffix}"


def print_report(result: Any, console: Console) -> None:
    """The final report: what was optimized, the best kernel, the trajectory table."""
    estimated = result.metric == "cost_model"
    unit = "est. ms" if estimated else "ms"
    caption = "est. ms: the static cost model's estimate (no GPU here), not a measurement" if estimated else None
    columns = [
        Column("step", justify="right", min_width=4),
        Column("action", identifier=True),
        Column("kernel", identifier=True),
        Column("params", optional=True),
        Column("verdict", min_width=8),
        Column("reward", justify="right", min_width=7, optional=True),
        Column(unit, justify="right", min_width=7),
        Column("speedup", justify="right", min_width=7),
    ]
    rows = [
        [
            row["step"],
            row["action"],
            row["kernel"],
            json.dumps(row["params"], separators=(",", ":")) if row["params"] else "",
            row["status"],
            _fmt(row["reward"], "+.3f"),
            _fmt(row["ms"], ".4g"),
            _fmt(row["speedup"], ".2f", "x"),
        ]
        for row in result.trajectory
    ]
    console.print(f"run {result.run_id}: {result.target}", markup=False, highlight=False)  # piped output keeps it too
    if result.priors is not None:
        p = result.priors
        console.print(
            f"started from {len(p.get('arms') or {})} action(s) learned on earlier runs of {p['family']} problems "
            f"(shape class {p['shape']}; argus.agent.priors)",
            markup=False,
            highlight=False,
        )
    print_table(columns, rows, caption=caption, console=console)
    console.print(f"stopped: {result.stop_reason}", markup=False)
    best = result.best
    if best is None:
        console.print("no accepted candidate", style="red")
        return
    kind = "estimated by the static cost model (not measured)" if estimated else "measured on the GPU"
    console.print(
        f"best: step {best['step']} {best['kernel']} params {json.dumps(best['params'], sort_keys=True)} "
        f"({best['action']}): {_fmt(best['ms'], '.4g')} ms vs {_fmt(result.start_ms, '.4g')} ms at the start, "
        f"{_fmt(result.speedup, '.2f')}x — {kind}",
        markup=False,
    )
    if best.get("source"):
        console.print(f"its generated source is in the run store (argus runs export {result.run_id})", markup=False)


def plot_trajectory(result: Any, path: Path) -> None:
    """A PNG of speedup over the start against step: each candidate (accepted: dot; rejected/invalid: cross at
    the bottom) and the best so far (line). Needs Pillow (``pip install "argus-kernels[viz]"``)."""
    from PIL import Image, ImageDraw

    width, height, margin = 900, 520, 70
    image = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(image)
    rows = result.trajectory
    steps = max([r["step"] for r in rows] + [1])
    values = [r["speedup"] for r in rows if r["speedup"]]
    top = max(values + [1.0]) * 1.1

    def xy(step: float, value: float) -> tuple[float, float]:
        x = margin + (width - 2 * margin) * step / steps
        y = height - margin - (height - 2 * margin) * value / top
        return x, y

    draw.line([xy(0, 0), xy(steps, 0)], fill="black")
    draw.line([xy(0, 0), xy(0, top)], fill="black")
    for i in range(0, 6):
        v = top * i / 5
        x, y = xy(0, v)
        draw.line([(x - 4, y), (x, y)], fill="black")
        draw.text((x - 45, y - 6), f"{v:.1f}x", fill="black")
    for s in range(0, steps + 1, max(1, steps // 10)):
        x, y = xy(s, 0)
        draw.text((x - 4, y + 6), str(s), fill="black")
    best, line = 0.0, []
    for r in rows:
        if r["speedup"]:
            x, y = xy(r["step"], r["speedup"])
            draw.ellipse([x - 4, y - 4, x + 4, y + 4], fill="#1f77b4")
            best = max(best, r["speedup"])
        else:
            x, y = xy(r["step"], 0)
            draw.line([(x - 4, y - 4), (x + 4, y + 4)], fill="#d62728", width=2)
            draw.line([(x - 4, y + 4), (x + 4, y - 4)], fill="#d62728", width=2)
        if best:
            line.append(xy(r["step"], best))
    if len(line) > 1:
        draw.line(line, fill="#2ca02c", width=2)
    metric = "estimated by the cost model (no GPU)" if result.metric == "cost_model" else "measured"
    draw.text((margin, 20), f"argus optimize {result.target}: speedup over the start ({metric})", fill="black")
    draw.text((width // 2 - 20, height - 30), "step", fill="black")
    image.save(path)


def optimize(
    target: str | None = typer.Argument(None, help="a library kernel (argus kernels list) or FILE.py:function"),
    planner: str = typer.Option("bandit", "--planner", help="bandit (UCB1, no LLM), thompson (no LLM) or llm"),
    coder: str = typer.Option("transform", "--coder", help="transform (no LLM) or llm"),
    model: str | None = typer.Option(None, "--model", help="the LLM model (else ARGUS_LLM_MODEL / the config file)"),
    budget: int | None = typer.Option(None, "--budget", help="gated candidates after the start (default 20)"),
    wall_time: float | None = typer.Option(None, "--wall-time", help="seconds of wall time for this session"),
    max_tokens: int | None = typer.Option(None, "--max-tokens", help="LLM tokens for the whole run"),
    max_cost: float | None = typer.Option(None, "--max-cost", help="LLM cost in US dollars for the whole run"),
    resume: str | None = typer.Option(None, "--resume", help="continue the run RUN after a crash"),
    force: bool = typer.Option(
        False,
        "--force",
        help="with --resume: take over a run whose writer is gone (e.g. a process on another machine that was killed)",
    ),
    store: str | None = typer.Option(None, "--store", help="the run store (default: $ARGUS_RUNS_DB)"),
    plot: str | None = typer.Option(None, "--plot", help="write a PNG of speedup against step"),
    json_out: str | None = json_option(
        '{"run_id", "store", "target", "metric", "start_ms", "best", "speedup", "trajectory", "stop_reason", '
        '"status", "priors"} (alone: the progress and report go to stderr)'
    ),
    seed: int = typer.Option(0, "--seed", help="the planner's seed"),
    shape: str = typer.Option(
        "", "--shape", help="your kernel's problem sizes, e.g. M=100,N=72 (default: its sizes= on @argus.kernel)"
    ),
    reference: str = typer.Option(
        "", "--reference", help="FILE.py:function computing your kernel's outputs (default: its reference=)"
    ),
    no_isolate: bool = typer.Option(False, "--no-isolate", help="gate library/transform candidates in this process"),
    ray: str | None = ray_option("gate the candidates", "a local worker process"),
    parallel: int | None = parallel_option(
        "candidates in flight at once (default 1; a resumed run keeps its own): gated through --ray, else a local "
        "pool of K worker processes; the run stays reproducible with --seed"
    ),
    learn_across: bool = typer.Option(
        False,
        "--learn-across",
        help="start the planner from what the store's earlier runs of the same family and shape class learned",
    ),
) -> None:
    """Optimize a kernel: plan, materialize, gate, reward, repeat until the budget; report the best kernel."""
    from argus.agent.loop import Budget, RunInterrupted, StepEvent
    from argus.agent.loop import optimize as run_optimize
    from argus.cli.errors import user_error
    from argus.diagnostics import ArgusError
    from argus.kernels.registry import parse_shape

    console = Console(stderr=json_out == STDOUT, soft_wrap=True)  # --json alone: stdout holds the JSON only
    err = Console(stderr=True, soft_wrap=True)
    if target is None and resume is None:
        err.print("give a kernel (NAME or FILE.py:function) or --resume RUN")
        raise typer.Exit(2)
    provider = None
    try:
        kinds = (planner, coder)
        if resume is not None:  # a resumed run keeps its own planner and coder (and model, unless --model)
            from argus.agent.store import RunStore

            with RunStore(store) as runs:
                stored = runs.read_run(resume).run
            config = stored.get("config") or {}
            kinds = (config.get("planner"), config.get("coder"))
            model = model or stored.get("model")
        if "llm" in kinds:
            from argus.agent.providers import make_provider

            provider = make_provider(model=model) if model else make_provider()
    except ArgusError as e:
        user_error(e)
    given = budget is not None or wall_time is not None or max_tokens is not None or max_cost is not None
    if budget is None and resume is None:
        budget = 20
    total = budget if budget is not None else "?"
    status: list[Any] = []  # the live "gating ..." spinner, while a gate runs

    def on_step(e: StepEvent) -> None:
        e.rationale, e.message = scrub_secrets(e.rationale), scrub_secrets(e.message)
        if e.kind == "gating":
            if e.step == 0:
                console.print(f"gating the starting kernel ({e.candidate})", markup=False, highlight=False)
            while status:  # one spinner at a time: with --parallel, the latest gate started
                status.pop().stop()
            also = f"; {e.message}" if e.message else ""  # with --parallel: how many are in flight
            status.append(console.status(f"gating {e.candidate} (compile, verify, correct, profile{also}) ..."))
            status[-1].start()
            return
        while status:
            status.pop().stop()
        if e.kind == "planned":
            who = f" [{e.source}]" if e.source and e.source != "bandit" else ""
            note = f" (fallback: {e.message})" if e.message else ""
            console.print(f"step {e.step}/{total}: {e.arm}{who} — {e.rationale}{note}", markup=False, highlight=False)
        elif e.kind == "finished":
            ms = _fmt(e.ms, ".4g", " ms")
            best = _fmt(e.best_speedup, ".2f", "x")
            what = "start" if e.step == 0 else e.verdict
            console.print(
                f"  {e.candidate}: {what}, {ms}, reward {_fmt(e.reward, '+.3f')}; best so far {best}",
                markup=False,
                highlight=False,
            )
        elif e.kind == "invalid":
            console.print(f"  {e.candidate}: invalid — {e.message}", markup=False, highlight=False)

    try:
        with ray_executor(ray) as executor:  # None: the loop's own worker process (K of them with --parallel K)
            result = run_optimize(
                target,
                planner=planner,
                coder=coder,
                budget=Budget(candidates=budget, wall_s=wall_time, tokens=max_tokens, cost_usd=max_cost)
                if given or resume is None
                else None,
                store=store,
                resume=resume,
                force=force,
                provider=provider,
                seed=seed,
                on_step=on_step,
                isolate=not no_isolate,
                sizes=parse_shape(shape) or None,
                reference=reference or None,
                executor=executor,
                parallel=parallel,
                priors=learn_across,
            )
    except ArgusError as e:
        user_error(e)
    except RunInterrupted as e:
        while status:
            status.pop().stop()
        err.print(
            f"interrupted: run {e.run_id} is saved in {e.store}; continue it with\n  {e.resume_command}",
            markup=False,
            highlight=False,
        )
        raise typer.Exit(130) from None
    finally:
        while status:
            status.pop().stop()
        if provider is not None:
            provider.close()
    print_report(result, console)
    if plot is not None:
        try:
            plot_trajectory(result, Path(plot))
            console.print(f"plot: {plot}", markup=False)
        except ImportError:
            err.print('--plot needs Pillow: pip install "argus-kernels[viz]"')
    if json_out is not None:
        emit_json(scrub_secrets(result.to_json()), json_out)
    raise typer.Exit(0 if result.status == "finished" else 1)
