"""The tile order of the expert Hopper GEMM `gemm_warp_specialized` (``ORDER``, ``GROUP``): the default ``"grid"`` is
the 2-D grid it always had; ``"grouped"`` (and ``"row_major"`` / ``"column_major"``) launch a 1-D grid whose block
index `T.tile_order` maps to an output tile. Every order covers each tile exactly once (a wrong mapping is caught),
is correct on the interpreter with partial tiles and a partial last group, verifies with its tag assertions
proved (a producer and consumer that disagree on the order are caught), and compiles for sm_90a to HGMMA and
UTMALDG with no spills."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import z3

import argus
import argus.lang as T
from argus.backend.cuda.codegen import compile_kernel, generate
from argus.interp import run_kernel
from argus.ir.expr import Expr, Var, VarKind, evaluate
from argus.ir.nodes import Copy, Kernel, walk
from argus.kernels.gemm import gemm_warp_specialized
from argus.lang.errors import DSLError
from argus.verify import Verdict, smt, verify

#: The expert configuration (`argus.kernels.registry.GEMM_HOPPER_PARAMS`'s tiles, stages and output) in grouped order.
EXPERT_GROUPED = {"BN": 256, "STAGES": 4, "OUT": "bf16", "ORDER": "grouped"}


def _grouped_reference(t: int, tm: int, tn: int, group: int) -> tuple[int, int]:
    """The grouped order written out on its own (Triton's matmul tutorial): `group` rows of tiles at a time, walked
    column by column; the last group has the rows that are left."""
    first = (t // (group * tn)) * group
    rows = min(tm - first, group)
    within = t % (group * tn)
    return first + within % rows, within // rows


def _misses_and_repeats(mapping, tm: int, tn: int) -> tuple[set, set]:
    """The tiles of a ``tm x tn`` grid that block indices ``0 .. tm*tn-1`` do not reach, and those they reach twice
    (or out of range)."""
    seen: dict[tuple[int, int], int] = {}
    for t in range(tm * tn):
        tile = mapping(t)
        seen[tile] = seen.get(tile, 0) + 1
    every = set(itertools.product(range(tm), range(tn)))
    repeats = {tile for tile, count in seen.items() if count > 1 or tile not in every}
    return every - set(seen), repeats


def _dsl_mapping(order: str, tm: int, tn: int, group: int):
    t = Var("t", VarKind.BLOCK)
    m, n = T.tile_order(t, (tm, tn), order, group)
    return lambda i: (int(evaluate(m, {t: i})), int(evaluate(n, {t: i})))


SHAPES = [(3, 5, 2), (5, 7, 2), (9, 4, 8), (9, 4, 3), (1, 1, 8), (7, 1, 4), (1, 6, 8), (64, 32, 8), (65, 3, 8)]


@pytest.mark.parametrize("order", ["row_major", "column_major", "grouped"])
@pytest.mark.parametrize(("tm", "tn", "group"), SHAPES)
def test_every_tile_exactly_once(order: str, tm: int, tn: int, group: int) -> None:
    assert _misses_and_repeats(_dsl_mapping(order, tm, tn, group), tm, tn) == (set(), set())


@pytest.mark.parametrize(("tm", "tn", "group"), SHAPES)
def test_grouped_is_the_reference_order(tm: int, tn: int, group: int) -> None:
    mapping = _dsl_mapping("grouped", tm, tn, group)
    assert [mapping(t) for t in range(tm * tn)] == [_grouped_reference(t, tm, tn, group) for t in range(tm * tn)]


def test_a_wrong_mapping_is_caught() -> None:
    """A grouped order that forgets the partial last group (`group` rows assumed) misses tiles and leaves the grid;
    one that swaps m and n on a non-square grid repeats tiles: the check above catches both."""

    def full_groups_only(t: int, tm: int = 5, tn: int = 3, group: int = 2) -> tuple[int, int]:
        first = (t // (group * tn)) * group
        within = t % (group * tn)
        return first + within % group, within // group

    misses, repeats = _misses_and_repeats(full_groups_only, 5, 3)
    assert misses == {(4, 2)} and repeats == {(5, 0)}  # the last group has one row, not two
    misses, repeats = _misses_and_repeats(lambda t: (t % 3, t // 3), 3, 5)  # fine
    assert (misses, repeats) == (set(), set())
    misses, repeats = _misses_and_repeats(lambda t: (t % 5, t // 5), 3, 5)  # m and n swapped
    assert misses and repeats


# --- the kernel's launch -----------------------------------------------------------------------------------------


def _load_origins(kernel: Kernel) -> tuple[Expr, Expr]:
    """The first row of A's and of B's tile in the producer's TMA copies (element offsets)."""
    origin = {s.src.buffer.name: s.src.origin[0] for s in walk(kernel.body) if isinstance(s, Copy) and s.atom == "tma"}
    return origin["A"], origin["B"]


def test_the_default_is_the_two_dimensional_grid() -> None:
    kernel = gemm_warp_specialized.trace()
    assert len(kernel.grid) == len(kernel.block_vars) == 2
    a_row, b_row = _load_origins(kernel)
    bx, by = kernel.block_vars
    env = {v: 1000 for v in kernel.shape_vars}
    assert [int(evaluate(a_row, {**env, bx: 3, by: 5})), int(evaluate(b_row, {**env, bx: 3, by: 5}))] == [384, 640]
    source = generate(kernel).source
    assert "blockIdx.y" in source and "floordiv" not in source and "min(" not in source


@pytest.mark.parametrize(("order", "group"), [("grouped", 8), ("grouped", 3), ("row_major", 8), ("column_major", 8)])
def test_the_one_dimensional_launch_walks_the_order(order: str, group: int) -> None:
    kernel = gemm_warp_specialized.trace(ORDER=order, GROUP=group)
    assert len(kernel.grid) == len(kernel.block_vars) == 1
    (bx,) = kernel.block_vars
    a_row, b_row = _load_origins(kernel)
    sizes = {"M": 128 * 10 + 1, "N": 128 * 3 - 5, "K": 64}  # 11 x 3 tiles: the last group of 8 (or 3) is partial
    env = {v: sizes[v.name] for v in kernel.shape_vars}
    tm, tn = 11, 3
    assert int(evaluate(kernel.grid[0], env)) == tm * tn
    walked = [
        (int(evaluate(a_row, {**env, bx: t})) // 128, int(evaluate(b_row, {**env, bx: t})) // 128)
        for t in range(tm * tn)
    ]
    assert walked == [_dsl_mapping(order, tm, tn, group)(t) for t in range(tm * tn)]
    if order == "grouped":
        assert walked == [_grouped_reference(t, tm, tn, group) for t in range(tm * tn)]
        assert walked[:3] == [(0, 0), (1, 0), (2, 0)]  # M fastest within a group: consecutive blocks share B's panel


def test_an_unknown_order_is_refused() -> None:
    with pytest.raises(DSLError) as e:
        gemm_warp_specialized.trace(ORDER="snake")
    assert e.value.code == "DSL_TILE_ORDER" and "grouped" in str(e.value)


@pytest.mark.parametrize("group", [0, -2, 2.5])
def test_a_group_that_is_not_a_positive_int_is_refused(group) -> None:
    with pytest.raises(DSLError) as e:
        gemm_warp_specialized.trace(ORDER="grouped", GROUP=group)
    assert e.value.code == "DSL_TILE_ORDER" and "positive int" in str(e.value)


# --- the interpreter ---------------------------------------------------------------------------------------------


def _bf16(x: np.ndarray) -> np.ndarray:
    return (x.astype(np.float32).view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32).astype(np.float64)


@pytest.mark.parametrize(
    "params",
    [
        {"ORDER": "grouped", "GROUP": 2, "BN": 64},  # 3 x 3 tiles: groups of rows {0, 1} and {2}
        {"ORDER": "grouped", "GROUP": 4, "BN": 64},  # one partial group of 3 rows
        {"ORDER": "row_major", "BN": 64},
        {"ORDER": "column_major", "BN": 64, "OUT": "bf16"},
    ],
)
def test_correct_on_the_interpreter_with_partial_tiles(params: dict) -> None:
    m, n, k = 2 * 128 + 72, 2 * 64 + 40, 80  # partial M, N and K tiles
    rng = np.random.default_rng(11)
    a, b = _bf16(rng.standard_normal((m, k))), _bf16(rng.uniform(-1, 1, (n, k)))
    c = np.full((m, n), np.nan)  # a tile no block writes stays NaN
    run_kernel(gemm_warp_specialized.trace(**params), {"A": a, "B": b, "C": c})
    want = a @ b.T
    tolerance = 5e-3 if params.get("OUT") == "bf16" else 1e-4
    assert not np.isnan(c).any()
    assert float(np.abs(c - want).max()) <= tolerance * max(1.0, float(np.abs(want).max()))


# --- the verifier ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("params", [EXPERT_GROUPED, {"ORDER": "grouped", "GROUP": 3}, {"ORDER": "row_major"}])
def test_verifies_with_its_tag_assertions(params: dict) -> None:
    result = verify(gemm_warp_specialized.trace(**params))
    assert result.verdict == Verdict.VERIFIED and not result.errors, result.render_text()


def test_the_verifier_s_modulus_by_a_symbolic_divisor_is_python_s() -> None:
    """`smt.mod` with a divisor that is not a constant (the grouped order's ``% min(tiles_m - first, group)``)."""
    a, b = z3.BitVec("a", smt.WIDTH), z3.BitVec("b", smt.WIDTH)
    term = smt.mod(a, b)
    edge = [0, 1, 2, 3, 7, 8, 127, 128, 1 << 20, (1 << 31) - 1]
    values = sorted({*edge, *(-x for x in edge), -(1 << 31)})
    for x, y in itertools.product(values, values):
        if y == 0:
            continue
        got = z3.simplify(z3.substitute(term, (a, z3.BitVecVal(x, smt.WIDTH)), (b, z3.BitVecVal(y, smt.WIDTH))))
        want = (x % y + (1 << 31)) % (1 << 32) - (1 << 31)  # Python's, wrapped to 32 bits (-2^31 % -1)
        assert got.as_signed_long() == want, (x, y)


MK, NK, MN = ("M", "K"), ("N", "K"), ("M", "N")


@argus.kernel
def _consumer_asserts_another_order(
    A: T.Tensor[MK, T.bf16],
    B: T.Tensor[NK, T.bf16],
    C: T.Tensor[MN, T.f32],
    BM: int = 128,
    BN: int = 128,
    BK: int = 64,
    STAGES: int = 2,
    CONSUMER_ORDER: str = "row_major",
):
    """`gemm_warp_specialized` in grouped order whose consumer states the tile of another order (a seeded bug: the
    producer loads the A tile of its grouped tile, the assertion names the row-major one's)."""
    T.assume("K % 8 == 0")
    m, k_extent = A.shape
    n = B.shape[0]
    tiles = (T.cdiv(m, BM), T.cdiv(n, BN))
    with T.grid(tiles[0] * tiles[1], threads=384) as (bx,):
        # clamped, as the library's kernels are: the unclamped grouped order's divisions by symbolic sizes can run the
        # solver into its timeout on a loaded 2-core machine (UNKNOWN instead of VERIFIED, seen once in CI)
        bm, bn = T.tile_order(bx, tiles, "grouped", 8, clamp=True)
        cm, cn = T.tile_order(bx, tiles, CONSUMER_ORDER, 8, clamp=True)
        sA = T.alloc_shared((STAGES, BM, BK), T.bf16, swizzle=128)
        sB = T.alloc_shared((STAGES, BN, BK), T.bf16, swizzle=128)
        full = T.alloc_mbarrier(STAGES, arrive_count=1)
        empty = T.alloc_mbarrier(STAGES, arrive_count=1)
        k_tiles = T.cdiv(k_extent, BK)
        with T.role("producer", warpgroups=(0,), registers=40):
            for k, s in T.pipeline(k_tiles, stages=STAGES):
                T.mbarrier_wait(empty[s], phase=(k // STAGES + 1) % 2)
                T.mbarrier_arrive(full[s], expect_bytes=(BM + BN) * BK * 2)
                T.copy(A.tile((bm, k), (BM, BK)), sA[s], atom="tma", mbarrier=full[s])
                T.copy(B.tile((bn, k), (BN, BK)), sB[s], atom="tma", mbarrier=full[s])
        with T.role("consumer", warpgroups=(1, 2), registers=232):
            acc = T.alloc_fragment((BM, BN), T.f32, mma=T.wgmma_atom(BN))
            T.fill(acc, 0.0)
            for k, s in T.pipeline(k_tiles, stages=STAGES):
                T.mbarrier_wait(full[s], phase=(k // STAGES) % 2)
                T.assert_tag(lambda a: (a[1] // BK == k) & (a[0] // BM == cm), sA[s])  # noqa: B023 (traced at once)
                T.gemm(sA[s], sB[s].T, acc)
                T.mbarrier_arrive(empty[s])
            T.copy(acc, C.tile((cm, cn), (BM, BN)))


def test_a_consumer_in_another_order_is_caught() -> None:
    assert verify(_consumer_asserts_another_order.trace(CONSUMER_ORDER="grouped")).verdict == Verdict.VERIFIED
    result = verify(_consumer_asserts_another_order.trace(CONSUMER_ORDER="row_major"))
    assert result.verdict == Verdict.VIOLATED
    finding = next(f for f in result.errors if f.code == "TAG_ASSERT")
    cex = finding.counterexample
    assert cex is not None and cex.block["bx"] >= 1  # block 0 is tile (0, 0) in both orders


# --- code generation ---------------------------------------------------------------------------------------------


def test_compiles_to_hgmma_and_tma_without_spills() -> None:
    compiled = compile_kernel(gemm_warp_specialized.trace(**EXPERT_GROUPED))
    assert compiled.module.arch == "sm_90a" and compiled.module.warnings == ()
    mix = compiled.instruction_mix()
    assert mix["HGMMA"] > 0 and mix["UTMALDG"] >= 2 and mix["USETMAXREG"] >= 2
    assert compiled.instruction_mix(modifiers=True)["HGMMA.64x256x16.F32.BF16"] == 4
    r = compiled.resources
    assert (r.spill_stores, r.spill_loads, r.stack_frame) == (0, 0, 0), str(r)
    assert mix["LDL"] == 0 and mix["STL"] == 0
    assert "blockIdx.y" not in compiled.generated.source
