"""Output written once for the MoE grouped GEMMs (`argus.kernels.grouped`): their row tiles are placed through data
(an expert found by a binary search over ``tiles``, rows from ``offs[g-1]``, bounded by ``offs[g]``), and the
tile-order lemma proves them through a selector (`argus.verify.checks.tiles`, "orders over data"): the search's facts
first, each proved for the kernel at hand, then the pair of tile numbers with one expert and with two.

The proof must rest on what it proves: without the search's facts the lemma is not proved; a guess the search does
not satisfy is dropped; without the declared order of ``offs`` two experts' rows may overlap. Each seeded bug in a
copy of the library kernel that stores an element twice is reported with a witness whose data the declarations
allow; a bug where no double store is found is not reported, and not proved either."""

from __future__ import annotations

import numpy as np
import pytest

from argus.eval.candidates import import_file
from argus.ir.expr import BinaryOp, BinOp, Const, elements, free_vars
from argus.ir.nodes import Copy, Space
from argus.ir.rewrite import inline_lets
from argus.ir.types import boolean
from argus.kernels import grouped
from argus.kernels.moe import tile_counts
from argus.kernels.source import module_source
from argus.verify import smt, verify
from argus.verify.checks import tiles
from argus.verify.model import analyze
from argus.verify.report import Verdict

SMALL = {"BLOCKS": 3, "STAGES": 3, "SEARCH": 3}


def _once(result):
    return [c for c in result.checks if c.check == "output written once"]


def _store(kernel):
    """The traced kernel (lets inlined, as the verifier sees it) and its one global store: (kernel, site, window)."""
    kernel = inline_lets(kernel)
    (site,) = [
        s for s in analyze(kernel).program.sites if isinstance(s.stmt, Copy) and s.stmt.dst.buffer.space == Space.GLOBAL
    ]
    return kernel, site, site.stmt.dst


def _seeded(tmp_path, good: str, bad: str, kernel=grouped.grouped_gemm_persistent):
    """A copy of the library kernel's module with `good` (which occurs once) replaced by `bad`."""
    text = module_source(kernel)
    assert text.count(good) == 1, good
    path = tmp_path / "seeded_grouped.py"
    path.write_text(text.replace(good, bad))
    return getattr(import_file(path, "seeded_grouped"), kernel.name)


# --- the library kernels -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["grouped_gemm_persistent", "grouped_gemm_swiglu", "grouped_gemm_scaled"])
def test_the_library_grouped_gemms_are_proved_written_once(name: str) -> None:
    result = verify(getattr(grouped, name).trace(**SMALL), checks=("coverage",))
    assert [(c.target, c.verdict, c.not_checked) for c in _once(result)] == [("C", Verdict.VERIFIED, False)]
    assert not [c for c in result.not_checked if c.check == "output written once"]
    assert not result.findings, [f.message for f in result.findings]


def test_the_search_is_abstracted_by_a_selector_with_proved_facts() -> None:
    kernel, site, ref = _store(grouped.grouped_gemm_persistent.trace(**SMALL))
    split = tiles.split(kernel, site, ref)
    assert split is not None and split.selector is not None
    assert {e.buffer.name for e in elements(split.chosen)} == {"tiles"}  # the search reads the tile counts
    # what is left reads the data only at indices of the sizes and the selector
    for e in [*split.origins.values(), *split.bounds.values()]:
        for read in elements(e):
            assert all(split.tau not in free_vars(i) and not elements(i) for i in read.index)
    assert {e.buffer.name for e in elements(split.bounds[0])} == {"offs"}  # offs[g], the expert's end
    with smt.isolated():
        lemma = tiles._Lemma(kernel)
        guesses = tiles.candidates(split, {0, 1})
        facts = lemma.selector_facts(split, guesses)
    text = {str(f) for f in facts}
    assert "(0 <= selector)" in text and "(selector < E)" in text
    assert any(str(f).endswith("< tiles[selector])") for f in facts)  # t < tiles[g]
    assert any(str(f).startswith("(select((0 < selector), tiles[") and "<=" in str(f) for f in facts)  # first <= t
    assert len(facts) < len(guesses)  # the guesses the search does not satisfy were dropped


def test_a_guess_the_search_does_not_satisfy_is_never_a_fact() -> None:
    kernel, site, ref = _store(grouped.grouped_gemm_persistent.trace(**SMALL))
    split = tiles.split(kernel, site, ref)
    guesses = tiles.candidates(split, {0, 1})
    (upper,) = [g for g in guesses if str(g).endswith("< tiles[selector])")]
    wrong = BinOp(BinaryOp.LT, upper.lhs, BinOp(BinaryOp.SUB, upper.rhs, Const(1)), boolean)  # t < tiles[g] - 1
    with smt.isolated():
        facts = tiles._Lemma(kernel).selector_facts(split, [upper, wrong])
    assert [str(f) for f in facts] == [str(upper)]


def test_the_lemma_rests_on_the_selector_s_facts() -> None:
    """With the search's facts dropped (a selector free of any fact), the pair is not proved: the proof uses them."""
    kernel, site, ref = _store(grouped.grouped_gemm_persistent.trace(**SMALL))
    split = tiles.split(kernel, site, ref)
    with smt.isolated():
        proved = tiles.prove(kernel, ref.buffer, [0, 1], (split, ref), (split, ref))
    assert proved.proved, proved.why

    unproved = tiles._Lemma.selector_facts
    try:
        tiles._Lemma.selector_facts = lambda self, split, candidates: ()  # type: ignore[method-assign]
        with smt.isolated():
            got = tiles.prove(kernel, ref.buffer, [0, 1], (split, ref), (split, ref))
    finally:
        tiles._Lemma.selector_facts = unproved  # type: ignore[method-assign]
    assert not got.proved and "not proved" in got.why


@pytest.mark.parametrize("name", ["grouped_gemm_persistent", "grouped_gemm_swiglu", "grouped_gemm_scaled"])
def test_at_the_library_configuration_the_output_is_proved_written_once(name: str) -> None:
    """132 blocks, 4 stages, eight search steps: the kernels the GPU runs."""
    result = verify(getattr(grouped, name).trace(), checks=("coverage",))
    assert [(c.target, c.verdict, c.not_checked) for c in _once(result)] == [("C", Verdict.VERIFIED, False)]


def test_tma_stores_of_full_tiles_beside_bounded_stores_are_proved_once_and_an_overlap_is_caught(tmp_path) -> None:
    """EPILOGUE "tma": full tiles through TMA stores, the expert's partial tile through the bounded window; the two
    kinds never store one element (proved). A full-tile test one row too generous (a tile reaching one row into the
    next expert stored whole, and bounded too: that row stored twice) is not proved: the tile-order lemma fails on
    it and the direct query runs out of its budget, so the answer is `unknown`, never `verified`."""
    result = verify(grouped.grouped_gemm_persistent.trace(**SMALL, EPILOGUE="tma"), checks=("coverage",))
    assert _once(result) and all(c.verdict == Verdict.VERIFIED for c in _once(result))
    assert not result.findings, [f.message for f in result.findings]
    kernel = _seeded(tmp_path, "with T.if_(row0 + bm <= end):", "with T.if_(row0 + bm <= end + 1):")
    found = verify(kernel.trace(**SMALL, EPILOGUE="tma"), checks=("coverage",))
    assert _once(found) and all(c.verdict != Verdict.VERIFIED for c in _once(found))


# --- what it does not prove ----------------------------------------------------------------------------------------


def test_without_the_order_of_offs_two_experts_rows_may_overlap(tmp_path) -> None:
    """Declared in range but not nondecreasing, ``offs`` may put expert 1's rows inside expert 0's: a real double
    store for data the declaration allows (a witness, never a proof)."""
    kernel = _seeded(
        tmp_path,
        "T.assume_values(offs, lo=0, hi=rows, nondecreasing=True)",
        "T.assume_values(offs, lo=0, hi=rows)",
    )
    result = verify(kernel.trace(**SMALL), checks=("coverage",))
    assert [c.verdict for c in _once(result)] != [Verdict.VERIFIED]
    (finding,) = [f for f in result.findings if f.code == "COVERAGE_OUTPUT_TWICE"]
    assert "offs[" in finding.message


#: Seeded bugs in a copy of grouped_gemm_persistent, each storing some element of C twice: (what, good, bad).
SEEDED = [
    ("a row origin one row early", 'T.let(start + local_m * bm, "row0")', 'T.let(start + local_m * bm - 1, "row0")'),
    (
        "row tiles half a tile apart",
        'T.let(start + local_m * bm, "row0")',
        'T.let(start + local_m * (bm // 2), "row0")',
    ),
    (
        "rows from the previous expert's start",
        "start = T.where(g > 0, offs[T.maximum(g - 1, 0)], 0)",
        "start = T.where(g > 1, offs[T.maximum(g - 2, 0)], 0)",
    ),
    ("a bound one row past the expert's end", 'T.let(offs[g], "row_end")', 'T.let(offs[g] + 1, "row_end")'),
    (
        "a search one tile ahead",
        "(tiles[T.minimum(cand - 1, experts - 1)] <= t)",
        "(tiles[T.minimum(cand - 1, experts - 1)] <= t + 1)",
    ),
]


@pytest.mark.parametrize(("what", "good", "bad"), SEEDED, ids=[s[0] for s in SEEDED])
def test_a_seeded_double_store_is_caught_with_a_witness(tmp_path, what: str, good: str, bad: str) -> None:
    result = verify(_seeded(tmp_path, good, bad).trace(**SMALL), checks=("coverage",))
    assert [c.verdict for c in _once(result)] == [Verdict.VIOLATED], what
    (finding,) = [f for f in result.findings if f.code == "COVERAGE_OUTPUT_TWICE"]
    cex = finding.counterexample
    assert cex is not None and cex.code == "COVERAGE_OUTPUT_TWICE"
    first, second = cex.variables["first block"], cex.variables["second block"]
    assert first != second or cex.loops  # two blocks, or one block in two iterations
    # the data of the witness is data the declarations allow: offs and tiles nondecreasing, offs within 0 .. R; an
    # element a seeded search reads past the tensor's end (expert E) is no data, and is named so
    inside = {k: v for k, v in cex.variables.items() if "past its end" not in k}
    for name in ("offs", "tiles"):
        data = {int(k[len(name) + 1 : -1]): int(v) for k, v in inside.items() if k.startswith(f"{name}[")}
        ordered = [data[i] for i in sorted(data)]
        assert ordered == sorted(ordered) and all(v >= 0 for v in ordered), (name, data)
        assert all(i < cex.shapes["E"] for i in data)
    rows = cex.shapes["R"]
    assert all(int(v) <= rows for k, v in inside.items() if k.startswith("offs["))


def test_a_search_one_expert_behind_leaves_rows_unwritten_and_is_caught_with_data(tmp_path) -> None:
    """The search's result minus one places an expert's tiles past the previous expert's tile count, where the grouped
    order gives row tiles outside that expert's order (or divides by a row count of zero): no double store is found,
    and it is not proved either; but its rows are never written (it verified until output coverage was checked for
    the grouped kernels): `COVERAGE_OUTPUT` with the element and data that keeps every declaration."""
    kernel = _seeded(tmp_path, "        then(g)\n", "        then(T.maximum(g - 1, 0))\n")
    result = verify(kernel.trace(**SMALL), checks=("coverage",))
    (record,) = _once(result)
    assert record.not_checked and "not proved" in record.target
    assert not [f for f in result.findings if f.code == "COVERAGE_OUTPUT_TWICE"]
    (finding,) = [f for f in result.findings if f.code == "COVERAGE_OUTPUT"]
    cex = finding.counterexample
    row = int(cex.variables["element"].strip("()").split(",")[0])
    data = finding.message.split("(with ")[1]
    offs = [int(x) for x in data.split("offs = [")[1].split("]")[0].split(",")]
    tiles = [int(x) for x in data.split("tiles = [")[1].split("]")[0].split(",")]
    assert list(tile_counts(np.asarray(offs), 128)) == tiles and offs == sorted(offs) and offs[-1] <= cex.shapes["R"]
    assert row < offs[-1]  # a routed row: one the kernel must write


@pytest.mark.parametrize(
    "name",
    ["grouped_gemm_persistent", "grouped_gemm_swiglu", "grouped_gemm_scaled", "grouped_gemm_units",
     "grouped_gemm_swiglu_units"],
)  # fmt: skip
def test_the_library_grouped_gemms_write_every_routed_row(name: str) -> None:
    """Output coverage relative to the data: every row before the last expert's end (`T.writes_part(C, ...,
    below=(offs[E - 1], None))`) is written, for every routing the declarations allow (`tiles.cover`, segments).
    The units' row-major order reads no expert's tile count: the bound ``t < tiles[g]`` is still a fact of the
    search (`tiles.candidates` offers the searched tensor at the selector), and ``(u - first * tiles_n) // tiles_n``
    is taken apart linearly (`tiles.cancel_multiples`)."""
    params = SMALL if "units" not in name else {k: v for k, v in SMALL.items() if k != "BLOCKS"}
    result = verify(getattr(grouped, name).trace(**params), checks=("coverage",))
    (record,) = [c for c in result.checks if c.check == "output coverage"]
    assert (record.target, record.verdict, record.not_checked) == ("C", Verdict.VERIFIED, False)


def test_units_searching_one_expert_behind_leave_rows_unwritten(tmp_path) -> None:
    """The units schedule (one block a unit, row-major within an expert) with the search one expert behind: its
    coverage was not checked before the selector's bound at g was a candidate; now `COVERAGE_OUTPUT`, a routed row."""
    kernel = _seeded(tmp_path, "        then(g)\n", "        then(T.maximum(g - 1, 0))\n", grouped.grouped_gemm_units)
    result = verify(kernel.trace(STAGES=3, SEARCH=3), checks=("coverage",))
    (finding,) = [f for f in result.findings if f.code == "COVERAGE_OUTPUT"]
    row = int(finding.counterexample.variables["element"].strip("()").split(",")[0])
    offs = [int(x) for x in finding.message.split("offs = [")[1].split("]")[0].split(",")]
    assert row < offs[-1]


def test_the_tma_store_epilogue_s_two_stores_are_one_and_write_every_routed_row() -> None:
    """`store_expert_tile` with TMA stores: full tiles staged and stored by TMA under ``row0 + bm <= end``, the
    expert's last, partial tile by the bounded store under ``row0 + bm > end``. Neither covers the cells alone; the
    pair (complementary branches, the TMA window proved inside the bound under its branch) is one bounded store
    (`coverage._one_store_per_branch_pair`), and every routed row is proved written."""
    result = verify(grouped.grouped_gemm_persistent.trace(EPILOGUE="tma", **SMALL), checks=("coverage",))
    (record,) = [c for c in result.checks if c.check == "output coverage"]
    assert (record.target, record.verdict, record.not_checked) == ("C", Verdict.VERIFIED, False)


#: Seeded branch conditions of `store_expert_tile` that leave a tile stored by neither store: (what, good, bad).
SPLIT_STORES = [
    ("a full tile left to neither", "with T.if_(row0 + bm <= end):", "with T.if_(row0 + bm < end):"),
    (
        "a tile one row short left to neither",
        "with T.if_(row0 + bm > end):  # the expert's last",
        "with T.if_(row0 + bm > end + 1):  # the expert's last",
    ),
]


@pytest.mark.parametrize(("what", "good", "bad"), SPLIT_STORES, ids=[s[0] for s in SPLIT_STORES])
def test_branches_that_leave_a_tile_to_neither_store_are_caught(tmp_path, what: str, good: str, bad: str) -> None:
    """Not complementary, the two stores are not one; the witness search (with segments one row short of a tile,
    whole, one row over: `coverage.RESIDUES`) finds a routed row neither writes, confirmed on the verifier's
    encoding with the data pinned."""
    kernel = _seeded(tmp_path, good, bad)
    result = verify(kernel.trace(EPILOGUE="tma", **SMALL), checks=("coverage",))
    (finding,) = [f for f in result.findings if f.code == "COVERAGE_OUTPUT"]
    row = int(finding.counterexample.variables["element"].strip("()").split(",")[0])
    offs = [int(x) for x in finding.message.split("offs = [")[1].split("]")[0].split(",")]
    assert row < offs[-1], what
