"""The static cost model calibrated on measurements: how far to trust `argus.eval.costmodel`, and a correction
learned from what the repository has measured.

The cost model (`costmodel.estimate`) is a roofline over the traced IR. It orders a lineage's rungs well but not the
candidates near the top of a family (tile shapes, stages, splits, warp roles of one kernel), where the choice is
made. This module turns recorded benchmark rows into training points and answers three questions per family:

1. **How wrong is the model on rows it was not fitted on?** ``evaluate`` holds out one *group* at a time (a group is
   one problem, e.g. one GEMM shape, whose rows are the candidates timed against each other in one process) and
   reports, for the uncalibrated and the calibrated model: the median error (a ratio, ``exp(median |ln(pred /
   measured)|)``), Spearman's rank correlation over all rows, the mean Spearman among each group's (at most
   ``TOP``) fastest measured candidates, the regret of trusting the model's first choice (measured time of the
   model's pick over the measured best, geometric mean over groups), and ``trust_k``: the fewest top-ranked
   candidates that must be measured to hold one within ``NEAR`` of the best in ``COVER`` of the groups.
2. **What correction does the data support?** `fit_family` learns ``ln(measured / estimate)`` per family and GPU
   as two ridge regressions on dimensionless facts of the estimate: *within* a problem over ``FEATURES`` (each
   term's share of the estimate, waves, wave efficiency, resident blocks, concurrency, stages, warp roles, main-loop
   iterations, launches, blocks, registers, shared memory, threads, the estimate's scale; each group's mean taken
   out, so it learns what orders a problem's candidates), and *between* problems over ``PROBLEM_FEATURES`` only
   (FLOPs and DRAM bytes: it scales a problem's times without reordering them). Nothing is fitted to a kernel's name
   or parameters directly. ``evaluate`` also reports the family planner's own model where it has one
   (`library_estimate`: GEMM's `matmul.estimate`) as ``library``.
3. **How many candidates should a tuner measure?** ``Calibration.trust_k(family, model=...)``: a model's held-out
   ``trust_k`` (by default the calibrated model's where its correction beat the raw estimate held out, else the raw
   one's), for callers that gate the top few by measurement (`argus.agent.tune.default_gemm_budget`).

A row (`Row`) is one measured candidate: its family, group and label, the measured milliseconds, the GPU, where
the number was recorded (``source``, a path into ``benchmarks/results`` and the row's position there), and the
*plan* as data (``{"problem": {...}, "config": {...}}`` of the family's library planner; a convolution's also its
tensors' ``layout``, a MoE grouped product's its ``routing``, the rows of each expert), from which `launches` rebuilds
the traced kernels and their sizes. `featurize` runs the cost model on them (the sum over a plan's launches); rows
carry their features so that fitting needs no tracing.

What this is not: the calibrated model is fitted on the kernels as they were when measured; a kernel that changed
since makes its old rows stale (the rows' ``date`` says when). Held-out numbers are the only claims made for it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from argus.diagnostics import ArgusError

#: the families a row may belong to (`family_of` maps a kernel's name to one)
FAMILIES = ("gemm", "attention", "conv", "moe", "other")

#: the facts of an estimate the correction is fitted on, in order (`feature_vector`)
FEATURES = (
    "log_estimate",
    "share_tensor",
    "share_fma",
    "share_smem",
    "share_l2",
    "share_dram",
    "share_latency",
    "share_launch",
    "log_waves",
    "wave_efficiency",
    "blocks_per_sm",
    "log_concurrency",
    "stages",
    "warp_specialized",
    "log_iterations",
    "launches",
    "log_blocks",
    "registers",
    "log_shared",
    "threads",
)
#: the facts of the *problem* (nearly the same for every candidate of a group): the correction's scale between
#: problems is fitted on these, so that it shifts a group's times without reordering its candidates
PROBLEM_FEATURES = ("log_flops", "log_bytes")

TOP = 10  # the rank correlation among a group's fastest measured candidates: at most this many
NEAR = 0.02  # a candidate within 2 % of a group's measured best counts as the best
COVER = 0.9  # trust_k: the share of groups in which the model's top k must hold one near the best
RIDGE = 1.0  # the ridge penalty on standardized features (docs/agent.md, "Calibration": how it was chosen)
#: the least relative fall of the held-out median error for a family's correction to be applied
#: (`Calibration.improves`): a smaller one is within the spread of resampling the problems (MoE's 1.115 -> 1.113:
#: lower in 49 % of bootstraps)
IMPROVES_MARGIN = 0.01

CALIBRATION_FILE = Path(__file__).with_name("data") / "calibration.json"


class CalibrationError(ArgusError):
    """A row or dataset the calibration cannot use (code ``CALIBRATION_*``)."""


def family_of(kernel_name: str) -> str:
    """The family of a kernel, by its name: ``gemm``, ``attention``, ``conv``, ``moe`` or ``other``."""
    name = kernel_name.lower()
    if "attention" in name or "sdpa" in name:
        return "attention"
    if "conv" in name:
        return "conv"
    if "grouped" in name or "moe" in name:
        return "moe"
    if "gemm" in name or "matmul" in name or "gemv" in name:
        return "gemm"
    return "other"


@dataclass(frozen=True)
class Row:
    """One measured candidate (see the module's docstring)."""

    family: str
    group: str
    label: str
    ms: float
    gpu: str
    source: str
    plan: dict[str, Any]
    date: str = ""
    features: dict[str, float] | None = None
    estimate_ms: float | None = None
    kernels: list[str] = field(default_factory=list)  # the traced kernels of the plan (set with the features)
    #: the family's own planning model's estimate (`library_estimate`: GEMM's `matmul.estimate`), where it has one
    library_ms: float | None = None

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise CalibrationError("CALIBRATION_ROW", f"row {self.label!r}: unknown family {self.family!r}")
        if not (isinstance(self.ms, int | float) and math.isfinite(self.ms) and self.ms > 0):
            raise CalibrationError("CALIBRATION_ROW", f"row {self.label!r} of {self.group!r}: ms must be > 0")

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Row:
        known = {f for f in cls.__dataclass_fields__}
        unknown = sorted(set(data) - known)
        if unknown:
            raise CalibrationError("CALIBRATION_ROW", f"unknown row fields {unknown}")
        missing = [f for f in ("family", "group", "label", "ms", "gpu", "source", "plan") if f not in data]
        if missing:
            raise CalibrationError("CALIBRATION_ROW", f"a row needs {missing}")
        return cls(**dict(data))


def read_rows(paths: Iterable[str | Path]) -> list[Row]:
    """The rows of JSON-lines files (one `Row` per line; blank lines and ``#`` comments skipped)."""
    rows = []
    for path in paths:
        try:
            text = Path(path).read_text()
        except OSError as e:
            raise CalibrationError("CALIBRATION_ROW", f"cannot read {path}: {e.strerror or e}") from None
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            try:
                rows.append(Row.from_json(json.loads(line)))
            except (json.JSONDecodeError, TypeError) as e:
                raise CalibrationError("CALIBRATION_ROW", f"{path}:{n}: {e}") from None
            except CalibrationError as e:
                raise CalibrationError("CALIBRATION_ROW", f"{path}:{n}: {e.message}") from None
    return rows


def write_rows(rows: Iterable[Row], path: str | Path) -> None:
    Path(path).write_text("".join(json.dumps(r.to_json(), sort_keys=True) + "\n" for r in rows))


# ---------------------------------------------------------------------------------------------------------------
# from a row's plan to the estimate's features


def _shape_sizes(kernel: Any, shapes: Mapping[str, Sequence[int]]) -> dict[str, int]:
    """The kernel's shape symbols bound from concrete tensor shapes (by tensor name). `ValueError` where a shape has
    another rank than its tensor, or two tensors give one symbol different sizes (shapes that are not the ones a
    call passes)."""
    from argus.ir.nodes import Var

    sizes: dict[str, int] = {}
    for t in kernel.tensors:
        if t.name not in shapes:
            continue
        given = tuple(int(n) for n in shapes[t.name])
        if len(given) != len(t.shape):
            raise ValueError(f"{kernel.name}'s {t.name} has {len(t.shape)} dimensions, the shape given {given}")
        for d, n in zip(t.shape, given, strict=True):
            if isinstance(d, Var) and sizes.setdefault(d.name, n) != n:
                raise ValueError(f"{kernel.name}'s {d.name} is {sizes[d.name]} by one tensor and {n} by {t.name}")
    return sizes


def launches(row: Row) -> list[tuple[Any, dict[str, int]]]:
    """(traced kernel, sizes) of each launch the row's plan makes, in order."""
    plan = row.plan
    try:
        if row.family == "gemm":
            return _gemm_launches(plan)
        if row.family == "attention":
            return _attention_launches(plan)
        if row.family == "conv":
            return _conv_launches(plan)
        if row.family == "moe":
            return _moe_launches(plan)
    except (KeyError, TypeError, ValueError) as e:
        raise CalibrationError("CALIBRATION_PLAN", f"row {row.label!r} of {row.group!r}: {e}") from None
    raise CalibrationError(
        "CALIBRATION_PLAN",
        f"rows of family {row.family!r} cannot be rebuilt into kernels yet (gemm, attention, conv and moe plans can)",
    )


def _gemm_launches(plan: Mapping[str, Any]) -> list[tuple[Any, dict[str, int]]]:
    from argus.kernels import matmul as mm

    problem = mm.GemmProblem(**plan["problem"])
    config = mm.GemmConfig(**plan["config"])
    # as measured: a row recorded before split plans were fused (no FUSE field) or not fused (None) ran two launches
    the_plan = mm.plan(problem, replace(config, FUSE=bool(config.FUSE)))
    q = the_plan.padded
    sizes = {"M": q.M, "N": q.N, "K": q.K, "S": the_plan.config.SPLITS, "B": q.batch}
    if the_plan.config.FUSE:  # the fused split's counters: one per tile
        sizes["NF"] = the_plan.counters()
    if the_plan.is_tail:  # the tail's workspace W (TAIL, RT, WM, WN)
        sizes.update(zip(("S", "RT", "WM", "WN"), the_plan.tail_workspace(), strict=True))
    kernels = the_plan.kernels()
    pads = the_plan.pads  # the copies into padded operands come first, each with its own X (R, C) and Y (RP, P)
    found = [
        (k, {"R": s.stored[-2], "C": s.stored[-1], "RP": s.padded[-2], "P": s.padded[-1], "L": q.batch})
        for s, k in zip(pads, kernels, strict=False)
    ]
    return found + [(k, sizes) for k in kernels[len(pads) :]]


def _attention_launches(plan: Mapping[str, Any]) -> list[tuple[Any, dict[str, int]]]:
    from argus.kernels import sdpa

    problem = sdpa.AttentionProblem(**plan["problem"])
    the_plan = sdpa.plan(problem, sdpa.AttentionConfig(**plan["config"]))
    matrices, rows, _ = the_plan.extents()
    p = problem
    sizes = {
        "BH": matrices,
        "SQ": rows if p.layout == "bhsd" else p.sq,
        "BHK": p.batch * p.kv_heads,
        "SK": p.sk,
        "P": the_plan.config.SPLITS,
        "DV": p.dv,
        "B": p.batch,
        "H": p.heads,
        "HK": p.kv_heads,
        "NF": the_plan.counters(),  # the merged launch's group-barrier counters (`AttentionConfig.COMBINED`)
    }
    return [(k, sizes) for k in the_plan.kernels()]


#: the tensors' layouts a conv row's call may be made on (``plan["layout"]``, `_conv_launches`)
CONV_LAYOUTS = ("channels_last", "nchw")


def _conv_launches(plan: Mapping[str, Any]) -> list[tuple[Any, dict[str, int]]]:
    """The launches of a warm GPU call of the implicit-GEMM convolution kernels (`argus.kernels.conv.
    run_implicit_on_gpu` and `prepare_implicit`) on ``plan["config"]`` (`ImplicitConfig` fields, the flattened tile
    included) for ``plan["problem"]`` (`Conv` fields; lists for its tuples), each with the sizes of the tensors it is
    given. ``plan["layout"]``: ``channels_last`` (the default: x and the output channels last in memory, as the
    benchmarks time the kernel) or ``nchw`` (contiguous NCHW tensors: the kernel writes the output channels first
    where `writes_nchw`). In order: for f32 the split of the input into its bf16 planes (the weight's planes are
    staged by the first call and not split again), the kernel, and split along K its `conv_split_reduce` over the
    f32 workspace; no fused epilogue. Not counted: PyTorch's permutes of NCHW tensors to and from channels last (not
    argus kernels). Depthwise, grouped, gather-path and other convolutions the implicit kernel does not take are
    refused."""
    from argus.kernels import conv as cv

    problem = {k: tuple(v) if isinstance(v, list) else v for k, v in plan["problem"].items()}
    conv = cv.Conv(**problem)
    config = cv.ImplicitConfig(**plan["config"])
    layout = plan.get("layout", "channels_last")
    if layout not in CONV_LAYOUTS:
        raise ValueError(f"layout {layout!r}: one of {', '.join(CONV_LAYOUTS)}")
    refused = cv.implicit_refusal(conv, phase=conv.padding_end is not None)
    if refused is None and config.FLAT:
        refused = cv.flat_refusal(conv)
    if refused is not None:
        which = "flattened-position" if config.FLAT else "implicit-GEMM"
        raise ValueError(
            f"the {which} kernel does not take this convolution: {refused} (conv rows are rebuilt on the implicit "
            "kernels only; depthwise, grouped, gather-path and pointwise-GEMM plans are not yet)"
        )
    nchw = layout == "nchw" and cv.writes_nchw(conv, config)  # run_implicit_on_gpu's choice of the kernel's form
    x, w, y = cv._implicit_shapes(conv, nchw=nchw)
    n, f, channels = conv.batch, conv.filters, cv.implicit_channels(conv)
    found: list[tuple[Any, dict[str, tuple[int, ...]]]] = []
    if conv.dtype == "f32":  # implicit_input: the input's planes, (N, D*H*W, C) -> (N, 3, D*H*W, C padded to 8)
        (rows, operand, _), _ = cv.split_rows(conv)
        split = cv._traced("split", cv._key(cv.split_params(rows, conv.channels, operand, batch=True)))
        found.append((split, {"X": (n, rows, conv.channels), "Y": (n, 3, rows, channels)}))
    if config.FLAT:  # prepare_implicit: the input as it is in memory, the output as (N*OH*OW, F)
        x, y = (n, *conv.size[1:], conv.channels), (n * conv.positions, f)
    bias = (f,) if conv.bias else (1,)  # the bias, or the one-element placeholder (`conv_implicit.bias_shape`)
    kernel = cv._traced(cv.implicit_kind(config), cv._key(cv.implicit_params(conv, config, nchw=nchw)))
    if config.SPLITS == 1:
        found.append((kernel, {"X": x, "WT": w, "B": bias, "Y": y}))
    else:  # the f32 workspace (SPLITS, *Y), then its slices summed into Y viewed as (positions, F)
        reduce = cv._traced("split_reduce", cv._key(cv.split_reduce_params(conv, config)))
        m = math.prod(y) // f
        found.append((kernel, {"X": x, "WT": w, "B": (1,), "Y": (config.SPLITS, *y)}))
        found.append((reduce, {"W": (config.SPLITS, m, f), "B": bias, "Y": (m, f)}))
    return [(k, _shape_sizes(k, shapes)) for k, shapes in found]


#: the grouped products a moe row's plan may name (``plan["problem"]["epilogue"]``, `_moe_launches`)
MOE_EPILOGUES = ("plain", "swiglu")


def _moe_launches(plan: Mapping[str, Any]) -> list[tuple[Any, dict[str, int]]]:
    """The launch of a prepared GPU call of the MoE grouped GEMM (`argus.kernels.moe.prepare`: `grouped_mm`, or
    `grouped_swiglu` for the gated up-projection) on ``plan["config"]`` (the grouped kernel's parameters, as
    `moe.choose` gives them: BM, BN, BK, STAGES, CONSUMERS, GROUP, EPILOGUE, ...) for ``plan["problem"]``:
    ``experts`` E, ``rows`` R (the routed rows), ``k``, ``n`` (the output's columns; the SwiGLU weight has 2n),
    ``dtype`` (bf16 or f16), ``epilogue`` (`MOE_EPILOGUES`) and for SwiGLU ``activation``; ``plan["routing"]``: the
    rows of each expert (E counts summing to at most R).

    The kernel reads the routing from the device (``offs``, ``tiles``), which the cost model cannot: it counts
    each of the BLOCKS persistent blocks computing a unit in every iteration of its loop, up to the kernel's bound
    of ``(cdiv(R, BM) + E) * cdiv(N, BN)`` units (a data-dependent branch counted as taken), and every expert's
    weight among the bytes DRAM moves. So E is bound to the experts the routing gives rows, and offs, tiles and B to
    theirs: an expert without rows has no unit and its weight is never read, so the kernel (same parameters, SEARCH
    the call's) does the work of the same call on those experts alone. The count still exceeds the routing's
    ``sum cdiv(rows, BM) * cdiv(N, BN)`` units by up to one row tile per touched expert, and is BLOCKS where fewer
    units exist. A, C (and SwiGLU's per-row scale) are the call's, (R, K), (R, n), (R,). Not counted: the row-tile
    counts (`moe.tile_counts`, PyTorch operators run when the launch is prepared). The FP8 and gathered kernels are
    refused (no row measured them)."""
    from argus.kernels import moe

    problem = plan["problem"]
    experts, rows, k, n = (int(problem[f]) for f in ("experts", "rows", "k", "n"))
    dtype, epilogue = problem.get("dtype", "bf16"), problem.get("epilogue", "plain")
    if epilogue not in MOE_EPILOGUES:
        raise ValueError(
            f"epilogue {epilogue!r}: moe rows are rebuilt on the 16-bit grouped kernels, one of "
            f"{', '.join(MOE_EPILOGUES)} (the FP8 and gathered kernels are not yet)"
        )
    if dtype not in ("bf16", "f16"):
        raise ValueError(f"dtype {dtype!r}: the grouped kernels take bf16 or f16 operands")
    if k % 8 or n % 8:
        raise ValueError(f"K and N must be multiples of 8 (16-byte TMA rows), got K={k}, N={n}")
    if "routing" not in plan:
        raise ValueError("a moe plan needs its routing (the rows of each expert): the kernel's work depends on it")
    counts = [int(c) for c in plan["routing"]]
    if len(counts) != experts or min(counts, default=0) < 0 or sum(counts) > rows:
        raise ValueError(
            f"the routing must give each of the {experts} experts a row count >= 0, {rows} rows at most in all; got "
            f"{len(counts)} counts summing to {sum(counts)}"
        )
    touched = sum(1 for c in counts if c)
    if touched == 0:
        raise ValueError("the routing gives no expert a row: the kernel has no unit to estimate")
    params = moe.launch_params(plan["config"], experts, dtype, epilogue, problem.get("activation", "silu"))
    if experts > 1 << params["SEARCH"]:
        raise ValueError(f"SEARCH={params['SEARCH']} finds at most {1 << params['SEARCH']} experts, not {experts}")
    kernel = moe.KERNELS[epilogue].trace(**params)
    width = 2 * n if epilogue == "swiglu" else n  # the gated weight holds each expert's gate then up columns
    shapes = {"A": (rows, k), "B": (touched, k, width), "offs": (touched,), "tiles": (touched,), "C": (rows, n)}
    if epilogue == "swiglu":
        shapes["scale"] = (rows,)
    return [(kernel, _shape_sizes(kernel, shapes))]


def featurize(row: Row, gpu: str | None = None) -> tuple[float, dict[str, float]]:
    """(the cost model's estimate in ms, the features) of the row's plan on `gpu` (default: the row's GPU): the
    estimates of its launches summed, the occupancy and pipeline facts of the longest launch (`features_of`)."""
    return features_of(_estimates(row, gpu))


def _estimates(row: Row, gpu: str | None) -> list[Any]:
    """The cost model's `Estimate` of each launch of the row's plan."""
    from argus.eval import costmodel

    spec = gpu or (row.gpu if row.gpu in costmodel.GPUS else costmodel.DEFAULT_GPU)
    estimates = []
    for kernel, sizes in launches(row):
        wanted = {v.name: sizes[v.name] for v in kernel.shape_vars if v.name in sizes}
        try:
            estimates.append(costmodel.estimate(kernel, wanted, gpu=spec))
        except costmodel.CostModelError as e:
            raise CalibrationError("CALIBRATION_PLAN", f"row {row.label!r} of {row.group!r}: {e.message}") from None
    return estimates


def features_of(estimates: Sequence[Any]) -> tuple[float, dict[str, float]]:
    """(ms, features) of a sequence of `costmodel.Estimate` (one per launch)."""
    if not estimates:
        raise CalibrationError("CALIBRATION_PLAN", "a plan with no launches")
    total = sum(e.ms for e in estimates)
    main = max(estimates, key=lambda e: e.ms)
    terms: dict[str, float] = {}
    for e in estimates:
        for k, v in e.terms_ms.items():
            terms[k] = terms.get(k, 0.0) + v
    occ, pipe = main.occupancy, main.pipeline
    f = {
        "log_estimate": math.log(total),
        **{f"share_{k}": terms.get(k, 0.0) / total for k in ("tensor", "fma", "smem", "l2", "dram", "latency")},
        "share_launch": terms.get("launch", 0.0) / total,
        "log_waves": math.log(max(1, occ["waves"])),
        "wave_efficiency": float(occ["wave_efficiency"]),
        "blocks_per_sm": float(occ["blocks_per_sm"]),
        "log_concurrency": math.log(max(1, pipe["concurrency"])),
        "stages": float(pipe["stages"]),
        "warp_specialized": 1.0 if pipe["warp_specialized"] else 0.0,
        "log_iterations": math.log(max(1, main.counts.get("main_iterations", 1))),
        "launches": float(len(estimates)),
        "log_blocks": math.log(max(1, main.counts.get("blocks", 1))),
        "registers": occ["registers_per_thread"] / 256,
        "log_shared": math.log1p(occ["shared_bytes_per_block"]),
        "threads": occ["threads"] / 128,
        "log_flops": math.log1p(sum(e.flops for e in estimates)),
        "log_bytes": math.log1p(sum(e.counts.get("dram_bytes", 0.0) for e in estimates)),
    }
    return total, f


def library_estimate(row: Row) -> float | None:
    """The estimate (ms) of the model the family's library planner ranks configurations by, for the row's plan:
    GEMM's `matmul.estimate` (what `choose` and `argus tune` order by); None for a family whose planner has none
    (attention's `choose` is a rule)."""
    if row.family != "gemm":
        return None
    from argus.kernels import matmul as mm

    try:
        problem = mm.GemmProblem(**row.plan["problem"])
        return mm.estimate(mm.kernel_problem(problem), mm.GemmConfig(**row.plan["config"])) * 1e3
    except (KeyError, TypeError, ValueError) as e:
        raise CalibrationError("CALIBRATION_PLAN", f"row {row.label!r} of {row.group!r}: {e}") from None


def with_features(rows: Iterable[Row], gpu: str | None = None) -> list[Row]:
    """`rows` with their ``estimate_ms``, ``features``, ``kernels`` and ``library_ms`` computed (rows that have
    features are kept as they are)."""
    from dataclasses import replace

    out = []
    for r in rows:
        if r.features is None or r.estimate_ms is None:
            estimates = _estimates(r, gpu)  # the plan traced and estimated once
            ms, f = features_of(estimates)
            kernels = sorted({e.kernel for e in estimates})
            r = replace(r, estimate_ms=ms, features=f, kernels=kernels, library_ms=library_estimate(r))
        out.append(r)
    return out


def feature_vector(features: Mapping[str, float], names: Sequence[str] = FEATURES) -> list[float]:
    try:
        return [float(features[name]) for name in names]
    except KeyError as e:
        raise CalibrationError(
            "CALIBRATION_ROW", f"a row's features lack {e}; compute them again (with_features)"
        ) from None


# ---------------------------------------------------------------------------------------------------------------
# the fit


@dataclass
class FamilyModel:
    """The correction for one family on one GPU, in two parts:

    ``ln(measured / estimate) = intercept + within . z(candidate features) + between . p(problem features)``

    `within` is fitted on the differences between candidates *of the same group* (each group's mean taken out: what
    orders the candidates of one problem); `between` on what is left, over the problem features only (constant
    within a group: it scales a problem's times without reordering its candidates). Features are standardized with
    the training rows' mean and scale."""

    intercept: float
    within: list[float]
    mean: list[float]
    scale: list[float]
    between: list[float]
    problem_mean: list[float]
    problem_scale: list[float]
    rows: int = 0
    groups: int = 0
    kernels: list[str] = field(default_factory=list)  # the kernels of the rows it was fitted on

    def correction(self, features: Mapping[str, float]) -> float:
        x = feature_vector(features)
        p = feature_vector(features, PROBLEM_FEATURES)
        z = sum(w * (v - m) / s for w, v, m, s in zip(self.within, x, self.mean, self.scale, strict=True))
        b = sum(
            w * (v - m) / s for w, v, m, s in zip(self.between, p, self.problem_mean, self.problem_scale, strict=True)
        )
        return self.intercept + z + b

    def predict(self, estimate_ms: float, features: Mapping[str, float]) -> float:
        return estimate_ms * math.exp(self.correction(features))


def _standardized(x: Any) -> tuple[Any, Any, Any]:
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-9] = 1.0  # a constant feature: weight 0 (its column is zeros after centring)
    return (x - mean) / scale, mean, scale


def _ridge(z: Any, y: Any, ridge: float) -> Any:
    import numpy as np

    return np.linalg.solve(z.T @ z + ridge * np.eye(z.shape[1]), z.T @ y)


def fit_family(rows: Sequence[Row], ridge: float = RIDGE) -> FamilyModel:
    """The correction (`FamilyModel`) for one family's rows, each with features."""
    import numpy as np

    if len(rows) < 2:
        raise CalibrationError("CALIBRATION_DATA", f"{len(rows)} row(s): at least two are needed to fit")
    z, mean, scale = _standardized(np.asarray([feature_vector(r.features or {}) for r in rows]))
    p, pmean, pscale = _standardized(np.asarray([feature_vector(r.features or {}, PROBLEM_FEATURES) for r in rows]))
    y = np.asarray([math.log(r.ms / (r.estimate_ms or 1.0)) for r in rows])
    groups: dict[str, list[int]] = {}
    for i, r in enumerate(rows):
        groups.setdefault(r.group, []).append(i)
    zc, yc = z.copy(), y.copy()
    for idx in groups.values():
        zc[idx] -= z[idx].mean(axis=0)
        yc[idx] -= y[idx].mean()
    within = _ridge(zc, yc, ridge)
    rest = y - z @ within
    between = _ridge(p, rest - rest.mean(), ridge)
    return FamilyModel(
        intercept=float(rest.mean()),
        within=[float(v) for v in within],
        mean=[float(v) for v in mean],
        scale=[float(v) for v in scale],
        between=[float(v) for v in between],
        problem_mean=[float(v) for v in pmean],
        problem_scale=[float(v) for v in pscale],
        rows=len(rows),
        groups=len(groups),
        kernels=sorted({k for r in rows for k in r.kernels}),
    )


# ---------------------------------------------------------------------------------------------------------------
# the metrics


def spearman(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Spearman's rank correlation (ties get their mean rank); None with fewer than 3 values or a constant side."""
    if len(xs) != len(ys):
        raise ValueError("spearman: sequences of different lengths")
    if len(xs) < 3:
        return None

    def ranks(v: Sequence[float]) -> list[float]:
        order = sorted(range(len(v)), key=lambda i: v[i])
        r = [0.0] * len(v)
        i = 0
        while i < len(order):
            j = i
            while j + 1 < len(order) and v[order[j + 1]] == v[order[i]]:
                j += 1
            for t in range(i, j + 1):
                r[order[t]] = (i + j) / 2
            i = j + 1
        return r

    rx, ry = ranks(xs), ranks(ys)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry, strict=True))
    vx = sum((a - mx) ** 2 for a in rx)
    vy = sum((b - my) ** 2 for b in ry)
    if vx == 0 or vy == 0:
        return None
    return cov / math.sqrt(vx * vy)


@dataclass
class Metrics:
    """How a model's predictions compare with measurements (see `evaluate`)."""

    rows: int
    groups: int
    median_error: float  # exp(median |ln(pred / measured)|): 1.0 is exact
    spearman: float | None  # over all rows
    top_spearman: float | None  # mean over groups of 3+ rows, among each group's TOP fastest measured
    regret: float  # geometric mean over groups: measured time of the model's first choice / measured best
    trust_k: int  # the fewest top-ranked candidates that hold one within NEAR of the best in COVER of the groups
    hits: float  # share of groups where the model's first choice is within NEAR of the best

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def metrics(rows: Sequence[Row], predicted: Sequence[float]) -> Metrics:
    """`Metrics` of `predicted` (ms, parallel to `rows`) against the rows' measured times."""
    if len(rows) != len(predicted) or not rows:
        raise CalibrationError("CALIBRATION_DATA", "metrics need one prediction per row, and rows")
    errors = sorted(abs(math.log(p / r.ms)) for r, p in zip(rows, predicted, strict=True))
    mid = len(errors) // 2
    median = errors[mid] if len(errors) % 2 else (errors[mid - 1] + errors[mid]) / 2
    by_group: dict[str, list[tuple[float, float]]] = {}
    for r, p in zip(rows, predicted, strict=True):
        by_group.setdefault(r.group, []).append((r.ms, p))
    tops, regrets, needed, hits = [], [], [], 0
    for pairs in by_group.values():
        best = min(m for m, _ in pairs)
        fastest = sorted(pairs)[:TOP]
        s = spearman([p for _, p in fastest], [m for m, _ in fastest])
        if s is not None:
            tops.append(s)
        by_model = sorted(pairs, key=lambda mp: (mp[1], mp[0]))
        regrets.append(math.log(by_model[0][0] / best))
        hits += by_model[0][0] <= best * (1 + NEAR)
        needed.append(next(i + 1 for i, (m, _) in enumerate(by_model) if m <= best * (1 + NEAR)))
    needed.sort()
    k = needed[min(len(needed) - 1, max(0, math.ceil(COVER * len(needed)) - 1))]
    return Metrics(
        rows=len(rows),
        groups=len(by_group),
        median_error=math.exp(median),
        spearman=spearman(list(predicted), [r.ms for r in rows]),
        top_spearman=sum(tops) / len(tops) if tops else None,
        regret=math.exp(sum(regrets) / len(regrets)),
        trust_k=k,
        hits=hits / len(by_group),
    )


def held_out_predictions(rows: Sequence[Row], ridge: float = RIDGE) -> list[float]:
    """Each row's calibrated prediction from a model fitted without its group (leave one group out)."""
    groups = sorted({r.group for r in rows})
    if len(groups) < 2:
        raise CalibrationError("CALIBRATION_DATA", "a held-out evaluation needs rows of two groups or more")
    out = [0.0] * len(rows)
    for g in groups:
        train = [r for r in rows if r.group != g]
        model = fit_family(train, ridge)
        for i, r in enumerate(rows):
            if r.group == g:
                out[i] = model.predict(r.estimate_ms or 0.0, r.features or {})
    return out


def evaluate(rows: Sequence[Row], ridge: float = RIDGE) -> dict[str, dict[str, Metrics]]:
    """Per family: the uncalibrated model's `Metrics` and the calibrated one's, held out a group at a time."""
    rows = _ready(rows)
    out: dict[str, dict[str, Metrics]] = {}
    for family in FAMILIES:
        mine = [r for r in rows if r.family == family]
        if len({r.group for r in mine}) < 2:
            continue
        out[family] = {
            "uncalibrated": metrics(mine, [r.estimate_ms or 0.0 for r in mine]),
            "calibrated": metrics(mine, held_out_predictions(mine, ridge)),
            **_library(mine),
        }
    return out


def _library(rows: Sequence[Row]) -> dict[str, Metrics]:
    """The library planner's model's `Metrics` (``library``) where every row has its estimate, else nothing."""
    if rows and all(r.library_ms for r in rows):
        return {"library": metrics(rows, [r.library_ms or 0.0 for r in rows])}
    return {}


def evaluate_on(train: Sequence[Row], test: Sequence[Row], ridge: float = RIDGE) -> dict[str, dict[str, Metrics]]:
    """Per family of `test`: the uncalibrated and the calibrated (fitted on all of `train`) models' `Metrics` on
    `test` (rows of other problems, or measured later)."""
    train, test = _ready(train), _ready(test)
    out: dict[str, dict[str, Metrics]] = {}
    for family in FAMILIES:
        mine = [r for r in test if r.family == family]
        fitted = [r for r in train if r.family == family]
        if not mine or len(fitted) < 2:
            continue
        model = fit_family(fitted, ridge)
        out[family] = {
            "uncalibrated": metrics(mine, [r.estimate_ms or 0.0 for r in mine]),
            "calibrated": metrics(mine, [model.predict(r.estimate_ms or 0.0, r.features or {}) for r in mine]),
            **_library(mine),
        }
    return out


def _ready(rows: Sequence[Row]) -> list[Row]:
    missing = [r for r in rows if r.features is None or r.estimate_ms is None]
    if missing:
        raise CalibrationError(
            "CALIBRATION_DATA",
            f"{len(missing)} row(s) without features (e.g. {missing[0].label!r} of {missing[0].group!r}); "
            "compute them first (with_features, or `argus calibrate --featurize`)",
        )
    return list(rows)


# ---------------------------------------------------------------------------------------------------------------
# a calibration: the fitted families with their held-out record


@dataclass
class Calibration:
    """The corrections per (GPU, family), each with the held-out metrics that say how far to trust it."""

    gpu: str
    families: dict[str, FamilyModel] = field(default_factory=dict)
    heldout: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    sources: list[str] = field(default_factory=list)

    def calibrated_ms(
        self, family: str, estimate_ms: float, features: Mapping[str, float], kernels: Iterable[str] = ()
    ) -> float | None:
        """The calibrated time of an estimate, or None where this family has no correction, the correction did not
        beat the uncalibrated model on held-out rows (their median error), or one of `kernels` (the names of the
        traced kernels estimated) is not among those it was fitted on (no extrapolation to other kernels)."""
        model = self.families.get(family)
        if model is None or not self.improves(family):
            return None
        if any(k not in model.kernels for k in kernels):
            return None
        return model.predict(estimate_ms, features)

    def improves(self, family: str) -> bool:
        """Whether the family's correction lowered the held-out median error by at least `IMPROVES_MARGIN`."""
        h = self.heldout.get(family)
        if not h:
            return False
        return h["calibrated"]["median_error"] <= h["uncalibrated"]["median_error"] * (1 - IMPROVES_MARGIN)

    def trust_k(self, family: str, default: int | None = None, model: str | None = None) -> int | None:
        """How many of a model's top-ranked candidates to measure for one within `NEAR` of the best in `COVER` of
        held-out groups: `model` ``library`` (the family planner's own model), ``calibrated`` or ``uncalibrated``;
        by default the calibrated static model's where it improves, else the uncalibrated one's. `default` where
        there is no record."""
        h = self.heldout.get(family)
        name = model or ("calibrated" if self.improves(family) else "uncalibrated")
        if not h or name not in h:
            return default
        return int(h[name]["trust_k"])

    def to_json(self) -> dict[str, Any]:
        return {
            "format": "argus-calibration",
            "version": 1,
            "gpu": self.gpu,
            "features": list(FEATURES),
            "problem_features": list(PROBLEM_FEATURES),
            "ridge": RIDGE,
            "families": {k: asdict(v) for k, v in self.families.items()},
            "heldout": self.heldout,
            "sources": self.sources,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Calibration:
        if data.get("format") != "argus-calibration":
            raise CalibrationError("CALIBRATION_FILE", "not an argus calibration (format != argus-calibration)")
        if list(data.get("features", [])) != list(FEATURES) or list(data.get("problem_features", [])) != list(
            PROBLEM_FEATURES
        ):
            raise CalibrationError(
                "CALIBRATION_FILE",
                "the calibration was fitted on other features than this version's; fit it again (argus calibrate)",
            )
        return cls(
            gpu=data["gpu"],
            families={k: FamilyModel(**v) for k, v in data.get("families", {}).items()},
            heldout=dict(data.get("heldout", {})),
            sources=list(data.get("sources", [])),
        )

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_json(), indent=1, sort_keys=True) + "\n")

    @classmethod
    def load(cls, path: str | Path = CALIBRATION_FILE) -> Calibration:
        try:
            data = json.loads(Path(path).read_text())
        except FileNotFoundError:
            raise CalibrationError("CALIBRATION_FILE", f"no calibration at {path}") from None
        except json.JSONDecodeError as e:
            raise CalibrationError("CALIBRATION_FILE", f"{path}: not JSON ({e})") from None
        return cls.from_json(data)


_SHIPPED: list[Calibration | None] = []


def shipped() -> Calibration | None:
    """The package's calibration (`CALIBRATION_FILE`), read once; None where it cannot be read."""
    if not _SHIPPED:
        try:
            _SHIPPED.append(Calibration.load())
        except CalibrationError:
            _SHIPPED.append(None)
    return _SHIPPED[0]


def calibrated(estimates: Sequence[Any], calibration: Calibration | None = None) -> dict[str, Any] | None:
    """The calibrated time of the estimates of one plan's launches (`costmodel.Estimate`, one per launch) with
    what backs it, or None where no correction applies (another GPU, a family without one, a kernel it was not
    fitted on, or a correction that did not beat the raw model held out): ``{"ms", "family", "gpu",
    "heldout_median_error", "trust_k"}``."""
    cal = calibration or shipped()
    if cal is None or not estimates or any(e.gpu != cal.gpu for e in estimates):
        return None
    main = max(estimates, key=lambda e: e.ms)
    family = family_of(main.kernel)
    ms, features = features_of(estimates)
    value = cal.calibrated_ms(family, ms, features, [e.kernel for e in estimates])
    if value is None:
        return None
    return {
        "ms": value,
        "family": family,
        "gpu": cal.gpu,
        "heldout_median_error": cal.heldout[family]["calibrated"]["median_error"],
        "trust_k": cal.trust_k(family),
    }


def calibrate(rows: Sequence[Row], gpu: str, ridge: float = RIDGE) -> Calibration:
    """Fit every family with rows of two groups or more on `gpu`, with its held-out record (`evaluate`)."""
    rows = [r for r in _ready(rows) if r.gpu == gpu]
    if not rows:
        raise CalibrationError("CALIBRATION_DATA", f"no rows measured on {gpu}")
    report = evaluate(rows, ridge)
    cal = Calibration(gpu=gpu, sources=sorted({r.source.split("#")[0] for r in rows}))
    for family, pair in report.items():
        cal.families[family] = fit_family([r for r in rows if r.family == family], ridge)
        cal.heldout[family] = {k: m.to_json() for k, m in pair.items()}
    return cal
