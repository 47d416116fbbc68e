"""The gate's ``correct`` stage: several trials on fresh inputs against a float64 reference, with the defences
that keep a candidate from passing without computing the answer.

One trial, in order (`check_correctness`):

1. draw the task's native inputs with a fresh seed, then redraw their values from the trial's distribution
   (`argus.eval.inputs`: normal, uniform, large, small, outliers — never only zeros, never only standard normal);
2. keep a pristine copy; fill recently freed memory of the sizes in play with NaN (`scrub_memory`), so an output
   the candidate allocates and never writes reads NaN;
3. run the candidate on its own copy of the inputs, with the precision switches captured before and after and
   the PyTorch operators it dispatches recorded. The reference has not run yet for these inputs, so there is no
   reference result anywhere in memory for the candidate to find (or to receive from a freed block);
4. check: no exception, precision switches unchanged, no forbidden operator, inputs bit-identical to the
   pristine copy;
5. run the reference on float64 copies of the pristine inputs, and once more in the task's own precision. The
   latter is a self-check of the trial: a redrawn distribution on which the task's own reference misses its
   tolerance (or that makes the float64 reference non-finite) is outside what the task can compute, so the
   trial is discarded (stated in the result) and another drawn;
6. compare every output element (`argus.eval.tolerance.compare`, in chunks on the device), then poison the
   candidate's outputs before freeing them. Everything stays on the device the trial runs on; the memory that
   the references free is overwritten with NaN by the next trial's scrub before the candidate runs.

The same candidate object serves every trial, so a candidate that caches its result across calls returns a
stale answer for the new inputs and fails.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from argus.eval.guards import (
    OpRecorder,
    PrecisionState,
    changed_inputs,
    clone_all,
    poison_,
    scrub_memory,
)
from argus.eval.inputs import describe, redistribute, trial_distributions
from argus.eval.results import StageResult, Status
from argus.eval.tolerance import (
    NOISE_FACTOR,
    Tolerance,
    compare,
    compare_any,
    input_scale,
    lowest_precision,
    tolerance_for,
)
from argus.tasks.base import ModuleTask, Task, torch_dtype


class RemoteCandidate(Protocol):
    """A candidate that runs in another process (`argus.eval.judge.RemoteModule`): told each trial's seed and
    distribution before it is called, so that it may draw the same inputs there instead of receiving them."""

    def prepare_trial(self, seed: int, distribution: str) -> None: ...

    def __call__(self, inputs: list[Any]) -> Any: ...


class CandidateFailure(Exception):
    """Raised by a candidate callable that runs the candidate elsewhere (`argus.eval.judge.RemoteModule`) to report
    why the call failed, with the gate code to record (``CORRECT_PRECISION_FLAGS``, ``SANDBOX_CRASHED`` ...)."""

    def __init__(self, code: str, reason: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason
        self.details = dict(details or {})


@dataclass
class Reference:
    """What the correctness check needs from a task.

    Attributes:
        name: the task's name.
        sample: ``sample(seed)`` -> the task's native inputs (CPU tensors and plain values), freshly drawn.
        run_high: the reference on float64 inputs (floating tensors converted), returning its outputs.
        run_native: the reference on inputs in the task's own dtypes (the self-check and the eager baseline).
        precision: the dtype whose tolerance applies; None: the least precise floating dtype among the inputs
            and the native reference's outputs.
        output_dtypes: the dtypes the candidate's outputs must have; None: those of the native reference.
        forbidden_ops: operator patterns (``aten::mm``) the candidate may not dispatch (`OpRecorder`).
    """

    name: str
    sample: Callable[[int], list[Any]]
    run_high: Callable[[list[Any]], Any]
    run_native: Callable[[list[Any]], Any]
    precision: Any = None
    output_dtypes: Sequence[Any] | None = None
    forbidden_ops: tuple[str, ...] = ()


def task_precision(task: Task) -> Any | None:
    """The least precise floating dtype among a built-in task's tensors: the dtype whose tolerance applies."""
    return lowest_precision([torch_dtype(t.dtype) for t in task.tensors])


def allocate_outputs(task: Task, sizes: Mapping[str, int], device: Any) -> list[Any]:
    """Fresh output tensors of a built-in task at `sizes` on `device`, NaN-poisoned (an element the candidate
    never writes fails the comparison)."""
    import torch

    return [
        poison_(torch.empty(spec.resolve(sizes), dtype=torch_dtype(spec.dtype), device=device)) for spec in task.outputs
    ]


def task_reference(task: Task, sizes: Mapping[str, int], device: Any = None) -> Reference:
    """The `Reference` of a built-in task at `sizes`: its PyTorch reference run on float64 copies and in the task's
    own dtypes, its tolerance (`task_precision`), its outputs' dtypes and forbidden operators; inputs drawn on
    `device` when it is a GPU (`Task.sample`)."""
    return Reference(
        name=task.name,
        sample=lambda seed: task.sample(sizes, seed, device),
        run_high=lambda inputs: task.reference(*inputs),
        run_native=lambda inputs: task.reference(*inputs),
        precision=task_precision(task),
        output_dtypes=[torch_dtype(t.dtype) for t in task.outputs],
        forbidden_ops=task.forbidden_ops,
    )


def module_reference(task: ModuleTask, device: Any, seed: int = 0) -> Reference:
    """The `Reference` of a module task (KernelBench's format): the reference module built at `seed` on `device`
    (`ModuleTask.build`) in its own precision, and a float64 copy of it (same weights)."""
    import copy

    import torch

    native = task.build(task.model, seed, device)
    high = copy.deepcopy(native).to(torch.float64)

    def run_native(inputs: list[Any]) -> Any:
        with torch.no_grad():
            return native(*inputs)

    def run_high(inputs: list[Any]) -> Any:
        with torch.no_grad():
            return high(*inputs)

    return Reference(
        name=task.name,
        sample=lambda seed: task.sample(seed, device),
        run_high=run_high,
        run_native=run_native,
        forbidden_ops=task.forbidden_ops,
    )


@dataclass
class _Trial:
    distribution: str
    seed: int
    reference: str = "float64"
    max_abs_err: float = 0.0
    rel_norm: float = 0.0
    seconds_candidate: float = 0.0
    seconds_reference: float = 0.0
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "distribution": self.distribution,
            "seed": self.seed,
            "reference": self.reference,
            "max_abs_err": self.max_abs_err,
            "rel_norm": self.rel_norm,
            "seconds_candidate": round(self.seconds_candidate, 5),
            "seconds_reference": round(self.seconds_reference, 5),
            **({"notes": self.notes} if self.notes else {}),
        }


def as_outputs(value: Any) -> list[Any]:
    """A module's or function's return value as a flat list of tensors (tuples, lists and dicts flattened;
    plain numbers become 0-d tensors)."""
    import torch

    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, list | tuple):
        return [t for v in value for t in as_outputs(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in as_outputs(v)]
    if isinstance(value, int | float | bool):
        return [torch.as_tensor(value)]
    if value is None:
        return []
    raise TypeError(f"cannot read a {type(value).__name__} as outputs")


def to_high(inputs: Sequence[Any]) -> list[Any]:
    """Floating tensors as float64 copies (always copies, so a reference that writes into its inputs writes into
    its own); the rest as they are."""
    import torch

    return [
        x.detach().to(torch.float64, copy=True) if isinstance(x, torch.Tensor) and x.is_floating_point() else x
        for x in inputs
    ]


#: The judge's own copies of a trial (pristine inputs, the candidate's outputs, the references) move to the host when
#: this many times the trial's input bytes would not fit in the device memory left free: kept on the device, a trial
#: holds about eight such copies at its peak (inputs, pristine, the candidate's outputs and their copy, the float64
#: inputs and outputs, the native run's), which at KernelBench's full sizes (6.4 GB a tensor) exceeded an H100.
HOST_COPIES_FACTOR = 8


def copies_on_host(inputs: Sequence[Any], device: Any) -> bool:
    """Whether the judge keeps its copies of a trial on `inputs` on the host (see `HOST_COPIES_FACTOR`)."""
    import torch

    d = torch.device(device)
    if d.type != "cuda":
        return False
    free, _total = torch.cuda.mem_get_info(d)
    # what this process's caching allocator holds and does not use is free to it, though not to the driver's count
    free += torch.cuda.memory_reserved(d) - torch.cuda.memory_allocated(d)
    return HOST_COPIES_FACTOR * sum(_nbytes(inputs)) > free


#: Device tensors of at least this many bytes are copied to page-locked host memory by `to_host`.
PINNED_MIN_BYTES = 1 << 26


def to_host(values: Sequence[Any]) -> list[Any]:
    """Copies of the tensors in `values` in host memory (always copies); the rest as they are. A large device
    tensor goes to page-locked memory (`PINNED_MIN_BYTES`): a copy into fresh pageable memory ran at ~1.5 GB/s on
    an H200 host (a 17 GB KernelBench input: ~12 s); where page-locked memory cannot be had, pageable."""
    import torch

    def copy(v: Any) -> Any:
        if v.device.type == "cuda" and v.numel() * v.element_size() >= PINNED_MIN_BYTES:
            try:
                out = torch.empty_like(v, device="cpu", pin_memory=True)
            except RuntimeError:
                return v.detach().to("cpu", copy=True)
            out.copy_(v.detach())
            return out
        return v.detach().to("cpu", copy=True)

    return [copy(v) if isinstance(v, torch.Tensor) else v for v in values]


def copy_to(values: Sequence[Any], device: Any) -> list[Any]:
    """Copies of the tensors in `values` on `device` (always copies, even where they already are); the rest as is."""
    import torch

    return [v.detach().to(device, copy=True) if isinstance(v, torch.Tensor) else v for v in values]


def to_device(inputs: Sequence[Any], device: Any) -> list[Any]:
    import torch

    return [x.to(device) if isinstance(x, torch.Tensor) else x for x in inputs]


def _sync(device: Any) -> None:
    import torch

    if str(device).startswith("cuda"):
        torch.cuda.synchronize()


def _nbytes(values: Sequence[Any]) -> list[int]:
    import torch

    return [v.numel() * v.element_size() for v in values if isinstance(v, torch.Tensor)]


def _tail(exc: BaseException, lines: int = 25) -> str:
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return "\n".join(text.rstrip().splitlines()[-lines:])


def _fail(code: str, reason: str, details: dict[str, Any], start: float, status: Status = Status.FAILED) -> StageResult:
    return StageResult("correct", status, code, reason, details, time.perf_counter() - start)


def check_correctness(
    reference: Reference,
    candidate: Callable[[list[Any]], Any],
    *,
    trials: int = 6,
    seed: int = 0,
    device: Any = "cpu",
    max_attempts: int | None = None,
    host_copies: bool | None = None,
) -> StageResult:
    """Run the ``correct`` stage (see the module docstring) and return its `StageResult`.

    `candidate(inputs)` runs the candidate on a list of inputs (on `device`) and returns its outputs. Passes
    when `trials` trials (at least 5 recommended; KernelBench uses 5) on fresh inputs all match; stops at the
    first failing trial, whose distribution, seed, element and numbers the details give.

    `host_copies`: keep the judge's own copies of each trial (pristine inputs, the candidate's outputs, the
    references once computed) in host memory, the device holding only what runs; None decides per trial
    (`copies_on_host`). The references still run on `device`; the comparisons then read host tensors, chunk by chunk
    on the GPU when there is one (`argus.eval.tolerance`)."""
    import torch

    start = time.perf_counter()
    plan = trial_distributions(trials)
    max_attempts = max_attempts if max_attempts is not None else 3 * trials
    done: list[_Trial] = []
    rejected: list[dict[str, Any]] = []
    scrub_sizes: list[int] = []
    native_nonfinite = False
    tol: Tolerance | None = None
    first_inputs: list[dict[str, Any]] = []
    recorder_ok = True
    details: dict[str, Any] = {"device": str(device), "trials_requested": trials}
    attempt = 0
    while len(done) < trials and attempt < max_attempts:
        distribution = plan[attempt] if attempt < len(plan) else _replacement(done)
        trial_seed = seed * 1_000_003 + attempt * 7919 + 17
        attempt += 1
        trial = _Trial(distribution, trial_seed)
        details_trial = {"trial": len(done), "distribution": distribution, "seed": trial_seed}

        # 1. fresh inputs
        try:
            native = reference.sample(trial_seed)
        except Exception as e:  # noqa: BLE001 - the task's sampler: a harness problem
            return _fail(
                "CORRECT_REFERENCE_FAILED",
                f"the task's input generator raised: {e}",
                {**details, **details_trial, "traceback": _tail(e)},
                start,
                Status.ERROR,
            )
        inputs = redistribute(to_device(native, device), distribution, trial_seed)
        native = None  # one copy fewer on the device while the candidate runs (KernelBench's inputs reach 8 GB)
        if not first_inputs:
            first_inputs = describe(inputs)
        host = copies_on_host(inputs, device) if host_copies is None else host_copies
        if host:
            details["judge_copies"] = "host"
        pristine = to_host(inputs) if host else clone_all(inputs)

        # 2-3. the candidate, first, on scrubbed memory (its own process scrubs its own, for a remote candidate,
        # which may also draw these inputs itself from the same seed: `RemoteCandidate`)
        remote = getattr(candidate, "prepare_trial", None)
        if remote is None:
            scrub_memory(scrub_sizes + _nbytes(pristine), device)
            cand_inputs = copy_to(pristine, device) if host else clone_all(pristine)
            inputs = None
        else:  # the candidate works on its own copy in its own process: this one is only written back into
            remote(trial_seed, distribution)
            cand_inputs = inputs
        before = PrecisionState.capture()
        torch.manual_seed(trial_seed)
        t0 = time.perf_counter()
        recorder = OpRecorder() if reference.forbidden_ops and recorder_ok else None
        try:
            if recorder is not None:
                with recorder:
                    raw = candidate(cand_inputs)
            else:
                raw = candidate(cand_inputs)
            _sync(device)
            outputs = as_outputs(raw)
        except CandidateFailure as e:
            before.restore()
            return _fail(
                e.code,
                f"trial {len(done)} ({distribution} inputs): {e.reason}",
                {**details, **details_trial, **e.details},
                start,
            )
        except Exception as e:  # noqa: BLE001 - the candidate's failure is the result
            before.restore()
            return _fail(
                "CORRECT_EXCEPTION",
                f"trial {len(done)} ({distribution} inputs): the candidate raised {type(e).__name__}: {e}",
                {**details, **details_trial, "traceback": _tail(e)},
                start,
            )
        trial.seconds_candidate = time.perf_counter() - t0
        raw = None

        # 4. precision switches, forbidden operators, inputs untouched
        after = PrecisionState.capture()
        changed_flags = before.diff(after)
        if changed_flags:
            before.restore()
            shown = ", ".join(f"{k}: {a!r} -> {b!r}" for k, (a, b) in changed_flags.items())
            return _fail(
                "CORRECT_PRECISION_FLAGS",
                f"the candidate changed PyTorch's precision settings ({shown})",
                {**details, **details_trial, "changed": {k: list(v) for k, v in changed_flags.items()}},
                start,
            )
        if recorder is not None:
            hits = recorder.matching(reference.forbidden_ops)
            if hits:
                return _fail(
                    "CORRECT_FORBIDDEN_OP",
                    f"the candidate dispatched {', '.join(hits)}, which this task forbids",
                    {**details, **details_trial, "operators": hits, "patterns": list(reference.forbidden_ops)},
                    start,
                )
        modified = changed_inputs(pristine, cand_inputs)  # on the host path, compared piecewise on the device
        cand_final = {
            i: cand_inputs[i].detach().to("cpu" if host else cand_inputs[i].device, copy=True) for i in modified
        }
        # the candidate's outputs, copied (on the device, or to the host) out of whatever memory it returned
        cand_outputs = (
            to_host(outputs) if host else [o.detach().clone() if isinstance(o, torch.Tensor) else o for o in outputs]
        )
        scrub_sizes = sorted(set(scrub_sizes) | set(_nbytes(cand_outputs)))
        for o in outputs:
            if isinstance(o, torch.Tensor) and not any(o is x for x in cand_inputs):
                poison_(o)
        del outputs, cand_inputs
        inputs = None  # the pristine copy is what the reference runs on

        # 5. the reference, in float64 and in the task's precision
        t0 = time.perf_counter()
        try:
            torch.manual_seed(trial_seed)
            if host:  # each reference runs on the device, one at a time, and its outputs move to the host
                ref_high = to_host(as_outputs(reference.run_high(to_high(copy_to(pristine, device)))))
                torch.manual_seed(trial_seed)
                native_dev = copy_to(pristine, device)
                ref_native = to_host(as_outputs(reference.run_native(native_dev)))
                # only the inputs the reference wrote into are copied back (the rest are the pristine bits)
                written = set(changed_inputs(pristine, native_dev))
                native_in = [to_host([x])[0] if i in written else pristine[i] for i, x in enumerate(native_dev)]
                del native_dev
            else:
                ref_high, ref_native, native_in = run_references(reference, pristine, trial_seed)
            _sync(device)
        except Exception as e:  # noqa: BLE001
            if distribution != "native":
                rejected.append({**details_trial, "why": f"the reference raised {type(e).__name__}: {e}"})
                continue
            return _fail(
                "CORRECT_REFERENCE_FAILED",
                f"the task's reference raised on its own inputs: {type(e).__name__}: {e}",
                {**details, **details_trial, "traceback": _tail(e)},
                start,
                Status.ERROR,
            )
        trial.seconds_reference = time.perf_counter() - t0
        ref_modified = changed_inputs(pristine, native_in)
        scrub_sizes = sorted(set(scrub_sizes) | set(_nbytes(ref_native)))

        if tol is None:
            precision = reference.precision or lowest_precision(
                [x.dtype for x in pristine if isinstance(x, torch.Tensor)] + [r.dtype for r in ref_native]
            )
            tol = tolerance_for(precision or torch.float32)
            details["tolerance"] = tol.to_json()
            details["reference_precision"] = sorted({str(r.dtype).removeprefix("torch.") for r in ref_high})

        scale_in = input_scale(pristine)

        # self-check of the trial's distribution
        nonfinite = any(r.is_floating_point() and not bool(torch.isfinite(r).all()) for r in ref_high)
        if distribution == "native":
            native_nonfinite = native_nonfinite or nonfinite
        kind, expected, noise, why = reference_choice(ref_native, ref_high, tol, scale_in)
        if distribution != "native" and (
            kind not in ("float64", "float64 or native") or (nonfinite and not native_nonfinite)
        ):
            if nonfinite and not native_nonfinite:
                why = "the float64 reference is not finite on these inputs"
            rejected.append({**details_trial, "why": why})
            _discard(cand_outputs)
            del cand_outputs, ref_high, ref_native, native_in
            continue
        if kind == "invalid":
            return _fail(
                "CORRECT_NO_VALID_TRIALS",
                f"on its own inputs, {why}",
                {**details, **details_trial},
                start,
                Status.ERROR,
            )
        if kind != "float64":
            trial.reference = kind
            trial.notes.append(why)

        # inputs: untouched, or (where the task's reference itself writes into an input) changed as it does
        if modified:
            allowed = set(modified) <= set(ref_modified) and all(
                compare(cand_final[i], native_in[i].detach(), tol, input_scale=scale_in).ok for i in modified
            )
            if not allowed:
                return _fail(
                    "CORRECT_INPUT_MODIFIED",
                    f"trial {len(done)} ({distribution} inputs): the candidate wrote into input(s) "
                    f"{', '.join(map(str, modified))}",
                    {**details, **details_trial, "inputs_modified": modified},
                    start,
                )
            trial.notes.append(f"input(s) {modified} modified exactly as the task's reference modifies them")

        # 6. compare
        if len(cand_outputs) != len(ref_high):
            return _fail(
                "CORRECT_OUTPUT_COUNT",
                f"the candidate returned {len(cand_outputs)} output(s), the reference {len(ref_high)}",
                {**details, **details_trial},
                start,
            )
        want_dtypes = (
            list(reference.output_dtypes) if reference.output_dtypes is not None else [r.dtype for r in ref_native]
        )
        lucky = False
        for i, (got, want) in enumerate(zip(cand_outputs, expected, strict=True)):
            if isinstance(got, torch.Tensor) and i < len(want_dtypes) and got.dtype != want_dtypes[i]:
                return _fail(
                    "CORRECT_DTYPE",
                    f"output {i} has dtype {str(got.dtype).removeprefix('torch.')}, expected "
                    f"{str(want_dtypes[i]).removeprefix('torch.')}",
                    {**details, **details_trial},
                    start,
                )
            result = compare_any(
                got, want, tol, name=f"output {i}", input_scale=scale_in, noise=noise[i] if noise else None
            )
            if not result.ok and distribution != "native" and kind == "float64" and not host:
                # before rejecting: did the task's own precision meet float64 on these inputs only by chance?
                chance = rounding_luck(reference, pristine, tol, scale_in, trial_seed)
                if chance is not None:
                    lucky = True
                    rejected.append({**details_trial, "why": chance, "candidate": result.reason})
                    break
            if not result.ok:
                return _fail(
                    result.code or "CORRECT_MISMATCH",
                    f"trial {len(done)} ({distribution} inputs, seed {trial_seed}): {result.reason}",
                    {**details, **details_trial, "comparison": result.details, "inputs": describe(pristine)},
                    start,
                )
            trial.max_abs_err = max(trial.max_abs_err, float(result.details.get("max_abs_err", 0.0)))
            trial.rel_norm = max(trial.rel_norm, float(result.details.get("rel_norm", 0.0)))
        if lucky:  # the trial is discarded, as one whose references disagree (`rejected_distributions`)
            _discard(cand_outputs)
            del cand_outputs, ref_high, ref_native, native_in, cand_final, pristine, inputs, native
            continue
        _discard(cand_outputs)
        # nothing of this trial's reference stays reachable while the next trial's candidate runs
        del cand_outputs, ref_high, ref_native, native_in, cand_final, pristine, inputs, native
        done.append(trial)

    details.update(
        {
            "trials_passed": len(done),
            "trials": [t.to_json() for t in done],
            "rejected_distributions": rejected,
            "inputs": first_inputs,
            "max_abs_err": max((t.max_abs_err for t in done), default=0.0),
            "max_rel_norm": max((t.rel_norm for t in done), default=0.0),
        }
    )
    if len(done) < trials:
        return _fail(
            "CORRECT_NO_VALID_TRIALS",
            f"only {len(done)} of {trials} trials had inputs on which the task's own reference meets its tolerance",
            details,
            start,
            Status.ERROR,
        )
    kinds = sorted({t.distribution for t in done})
    return StageResult(
        "correct",
        Status.PASSED,
        None,
        f"{len(done)} trials on {', '.join(kinds)} inputs match the reference",
        details,
        time.perf_counter() - start,
    )


def run_references(reference: Reference, inputs: list[Any], seed: int) -> tuple[list[Any], list[Any], list[Any]]:
    """The task's reference on `inputs` in float64 and in its own precision, PyTorch's generator seeded with `seed`
    before each (as for the candidate): (float64 outputs, native outputs, the native run's inputs as it left them)."""
    import torch

    torch.manual_seed(seed)
    high = [r.detach() for r in as_outputs(reference.run_high(to_high(inputs)))]
    torch.manual_seed(seed)
    native_in = clone_all(inputs)
    native = [r.detach() for r in as_outputs(reference.run_native(native_in))]
    return high, native, native_in


#: How many nudged copies of a trial's inputs `rounding_luck` runs the task's two references on.
LUCK_PROBES = 2


def rounding_luck(
    reference: Reference, pristine: list[Any], tol: Tolerance, scale: float | None, seed: int
) -> str | None:
    """Why the task's reference in its own precision met the float64 one on a redrawn trial's inputs only by chance
    (None: it meets it on nearby inputs too, or the probe could not run). Asked only before a candidate is rejected
    on such a trial: both references run again on `LUCK_PROBES` copies of the inputs with every floating element
    moved by up to two units in its last place (the sign, zeros and the dtype kept), where the task computes the
    same thing with its rounding reshuffled. If the task's own precision misses the tolerance there, the output is
    too ill-conditioned for it at this distribution (an exactly cancelling sum: a KL divergence of nearly equal
    float16 distributions, whose float16 eager result is off by several times the bound), and the trial is
    discarded as one whose references disagree would have been, rather than failing a candidate that rounds
    differently from the task's one lucky run."""
    import torch

    for k in range(LUCK_PROBES):
        gen = torch.Generator().manual_seed(seed + 7001 * (k + 1))
        nudged = []
        for x in pristine:
            if isinstance(x, torch.Tensor) and x.is_floating_point() and x.dtype != torch.float64:
                u = torch.rand(tuple(x.shape), generator=gen, dtype=torch.float64).to(x.device) * 2.0 - 1.0
                nudged.append((x.double() * (1.0 + 2.0 * torch.finfo(x.dtype).eps * u)).to(x.dtype))
            else:
                nudged.append(x.clone() if isinstance(x, torch.Tensor) else x)
        try:
            high, native, _ = run_references(reference, nudged, seed)
        except Exception:  # noqa: BLE001 (the probe inputs broke an assumption of the task: no finding either way)
            return None
        kind, _, _, why = reference_choice(native, high, tol, scale)
        if kind != "float64":
            return f"on nearby inputs (every element moved by up to two units in its last place) {why}"
    return None


def reference_choice(
    native: list[Any], high: list[Any], tol: Tolerance, scale: float | None
) -> tuple[str, list[Any], list[Any] | None, str]:
    """What to compare a candidate with, given the task's reference run in its own precision (`native`) and in
    float64 (`high`) on the same inputs: ``(kind, expected, noise, why)``.

    * ``"float64"`` — they agree within the tolerance: the float64 outputs, no noise floor;
    * ``"noise floor"`` — every element agrees but the relative norm does not: the output is dominated by
      rounding (a mathematically zero mean, say); the float64 outputs, with the tolerance floored at
      `NOISE_FACTOR` times the native reference's own deviation (`argus.eval.tolerance.compare`);
    * ``"float64 or native"`` — some elements disagree but every output's error norm is within the tolerance:
      the task's own precision rounds past the elementwise bound here and there (a bf16 pointwise chain rounds at
      each step), it computes the same thing; each such output is the pair ``(float64, native)`` and a candidate
      may match either (`argus.eval.tolerance.compare_any`): a more precise candidate matches float64, one that
      rounds as the reference does matches its run;
    * ``"native"`` — elements disagree and the error norm too: the float64 run computes something else (random
      draws that depend on the dtype, dtype-dependent branches); the native outputs at the standard tolerance, as
      KernelBench does;
    * ``"invalid"`` — output counts or shapes differ, or the native outputs are NaN/Inf where float64's are not.
    """
    import torch

    if len(native) != len(high) or any(tuple(n.shape) != tuple(h.shape) for n, h in zip(native, high, strict=True)):
        return "invalid", high, None, "the reference returns different outputs in float64 and in its own precision"
    checks = [
        compare(n, h, tol, name=f"reference output {i}", input_scale=scale)
        for i, (n, h) in enumerate(zip(native, high, strict=True))
    ]
    if all(c.ok for c in checks):
        return "float64", high, None, ""
    first = next(c for c in checks if not c.ok)
    head = "the task's own reference in its precision misses the tolerance: " + first.reason
    if any(c.code == "CORRECT_NONFINITE" for c in checks):
        return "invalid", high, None, head
    if any(c.details.get("mismatched") for c in checks) and all(c.ok or c.details.get("norm_ok") for c in checks):
        why = (
            "the task's reference in its own precision misses the elementwise tolerance on a few elements while its "
            "error norm is within it (rounding that compounds): the candidate may match it or the float64 reference"
        )
        either = [h if c.ok else (h, n) for c, n, h in zip(checks, native, high, strict=True)]
        return "float64 or native", either, None, why
    if any(c.details.get("mismatched") for c in checks):
        why = (
            "the float64 reference computes something else here (random draws or branches that depend on the dtype): "
            "compared with the task's reference in its own precision, as KernelBench does"
        )
        return "native", native, None, why
    noise = [(n.to(torch.float64) - h) if n.is_floating_point() else None for n, h in zip(native, high, strict=True)]
    why = (
        f"the output is dominated by rounding: tolerance floored at {NOISE_FACTOR:g}x the task's own rounding noise "
        "(its reference in its own precision minus float64)"
    )
    return "noise floor", high, noise, why


def _discard(*groups: list[Any]) -> None:
    """Poison tensors that are done with, so that memory they leave behind reads NaN."""
    import torch

    for group in groups:
        for t in group:
            if isinstance(t, torch.Tensor) and t.numel():
                poison_(t)


def _replacement(done: list[_Trial]) -> str:
    """The distribution of a trial drawn to replace a discarded one: cycle through those accepted so far."""
    kinds = [t.distribution for t in done] or ["native"]
    return kinds[len(done) % len(kinds)]
