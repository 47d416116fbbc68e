"""Tags and tag assertions in the DSL: `tag`, `assert_tag_eq`, `assert_tag`.

    T.tag(A, lambda m, k: (m, k // 64), "Ablk")        # every element of A carries ("Ablk", m, k // 64)
    T.assert_tag_eq(rA_row_stats, rS_row_stats)       # same tags, element by element
    T.assert_tag(lambda a: a[1] // BK == k, rA)       # the K-tile consumed at iteration k is K-block k

The functions run the user's function once, at trace time, on placeholder leaves (see
`argus.ir.tags`) and record the resulting IR expression in a `Tag`, `AssertTagEq` or `AssertTag`
statement at this program point; the verifier (`argus.verify`) proves it for every block, thread,
element and loop iteration. Nothing reaches the generated code: tags cost nothing at run time.
"""

from __future__ import annotations

from typing import Any

from argus.ir.expr import Expr, as_expr
from argus.ir.nodes import Broadcast, Copy, Fill, For, Gemm, If, Let, Map, Reduce, Role, Space, TileRef
from argus.ir.tags import AssertTag, AssertTagEq, Tag, TagNameIs, TagPlaceholder, strip
from argus.ir.types import boolean
from argus.lang.errors import DSLError, caller_loc
from argus.lang.tiles import GlobalTensor, Tile
from argus.lang.trace import current


class _TagName:
    """``t.name`` of a `TagView`: compares with a string."""

    def __init__(self, operand: int) -> None:
        self.operand = operand

    def __eq__(self, other: object) -> Expr:  # type: ignore[override]
        if not isinstance(other, str):
            raise DSLError("DSL_TAG_NAME", "a tag's name compares with a string, e.g. a.name == 'A'")
        return TagNameIs(self.operand, other)

    def __ne__(self, other: object) -> Expr:  # type: ignore[override]
        from argus.ir.expr import BinaryOp, binary

        return binary(BinaryOp.EQ, self.__eq__(other), as_expr(False))

    __hash__ = object.__hash__


class TagView:
    """The tag of one element of an assertion's operand: ``t[i]`` is its coordinate ``i`` (negative
    counts from the end), ``t.name`` its name, ``t.coord`` the element's own window coordinate."""

    def __init__(self, operand: int, rank: int) -> None:
        self.operand = operand
        self.rank = rank

    def __getitem__(self, i: int) -> TagPlaceholder:
        if not isinstance(i, int):
            raise DSLError("DSL_TAG_INDEX", f"tag coordinates are indexed by Python ints, got {i!r}")
        return TagPlaceholder(self.operand, i, "tag")

    @property
    def name(self) -> _TagName:
        return _TagName(self.operand)

    @property
    def coord(self) -> tuple[TagPlaceholder, ...]:
        return tuple(TagPlaceholder(self.operand, i, "coord") for i in range(self.rank))


def _operand(x: Any, what: str, allow_broadcast: bool = True) -> TileRef | Broadcast:
    if isinstance(x, Tile):
        return x.ref
    if isinstance(x, GlobalTensor):
        b = x.buffer
        return TileRef(b, tuple(0 for _ in b.shape), tuple(b.shape))  # type: ignore[arg-type]
    if allow_broadcast and hasattr(x, "fragment") and hasattr(x, "axes"):  # m[:, None]
        return Broadcast(x.fragment.ref, tuple(x.axes))
    raise DSLError(
        "DSL_BAD_OPERAND",
        f"{what} must be a tensor, a tile, a shared buffer or a fragment (or a broadcast m[:, None])",
        actual=type(x).__name__,
    )


def _ref(op: TileRef | Broadcast) -> TileRef:
    return op.ref if isinstance(op, Broadcast) else op


def _shape(op: TileRef | Broadcast) -> tuple:
    return op.ref.shape if isinstance(op, Broadcast) else op.shape


def tag(x: Any, fn: Any, name: str) -> Any:
    """From this point on, the element at coordinate ``c`` of `x` carries the tag ``(name, *fn(*c))``.

    `fn` receives one argument per dimension of `x` (its window coordinates) and returns an int,
    an expression or a tuple of them (loop variables and block indices may appear). Tags then flow
    with the data through copies, elementwise operations, reductions and MMAs. Returns `x`."""
    st = current("T.tag")
    loc = caller_loc()
    if not isinstance(name, str) or not name:
        raise DSLError("DSL_TAG_NAME", "T.tag needs a non-empty string name", actual=repr(name), loc=loc)
    ref = _operand(x, "T.tag's first argument", allow_broadcast=False)
    rank = len(_shape(ref))
    out = fn(*[TagPlaceholder(0, i, "coord") for i in range(rank)])
    out = out if isinstance(out, tuple) else (out,)
    coords = []
    for c in out:
        if isinstance(c, bool) or not isinstance(c, (int, Expr)):
            raise DSLError(
                "DSL_TAG_FUNCTION", "a tag function returns ints or integer expressions", actual=repr(c), loc=loc
            )
        e = strip(as_expr(c))
        if e.dtype == boolean:
            raise DSLError("DSL_TAG_FUNCTION", "a tag coordinate must be an integer, not a comparison", loc=loc)
        coords.append(e)
    st.emit(Tag(ref, name, tuple(coords), loc=loc))
    return x


def exclude(x: Any, fn: Any) -> Any:
    """Declare that the elements of fragment `x` where ``fn(*c)`` holds (``c`` the element's window coordinates;
    block indices, loop variables and sizes may appear) must not contribute to anything computed from `x`: the
    verifier treats them as it treats the padding of an element outside a tensor, and proves that a mask removes
    them before every reduction, MMA and store (``OOB_MASKED_REDUCTION``, ``OOB_MMA_PADDING``, ...). Values are
    unchanged; the interpreter and the generated code do nothing. Attention's causal mask:
    ``T.exclude(scores, lambda r, c: c + j * BN > r + bm * BM + SK - SQ)``. Returns `x`."""
    st = current("T.exclude")
    loc = caller_loc()
    ref = _operand(x, "T.exclude's first argument", allow_broadcast=False)
    if ref.buffer.space.value != "fragment":
        raise DSLError(
            "DSL_BAD_OPERAND", "T.exclude marks elements of a fragment", actual=ref.buffer.space.value, loc=loc
        )
    rank = len(_shape(ref))
    cond = fn(*[TagPlaceholder(0, i, "coord") for i in range(rank)])
    if isinstance(cond, bool) or not isinstance(cond, Expr) or strip(as_expr(cond)).dtype != boolean:
        raise DSLError(
            "DSL_TAG_PREDICATE",
            "T.exclude's function must return a comparison over the element's coordinates",
            "compare with <, <=, >, >=, T.eq, T.ne; combine with & and |",
            actual=repr(cond),
            loc=loc,
        )
    read = _computed_from(st.stack[-1], ref.buffer)
    if read is not None:
        where = f"line {read.loc.line}" if read.loc is not None else "a statement"
        raise DSLError(
            "DSL_EXCLUDE_AFTER_READ",
            f"T.exclude on {ref.buffer.name} after {where} computed from it: what was computed before the declaration "
            "does not carry it, so no mask applied to that value is checked against it",
            "declare every T.exclude on a fragment right after the statement that writes it, before any statement "
            "reads it",
            loc=loc,
        )
    st.emit(Tag(ref, "excluded", (), exclude=strip(as_expr(cond)), loc=loc))
    return x


def _computed_from(stmts: list[Any], buffer: Any) -> Any:
    """The newest statement of `stmts` (the current block, in order; nested blocks searched too) that computes from
    `buffer` after the last statement there that writes it, or None. A `T.exclude` declared after it would not reach
    what it computed: the verifier resolves a read through the writes and declarations before it."""

    def reads(s: Any) -> bool:
        refs = {Copy: lambda: [s.src], Map: lambda: list(s.srcs), Reduce: lambda: [s.src], Gemm: lambda: [s.a, s.b]}
        for kind, get in refs.items():
            if isinstance(s, kind):
                return any((r.ref if isinstance(r, Broadcast) else r).buffer is buffer for r in get()
                           if isinstance(r, TileRef | Broadcast))  # fmt: skip
        return False

    def writes(s: Any) -> bool:
        if isinstance(s, Gemm):
            return s.acc.buffer is buffer
        return isinstance(s, Copy | Fill | Map | Reduce) and isinstance(s.dst, TileRef) and s.dst.buffer is buffer

    def scan(block: Any) -> tuple[bool, Any]:  # (a write ends the search, the read found)
        for s in reversed(list(block)):
            if isinstance(s, For | Let | Role):
                done, found = scan(s.body)
            elif isinstance(s, If):
                done, found = scan(tuple(s.then) + tuple(s.orelse))
            elif writes(s):
                return True, None
            else:
                done, found = False, (s if reads(s) else None)
            if found is not None or done:
                return done, found
        return False, None

    return scan(stmts)[1]


def _check_shapes(what: str, ops: list[TileRef | Broadcast], loc: Any) -> None:
    first = ops[0]
    if isinstance(first, Broadcast):
        raise DSLError("DSL_BAD_OPERAND", f"{what}: the first operand cannot be a broadcast", loc=loc)
    shape = tuple(first.shape)
    for op in ops[1:]:
        if isinstance(op, Broadcast):
            want = tuple(s for i, s in enumerate(shape) if i not in op.axes)
            got = tuple(op.ref.shape)
        else:
            want, got = shape, tuple(op.shape)
        if tuple(str(s) for s in want) != tuple(str(s) for s in got):
            raise DSLError(
                "DSL_SHAPE_MISMATCH",
                f"{what}: operand shapes do not match",
                requirement=f"the first operand's shape {shape} (broadcast axes removed)",
                actual=str(got),
                loc=loc,
            )
    if any(_ref(op).buffer.space not in (Space.GLOBAL, Space.SHARED, Space.FRAGMENT) for op in ops):
        raise DSLError("DSL_BAD_OPERAND", f"{what}: only tensors, shared buffers and fragments carry tags", loc=loc)


def assert_tag_eq(a: Any, b: Any) -> None:
    """Assert that, here, every element of `a` carries the same tag as the element of `b` at the same
    coordinate (read by the same thread, for fragments)."""
    st = current("T.assert_tag_eq")
    loc = caller_loc()
    ops = [_operand(a, "T.assert_tag_eq's first operand", allow_broadcast=False), _operand(b, "its second operand")]
    _check_shapes("T.assert_tag_eq", ops, loc)
    st.emit(AssertTagEq(ops[0], ops[1], loc=loc))


def assert_tag(pred: Any, *buffers: Any) -> None:
    """Assert that, here, ``pred(*tags)`` holds for every element of the first buffer, the tags being
    those of the elements at the same coordinate of each buffer (`TagView`: ``t[i]``, ``t.name``,
    ``t.coord``). `pred` returns a comparison (``a[1] // 64 == k``) or several combined with ``&``/``|``."""
    st = current("T.assert_tag")
    loc = caller_loc()
    if not buffers:
        raise DSLError("DSL_BAD_OPERAND", "T.assert_tag needs at least one buffer after the predicate", loc=loc)
    ops = [_operand(x, f"T.assert_tag's operand {i}", allow_broadcast=i > 0) for i, x in enumerate(buffers)]
    _check_shapes("T.assert_tag", ops, loc)
    rank = len(_shape(ops[0]))
    result = pred(*[TagView(i, rank) for i in range(len(ops))])
    if isinstance(result, bool) or not isinstance(result, Expr) or strip(result).dtype != boolean:
        raise DSLError(
            "DSL_TAG_PREDICATE",
            "T.assert_tag's predicate must return a comparison over tags",
            "compare tag coordinates with ==, !=, <, <=; combine with & and |; write the tag coordinate on one "
            "side of == (a plain expression compared with == is Python's identity test)",
            actual=repr(result),
            loc=loc,
        )
    text = loc.text.strip() if loc is not None and loc.text else ""
    st.emit(AssertTag(strip(result), tuple(ops), text=text, loc=loc))


__all__ = ["TagView", "assert_tag", "assert_tag_eq", "exclude", "tag"]
