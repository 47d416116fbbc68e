"""Fresh random inputs for correctness trials, from several distributions, keeping what the task relies on.

Each trial starts from a *native* draw: the task's own input generator with a fresh seed (KernelBench's
``get_inputs()``, or a built-in task's sampler). Every trial but the first then redraws each floating tensor's
values from one of `DISTRIBUTIONS` — normal with a random mean and deviation, uniform over a random interval,
large magnitude, small magnitude, normal with outliers — while keeping the structure the native draw shows:

* **domain**: a tensor the task draws non-negative (``torch.rand``) stays non-negative; strictly positive stays
  strictly positive (a task may take its logarithm);
* **zero pattern**: exact zeros covering part of the tensor (``torch.triu``, masks) stay exactly where they were;
* **symmetry**: a square matrix (in its last two dimensions) that is exactly symmetric stays symmetric;
* **labels**: a floating tensor with at most two distinct values (``±1`` targets) is left as the task drew it.

Integer and boolean tensors (class indices, masks) and non-tensor arguments always come from the native draw.
Large and small magnitudes are chosen per dtype so they stay representable (fp16's range is small).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: The input distributions, in the order trials use them; ``native`` is the task's own generator.
DISTRIBUTIONS = ("native", "normal", "uniform", "large", "small", "outliers")

# magnitude of the large / small / outlier distributions per dtype name
_LARGE = {"float16": 16.0}
_SMALL = {"float16": 1e-2}
_OUTLIER = {"float16": 16.0}


@dataclass(frozen=True)
class Structure:
    """What a redraw of a tensor keeps from the native draw (see the module docstring)."""

    domain: str  # "real" | "nonnegative" | "positive"
    zero_pattern: bool
    symmetric: bool
    labels: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "domain": self.domain,
            "zero_pattern": self.zero_pattern,
            "symmetric": self.symmetric,
            "labels": self.labels,
        }


def structure_of(x: Any) -> Structure:
    """The structure of a native floating tensor `x` (computed on its own device, without float64 copies)."""
    import torch

    v = x.detach()
    n = v.numel()
    lo = _finite_min(v)
    domain = "positive" if lo > 0 else "nonnegative" if lo >= 0 else "real"
    zeros = float((v == 0).sum()) / n if n else 0.0
    zero_pattern = 0.0 < zeros < 1.0 and zeros >= 0.01
    symmetric = v.dim() >= 2 and v.shape[-1] == v.shape[-2] and v.shape[-1] > 1 and torch.equal(v, v.transpose(-1, -2))
    labels = False
    if n > 4:
        head = torch.unique(v.reshape(-1)[:4096])
        if head.numel() <= 2:
            labels = bool(((v == head[0]) | (v == head[-1])).all())
    return Structure(domain, zero_pattern, symmetric, labels)


def _finite_min(v: Any, chunk: int = 1 << 26) -> float:
    """The least finite value of `v` (0.0 when there is none), in chunks: boolean indexing would materialize
    int64 indices, eight times the size of a gigabyte input."""
    import torch

    lo = float("inf")
    for part in v.reshape(-1).split(chunk):
        finite = torch.isfinite(part)
        if bool(finite.any()):
            lo = min(lo, float(torch.where(finite, part, torch.inf).amin()))
    return 0.0 if lo == float("inf") else lo


def _values(distribution: str, shape: tuple[int, ...], dtype_name: str, g: Any) -> Any:
    """Values of `distribution` (float64 for float64 tensors, else float32; not yet shaped to any structure)."""
    import torch

    work = torch.float64 if dtype_name == "float64" else torch.float32
    dev = g.device

    def u(lo: float, hi: float) -> float:
        return float(torch.empty((), device=dev).uniform_(lo, hi, generator=g))

    def randn() -> Any:
        return torch.randn(shape, generator=g, dtype=work, device=dev)

    if distribution == "normal":  # not the standard normal: random mean and deviation
        return randn().mul_(u(0.5, 2.0)).add_(u(-1.0, 1.0))
    if distribution == "uniform":
        lo, hi = u(-3.0, -0.5), u(0.5, 3.0)
        return torch.rand(shape, generator=g, dtype=work, device=dev).mul_(hi - lo).add_(lo)
    if distribution == "large":
        return randn().mul_(_LARGE.get(dtype_name, 1e3))
    if distribution == "small":
        return randn().mul_(_SMALL.get(dtype_name, 1e-3))
    if distribution == "outliers":
        x = randn()
        flat = x.reshape(-1)
        count = max(1, flat.numel() // 100)
        idx = torch.randint(0, flat.numel(), (count,), generator=g, device=dev)
        flat[idx] *= _OUTLIER.get(dtype_name, 100.0)
        return x
    raise ValueError(f"unknown input distribution {distribution!r}; one of {', '.join(DISTRIBUTIONS)}")


def redraw(native: Any, distribution: str, generator: Any) -> Any:
    """A tensor like `native` (shape, dtype, device) with values from `distribution`, keeping its structure,
    drawn on the generator's device (`redistribute` gives each device its own generator).

    Non-floating tensors, label-like tensors and ``distribution == "native"`` return `native` unchanged."""
    import torch

    if distribution == "native" or not isinstance(native, torch.Tensor) or not native.is_floating_point():
        return native
    if native.numel() == 0:
        return native
    s = structure_of(native)
    if s.labels:
        return native
    name = str(native.dtype).removeprefix("torch.")
    x = _values(distribution, tuple(native.shape), name, generator)
    if s.domain != "real":
        x = x.abs_()
    if s.domain == "positive":
        x = x.clamp_min_(1e-6 if native.dtype != torch.float16 else 1e-4)
    if s.symmetric:
        upper = torch.triu(x)
        x = upper + torch.triu(x, 1).transpose(-1, -2)
    if s.zero_pattern:
        x = x.masked_fill_(native.detach().to(x.device) == 0, 0.0)
    # rounding to the dtype is elementwise, so symmetry and the zero pattern survive it
    return x.to(native.dtype).to(native.device)


def redistribute(inputs: list[Any], distribution: str, seed: int) -> list[Any]:
    """`inputs` (a native draw) with every floating tensor redrawn from `distribution` (see `redraw`), on the
    tensor's own device: one generator per device, each seeded with `seed` (a GPU draws gigabytes in
    milliseconds where the CPU takes seconds)."""
    import torch

    generators: dict[str, Any] = {}

    def generator(x: Any) -> Any:
        dev = str(x.device) if isinstance(x, torch.Tensor) else "cpu"
        if dev not in generators:
            generators[dev] = torch.Generator(device=dev).manual_seed(seed)
        return generators[dev]

    return [redraw(x, distribution, generator(x)) for x in inputs]


def trial_distributions(trials: int) -> list[str]:
    """The distribution of each trial: ``native`` first, then each of the others, cycling."""
    return [DISTRIBUTIONS[i % len(DISTRIBUTIONS)] for i in range(trials)]


def describe(inputs: list[Any]) -> list[dict[str, Any]]:
    """Shape, dtype, range and RMS of each input (for the results)."""
    import torch

    from argus.eval.tolerance import finite_stats

    out: list[dict[str, Any]] = []
    for x in inputs:
        if isinstance(x, torch.Tensor):
            entry: dict[str, Any] = {"shape": list(x.shape), "dtype": str(x.dtype).removeprefix("torch.")}
            if x.is_floating_point() and x.numel():
                lo, hi, sq, count = finite_stats(x)
                entry.update({"min": lo, "max": hi, "rms": (sq / count) ** 0.5 if count else None})
            out.append(entry)
        else:
            out.append({"value": repr(x)[:80]})
    return out
