"""Questions about layouts answered by Z3 over *all* coordinates, not by enumeration.

The layout functions evaluate on Z3 terms (see `argus.layout.arith`); this module builds the
queries the verifier needs most often on top of that. Each answer is either a proof (``None``:
no counterexample exists) or a concrete counterexample the user can check by hand.
"""

from __future__ import annotations

from typing import Any

from argus.layout.errors import LayoutError
from argus.layout.int_tuple import flatten, is_tuple, product


def _z3() -> Any:
    import z3

    return z3


def symbolic_coordinate(shape: Any, prefix: str, bits: int = 32) -> tuple[Any, list]:
    """A hierarchical coordinate of `shape` made of fresh Z3 bit-vectors, and the range
    constraints ``0 <= leaf < extent`` for each leaf."""
    z3 = _z3()
    constraints: list = []
    counter = iter(range(10**9))

    def build(s: Any) -> Any:
        if is_tuple(s):
            return tuple(build(e) for e in s)
        v = z3.BitVec(f"{prefix}{next(counter)}", bits)
        constraints.append(z3.ULT(v, s))
        return v

    return build(shape), constraints


def injectivity_counterexample(layout: Any, bits: int = 32, timeout_ms: int = 10_000) -> tuple | None:
    """Prove that `layout` (a `Layout` or a composed/swizzled layout) maps distinct coordinates
    of its shape to distinct offsets, or return two coordinates that collide.

    Returns ``None`` when Z3 proves injectivity, else ``(crd1, crd2, offset)`` with concrete
    hierarchical coordinates. Raises `LayoutError` (``LAYOUT_SOLVER_UNKNOWN``) when Z3 cannot decide
    within `timeout_ms`.
    """
    z3 = _z3()
    shape = layout.shape
    if product(shape) >= 1 << (bits - 2):
        raise LayoutError("LAYOUT_BAD_OPERAND", f"layout {layout} is too large for {bits}-bit symbolic coordinates")
    c1, k1 = symbolic_coordinate(shape, "a", bits)
    c2, k2 = symbolic_coordinate(shape, "b", bits)
    solver = z3.Solver()
    solver.set("timeout", timeout_ms)
    solver.add(*k1, *k2)
    solver.add(z3.Or([x != y for x, y in zip(flatten(c1), flatten(c2), strict=True)]))
    solver.add(_as_bv(layout(c1), bits) == _as_bv(layout(c2), bits))
    verdict = solver.check()
    if verdict == z3.unsat:
        return None
    if verdict == z3.unknown:
        raise LayoutError(
            "LAYOUT_SOLVER_UNKNOWN",
            f"Z3 could not decide whether {layout} is injective: {solver.reason_unknown()}",
            "try a smaller layout or a longer timeout",
        )
    model = solver.model()

    def value(c: Any) -> Any:
        if is_tuple(c):
            return tuple(value(e) for e in c)
        return model.eval(c, model_completion=True).as_long()

    v1, v2 = value(c1), value(c2)
    return v1, v2, layout(v1)


def _as_bv(term: Any, bits: int) -> Any:
    z3 = _z3()
    if isinstance(term, int):
        return z3.BitVecVal(term, bits)
    if z3.is_int(term):
        return z3.Int2BV(term, bits)
    return term
