"""The backward walk (KLineage): from an expert kernel, repeatedly try the applicable simplification operators
(`argus.lineage.operators`, in order), accept the first candidate that passes the mechanism check and the gate
(`argus.eval.gate_kernel`: compile, verify, correct; the profile stage times it on a GPU, or carries the static
cost model's estimate on a CPU), record its effect (profile before and after), and go on from it — until no
mechanism is left (a naive kernel), no operator passes, or a limit is hit. The result is a `Lineage`: the
kernels in order with the evidence of every transition, every rejected candidate with its reason, and why the
walk stopped; it is plain JSON (`Lineage.to_json`, `Lineage.write`).

**Through an executor** (`walk(executor=..., parallel=K)`, `argus lineage walk --parallel K | --ray`): each
candidate's mechanism check and gate run as one gate job (`try_candidate`) on a worker of `argus.eval.executor` (the
expert's gate too), with up to K candidates of a step submitted ahead of the one the walk reads next: the next
candidates in the walk's own order, which the serial walk would try if this one failed. The walk reads the results
in that order and decides exactly as the serial walk does (the first candidate that passes both is accepted; the
rejections before it are recorded; results of candidates after it are dropped), so the lineage is the same whatever
K and whatever the order in which the jobs finish; only the driver writes it. A job carries its kernels as plain data
(`variant_data`: a library kernel or bridge, or the ``FILE.py:function`` the walk started from, its parameters and
the labels of its IR rewrites, `argus.lineage.variants.REWRITES`), and the worker refuses a rebuilt kernel whose
fingerprint differs from the driver's. A kernel that cannot be named so (an ``@argus.kernel`` object passed from
Python) is checked and gated here, as in the serial walk; so is a candidate whose job raised (the walk's own
exception, or the same verdict); a job whose process crashed or hung is that candidate's rejection at
``gate.isolation``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import json
import pathlib
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from argus.lineage.mechanisms import MECHANISMS, blockers, describe, is_naive, state
from argus.lineage.operators import Check, Operator, _base, _labels, check, features_of, library_variant, operators
from argus.lineage.variants import REWRITES, DerivedKernel, Variant, display_name, task_for


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
    """The gate with a memo by (fingerprint, task, params): a kernel is gated once per walk. It returns the
    `gate_record`, and takes records gated elsewhere (`remember`: a worker's)."""

    def __init__(self, options: Any, sizes: dict[str, dict[str, int]] | None) -> None:
        self.options = options
        self.sizes = sizes or {}
        self.memo: dict[tuple, dict[str, Any]] = {}

    @staticmethod
    def key(v: Variant) -> tuple:
        return (v.fingerprint(), v.task, repr(sorted(v.params.items())))

    def __call__(self, v: Variant) -> dict[str, Any]:
        key = self.key(v)
        if key not in self.memo:
            self.memo[key] = gate_variant(v, self.options, self.sizes.get(v.task))
        return self.memo[key]

    def remember(self, key: tuple, record: dict[str, Any]) -> dict[str, Any]:
        """The record of `key`: the one gated first (as the serial walk's memo keeps it), else `record`."""
        return self.memo.setdefault(key, record)


def gate_variant(v: Variant, options: Any, sizes: dict[str, int] | None) -> dict[str, Any]:
    """The `gate_record` of `v` gated on its task at `sizes` (None: the task's own) with `options`."""
    from argus.eval import KernelCandidate, gate_kernel
    from argus.tasks import get_task

    # without sizes for the task, a GPU times every kernel of the walk at options.cost_sizes (the expert task's
    # first benchmark size), so that a step's effect compares like with like where the task changes
    result = gate_kernel(get_task(v.task), KernelCandidate(v.name, v.kernel, dict(v.params)), sizes=sizes,
                         options=options)  # fmt: skip
    return gate_record(result)


# --- gate jobs: the walk through an executor -----------------------------------------------------------------


def variant_data(v: Variant, files: dict[int, str] | None = None) -> dict[str, Any] | None:
    """`v` as plain data a worker rebuilds it from (`variant_from_data`): its library kernel or bridge, or the
    ``FILE.py:function`` its kernel was loaded from (`files`: id of the loaded kernel -> that reference), its
    parameters, task, IR rewrites (labels of `REWRITES`) and fingerprint; None when it cannot be named so."""
    labels = _labels(v.kernel)
    if any(label not in REWRITES for label in labels):
        return None
    base = _base(v.kernel)
    if v.library is not None:
        source: dict[str, Any] = {"library": v.library, "file": None}
    elif files and id(base) in files:
        source = {"library": None, "file": files[id(base)]}
    else:
        return None
    return {"name": v.name, **source, "rewrites": labels, "params": dict(v.params), "task": v.task,
            "fingerprint": v.fingerprint()}  # fmt: skip


def variant_from_data(data: dict[str, Any]) -> Variant:
    """The `Variant` `variant_data` describes, rebuilt here; `LineageError` ``LINEAGE_REBUILD`` when its
    fingerprint is not the one the driver computed (the same name, another kernel)."""
    from argus.lineage.errors import LineageError

    if data.get("library"):
        from argus.lineage.bridges import BRIDGES

        name = data["library"]
        if name in BRIDGES:
            kernel = BRIDGES[name][0]
        else:
            from argus.kernels.registry import get_kernel

            kernel = get_kernel(name).kernel
    else:
        from argus.kernels.registry import load

        kernel = load(data["file"])
    for label in data.get("rewrites") or ():
        kernel = DerivedKernel(kernel, REWRITES[label], label)
    v = Variant(data["name"], kernel, dict(data.get("params") or {}), data["task"], data.get("library"))
    if v.fingerprint() != data.get("fingerprint"):
        raise LineageError(
            "LINEAGE_REBUILD",
            f"{v.name} rebuilt in this worker has fingerprint {v.fingerprint()}, not the walk's "
            f"{data.get('fingerprint')}",
            "the worker runs another argus or another kernel file than the walk (install the same on every node)",
        )
    return v


def try_candidate(
    candidate: dict[str, Any],
    options: dict[str, Any],
    sizes: dict[str, int] | None = None,
    before: dict[str, Any] | None = None,
    mechanism: str = "",
    level: int = 0,
    code_check: bool = True,
    allowed: list[str] | tuple[str, ...] = (),
    gate: bool = True,
) -> dict[str, Any]:
    """One gate job of a walk, in a worker: rebuild `candidate` (and `before`, the kernel it simplifies) from
    `variant_data`; the mechanism check of `before` -> `candidate` (none for the expert: `before` None); where it
    passes and `gate`, the gate with `options` (`GateOptions.to_dict`) at `sizes`. Returns ``{"check": Check JSON or
    None, "record": gate record or None}`` (plain data)."""
    from argus.eval.gate import GateOptions

    after = variant_from_data(candidate)
    verdict = None
    if before is not None:
        verdict = check(variant_from_data(before), after, mechanism, level, code=code_check, allowed=tuple(allowed))
        if not verdict.ok:
            return {"check": verdict.to_json(), "record": None}
    record = gate_variant(after, GateOptions.from_dict(options), sizes) if gate else None
    return {"check": verdict.to_json() if verdict is not None else None, "record": record}


def _isolation_record(result: Any) -> dict[str, Any]:
    """The gate record of a job whose process crashed, hung or was lost: rejected (or an error of the harness) at
    ``isolation``, with the worker's code (`argus.eval.isolation.failure_status`)."""
    from argus.eval.isolation import failure_status

    status = str(failure_status(result))
    reason = result.reason.splitlines()[0] if result.reason else ""
    verdict = "rejected" if status == "failed" else "error"
    stage = {"stage": "isolation", "status": status, "code": result.code, "reason": reason,
             "seconds": round(float(result.seconds or 0.0), 3)}  # fmt: skip
    return {
        "verdict": verdict,
        "summary": f"{verdict} at isolation [{result.code}]: {reason}",
        "sizes": {},
        "stages": [stage],
        "profile": {},
        "verifier_warnings": {},
    }


@dataclass
class _Ticket:
    """A candidate of a step as the walk will read it (`variant` simplifying `before` by `op`; the expert: neither),
    and its gate job's key once submitted. `here`: checked and gated in this process (no executor, or a kernel that
    a job cannot name)."""

    variant: Variant
    before: Variant | None = None
    op: Operator | None = None
    here: bool = False
    job: str | None = None
    gate_key: tuple | None = None


class _Tries:
    """Each candidate's mechanism check and gate record, read in the walk's order: here, one at a time (no
    executor: the serial walk, unchanged), or through `executor` (see the module docstring). Before a candidate is
    read, up to `parallel` - 1 candidates after it are submitted too, but only while fewer than `parallel` jobs are
    in flight: a job submitted ahead and then not read (a candidate before it was accepted) still runs — the
    executor cannot take a job back — and counts until its result arrives (it is dropped then), so that the jobs
    read next do not queue behind jobs whose results nobody reads. `close` waits for those still running: the
    executor is left with nothing in flight."""

    def __init__(self, gate: _Gate, code_check: bool, executor: Any, parallel: int, files: dict[int, str]) -> None:
        self.gate = gate
        self.code_check = code_check
        self.executor = executor
        self.parallel = parallel if executor is not None else 1
        self.files = files
        self._options = gate.options.to_dict() if executor is not None else {}
        self._arrived: dict[str, Any] = {}
        self._running: set[str] = set()  # submitted, result not arrived
        self._dropped: set[str] = set()  # submitted ahead and not read
        self._ahead: deque[tuple] = deque()  # the step's events pulled and not read yet
        self._jobs = 0

    def _ticket(self, v: Variant, before: Variant | None = None, op: Operator | None = None) -> _Ticket:
        return _Ticket(v, before, op, here=self.executor is None)

    def _submit(self, ticket: _Ticket) -> None:
        """Submit `ticket`'s job (its check against `before` by `op`, then its gate), or mark it to be done here
        when a job cannot name its kernels."""
        if ticket.here or ticket.job is not None:
            return
        data = variant_data(ticket.variant, self.files)
        before = variant_data(ticket.before, self.files) if ticket.before is not None else None
        if data is None or (ticket.before is not None and before is None):
            ticket.here = True
            return
        from argus.eval.executor import GateJob, Resource

        v = ticket.variant
        ticket.gate_key = self.gate.key(v)
        kwargs: dict[str, Any] = {"candidate": data, "options": self._options, "sizes": self.gate.sizes.get(v.task),
                                  "gate": ticket.gate_key not in self.gate.memo}  # fmt: skip
        if ticket.before is not None and ticket.op is not None:
            op = ticket.op
            kwargs.update(before=before, mechanism=op.mechanism, level=op.level, code_check=self.code_check,
                          allowed=list(op.interface(ticket.before)))  # fmt: skip
        self._jobs += 1
        ticket.job = f"lineage#{self._jobs}:{v.name}"
        resource = Resource.GPU if self.executor.gpus() > 0 else Resource.CPU
        self.executor.submit(GateJob(ticket.job, "argus.lineage.walk:try_candidate", kwargs, resource))
        self._running.add(ticket.job)

    def _top_up(self) -> None:
        """Submit the candidates pulled ahead, in order, while fewer than `parallel` jobs are in flight."""
        for kind, _, item in self._ahead:
            if len(self._running) >= self.parallel:
                return
            if kind == "candidate":
                self._submit(item[2])

    def _result(self, job: str) -> Any:
        from argus.lineage.errors import LineageError

        while job not in self._arrived:
            got = next(iter(self.executor.as_completed()), None)
            if got is None:
                raise LineageError("LINEAGE_WORKER", f"gate job {job}: its result never came")
            self._running.discard(got.key)
            if got.key in self._dropped:
                self._dropped.discard(got.key)
            else:
                self._arrived[got.key] = got
            self._top_up()  # a worker is free: the next candidate ahead may start
        return self._arrived.pop(job)

    def expert(self, v: Variant) -> dict[str, Any]:
        """The expert's gate record."""
        ticket = self._ticket(v)
        self._submit(ticket)
        if ticket.job is None:
            return self.gate(v)
        got = self._result(ticket.job)
        if got.ok:
            return self.gate.remember(ticket.gate_key, got.value["record"])
        return self.gate(v) if got.code == "WORKER_EXCEPTION" else _isolation_record(got)

    def read(self, current: Variant, events: Iterator[tuple[str, Operator, Any]]) -> Iterator[tuple]:
        """The step's `events` in order, each candidate's item with its ticket, ``(candidate, note, ticket)``;
        before a candidate is read, it is submitted and so are up to `parallel` - 1 after it (`_top_up`)."""
        ahead = self._ahead = deque()
        source = iter(events)
        exhausted = False

        def pull() -> bool:
            nonlocal exhausted
            event = next(source, None)
            if event is None:
                exhausted = True
                return False
            kind, op, item = event
            if kind == "candidate":
                item = (*item, self._ticket(item[0], current, op))
            ahead.append((kind, op, item))
            return True

        try:
            while ahead or pull():
                if ahead[0][0] == "candidate" and self.executor is not None:
                    while not exhausted and sum(1 for e in ahead if e[0] == "candidate") < self.parallel:
                        pull()
                    self._submit(ahead[0][2][2])  # the one read next, whatever is in flight
                    self._top_up()
                yield ahead.popleft()
        finally:  # the walk stopped reading this step: what was submitted ahead is not read
            for kind, _, item in ahead:
                if kind == "candidate" and item[2].job is not None:
                    self._dropped.add(item[2].job)
                    if self._arrived.pop(item[2].job, None) is not None:
                        self._dropped.discard(item[2].job)
            ahead.clear()

    def outcome(self, current: Variant, op: Operator, candidate: Variant, ticket: _Ticket) -> tuple[Check, Any]:
        """(the mechanism check, the gate record or None where the check failed) of a candidate read now."""
        got = self._result(ticket.job) if ticket.job is not None else None
        if got is not None and got.ok:
            verdict = Check(**got.value["check"])
            if not verdict.ok:
                return verdict, None
            record = got.value["record"]  # None: not gated there, the memo had it when the job was submitted
            return verdict, self.gate.memo[ticket.gate_key] if record is None else self.gate.remember(
                ticket.gate_key, record
            )
        if got is not None and got.code != "WORKER_EXCEPTION":  # its process crashed, hung or was lost
            verdict = check(current, candidate, op.mechanism, op.level, code=self.code_check,
                            allowed=op.interface(current))  # fmt: skip
            return verdict, (_isolation_record(got) if verdict.ok else None)
        # here: no executor, a kernel a job cannot name, or a job that raised (the serial walk's exception or verdict)
        verdict = check(current, candidate, op.mechanism, op.level, code=self.code_check, allowed=op.interface(current))
        if not verdict.ok:
            return verdict, None
        return verdict, self.gate(candidate)

    def close(self) -> None:
        """Wait for the jobs still running (submitted ahead, not read) and drop their results."""
        while self._running:
            got = next(iter(self.executor.as_completed()), None)
            if got is None:
                break
            self._running.discard(got.key)
        self._dropped.clear()
        self._arrived.clear()


def _events(current: Variant, levels: dict[str, int], ops: tuple[Operator, ...]) -> Iterator[tuple[str, Operator, Any]]:
    """What one step of the walk reads, in order: ``("blocked", op, blockers)`` for an operator a dependent
    mechanism blocks, ``("candidate", op, (candidate, note))`` for each candidate of an operator that applies, and
    ``("end", op, None)`` after an operator's candidates. Lazy: an operator's candidates are made when reached."""
    for op in ops:
        if not op.applies(current, levels):
            continue
        blocked = blockers(levels, op.mechanism, op.level - 1)
        if blocked:
            yield "blocked", op, blocked
            continue
        for candidate, note in op.candidates(current):
            yield "candidate", op, (candidate, note)
        yield "end", op, None


def _local_pool(parallel: int) -> Any:
    """The walk's own local pool for `parallel` gates at once: `parallel` CPU workers, or on a machine with GPUs one
    worker per GPU, at most `parallel` (two gates never time on one GPU at once: a step's effect is a timing)."""
    from argus.eval.device import has_gpu
    from argus.eval.executor import LocalExecutor

    devices = None
    if has_gpu():
        import torch

        devices = list(range(min(parallel, torch.cuda.device_count())))
    preload = ("torch", "argus.eval.gate", "argus.lineage.walk")
    return LocalExecutor(parallel, devices=devices, preload=preload)


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
    executor: Any = None,
    parallel: int | None = None,
) -> Lineage:
    """Walk `kernel` (a library name, ``FILE.py:function``, an ``@argus.kernel`` or a `Variant`) backward.

    Every step: the operators that apply to the kernel as it stands (its mechanism levels) and are not blocked
    by a dependent mechanism, in order; each candidate they propose goes through `operators.check` (exactly the
    operator's mechanism removed, in the IR and in the generated code) and then the gate; the first that passes
    both is accepted. `sizes`: the gate's problem sizes per task name (default: each task's CPU sizes without a
    GPU; on a GPU the expert task's first benchmark size for every kernel, so that effects compare one
    size). `progress(text)` is called with a line per event. The walk never raises for a rejected candidate: it is
    recorded in `Lineage.rejections` with its stage and reason.

    `executor` (`argus.eval.executor`; the caller's, not closed here) runs each candidate's check and gate as a gate
    job, with `parallel` candidates submitted at once (default 1); `parallel` > 1 without an executor opens a local
    pool of that many worker processes (on a machine with GPUs, one per GPU, at most `parallel`) for the walk. The
    lineage is the serial walk's either way (see the module docstring). Without either, everything runs here, one
    candidate at a time."""
    if parallel is not None and (isinstance(parallel, bool) or not isinstance(parallel, int) or parallel < 1):
        raise ValueError(f"parallel must be a whole number of candidates in flight, at least 1; got {parallel!r}")
    parallel = parallel or 1
    own = executor is None and parallel > 1
    if own:
        executor = _local_pool(parallel)
        parallel = max(1, len(executor.devices)) if executor.devices else parallel
    try:
        return _walk(kernel, task, params, gate_options, sizes, max_steps, max_rejections, ops, code_check,
                     progress, executor, parallel)  # fmt: skip
    finally:
        if own:
            executor.close()


def _walk(
    kernel: Any,
    task: str | None,
    params: dict[str, Any] | None,
    gate_options: Any,
    sizes: dict[str, dict[str, int]] | None,
    max_steps: int,
    max_rejections: int,
    ops: tuple[Operator, ...] | None,
    code_check: bool,
    progress: Any,
    executor: Any,
    parallel: int,
) -> Lineage:
    say = progress or (lambda text: None)
    current = as_variant(kernel, task, params)
    files: dict[int, str] = {}  # the kernel file the walk started from, for the gate jobs (`variant_data`)
    if isinstance(kernel, str) and ":" in kernel and current.library is None:
        files[id(_base(current.kernel))] = kernel
    options = gate_options if gate_options is not None else default_gate_options()
    if hasattr(options, "cost_sizes") and options.cost_model and not options.cost_sizes:
        # one problem size for every estimate of the walk: the expert task's first benchmark size
        from argus.tasks import get_task

        bench = get_task(current.task).bench_sizes
        if bench:
            options = dataclasses.replace(options, cost_sizes=dict(bench[0]))
    gate = _Gate(options, sizes)
    tries = _Tries(gate, code_check, executor, parallel, files)
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
    try:
        first = tries.expert(current)
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
                left = describe(levels)
                lineage.stopped = {"reason": "max_steps", "detail": f"{max_steps} steps taken; left: {left}"}
                break
            accepted = None
            with contextlib.closing(tries.read(current, _events(current, levels, ops))) as events:
                for kind, op, item in events:
                    if kind == "blocked":
                        lineage.blocked.append({"step": len(lineage.steps) + 1, "operator": op.id, "blocked_by": item})
                        continue
                    if kind == "end":
                        if len(lineage.rejections) >= max_rejections:
                            break
                        continue
                    candidate, note, ticket = item
                    say(f"  try {op.id}: {candidate.name}")
                    verdict, record = tries.outcome(current, op, candidate, ticket)
                    if not verdict.ok:
                        lineage.rejections.append(
                            _rejection(lineage, op, candidate, "mechanism", None, verdict.reason, note)
                        )
                        continue
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
    finally:
        if executor is not None:
            tries.close()


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
