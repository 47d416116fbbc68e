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

`grouped_gemm_expert_grid` and `grouped_gemm_units` are the lineage's lower rungs (docs/moe.md, "The lineage"): the
same body (`grouped_product`) on a grid of every expert's largest tile count, and on one block per unit.

``tiles`` (E,) holds ``sum over h <= g of cdiv(offs[h] - offs[h-1], BM)``: `argus.kernels.moe.tile_counts` computes
it from ``offs`` on the device (three elementwise torch operations, no synchronization) or on numpy arrays for the
interpreter. `argus.kernels.moe` is the library call (`grouped_mm`), its configuration and its launch.
"""

from __future__ import annotations

from typing import Any

import argus
import argus.lang as T
from argus.atoms.common import SMS, WARPGROUP_SIZE
from argus.atoms.tma import STAGING_BUFFERS, store_chunk_columns
from argus.kernels.gemm import alloc_operand_stages, load_operand, operand, operand_assumption
from argus.lang import DSLError


def product_shape(SPLITS: int = 1) -> tuple[Any, ...]:  # noqa: N803 - a kernel parameter
    """`grouped_gemm_persistent`'s C: (R, N), or split along K (SPLITS > 1) the f32 slices (SPLITS, R, N)."""
    return (SPLITS, "R", "N") if SPLITS > 1 else ("R", "N")


def search_steps(experts: int) -> int:
    """The binary search's steps for `experts` groups: the least S with ``experts <= 2**S``."""
    return max(1, (int(experts) - 1).bit_length())


@T.macro
def expert_search(tiles: Any, experts: Any, t: Any, g: Any, step: int, then: Any) -> None:
    """`then(expert)` with the expert of row tile `t`: how many experts' cumulative row-tile counts ``tiles`` are
    <= t, found step by step from the highest power of two `step` down, each step one `T.let`."""
    if step < 0:
        then(g)
        return
    cand = g + (1 << step)
    inside = (cand <= experts) & (tiles[T.minimum(cand - 1, experts - 1)] <= t)
    with T.let(T.where(inside, cand, g), f"g{step}") as found:
        expert_search(tiles, experts, t, found, step - 1, then)


@T.macro
def each_unit(
    it: Any,
    bx: Any,
    blocks: int,
    offs: Any,
    tiles: Any,
    experts: Any,
    tiles_n: Any,
    search: int,
    group: int,
    bm: int,
    body: Any,
    order: str = "grouped",
    splits: int = 1,
) -> None:
    """`body(expert, first row, row end, column tile)` for the unit of iteration `it` of block `bx`, when there is
    one: unit ``(bx + it * blocks) // splits`` of all experts' units (row tile ``u // tiles_n`` of all experts' row
    tiles; `splits` > 1: split-K, each unit walked by `splits` consecutive pairs). An
    expert's units are contiguous; `order` "grouped" walks them `group` row tiles at a time, column by column, so
    that consecutive units share B[g]'s column panels in L2 (row-tile order, "row_major", streamed all of B[g] from
    memory once per row tile)."""
    u = (bx + it * blocks) // splits if splits > 1 else bx + it * blocks
    with T.let(tiles[experts - 1] * tiles_n, "units") as units, T.if_(u < units), T.let(u // tiles_n, "t") as t:
        place = lambda g: place_unit(u, g, offs, tiles, tiles_n, group, bm, body, order)  # noqa: E731
        expert_search(tiles, experts, t, 0, search - 1, place)


@T.macro
def place_unit(
    u: Any, g: Any, offs: Any, tiles: Any, tiles_n: Any, group: int, bm: int, body: Any, order: str = "grouped"
) -> None:
    with T.let(T.where(g > 0, tiles[T.maximum(g - 1, 0)], 0), "first") as first:
        start = T.where(g > 0, offs[T.maximum(g - 1, 0)], 0)
        local_m, bn = T.tile_order(u - first * tiles_n, (tiles[g] - first, tiles_n), order, group)
        with T.let(start + local_m * bm, "row0") as row0, T.let(offs[g], "row_end") as end:
            with T.let(bn, "bn") as col:
                body(g, row0, end, col)


#: Why a grouped product writes part of C: the rows past the last expert's end belong to no expert.
UNROUTED_ROWS = (
    "rows past the last expert's end (offs[E - 1]) belong to no expert and are left as they are, as torch._grouped_mm "
    "leaves them"
)


def assume_routing(offs: Any, tiles: Any, rows: Any, experts: Any, bm: int, output: Any = None) -> None:
    """Declare what the grouped kernels rely on of their metadata (`T.assume_values`): ``offs`` (the experts'
    cumulative row ends) nondecreasing within ``0 .. R``, and ``tiles`` (their cumulative row-tile counts)
    nondecreasing within ``0 .. cdiv(R, BM) + E`` (a sum of E terms ``cdiv(rows_g, BM) <= rows_g / BM + 1``), and
    ``tiles = tile_counts(offs, BM)`` (the relation: each expert's row tiles are the tiles of its rows). The
    interpreter checks them on every call; on the GPU they are the caller's contract, which `argus.kernels.moe`
    keeps by construction (``offs`` a cumulative sum of counts, ``tiles = tile_counts(offs, BM)``)."""
    T.assume_values(offs, lo=0, hi=rows, nondecreasing=True)
    T.assume_values(tiles, lo=0, hi=T.cdiv(rows, bm) + experts, nondecreasing=True, tile_counts=(offs, bm))
    if output is not None:  # the verifier checks that every row before the last expert's end is written
        lead = (None,) * (output.buffer.rank - 2)  # split-K's slices (S, R, N): every slice
        T.writes_part(output, UNROUTED_ROWS, below=(*lead, offs[experts - 1], None))


@T.macro
def load_columns(tensor: Any, stage: T.Tile, g: Any, k: Any, col0: Any, bn: int, bk: int, bar: Any) -> None:
    """TMA-load K-block `k` of expert `g`'s row-major (K, N) matrix, the `bn` columns from column `col0` on (any
    column: a TMA box starts at an element coordinate), into `stage` (bk, bn) in 128-byte panels, on mbarrier
    `bar` (`argus.kernels.gemm.load_operand` at a column instead of a tile)."""
    panel = 128 // tensor.dtype.itemsize
    for j in range(bn // panel):
        T.copy(
            tensor.window((g, k * bk, col0 + panel * j), (None, bk, panel)),
            stage.window((0, panel * j), (bk, panel)),
            atom="tma",
            mbarrier=bar,
        )


@T.macro
def store_expert_tile(
    value: Any, C: Any, row0: Any, end: Any, bn: Any, bm: int, bn_: int, epilogue: str, staging: Any
) -> None:  # noqa: N803, E501
    """Store a unit's (bm, bn_) tile of C at rows ``row0 ..``, column tile `bn`, none at or past the expert's `end`:
    through the bounded window (`epilogue` "direct"), or, where every row is the expert's, through `staging` and TMA
    stores, the expert's last, partial tile bounded ("tma"; a TMA box is masked at the tensor's end only)."""
    window = C.window((row0, bn * bn_), (bm, bn_), bound=(end, None))
    if epilogue != "tma":
        T.copy(value, window)
        return
    with T.if_(row0 + bm <= end):  # every row the expert's: one TMA box per staged chunk
        T.copy(value, C.window((row0, bn * bn_), (bm, bn_)), atom="tma.store", staging=staging)
    with T.if_(row0 + bm > end):  # the expert's last, partial tile
        T.copy(value, window)


def store_staging(C: Any, bm: int, epilogue: str) -> Any:  # noqa: N803
    """The TMA stores' two staging buffers of `store_expert_tile` (None for the direct store)."""
    if epilogue != "tma":
        return None
    return T.alloc_shared((STAGING_BUFFERS, bm, store_chunk_columns(C.dtype)), C.dtype, swizzle=128)


#: The grouped product's schedules, one per rung of the lineage (docs/moe.md, "The lineage"): ``"expert_grid"`` a block
#: per (expert, row tile, column tile) with the row tiles bounded by cdiv(R, BM), as a loop of every expert's dense GEMM
#: launched at the largest size would be (a block past its expert's rows exits); ``"units"`` a block per unit of all
#: experts' row tiles numbered together, its expert searched in the device-side cumulative tile counts; ``"persistent"``
#: BLOCKS blocks walking those units.
SCHEDULES = ("expert_grid", "units", "persistent")


@T.macro
def expert_grid_unit(bn: Any, bm: Any, g: Any, offs: Any, rows: int, body: Any) -> None:
    """`body(expert, first row, row end, column tile)` for block (`bn`, `bm`, `g`) of the per-expert grid: row tile
    `bm` of expert `g` (tiles of `rows` rows), column tile `bn`, when the expert has that many rows."""
    begin = T.where(g > 0, offs[T.maximum(g - 1, 0)], 0)  # the expert's first row
    with T.let(begin + bm * rows, "row0") as row0, T.let(offs[g], "expert_end") as end, T.if_(row0 < end):
        body(g, row0, end, bn)


def schedule_grid(  # noqa: PLR0913 - the grouped bodies' parts
    schedule: str, p: dict[str, Any], offs: Any, tiles: Any, rows: Any, experts: Any, columns: Any, output: Any
):
    """What both grouped bodies set up for `schedule` (`SCHEDULES`): the ORDER check, the routing assumptions (and
    E <= 2**SEARCH where an expert is searched), and (tiles_n, most_units, grid): the column tiles of `columns`, the
    units' bound ``(cdiv(rows, BM) + E) * tiles_n`` (at least the units there are: sum over g of cdiv(rows_g, BM) <=
    cdiv(rows, BM) + E) and the grid — BLOCKS blocks, one block per unit of that bound, or (column tile, row tile,
    expert) with the row tiles bounded by cdiv(rows, BM). The per-expert grid's blocks run column tiles fastest,
    each expert's tiles in the row-major order the units take (and the persistent grid without its grouped order),
    so that the lineage's steps differ by their mechanism, not by the order of the tiles (on an H200 at Mixtral's
    shape the row-tiles-fastest grid ran 1.19x faster than the row-major units: B's column panels reused in L2;
    benchmarks/results/2026-12-03-moe-lineage/, call 1)."""
    order = p.get("ORDER", "grouped")
    if order not in ("grouped", "row_major"):
        raise DSLError("DSL_BAD_PARAM", f"ORDER is 'grouped' or 'row_major' (each expert's units), got {order!r}")
    if schedule != "expert_grid":
        T.assume(f"E <= {1 << p['SEARCH']}")
    assume_routing(offs, tiles, rows, experts, p["BM"], output)
    tiles_n = T.cdiv(columns, p["BN"])
    most_units = (T.cdiv(rows, p["BM"]) + experts) * tiles_n
    if p.get("SPLITS", 1) > 1:  # split-K: (unit, split) pairs
        most_units = most_units * p["SPLITS"]
    if schedule == "persistent":
        grid = (p["BLOCKS"],)
    elif schedule == "units":
        grid = (most_units,)
    else:  # column tiles fastest: each expert's tiles row by row
        grid = (tiles_n, T.cdiv(rows, p["BM"]), experts)
    return tiles_n, most_units, grid


def each_scheduled_unit(
    schedule: str,
    coords: Any,
    p: dict[str, Any],
    offs: Any,
    tiles: Any,
    experts: Any,
    tiles_n: Any,
    most_units: Any,
    body: Any,
) -> None:
    """`body(expert, first row, row end, column tile, it)` for every unit the block at `coords` computes under
    `schedule`: its one tile of the per-expert grid, its one unit, or (persistent) unit ``bx + it * BLOCKS`` for
    each iteration `it`; the pipeline's stage and phase run on across `it`. With ``p["SPLITS"]`` > 1 (persistent
    only: split-K) the walk is over (unit, split) pairs, ``bx + it * BLOCKS`` being pair ``unit * SPLITS + split``,
    and `body` takes the split last: ``body(expert, first row, row end, column tile, it, split)``."""
    if schedule == "expert_grid":
        expert_grid_unit(coords[0], coords[1], coords[2], offs, p["BM"], lambda g, r, e, n: body(g, r, e, n, 0))
        return
    blocks = p["BLOCKS"] if schedule == "persistent" else 0  # one unit a block: unit bx

    order = p.get("ORDER", "grouped")

    splits = p.get("SPLITS", 1)

    def one(it: Any) -> None:
        if splits > 1:  # the split of the pair is its remainder: one unit's splits on consecutive blocks
            place = lambda g, r, e, n: body(g, r, e, n, it, (coords[0] + it * blocks) % splits)  # noqa: E731
        else:
            place = lambda g, r, e, n: body(g, r, e, n, it)  # noqa: E731
        each_unit(it, coords[0], blocks, offs, tiles, experts, tiles_n, p["SEARCH"], p["GROUP"], p["BM"], place, order,
                  splits)  # fmt: skip

    if schedule != "persistent":
        one(0)
        return
    for it in T.serial(T.cdiv(most_units, blocks)):
        one(it)


def grouped_product(A: Any, B: Any, offs: Any, tiles: Any, C: Any, p: dict[str, Any], schedule: str) -> None:  # noqa: N803
    """The grouped product's body (the module docstring) on `schedule` (`SCHEDULES`): a TMA producer warpgroup and
    CONSUMERS wgmma consumer warpgroups per block, STAGES stages in flight; `p` the kernel's parameters."""
    BM, BN, BK, STAGES, CONSUMERS = p["BM"], p["BN"], p["BK"], p["STAGES"], p["CONSUMERS"]  # noqa: N806
    SEARCH, EPILOGUE, SPLITS = p["SEARCH"], p["EPILOGUE"], p.get("SPLITS", 1)  # noqa: N806
    R, K = A.shape  # noqa: N806 - the kernel's shape symbols
    E, _, N = B.shape  # noqa: N806
    if CONSUMERS not in (1, 2) or SEARCH < 1 or EPILOGUE not in ("direct", "tma"):
        raise DSLError(
            "DSL_BAD_PARAM",
            f"CONSUMERS is 1 or 2, SEARCH >= 1, EPILOGUE 'direct' or 'tma'; got {CONSUMERS}, {SEARCH}, {EPILOGUE!r}",
        )
    if not isinstance(SPLITS, int) or SPLITS < 1 or (SPLITS > 1 and (schedule != "persistent" or EPILOGUE != "direct")):
        raise DSLError(
            "DSL_BAD_PARAM",
            f"SPLITS = {SPLITS!r}: 1, or split-K's slices on the persistent schedule with the direct store (got "
            f"{schedule!r}, EPILOGUE {EPILOGUE!r})",
        )
    T.assume(operand_assumption("K", "N"))
    if SPLITS > 1:  # each split an equal share of the K-blocks
        T.assume(f"(K + {BK - 1}) // {BK} % {SPLITS} == 0")
    tiles_n, most_units, grid = schedule_grid(schedule, p, offs, tiles, R, E, N, C)
    with T.grid(*grid, threads=WARPGROUP_SIZE * (1 + CONSUMERS)) as coords:
        sA = alloc_operand_stages("K", STAGES, BM, BK, A.dtype)  # (stages, BM, BK), K-major  # noqa: N806
        sB = alloc_operand_stages("N", STAGES, BN, BK, B.dtype)  # (stages, BK, BN) in 64-column panels  # noqa: N806
        # the TMA stores' two staging buffers (EPILOGUE "tma")
        sC = store_staging(C, BM, EPILOGUE)  # noqa: N806
        full = T.alloc_mbarrier(STAGES, arrive_count=1)
        empty = T.alloc_mbarrier(STAGES, arrive_count=1)
        k_tiles = T.cdiv(K, BK)
        k_split = k_tiles // SPLITS if SPLITS > 1 else k_tiles  # the K-blocks of one unit's split
        stage_bytes = (BM + BN) * BK * 2
        consumers = tuple(range(1, 1 + CONSUMERS))

        def produce(g: Any, row0: Any, end: Any, bn: Any, it: Any, split: Any = 0) -> None:
            for k, s in T.pipeline(k_split, stages=STAGES, start=it * k_split):
                kb = k + split * k_split  # the K-block this iteration loads
                T.mbarrier_wait(empty[s], phase=((k + it * k_split) // STAGES + 1) % 2)
                T.mbarrier_arrive(full[s], expect_bytes=stage_bytes)
                T.copy(A.window((row0, kb * BK), (BM, BK)), sA[s], atom="tma", mbarrier=full[s])
                load_operand(B, "N", sB[s], bn, kb, BN, BK, full[s], g)

        def consume(acc: Any, g: Any, row0: Any, end: Any, bn: Any, it: Any, split: Any = 0) -> None:
            T.fill(acc, 0.0)
            for k, s in T.pipeline(k_split, stages=STAGES, start=it * k_split):
                kb = k + split * k_split
                T.mbarrier_wait(full[s], phase=((k + it * k_split) // STAGES) % 2)
                # invariant: the stages hold rows row0.. of A and expert g's B, at K-block kb
                T.assert_tag(lambda x: (x[1] // BK == kb) & (x[0] - row0 >= 0) & (x[0] - row0 < BM), sA[s])
                T.assert_tag(lambda x: (x[0] == g) & (x[1] // BK == kb) & (x[2] // BN == bn), sB[s])
                T.gemm(operand("K", sA[s], False), operand("N", sB[s], True), acc)
                T.mbarrier_arrive(empty[s])
            if SPLITS > 1:  # split `split`'s partial product: its slice of the f32 workspace, the expert's rows
                T.copy(acc, C.window((split, row0, bn * BN), (None, BM, BN), bound=(None, end, None)))
            else:
                store_expert_tile(acc, C, row0, end, bn, BM, BN, EPILOGUE, sC)

        def each(body: Any) -> None:
            each_scheduled_unit(schedule, coords, p, offs, tiles, E, tiles_n, most_units, body)

        with T.role("producer", warpgroups=(0,), registers=p["PRODUCER_REGS"]):
            each(produce)
        with T.role("consumer", warpgroups=consumers, registers=p["CONSUMER_REGS"]):
            acc = T.alloc_fragment((BM, BN), T.f32, mma=T.wgmma_atom(BN, A.dtype))
            each(lambda *unit: consume(acc, *unit))


@argus.kernel(policies={"tile_shape": ("BM", "BN", "BK"), "stages": "STAGES"})
def grouped_gemm_expert_grid(
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
    CONSUMERS: int = 2,
    EPILOGUE: str = "direct",
):
    """The grouped product (module docstring) as a loop of every expert's dense GEMM would launch it, in one grid:
    block (n, m, g) computes row tile m, column tile n of expert g (the warp-specialized GEMM's tile: a TMA producer
    warpgroup, CONSUMERS wgmma consumer warpgroups, STAGES stages), m up to cdiv(R, BM), the most row tiles one
    expert can have; a block past its expert's rows exits. The lineage's first rung (docs/moe.md, "The lineage"):
    ``tiles`` is not read."""
    p = {"BM": BM, "BN": BN, "BK": BK, "STAGES": STAGES, "CONSUMERS": CONSUMERS, "SEARCH": 1, "EPILOGUE": EPILOGUE}
    p.update({"ORDER": "row_major", "PRODUCER_REGS": PRODUCER_REGS, "CONSUMER_REGS": CONSUMER_REGS})
    grouped_product(A, B, offs, tiles, C, p, "expert_grid")


@argus.kernel(policies={"tile_shape": ("BM", "BN", "BK"), "stages": "STAGES"})
def grouped_gemm_units(
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
    CONSUMERS: int = 2,
    SEARCH: int = 8,
    EPILOGUE: str = "direct",
):
    """`grouped_gemm_expert_grid` with the units of all experts' row tiles numbered together: block u computes unit
    u (row tile ``u // tiles_n`` of all experts', column tile ``u % tiles_n``), its expert found by the binary search
    of ``tiles`` (SEARCH steps, E <= 2**SEARCH); the grid is the units' bound, ``(cdiv(R, BM) + E) * tiles_n``, so
    that at most E * tiles_n blocks find no unit, where the per-expert grid had (E - 1) * cdiv(R, BM) * tiles_n."""
    p = {"BM": BM, "BN": BN, "BK": BK, "STAGES": STAGES, "CONSUMERS": CONSUMERS, "SEARCH": SEARCH, "GROUP": 1}
    p.update(
        {"EPILOGUE": EPILOGUE, "ORDER": "row_major", "PRODUCER_REGS": PRODUCER_REGS, "CONSUMER_REGS": CONSUMER_REGS}
    )
    grouped_product(A, B, offs, tiles, C, p, "units")


@argus.kernel(
    policies={"tile_shape": ("BM", "BN", "BK"), "stages": "STAGES", "persistent": True, "tile_order": "ORDER"}
)
def grouped_gemm_persistent(
    A: T.Tensor[("R", "K"), "IN"],
    B: T.Tensor[("E", "K", "N"), "IN"],
    offs: T.Tensor[("E",), T.i32],
    tiles: T.Tensor[("E",), T.i32],
    C: T.Tensor[product_shape, "OUT"],
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
    EPILOGUE: str = "direct",
    ORDER: str = "grouped",
    SPLITS: int = 1,
):
    """C = the grouped product (module docstring): rows ``offs[g-1] .. offs[g]`` of A (R, K) times expert g's B[g]
    (K, N, row-major as ``torch._grouped_mm`` takes it), into the same rows of C (R, N), for E <= 2**SEARCH experts.
    BLOCKS persistent blocks, each a TMA producer warpgroup and CONSUMERS wgmma consumer warpgroups, walk the units
    (every expert's output tiles; ORDER "grouped": each expert's GROUP row tiles at a time, "row_major": row tile by
    row tile) with STAGES stages in flight. Assumes K and N multiples of 8 (TMA row strides of 16 bytes), ``offs``
    nondecreasing with ``offs[E-1] <= R`` and ``tiles = tile_counts(offs, BM)``; rows of A past ``offs[E-1]`` are not
    computed. EPILOGUE ``"direct"`` stores every tile from registers through the window bounded at the expert's end;
    ``"tma"`` stores a tile whose BM rows all belong to its expert through shared-memory staging and TMA stores (the
    dense GEMM's rung 9: the stores drain while the consumers start the next tile), and the expert's last, partial
    tile as ``"direct"`` does (a TMA box is masked at the tensor's end only, not at an expert's).

    SPLITS > 1 splits K (decoding: a few rows an expert, too few tiles for the SMs): the blocks walk (unit, split)
    pairs, split s multiplying K-blocks ``s * KS ...`` (KS = the K-blocks / SPLITS, which must divide them), and C
    is the f32 workspace (SPLITS, R, N), slice s the split's partial product of the expert's rows (direct stores);
    the slices are summed by the reader (`argus.kernels.moe_combine.moe_combine` with SPLITS, or a sum)."""
    if SPLITS > 1 and OUT != "f32":
        raise DSLError("DSL_BAD_PARAM", f"split-K (SPLITS = {SPLITS}) stores f32 partial products: OUT='f32'")
    p = {"BM": BM, "BN": BN, "BK": BK, "STAGES": STAGES, "CONSUMERS": CONSUMERS, "SEARCH": SEARCH, "GROUP": GROUP}
    p.update({"EPILOGUE": EPILOGUE, "ORDER": ORDER, "PRODUCER_REGS": PRODUCER_REGS, "CONSUMER_REGS": CONSUMER_REGS})
    p.update({"BLOCKS": BLOCKS, "SPLITS": SPLITS})
    grouped_product(A, B, offs, tiles, C, p, "persistent")


#: The gate activations of the gated up-projection (`grouped_gemm_swiglu`'s ACT): SwiGLU's SiLU, GeGLU's exact GELU and
#: its tanh approximation.
GLU_ACTIVATIONS = ("silu", "gelu", "gelu_tanh")


def glu_gate(g: Any, act: str) -> Any:
    """The gate's activation of the f32 accumulator `g`: ``g * sigmoid(g)`` (silu), ``0.5 g (1 + erf(g / sqrt 2))``
    (gelu) or ``0.5 g (1 + tanh(sqrt(2 / pi) (g + 0.044715 g^3)))`` (gelu_tanh)."""
    if act == "silu":
        return g * T.sigmoid(g)
    if act == "gelu":
        return 0.5 * g * (1.0 + T.erf(g * 0.7071067811865476))
    return 0.5 * g * (1.0 + T.tanh(0.7978845608028654 * (g + 0.044715 * g * g * g)))


def gated_up_projection(
    rows: Any,
    load_rows: Any,
    assert_rows: Any,
    B: Any,  # noqa: N803 - the kernels' parameter names
    offs: Any,
    tiles: Any,
    scale: Any,
    C: Any,  # noqa: N803
    p: dict[str, Any],
    schedule: str = "persistent",
) -> None:
    """The body of the gated up-projections (`grouped_gemm_swiglu`, `grouped_gemm_swiglu_gathered` and the SwiGLU
    lineage's lower rungs): the schedule (`SCHEDULES`), the gate and up boxes, the two accumulators and the epilogue,
    with A's rows loaded by ``load_rows(stage, k, row0, bar)`` and their invariant asserted by ``assert_rows(stage, k,
    row0)``; `rows` is the routed rows' count R (the units' bound), `p` the kernel's parameters."""
    BM, BN, BK, STAGES = p["BM"], p["BN"], p["BK"], p["STAGES"]  # noqa: N806
    CONSUMERS, SEARCH, ACT, EPILOGUE = p["CONSUMERS"], p["SEARCH"], p["ACT"], p["EPILOGUE"]  # noqa: N806
    E, _, N2 = B.shape  # noqa: N806 - the kernel's shape symbols
    _, N = C.shape  # noqa: N806
    panel = 128 // B.dtype.itemsize
    if CONSUMERS not in (1, 2) or SEARCH < 1 or BN % panel or EPILOGUE not in ("direct", "tma"):
        raise DSLError(
            "DSL_BAD_PARAM",
            f"CONSUMERS is 1 or 2, SEARCH >= 1, BN a multiple of {panel}, EPILOGUE 'direct' or 'tma'; got "
            f"{CONSUMERS}, {SEARCH}, {BN}, {EPILOGUE!r}",
        )
    if ACT not in GLU_ACTIVATIONS:
        raise DSLError("DSL_BAD_PARAM", f"ACT={ACT!r}: the gate's activation is one of {', '.join(GLU_ACTIVATIONS)}")
    T.assume(operand_assumption("K", "N"))
    T.assume("N2 == 2 * N")
    K = B.shape[1]  # noqa: N806
    tiles_n, most_units, grid = schedule_grid(schedule, p, offs, tiles, rows, E, N, C)
    with T.grid(*grid, threads=WARPGROUP_SIZE * (1 + CONSUMERS)) as coords:
        sA = alloc_operand_stages("K", STAGES, BM, BK, B.dtype)  # (stages, BM, BK), K-major  # noqa: N806
        sG = alloc_operand_stages("N", STAGES, BN, BK, B.dtype)  # gate columns, (stages, BK, BN) in panels  # noqa: N806
        sU = alloc_operand_stages("N", STAGES, BN, BK, B.dtype)  # up columns, N further on  # noqa: N806
        # the TMA stores' two staging buffers (EPILOGUE "tma")
        sC = store_staging(C, BM, EPILOGUE)  # noqa: N806
        full = T.alloc_mbarrier(STAGES, arrive_count=1)
        empty = T.alloc_mbarrier(STAGES, arrive_count=1)
        k_tiles = T.cdiv(K, BK)
        stage_bytes = (BM + 2 * BN) * BK * 2
        consumers = tuple(range(1, 1 + CONSUMERS))

        def produce(g: Any, row0: Any, end: Any, bn: Any, it: Any) -> None:
            for k, s in T.pipeline(k_tiles, stages=STAGES, start=it * k_tiles):
                T.mbarrier_wait(empty[s], phase=((k + it * k_tiles) // STAGES + 1) % 2)
                T.mbarrier_arrive(full[s], expect_bytes=stage_bytes)
                load_rows(sA[s], k, row0, full[s])
                load_columns(B, sG[s], g, k, bn * BN, BN, BK, full[s])
                load_columns(B, sU[s], g, k, N + bn * BN, BN, BK, full[s])

        def consume(gate: Any, up: Any, weight: Any, g: Any, row0: Any, end: Any, bn: Any, it: Any) -> None:
            T.fill(gate, 0.0)
            T.fill(up, 0.0)
            for k, s in T.pipeline(k_tiles, stages=STAGES, start=it * k_tiles):
                T.mbarrier_wait(full[s], phase=((k + it * k_tiles) // STAGES) % 2)
                # invariant: the unit's rows of A, expert g's gate and up columns of tile bn, K-block k
                assert_rows(sA[s], k, row0)
                T.assert_tag(lambda x: (x[0] == g) & (x[1] // BK == k) & (x[2] // BN == bn), sG[s])
                T.assert_tag(lambda x: (x[0] == g) & (x[1] // BK == k) & ((x[2] - N) // BN == bn), sU[s])
                T.gemm(operand("K", sA[s], False), operand("N", sG[s], True), gate)
                T.gemm(operand("K", sA[s], False), operand("N", sU[s], True), up)
                T.mbarrier_arrive(empty[s])
            T.copy(scale.window((row0,), (BM,)), weight)  # rows past R read 0 (they are not stored)
            out = glu_gate(gate, ACT) * up * weight[:, None]
            store_expert_tile(out, C, row0, end, bn, BM, BN, EPILOGUE, sC)

        def each(body: Any) -> None:
            each_scheduled_unit(schedule, coords, p, offs, tiles, E, tiles_n, most_units, body)

        with T.role("producer", warpgroups=(0,), registers=p["PRODUCER_REGS"]):
            each(produce)
        with T.role("consumer", warpgroups=consumers, registers=p["CONSUMER_REGS"]):
            gate = T.alloc_fragment((BM, BN), T.f32, mma=T.wgmma_atom(BN, B.dtype))
            up = T.alloc_fragment((BM, BN), T.f32, mma=T.wgmma_atom(BN, B.dtype))
            weight = T.alloc_reduced(gate, axis=1)  # (BM,): each row's scale, held by the threads of its row
            each(lambda g, row0, end, bn, it: consume(gate, up, weight, g, row0, end, bn, it))


def swiglu_rows(A: Any, B: Any, offs: Any, tiles: Any, scale: Any, C: Any, p: dict[str, Any], schedule: str) -> None:  # noqa: N803
    """`gated_up_projection` on rows of A itself (the routed rows already gathered): each stage's A box is the unit's
    (BM, BK) window, asserted to hold the unit's rows at K-block k."""
    R, _ = A.shape  # noqa: N806 - the kernel's shape symbols
    BM, BK = p["BM"], p["BK"]  # noqa: N806

    def load_rows(stage: Any, k: Any, row0: Any, bar: Any) -> None:
        T.copy(A.window((row0, k * BK), (BM, BK)), stage, atom="tma", mbarrier=bar)

    def assert_rows(stage: Any, k: Any, row0: Any) -> None:
        T.assert_tag(lambda x: (x[1] // BK == k) & (x[0] - row0 >= 0) & (x[0] - row0 < BM), stage)

    gated_up_projection(R, load_rows, assert_rows, B, offs, tiles, scale, C, p, schedule)


@argus.kernel(policies={"tile_shape": ("BM", "BN", "BK"), "stages": "STAGES"})
def grouped_gemm_swiglu_expert_grid(
    A: T.Tensor[("R", "K"), "IN"],
    B: T.Tensor[("E", "K", "N2"), "IN"],
    offs: T.Tensor[("E",), T.i32],
    tiles: T.Tensor[("E",), T.i32],
    scale: T.Tensor[("R",), T.f32],
    C: T.Tensor[("R", "N"), "OUT"],
    BM: int = 128,
    BN: int = 128,
    BK: int = 64,
    STAGES: int = 4,
    OUT: str = "bf16",
    IN: str = "bf16",
    PRODUCER_REGS: int = 40,
    CONSUMER_REGS: int = 232,
    CONSUMERS: int = 2,
    ACT: str = "silu",
    EPILOGUE: str = "direct",
):
    """`grouped_gemm_swiglu` (below) on `grouped_gemm_expert_grid`'s schedule: block (n, m, g) computes row tile m,
    column tile n of expert g, a block past its expert's rows exits; the SwiGLU lineage's first rung (docs/moe.md,
    "The lineage"). ``tiles`` is not read."""
    p = {"BM": BM, "BN": BN, "BK": BK, "STAGES": STAGES, "CONSUMERS": CONSUMERS, "SEARCH": 1, "GROUP": 1, "ACT": ACT}
    p |= {"EPILOGUE": EPILOGUE, "ORDER": "row_major", "PRODUCER_REGS": PRODUCER_REGS, "CONSUMER_REGS": CONSUMER_REGS}
    swiglu_rows(A, B, offs, tiles, scale, C, p, "expert_grid")


@argus.kernel(policies={"tile_shape": ("BM", "BN", "BK"), "stages": "STAGES"})
def grouped_gemm_swiglu_units(
    A: T.Tensor[("R", "K"), "IN"],
    B: T.Tensor[("E", "K", "N2"), "IN"],
    offs: T.Tensor[("E",), T.i32],
    tiles: T.Tensor[("E",), T.i32],
    scale: T.Tensor[("R",), T.f32],
    C: T.Tensor[("R", "N"), "OUT"],
    BM: int = 128,
    BN: int = 128,
    BK: int = 64,
    STAGES: int = 4,
    OUT: str = "bf16",
    IN: str = "bf16",
    PRODUCER_REGS: int = 40,
    CONSUMER_REGS: int = 232,
    CONSUMERS: int = 2,
    SEARCH: int = 8,
    ACT: str = "silu",
    EPILOGUE: str = "direct",
):
    """`grouped_gemm_swiglu` (below) on `grouped_gemm_units`' schedule: one block per unit of all experts' row tiles,
    its expert searched in ``tiles``."""
    p = {"BM": BM, "BN": BN, "BK": BK, "STAGES": STAGES, "CONSUMERS": CONSUMERS, "SEARCH": SEARCH, "GROUP": 1}
    p |= {"ACT": ACT, "EPILOGUE": EPILOGUE, "ORDER": "row_major", "PRODUCER_REGS": PRODUCER_REGS}
    p["CONSUMER_REGS"] = CONSUMER_REGS
    swiglu_rows(A, B, offs, tiles, scale, C, p, "units")


@argus.kernel(
    policies={"tile_shape": ("BM", "BN", "BK"), "stages": "STAGES", "persistent": True, "tile_order": "ORDER"}
)
def grouped_gemm_swiglu(
    A: T.Tensor[("R", "K"), "IN"],
    B: T.Tensor[("E", "K", "N2"), "IN"],
    offs: T.Tensor[("E",), T.i32],
    tiles: T.Tensor[("E",), T.i32],
    scale: T.Tensor[("R",), T.f32],
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
    ACT: str = "silu",
    EPILOGUE: str = "direct",
    ORDER: str = "grouped",
):
    """The MoE up-projection with SwiGLU in its epilogue: ``C[r] = scale[r] * silu(A_g[r] @ B[g][:, :N]) * (A_g[r] @
    B[g][:, N:])`` for the rows r of each expert g (ACT "silu"; "gelu": GeGLU, ``gelu(g) * u`` with the exact, erf-based
    GELU; "gelu_tanh": its tanh approximation, as ``torch.nn.functional.gelu(approximate="tanh")``), B (E, K, 2N)
    holding each expert's gate columns then its up columns (the fused ``gate_up`` weight), C (R, N); `scale` is a
    per-row factor (a MoE layer's router weight of each routed row: the down-projection is linear, so weighting its
    input weights its output). Scheduled as `grouped_gemm_persistent` (the same units over C's column tiles); each stage
    holds A's (BM, BK) box and the gate and up (BK, BN) boxes at the same columns, two accumulators per consumer take
    one wgmma each per K-block, and the epilogue stores ``scale * act(g) * u`` from the f32 accumulators (the
    (R, 2N) intermediate is never written). Assumes K and N multiples of 8 (TMA row strides of 16 bytes) and what
    `grouped_gemm_persistent` assumes of ``offs`` and ``tiles``; N need not be a multiple of BN (the up boxes start at
    column N + bn * BN: a TMA box starts at any element). EPILOGUE "tma" stores a tile whose rows all belong to its
    expert through TMA stores, as `grouped_gemm_persistent`'s does."""
    p = {"BM": BM, "BN": BN, "BK": BK, "STAGES": STAGES, "BLOCKS": BLOCKS, "CONSUMERS": CONSUMERS, "SEARCH": SEARCH}
    p |= {"GROUP": GROUP, "ACT": ACT, "PRODUCER_REGS": PRODUCER_REGS, "CONSUMER_REGS": CONSUMER_REGS}
    p |= {"EPILOGUE": EPILOGUE, "ORDER": ORDER}
    swiglu_rows(A, B, offs, tiles, scale, C, p, "persistent")


@argus.kernel(policies={"tile_shape": ("BM", "BN", "BK"), "stages": "STAGES"})
def grouped_gemm_swiglu_gathered(
    X: T.Tensor[("TOKENS", "K"), "IN"],
    TOK: T.Tensor[("R",), T.i32],
    B: T.Tensor[("E", "K", "N2"), "IN"],
    offs: T.Tensor[("E",), T.i32],
    tiles: T.Tensor[("E",), T.i32],
    scale: T.Tensor[("R",), T.f32],
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
    ACT: str = "silu",
    EPILOGUE: str = "direct",
):
    """`grouped_gemm_swiglu` with the MoE layer's token gather fused into A's load: routed row r is token ``TOK[r]``
    of X (TOKENS, K), so ``C[r] = scale[r] * act(X[TOK[r]] @ B[g][:, :N]) * (X[TOK[r]] @ B[g][:, N:])`` for the rows r
    of each expert g, and the (R, K) gathered copy of X is never written. Each stage's A box is a gathered window
    (`argus.lang.tiles.Tensor.gather`): one TMA box of one row per routed row, issued by the producer's first warp
    (its 32 lanes four rows each at 128-row tiles), all completing on the stage's mbarrier with the same bytes as
    one (BM, BK) box. Rows past R read zeros (computed, not stored). The invariant asserted of A's stage: its row m
    holds token ``TOK[row0 + m]`` at K-block k, proved for every content of TOK (declared within ``0 .. TOKENS -
    1``) and of the routing metadata."""
    R = TOK.shape[0]  # noqa: N806 - the kernel's shape symbols
    T.assume_values(TOK, lo=0, hi="TOKENS - 1")  # rows of X

    def load_rows(stage: Any, k: Any, row0: Any, bar: Any) -> None:
        T.copy(X.gather(TOK, row0, (BM, BK), (k * BK,)), stage, atom="tma", mbarrier=bar)

    def assert_rows(stage: Any, k: Any, row0: Any) -> None:
        # rows at or past R are not routed rows (zeros, not stored)
        def routed_row(x: Any) -> Any:
            m = row0 + x.coord[0]
            return (m >= R) | (x[0] == TOK[T.minimum(m, R - 1)])

        T.assert_tag(lambda x: (x[1] // BK == k) & routed_row(x), stage)

    p = {"BM": BM, "BN": BN, "BK": BK, "STAGES": STAGES, "BLOCKS": BLOCKS, "CONSUMERS": CONSUMERS, "SEARCH": SEARCH}
    p |= {"GROUP": GROUP, "ACT": ACT, "PRODUCER_REGS": PRODUCER_REGS, "CONSUMER_REGS": CONSUMER_REGS}
    p |= {"EPILOGUE": EPILOGUE, "ORDER": "grouped"}
    gated_up_projection(R, load_rows, assert_rows, B, offs, tiles, scale, C, p)


@argus.kernel(policies={"tile_shape": ("BM", "BN", "BK"), "stages": "STAGES"})
def grouped_gemm_scaled(
    A: T.Tensor[("R", "K"), "IN"],
    B: T.Tensor[("E", "N", "K"), "IN"],
    offs: T.Tensor[("E",), T.i32],
    tiles: T.Tensor[("E",), T.i32],
    SA: T.Tensor[("R",), T.f32],
    SB: T.Tensor[("E", "N"), T.f32],
    C: T.Tensor[("R", "N"), "OUT"],
    BM: int = 128,
    BN: int = 256,
    BK: int = 128,
    STAGES: int = 4,
    OUT: str = "bf16",
    IN: str = "e4m3",
    PRODUCER_REGS: int = 40,
    CONSUMER_REGS: int = 232,
    BLOCKS: int = SMS,
    CONSUMERS: int = 2,
    SEARCH: int = 8,
    GROUP: int = 8,
):
    """The FP8 grouped product with row-wise scales, as ``torch._scaled_grouped_mm`` computes it: ``C[r] = (A_g[r] @
    B[g]^T) * SA[r] * SB[g]`` for the rows r of each expert g, A (R, K) and B (E, N, K) K-major FP8 (wgmma reads 8-bit
    operands K-major only: B is each expert's weight as ``nn.Linear`` stores it), SA (R,) one f32 scale per row of A,
    SB (E, N) one per output column of each expert, C (R, N). Scheduled as `grouped_gemm_persistent` (the same
    units); each stage holds A's (BM, BK) box at the expert's rows and expert g's (BN, BK) box of B (a 3-d box at
    the expert); the scales multiply the f32 accumulator before the bounded store. Assumes K a multiple of 16 and N
    of 8 (TMA row strides of 16 bytes, C's rows in whole vectors) and what `grouped_gemm_persistent` assumes of
    ``offs`` and ``tiles``."""
    R, K = A.shape  # noqa: N806 - the kernel's shape symbols
    E, N, _ = B.shape  # noqa: N806
    if CONSUMERS not in (1, 2) or SEARCH < 1:
        raise DSLError("DSL_BAD_PARAM", f"CONSUMERS is 1 or 2 and SEARCH >= 1, got {CONSUMERS}, {SEARCH}")
    T.assume(operand_assumption("K", "K", A.dtype.itemsize))
    T.assume(f"N % {16 // C.dtype.itemsize} == 0")
    T.assume(f"E <= {1 << SEARCH}")
    assume_routing(offs, tiles, R, E, BM, C)
    with T.grid(BLOCKS, threads=WARPGROUP_SIZE * (1 + CONSUMERS)) as (bx,):
        sA = alloc_operand_stages("K", STAGES, BM, BK, A.dtype)  # (stages, BM, BK)
        sB = alloc_operand_stages("K", STAGES, BN, BK, B.dtype)  # (stages, BN, BK)
        full = T.alloc_mbarrier(STAGES, arrive_count=1)
        empty = T.alloc_mbarrier(STAGES, arrive_count=1)
        tiles_n = T.cdiv(N, BN)
        k_tiles = T.cdiv(K, BK)
        most_units = (T.cdiv(R, BM) + E) * tiles_n
        stage_bytes = (BM + BN) * BK * A.dtype.itemsize
        consumers = tuple(range(1, 1 + CONSUMERS))

        def produce(g: Any, row0: Any, end: Any, bn: Any, it: Any) -> None:
            for k, s in T.pipeline(k_tiles, stages=STAGES, start=it * k_tiles):
                T.mbarrier_wait(empty[s], phase=((k + it * k_tiles) // STAGES + 1) % 2)
                T.mbarrier_arrive(full[s], expect_bytes=stage_bytes)
                T.copy(A.window((row0, k * BK), (BM, BK)), sA[s], atom="tma", mbarrier=full[s])
                load_operand(B, "K", sB[s], bn, k, BN, BK, full[s], g)

        def consume(acc: Any, row_scale: Any, column_scale: Any, g: Any, row0: Any, end: Any, bn: Any, it: Any) -> None:
            T.fill(acc, 0.0)
            for k, s in T.pipeline(k_tiles, stages=STAGES, start=it * k_tiles):
                T.mbarrier_wait(full[s], phase=((k + it * k_tiles) // STAGES) % 2)
                # invariant: the stages hold rows row0.. of A and expert g's rows (output columns) of tile bn of B,
                # at K-block k
                T.assert_tag(lambda x: (x[1] // BK == k) & (x[0] - row0 >= 0) & (x[0] - row0 < BM), sA[s])
                T.assert_tag(lambda x: (x[0] == g) & (x[2] // BK == k) & (x[1] // BN == bn), sB[s])
                T.gemm(operand("K", sA[s], False), operand("K", sB[s], True), acc)
                T.mbarrier_arrive(empty[s])
            T.copy(SA.window((row0,), (BM,)), row_scale)  # rows past R read 0 (they are not stored)
            # invariant: row i of the tile is scaled by SA[row0 + i]
            T.assert_tag(lambda x: x[0] == row0 + x.coord[0], row_scale)
            T.copy(SB.tile((g, bn), (None, BN)), column_scale)
            # invariant: column j of the tile is scaled by expert g's SB[g, bn * BN + j]
            T.assert_tag(lambda x: (x[0] == g) & (x[1] == bn * BN + x.coord[0]), column_scale)
            out = acc * row_scale[:, None] * column_scale[None, :]
            T.copy(out, C.window((row0, bn * BN), (BM, BN), bound=(end, None)))

        def units(it: Any, body: Any) -> None:
            each_unit(it, bx, BLOCKS, offs, tiles, E, tiles_n, SEARCH, GROUP, BM, body)

        with T.role("producer", warpgroups=(0,), registers=PRODUCER_REGS):
            for it in T.serial(T.cdiv(most_units, BLOCKS)):
                units(it, lambda g, row0, end, bn, it=it: produce(g, row0, end, bn, it))
        with T.role("consumer", warpgroups=consumers, registers=CONSUMER_REGS):
            acc = T.alloc_fragment((BM, BN), T.f32, mma=T.wgmma_atom(BN, A.dtype))
            row_scale = T.alloc_reduced(acc, axis=1)
            column_scale = T.alloc_reduced(acc, axis=0)
            for it in T.serial(T.cdiv(most_units, BLOCKS)):
                units(
                    it,
                    lambda g, row0, end, bn, it=it: consume(acc, row_scale, column_scale, g, row0, end, bn, it),
                )
