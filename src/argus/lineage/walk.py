"""The backward walk (KLineage): from an expert kernel, repeatedly try the applicable simplification operators
(`argus.lineage.operators`, in order), accept the first candidate that passes the mechanism check and the gate
(`argus.eval.gate_kernel`: compile, verify, correct; the profile stage times it on a GPU, or carries the static
cost model's estimate on a CPU), record its effect (profile before and after), and go on from it — until no
mechanism is left (a naive kernel), no operator passes, or a limit is hit. The result is a `Lineage`: the
kernels in order with the evidence of every transition, every rejected candidate with its reason, and why the
walk stopped; it is plain JSON (`Lineage.to_json`, `Lineage.write`).
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import pathlib
from dataclasses import dataclass, field
from typing import Any

from argus.lineage.mechanisms import MECHANISMS, blockers, describe, is_naive, state
from argus.lineage.operators import Check, Operator, check, features_of, library_variant, operators
from argus.lineage.variants import Variant, display_name, task_for


def default_gate_options() -> Any:
    """Five correctness trials (the gate's minimum) and, without a GPU, the cost model's estimate for an
    H100-SXM in the profile stage."""
    from argus.eval import GateOptions

    names = {f.name for f in dataclasses.fields(GateOptions)}
    return GateOptions(trials=5, **({"cost_model": "H100-SXM"} if "cost_model" in names else {}))


def gate_record(result: Any) -> dict[str, Any]:
    """The compact, JSON-ready record of a `GateResult`: verdict, summary, each stage's status, code, reason and
    seconds, and the profile stage's numbers (GPU timing, or the cost model's estimate)."""
    stages = []
    profile: dict[str, Any] = {}
    warnings: dict[str, int] = {}
    for s in result.stages:
        if s.stage == "verify":
            report = (s.details or {}).get("report") or {}
            for f in report.get("findings", []) if isinstance(report, dict) else []:
                if f.get("severity") == "warning":
                    warnings[f["code"]] = warnings.get(f["code"], 0) + 1
        stages.append(
            {
                "stage": s.stage,
                "status": str(getattr(s.status, "value", s.status)),
                "code": s.code,
                "reason": s.reason,
                "seconds": round(float(s.seconds or 0.0), 3),
            }
        )
        if s.stage == "profile":
            profile = _profile_numbers(s)
    if profile.get("source") == "gpu":
        # a timing's stage does not name the GPU or the sizes: the gate result does
        gpu = (result.environment or {}).get("gpu")
        profile["gpu"] = profile.get("gpu") or (gpu.get("name") if isinstance(gpu, dict) else gpu)
        profile["sizes"] = profile.get("sizes") or dict(result.sizes)
    return {
        "verdict": result.verdict,
        "summary": result.summary(),
        "sizes": dict(result.sizes),
        "stages": stages,
        "profile": profile,
        "verifier_warnings": warnings,
    }


def _profile_numbers(stage: Any) -> dict[str, Any]:
    d = stage.details or {}
    if "cost_model" in d:
        est = d["cost_model"]
        return {
            "source": "cost model",
            "estimate": True,
            "ms": est.get("ms"),
            "tflops": est.get("tflops"),
            "bound": est.get("bound"),
            "gpu": est.get("gpu"),
            "sizes": est.get("sizes"),
        }
    timing = d.get("timing") or d.get("candidate") or {}
    median = timing.get("median_ms") if isinstance(timing, dict) else None
    if median is None:
        median = d.get("median_ms")
    if median is not None:
        return {
            "source": "gpu",
            "estimate": False,
            "ms": median,
            "tflops": d.get("tflops"),
            "gpu": (d.get("device") or {}).get("name") if isinstance(d.get("device"), dict) else d.get("gpu"),
            "sizes": d.get("sizes"),
        }
    return {"source": "none", "why": f"{stage.code}: {stage.reason}"}


@dataclass
class Step:
    """One accepted simplification: `before` -> `after` by `operator`, with the mechanism check, the gate
    record of `after` and the effect (profile before and after)."""

    index: int
    operator: dict[str, Any]
    before: dict[str, Any]
    after: dict[str, Any]
    note: str
    check: dict[str, Any]
    gate: dict[str, Any]
    effect: dict[str, Any]
    mechanisms_after: str

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class Lineage:
    """The result of a walk. `kernels`: the variants in order, expert first (`variants` holds the live objects
    for skill extraction; JSON keeps their descriptions and fingerprints). `stopped`: why the walk ended
    (``naive``, ``no_operator_passes``, ``max_steps``, ``max_rejections``, ``expert_rejected``)."""

    expert: str
    task: str
    sizes: dict[str, int]
    gate_options: dict[str, Any]
    kernels: list[dict[str, Any]] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    rejections: list[dict[str, Any]] = field(default_factory=list)
    blocked: list[dict[str, Any]] = field(default_factory=list)
    expert_gate: dict[str, Any] = field(default_factory=dict)
    stopped: dict[str, str] = field(default_factory=dict)
    created: str = ""
    variants: list[Variant] = field(default_factory=list, repr=False)

    @property
    def reached_naive(self) -> bool:
        return self.stopped.get("reason") == "naive"

    def to_json(self) -> dict[str, Any]:
        from argus._version import __version__

        return {
            "schema": 1,
            "kind": "argus.lineage",
            "argus": __version__,
            "created": self.created,
            "expert": self.expert,
            "task": self.task,
            "sizes": self.sizes,
            "gate_options": self.gate_options,
            "expert_gate": self.expert_gate,
            "kernels": self.kernels,
            "steps": [s.to_json() for s in self.steps],
            "rejections": self.rejections,
            "blocked": self.blocked,
            "stopped": self.stopped,
        }

    def write(self, path: str | pathlib.Path) -> pathlib.Path:
        path = pathlib.Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_json(), indent=2, default=str) + "\n")
        return path

    def table(self) -> str:
        """The lineage as a text table: one row per kernel, with the step that produced it and its effect."""
        rows = [("#", "kernel", "operator (mechanism removed)", "gate", "profile ms", "x slower", "mechanisms left")]
        first = self.expert_gate.get("profile", {})
        rows.append(
            (
                "0",
                self.kernels[0]["name"] if self.kernels else self.expert,
                "(expert)",
                self.expert_gate.get("verdict", "?"),
                _ms(first.get("ms")),
                "",
                "",
            )
        )
        for s in self.steps:
            eff = s.effect
            rows.append(
                (
                    str(s.index),
                    s.after["name"],
                    f"{s.operator['id']} ({s.operator['mechanism']})",
                    s.gate["verdict"],
                    _ms(eff.get("after_ms")),
                    f"{eff['slowdown']:.2f}" if eff.get("slowdown") else "-",
                    s.mechanisms_after,
                )
            )
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
        lines.insert(1, "  ".join("-" * w for w in widths))
        src = next((s.effect.get("source") for s in self.steps if s.effect.get("source")), first.get("source"))
        lines.append("")
        lines.append(
            f"stopped: {self.stopped.get('reason')} ({self.stopped.get('detail', '')}); "
            f"{len(self.steps)} steps accepted, {len(self.rejections)} candidates rejected; profile: {src or 'none'}"
            + (" (estimates, not measurements)" if src == "cost model" else "")
        )
        return "\n".join(lines)


def _ms(v: Any) -> str:
    return f"{v:.4g}" if isinstance(v, int | float) else "-"


def as_variant(kernel: Any, task: str | None = None, params: dict[str, Any] | None = None) -> Variant:
    """A library kernel or bridge name, ``FILE.py:function``, an ``@argus.kernel`` or a `Variant`."""
    if isinstance(kernel, Variant):
        return kernel
    if isinstance(kernel, str):
        from argus.kernels.registry import load
        from argus.lineage.bridges import BRIDGES

        if kernel in BRIDGES or ":" not in kernel:
            v = library_variant(kernel, params)
            if task:
                v.task = task
            return v
        kernel = load(kernel)
    if hasattr(kernel, "kernel") and hasattr(kernel, "make"):  # a LibraryKernel
        return as_variant(kernel.name, task, {**kernel.params, **(params or {})})
    params = dict(params or {})
    return Variant(
        display_name(kernel.name, params, kernel.defaults, []), kernel, params, task or task_for(kernel, params), None
    )


class _Gate:
    """The gate with a memo by (fingerprint, params, task): a kernel is gated once per walk."""

    def __init__(self, options: Any, sizes: dict[str, dict[str, int]] | None) -> None:
        self.options = options
        self.sizes = sizes or {}
        self.memo: dict[tuple, Any] = {}

    def __call__(self, v: Variant) -> Any:
        from argus.eval import KernelCandidate, gate_kernel
        from argus.tasks import get_task

        key = (v.fingerprint(), v.task, repr(sorted(v.params.items())))
        if key not in self.memo:
            task = get_task(v.task)
            # without sizes for the task, a GPU times every kernel of the walk at options.cost_sizes (the expert
            # task's first benchmark size), so that a step's effect compares like with like where the task changes
            self.memo[key] = gate_kernel(
                task,
                KernelCandidate(v.name, v.kernel, dict(v.params)),
                sizes=self.sizes.get(v.task),
                options=self.options,
            )
        return self.memo[key]


def _effect(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    b, a = before.get("profile", {}), after.get("profile", {})
    out: dict[str, Any] = {"source": a.get("source") or b.get("source"), "estimate": bool(a.get("estimate"))}
    out.update(
        {
            "before_ms": b.get("ms"),
            "after_ms": a.get("ms"),
            "before_bound": b.get("bound"),
            "after_bound": a.get("bound"),
            "gpu": a.get("gpu") or b.get("gpu"),
            "sizes": a.get("sizes") or b.get("sizes"),
        }
    )
    if isinstance(b.get("ms"), int | float) and isinstance(a.get("ms"), int | float) and b["ms"] > 0:
        out["slowdown"] = a["ms"] / b["ms"]
    else:
        out["slowdown"] = None
        out["why"] = a.get("why") or b.get("why") or "no profile numbers"
    return out


def walk(
    kernel: Any,
    task: str | None = None,
    *,
    params: dict[str, Any] | None = None,
    gate_options: Any = None,
    sizes: dict[str, dict[str, int]] | None = None,
    max_steps: int = 16,
    max_rejections: int = 24,
    ops: tuple[Operator, ...] | None = None,
    code_check: bool = True,
    progress: Any = None,
) -> Lineage:
    """Walk `kernel` (a library name, ``FILE.py:function``, an ``@argus.kernel`` or a `Variant`) backward.

    Every step: the operators that apply to the kernel as it stands (its mechanism levels) and are not blocked
    by a dependent mechanism, in order; each candidate they propose goes through `operators.check` (exactly the
    operator's mechanism removed, in the IR and in the generated code) and then the gate; the first that passes
    both is accepted. `sizes`: the gate's problem sizes per task name (default: each task's CPU sizes without a
    GPU; on a GPU the expert task's first benchmark size for every kernel, so that effects compare one
    size). `progress(text)` is called with a line per event. The walk never raises for a rejected candidate: it is
    recorded in `Lineage.rejections` with its stage and reason."""
    say = progress or (lambda text: None)
    current = as_variant(kernel, task, params)
    options = gate_options if gate_options is not None else default_gate_options()
    if hasattr(options, "cost_sizes") and options.cost_model and not options.cost_sizes:
        # one problem size for every estimate of the walk: the expert task's first benchmark size
        from argus.tasks import get_task

        bench = get_task(current.task).bench_sizes
        if bench:
            options = dataclasses.replace(options, cost_sizes=dict(bench[0]))
    gate = _Gate(options, sizes)
    opts = {
        k: v
        for k, v in dataclasses.asdict(options).items()
        if k in ("trials", "seed", "device", "verify", "cost_model", "cost_sizes")
    }
    lineage = Lineage(
        current.library or getattr(current.kernel, "name", str(current.kernel)),
        current.task,
        dict((sizes or {}).get(current.task, {})),
        opts,
        created=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    )
    say(f"gate {current.name} (the expert kernel)")
    first = gate_record(gate(current))
    lineage.expert_gate = first
    lineage.kernels.append(current.to_json())
    lineage.variants.append(current)
    if first["verdict"] != "accepted":
        lineage.stopped = {"reason": "expert_rejected", "detail": first["summary"]}
        return lineage
    last_gate = first
    ops = ops if ops is not None else operators()
    while True:
        levels = state(features_of(current))
        if is_naive(levels):
            lineage.stopped = {"reason": "naive", "detail": "no mechanism left: plain loads, FMA, no shared memory"}
            break
        if len(lineage.steps) >= max_steps:
            lineage.stopped = {"reason": "max_steps", "detail": f"{max_steps} steps taken; left: {describe(levels)}"}
            break
        accepted = None
        for op in ops:
            if not op.applies(current, levels):
                continue
            blocked = blockers(levels, op.mechanism, op.level - 1)
            if blocked:
                lineage.blocked.append({"step": len(lineage.steps) + 1, "operator": op.id, "blocked_by": blocked})
                continue
            for candidate, note in op.candidates(current):
                say(f"  try {op.id}: {candidate.name}")
                verdict: Check = check(
                    current, candidate, op.mechanism, op.level, code=code_check, allowed=op.interface(current)
                )
                if not verdict.ok:
                    lineage.rejections.append(
                        _rejection(lineage, op, candidate, "mechanism", None, verdict.reason, note)
                    )
                    continue
                record = gate_record(gate(candidate))
                if record["verdict"] != "accepted":
                    failed = next((s for s in record["stages"] if s["status"] in ("failed", "error")), {})
                    lineage.rejections.append(
                        _rejection(
                            lineage,
                            op,
                            candidate,
                            f"gate.{failed.get('stage', '?')}",
                            failed.get("code"),
                            record["summary"],
                            note,
                        )
                    )
                    continue
                accepted = (op, candidate, note, verdict, record)
                break
            if accepted or len(lineage.rejections) >= max_rejections:
                break
        if accepted is None:
            if len(lineage.rejections) >= max_rejections:
                lineage.stopped = {"reason": "max_rejections", "detail": f"{max_rejections} candidates rejected"}
            else:
                lineage.stopped = {
                    "reason": "no_operator_passes",
                    "detail": f"no operator's candidate passes the check and the gate; left: {describe(levels)}",
                }
            break
        op, candidate, note, verdict, record = accepted
        after_levels = verdict.ir_after
        step = Step(
            len(lineage.steps) + 1,
            op.to_json(),
            lineage.kernels[-1],
            candidate.to_json(),
            note,
            verdict.to_json(),
            record,
            _effect(last_gate, record),
            describe(after_levels),
        )
        say(f"step {step.index}: {op.id} -> {candidate.name} ({record['summary']})")
        lineage.steps.append(step)
        lineage.kernels.append(step.after)
        lineage.variants.append(candidate)
        current, last_gate = candidate, record
    return lineage


def _rejection(
    lineage: Lineage, op: Operator, candidate: Variant, stage: str, code: str | None, reason: str, note: str
) -> dict[str, Any]:
    return {
        "step": len(lineage.steps) + 1,
        "operator": op.id,
        "mechanism": op.mechanism,
        "candidate": candidate.name,
        "note": note,
        "stage": stage,
        "code": code,
        "reason": reason,
    }


def load_lineage(path: str | pathlib.Path) -> dict[str, Any]:
    """A lineage file written by `Lineage.write`, as plain data."""
    from argus.lineage.errors import LineageError

    try:
        data = json.loads(pathlib.Path(path).read_text())
    except (OSError, ValueError) as e:
        raise LineageError("LINEAGE_FILE", f"cannot read lineage {path}: {e}") from None
    if data.get("kind") != "argus.lineage":
        raise LineageError("LINEAGE_FILE", f"{path} is not a lineage file (kind {data.get('kind')!r})")
    return data


__all__ = ["MECHANISMS", "Lineage", "Step", "as_variant", "default_gate_options", "gate_record", "load_lineage", "walk"]
