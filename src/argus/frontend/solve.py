"""`solve`: from a KernelBench-style problem to a judged solution made of verified DSL kernels, with no LLM.

The pipeline, one step per line:

1. `capture` — torch.export of the problem at its (possibly overridden) sizes, core ATen decompositions;
2. `partition` — every operator classified, pointwise chains grouped by FX's capability-based partitioner;
3. `families` — each group's kernel generated from its family's template, its reference the group's FX subgraph;
4. `emit` — the solution file: the kernels and a ``ModelNew`` that launches them (ATen for what is not covered);
5. per kernel: the verifier (`argus.verify`) on the traced kernel, and a check against the group's FX subgraph on
   random inputs at the captured shapes (float64 reference; the tolerance of the kernel's dtypes): the compiled
   kernel on a GPU, else the CPU interpreter, which is skipped past `INTERPRETER_ELEMENTS` (KernelBench's own sizes
   reach 4e9 elements; the interpreter runs about 2e6 a second);
6. the gate — the solution file judged as every KernelBench solution is (`argus.eval.gate.gate_module`: the file
   runs in the sandbox; on a GPU its kernels are compiled and timed against eager and ``torch.compile``, on the CPU
   they run on the interpreter; the judge draws the inputs and compares). On the CPU, a solution whose kernel check
   was skipped for size is not judged either (the gate would run the same interpreter at the same size).

A problem is *solved* when the gate accepts the solution (correct) and every compute operator ran in an argus
kernel (no operator left uncovered). The solution file is argus's own output, imported here for step 5; the
gate never trusts it.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from argus.frontend.capture import Capture, capture
from argus.frontend.emit import emit
from argus.frontend.errors import FrontendError
from argus.frontend.families.base import KernelSource
from argus.frontend.partition import Partition, partition

#: Largest error relative to the reference's scale in the kernel check, by the kernel's least precise dtype.
TOLERANCE = {"f32": 1e-4, "f16": 5e-3, "bf16": 2e-2}

#: The CPU interpreter checks a kernel whose tensors hold at most this many elements together (it runs about 2e6
#: elements a second); past it the check is skipped, and said so, and the solution is judged on a GPU.
INTERPRETER_ELEMENTS = 1 << 24


@dataclass
class KernelReport:
    """One generated kernel: its operators, the verifier's verdict and the check against its reference (on the CPU
    interpreter, or compiled on a GPU: `checked_on`; "" when the check was skipped, `skipped` says why)."""

    name: str
    family: str
    ops: list[str]
    numel: int
    verdict: str = "not run"
    verify_summary: str = ""
    interpreter_error: float | None = None
    tolerance: float = 1e-4
    interpreter_ok: bool = False
    checked_on: str = ""
    skipped: str = ""
    #: the trace-time parameters its launches pass (tuned policies; empty: the template's defaults)
    params: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass
class SolveResult:
    """What `solve` did: the partition, each kernel's report, where the solution is, the gate's result and the
    verdict (`solved`: correct and fully covered)."""

    problem: str
    sizes: dict[str, Any]
    groups: list[dict[str, Any]]
    uncovered: list[dict[str, Any]]
    kernels: list[KernelReport]
    solution: str
    gate: Any = None
    seconds: float = 0.0
    specialized: list[str] = field(default_factory=list)
    #: why the gate did not run (empty when it did)
    not_judged: str = ""
    #: how the problem was captured when torch.export could not (`argus.frontend.dynamo`: its graphs); else ''
    captured: str = ""

    @property
    def covered(self) -> bool:
        return not self.uncovered

    @property
    def correct(self) -> bool:
        return self.gate is not None and self.gate.verdict == "accepted"

    @property
    def kernels_ok(self) -> bool:
        """Every kernel verified (or `unknown`) and, where it was checked, within its tolerance."""
        return all(k.verdict in ("verified", "unknown") and (k.interpreter_ok or k.skipped) for k in self.kernels)

    @property
    def solved(self) -> bool:
        return self.covered and self.correct and self.kernels_ok

    def status(self) -> str:
        """``solved``, ``not covered`` (correct, but some operators left to PyTorch), ``incorrect`` or
        ``not judged``."""
        if not self.kernels_ok:
            return "incorrect"
        if self.gate is None:
            return "not judged"
        if not self.correct:
            return "incorrect"
        return "solved" if self.covered else "not covered"

    def to_json(self) -> dict[str, Any]:
        return {
            "problem": self.problem,
            "sizes": self.sizes,
            "status": self.status(),
            "solved": self.solved,
            "covered": self.covered,
            "groups": self.groups,
            "uncovered": self.uncovered,
            "kernels": [k.to_json() for k in self.kernels],
            "solution": self.solution,
            "specialized": self.specialized,
            "gate": self.gate.to_json() if self.gate is not None else None,
            "not_judged": self.not_judged,
            "captured": self.captured,
            "seconds": round(self.seconds, 3),
        }


def generate(cap: Capture) -> tuple[Partition, dict[str, KernelSource]]:
    """Partition `cap` and generate each group's kernel source."""
    part = partition(cap)
    uses = {(node, index): arg for arg, found in cap.scalar_uses.items() for node, index in found}
    values = {s.name: s.value for s in cap.inputs if s.kind == "scalar"}
    from argus.frontend.families import TEMPLATES

    kernels = {g.kernel: TEMPLATES[g.family].source(g.kernel, g.subgraph, uses, values) for g in part.groups}
    return part, kernels


def group_elements(subgraph: Any) -> int:
    """The elements of a group's tensors: its inputs and outputs together."""
    nodes = [n for n in subgraph.graph.nodes if n.op == "placeholder"]
    output = next(n for n in subgraph.graph.nodes if n.op == "output")
    results = output.args[0] if isinstance(output.args[0], tuple | list) else (output.args[0],)
    values = [n.meta.get("val") for n in [*nodes, *results] if hasattr(n, "meta")]
    return sum(int(v.numel()) for v in values if hasattr(v, "numel"))


def check_kernel(
    kernel: Any,
    source: KernelSource,
    subgraph: Any,
    seed: int = 0,
    device: str = "cpu",
    launch: Any = None,
    params: Mapping[str, Any] | None = None,
) -> tuple[float, float]:
    """(largest error relative to the reference's scale, tolerance) of `kernel` against the group's FX `subgraph`
    run in float64 (with the slack a fused contraction's rounding makes, `contraction_slack`), on standard-normal
    inputs at the captured shapes (indices in their range, `KernelSource.indices`): on the CPU interpreter, or on a
    CUDA `device` through `launch` (the solution's own ``_launch``: compiled, in chunks past a kernel's largest
    extent; default: `argus.runtime.build` once). NaN where the reference has NaN is a match; anywhere else an
    infinite error."""
    import torch

    cuda = torch.device(device).type == "cuda"
    generator = torch.Generator(device=device).manual_seed(seed)
    placeholders = [n for n in subgraph.graph.nodes if n.op == "placeholder"]
    inputs = []
    for n in placeholders:
        val = n.meta["val"]
        if val.dtype == torch.bool:  # a mask: both values, about half each
            inputs.append(torch.rand(tuple(val.shape), generator=generator, device=device) < 0.5)
            continue
        if n.name in source.indices:  # indices: in range, and now and then a special value (an ignore_index)
            low, high, extra = source.indices[n.name]
            shape = tuple(val.shape)
            x = torch.randint(low, high, shape, generator=generator, device=device, dtype=val.dtype)
            for value in extra:
                pick = torch.rand(shape, generator=generator, device=device) < 1 / (8 * len(extra))
                x = torch.where(pick, torch.full_like(x, value), x)
            inputs.append(x)
            continue
        x = torch.randn(tuple(val.shape), generator=generator, dtype=torch.float64, device=device)
        inputs.append(x.to(val.dtype))
    tolerance = _tolerance(source)
    if cuda:
        subgraph = _on_device(subgraph, device)
    with torch.no_grad():
        high = [x.to(torch.float64) if x.is_floating_point() else x for x in inputs]
        want, slacks = contraction_slack(subgraph, high, tolerance)
    wants = list(want) if isinstance(want, tuple | list) else [want]
    outs = [_poisoned(w.shape, _out_dtype(subgraph, i), device) for i, w in enumerate(wants)]
    names = [n.name for n in placeholders] + list(source.outputs)
    tensors = [*inputs, *outs]
    views = [t.contiguous().view(source.shape_of(n, t.numel())) for n, t in zip(names, tensors, strict=True)]
    params = dict(params or {})
    if not cuda:
        kernel(*views, device="cpu", **params)
    elif launch is not None:
        launch(kernel, tensors, [tuple(v.shape) for v in views] if source.shapes else None, **params)
    elif source.library:
        kernel(*views)
    else:
        from argus.runtime import build

        build(kernel, **params)(*views)
    if cuda:
        torch.cuda.synchronize()
    slacks = slacks or [None] * len(wants)
    pairs = zip(outs, wants, slacks, strict=True)
    worst = max((relative_error(got, ref, slack=s) for got, ref, s in pairs), default=0.0)
    if worst > tolerance:  # what PyTorch computes in the tensors' own dtypes may differ from the float64 reference
        natives = _native_outputs(subgraph, inputs)
        if natives is not None:
            pairs = zip(outs, wants, slacks, natives, strict=True)
            worst = max((relative_error(got, ref, slack=s, native=n) for got, ref, s, n in pairs), default=0.0)
    if worst == math.inf:
        return math.inf, 0.0
    return worst, tolerance


def _native_outputs(subgraph: Any, inputs: list[Any]) -> list[Any] | None:
    """The FX `subgraph`'s outputs on `inputs` in their own dtypes (what eager PyTorch computes), or None where they
    cannot be computed there (an operator without a kernel for the dtype on the device) or are all float64 already.
    A constant that a float16 computation rounds (``clamp(norm, 1e-8)``: 1e-8 is 0 in float16, and ``x / 0`` is
    inf) makes eager's result differ from the float64 reference by more than any tolerance where the check's random
    inputs reach it; a kernel computing as eager does is then not wrong."""
    import torch

    if all(not x.is_floating_point() or x.dtype == torch.float64 for x in inputs):
        return None
    try:
        with torch.no_grad():
            out = subgraph(*inputs)
    except Exception:  # noqa: BLE001 - no native result to compare with: the float64 reference alone decides
        return None
    return list(out) if isinstance(out, tuple | list) else [out]


def _on_device(subgraph: Any, device: str) -> Any:
    """A copy of the FX `subgraph` whose operators that create tensors (an ``arange`` a pointwise kernel computes, a
    ``scalar_tensor``) create them on `device`, not on the capture's device (the CPU), so that the reference runs
    where the check's inputs are."""
    import torch

    moved = copy.deepcopy(subgraph)
    for n in moved.graph.nodes:
        if isinstance(n.kwargs.get("device"), torch.device):
            n.kwargs = {**n.kwargs, "device": torch.device(device)}
    moved.recompile()
    return moved


def _tolerance(source: KernelSource) -> float:
    """The check's tolerance for a kernel: the loosest of its dtypes'."""
    return max((TOLERANCE[d] for d in set(source.dtypes.values()) if d in TOLERANCE), default=1e-4)


def contraction_slack(subgraph: Any, inputs: list[Any], relative: float) -> tuple[Any, list[Any] | None]:
    """(the FX `subgraph`'s outputs on `inputs`, per output the change a fused contraction's own rounding can make
    to it, or None where the group fuses nothing after a contraction).

    A group that fuses an epilogue into a contraction (a GEMM's or a convolution's elementwise tail) applies the
    epilogue to a value computed with the contraction's rounding error, which is relative to the contraction's own
    scale; a saturating tail (``tanh``, ``sigmoid``, a clamp) shrinks the output's scale but not that error where
    the tail is steep. So the subgraph runs twice more with every contraction's value moved by ``±relative`` times
    its largest magnitude, and each output element may differ from the reference by as much as that moved it:
    what the same contraction is allowed as a kernel of its own, carried through the tail element by element. An
    epilogue's own mistakes are not covered by that slack (it is the tail's slope times the contraction's
    rounding) and still fail."""
    import torch

    from argus.frontend.partition import Family, classify

    def contraction(n: Any) -> bool:
        return n.op == "call_function" and classify(n) in (Family.MATMUL, Family.CONVOLUTION)

    outputs: set[Any] = set()
    for n in subgraph.graph.nodes:
        if n.op == "output":
            torch.fx.node.map_arg(n.args, outputs.add)
    if not any(contraction(n) and n not in outputs for n in subgraph.graph.nodes):
        return subgraph(*inputs), None

    class _Moved(torch.fx.Interpreter):
        def __init__(self, sign: float) -> None:
            super().__init__(subgraph)
            self.sign = sign

        def run_node(self, n: Any) -> Any:
            out = super().run_node(n)
            if self.sign and contraction(n) and isinstance(out, torch.Tensor) and out.is_floating_point():
                out = out + self.sign * relative * max(1.0, _finite_max(out))
            return out

    def listed(out: Any) -> list[Any]:
        return list(out) if isinstance(out, tuple | list) else [out]

    want = _Moved(0.0).run(*inputs)
    slack = [torch.zeros_like(w) for w in listed(want)]
    for sign in (1.0, -1.0):
        for s, moved, w in zip(slack, listed(_Moved(sign).run(*inputs)), listed(want), strict=True):
            s.copy_(torch.maximum(s, (moved - w).abs().nan_to_num(nan=0.0, posinf=0.0)))
    return want, slack


def _as_stored(r: Any, dtype: Any) -> Any:
    """Reference values `r` (float64) with those that overflow `dtype` (the output's) replaced by the infinity they
    round to there: a kernel that stores such a value in `dtype` stores that infinity, as PyTorch's own operator
    on `dtype` tensors does (a float64 reference of 1e8 is +inf in float16)."""
    import torch

    if not dtype.is_floating_point or dtype == torch.float64:
        return r
    rounded = r.to(dtype)
    over = torch.isfinite(r) & torch.isinf(rounded)
    return torch.where(over, rounded.to(torch.float64), r) if bool(over.any()) else r


def _finite_max(t: Any, chunk: int = 1 << 26, dtype: Any = None) -> float:
    """The largest finite magnitude in `t` (0 if none), `chunk` elements at a time in float64; with `dtype`, of the
    values finite in it (`_as_stored`)."""
    import torch

    flat, top = t.reshape(-1), 0.0
    for i in range(0, flat.numel(), chunk):
        r = flat[i : i + chunk].to(torch.float64)
        if dtype is not None:
            r = _as_stored(r, dtype)
        finite = torch.isfinite(r)
        if bool(finite.any()):
            top = max(top, float(r[finite].abs().max()))
    return top


def relative_error(got: Any, want: Any, chunk: int = 1 << 26, slack: Any = None, native: Any = None) -> float:
    """The largest difference of `got` from the reference `want` where `want` is finite, over the reference's
    largest finite magnitude (at least 1), in float64, `chunk` elements at a time (a 7.5 GB output's float64 copies
    do not fit beside the rest). With `slack` (per element, `contraction_slack`), each element's difference is
    first reduced by its slack (not below 0): an element within its slack counts as exact. NaN where `want` has NaN
    is a match; any other disagreement on a non-finite reference element, or a NaN where it is finite (an element
    never written), is an infinite error. A reference value that overflows `got`'s dtype is the infinity it rounds
    to there (`_as_stored`). With `native` (the same computation in the tensors' own dtypes, as eager PyTorch runs
    it: `_native_outputs`), an element matches as well where it is what `native` holds: its difference is the
    smaller of the two."""
    import torch

    g, w = got.reshape(-1), want.reshape(-1)
    z = slack.reshape(-1) if slack is not None else None
    e = native.reshape(-1) if native is not None else None
    scale, worst = max(1.0, _finite_max(w, chunk, g.dtype)), 0.0
    for i in range(0, w.numel(), chunk):
        a = g[i : i + chunk].to(torch.float64)
        d = _differences(a, _as_stored(w[i : i + chunk].to(torch.float64), g.dtype))
        if z is not None:
            d = (d - z[i : i + chunk].to(d.device, torch.float64)).clamp_min(0.0)
        if e is not None:
            d = torch.minimum(d, _differences(a, e[i : i + chunk].to(a.device, torch.float64)))
        if d.numel():
            worst = max(worst, float(d.max()))
    return worst / scale


def _differences(a: Any, r: Any) -> Any:
    """Per element, |a - r| where the reference `r` is finite (infinite where `a` is NaN there), 0 where `a` is `r`'s
    NaN or infinity, and infinite where `r` is not finite and `a` is another value."""
    import torch

    finite = torch.isfinite(r)
    same = (a == r) | (torch.isnan(a) & torch.isnan(r))
    d = torch.where(finite, (a - r).abs(), torch.where(same, 0.0, math.inf))
    return torch.where(finite & torch.isnan(a), math.inf, d)


def _out_of_memory() -> type[BaseException]:
    import torch

    return torch.cuda.OutOfMemoryError


def _release(device: str) -> None:
    """Return the check's memory to the device before the next kernel's check (or the judge) runs."""
    import torch

    if torch.device(device).type == "cuda":
        torch.cuda.empty_cache()


def _poisoned(shape: Any, dtype: Any, device: str) -> Any:
    """An output tensor filled with what no kernel computes on its own: NaN, or an integer type's least value."""
    import torch

    if dtype == torch.bool:
        return torch.zeros(tuple(shape), dtype=dtype, device=device)
    fill = math.nan if dtype.is_floating_point else torch.iinfo(dtype).min
    return torch.full(tuple(shape), fill, dtype=dtype, device=device)


def _out_dtype(subgraph: Any, index: int) -> Any:
    output = next(n for n in subgraph.graph.nodes if n.op == "output")
    results = output.args[0] if isinstance(output.args[0], tuple | list) else (output.args[0],)
    return results[index].meta["val"].dtype


def _over_the_register_budget(result: Any) -> bool:
    """Whether a verification failed for its register budget alone (`BUDGET_REGISTERS`): a tile too large for the
    chain of values it holds, which a smaller tile fixes."""
    return result.verdict.value == "violated" and {f.code for f in result.errors} == {"BUDGET_REGISTERS"}


#: The most times a template kernel's tile is halved to fit the register budget.
REFIT_HALVINGS = 4


def _within_the_register_budget(kernel: Any, params: Mapping[str, Any]) -> tuple[dict[str, Any], Any] | None:
    """(the trace-time parameters, the verification) of `kernel` with its `tile_shape` policy's largest extent
    halved until it verifies within the register budget (at most `REFIT_HALVINGS` times), or None. A template's
    default tile is sized for a few values per element; a long chain of elementwise operations (KernelBench
    level 2's activation chains) holds more of them at once. A tile the kernel refuses (too few elements for its
    threads) ends the search."""
    from argus.lang.errors import DSLError
    from argus.verify import verify

    names = getattr(kernel, "policy_params", {}).get("tile_shape")
    if names is None:
        return None
    names = (names,) if isinstance(names, str) else tuple(names)
    current = {n: params.get(n, kernel.defaults.get(n)) for n in names}
    if not all(isinstance(v, int) and v > 0 for v in current.values()):
        return None
    for _ in range(REFIT_HALVINGS):
        largest = max(names, key=lambda n: current[n])
        if current[largest] < 2:
            return None
        current[largest] //= 2
        candidate = {**params, **current}
        try:
            result = verify(kernel, **candidate)
        except DSLError:
            return None
        if result.verdict.value != "violated":
            return candidate, result
        if not _over_the_register_budget(result):
            return None
    return None


def default_solution_path(problem: Path) -> Path:
    """``<problem stem>_solution.py`` in the working directory (`argus kernelbench --solutions .` finds it by its
    id)."""
    return Path.cwd() / f"{problem.stem}_solution.py"


def solve(
    problem: Path | str,
    *,
    sizes: Mapping[str, Any] | None = None,
    out: Path | str | None = None,
    judge: bool = True,
    options: Any = None,
    on_step: Any = None,
    tune: Any = None,
    writer: Any = None,
) -> SolveResult:
    """Solve `problem` (see the module docstring). `sizes`: module-level overrides; `out`: the solution file
    (default `default_solution_path`); `judge`: run the gate (off: generate and check the kernels only);
    `options`: the gate's `GateOptions` (default: 5 trials on the GPU when there is one, else on the CPU; its
    `device` is also where the kernels are checked); `on_step(text)`: progress; `tune(solution, kernels)`: the
    trace-time parameters to launch each of the solution's own DSL kernels with (kernel -> params; the agent's
    tuner, `argus.agent.tune.Tuner`, which times them on a GPU), asked once the solution is written: the solution
    is written again with them, and the kernels are verified and checked as tuned; `writer(request)`: for each
    group of connected uncovered operators (`argus.frontend.written.requests`), a `WrittenKernel` it has gated, or
    why none (the LLM path: `argus.agent.writer`); an accepted one runs in the solution instead of the group's ATen
    calls (its operators covered), and the solution is not imported here once it holds one."""
    from argus.eval.candidates import ModuleCandidate, import_file
    from argus.eval.gate import GateOptions, gate_module
    from argus.verify import verify

    options = options or GateOptions(trials=5)
    device = options.resolved_device()

    start = time.perf_counter()
    step = on_step or (lambda text: None)
    path = Path(problem)
    if not path.is_file():
        raise FrontendError("SOLVE_PROBLEM", f"no such problem file: {path}", "give the path of a problem .py file")
    step("capturing")
    try:
        cap = capture(path, sizes)
    except FrontendError as e:
        if e.code != "SOLVE_EXPORT":
            raise
        from argus.frontend.dynamo import solve_graphs  # the capture fallback: dynamo's graphs, each solved here

        return solve_graphs(path, e, sizes=sizes, out=out, judge=judge, options=options, on_step=on_step,
                            tune=tune, writer=writer)  # fmt: skip
    step("partitioning")
    part, sources = generate(cap)
    target = Path(out) if out is not None else default_solution_path(path)

    def write(text: str) -> None:
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
        except OSError as e:
            raise FrontendError("SOLVE_WRITE", f"cannot write the solution to {target}: {e}", None) from None

    written: dict[str, tuple[Any, Any]] = {}  # a group's output node -> (request, accepted kernel)
    not_written: dict[str, str] = {}  # uncovered node -> why no written kernel computes it
    if writer is not None:
        from argus.frontend.written import WrittenKernel, requests

        asks, not_written = requests(part)
        for request in asks:
            step(f"writing a kernel for {request.op}")
            got = writer(request)
            if isinstance(got, WrittenKernel):
                written[request.node] = (request, got)
            else:  # every operator of the group stays an ATen call, for this reason
                not_written.update(dict.fromkeys(request.nodes, str(got)))
    in_written = {n for request, _ in written.values() for n in request.nodes}
    write(emit(part, sources))  # the template kernels only: this version is imported here for their checks
    params: dict[str, dict[str, Any]] = {}
    if tune is not None:
        step("tuning the kernels' policies")
        own = [g.kernel for g in part.groups if not sources[g.kernel].library]
        # every kernel: a library GEMM's configuration is tuned too (into the GEMM cache its calls read), and
        # parameters come back for the solution's own kernels only
        tuned = tune(target, [g.kernel for g in part.groups]) or {}
        params = {k: dict(v) for k, v in tuned.items() if k in own and v}
        if params:
            write(emit(part, sources, params))

    reports: list[KernelReport] = []
    refit = False  # a kernel's tile was made smaller to fit the register budget: the solution is written again
    module = import_file(target, "argus_solve") if part.groups else None
    for g in part.groups:
        src = sources[g.kernel]
        report = KernelReport(g.kernel, str(g.family), g.ops, src.numel, params=params.get(g.kernel, {}))
        kernel = getattr(module, g.kernel)
        step(f"verifying {g.kernel}")
        # a library call (the GEMM) is the kernels of its plan, each verified; the worst verdict is the group's
        results = [verify(k) for k in kernel.kernels()] if src.library else [verify(kernel, **report.params)]
        if not src.library and _over_the_register_budget(results[0]):
            step(f"{g.kernel}: over the register budget, smaller tiles")
            smaller = _within_the_register_budget(kernel, report.params)
            if smaller is not None:
                report.params, result = smaller
                results = [result]
                params[g.kernel] = dict(report.params)
                refit = True
        verdicts = [r.verdict.value for r in results]
        report.verdict = next((v for v in ("violated", "unknown") if v in verdicts), verdicts[0])
        errors, warnings, unknowns = (
            sum(len(getattr(r, kind)) for r in results) for kind in ("errors", "warnings", "unknowns")
        )
        report.verify_summary = f"{errors} error(s), {warnings} warning(s), {unknowns} unknown" + (
            f" over the {len(results)} kernels of its plan" if src.library else ""
        )
        elements = group_elements(g.subgraph)
        if device == "cpu" and elements > INTERPRETER_ELEMENTS:
            report.skipped = (
                f"not checked on the interpreter: {elements:.3g} elements (at most {INTERPRETER_ELEMENTS:.3g}); "
                "judge the solution on a GPU"
            )
        else:
            step(f"checking {g.kernel} on the {'interpreter' if device == 'cpu' else device}")
            try:
                report.interpreter_error, report.tolerance = check_kernel(
                    kernel, src, g.subgraph, device=device, launch=module._launch, params=report.params
                )
            except _out_of_memory() as e:  # the check's float64 copies: the judge keeps large ones on the host
                report.skipped = f"not checked on {device}: out of memory ({str(e).splitlines()[0][:160]})"
            else:
                report.interpreter_ok = report.interpreter_error <= report.tolerance
                report.checked_on = device
            finally:
                _release(device)
        reports.append(report)

    for request, got in written.values():
        reports.append(
            KernelReport(
                request.name, "written", list(request.ops), math.prod(request.tensors[-1][1]), verdict=got.verdict,
                verify_summary=got.summary, interpreter_ok=True, checked_on=got.checked_on,
            )
        )  # fmt: skip
    if written:  # the solution with the written kernels, judged in the sandbox, never imported here
        write(emit(part, sources, params, written))
    elif refit:
        write(emit(part, sources, params))

    gate = None
    not_judged = "" if judge else "--no-judge"
    if judge and device == "cpu" and any(r.skipped for r in reports):
        not_judged = "a kernel is too large for the interpreter: judge the solution on a GPU (argus kernelbench)"
    elif judge:
        step("judging the solution")
        gate = gate_module(cap.task, ModuleCandidate(target.name, path=target), options)
    return SolveResult(
        problem=cap.name,
        sizes=dict(cap.sizes),
        groups=[{"kernel": g.kernel, "family": str(g.family), "ops": g.ops} for g in part.groups]
        + [{"kernel": r.name, "family": "written", "ops": list(r.ops)} for r, _ in written.values()],
        uncovered=[
            {"node": u.node, "op": u.op, "family": str(u.family), "reason": u.reason}
            | ({"writer": not_written.get(u.node, "")} if writer is not None else {})
            for u in part.uncovered
            if u.node not in in_written
        ],
        kernels=reports,
        solution=str(target),
        gate=gate,
        seconds=time.perf_counter() - start,
        specialized=list(cap.specialized),
        not_judged=not_judged,
    )
