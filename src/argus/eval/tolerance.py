"""Comparing a candidate's output with the reference: per-dtype tolerances and the element, norm and
non-finite checks.

The tolerances are KernelBench's (fp32: 1e-4, bf16/fp16: 1e-2, absolute and relative), applied against a
reference computed in float64. Three checks, all required:

1. **every element**: ``|out - ref| <= atol * scale + rtol * |ref|``, where ``scale`` is the larger of the RMS of
   the reference's finite elements and the RMS of the inputs capped at 1. With inputs and outputs of order one
   this is KernelBench's ``allclose``; the absolute part follows the output's magnitude where that is large (a
   large-magnitude input does not fail an honest kernel for rounding that is small relative to the output), and
   shrinks with small inputs, but is never looser than KernelBench's for outputs below one — an output that
   is small only because it averages its inputs (attention, a softmax) keeps the absolute tolerance its
   inputs' rounding needs;
2. **relative norm**: ``||out - ref||_2 / ||ref||_2 <= rtol`` — an output that is wrong everywhere by a little
   (a TF32 matmul on an fp32 task) fails even when each element squeaks by, and an all-zero output fails
   whatever the magnitude of its values (a softmax over long rows, whose every value is below ``atol``);
3. **non-finite values**: NaN only where the reference is NaN, Inf only where the reference (rounded to the
   output's dtype) is the same Inf. A NaN-poisoned element the candidate never wrote fails here.

Integer and boolean outputs are compared exactly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: (atol, rtol) by dtype name; rtol is also the relative-norm bound.
TOLERANCES: dict[str, tuple[float, float]] = {
    "float64": (1e-7, 1e-7),
    "float32": (1e-4, 1e-4),
    "bfloat16": (1e-2, 1e-2),
    "float16": (1e-2, 1e-2),
}

# Lower rank = lower precision: the tolerance of a run is that of its least precise floating dtype.
_PRECISION_RANK = {"float8_e4m3fn": 0, "float8_e5m2": 0, "bfloat16": 1, "float16": 2, "float32": 3, "float64": 4}


@dataclass(frozen=True)
class Tolerance:
    """Absolute and relative element tolerance, and the bound on the relative error norm."""

    atol: float
    rtol: float
    norm: float
    dtype: str

    def to_json(self) -> dict[str, Any]:
        return {"dtype": self.dtype, "atol": self.atol, "rtol": self.rtol, "norm": self.norm}


def dtype_name(dtype: Any) -> str:
    """``torch.float32`` -> ``"float32"``."""
    return str(dtype).removeprefix("torch.")


def tolerance_for(dtype: Any) -> Tolerance:
    """The tolerance of a run whose least precise floating dtype is `dtype` (float8 uses the half tolerance)."""
    name = dtype_name(dtype)
    atol, rtol = TOLERANCES.get(name, TOLERANCES["bfloat16"] if name.startswith("float8") else TOLERANCES["float32"])
    return Tolerance(atol, rtol, rtol, name)


def lowest_precision(dtypes: Any) -> Any | None:
    """The least precise floating dtype among `dtypes` (None if there is none)."""
    floats = [d for d in dtypes if dtype_name(d) in _PRECISION_RANK]
    return min(floats, key=lambda d: _PRECISION_RANK[dtype_name(d)]) if floats else None


@dataclass
class Comparison:
    """The result of comparing one output with its reference.

    Attributes:
        ok: all checks passed.
        code: the gate code of the first failed check (``CORRECT_SHAPE``, ``CORRECT_NONFINITE``,
            ``CORRECT_MISMATCH``, ...), None when ok.
        reason: one line with the numbers.
        details: max errors, the worst element (index, value, reference, bound), mismatch counts, relative norm.
    """

    ok: bool
    code: str | None = None
    reason: str = ""
    details: dict[str, Any] = field(default_factory=dict)


def input_scale(inputs: Any) -> float | None:
    """The largest RMS among the floating tensors in `inputs` (None if there are none)."""
    import torch

    values = []
    for x in inputs:
        if isinstance(x, torch.Tensor) and x.is_floating_point() and x.numel():
            _, _, sq, count = finite_stats(x)
            if count:
                values.append((sq / count) ** 0.5)
    return max(values) if values else None


#: Elements compared at a time: bounds the temporary memory of a comparison whatever the output's size.
CHUNK = 1 << 24


def _work_device(*tensors: Any) -> Any:
    """Where to compute over `tensors`, chunk by chunk: on the GPU if any of them is there; tensors in host memory
    of more than one chunk (the judge keeps a large trial's copies on the host, `argus.eval.correctness`) on the
    GPU too when there is one, each chunk copied over (a pass over 1.6e9 float64 elements on the host takes
    seconds, on the GPU milliseconds); small host tensors on the host."""
    import torch

    for t in tensors:
        if t.device.type != "cpu":
            return t.device
    if max(t.numel() for t in tensors) > CHUNK and torch.cuda.is_available():
        return torch.device("cuda", torch.cuda.current_device())
    return tensors[-1].device


def _chunks(t: Any, device: Any) -> Any:
    flat = t.detach().reshape(-1)
    for start in range(0, flat.numel(), CHUNK):
        yield start, flat[start : start + CHUNK].to(device)


def _paired_chunks(a: Any, b: Any, device: Any) -> Any:
    fa, fb = a.detach().reshape(-1), b.detach().reshape(-1)
    for start in range(0, fa.numel(), CHUNK):
        yield start, fa[start : start + CHUNK].to(device), fb[start : start + CHUNK].to(device)


def finite_stats(t: Any) -> tuple[float, float, float, int]:
    """(min, max, sum of squares, count) of the finite elements of a floating tensor, in float64, by chunks
    (`_work_device`)."""
    import torch

    lo, hi, sq, count = float("inf"), float("-inf"), 0.0, 0
    for _, chunk in _chunks(t, _work_device(t)):
        v = chunk.to(torch.float64)
        v = v[torch.isfinite(v)]
        if v.numel():
            lo, hi = min(lo, float(v.min())), max(hi, float(v.max()))
            sq += float((v * v).sum())
            count += v.numel()
    return lo, hi, sq, count


def _index(flat: int, shape: tuple[int, ...]) -> list[int]:
    out = []
    for extent in reversed(shape):
        out.append(flat % extent if extent else 0)
        flat = flat // extent if extent else 0
    return list(reversed(out))


#: With a noise floor, the tolerance is never tighter than this many times the task's own rounding noise.
NOISE_FACTOR = 10.0


def compare(
    out: Any,
    ref: Any,
    tol: Tolerance,
    *,
    name: str = "output",
    input_scale: float | None = None,
    noise: Any = None,
    noise_factor: float = NOISE_FACTOR,
) -> Comparison:
    """Compare the candidate's `out` with the reference `ref` (ideally float64) under `tol`.

    Contract: ok exactly when shapes agree, every element is within ``atol * scale + rtol * |ref|`` with
    ``scale = max(rms(ref), min(input_scale, 1))`` (``rms(ref)`` without `input_scale`), the relative error norm
    is at most ``tol.norm``, and NaN/Inf appear exactly where the reference has them.

    `noise` (optional): the task's own reference computed in its own precision minus the float64 reference. When
    given, the absolute bound is at least ``noise_factor * max|noise|`` and the error norm may reach
    ``noise_factor * ||noise||``: an output that is mathematically (near) zero by cancellation is then judged
    against the rounding noise any implementation in that precision has, not against a float64 zero.
    """
    import torch

    if not isinstance(out, torch.Tensor):
        return Comparison(False, "CORRECT_OUTPUT_COUNT", f"{name}: expected a tensor, got {type(out).__name__}")
    if tuple(out.shape) != tuple(ref.shape):
        return Comparison(
            False,
            "CORRECT_SHAPE",
            f"{name}: shape {tuple(out.shape)} but the reference has {tuple(ref.shape)}",
            {"shape": list(out.shape), "expected_shape": list(ref.shape)},
        )
    n = out.numel()
    if n == 0:
        return Comparison(True, details={"elements": 0})
    device = _work_device(out, ref)
    shape = tuple(out.shape)
    if not ref.is_floating_point() and not ref.is_complex():
        if out.is_floating_point():
            return Comparison(
                False, "CORRECT_DTYPE", f"{name}: floating output {out.dtype} for an exact {ref.dtype} reference"
            )
        count, first = 0, None
        for start, o_chunk, r_chunk in _paired_chunks(out, ref, device):
            bad = o_chunk.to(torch.int64) != r_chunk.to(torch.int64)
            c = int(bad.sum())
            if c and first is None:
                first = start + int(bad.nonzero()[0, 0])
            count += c
        if count:
            assert first is not None
            idx = _index(first, shape)
            got, want = out.reshape(-1)[first].item(), ref.reshape(-1)[first].item()
            return Comparison(
                False,
                "CORRECT_MISMATCH",
                f"{name}: {count} of {n} elements differ from the exact reference; first at {idx}: {got} != {want}",
                {"mismatched": count, "elements": n, "index": idx, "got": got, "want": want, "exact": True},
            )
        return Comparison(True, details={"elements": n, "exact": True})

    # pass 1: the reference's RMS (finite elements) and the noise's size
    ref_sq, ref_count = 0.0, 0
    for _, r_chunk in _chunks(ref, device):
        r = r_chunk.to(torch.float64)
        r = r[torch.isfinite(r)]
        ref_sq += float((r * r).sum())
        ref_count += r.numel()
    rms = (ref_sq / ref_count) ** 0.5 if ref_count else 0.0
    scale = max(rms, min(input_scale, 1.0)) if input_scale else rms
    atol_eff = tol.atol * scale if scale > 0 else tol.atol
    noise_max = noise_sq = 0.0
    if noise is not None:
        for _, z_chunk in _chunks(noise, device):
            z = z_chunk.to(torch.float64)
            z = z[torch.isfinite(z)]
            if z.numel():
                noise_max = max(noise_max, float(z.abs().max()))
                noise_sq += float((z * z).sum())
        atol_eff = max(atol_eff, noise_factor * noise_max)
    noise_norm = noise_sq**0.5

    # pass 2: every element
    n_nonfinite = n_bad = 0
    first_nonfinite: int | None = None
    worst: tuple[float, int] | None = None  # (error / bound, flat index) of the worst element out of tolerance
    err_sq = checked_ref_sq = 0.0
    max_abs = 0.0
    for start, o_chunk, r_chunk in _paired_chunks(out, ref, device):
        o = o_chunk.to(torch.float64)
        r = r_chunk.to(torch.float64)
        if bool(torch.isfinite(o).all()) and bool(torch.isfinite(r).all()):  # the usual case, fast
            diff = (o - r).abs_()
            bound = r.abs().mul_(tol.rtol).add_(atol_eff)
            bad = diff > bound
            c = int(bad.sum())
            if c:
                ratio = torch.where(bad, diff / bound.clamp_min(1e-300), torch.zeros_like(diff))
                value, at = ratio.max(dim=0)
                if worst is None or float(value) > worst[0]:
                    worst = (float(value), start + int(at))
            n_bad += c
            max_abs = max(max_abs, float(diff.max()))
            err_sq += float(diff.square_().sum())
            checked_ref_sq += float(r.square().sum())  # r may be the caller's tensor: not in place
            continue
        # where the reference overflows the output's dtype, the candidate may legitimately produce Inf
        r_in_dtype = r_chunk.to(o_chunk.dtype).to(torch.float64) if o_chunk.is_floating_point() else r
        nan_r, nan_o = torch.isnan(r), torch.isnan(o)
        inf_r = torch.isinf(r_in_dtype) & ~nan_r
        # an Inf of the right sign where the reference is Inf, or overflows the output's dtype, is a match
        inf_match = inf_r & torch.isinf(o) & (torch.sign(o) == torch.sign(r_in_dtype))
        both_finite = torch.isfinite(r) & torch.isfinite(o)
        check = both_finite & ~inf_match  # the elements the tolerance applies to
        nonfinite_bad = (nan_r != nan_o) | (~nan_r & ~nan_o & ~inf_match & ~both_finite)
        c = int(nonfinite_bad.sum())
        if c and first_nonfinite is None:
            first_nonfinite = start + int(nonfinite_bad.nonzero()[0, 0])
        n_nonfinite += c
        diff = torch.where(check, (o - r).abs(), torch.zeros_like(r))
        bound = atol_eff + tol.rtol * torch.where(check, r.abs(), torch.zeros_like(r))
        bad = check & (diff > bound)
        c = int(bad.sum())
        if c:
            ratio = torch.where(bad, diff / bound.clamp_min(1e-300), torch.zeros_like(diff))
            value, at = ratio.max(dim=0)
            if worst is None or float(value) > worst[0]:
                worst = (float(value), start + int(at))
        n_bad += c
        if check.any():
            max_abs = max(max_abs, float(diff.max()))
            err_sq += float((diff * diff).sum())
            rc = torch.where(check, r, torch.zeros_like(r))
            checked_ref_sq += float((rc * rc).sum())
    ref_norm, err_norm = checked_ref_sq**0.5, err_sq**0.5
    if ref_norm > 0:
        rel_norm = err_norm / ref_norm
        norm_ok = rel_norm <= tol.norm or err_norm <= noise_factor * noise_norm
    else:  # an all-zero reference: the error must be within the absolute tolerance on average
        rel_norm = err_norm / (n**0.5)
        norm_ok = rel_norm <= tol.atol or err_norm <= noise_factor * noise_norm
    details: dict[str, Any] = {
        "elements": n,
        "max_abs_err": max_abs,
        "rel_norm": rel_norm,
        "norm_ok": norm_ok,
        "scale": scale,
        "rms": rms,
        "atol_effective": atol_eff,
        "tolerance": tol.to_json(),
        **({"noise_max": noise_max, "noise_norm": noise_norm} if noise is not None else {}),
    }
    flat_out, flat_ref = out.reshape(-1), ref.reshape(-1)
    if n_nonfinite:
        assert first_nonfinite is not None
        idx = _index(first_nonfinite, shape)
        got, want = float(flat_out[first_nonfinite]), float(flat_ref[first_nonfinite])
        details.update({"nonfinite_mismatched": n_nonfinite, "index": idx, "got": got, "want": want})
        return Comparison(
            False,
            "CORRECT_NONFINITE",
            f"{name}: {n_nonfinite} of {n} elements are NaN/Inf where the reference is not (or the reverse); "
            f"first at {idx}: got {got}, reference {want}",
            details,
        )
    if n_bad:
        assert worst is not None
        flat = worst[1]
        idx = _index(flat, shape)
        got, want = float(flat_out[flat]), float(flat_ref[flat])
        b = atol_eff + tol.rtol * abs(want)
        details.update({"mismatched": n_bad, "fraction": n_bad / n, "index": idx, "got": got, "want": want, "bound": b})
        return Comparison(
            False,
            "CORRECT_MISMATCH",
            f"{name}: {n_bad} of {n} elements outside tolerance ({tol.dtype}: atol {tol.atol:g} x scale {scale:.3g}, "
            f"rtol {tol.rtol:g}); worst at {idx}: got {got:.6g}, reference {want:.6g}, bound {b:.3g}",
            details,
        )
    if not norm_ok:
        return Comparison(
            False,
            "CORRECT_MISMATCH",
            f"{name}: relative error norm {rel_norm:.3g} exceeds {tol.norm:g} ({tol.dtype}), although every element "
            f"is within its bound",
            details,
        )
    return Comparison(True, details=details)


def compare_any(out: Any, want: Any, tol: Tolerance, **kwargs: Any) -> Comparison:
    """`compare` with `want` a tensor, or a pair ``(float64, native)`` of references that differ by rounding only
    (`argus.eval.correctness.reference_choice`, kind ``"float64 or native"``): the output passes when it matches
    either; a failure reports the float64 comparison."""
    if not isinstance(want, tuple):
        return compare(out, want, tol, **kwargs)
    first = compare(out, want[0], tol, **kwargs)
    if first.ok:
        return first
    second = compare(out, want[1], tol, **kwargs)
    return second if second.ok else first
