"""Output coverage of stores placed by a tile order (`argus.verify.checks.tiles.cover`): the persistent kernels'
epilogues, which were *not checked* before ("an access under T.if_"), are proved to write every element of their
output, a persistent loop that drops tiles is a `COVERAGE_OUTPUT` finding with an element no store writes, and a
kernel that writes part of an output by design says so (`T.writes_part`)."""

import pytest

import argus
import argus.lang as T
from argus.ir.printer import format_kernel
from argus.ir.serialize import kernel_from_json, kernel_to_json
from argus.kernels import gemm
from argus.lang.errors import DSLError
from argus.verify import Verdict, verify


def _coverage(result, tensor: str = "C"):
    return [r for r in result.checks if r.check == "output coverage" and r.target.split(" ")[0] == tensor]


@pytest.mark.parametrize(
    "params",
    [{}, {"C_MAJOR": "M"}, {"BATCH": True, "BATCH_GRID": "flat"}],
    ids=["grouped-order", "transposed-store", "flat-batch"],
)
def test_persistent_gemm_writes_every_element_of_c(params):
    result = verify(gemm.gemm_warp_specialized_persistent, checks=("coverage",), **params)
    (record,) = _coverage(result)
    assert record.verdict == Verdict.VERIFIED and not record.not_checked, record.target
    assert not result.errors


def test_split_tail_kernel_fills_its_workspace():
    # W (TAIL, RT, BM, BN): unit u writes slot (u // RT, u % RT); the assumptions pin S == TAIL and RT to the tail
    result = verify(gemm.gemm_persistent_split_tail, checks=("coverage",), TAIL=3)
    (record,) = _coverage(result, "W")
    assert record.verdict == Verdict.VERIFIED and not record.not_checked, record.target


@argus.kernel
def _walk(
    C: T.Tensor[("M", "N"), T.f32],  # noqa: F821 - shape symbols
    BM: int = 64,
    BN: int = 64,
    BLOCKS: int = 4,
    WAVES: str = "cdiv",
    LAST: int = 0,
    DECLARE: bool = False,
):
    """A persistent walk over C's tiles (row-major order), storing zeros: `WAVES` "floor" runs ``tiles // BLOCKS``
    iterations (drops the partial last wave), `LAST` leaves that many tiles out of the guard."""
    if DECLARE:
        T.writes_part(C, "the last wave's tiles are another kernel's")
    with T.grid(BLOCKS, threads=128) as (bx,):
        tiles_m, tiles_n = T.cdiv(M, BM), T.cdiv(N, BN)  # noqa: F821 - the kernel's shape symbols
        tiles = tiles_m * tiles_n
        acc = T.alloc_fragment((BM, BN), T.f32)
        waves = T.cdiv(tiles, BLOCKS) if WAVES == "cdiv" else tiles // BLOCKS
        for it in T.serial(waves):
            t = bx + it * BLOCKS
            with T.if_(t < tiles - LAST):
                bm, bn = T.tile_order(t, (tiles_m, tiles_n), "row_major", 8, clamp=True)
                T.fill(acc, 0.0)
                T.copy(acc, C.tile((bm, bn), (BM, BN)))


def test_a_walk_over_every_tile_is_proved():
    result = verify(_walk, checks=("coverage",))
    (record,) = _coverage(result)
    assert record.verdict == Verdict.VERIFIED and not record.not_checked


@pytest.mark.parametrize("params", [{"WAVES": "floor"}, {"LAST": 1}], ids=["floor-waves", "guard-short"])
def test_a_walk_that_drops_tiles_names_an_element_never_written(params):
    result = verify(_walk, checks=("coverage",), **params)
    (finding,) = [f for f in result.errors if f.code == "COVERAGE_OUTPUT"]
    cex = finding.counterexample
    row, col = (int(x) for x in cex.variables["element"].strip("()").split(","))
    m, n = cex.shapes["M"], cex.shapes["N"]
    assert 0 <= row < m and 0 <= col < n
    # replay: the element's tile is one no iteration of the walk stores
    tiles_m, tiles_n = -(-m // 64), -(-n // 64)
    tiles = tiles_m * tiles_n
    waves = -(-tiles // 4) if params.get("WAVES", "cdiv") == "cdiv" else tiles // 4
    stored = {t for bx in range(4) for it in range(waves) if (t := bx + it * 4) < tiles - params.get("LAST", 0)}
    assert (row // 64) * tiles_n + col // 64 not in stored


def test_a_declared_part_is_listed_not_reported():
    result = verify(_walk, checks=("coverage",), WAVES="floor", DECLARE=True)
    (record,) = _coverage(result)
    assert record.not_checked and "T.writes_part" in record.target and "another kernel's" in record.target
    assert not result.errors


def test_whole_waves_kernel_declares_the_tail_is_not_its_own():
    result = verify(gemm.gemm_warp_specialized_persistent, checks=("coverage",), PART="whole")
    (record,) = _coverage(result)
    assert record.not_checked and "gemm_tail_reduce" in record.target
    assert not result.errors


def test_writes_part_survives_serialization():
    kernel = _walk.trace(DECLARE=True)
    (part,) = kernel.partial_outputs
    back = kernel_from_json(kernel_to_json(kernel))
    (got,) = back.partial_outputs
    assert got.why == part.why and got.tensor.name == "C"
    assert "writes part of C: the last wave's tiles are another kernel's" in format_kernel(back)


@argus.kernel
def _bad_part(C: T.Tensor[("N",), T.f32], HOW: str = "empty"):  # noqa: F821 - a shape symbol
    if HOW == "empty":
        T.writes_part(C, "  ")
    elif HOW == "scalar":
        T.writes_part(3, "why")
    elif HOW == "limits":
        T.writes_part(C, "why", below=(1, 2))  # C has one dimension
    elif HOW == "limit":
        T.writes_part(C, "why", below=("N",))  # a string, not an expression
    else:
        T.writes_part(C, "one")
        T.writes_part(C, "two")
    with T.grid(1, threads=32):
        pass


@pytest.mark.parametrize("how", ["empty", "scalar", "twice", "limits", "limit"])
def test_writes_part_refuses_what_it_cannot_mean(how):
    with pytest.raises(DSLError) as err:
        _bad_part.trace(HOW=how)
    assert err.value.code == "DSL_ASSUME"


def test_a_grouped_gemm_declares_the_rows_it_writes():
    from argus.kernels import grouped

    kernel = grouped.grouped_gemm_persistent.trace(BLOCKS=3, STAGES=3, SEARCH=3)
    (part,) = kernel.partial_outputs
    assert part.tensor.name == "C" and str(part.below[0]) == "offs[(E - 1)]" and part.below[1] is None
    back = kernel_from_json(kernel_to_json(kernel))
    assert str(back.partial_outputs[0].below[0]) == "offs[(E - 1)]"
    assert "writes part of C below (offs[(E - 1)], None): rows past the last expert's end" in format_kernel(kernel)
