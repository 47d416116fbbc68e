"""C expressions: IR scalar expressions, layouts evaluated at C expressions, names, types and literals.

Owns the small algebra of C text the code generator builds on:

* `Names` — one C identifier per IR variable and buffer (IR names are not unique: two `Var`s may share
  a name), avoiding C++ keywords and the generator's own names;
* `c_expr` — an IR `Expr` as C, with Python's floor division and modulo where an operand may be
  negative, and C's cheaper ``/`` and ``%`` where both are provably non-negative;
* `layout_at` / `layout_at_coords` — a `Layout` or a swizzled `ComposedLayout` evaluated at C
  expressions: the index arithmetic the generated code uses to find a thread's elements, generated
  from the same `argus.layout` objects the interpreter evaluates;
* `divisor` / `nonnegative` — what is statically known about an expression (for vector alignment, and
  for choosing C's cheap ``/`` and ``%`` where they agree with Python's floor semantics);
* `ctype`, `float_literal`, `value_literal` — C types and constants of argus dtypes.

Strings built here are fully parenthesized where precedence could matter, and trivial terms (``+ 0``,
``* 1``, ``/ 1``) are folded so the generated code reads like hand-written index arithmetic.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from argus.ir.expr import BinaryOp, BinOp, Const, Element, Expr, Select, Var, VarKind
from argus.ir.types import DType, DTypeKind
from argus.layout import ComposedLayout, Layout, Swizzle, flatten

# --- names -----------------------------------------------------------------------------------------

_CPP_KEYWORDS = frozenset(
    """alignas alignof and and_eq asm auto bitand bitor bool break case catch char char16_t char32_t class compl
    const constexpr const_cast continue decltype default delete do double dynamic_cast else enum explicit export
    extern false float for friend goto if inline int long mutable namespace new noexcept not not_eq nullptr operator
    or or_eq private protected public register reinterpret_cast return short signed sizeof static static_assert
    static_cast struct switch template this thread_local throw true try typedef typeid typename union unsigned using
    virtual void volatile wchar_t while xor xor_eq min max threadIdx blockIdx blockDim gridDim warpSize argus
    argus_smem main""".split()
) | frozenset(  # the CUDA math functions and vector types the generated code calls: a user's name must not shadow them
    """expf exp2f logf log2f log1pf expm1f sqrtf rsqrtf tanhf erff sinf cosf fabsf floorf ceilf powf fmodf fmaxf
    fminf fmaf truncf roundf rintf float2 float4 int2 int4 uint2 uint4 dim3 size_t int32_t uint32_t int64_t
    uint64_t""".split()
)


class Names:
    """Unique C identifiers for IR objects (by identity), derived from their IR names."""

    def __init__(self, reserved: Sequence[str] = ()) -> None:
        self._taken: set[str] = set(_CPP_KEYWORDS) | set(reserved)
        self._by_object: dict[int, str] = {}
        self._objects: list[Any] = []  # keeps the objects alive so their ids stay unique

    def name(self, obj: Any, base: str) -> str:
        """The identifier of `obj`, made from `base` on first use."""
        key = id(obj)
        if key in self._by_object:
            return self._by_object[key]
        ident = self.fresh(base)
        self._by_object[key] = ident
        self._objects.append(obj)
        return ident

    def has(self, obj: Any) -> bool:
        return id(obj) in self._by_object

    def is_taken(self, ident: str) -> bool:
        """Whether `ident` is a keyword, a reserved name or the identifier of some object."""
        return ident in self._taken

    def reserve(self, ident: str) -> None:
        """Keep `ident` (chosen elsewhere, e.g. a kernel parameter) from being handed out."""
        self._taken.add(ident)

    def fresh(self, base: str) -> str:
        """A new identifier based on `base` (``base``, ``base_1``, ...)."""
        clean = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in base) or "v"
        if clean[0].isdigit():
            clean = "v_" + clean
        if clean.startswith("__"):
            clean = "u" + clean
        ident, n = clean, 0
        while ident in self._taken:
            n += 1
            ident = f"{clean}_{n}"
        self._taken.add(ident)
        return ident


# --- types and literals ----------------------------------------------------------------------------

_CTYPES = {
    "f32": "float",
    "bf16": "__nv_bfloat16",
    "f16": "__half",
    "i32": "int",
    "i64": "long long",
    "u32": "unsigned",
    "bool": "bool",
    "e4m3": "__nv_fp8_e4m3",
    "e5m2": "__nv_fp8_e5m2",
}

#: The FP8 C types (``cuda_fp8.h``): converted from ``float`` by their constructors (round to nearest even,
#: saturating to the largest finite value, as ``cvt.rn.satfinite``), to ``float`` by their conversion operator.
_FP8_CTYPES = ("__nv_fp8_e4m3", "__nv_fp8_e5m2")


def ctype(dtype: DType) -> str:
    """The C++ type that holds one element of `dtype` (``bf16`` -> ``__nv_bfloat16``)."""
    if dtype.name not in _CTYPES:
        raise KeyError(dtype.name)
    return _CTYPES[dtype.name]


def compute_ctype(dtype: DType) -> str:
    """The C++ type arithmetic on `dtype` values is done in: ``float`` for every float type (16-bit
    floats are widened, as the interpreter computes in wider precision and rounds once), else the type
    itself (``bool`` computes as ``int``)."""
    if dtype.kind is DTypeKind.FLOAT:
        return "float"
    if dtype.kind is DTypeKind.BOOL:
        return "int"
    return ctype(dtype)


def float_literal(value: float) -> str:
    """A ``float`` constant: ``1.5f``, ``-2.0f``; infinities and NaN through their bit patterns."""
    if math.isnan(value):
        return "__int_as_float(0x7fffffff)"
    if math.isinf(value):
        return "__int_as_float(0x7f800000)" if value > 0 else "__int_as_float(0xff800000)"
    text = repr(float(value))
    if "e" not in text and "." not in text:
        text += ".0"
    return text + "f"


def convert(text: str, src: str, dst: str) -> str:
    """C text converting `text` of C type `src` to C type `dst` (rounding to nearest even for floats,
    truncating toward zero for integers, as the interpreter's `round_to`)."""
    if src == dst:
        return text
    if dst == "__nv_bfloat16":
        return f"__float2bfloat16_rn({convert(text, src, 'float')})"
    if dst == "__half":
        return f"__float2half_rn({convert(text, src, 'float')})"
    if src == "__nv_bfloat16":
        return convert(f"__bfloat162float({text})", "float", dst)
    if src == "__half":
        return convert(f"__half2float({text})", "float", dst)
    if dst in _FP8_CTYPES:
        return f"{dst}({convert(text, src, 'float')})"
    if src in _FP8_CTYPES:
        return convert(f"static_cast<float>({text})", "float", dst)
    if dst == "bool":
        return f"({text} != 0)"
    return f"static_cast<{dst}>({text})"


def value_literal(value: float | int | bool, dtype: DType) -> str:
    """A constant of `dtype` as C text (16-bit floats through ``float``; integers other than 32-bit ones cast, so
    that a template deducing its type from the constant and from a pointer of `dtype` deduces one type)."""
    c = ctype(dtype)
    if dtype.kind is DTypeKind.FLOAT:
        return convert(float_literal(float(value)), "float", c)
    if dtype.kind is DTypeKind.BOOL:
        return "true" if value else "false"
    number = int(value)
    if dtype.bits != 32:
        return f"static_cast<{c}>({number})"
    return f"{number}u" if dtype.kind is DTypeKind.UINT else str(number)


# --- static facts about expressions ----------------------------------------------------------------


def nonnegative(e: Expr | int) -> bool:
    """True when `e` is provably >= 0 for every value of its variables (shape symbols are >= 1, block,
    thread and loop indices >= 0)."""
    if isinstance(e, bool):
        return True
    if isinstance(e, int):
        return e >= 0
    if isinstance(e, Const):
        return isinstance(e.value, bool) or e.value >= 0
    if isinstance(e, Var):
        return e.kind in (VarKind.SHAPE, VarKind.BLOCK, VarKind.THREAD, VarKind.LOOP)
    if isinstance(e, BinOp):
        if e.op == BinaryOp.MOD:  # Python's modulo takes the divisor's sign
            return nonnegative(e.rhs)
        if e.op in (BinaryOp.ADD, BinaryOp.MUL, BinaryOp.FLOORDIV, BinaryOp.MIN, BinaryOp.MAX):
            return nonnegative(e.lhs) and nonnegative(e.rhs)
        if e.op in (BinaryOp.SHR, BinaryOp.AND, BinaryOp.OR, BinaryOp.XOR, BinaryOp.SHL):
            return nonnegative(e.lhs) and nonnegative(e.rhs)
        return e.op in (BinaryOp.LT, BinaryOp.LE, BinaryOp.EQ, BinaryOp.NE)
    if isinstance(e, Select):
        return nonnegative(e.if_true) and nonnegative(e.if_false)
    return False


def divisor(e: Expr | int) -> int:
    """A positive integer that provably divides `e` for every value of its variables (1 when nothing
    is known; for the constant 0, a large power of two: 0 is divisible by everything)."""
    if isinstance(e, int) and not isinstance(e, bool):
        return abs(e) if e else 1 << 30
    if isinstance(e, Const) and isinstance(e.value, int) and not isinstance(e.value, bool):
        return divisor(e.value)
    if isinstance(e, BinOp):
        if e.op in (BinaryOp.ADD, BinaryOp.SUB):
            return math.gcd(divisor(e.lhs), divisor(e.rhs))
        if e.op == BinaryOp.MUL:
            return min(divisor(e.lhs) * divisor(e.rhs), 1 << 30)
        if e.op == BinaryOp.SHL and isinstance(e.rhs, Const) and isinstance(e.rhs.value, int):
            return min(divisor(e.lhs) << e.rhs.value, 1 << 30)
    return 1


# --- IR expressions as C ---------------------------------------------------------------------------

_C_OPS = {
    BinaryOp.ADD: "+",
    BinaryOp.SUB: "-",
    BinaryOp.MUL: "*",
    BinaryOp.LT: "<",
    BinaryOp.LE: "<=",
    BinaryOp.EQ: "==",
    BinaryOp.NE: "!=",
    BinaryOp.AND: "&&",
    BinaryOp.OR: "||",
    BinaryOp.XOR: "^",
    BinaryOp.SHL: "<<",
    BinaryOp.SHR: ">>",
}


_NUMBER = re.compile(r"^[0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?[fu]?$")


def is_atom(text: str) -> bool:
    """True when `text` needs no parentheses as an operand (an identifier, a number, a call, an
    array element)."""
    if text.replace("_", "").isalnum() or _NUMBER.match(text):
        return True
    depth = 0
    for i, ch in enumerate(text):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
            if depth == 0 and i != len(text) - 1 and text[i + 1] not in "([":
                return False
        elif depth == 0 and not (ch.isalnum() or ch in "_:<>."):
            return False
    return depth == 0


def paren(text: str) -> str:
    return text if is_atom(text) else f"({text})"


def c_expr(e: Expr | int, names: Names) -> str:
    """`e` as a C expression over the generated code's variables (each `Var` by its `Names` name)."""
    if isinstance(e, bool):
        return "true" if e else "false"
    if isinstance(e, int):
        return str(e)
    if isinstance(e, Const):
        if isinstance(e.value, bool):
            return "true" if e.value else "false"
        if isinstance(e.value, float):
            return float_literal(e.value)
        return str(e.value)
    if isinstance(e, Var):
        return names.name(e, e.name)
    if isinstance(e, BinOp):
        a, b = c_expr(e.lhs, names), c_expr(e.rhs, names)
        if e.op == BinaryOp.MIN:
            return f"min({a}, {b})"
        if e.op == BinaryOp.MAX:
            return f"max({a}, {b})"
        if e.op in (BinaryOp.FLOORDIV, BinaryOp.MOD):
            if nonnegative(e.lhs) and nonnegative(e.rhs):
                return f"{paren(a)} {'/' if e.op == BinaryOp.FLOORDIV else '%'} {paren(b)}"
            helper = "floordiv" if e.op == BinaryOp.FLOORDIV else "floormod"
            return f"argus::{helper}({a}, {b})"
        return f"{paren(a)} {_C_OPS[e.op]} {paren(b)}"
    if isinstance(e, Select):
        return (
            f"{paren(c_expr(e.cond, names))} ? {paren(c_expr(e.if_true, names))} : {paren(c_expr(e.if_false, names))}"
        )
    if isinstance(e, Element):
        buf = e.buffer
        strides = buf.strides
        if strides is None:  # row-major
            acc: Any = 1
            rows = []
            for d in reversed(buf.shape):
                rows.append(acc)
                acc = acc * d
            strides = tuple(reversed(rows))
        terms = []
        for i, st in zip(e.index, strides, strict=True):
            i_c, st_c = c_expr(i, names), c_expr(st, names)
            if i_c == "0" or st_c == "0":
                continue
            terms.append(i_c if st_c == "1" else f"{paren(i_c)} * {paren(st_c)}")
        offset = add(*terms) if terms else "0"
        loaded = f"__ldg({names.name(buf, buf.name)} + {paren(offset)})"
        if buf.dtype.is_float:  # a value (a scale held on the device), computed with in float
            return convert(loaded, ctype(buf.dtype), "float")
        return f"static_cast<int>({loaded})"
    raise TypeError(f"cannot write {e!r} as C")


def uses_floor_helpers(e: Expr | int) -> bool:
    """True when `c_expr(e)` calls ``argus::floordiv``/``floormod``."""
    if isinstance(e, BinOp):
        if e.op in (BinaryOp.FLOORDIV, BinaryOp.MOD) and not (nonnegative(e.lhs) and nonnegative(e.rhs)):
            return True
        return uses_floor_helpers(e.lhs) or uses_floor_helpers(e.rhs)
    if isinstance(e, Select):
        return any(uses_floor_helpers(x) for x in (e.cond, e.if_true, e.if_false))
    if isinstance(e, Element):
        return any(uses_floor_helpers(x) for x in e.index)
    return False


# --- tidy arithmetic on C text ---------------------------------------------------------------------


def add(*terms: str | int) -> str:
    """The sum of `terms`, with integer terms folded and zeros dropped."""
    constant = 0
    parts: list[str] = []
    for t in terms:
        if isinstance(t, int):
            constant += t
        elif t.lstrip("-").isdigit():
            constant += int(t)
        elif t:
            parts.append(t)
    if constant or not parts:
        parts.append(str(constant))
    text = parts[0]
    for p in parts[1:]:
        if p.startswith("-") and p[1:].isdigit():
            text = f"{text} - {p[1:]}"
        else:
            text = f"{text} + {p}"
    return text


def mul(a: str, k: int) -> str:
    if k == 0:
        return "0"
    if k == 1:
        return a
    if a.lstrip("-").isdigit():
        return str(int(a) * k)
    return f"{paren(a)} * {k}"


# --- layouts as C ----------------------------------------------------------------------------------


def layout_at(layout: Layout, x: str, domain: int | None = None) -> str:
    """C text for ``layout(x)``: integer index `x` (C text, 0 <= x < `domain`, default ``size(layout)``)
    split column-major over the flattened shape, times the strides.

    Each mode ``(s, d)`` with prefix product ``p`` contributes ``((x / p) % s) * d``; size-1 and
    stride-0 modes contribute nothing, and the ``% s`` of a mode is dropped when no larger index
    can reach it (``p * s >= domain``).
    """
    shapes = flatten(layout.shape)
    strides = flatten(layout.stride)
    domain = domain if domain is not None else math.prod(shapes)
    terms: list[str] = []
    prefix = 1
    for s, d in zip(shapes, strides, strict=True):
        if s != 1 and d != 0:
            term = x if prefix == 1 else f"{paren(x)} / {prefix}"
            if prefix * s < domain:
                term = f"{paren(term)} % {s}"
            terms.append(mul(term, d))
        prefix *= s
    return add(*terms)


def _mode_at(layout: Layout, coord: str) -> str:
    """One top-level mode of a layout evaluated at its (integer) coordinate; a literal coordinate of a
    hierarchical mode (a panel's first column) is evaluated here rather than split in C."""
    if isinstance(layout.shape, tuple) and coord.isdigit():
        return str(layout(int(coord)))
    return layout_at(layout, coord)


def layout_at_coords(layout: Layout | ComposedLayout, coords: Sequence[str]) -> str:
    """C text for ``layout(c0, c1, ...)``: one C coordinate per top-level mode (a hierarchical mode
    splits its coordinate column-major), and for a `ComposedLayout` the offset and the swizzle on top
    (``argus::swizzle<B, M, S>(...)``: the XOR of `argus.layout.Swizzle`)."""
    if isinstance(layout, ComposedLayout):
        inner = layout_at_coords(layout.outer, coords)
        inner = add(inner, layout.offset) if layout.offset else inner
        if isinstance(layout.inner, Swizzle):
            sw = layout.inner
            if sw.bits == 0:
                return inner
            return f"argus::swizzle<{sw.bits}, {sw.base}, {sw.shift}>({inner})"
        return layout_at(layout.inner, inner, domain=1 << 62)
    modes = list(layout) if isinstance(layout.shape, tuple) else [layout]
    if len(modes) != len(coords):
        raise ValueError(f"layout {layout} has {len(modes)} modes, got {len(coords)} coordinates")
    return add(*(_mode_at(m, c) for m, c in zip(modes, coords, strict=True)))


def uses_swizzle(layout: Any) -> bool:
    """True when `layout` is a composed layout with a non-identity swizzle."""
    return isinstance(layout, ComposedLayout) and isinstance(layout.inner, Swizzle) and layout.inner.bits > 0
