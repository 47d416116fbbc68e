"""`argus runs list|show|export`: the run store from the command line (a thin shell over `argus.agent.store`).

The store is ``--store FILE``, else ``$ARGUS_RUNS_DB``, else ``~/.local/share/argus/runs.db``. Exit status 2 when
the run does not exist. ``export`` and what ``show`` prints are scrubbed of every secret known now
(`argus.agent.providers.secrets.scrub_secrets`), also for a store written before the key was known.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from argus.agent.providers.secrets import scrub_secrets

app = typer.Typer(help="Optimization runs recorded in the run store.", no_args_is_help=True)


def _err() -> Console:
    return Console(stderr=True, soft_wrap=True)


def _out() -> Console:  # made per command, so that the terminal's width (COLUMNS) at that time applies
    return Console(soft_wrap=True)


_STORE_HELP = "the run store (default: $ARGUS_RUNS_DB, else ~/.local/share/argus/runs.db)"


def _path(store: str | None) -> Path:
    from argus.agent.store import default_runs_path

    return Path(store).expanduser() if store else default_runs_path()


def _when(t: float | None) -> str:
    return dt.datetime.fromtimestamp(t).strftime("%Y-%m-%d %H:%M:%S") if t else "—"


def _duration(start: float | None, end: float | None) -> str:
    if not start or not end:
        return "—"
    s = int(end - start)
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


def _num(value: Any, spec: str = ".4g", prefix: str = "") -> str:
    return "—" if value is None else f"{prefix}{value:{spec}}"


def _cost(usage: dict[str, Any]) -> str:
    if not usage.get("exchanges"):
        return "—"
    text = f"${usage['cost_usd']:.4f}"
    return text + (f" (+{usage['unpriced']} unpriced)" if usage.get("unpriced") else "")


def _open(store: str | None) -> Any:
    from argus.agent.store import RunStore, StoreError

    path = _path(store)
    if not path.exists():
        _err().print(f"no run store at {path}", markup=False, highlight=False)
        raise typer.Exit(2)
    try:
        return RunStore(path)
    except StoreError as e:  # corrupted, locked, unreadable: the code, the file and what to do, no traceback
        _err().print(str(e), markup=False, highlight=False)
        raise typer.Exit(2) from None


@app.command("list")
def list_runs(store: str | None = typer.Option(None, "--store", help=_STORE_HELP)) -> None:
    """Every run: target, status, planner and coder, candidates, best reward, LLM tokens and cost."""
    path = _path(store)
    if not path.exists():
        _out().print(f"no runs yet ({path} does not exist)", markup=False, highlight=False)
        return
    with _open(store) as runs_store:
        runs = runs_store.runs()
    table = Table(title=f"runs in {path}")
    for col in ("run", "target", "status", "planner / coder", "model", "candidates", "accepted", "best reward",
                "tokens in/out", "cost", "started", "took"):  # fmt: skip
        table.add_column(col, justify="right" if col in ("candidates", "accepted", "best reward", "cost") else "left")
    for r in runs:
        u = r["usage"]
        table.add_row(
            r["id"],
            r["target"],
            r["status"],
            f"{r['planner'] or '—'} / {r['coder'] or '—'}",
            r["model"] or "—",
            str(r["candidates"]),
            str(r["candidate_statuses"].get("accepted", 0)),
            _num(r["best_reward"], ".3f"),
            f"{u['input_tokens']}/{u['output_tokens']}" if u["exchanges"] else "—",
            _cost(u),
            _when(r["started"]),
            _duration(r["started"], r["finished"]),
        )
    _out().print(table)


def _gate_cell(gate: dict[str, Any]) -> str:
    parts = []
    for stage, result in gate.items():
        code = f" {result['code']}" if result.get("code") and result["status"] != "passed" else ""
        parts.append(f"{stage}:{result['status']}{code}")
    return ", ".join(parts) or "—"


def show(
    run_id: str = typer.Argument(..., help="the run's id (argus runs list)"),
    store: str | None = typer.Option(None, "--store", help=_STORE_HELP),
) -> None:
    """One run: its settings, every candidate (step, action, verdict, gate stages, reward), counterexamples and
    LLM usage."""
    from argus.agent.store import StoreError

    with _open(store) as runs_store:
        try:
            state = runs_store.read_run(run_id)
        except StoreError as e:
            _err().print(str(e), markup=False, highlight=False)
            raise typer.Exit(2) from None
        timings = runs_store.timings(run_id)
        counterexamples = runs_store.counterexamples(run_id)
    run = scrub_secrets(state.run)
    _out().print(
        f"run {run['id']}: {run['target']} — {run['status']}, planner {run['planner'] or '—'}, coder "
        f"{run['coder'] or '—'}, model {run['model'] or '—'}; started {_when(run['started'])}, "
        f"finished {_when(run['finished'])}",
        markup=False,
        highlight=False,
    )
    if run["budget"]:
        budget = ", ".join(f"{k}={v}" for k, v in run["budget"].items())
        _out().print(f"budget: {budget}", markup=False, highlight=False)
    median = {}
    for t in timings:
        median.setdefault(t["candidate_id"], t["median_ms"])
    cex_count: dict[str, int] = {}
    for x in counterexamples:
        cex_count[x["candidate_id"]] = cex_count.get(x["candidate_id"], 0) + 1
    table = Table(title=f"{len(state.candidates)} candidates")
    for col in ("step", "candidate", "parent", "action", "params", "status", "gate", "time (ms)", "cex", "reward"):
        table.add_column(col, justify="right" if col in ("step", "time (ms)", "cex", "reward") else "left")
    for c in state.candidates:
        table.add_row(*scrub_secrets([
            str(c.step),
            c.id,
            c.parent_id or "—",
            c.action or "—",
            ", ".join(f"{k}={v}" for k, v in c.params.items()) or "—",
            c.status + (f" (attempt {c.attempts})" if c.attempts > 1 else ""),
            _gate_cell(c.gate),
            _num(median.get(c.id)),
            str(cex_count.get(c.id, 0) or "—"),
            _num(c.reward, ".3f"),
        ]))  # fmt: skip
    _out().print(table)
    best = state.best()
    if best is not None:
        _out().print(f"best: {best.id} (step {best.step}, reward {_num(best.reward, '.3f')})", markup=False)
    if state.to_gate:
        _out().print(
            f"not finished: {', '.join(c.id for c in state.to_gate)} (gated again when the run resumes)", markup=False
        )
    u = state.usage
    if u["exchanges"]:
        _out().print(
            f"LLM: {u['exchanges']} exchanges ({u['cached']} from the cache, {u['errors']} failed), "
            f"{u['input_tokens']} input / {u['output_tokens']} output tokens, cost {_cost(u)}",
            markup=False,
            highlight=False,
        )


def export(
    run_id: str = typer.Argument(..., help="the run's id (argus runs list)"),
    json_file: str | None = typer.Option(None, "--json", help="write to this file (default: standard output)"),
    store: str | None = typer.Option(None, "--store", help=_STORE_HELP),
) -> None:
    """Everything recorded for a run (settings, candidates with sources and gate results, timings,
    counterexamples, rewards, LLM exchanges) as JSON."""
    from argus.agent.store import StoreError

    with _open(store) as runs_store:
        try:
            data = runs_store.export(run_id)
        except StoreError as e:
            _err().print(str(e), markup=False, highlight=False)
            raise typer.Exit(2) from None
    text = json.dumps(data, indent=2)
    if json_file is None:
        typer.echo(text)
    else:
        Path(json_file).write_text(text + "\n")
        _out().print(f"wrote {json_file}", markup=False, highlight=False)


app.command("show")(show)
app.command("export")(export)
