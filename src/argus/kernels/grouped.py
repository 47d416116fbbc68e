"""The MoE grouped GEMM: ``C[rows of expert g] = A[rows of expert g] @ B[g]`` for every expert g in one launch, the
groups given by device-side offsets (no host synchronization, no padding of a group to the tile size).

`grouped_gemm_persistent` is the Hopper kernel: the persistent warp-specialized GEMM of `argus.kernels.gemm`
(a TMA producer warpgroup, wgmma consumer warpgroups, a `full`/`empty` mbarrier pipeline running on across a
block's tiles) whose work units are the output tiles of all experts together. Unit ``u`` is row tile ``t = u //
tiles_n``, column tile ``u % tiles_n``; row tile t belongs to the expert g whose cumulative row-tile count
``tiles[g]`` first exceeds t (a branchless binary search over ``tiles``, SEARCH steps, each one `T.let`), and is
row tile ``t - tiles[g-1]`` of that expert: rows ``offs[g-1] + (t - tiles[g-1]) * BM ...``, of which the rows
before ``offs[g]`` are stored (a bounded window). A's box is loaded at any row (TMA boxes start at element
coordinates); the rows past the expert's end belong to the next expert or lie past A's end (zeros) and are
computed and not stored.

``tiles`` (E,) holds ``sum over h <= g of cdiv(offs[h] - offs[h-1], BM)``: `tile_counts` computes it from ``offs``
on the device (three elementwise torch operations, no synchronization) or on numpy arrays for the interpreter.
"""

from __future__ import annotations

import contextlib
import functools
from dataclasses import dataclass
from typing import Any

import argus
import argus.lang as T
from argus.atoms.common import SMS, WARPGROUP_SIZE
from argus.kernels.gemm import alloc_operand_stages, load_operand, operand, operand_assumption
from argus.lang import DSLError


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


def search_steps(experts: int) -> int:
    """The binary search's steps for `experts` groups: the least S with ``experts <= 2**S``."""
    return max(1, (int(experts) - 1).bit_length())


@argus.kernel(policies={"tile_shape": ("BM", "BN", "BK"), "stages": "STAGES"})
def grouped_gemm_persistent(
    A: T.Tensor[("R", "K"), "IN"],
    B: T.Tensor[("E", "K", "N"), "IN"],
    offs: T.Tensor[("E",), T.i32],
    tiles: T.Tensor[("E",), T.i32],
    C: T.Tensor[("R", "N"), "OUT"],
    BM: int = 128,
    BN: int = 128,
    BK: int = 64,
    STAGES: int = 4,
    OUT: str = "bf16",
    IN: str = "bf16",
    PRODUCER_REGS: int = 40,
    CONSUMER_REGS: int = 232,
    BLOCKS: int = SMS,
    CONSUMERS: int = 2,
    SEARCH: int = 8,
    GROUP: int = 8,
):
    """C = the grouped product (module docstring): rows ``offs[g-1] .. offs[g]`` of A (R, K) times expert g's B[g]
    (K, N, row-major as ``torch._grouped_mm`` takes it), into the same rows of C (R, N), for E <= 2**SEARCH experts.
    BLOCKS persistent blocks, each a TMA producer warpgroup and CONSUMERS wgmma consumer warpgroups, walk the units
    (every expert's output tiles, each expert's GROUP row tiles at a time) with STAGES stages in flight. Assumes K
    and N multiples of 8 (TMA row strides of 16 bytes), ``offs`` nondecreasing with ``offs[E-1] <= R`` and
    ``tiles = tile_counts(offs, BM)``; rows of A past ``offs[E-1]`` are not computed."""
    R, K = A.shape  # noqa: N806 - the kernel's shape symbols
    E, _, N = B.shape  # noqa: N806
    if CONSUMERS not in (1, 2) or SEARCH < 1:
        raise DSLError("DSL_BAD_PARAM", f"CONSUMERS is 1 or 2 and SEARCH >= 1, got {CONSUMERS}, {SEARCH}")
    T.assume(operand_assumption("K", "N"))
    T.assume(f"E <= {1 << SEARCH}")
    with T.grid(BLOCKS, threads=WARPGROUP_SIZE * (1 + CONSUMERS)) as (bx,):
        sA = alloc_operand_stages("K", STAGES, BM, BK, A.dtype)  # (stages, BM, BK), K-major
        sB = alloc_operand_stages("N", STAGES, BN, BK, B.dtype)  # (stages, BK, BN) in 64-column panels
        full = T.alloc_mbarrier(STAGES, arrive_count=1)
        empty = T.alloc_mbarrier(STAGES, arrive_count=1)
        tiles_n = T.cdiv(N, BN)
        k_tiles = T.cdiv(K, BK)
        # at least the units there are: sum over g of cdiv(rows_g, BM) <= cdiv(R, BM) + E
        most_units = (T.cdiv(R, BM) + E) * tiles_n
        stage_bytes = (BM + BN) * BK * 2
        consumers = tuple(range(1, 1 + CONSUMERS))

        @contextlib.contextmanager
        def unit(it: Any):
            """The unit of iteration `it` of this block, when there is one: (expert, first row, row end, column
            tile)."""
            u = bx + it * BLOCKS
            with T.let(tiles[E - 1] * tiles_n, "units") as units, T.if_(u < units):
                with T.let(u // tiles_n, "t") as t, contextlib.ExitStack() as stack:
                    g: Any = 0  # how many experts' cumulative row-tile counts are <= t: the expert of row tile t
                    for step in reversed(range(SEARCH)):
                        cand = g + (1 << step)
                        inside = (cand <= E) & (tiles[T.minimum(cand - 1, E - 1)] <= t)
                        g = stack.enter_context(T.let(T.where(inside, cand, g), f"g{step}"))
                    first = stack.enter_context(T.let(T.where(g > 0, tiles[T.maximum(g - 1, 0)], 0), "first"))
                    start = T.where(g > 0, offs[T.maximum(g - 1, 0)], 0)
                    # the expert's units are contiguous: walk them GROUP row tiles at a time, column by column,
                    # so that consecutive units share B[g]'s column panels in L2 (row-tile order streamed all of
                    # B[g] from memory once per row tile)
                    local_m, bn = T.tile_order(u - first * tiles_n, (tiles[g] - first, tiles_n), "grouped", GROUP)
                    row0 = stack.enter_context(T.let(start + local_m * BM, "row0"))
                    end = stack.enter_context(T.let(offs[g], "row_end"))
                    col = stack.enter_context(T.let(bn, "bn"))
                    yield g, row0, end, col

        with T.role("producer", warpgroups=(0,), registers=PRODUCER_REGS):
            for it in T.serial(T.cdiv(most_units, BLOCKS)):
                with unit(it) as (g, row0, _end, bn):
                    for k, s in T.pipeline(k_tiles, stages=STAGES, start=it * k_tiles):
                        T.mbarrier_wait(empty[s], phase=((k + it * k_tiles) // STAGES + 1) % 2)
                        T.mbarrier_arrive(full[s], expect_bytes=stage_bytes)
                        T.copy(A.window((row0, k * BK), (BM, BK)), sA[s], atom="tma", mbarrier=full[s])
                        load_operand(B, "N", sB[s], bn, k, BN, BK, full[s], g)
        with T.role("consumer", warpgroups=consumers, registers=CONSUMER_REGS):
            acc = T.alloc_fragment((BM, BN), T.f32, mma=T.wgmma_atom(BN, A.dtype))
            for it in T.serial(T.cdiv(most_units, BLOCKS)):
                with unit(it) as (g, row0, end, bn):
                    T.fill(acc, 0.0)
                    for k, s in T.pipeline(k_tiles, stages=STAGES, start=it * k_tiles):
                        T.mbarrier_wait(full[s], phase=((k + it * k_tiles) // STAGES) % 2)
                        # invariant: the stages hold rows row0.. of A and expert g's B, at K-block k
                        T.assert_tag(lambda x: (x[1] // BK == k) & (x[0] - row0 >= 0) & (x[0] - row0 < BM), sA[s])
                        T.assert_tag(lambda x: (x[0] == g) & (x[1] // BK == k) & (x[2] // BN == bn), sB[s])
                        T.gemm(operand("K", sA[s], False), operand("N", sB[s], True), acc)
                        T.mbarrier_arrive(empty[s])
                    T.copy(acc, C.window((row0, bn * BN), (BM, BN), bound=(end, None)))


# --- the library call -------------------------------------------------------------------------------------------------


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
