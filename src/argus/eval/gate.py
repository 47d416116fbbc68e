"""The gate: ``static -> compile -> verify -> correct -> profile`` for one candidate on one task, each stage a
`StageResult`, collected in a `GateResult`. The gate stops at the first stage that fails.

* **static** — `argus.eval.guards.scan_source` on the candidate's source: library calls the task forbids,
  precision toggles on fp32 tasks;
* **compile** — DSL kernels: trace and compile for ``sm_90a`` through `argus.backend.cuda.codegen` (no GPU
  needed); a construct the generator cannot lower yet is *skipped*, not failed, and correctness still runs on the
  interpreter. PyTorch candidates: import the file and construct the module (precision switches checked around
  both);
* **verify** — DSL kernels: `argus.verify.verify`; a violation rejects with its counterexample, ``unknown`` does
  not. PyTorch candidates: every ``@argus.kernel`` their module defines or imports; skipped when there is none;
* **correct** — `argus.eval.correctness.check_correctness` on the GPU when the kernel was compiled and a GPU is
  present, else on the CPU (the interpreter for DSL kernels, torch on CPU for modules);
* **profile** — GPU only: `argus.eval.timing.time_cuda` with the inputs refreshed from a pool of distinct draws
  before every repetition (outside the timed region) and the previous outputs poisoned (`RotatingInputs`); after
  timing, the outputs of the last timed call, and of one more call on every draw, are checked against the
  reference: a candidate that caches results across calls, or stops computing once it is being timed, fails here
  (``PROFILE_STALE_RESULT``). Then TFLOP/s, GB/s, the fraction of this GPU's measured ceilings, the baselines'
  times and ratios, SM clock and power before and after, and the suspicion flags (`argus.eval.flags`).
  Baselines the gate times itself are timed *interleaved* with the candidate by default (``GateOptions.timing``;
  `time_with_baselines`): per round one launch of the candidate and of each baseline, L2 flushed before each, the
  order rotating, the baselines on the candidate's input buffers; the ratios are ratios of medians of that one run,
  with the per-round ratios' median and quartiles in ``details["interleaved"]``. The GPU clock follows power and
  temperature, so a baseline timed before or after the candidate runs at another clock (5-10 % on H200s).
  ``timing="sequential"`` times the baselines first, each on its own, then the candidate. Baseline timings handed
  in (``baselines=``) are used as given; ``details["timing_method"]`` says which.

The gate reaches the code generator, the runtime and the verifier only through `_compile`, `_load` and
`_verify`; when one is missing the stage says so and the rest proceed.
"""

from __future__ import annotations

import functools
import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from argus.eval.candidates import KernelCandidate, ModuleCandidate, import_file
from argus.eval.correctness import CandidateFailure
from argus.eval.flags import Thresholds, speedups, suspicion_flags
from argus.eval.guards import PrecisionState, poison_, scan_source, strict_precision
from argus.eval.isolation import report_stage
from argus.eval.results import Flag, GateResult, StageResult, Status
from argus.tasks.base import ModuleTask, Task


@dataclass(frozen=True)
class GateOptions:
    """How the gate runs.

    Attributes:
        trials: correctness trials (at least 5; each on fresh inputs).
        seed: base seed of the input draws and of module construction.
        device: ``"cuda"``/``"cuda:N"``/``"cpu"``; None picks the GPU when there is one.
        reps, warmup, flush_l2, graph: timing (`argus.eval.timing.time_cuda`).
        timing_inputs: distinct input draws rotated through the timed repetitions.
        timing: how the profile stage times the candidate beside the baselines it times itself:
            ``"interleaved"`` (default: one launch of the candidate and of every baseline per round, the order
            rotating, `argus.eval.timing.measure_interleaved`; `reps` rounds) or ``"sequential"`` (the baselines
            first, each on its own, then the candidate). Baseline timings passed in to the gate (`gate_kernel`'s
            ``baselines=``) are always from elsewhere, i.e. sequential.
        verify: run the verifier on DSL kernels.
        baselines: baselines to time in the profile stage (None: the task's defaults; empty: none).
        thresholds: when a timing is flagged (`argus.eval.flags.Thresholds`).
        forbidden: extra dotted-name patterns the candidate may not use (added to the task's).
        forbidden_ops: extra operator patterns the candidate may not dispatch (added to the task's).
        cost_model: without a GPU, the profile stage of a DSL kernel adds the static cost model's estimate for
            this GPU (`argus.eval.costmodel.GPUS`; None: no estimate); the stage stays ``PROFILE_NO_GPU``
            (nothing was timed) and says it is an estimate.
        cost_sizes: the problem sizes of the profile: that estimate's without a GPU, and with one the sizes the
            gate runs and times at when it is given none (None: the task's first benchmark sizes). The agent loop
            and the lineage walk set it once, so that every candidate compares at one size across tasks.
        sandbox: a candidate given as a file (a KernelBench solution, a user's module) runs in a sandbox process
            and the verdict is decided in this one (`argus.eval.judge`). Candidates given as Python objects are
            trusted code and run here.
        sandbox_timeout_s: the time limit of each operation in the sandbox (start, import, one call, one timed
            repetition); past it the sandbox is killed and the candidate rejected (``SANDBOX_TIMEOUT``).
        stop_after: ``"verify"``: a kernel's gate ends after its static, compile and verify stages (the CPU half of
            the stage split: a worker without a GPU runs it, and NVRTC's cubin lands in the on-disk cache).
        prepared_verify: the verify stage (`StageResult.to_json`) a ``stop_after="verify"`` gate of the same kernel
            returned: reused instead of running the verifier again when its ``details["fingerprint"]`` equals this
            kernel's (`kernel_fingerprint`: the traced IR and argus's source), else ignored and the verifier runs.
    """

    trials: int = 6
    seed: int = 0
    device: str | None = None
    reps: int = 100
    warmup: int = 10
    flush_l2: bool = True
    graph: bool | None = None
    timing_inputs: int = 2
    timing: str = "interleaved"
    verify: bool = True
    baselines: tuple[str, ...] | None = None
    thresholds: Thresholds = field(default_factory=Thresholds)
    forbidden: tuple[str, ...] = ()
    forbidden_ops: tuple[str, ...] = ()
    cost_model: str | None = "H100-SXM"
    cost_sizes: dict[str, int] | None = None
    sandbox: bool = True
    sandbox_timeout_s: float = 600.0
    stop_after: str | None = None
    prepared_verify: dict[str, Any] | None = None

    def resolved_device(self) -> str:
        from argus.eval.device import default_device

        return self.device or default_device()

    def to_dict(self) -> dict[str, Any]:
        """Plain data (for a worker process); `from_dict` reverses it."""
        import dataclasses

        data = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        data["thresholds"] = dataclasses.asdict(self.thresholds)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GateOptions:
        data = dict(data)
        if isinstance(data.get("thresholds"), dict):
            data["thresholds"] = Thresholds(**data["thresholds"])
        for key in ("baselines", "forbidden", "forbidden_ops"):
            if isinstance(data.get(key), list):
                data[key] = tuple(data[key])
        return cls(**data)


def _stage(stage: str, status: Status, code: str | None, reason: str, start: float, **details: Any) -> StageResult:
    return StageResult(stage, status, code, reason, details, time.perf_counter() - start)


# ---------------------------------------------------------------------------------------------------------------
# static


def static_stage(source: str | None, forbidden: Sequence[str], fp32: bool) -> tuple[StageResult, list[Flag]]:
    """Scan `source`; blocking findings fail the stage, the others become flags."""
    start = time.perf_counter()
    if source is None:
        return _stage("static", Status.SKIPPED, "STATIC_NO_SOURCE", "no source text to check", start), []
    try:
        findings = scan_source(source, forbidden=forbidden, fp32=fp32)
    except SyntaxError as e:
        return (
            _stage("static", Status.FAILED, "STATIC_UNPARSEABLE", f"line {e.lineno}: {e.msg}", start, line=e.lineno),
            [],
        )
    blocking = [f for f in findings if f.blocking]
    flags = [Flag(f.code, f"line {f.line}: {f.message}", False, f.to_json()) for f in findings if not f.blocking]
    details = {"findings": [f.to_json() for f in findings], "forbidden": list(forbidden), "fp32": fp32}
    if blocking:
        first = blocking[0]
        more = f" (and {len(blocking) - 1} more)" if len(blocking) > 1 else ""
        reason = f"line {first.line}: {first.message}{more}: {first.text.strip()}"
        return _stage("static", Status.FAILED, first.code, reason, start, **details), flags
    return _stage("static", Status.PASSED, None, f"{len(findings)} warning(s)", start, **details), flags


class _ReportedStages(list):  # type: ignore[type-arg]
    """A gate's stage list that reports each stage as it is recorded (`argus.eval.isolation.report_stage`: to the
    worker pool running the job, for its progress display; nothing elsewhere). Pickles and copies as a plain list."""

    def append(self, stage: Any) -> None:
        super().append(stage)
        report_stage(getattr(stage, "stage", ""))

    def extend(self, stages: Any) -> None:
        for stage in stages:
            self.append(stage)

    def __iadd__(self, stages: Any) -> _ReportedStages:
        self.extend(stages)
        return self

    def __reduce__(self) -> Any:
        return (list, (list(self),))


def static_prelude(result: GateResult, source: str | None, forbidden: Sequence[str], fp32: bool) -> bool:
    """Record the precision switches (under `strict_precision`) and the static stage in `result`; True when the
    static stage rejected the candidate (the gate stops). Every gate starts here: from now on each stage recorded in
    `result` is reported as finished to the pool running this job (progress only; see `_ReportedStages`)."""
    if type(result.stages) is list:
        result.stages = _ReportedStages(result.stages)
    result.environment["precision"] = PrecisionState.capture().as_dict()
    static, flags = static_stage(source, forbidden, fp32)
    result.stages.append(static)
    result.flags += flags
    return static.failed


# ---------------------------------------------------------------------------------------------------------------
# the narrow interfaces to the code generator, the runtime and the verifier


def _compile(candidate: KernelCandidate) -> Any:
    from argus.backend.cuda.codegen import compile_kernel

    return compile_kernel(candidate.kernel, **candidate.params)


def _load(compiled: Any) -> Any:
    from argus.runtime import load

    return load(compiled)


def _verify(candidate: KernelCandidate) -> Any:
    from argus.verify import verify

    return verify(candidate.kernel, **candidate.params)


def compile_stage(candidate: KernelCandidate, task: Task) -> tuple[StageResult, Any]:
    """Trace and compile a DSL kernel; check its parameters are the task's. Returns (stage, compiled or None)."""
    start = time.perf_counter()
    if not candidate.is_dsl:
        return _stage("compile", Status.SKIPPED, None, "not an argus DSL kernel: runs as given", start), None
    try:
        names = candidate.parameter_names()
    except Exception as e:  # noqa: BLE001 - a trace error is the candidate's
        return _stage("compile", Status.FAILED, "COMPILE_TRACE", str(e).splitlines()[0], start, error=str(e)), None
    want = [t.name for t in task.tensors]
    if sorted(names or []) != sorted(want):
        return (
            _stage(
                "compile",
                Status.FAILED,
                "COMPILE_SIGNATURE",
                f"the kernel's tensors ({', '.join(names or [])}) are not the task's ({', '.join(want)})",
                start,
                kernel_parameters=names,
                task_parameters=want,
            ),
            None,
        )
    try:
        compiled = _compile(candidate)
    except ImportError as e:
        return _stage(
            "compile", Status.SKIPPED, "COMPILE_UNAVAILABLE", f"code generator not importable: {e}", start
        ), None
    except Exception as e:  # noqa: BLE001 - sorted by the error's code below
        code = getattr(e, "code", None)
        text = str(e)
        if code == "CODEGEN_UNSUPPORTED":
            return _stage(
                "compile", Status.SKIPPED, "COMPILE_UNSUPPORTED", text.splitlines()[0], start, error=text
            ), None
        if code in ("COMPILE_TOOLCHAIN", "COMPILE_NVRTC_API"):
            return _stage(
                "compile", Status.SKIPPED, "COMPILE_UNAVAILABLE", text.splitlines()[0], start, error=text
            ), None
        if code is not None and str(code).startswith("DSL_"):
            return _stage("compile", Status.FAILED, "COMPILE_TRACE", text.splitlines()[0], start, error=text), None
        return (
            _stage(
                "compile",
                Status.FAILED,
                "COMPILE_FAILED",
                text.splitlines()[0] if text else type(e).__name__,
                start,
                error=text,
                error_code=code,
            ),
            None,
        )
    details: dict[str, Any] = {"entry": getattr(compiled, "entry", None)}
    try:
        r = compiled.resources
        details["resources"] = {
            k: getattr(r, k) for k in ("registers", "spill_stores", "spill_loads", "shared_bytes") if hasattr(r, k)
        }
    except Exception:  # noqa: BLE001 - resources are informative only
        pass
    return _stage("compile", Status.PASSED, None, "compiled for sm_90a", start, **details), compiled


@functools.cache
def _source_digest() -> str:
    """SHA-256 over argus's own Python sources (what a verdict depends on besides the kernel), once per process."""
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        h.update(str(path.relative_to(root)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def kernel_fingerprint(candidate: KernelCandidate) -> str | None:
    """What identifies a verification: SHA-256 of the DSL kernel's traced IR as printed (buffers, layouts,
    assumptions, every statement) and of argus's sources; None for anything else or a kernel that does not trace."""
    if not candidate.is_dsl:
        return None
    try:
        from argus.ir.printer import format_kernel

        text = format_kernel(candidate.kernel.trace(**candidate.params))
    except Exception:  # noqa: BLE001 - no fingerprint: nothing is reused
        return None
    return hashlib.sha256(f"{_source_digest()}\n{text}".encode()).hexdigest()


def prepared_verify_stage(candidate: KernelCandidate, prepared: dict[str, Any] | None) -> StageResult | None:
    """The verify stage a CPU worker already ran on this very kernel (`GateOptions.prepared_verify`), or None when
    none was given or it was of another program (fingerprints differ): then the verifier runs here."""
    if not prepared:
        return None
    fingerprint = (prepared.get("details") or {}).get("fingerprint")
    if fingerprint is None or fingerprint != kernel_fingerprint(candidate):
        return None
    stage = StageResult.from_json(prepared)
    stage.details["reused"] = "verified by a CPU worker (the stage split), same fingerprint"
    return stage


def verify_stage(candidate: KernelCandidate) -> StageResult:
    """Run the verifier on a DSL kernel (skipped for anything else). Its details carry the kernel's fingerprint
    (`kernel_fingerprint`), so that a later gate of the same program may reuse the stage."""
    stage = _verify_stage(candidate)
    if candidate.is_dsl:
        stage.details["fingerprint"] = kernel_fingerprint(candidate)
    return stage


def _verify_stage(candidate: KernelCandidate) -> StageResult:
    start = time.perf_counter()
    if not candidate.is_dsl:
        return _stage("verify", Status.SKIPPED, "VERIFY_NOT_APPLICABLE", "not an argus DSL kernel", start)
    try:
        result = _verify(candidate)
    except ImportError as e:
        return _stage("verify", Status.SKIPPED, "VERIFY_UNAVAILABLE", f"verifier not importable: {e}", start)
    except Exception as e:  # noqa: BLE001 - the verifier failing is a harness error, stated
        return _stage("verify", Status.ERROR, "VERIFY_ERROR", f"{type(e).__name__}: {e}", start)
    report = result.to_json() if hasattr(result, "to_json") else {"verdict": str(result.verdict)}
    verdict = str(getattr(result.verdict, "value", result.verdict))
    if verdict == "violated":
        first = result.errors[0] if getattr(result, "errors", None) else None
        reason = first.render_text().splitlines()[0] if first is not None else "an invariant is violated"
        return _stage("verify", Status.FAILED, "VERIFY_VIOLATED", reason, start, report=report)
    if verdict == "unknown":
        return _stage("verify", Status.UNKNOWN, "VERIFY_UNKNOWN", "some checks undecided", start, report=report)
    return _stage("verify", Status.PASSED, None, "every invariant verified", start, report=report)


# ---------------------------------------------------------------------------------------------------------------
# profile


class RotatingInputs:
    """Timed repetitions on changing inputs. Before each repetition (outside the timed region) `before_rep` copies
    the next of the distinct input draws in `pool` into the fixed argument `buffers` and poisons the outputs of
    the previous call; afterwards `check_after` compares outputs with the reference for the draw they were
    computed from. A candidate that caches its result (by tensor identity, address or anything else that stays
    fixed across repetitions), or skips work once it is being timed, returns a stale answer and is caught. Under
    CUDA-graph replay, where the candidate's Python does not run, the graph's static output is what is poisoned
    and checked.

    Args:
        pool: input lists, one per draw (on the timing device).
        expected: the float64 reference outputs for each draw (an output whose task reference in its own precision
            differs by rounding only: the pair (float64, native), either of which a candidate may match).
        tol: the task's tolerance.
        outputs: preallocated output tensors (kernels writing in place); None when the candidate returns its
            outputs (modules): then wrap the call as ``rotating.record(candidate(*rotating.buffers))``.
        noise: per draw, per output, the task's own reference in its own precision minus `expected` where that
            misses the tolerance (outputs dominated by rounding; see `argus.eval.tolerance.compare`), else None.
        seeds: per draw, the seed PyTorch's generator had when `expected` was computed (tasks with random draws).
    """

    def __init__(
        self,
        pool: list[list[Any]],
        expected: list[list[Any]],
        tol: Any,
        outputs: list[Any] | None = None,
        noise: list[list[Any]] | None = None,
        seeds: list[int] | None = None,
    ):
        import torch

        self.pool, self.expected, self.tol, self.outputs, self.noise = pool, expected, tol, outputs, noise
        self.seeds = seeds
        self.buffers = [x.clone() if isinstance(x, torch.Tensor) else x for x in pool[0]]
        self.index = 0
        self.returned: Any = None

    def before_rep(self, i: int) -> None:
        import torch

        from argus.eval.correctness import as_outputs

        self.index = i % len(self.pool)
        for b, src in zip(self.buffers, self.pool[self.index], strict=True):
            if isinstance(b, torch.Tensor):
                b.copy_(src)
        stale = self.outputs if self.outputs is not None else as_outputs(self.returned)
        for o in stale:
            if isinstance(o, torch.Tensor) and not any(o is b for b in self.buffers):
                poison_(o)
        if self.seeds is not None:  # the random draws the reference made for this input draw
            torch.manual_seed(self.seeds[self.index])

    def record(self, value: Any) -> Any:
        self.returned = value
        return value

    def check(self) -> str | None:
        """None when the last call's outputs match the reference of the draw it saw, else the reason."""
        from argus.eval.correctness import as_outputs
        from argus.eval.tolerance import compare_any, input_scale

        got = list(self.outputs) if self.outputs is not None else as_outputs(self.returned)
        want = self.expected[self.index]
        noise = self.noise[self.index] if self.noise is not None else [None] * len(want)
        if len(got) != len(want):
            return f"{len(got)} output(s), expected {len(want)}"
        scale = input_scale(self.pool[self.index])
        for i, (g, w, z) in enumerate(zip(got, want, noise, strict=True)):
            c = compare_any(g, w, self.tol, name=f"output {i}", input_scale=scale, noise=z)
            if not c.ok:
                return c.reason
        return None

    def check_after(self, fn: Callable[[], Any], sync: Callable[[], None] | None = None) -> str | None:
        """After timing: `check` the last timed call, then call `fn` once more on every draw in turn and check
        each (a result cached from one draw is wrong for the others, whichever draw the timing ended on)."""
        reason = self.check()
        if reason is not None:
            return f"last timed call: {reason}"
        for j in range(len(self.pool)):
            self.before_rep(j)
            fn()
            if sync is not None:
                sync()
            reason = self.check()
            if reason is not None:
                return f"draw {j} after timing: {reason}"
        return None


def reference_outputs(
    run_high: Callable[[list[Any]], Any],
    run_native: Callable[[list[Any]], Any],
    pool: list[list[Any]],
    tol: Any,
    seeds: list[int] | None = None,
    *,
    keep_on_device: bool = False,
) -> tuple[list[list[Any]], list[list[Any]]]:
    """For each draw in `pool`, what the timed outputs are compared with and the noise floor, chosen as in the
    correct stage (`argus.eval.correctness.reference_choice`): on the CPU (a pool kept through the whole timing),
    or with `keep_on_device` (a check made and dropped at once) where they were computed, unless the draw is too
    large for the device (`copies_on_host`). PyTorch's generator is seeded with ``seeds[j]`` before each reference
    run (and `RotatingInputs` seeds it the same before each timed call), so a task with random draws (dropout) is
    reproduced exactly."""
    import torch

    from argus.eval.correctness import as_outputs, copies_on_host, reference_choice, to_high, to_host
    from argus.eval.guards import clone_all
    from argus.eval.tolerance import input_scale

    expected, noise = [], []
    for j, draw in enumerate(pool):
        # large draws: each reference's outputs move to the host as soon as they are computed (`copies_on_host`)
        devices = {x.device for x in draw if isinstance(x, torch.Tensor)}
        host = bool(devices) and copies_on_host(draw, next(iter(devices)))
        keep = to_host if host else (lambda values: [r.detach() for r in values])
        if seeds is not None:
            torch.manual_seed(seeds[j])
        high = keep(as_outputs(run_high(to_high(draw))))
        if seeds is not None:
            torch.manual_seed(seeds[j])
        native = keep(as_outputs(run_native(clone_all(draw))))
        kind, want, z, why = reference_choice(native, high, tol, input_scale(draw))
        where = None if keep_on_device and not host else "cpu"
        expected.append([tuple(x.to(where) for x in w) if isinstance(w, tuple) else w.to(where) for w in want])
        noise.append([None if t is None else t.to(where) for t in z] if z is not None else [None] * len(want))
    return expected, noise


def _device_index(device: str) -> int:
    import torch

    d = torch.device(device)
    return d.index if d.index is not None else torch.cuda.current_device()


#: The candidate's name among the contenders of an interleaved timing (baselines are named eager, compile, cublas, ...).
CANDIDATE = "candidate"


def time_with_baselines(
    fn: Callable[[], Any],
    baseline_calls: dict[str, Callable[[], Any] | str],
    *,
    before_rep: Callable[[int], None] | None,
    graph_fn: Callable[[], Any] | None,
    options: GateOptions,
    device: str | None = None,
    timer: Callable[..., Any] | None = None,
    sync: Callable[[], None] | None = None,
    remote: Any = None,
) -> tuple[Any, dict[str, Any], dict[str, Any]]:
    """Time the candidate `fn` and the baselines interleaved (`argus.eval.timing.time_interleaved_cuda`, or
    `timer` with the same signature, e.g. `measure_interleaved` on a test clock): `options.reps` rounds, the
    candidate the reference of the ratios and its last timed call the last call of all (the outputs the gate checks
    after timing are that call's). A baseline given as a string, or one that raises on a first call (run
    here, outside timing) or while timed, is reported skipped with the reason and the rest are timed again without
    it; the candidate raising is `ContenderError` (the caller rejects it).

    Returns (the candidate's `Timing`, ``{baseline: {"timing": ..., "round_ratio": ...} | {"skipped": ...}}``, a
    summary of the run: method, rounds, order, contenders, and per baseline the ratio of the medians and the
    per-round ratio's median and quartiles). A ratio is baseline time / candidate time: the speedup. `remote` (a
    `Contender` with ``timed``) replaces `fn` when the candidate runs in a sandbox (`argus.eval.judge`). Everything runs
    under ``torch.no_grad()`` (entered once: nothing but the call itself sits between a contender's events)."""
    import torch

    from argus.eval.timing import Contender, ContenderError, time_interleaved_cuda

    with torch.no_grad():
        if timer is None:

            def timer(contenders: dict[str, Contender], **kw: Any) -> Any:
                return time_interleaved_cuda(contenders, device=device, graph=options.graph, **kw)

        if sync is None and device is not None and str(device).startswith("cuda"):

            def sync() -> None:
                torch.cuda.synchronize(device)

        out: dict[str, Any] = {}
        calls: dict[str, Callable[[], Any]] = {}
        for name, call in baseline_calls.items():
            if isinstance(call, str):
                out[name] = {"skipped": call}
                continue
            try:  # a baseline that cannot run here (an SDPA backend this GPU lacks) is said, not timed
                call()
                if sync is not None:
                    sync()
            except Exception as e:  # noqa: BLE001
                out[name] = {"skipped": f"does not run here: {type(e).__name__}: {_first_line(e)}"}
                continue
            calls[name] = call
        while True:
            contenders = {CANDIDATE: remote if remote is not None else Contender(fn, before_rep, graph_fn)}
            contenders.update({name: Contender(call) for name, call in calls.items()})
            try:
                result = timer(
                    contenders,
                    rounds=options.reps,
                    warmup=options.warmup,
                    flush_l2=options.flush_l2,
                    reference=CANDIDATE,
                    last=CANDIDATE,
                )
                break
            except ContenderError as e:
                if e.name == CANDIDATE or e.name not in calls:
                    raise
                out[e.name] = {"skipped": f"raised while timed: {type(e.error).__name__}: {_first_line(e.error)}"}
                del calls[e.name]
        summary: dict[str, Any] = {
            "method": result.method,
            "rounds": result.rounds,
            "order": result.order,
            "reference": CANDIDATE,
            "contenders": list(result.timings),
            "l2_flush": options.flush_l2,
            "ratios": {},
        }
        for name in calls:
            ratio = result.ratios[name]
            out[name] = {"timing": result.timings[name].to_json(), "round_ratio": ratio.to_json()}
            summary["ratios"][name] = {k: v for k, v in ratio.to_json().items() if k != "samples"}
        ordered = {name: out[name] for name in baseline_calls}
        return result.timings[CANDIDATE], ordered, summary


def _bound_call(fn: Callable[..., Any], args: list[Any]) -> Callable[[], Any]:
    """``fn(*args)`` as a call of no arguments (a baseline on the candidate's input buffers; `time_with_baselines`
    runs it under ``torch.no_grad()``)."""
    return lambda: fn(*args)


def _first_line(e: BaseException) -> str:
    text = str(e)
    return text.splitlines()[0][:200] if text else ""


def profile_stage(
    fn: Callable[[], Any],
    *,
    before_rep: Callable[[int], None],
    validate: Callable[[], str | None],
    flops: float | None,
    moved_bytes: float | None,
    baselines: dict[str, Any],
    options: GateOptions,
    device: str,
    extra: dict[str, Any] | None = None,
    graph_fn: Callable[[], Any] | None = None,
    baseline_calls: dict[str, Callable[[], Any] | str] | None = None,
    remote: Any = None,
) -> tuple[StageResult, list[Flag]]:
    """Time `fn` on the GPU and compute the figures (see the module docstring). `validate()` returns None when
    the outputs of the timed calls are right, else the reason.

    `baselines` are baseline timings taken elsewhere (``{name: {"timing": ...} | {"skipped": ...}}``); with
    `baseline_calls` (name -> a call of the baseline on the candidate's input buffers, or why it cannot run) and
    ``options.timing == "interleaved"`` the baselines are instead timed here, interleaved with the candidate
    (`time_with_baselines`), and their results replace `baselines`. `remote`: the candidate as a contender that
    times itself in its sandbox (`argus.eval.judge`); interleaved timing is then required."""
    from argus.eval.ceilings import ceilings_for_device
    from argus.eval.device import gpu_info, gpu_telemetry
    from argus.eval.timing import ContenderError, fraction_of_ceilings, throughput, time_cuda

    start = time.perf_counter()
    index = _device_index(device)
    uuid = gpu_info(index).get("uuid")
    telemetry_before = gpu_telemetry(index, uuid)
    interleaved: dict[str, Any] | None = None
    try:
        if baseline_calls is not None and options.timing == "interleaved":
            timing, baselines, interleaved = time_with_baselines(
                fn,
                baseline_calls,
                before_rep=before_rep,
                graph_fn=graph_fn,
                options=options,
                device=device,
                remote=remote,
            )
        else:
            timing = time_cuda(
                fn,
                device=device,
                reps=options.reps,
                warmup=options.warmup,
                flush_l2=options.flush_l2,
                graph=options.graph,
                before_rep=before_rep,
                graph_fn=graph_fn,
            )
    except ContenderError as e:  # the candidate failing under timing rejects it
        error = e.error
        if isinstance(error, CandidateFailure):  # said by the sandbox, with its code
            return _stage("profile", Status.FAILED, error.code, error.reason, start, **error.details), []
        return _stage("profile", Status.FAILED, "PROFILE_FAILED", f"{type(error).__name__}: {error}", start), []
    except Exception as e:  # noqa: BLE001 - the candidate failing under timing rejects it
        return _stage("profile", Status.FAILED, "PROFILE_FAILED", f"{type(e).__name__}: {e}", start), []
    telemetry_after = gpu_telemetry(index, uuid)
    stale = validate()
    if stale is not None:
        return (
            _stage(
                "profile",
                Status.FAILED,
                "PROFILE_STALE_RESULT",
                f"the outputs of the timed calls are wrong ({stale}): the candidate caches results across calls or "
                "skips work when timed",
                start,
                timing=timing.to_json(),
            ),
            [],
        )
    figures = throughput(timing.median_ms, flops, moved_bytes)
    notes: list[str] = []
    try:
        ceilings: dict[str, Any] | None = ceilings_for_device(index)
    except Exception as e:  # noqa: BLE001
        ceilings = None
        notes.append(f"ceilings not measured: {type(e).__name__}: {e}")
    baselines_ms = {n: b["timing"]["median_ms"] for n, b in baselines.items() if "timing" in b}
    flags = suspicion_flags(
        timing.to_json(), baselines_ms=baselines_ms, figures=figures, ceilings=ceilings, thresholds=options.thresholds
    )
    details = {
        "timing": timing.to_json(),
        "throughput": figures,
        "ceilings": ceilings,
        "fraction_of_ceiling": fraction_of_ceilings(figures, ceilings),
        "baselines": baselines,
        "speedup": speedups(timing.median_ms, baselines_ms),
        "telemetry": {"before": telemetry_before, "after": telemetry_after},
        "timing_inputs": options.timing_inputs,
        "timing_method": "interleaved" if interleaved is not None else "sequential",
        "interleaved": interleaved,
        "notes": notes,
        **(extra or {}),
    }
    if interleaved is not None:
        reason = (
            f"median {timing.median_ms:.4g} ms ({timing.method}, interleaved with "
            f"{', '.join(interleaved['contenders'][1:]) or 'no baseline'} over {timing.reps} rounds)"
        )
    else:
        reason = f"median {timing.median_ms:.4g} ms ({timing.method}, {timing.reps} reps)"
    return _stage("profile", Status.PASSED, None, reason, start, **details), flags


# ---------------------------------------------------------------------------------------------------------------
# kernels on built-in tasks


def _cost_model_stage(candidate: KernelCandidate, task: Task, options: GateOptions, result: GateResult) -> StageResult:
    """The profile stage without a GPU: skipped (``PROFILE_NO_GPU``: nothing was timed); for a DSL kernel with
    `options.cost_model` set, its details carry the static cost model's estimate (`argus.eval.costmodel`), and the
    reason says it is one."""
    start = time.perf_counter()
    if not options.cost_model or not candidate.is_dsl:
        return StageResult("profile", Status.SKIPPED, "PROFILE_NO_GPU", "no CUDA GPU here")
    try:
        from argus.eval.costmodel import estimate

        verified = result.stage("verify")
        report = verified.details.get("report") if verified is not None else None
        sizes = dict(options.cost_sizes or (task.bench_sizes[0] if task.bench_sizes else task.small_sizes))
        est = estimate(candidate.kernel, sizes, params=candidate.params, gpu=options.cost_model, findings=report)
    except Exception as e:  # noqa: BLE001 - an estimate that fails is stated, never a rejection
        return _stage("profile", Status.SKIPPED, "PROFILE_NO_GPU", f"no CUDA GPU here (no estimate: {e})", start)
    reason = f"no CUDA GPU here; cost-model estimate {est.ms:.3g} ms on {est.gpu}, not a measurement"
    details = est.to_json()
    try:
        from argus.eval.calibration import calibrated

        corrected = calibrated([est])
    except Exception:  # noqa: BLE001 - a calibration that cannot apply is left out, never a rejection
        corrected = None
    if corrected is not None:  # the kernel, GPU and family the shipped calibration was fitted on (docs/agent.md)
        details["calibrated"] = corrected
        reason += f" (calibrated on measurements: {corrected['ms']:.3g} ms)"
    return _stage("profile", Status.SKIPPED, "PROFILE_NO_GPU", reason, start, cost_model=details)


def gate_kernel(
    task: Task,
    candidate: KernelCandidate,
    sizes: dict[str, int] | None = None,
    options: GateOptions | None = None,
    *,
    baselines: dict[str, Any] | None = None,
) -> GateResult:
    """The gate for a kernel candidate on a built-in task at `sizes` (default: the task's CPU sizes without a
    GPU; with one `options.cost_sizes`, else the task's first benchmark sizes). `baselines`: baseline timings
    already taken in this run (else the profile stage times `options.baselines`)."""
    import torch

    from argus.eval.correctness import allocate_outputs, check_correctness, task_precision, task_reference, to_device
    from argus.eval.device import environment

    options = options or GateOptions()
    device = options.resolved_device()
    gpu = device.startswith("cuda")
    sizes = dict(sizes or ((options.cost_sizes or task.bench_sizes[0]) if gpu else task.small_sizes))
    result = GateResult(candidate.name, task.name, sizes, environment=environment(device))
    precision = task_precision(task)
    fp32 = precision == torch.float32
    forbidden = (*task.forbidden, *options.forbidden)
    with strict_precision(fp32):
        if static_prelude(result, candidate.source_text(), forbidden, fp32):
            return result
        compiled_stage, compiled = compile_stage(candidate, task)
        result.stages.append(compiled_stage)
        if compiled_stage.failed:
            return result
        if options.verify:
            verified = prepared_verify_stage(candidate, options.prepared_verify) or verify_stage(candidate)
            result.stages.append(verified)
            if verified.failed:
                return result
        if options.stop_after == "verify":
            return result
        order = candidate.parameter_names() or [t.name for t in task.tensors]
        loaded = None
        run_device = "cpu"
        note = None
        if gpu and compiled is not None:
            try:
                loaded = _load(compiled)
                run_device = device
            except Exception as e:  # noqa: BLE001 - runtime missing or broken: correctness on the interpreter
                note = f"runtime unavailable ({type(e).__name__}: {e}); correctness ran on the CPU interpreter"
        elif gpu and candidate.is_dsl:
            note = "not compiled; correctness ran on the CPU interpreter"
        elif gpu and not candidate.is_dsl:
            run_device = device
        kernel = loaded if loaded is not None else candidate.kernel
        dsl_on_cpu = loaded is None and candidate.is_dsl
        check_sizes = sizes
        if dsl_on_cpu and gpu and dict(task.small_sizes) != sizes:
            # the interpreter runs a lane at a time: at a GPU's benchmark sizes it would take hours (a GEMM at
            # 4096^3 ran past every time limit); it checks the kernel at the task's CPU sizes instead
            check_sizes = dict(task.small_sizes)
            note = f"{note}; at the task's CPU sizes {check_sizes}, not {sizes}"

        def run(inputs: list[Any], device: str = run_device) -> list[Any]:
            outs = allocate_outputs(task, check_sizes, device)
            args = task.arrange(inputs, outs, order)
            if dsl_on_cpu:
                kernel(*args, device="cpu", **candidate.params)
            else:
                kernel(*args)
            return outs

        reference = task_reference(task, check_sizes, run_device)
        if options.forbidden_ops:
            reference.forbidden_ops = (*reference.forbidden_ops, *options.forbidden_ops)
        correct = check_correctness(reference, run, trials=options.trials, seed=options.seed, device=run_device)
        if note:
            correct.details["note"] = note
        result.stages.append(correct)
        if correct.status != Status.PASSED:
            return result

        if not gpu:
            result.stages.append(_cost_model_stage(candidate, task, options, result))
            return result
        if candidate.is_dsl and loaded is None:
            result.stages.append(
                StageResult("profile", Status.SKIPPED, "PROFILE_NOT_COMPILED", note or "the kernel was not compiled")
            )
            return result

        from argus.eval.baselines import baseline_functions, time_baselines
        from argus.eval.tolerance import tolerance_for

        names = options.baselines if options.baselines is not None else task.default_baselines
        interleave = baselines is None and options.timing == "interleaved" and bool(names)
        if baselines is None and not interleave:
            baselines = time_baselines(
                task,
                sizes,
                names,
                device=device,
                reps=options.reps,
                warmup=options.warmup,
                flush_l2=options.flush_l2,
                graph=options.graph,
                seed=options.seed,
            )
        k = max(1, options.timing_inputs)
        pool = [to_device(task.sample(sizes, options.seed + 101 + i, device), device) for i in range(k)]
        tol = tolerance_for(precision or torch.float32)
        seeds = [options.seed + 7 + i for i in range(k)]
        expected, noise = reference_outputs(
            lambda x: task.reference(*x), lambda x: task.reference(*x), pool, tol, seeds
        )
        outs = allocate_outputs(task, sizes, device)
        rotating = RotatingInputs(pool, expected, tol, outs, noise, seeds)
        args = task.arrange(rotating.buffers, outs, order)
        plain_call = lambda: kernel(*args)  # noqa: E731 - launches on the current stream (graph capture)
        launch = kernel.prepare(*args).launch if hasattr(kernel, "prepare") else plain_call
        # interleaved: each baseline runs on the candidate's input buffers, so in every round it computes the draw
        # the candidate just computed (and no second copy of the inputs is held)
        calls = (
            {
                n: f if isinstance(f, str) else _bound_call(f, rotating.buffers)
                for n, f in baseline_functions(task, names, device).items()
            }
            if interleave
            else None
        )

        profile, flags = profile_stage(
            launch,
            before_rep=rotating.before_rep,
            validate=lambda: rotating.check_after(launch, lambda: torch.cuda.synchronize(device)),
            graph_fn=plain_call,
            flops=task.flops(sizes),
            moved_bytes=task.moved_bytes(sizes),
            baselines=baselines or {},
            options=options,
            device=device,
            baseline_calls=calls,
        )
        result.stages.append(profile)
        result.flags += flags
    return result


# ---------------------------------------------------------------------------------------------------------------
# PyTorch modules (KernelBench)


def load_module_stage(task: ModuleTask, candidate: ModuleCandidate, device: str, seed: int) -> tuple[StageResult, Any]:
    """The compile stage of a PyTorch candidate: import its file (if any), find the class, construct it as the
    reference is constructed; PyTorch's precision switches must be unchanged by all of it."""
    start = time.perf_counter()
    before = PrecisionState.capture()
    cls = candidate.module_class
    if cls is None:
        if candidate.path is None:
            return _stage("compile", Status.FAILED, "COMPILE_MISSING", "no module class and no file", start), None
        try:
            module = import_file(candidate.path, "argus_solution")
        except BaseException as e:  # noqa: BLE001 - SystemExit included: the candidate's failure
            before.restore()
            return (
                _stage(
                    "compile", Status.FAILED, "COMPILE_IMPORT", f"{type(e).__name__}: {e}", start, traceback=_tail(e)
                ),
                None,
            )
        cls = getattr(module, candidate.attr, None)
        if cls is None:
            return (
                _stage(
                    "compile", Status.FAILED, "COMPILE_MISSING", f"{candidate.path} defines no {candidate.attr}", start
                ),
                None,
            )
    try:
        instance = task.build(cls, seed, device)
    except BaseException as e:  # noqa: BLE001
        before.restore()
        return (
            _stage("compile", Status.FAILED, "COMPILE_INIT", f"{type(e).__name__}: {e}", start, traceback=_tail(e)),
            None,
        )
    changed = before.diff(PrecisionState.capture())
    if changed:
        before.restore()
        shown = ", ".join(f"{k}: {a!r} -> {b!r}" for k, (a, b) in changed.items())
        return (
            _stage(
                "compile",
                Status.FAILED,
                "CORRECT_PRECISION_FLAGS",
                f"importing or constructing the candidate changed PyTorch's precision settings ({shown})",
                start,
            ),
            None,
        )
    return _stage("compile", Status.PASSED, None, f"{cls.__name__} constructed", start), instance


def argus_kernels_of(model: Any) -> list[tuple[str, Any]]:
    """The ``@argus.kernel`` functions defined in or imported into the module that defines `model`'s class."""
    import sys

    module = sys.modules.get(type(model).__module__)
    if module is None:
        return []
    found = [(n, v) for n, v in vars(module).items() if hasattr(v, "trace") and hasattr(v, "tensor_specs")]
    return sorted(found, key=lambda item: item[0])


def module_verify_stage(model: Any) -> StageResult:
    """Verify every argus kernel a PyTorch candidate's module uses (traced with its defaults); skipped when it
    uses none."""
    start = time.perf_counter()
    kernels = argus_kernels_of(model)
    if not kernels:
        return _stage("verify", Status.SKIPPED, "VERIFY_NOT_APPLICABLE", "no argus kernel in the candidate", start)
    stages = [(name, verify_stage(KernelCandidate(name, fn))) for name, fn in kernels]
    details = {"kernels": {name: st.to_json() for name, st in stages}}
    for status in (Status.FAILED, Status.ERROR, Status.SKIPPED, Status.UNKNOWN):
        hit = next(((n, st) for n, st in stages if st.status == status), None)
        if hit is not None:
            name, st = hit
            return _stage("verify", status, st.code, f"{name}: {st.reason}", start, **details)
    names = ", ".join(n for n, _ in stages)
    return _stage("verify", Status.PASSED, None, f"every invariant verified ({names})", start, **details)


def _tail(exc: BaseException) -> str:
    import traceback

    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return "\n".join(text.rstrip().splitlines()[-20:])


def gate_module(
    task: ModuleTask,
    candidate: ModuleCandidate,
    options: GateOptions | None = None,
    *,
    baselines: dict[str, Any] | None = None,
) -> GateResult:
    """The gate for a PyTorch module candidate (KernelBench's ``ModelNew``) on a module task. A candidate given as a
    file runs in a sandbox (`argus.eval.judge.gate_module_sandboxed`) unless ``options.sandbox`` is off."""
    import torch

    options = options or GateOptions()
    if options.sandbox and candidate.module_class is None and candidate.path is not None:
        from argus.eval.judge import gate_module_sandboxed

        return gate_module_sandboxed(task, candidate, options, baselines=baselines)

    from argus.eval.correctness import check_correctness, module_reference, to_device
    from argus.eval.device import environment
    from argus.eval.tolerance import lowest_precision, tolerance_for

    options = options or GateOptions()
    device = options.resolved_device()
    gpu = device.startswith("cuda")
    result = GateResult(candidate.name, task.name, dict(task.sizes), environment=environment(device))
    precision = lowest_precision(task.input_dtypes())
    fp32 = precision in (None, torch.float32)
    forbidden = (*task.forbidden, *options.forbidden)
    with strict_precision(fp32):
        if static_prelude(result, candidate.source_text(), forbidden, fp32):
            return result
        compiled, model = load_module_stage(task, candidate, device, options.seed)
        result.stages.append(compiled)
        if compiled.failed:
            return result
        if options.verify:
            verified = module_verify_stage(model)
            result.stages.append(verified)
            if verified.failed:
                return result

        def run(inputs: list[Any]) -> Any:
            with torch.no_grad():
                return model(*inputs)

        try:
            reference = module_reference(task, device, options.seed)
        except Exception as e:  # noqa: BLE001
            result.stages.append(
                StageResult("correct", Status.ERROR, "CORRECT_REFERENCE_FAILED", f"building the reference: {e}")
            )
            return result
        reference.forbidden_ops = (*reference.forbidden_ops, *options.forbidden_ops)
        correct = check_correctness(reference, run, trials=options.trials, seed=options.seed, device=device)
        result.stages.append(correct)
        if correct.status != Status.PASSED:
            return result
        if not gpu:
            result.stages.append(StageResult("profile", Status.SKIPPED, "PROFILE_NO_GPU", "no CUDA GPU here"))
            return result

        from argus.eval.baselines import module_baseline_functions, time_module_baselines

        names = options.baselines if options.baselines is not None else ("eager", "compile")
        interleave = baselines is None and options.timing == "interleaved" and bool(names)
        if baselines is None and not interleave:
            baselines = time_module_baselines(
                task,
                names,
                device=device,
                reps=options.reps,
                warmup=options.warmup,
                flush_l2=options.flush_l2,
                graph=options.graph,
                seed=options.seed,
            )
        k = max(1, options.timing_inputs)
        pool = [to_device(task.sample(options.seed + 101 + i, device), device) for i in range(k)]
        precision = lowest_precision([x.dtype for x in pool[0] if isinstance(x, torch.Tensor)]) or torch.float32
        tol = tolerance_for(precision)
        seeds = [options.seed + 7 + i for i in range(k)]
        expected, noise = reference_outputs(reference.run_high, reference.run_native, pool, tol, seeds)
        rotating = RotatingInputs(pool, expected, tol, noise=noise, seeds=seeds)

        def call() -> None:
            with torch.no_grad():
                rotating.record(model(*rotating.buffers))

        calls = (
            {
                n: f if isinstance(f, str) else _bound_call(f, rotating.buffers)
                for n, f in module_baseline_functions(task, names, device, options.seed).items()
            }
            if interleave
            else None
        )
        profile, flags = profile_stage(
            call,
            before_rep=rotating.before_rep,
            validate=lambda: rotating.check_after(call, lambda: torch.cuda.synchronize(device)),
            flops=task.flops,
            moved_bytes=task.moved_bytes,
            baselines=baselines or {},
            options=options,
            device=device,
            baseline_calls=calls,
        )
        result.stages.append(profile)
        result.flags += flags
    return result
