"""`argus runs list|show|export`: the run store from the command line (a thin shell over `argus.agent.store`).

The store is ``--store FILE``, else ``$ARGUS_RUNS_DB``, else ``~/.local/share/argus/runs.db``. Exit status 2 when
the run does not exist. ``export`` and what ``show`` prints are scrubbed of every secret known now
(`argus.agent.providers.secrets.scrub_secrets`), also for a store written before the key was known.

Tables follow `argus.cli.output` (run and candidate ids never cut; piped: tab-separated). ``--json`` alone prints
a document to stdout, ``--json FILE`` writes it to FILE:

* ``list``: a list of ``{"id", "target", "status", "planner", "coder", "model", "candidates", "candidate_statuses",
  "best_reward", "usage", "started", "finished"}`` (times in Unix seconds; usage: ``{"exchanges", "cached",
  "input_tokens", "output_tokens", "cost_usd", "unpriced", "errors"}``);
* ``show``: ``{"run", "usage", "best", "candidates"}``: each candidate ``{"id", "step", "parent", "action",
  "params", "status", "attempts", "reward", "median_ms", "gate", "counterexamples"}`` with gate ``{stage: {"status",
  "code", "reason"}}`` and counterexamples ``[{"check_code", "text", "rendered", "finding"}]`` (rendered: the
  verifier's text; finding: the verifier's JSON, or null when the store kept only the text);
* ``export``: everything recorded (`argus.agent.store.RunStore.export`), also without ``--json``.

``show`` renders each gate stage as ``stage status [CODE]: reason`` and each counterexample as the verifier does
(`argus.verify.report.Finding.render_text`).
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from argus.agent.providers.secrets import scrub_secrets
from argus.cli.errors import user_error
from argus.cli.output import STDOUT, Column, OptionalValueCommand, emit_json, json_option, print_table

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
        user_error(e)


_LIST_KEYS = ("id", "target", "status", "planner", "coder", "model", "candidates", "candidate_statuses",
              "best_reward", "usage", "started", "finished")  # fmt: skip


@app.command("list", cls=OptionalValueCommand)
def list_runs(
    store: str | None = typer.Option(None, "--store", help=_STORE_HELP),
    json_file: str | None = json_option(
        'a list of {"id", "target", "status", "planner", "coder", "model", "candidates", "candidate_statuses", '
        '"best_reward", "usage", "started", "finished"} (times in Unix seconds)'
    ),
) -> None:
    """Every run: id, target, status, candidates, best reward, planner and coder, model, start, LLM tokens and cost.
    Piped: one tab-separated line per run after a header line."""
    path = _path(store)
    if not path.exists():
        if json_file is not None:
            emit_json([], json_file)
        (_err() if json_file == STDOUT else _out()).print(
            f"no runs yet ({path} does not exist)", markup=False, highlight=False
        )
        return
    with _open(store) as runs_store:
        runs = scrub_secrets(runs_store.runs())
    doc = [{k: r.get(k) for k in _LIST_KEYS} for r in runs]
    if json_file == STDOUT:
        emit_json(doc, json_file)
        return
    columns = [
        Column("run", identifier=True),
        Column("target", identifier=True),
        Column("status", identifier=True),
        Column("candidates", justify="right"),
        Column("accepted", justify="right"),
        Column("best reward", justify="right"),
        Column("planner / coder", optional=True),
        Column("started", identifier=True, optional=True),
        Column("took", optional=True),
        Column("model", identifier=True, optional=True),
        Column("tokens in/out", optional=True),
        Column("cost", justify="right", optional=True),
    ]
    rows = []
    for r in runs:
        u = r["usage"]
        rows.append((
            r["id"],
            r["target"],
            r["status"],
            str(r["candidates"]),
            str(r["candidate_statuses"].get("accepted", 0)),
            _num(r["best_reward"], ".3f"),
            f"{r['planner'] or '—'} / {r['coder'] or '—'}",
            _when(r["started"]),
            _duration(r["started"], r["finished"]),
            r["model"] or "—",
            f"{u['input_tokens']}/{u['output_tokens']}" if u["exchanges"] else "—",
            _cost(u),
        ))  # fmt: skip
    print_table(columns, rows, title=f"runs in {path}", console=_out())
    if json_file is not None:
        _err().print(f"wrote {emit_json(doc, json_file)}", markup=False, highlight=False)


_PASSED = ("passed", "accepted")


def _compact(value: Any) -> str:
    """A value as one short line: scalars as they are, containers as compact JSON (never a Python repr)."""
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, separators=(",", ":"), default=str)
    return str(value)


def _reason(result: dict[str, Any]) -> str | None:
    payload = result.get("payload")
    return payload.get("reason") if isinstance(payload, dict) and isinstance(payload.get("reason"), str) else None


def _gate_json(gate: dict[str, Any]) -> dict[str, Any]:
    return {stage: {"status": r["status"], "code": r.get("code"), "reason": _reason(r)} for stage, r in gate.items()}


def _gate_summary(gate: dict[str, Any]) -> str:
    """The table's gate cell: the stages that did not pass (``verify failed VERIFY_VIOLATED``), else ``passed``."""
    if not gate:
        return "—"
    bad = [
        f"{stage} {r['status']}" + (f" {r['code']}" if r.get("code") else "")
        for stage, r in gate.items()
        if r["status"] not in (*_PASSED, "skipped") and not stage.startswith("gate")
    ]
    return "; ".join(bad) or "passed"


def _gate_lines(gate: dict[str, Any]) -> list[str]:
    """Each gate stage as ``stage status [CODE]: reason``, in the gate's order (the verdict last); the stages that
    passed on one line."""
    from argus.eval.results import STAGES

    def place(item: tuple[str, Any]) -> tuple[str, int]:  # "verify@M=64": by size label, then the gate's order
        stage, _, label = item[0].partition("@")
        return label, STAGES.index(stage) if stage in STAGES else len(STAGES)

    stages = sorted(gate.items(), key=place)
    passed = [stage for stage, r in stages if r["status"] == "passed"]
    lines = [f"{', '.join(passed)} passed"] if passed else []
    for stage, r in stages:
        if r["status"] == "passed":
            continue
        name = "verdict" if stage == "gate" else stage.replace("gate@", "verdict@")
        text = f"{name} {r['status']}" + (f" [{r['code']}]" if r.get("code") else "")
        reason = _reason(r)
        lines.append(text + (f": {reason}" if reason else ""))
    return lines


def _params_lines(params: dict[str, Any]) -> list[str]:
    """What a candidate's params say, readably: the kernel it was made from, the planner's reason, the rest as
    ``key=value``."""
    lines, rest = [], []
    for key, value in params.items():
        if key == "arm" and isinstance(value, dict):
            if value.get("policy"):
                rest.append(f"{value['policy']}={_compact(value.get('value'))}")
        elif key == "ref" and isinstance(value, dict):
            kernel = value.get("library") or ":".join(str(v) for v in (value.get("file"), value.get("function")) if v)
            kernel += f" {_compact(value['params'])}" if value.get("params") else ""
            lines.append(f"from: {kernel or '—'}" + (" (generated)" if value.get("generated") else ""))
        elif key == "choice" and isinstance(value, dict):
            if value.get("rationale"):
                source = f" [{value['source']}]" if value.get("source") else ""
                lines.append(f"why{source}: {value['rationale']}")
        elif key not in ("task", "generated"):
            rest.append(f"{key}={_compact(value)}")
    return ([f"params: {', '.join(rest)}"] if rest else []) + lines


def _counterexample_text(x: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
    """A stored counterexample rendered as the verifier renders it (`Finding.render_text`) when the store kept the
    finding, else its check code and text; and the finding's JSON (or None)."""
    from argus.diagnostics import ArgusError
    from argus.verify.report import Finding

    payload = x.get("payload")
    if isinstance(payload, dict) and payload.get("counterexample") and payload.get("verdict"):
        try:
            return Finding.from_json(payload).render_text(), payload
        except (ArgusError, KeyError, TypeError, ValueError):  # an older or foreign payload: its text below
            pass
    text = f"[{x.get('check_code') or '?'}] {x.get('text') or ''}".rstrip()
    if isinstance(payload, dict) and payload:
        text += "\n  " + ", ".join(f"{k}={_compact(v)}" for k, v in payload.items())
    return text, None


def show(
    run_id: str = typer.Argument(..., help="the run's id (argus runs list)"),
    store: str | None = typer.Option(None, "--store", help=_STORE_HELP),
    json_file: str | None = json_option(
        '{"run", "usage", "best", "candidates"}; each candidate {"id", "step", "parent", "action", "params", '
        '"status", "attempts", "reward", "median_ms", "gate", "counterexamples"}'
    ),
) -> None:
    """One run: its settings, a table of candidates (step, id, action, status, the gate stages that did not pass,
    time, counterexamples, reward), then per candidate its gate stages and counterexamples as the verifier renders
    them, and LLM usage."""
    from argus.agent.store import StoreError

    with _open(store) as runs_store:
        try:
            state = runs_store.read_run(run_id)
        except StoreError as e:
            user_error(e)
        timings = runs_store.timings(run_id)
        counterexamples = scrub_secrets(runs_store.counterexamples(run_id))
    run = scrub_secrets(state.run)
    run.pop("owner", None)
    median: dict[str, float | None] = {}
    for t in timings:
        median.setdefault(t["candidate_id"], t["median_ms"])
    found: dict[str, list[tuple[str, dict[str, Any] | None, dict[str, Any]]]] = {}
    for x in counterexamples:
        found.setdefault(x["candidate_id"], []).append((*_counterexample_text(x), x))
    candidates = [scrub_secrets(c.to_json()) for c in state.candidates]
    best = state.best()
    if json_file is not None:
        doc = {
            "run": run,
            "usage": state.usage,
            "best": best.id if best is not None else None,
            "candidates": [
                {"id": c["id"], "step": c["step"], "parent": c["parent_id"], "action": c["action"],
                 "params": c["params"], "status": c["status"], "attempts": c["attempts"], "reward": c["reward"],
                 "median_ms": median.get(c["id"]), "gate": _gate_json(c["gate"]),
                 "counterexamples": [{"check_code": x["check_code"], "text": x["text"], "rendered": text,
                                      "finding": finding} for text, finding, x in found.get(c["id"], [])]}
                for c in candidates
            ],
        }  # fmt: skip
        written = emit_json(doc, json_file)
        if written is None:
            return
    say = lambda text="": _out().print(text, markup=False, highlight=False)  # noqa: E731
    say(
        f"run {run['id']}: {run['target']} — {run['status']}, planner {run['planner'] or '—'}, coder "
        f"{run['coder'] or '—'}, model {run['model'] or '—'}; started {_when(run['started'])}, "
        f"finished {_when(run['finished'])}"
    )
    budget = {k: v for k, v in (run["budget"] or {}).items() if v is not None}
    if budget:
        say(f"budget: {', '.join(f'{k}={v}' for k, v in budget.items())}")
    say()
    columns = [
        Column("step", justify="right"),
        Column("candidate", identifier=True),
        Column("action", identifier=True),
        Column("status", identifier=True),
        Column("time (ms)", justify="right"),
        Column("reward", justify="right"),
        Column("gate", optional=True),
        Column("cex", justify="right", optional=True),
        Column("parent", identifier=True, optional=True),
    ]
    rows = [
        (str(c["step"]), c["id"], c["action"] or "—",
         c["status"] + (f" (attempt {c['attempts']})" if c["attempts"] > 1 else ""), _num(median.get(c["id"])),
         _num(c["reward"], ".3f"), _gate_summary(c["gate"]), str(len(found.get(c["id"], [])) or "—"),
         c["parent_id"] or "—")
        for c in candidates
    ]  # fmt: skip
    print_table(columns, rows, title=f"{len(candidates)} candidates", console=_out())
    for c in candidates:
        say()
        parent = f", from {c['parent_id']}" if c["parent_id"] else ""
        reward = _num(c["reward"], ".3f")
        say(f"{c['id']} (step {c['step']}{parent}): {c['action'] or '—'} — {c['status']}, reward {reward}")
        for line in _params_lines(c["params"] or {}):
            say(f"  {line}")
        gate = _gate_lines(c["gate"])
        if gate:
            say("  gate:")
            for line in gate:
                say(f"    {line}")
        for i, (text, _, x) in enumerate(found.get(c["id"], []), 1):
            say(f"  counterexample {i} of {len(found[c['id']])} ({x['check_code'] or '?'}):")
            for line in text.splitlines():
                say(f"    {line}" if line else "")
    say()
    if best is not None:
        say(f"best: {best.id} (step {best.step}, reward {_num(best.reward, '.3f')})")
    if state.to_gate:
        say(f"not finished: {', '.join(c.id for c in state.to_gate)} (gated again when the run resumes)")
    u = state.usage
    if u["exchanges"]:
        say(
            f"LLM: {u['exchanges']} exchanges ({u['cached']} from the cache, {u['errors']} failed), "
            f"{u['input_tokens']} input / {u['output_tokens']} output tokens, cost {_cost(u)}"
        )
    if json_file is not None:
        _err().print(f"wrote {written}", markup=False, highlight=False)


def export(
    run_id: str = typer.Argument(..., help="the run's id (argus runs list)"),
    json_file: str | None = json_option(
        '{"format": "argus-run", "schema_version", "run", "usage", "candidates", "timings", "counterexamples", '
        '"llm_exchanges"} (without --json: stdout too)'
    ),
    store: str | None = typer.Option(None, "--store", help=_STORE_HELP),
) -> None:
    """Everything recorded for a run (settings, candidates with sources and gate results, timings,
    counterexamples, rewards, LLM exchanges) as JSON, to stdout or (--json FILE) to FILE."""
    from argus.agent.store import StoreError

    with _open(store) as runs_store:
        try:
            data = runs_store.export(run_id)
        except StoreError as e:
            user_error(e)
    written = emit_json(data, json_file or STDOUT)
    if written is not None:
        _err().print(f"wrote {written}", markup=False, highlight=False)


app.command("show", cls=OptionalValueCommand)(show)
app.command("export", cls=OptionalValueCommand)(export)
