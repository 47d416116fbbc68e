"""Integer arithmetic that works the same on Python ints, numpy integer arrays and Z3 expressions.

Layouts and swizzles are evaluated through these few functions, so the very code that computes
`L(5) == 40` also turns a Z3 variable ``x`` into the Z3 term for ``L(x)``, which the verifier
hands to the solver, and a numpy array of coordinates into the array of their indices (elementwise,
broadcasting as numpy does). Z3 is imported only when a Z3 value is actually seen; numpy is never
imported here (an array takes the plain-integer path: ``//``, ``%``, ``*``, ``+``).

Sorts: Z3 integers (``Int``) use Z3's integer division and modulus, which agree with Python's
floor division for the positive divisors that layouts have; Z3 bit-vectors (``BitVec``) use the
unsigned operations (layout coordinates and offsets are non-negative). XOR needs bit-vectors:
`xor`/`shift_right` on an ``Int`` term go through a bit-vector of `SYMBOLIC_INT_WIDTH` bits.
"""

from __future__ import annotations

from typing import Any

#: Width of the bit-vector an ``Int`` term is converted to when a swizzle needs XOR.
SYMBOLIC_INT_WIDTH = 64


def is_symbolic(x: Any) -> bool:
    """True when `x` is a Z3 expression (checked without importing Z3)."""
    return type(x).__module__.startswith("z3")


def _z3() -> Any:
    import z3

    return z3


def _is_bitvec(x: Any) -> bool:
    return is_symbolic(x) and _z3().is_bv(x)


def floordiv(a: Any, b: int) -> Any:
    """``a // b`` for a non-negative `a` and positive int `b`; symbolic `a` gives a Z3 term."""
    if not is_symbolic(a):
        return a // b
    if b == 1:
        return a
    if _is_bitvec(a):
        return _z3().UDiv(a, b)
    return a / b  # Z3 integer division


def mod(a: Any, b: int) -> Any:
    """``a % b`` for a non-negative `a` and positive int `b`; symbolic `a` gives a Z3 term."""
    if not is_symbolic(a):
        return a % b
    if _is_bitvec(a):
        return _z3().URem(a, b)
    return a % b


def mul(a: Any, b: int) -> Any:
    """``a * b`` with the trivial cases folded, so symbolic terms stay small."""
    if is_symbolic(a):
        if b == 0:
            return 0
        if b == 1:
            return a
    return a * b


def _is_zero(x: Any) -> bool:
    """True for a concrete zero: an int or a one-element numpy value equal to 0 (never a Z3 term, never an
    array of several values, whose comparison has no single truth value)."""
    return not is_symbolic(x) and getattr(x, "size", 1) == 1 and bool(x == 0)


def add(a: Any, b: Any) -> Any:
    """``a + b`` with zero folded away."""
    if _is_zero(a):
        return b
    if _is_zero(b):
        return a
    return a + b


def _as_bitvec(a: Any) -> tuple[Any, bool]:
    """Return (bit-vector term, was_int) for a symbolic `a`."""
    z3 = _z3()
    if z3.is_bv(a):
        return a, False
    return z3.Int2BV(a, SYMBOLIC_INT_WIDTH), True


def swizzle_bits(offset: Any, yyy_mask: int, shift: int) -> Any:
    """``offset ^ shiftr(offset & yyy_mask, shift)``: the one operation a `Swizzle` performs.

    A negative `shift` shifts left. Ints stay ints; Z3 bit-vectors stay bit-vectors; a Z3 ``Int``
    goes through a bit-vector of `SYMBOLIC_INT_WIDTH` bits and comes back as an ``Int``.
    """
    if not is_symbolic(offset):
        bits = offset & yyy_mask
        return offset ^ (bits >> shift if shift >= 0 else bits << -shift)
    z3 = _z3()
    bv, was_int = _as_bitvec(offset)
    bits = bv & yyy_mask
    moved = z3.LShR(bits, shift) if shift >= 0 else bits << -shift
    result = bv ^ moved
    return z3.BV2Int(result) if was_int else result
