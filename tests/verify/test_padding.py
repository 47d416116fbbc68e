"""The padding classes and their transfer functions (`argus.verify.padding`), and the masked-reduction finding's
report of the mask that let padding through."""

from __future__ import annotations

import importlib

import z3

from argus.ir.expr import Const
from argus.ir.nodes import MapOp
from argus.verify import padding as P
from argus.verify import smt, verify
from tests.verify import kernels_folds

INF = float("inf")


def _class(op: MapOp, *operands: object) -> int:
    """The class `combine` computes for operands given as classes (ints) or scalar constants (floats)."""
    args = [smt.val(x) if isinstance(x, int) else Const(x) for x in operands]
    return z3.simplify(P.combine(op, args)).as_long()


def test_transfer_functions_on_padding() -> None:
    assert _class(MapOp.EXP2, P.PAD_NEG_INF) == P.PAD_ZERO  # exp2(-inf) = 0
    assert _class(MapOp.SUB, P.PAD_NEG_INF, P.REAL) == P.PAD_NEG_INF  # -inf - finite
    assert _class(MapOp.MUL, P.PAD_NEG_INF, 1.4426950408889634) == P.PAD_NEG_INF
    assert _class(MapOp.MUL, P.PAD_NEG_INF, -2.0) == P.PAD_POS_INF
    assert _class(MapOp.MUL, P.PAD_ZERO, P.REAL) == P.PAD_ZERO  # 0 * finite
    assert _class(MapOp.MUL, P.PAD_NEG_INF, P.PAD_NEG_INF) == P.PAD_POS_INF
    assert _class(MapOp.MAX, P.PAD_NEG_INF, P.PAD_ZERO) == P.PAD_ZERO
    assert _class(MapOp.SUB, P.PAD_ZERO, P.REAL) == P.PAD_OTHER  # 0 - mean: some finite value
    assert _class(MapOp.EXP2, P.PAD_OTHER) == P.PAD_OTHER
    assert _class(MapOp.RSQRT, P.PAD_ZERO) == P.PAD_POS_INF
    assert _class(MapOp.SUB, P.PAD_NEG_INF, P.PAD_NEG_INF) == P.PAD_OTHER  # NaN
    assert _class(MapOp.ADD, P.REAL, P.CONST) == P.REAL  # no padding in: real if any operand is
    assert _class(MapOp.ADD, P.CONST, 1.0) == P.CONST
    assert _class(MapOp.CAST, P.PAD_NEG_INF) == P.PAD_NEG_INF


def test_symbolic_operand_classes_are_enumerated() -> None:
    c = z3.BitVec("c", smt.WIDTH)
    term = P.combine(MapOp.EXP2, [c])
    s = z3.Solver()
    s.add(c == P.PAD_NEG_INF, term != P.PAD_ZERO)
    assert s.check() == z3.unsat
    s = z3.Solver()
    s.add(c == P.REAL, term != P.REAL)
    assert s.check() == z3.unsat


def test_mma_class_tail_and_padded_rows() -> None:
    def mma(a: int, b: int) -> int:
        return z3.simplify(P.mma_class(smt.val(a), smt.val(b))).as_long()

    assert mma(P.REAL, P.REAL) == P.REAL
    assert mma(P.PAD_ZERO, P.PAD_ZERO) == P.CONST  # the contraction's tail: no term
    assert mma(P.REAL, P.PAD_ZERO) == P.PAD_OTHER  # a K row past the sequence: a padded score column
    assert mma(P.PAD_ZERO, P.REAL) == P.PAD_OTHER


def test_the_finding_names_the_mask_that_let_padding_through() -> None:
    module = importlib.import_module("tests.verify.corpus.kernels_oob_mask_off_by_one")
    result = verify(module.KERNEL)
    f = next(f for f in result.findings if f.code == "OOB_MASKED_REDUCTION")
    assert "N + 1" in f.message and "value is 0" in f.message
    write, read = f.counterexample.accesses
    assert write.op == "T.where mask" and "T.where" in write.loc.text
    assert read.op == "reduce_max"
    # the padding element is column N exactly (the one the off-by-one keeps)
    assert f.counterexample.element.coord[1] == f.counterexample.shapes["N"]


def test_without_the_offset_only_later_key_tiles_leak() -> None:
    module = importlib.import_module("tests.verify.corpus.kernels_oob_attention_key_mask_no_offset")
    result = verify(module.KERNEL, shapes={"S": 64})  # one key tile: the mask without its offset is right
    assert not [f for f in result.findings if f.code == "OOB_MASKED_REDUCTION"], result.render_text()


def test_identity_padding_outside_a_fold_stays_padding() -> None:
    # only an in-place fold (`accumulation_step`) absorbs identity padding: `x + b` over a padded `x` puts `b`
    # where there is no column
    assert _class(MapOp.ADD, P.REAL, P.PAD_ZERO) == P.PAD_OTHER
    assert _class(MapOp.ADD, P.CONST, P.PAD_ZERO) == P.PAD_OTHER
    assert _class(MapOp.MAX, P.REAL, P.PAD_NEG_INF) == P.PAD_OTHER


def test_accumulation_steps_are_recognized_only_in_place() -> None:
    from argus.ir.nodes import Map
    from argus.verify.program import Program

    prog = Program.build(kernels_folds.FOLDS.trace())
    found = {s.loc.text.split("#")[0].strip(): P.accumulation_step(s) for s in prog.sites if isinstance(s.stmt, Map)}
    assert found == {
        "T.copy(acc + x, acc)": (0, P.PAD_ZERO),
        "T.copy(x + acc, acc)": (1, P.PAD_ZERO),
        "T.copy(acc - x, acc)": (0, P.PAD_ZERO),
        "T.copy(T.maximum(acc, x), acc)": (0, P.PAD_NEG_INF),
        "T.copy(T.minimum(x, acc), acc)": (1, P.PAD_POS_INF),
        "T.copy(x - acc, acc)": None,
        "T.copy(acc * x, acc)": None,
        "T.copy(acc + 1.0, acc)": None,
        "T.copy(acc + x, other)": None,
        "t = acc + x": (0, P.PAD_ZERO),
        "u = T.maximum(acc, x)": (0, P.PAD_NEG_INF),
        "v = T.minimum(acc, x)": None,
        "y = acc + x": None,
    }


def test_a_fold_into_another_buffer_is_an_ordinary_elementwise_result() -> None:
    findings = verify(kernels_folds.FOLD_INTO_ANOTHER_BUFFER).findings
    assert [f.code for f in findings if f.severity.name == "ERROR"] == ["OOB_MASKED_REDUCTION"]
    folded = importlib.import_module("tests.verify.corpus.kernels_oob_tile_accumulator_sum_ok")
    assert not [f for f in verify(folded.KERNEL).findings if f.code == "OOB_MASKED_REDUCTION"]


def test_a_product_of_padding_is_no_term_only_as_zero_times_a_finite_value() -> None:
    def bad(a: int, b: int) -> bool:
        return z3.is_true(z3.simplify(P.bad_product(smt.val(a), smt.val(b))))

    assert not bad(P.REAL, P.REAL)
    assert not bad(P.PAD_ZERO, P.REAL) and not bad(P.REAL, P.PAD_ZERO)  # the contraction's tail
    assert not bad(P.PAD_ZERO, P.PAD_ZERO) and not bad(P.PAD_OTHER, P.PAD_ZERO)  # x * 0, x taken as finite
    assert bad(P.PAD_NEG_INF, P.PAD_ZERO) and bad(P.PAD_ZERO, P.PAD_POS_INF)  # inf * 0 = NaN
    assert bad(P.PAD_NEG_INF, P.REAL) and bad(P.PAD_OTHER, P.REAL) and bad(P.REAL, P.PAD_OTHER)
