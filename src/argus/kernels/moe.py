"""The MoE library call: `grouped_mm` (``torch._grouped_mm`` for a 2-d ``a`` and a 3-d ``b``) on the kernel of
`argus.kernels.grouped`, with its configuration by shape (`choose`), the row-tile counts it schedules by
(`tile_counts`, computed on the device without a host synchronization) and its prepared launch (`prepare`).
docs/moe.md says what is built, verified and measured."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from argus.kernels.grouped import grouped_gemm_persistent, search_steps


def tile_counts(offs: Any, block_m: int) -> Any:
    """``tiles[g] = sum over h <= g of cdiv(rows of expert h, block_m)`` from the cumulative row ends `offs` (a torch
    tensor on any device, computed there without a host synchronization, or a numpy array), as int32."""
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a dependency; numpy arrays need no torch
        torch = None
    if torch is not None and isinstance(offs, torch.Tensor):
        ends = offs.to(torch.int64)
        rows = torch.diff(ends, prepend=ends.new_zeros(1))
        return torch.cumsum((rows + (block_m - 1)) // block_m, 0).to(torch.int32)
    import numpy as np

    ends = np.asarray(offs, dtype=np.int64)
    rows = np.diff(ends, prepend=0)
    return np.cumsum((rows + (block_m - 1)) // block_m).astype(np.int64)


class GroupedError(ValueError):
    """A grouped GEMM call the kernel does not take (shapes, dtypes, layouts, devices), with what to pass instead."""


#: The configurations `choose` picks from: (BM, BN, BK, STAGES), each within the shared-memory budget.
CONFIGS: tuple[tuple[int, int, int, int], ...] = ((128, 256, 64, 4), (128, 128, 64, 5))


def choose(rows: int, n: int, k: int, experts: int) -> dict[str, Any]:
    """The kernel parameters for a grouped product of `rows` routed rows, `experts` experts, (K, N) = (k, n), without
    tuning: 128 x 256 tiles where N fills them (fewer, larger tiles: each B[g] panel is read by fewer blocks), else
    128 x 128."""
    bm, bn, bk, stages = CONFIGS[0] if n % 256 == 0 and n >= 1024 else CONFIGS[1]
    return {"BM": bm, "BN": bn, "BK": bk, "STAGES": stages, "GROUP": 8, "SEARCH": search_steps(experts)}


@functools.lru_cache(maxsize=64)
def _loaded(params: tuple[tuple[str, Any], ...]) -> Any:
    from argus.backend.cuda.codegen import compile_kernel
    from argus.runtime import load

    return load(compile_kernel(grouped_gemm_persistent.trace(**dict(params))))


def prepare(a: Any, b: Any, offs: Any, *, config: dict[str, Any] | None = None, out: Any = None) -> tuple[Any, Any]:
    """(C, the prepared launch): `grouped_mm` without launching, for timing loops (the launch holds raw addresses:
    keep `a`, `b`, `offs` and C alive while it is used). The row-tile counts are computed on the device when the
    launch is prepared; a new `offs` needs a new prepare."""
    import torch

    if a.dim() != 2 or b.dim() != 3 or offs.dim() != 1:
        raise GroupedError(
            f"grouped_mm takes a (R, K), b (E, K, N) and offs (E,); got {tuple(a.shape)}, {tuple(b.shape)}, "
            f"{tuple(offs.shape)}"
        )
    (rows, k), (experts, kb, n) = a.shape, b.shape
    if kb != k or offs.shape[0] != experts:
        raise GroupedError(f"a's K ({k}) must be b's ({kb}) and offs must have one end per expert ({experts})")
    if a.dtype != b.dtype or a.dtype not in (torch.bfloat16, torch.float16):
        raise GroupedError(f"a and b must both be bf16 or both f16, got {a.dtype} and {b.dtype}")
    if offs.dtype != torch.int32:
        raise GroupedError(f"offs must be int32 (cumulative row ends, as torch._grouped_mm takes), got {offs.dtype}")
    if not (a.is_contiguous() and b.is_contiguous() and offs.is_contiguous()):
        raise GroupedError("a, b (E, K, N) and offs must be contiguous row-major tensors: pass .contiguous()")
    if k % 8 or n % 8:
        raise GroupedError(f"K and N must be multiples of 8 (16-byte TMA rows), got K={k}, N={n}")
    if len({a.device, b.device, offs.device}) != 1 or a.device.type != "cuda":
        raise GroupedError("a, b and offs must be on one CUDA device")
    params = dict(choose(rows, n, k, experts) if config is None else config)
    params.setdefault("SEARCH", search_steps(experts))
    params["OUT"] = params["IN"] = "bf16" if a.dtype == torch.bfloat16 else "f16"
    tiles = tile_counts(offs, params["BM"])
    c = out if out is not None else torch.empty((rows, n), dtype=a.dtype, device=a.device)
    prepared = _loaded(tuple(sorted(params.items()))).prepare(a, b, offs, tiles, c)
    return c, GroupedLaunch(prepared, (a, b, offs, tiles, c))


@dataclass(frozen=True)
class GroupedLaunch:
    """A prepared grouped GEMM launch and the tensors it addresses (kept alive with it)."""

    prepared: Any
    keep: tuple[Any, ...]

    def launch(self) -> None:
        self.prepared.launch()


def grouped_mm(a: Any, b: Any, offs: Any, *, config: dict[str, Any] | None = None) -> Any:
    """``torch._grouped_mm(a, b, offs=offs)`` for a 2-d `a` (R, K) and a 3-d `b` (E, K, N), bf16 or f16 on a CUDA
    device: rows ``offs[g-1] .. offs[g]`` of a times b[g], in one launch of `grouped_gemm_persistent` on the
    current stream, without a host synchronization. Rows past ``offs[E-1]`` of the result are left unwritten (as
    torch leaves them undefined)."""
    c, launch = prepare(a, b, offs, config=config)
    launch.launch()
    return c
