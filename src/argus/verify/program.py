"""The structure of a traced kernel as the verifier needs it: every statement as a `Site` with its
position, enclosing loops, branches and warp role; the windows of tile references as coordinates;
thread–value helpers; and symbolic counts of executions (cp.async groups) and "the latest instance
of a statement before a program point" (waits, barriers), for all loop iterations at once."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import z3

from argus.atoms.common import WARPGROUP_SIZE as WG
from argus.ir.expr import BinaryOp, BinOp, Expr, Var, VarKind, free_vars
from argus.ir.nodes import Buffer, For, If, Kernel, Role, Space, Stmt, TileRef
from argus.verify import smt


@dataclass(frozen=True, eq=False)
class Frame:
    """One level of nesting: the statement that owns `body` (None for the kernel body) and the
    position of the next-inner statement in it."""

    owner: Stmt | None
    body: tuple[Stmt, ...]
    pos: int
    branch: bool = True  # for an If owner: True = then-branch


@dataclass(eq=False)
class Site:
    """A statement and where it sits."""

    stmt: Stmt
    index: int  # pre-order position in the kernel
    end: int  # last pre-order position inside it (== index for simple statements)
    frames: tuple[Frame, ...]  # outermost first; frames[-1].body[frames[-1].pos] is stmt
    role: Role | None = None

    @property
    def loops(self) -> tuple[For, ...]:
        return tuple(f.owner for f in self.frames if isinstance(f.owner, For))  # type: ignore[misc]

    @property
    def ifs(self) -> tuple[tuple[If, bool], ...]:
        return tuple((f.owner, f.branch) for f in self.frames if isinstance(f.owner, If))  # type: ignore[misc]

    @property
    def loc(self):
        return self.stmt.loc

    def __repr__(self) -> str:
        return f"<site {self.index} {type(self.stmt).__name__} {self.stmt.loc}>"


@dataclass(eq=False)
class Program:
    kernel: Kernel
    sites: list[Site] = field(default_factory=list)
    by_stmt: dict[int, Site] = field(default_factory=dict)

    def site(self, stmt: Stmt) -> Site:
        return self.by_stmt[id(stmt)]

    @classmethod
    def build(cls, kernel: Kernel) -> Program:
        prog = cls(kernel)

        def walk(body: tuple[Stmt, ...], frames: tuple[Frame, ...], role: Role | None, branch: bool = True) -> None:
            for pos, s in enumerate(body):
                owner = frames[-1].owner if frames else None
                here = frames[:-1] + (Frame(owner, body, pos, branch),) if frames else (Frame(None, body, pos),)
                site = Site(s, len(prog.sites), len(prog.sites), here, role)
                prog.sites.append(site)
                prog.by_stmt[id(s)] = site
                if isinstance(s, For):
                    walk(s.body, here + (Frame(s, s.body, 0),), role)
                elif isinstance(s, Role):
                    walk(s.body, here + (Frame(s, s.body, 0),), s)
                elif isinstance(s, If):
                    walk(s.then, here + (Frame(s, s.then, 0, True),), role, True)
                    walk(s.orelse, here + (Frame(s, s.orelse, 0, False),), role, False)
                site.end = len(prog.sites) - 1

        walk(kernel.body, (), None)
        return prog

    def role_threads(self, role: Role | None) -> list[int]:
        """Absolute thread indices that execute statements of `role` (all threads when None)."""
        if role is None:
            return list(range(self.kernel.threads))
        return [WG * wg + t for wg in role.warpgroups for t in range(WG)]


# --- windows ---------------------------------------------------------------------------------------------------


def kept(ref: TileRef) -> tuple[int, ...]:
    """The buffer dimensions the window's dimensions are, in window order."""
    k = getattr(ref, "kept", None)
    if k is not None:
        return tuple(k)
    return tuple(d for d in range(len(ref.extent)) if d not in ref.dropped)


def window_shape(ref: TileRef) -> tuple[Any, ...]:
    return tuple(ref.extent[d] for d in kept(ref))


#: The row of an im2col window, as a variable of the traversal's expressions (`_im2col_coords`).
_IM2COL_ROW = Var("im2col_row", VarKind.LOOP)


def _im2col_coords(ref: TileRef, window: tuple[Any, ...], env: dict) -> tuple[Any, ...]:
    """Buffer coordinates of an im2col window's element (row, column): the base pixel at traversal index ``position
    + row`` (`Im2col.pixel`, the model `argus.atoms.tma.im2col_rows` checked on the hardware, in closed form: images
    outermost, the last spatial dimension fastest) plus the offsets, channel origin + column. Sound only for a
    window whose origin is `Im2col.pixel` of its position (`argus.verify.engine` refuses any other)."""
    spec = ref.im2col
    row, col = window
    pixel = spec.pixel(_IM2COL_ROW + spec.position, ref.buffer.shape)
    inner = dict(env)
    inner[_IM2COL_ROW] = smt.val(row)
    coords = [smt.val(smt.evaluate(p, inner) if isinstance(p, Expr) else p) for p in pixel]
    offsets = [smt.val(smt.evaluate(o, env) if isinstance(o, Expr) else o) for o in spec.offsets]
    channel = ref.origin[-1]
    channel_term = smt.val(smt.evaluate(channel, env) if isinstance(channel, Expr) else channel)
    return (coords[0], *(c + o for c, o in zip(coords[1:], offsets, strict=True)), channel_term + smt.val(col))


#: The row of a gathered window, as a variable of its row expression (`_gather_coords`).
_GATHER_ROW = Var("gather_row", VarKind.LOOP)


def _gather_coords(ref: TileRef, window: tuple[Any, ...], env: dict) -> tuple[Any, ...]:
    """Buffer coordinates of a gathered window's element: row ``index[position + row]`` (an uninterpreted function of
    the index's position, as every tensor element read), the other dimensions origin + coordinate. A row whose
    position lies past the index's end reads 0 on the hardware and in the interpreter; here it is still named by
    the index's (unknown) value there, so what is proved of such rows holds of some row of the tensor."""
    spec = ref.gather
    inner = dict(env)
    inner[_GATHER_ROW] = smt.val(window[0])
    row = smt.val(smt.evaluate(spec.row(_GATHER_ROW), inner))
    out = [row]
    for d in range(1, len(ref.origin)):
        o = ref.origin[d]
        origin = smt.evaluate(o, env) if isinstance(o, Expr) else smt.val(o)
        out.append(smt.val(origin) + smt.val(window[d]))
    return tuple(out)


def buffer_coords(ref: TileRef, window: tuple[Any, ...], env: dict) -> tuple[Any, ...]:
    """Buffer coordinates (one per buffer dimension) of the window element at `window` (an im2col source's:
    `_im2col_coords`)."""
    if ref.im2col is not None:
        return _im2col_coords(ref, window, env)
    if ref.gather is not None:
        return _gather_coords(ref, window, env)
    by_dim = dict(zip(kept(ref), window, strict=True))
    out = []
    for d, o in enumerate(ref.origin):
        origin = smt.evaluate(o, env) if isinstance(o, Expr) else smt.val(o)
        out.append(origin if d not in by_dim else smt.val(origin) + smt.val(by_dim[d]))
    return tuple(out)


def window_of(ref: TileRef, bcoords: tuple[Any, ...], env: dict) -> tuple[tuple[Any, ...], Any]:
    """(window coordinates, in-window condition) of buffer coordinates `bcoords`."""
    if ref.im2col is not None:  # which rows of a traversal hold an element: not modelled (never a destination)
        raise Unsupported(f"the rows of an im2col load of {ref.buffer.name} holding a given element")
    if ref.gather is not None:  # which rows of a gather hold an element: not modelled (never a destination)
        raise Unsupported(f"the rows of a gathered load of {ref.buffer.name} holding a given element")
    ks = kept(ref)
    conds = []
    window = []
    for d, o in enumerate(ref.origin):
        origin = smt.evaluate(o, env) if isinstance(o, Expr) else smt.val(o)
        if d in ks:
            c = smt.val(bcoords[d]) - smt.val(origin)
            window.append((d, c))
            ext = ref.extent[d]
            conds.append(smt.in_range(c, 0, smt.evaluate(ext, env) if isinstance(ext, Expr) else ext))
        else:
            conds.append(smt.val(bcoords[d]) == smt.val(origin))
        limit = ref.bound[d] if ref.bound is not None else None
        if limit is not None:  # a bounded window holds no element at or past its bound
            conds.append(smt.val(bcoords[d]) < smt.val(smt.evaluate(limit, env) if isinstance(limit, Expr) else limit))
    by_dim = dict(window)
    return tuple(by_dim[d] for d in ks), z3.And(*conds) if conds else z3.BoolVal(True)


def barrier_element(ref: Any) -> Expr | int:
    """The element of an mbarrier array that `ref` (``bars[i]``) names: its index expression, 0 for a bare array."""
    return ref.origin[0] if ref.origin else 0


def user_name(buffer: Buffer) -> str:
    """The name the user gave the buffer (``sA`` in ``sA = T.alloc_shared(...)``), else the IR's."""
    import re

    loc = buffer.loc
    if buffer.space != Space.GLOBAL and loc is not None and loc.text:
        m = re.match(r"\s*([A-Za-z_]\w*)\s*(?::[^=]*)?=(?!=)", loc.text)
        if m:
            return m.group(1)
    return buffer.name


def loop_name(loop: For) -> str:
    """The name the user gave a loop variable (``k`` in ``for k, s in T.pipeline(...)``), else the IR's."""
    import re

    loc = loop.loc
    if loc is not None and loc.text:
        m = re.match(r"\s*for\s+\(?\s*([A-Za-z_]\w*)", loc.text)
        if m:
            return m.group(1)
    return loop.var.name


def first_thread(role: Role | None) -> int:
    """The block's thread index of the first thread of `role` (its first warpgroup's first thread; 0 outside roles):
    the thread a finding names when the whole role is at fault."""
    return WG * role.warpgroups[0] if role is not None else 0


def shared_layout(ref: TileRef) -> Any:
    return ref.layout if ref.layout is not None else ref.buffer.layout


def decompose(index: Any, shape: tuple[int, ...]) -> tuple[Any, ...]:
    """Column-major index -> coordinates of `shape` (ints or terms)."""
    out = []
    rest = index
    for s in shape:
        if isinstance(rest, int):
            out.append(rest % s)
            rest //= s
        else:
            out.append(z3.URem(rest, s) if s > 1 else smt.val(0))
            rest = z3.UDiv(rest, s) if s > 1 else rest
    return tuple(out)


def colmajor(coord: tuple[Any, ...], shape: tuple[int, ...]) -> Any:
    idx: Any = 0
    mult = 1
    for c, s in zip(coord, shape, strict=True):
        idx = idx + (c * mult if mult != 1 else c)
        mult *= s
    return idx


def absolute_thread(buffer: Buffer, t: Any, role: Role | None) -> Any:
    """The block thread index of fragment slot row `t` (fragments in a warp role count the role's
    threads from 0)."""
    if role is None or buffer.threads is None or buffer.threads == 0:
        return t
    wgs = role.warpgroups
    if not isinstance(t, int) and type(t).__module__ == "numpy":
        import numpy as np

        return np.asarray(wgs)[t // WG] * WG + t % WG
    if list(wgs) == list(range(wgs[0], wgs[0] + len(wgs))):
        return smt.val(t) + WG * wgs[0] if not isinstance(t, int) else t + WG * wgs[0]
    if isinstance(t, int):
        return WG * wgs[t // WG] + t % WG
    term = smt.val(0)
    for i, wg in reversed(list(enumerate(wgs))):
        term = z3.If(z3.UDiv(smt.val(t), WG) == i, smt.val(t) % WG + WG * wg, term)
    return term


# --- symbolic counts and "latest before" -------------------------------------------------------------------


class Unsupported(Exception):
    """The program's structure is outside what the symbolic counting handles (becomes `unknown`)."""


def _count_full(s: Stmt, match: Callable[[Stmt], bool], env: dict) -> Any:
    if match(s):
        return smt.val(1)
    if isinstance(s, For):
        inner = _count_body(s.body, match, env)
        if _is_zero(inner):
            return smt.val(0)
        _independent(s)
        return smt.val(smt.evaluate(s.extent, env)) * inner
    if isinstance(s, If):
        then, other = _count_body(s.then, match, env), _count_body(s.orelse, match, env)
        if _is_zero(then) and _is_zero(other):
            return smt.val(0)
        return z3.If(smt.boolean(smt.evaluate(s.cond, env)), then, other)
    return smt.val(0)  # roles: other threads' statements; everything else does not match


def _count_body(body: tuple[Stmt, ...], match: Callable[[Stmt], bool], env: dict) -> Any:
    total = smt.val(0)
    for s in body:
        c = _count_full(s, match, env)
        if not _is_zero(c):
            total = total + c
    return total


def _is_zero(t: Any) -> bool:
    return z3.is_bv_value(t) and t.as_long() == 0


def count_before(site: Site, env: dict, match: Callable[[Stmt], bool]) -> Any:
    """How many statements matching `match` the thread executing `site` (at the iterations in
    `env`) executed before it."""
    total = smt.val(0)
    for f in site.frames:
        for s in f.body[: f.pos]:
            c = _count_full(s, match, env)
            if not _is_zero(c):
                total = total + c
        if isinstance(f.owner, For):
            earlier = _count_iterations(f.owner, match, env)  # the earlier iterations, each a full body
            if not _is_zero(earlier):
                total = total + earlier
    return total


def _count_iterations(loop: For, match: Callable[[Stmt], bool], env: dict) -> Any:
    """How many statements matching `match` the iterations of `loop` before ``env[loop.var]`` executed: the body's
    count times the iterations where nothing in it depends on the loop's variable; a branch whose condition does
    (``with T.if_(k + STAGES - 1 < k_tiles)``: a prefetch that stops at the end) counted in closed form over the
    iterations where it holds (`_iterations_where`). `Unsupported` where that cannot be counted."""
    var, k = loop.var, smt.val(env[loop.var])
    total = smt.val(0)
    for s in loop.body:
        if isinstance(s, If) and depends_on(s.cond, var):
            then, other = _count_body(s.then, match, env), _count_body(s.orelse, match, env)
            if _is_zero(then) and _is_zero(other):
                continue
            if _varies(s.then + s.orelse, var):
                raise Unsupported(f"a branch on {var.name} inside a branch on it: executions cannot be counted")
            held = _iterations_where(s.cond, var, k, env)
            total = total + then * held + other * (k - held)
            continue
        c = _count_full(s, match, env)
        if _is_zero(c):
            continue
        if _varies((s,), var):
            raise Unsupported(f"a count that depends on {var.name} in a nested loop or branch: executions not counted")
        total = total + k * c
    return total


def _varies(body: tuple[Stmt, ...], var: Var) -> bool:
    """Whether a branch's condition or a loop's extent in `body` depends on `var` (what runs differs per iteration)."""
    return any(
        (isinstance(x, If) and depends_on(x.cond, var)) or (isinstance(x, For) and depends_on(x.extent, var))
        for x in walk_all(body)
    )


def _iterations_where(cond: Expr, var: Var, k: Any, env: dict) -> Any:
    """How many ``j`` in ``[0, k)`` satisfy `cond` with `var` = j, for a comparison of ``var + c`` with a bound
    (``<`` or ``<=``, either side; c and the bound free of `var`): ``min(k, max(0, u))`` for ``j < u``, and the rest
    for ``j >= u``. `Unsupported` for any other condition."""
    if not (isinstance(cond, BinOp) and cond.op in (BinaryOp.LT, BinaryOp.LE)):
        raise Unsupported(f"a branch on {var.name} that is not a comparison: executions cannot be counted")
    lhs_var, rhs_var = depends_on(cond.lhs, var), depends_on(cond.rhs, var)
    if lhs_var == rhs_var:
        raise Unsupported(f"a comparison with {var.name} on both sides: executions cannot be counted")
    side, bound = (cond.lhs, cond.rhs) if lhs_var else (cond.rhs, cond.lhs)
    c = _offset(side, var, env)
    t = smt.val(smt.evaluate(bound, env)) if isinstance(bound, Expr) else smt.val(bound)
    strict = cond.op == BinaryOp.LT
    if lhs_var:  # j + c < t  (j < t - c), or j + c <= t  (j < t - c + 1)
        u, below = t - c + (0 if strict else 1), True
    else:  # t < j + c  (j >= t - c + 1), or t <= j + c  (j >= t - c)
        u, below = t - c + (1 if strict else 0), False
    under = z3.If(u < 0, smt.val(0), z3.If(u > k, k, u))  # the j in [0, k) below u
    return under if below else k - under


def _offset(e: Expr, var: Var, env: dict) -> Any:
    """c with ``e == var + c`` (c a term free of `var`), or `Unsupported`."""
    if e is var:
        return smt.val(0)
    if isinstance(e, BinOp) and e.op in (BinaryOp.ADD, BinaryOp.SUB):
        left, right = depends_on(e.lhs, var), depends_on(e.rhs, var)

        def value(x: Any) -> Any:
            return smt.val(smt.evaluate(x, env)) if isinstance(x, Expr) else smt.val(x)

        if left and not right:
            rest = value(e.rhs)
            return _offset(e.lhs, var, env) + (rest if e.op == BinaryOp.ADD else -rest)
        if right and not left and e.op == BinaryOp.ADD:
            return _offset(e.rhs, var, env) + value(e.lhs)
    raise Unsupported(f"{e} is not {var.name} plus a term free of it: executions cannot be counted")


def _independent(loop: For) -> None:
    """Counting `extent * (count per iteration)` needs the inner loops' extents not to depend on `loop`."""
    for s in walk_all(loop.body):
        if isinstance(s, For) and not isinstance(s.extent, int) and loop.var in free_vars(s.extent):
            raise Unsupported(f"an inner loop's extent depends on {loop.var.name}: executions cannot be counted")


def walk_all(body: tuple[Stmt, ...]):
    for s in body:
        yield s
        if isinstance(s, For | Role):
            yield from walk_all(s.body)
        elif isinstance(s, If):
            yield from walk_all(s.then)
            yield from walk_all(s.orelse)


def contains(body: tuple[Stmt, ...], match: Callable[[Stmt], bool]) -> bool:
    """True when executing `body` surely executes a matching statement (loops assumed to run at
    least once; a branch counts when both of its sides surely do; other roles' bodies do not count)."""
    for s in body:
        if match(s):
            return True
        if isinstance(s, For) and contains(s.body, match):
            return True
        if isinstance(s, If) and contains(s.then, match) and contains(s.orelse, match):
            return True
    return False


def may_contain(body: tuple[Stmt, ...], match: Callable[[Stmt], bool]) -> bool:
    """True when executing `body` may execute a matching statement (in a branch or a loop; not in another role's
    body)."""
    for s in body:
        if match(s):
            return True
        if isinstance(s, For) and may_contain(s.body, match):
            return True
        if isinstance(s, If) and (may_contain(s.then, match) or may_contain(s.orelse, match)):
            return True
    return False


Instance = tuple[Any, Site, dict]  # (guard, site, env)

#: How many earlier iterations `latest_before` looks through for a loop whose body runs a matching statement only
#: in a branch (each may not take it): past them, that path gives no instance (its callers read that as "none",
#: which for every one of them is the cautious answer: fewer groups landed, nothing waited for).
MAYBE_ITERATIONS = 2


def latest_before(prog: Program, site: Site, env: dict, match: Callable[[Stmt], bool]) -> list[Instance]:
    """The latest executed instance of a statement matching `match` before `site` at `env`, as
    mutually exclusive alternatives ``(guard, site, env)``; no alternative holds when there is none. A branch
    that holds a matching statement splits the scan in two alternatives, its condition and its negation (since
    2026-12-05: a wait in a branch, such as the tail's ``T.async_wait(0)``, was passed over before)."""
    return _scan_back(prog, list(site.frames), env, z3.BoolVal(True), match, MAYBE_ITERATIONS)


def _scan_back(prog: Program, frames: list[Frame], env: dict, guard: Any, match, budget: int) -> list[Instance]:
    if not frames:
        return []
    f = frames[-1]
    for pos in range(f.pos - 1, -1, -1):
        s = f.body[pos]
        if match(s):
            return [(guard, prog.site(s), dict(env))]
        here = frames[:-1] + [Frame(f.owner, f.body, pos, f.branch)]
        if isinstance(s, If) and may_contain((s,), match):
            cond = smt.boolean(smt.evaluate(s.cond, env))
            out: list[Instance] = []
            for taken, body in ((True, s.then), (False, s.orelse)):
                side = z3.And(guard, cond if taken else z3.Not(cond))
                out += _scan_back(prog, here + [Frame(s, body, len(body), taken)], env, side, match, budget)
            return out
        sure = isinstance(s, For) and contains(s.body, match)
        if sure or (isinstance(s, For) and budget > 0 and may_contain(s.body, match)):
            assert isinstance(s, For)
            ext = smt.evaluate(s.extent, env) if isinstance(s.extent, Expr) else smt.val(s.extent)
            ran = smt.val(ext) >= 1
            inner_env = dict(env)
            inner_env[s.var] = smt.val(ext) - 1
            inner = _scan_back(
                prog, here + [Frame(s, s.body, len(s.body))], inner_env, z3.And(guard, ran), match,
                budget if sure else budget - 1,
            )  # fmt: skip
            rest = _scan_back(prog, here, env, z3.And(guard, z3.Not(ran)), match, budget)
            return inner + rest
    owner = f.owner
    if isinstance(owner, For) and may_contain(owner.body, match):
        sure = contains(owner.body, match)
        if not sure and budget <= 0:
            return []  # looked through MAYBE_ITERATIONS iterations that may not have run one: none, cautiously
        k = env[owner.var]
        more = smt.val(k) >= 1
        prev_env = dict(env)
        prev_env[owner.var] = smt.val(k) - 1
        prev = _scan_back(
            prog, frames[:-1] + [Frame(owner, owner.body, len(owner.body))], prev_env, z3.And(guard, more), match,
            budget if sure else budget - 1,
        )  # fmt: skip
        out = _scan_back(prog, frames[:-1], env, z3.And(guard, z3.Not(more)), match, budget)
        return prev + out
    return _scan_back(prog, frames[:-1], env, guard, match, budget)


def loop_var_free(e: Expr | int, loops: tuple[For, ...]) -> bool:
    if isinstance(e, int):
        return True
    vs = free_vars(e)
    return not any(lp.var in vs for lp in loops)


def depends_on(e: Expr | int, var: Var) -> bool:
    return not isinstance(e, int) and var in free_vars(e)


def is_space(ref: Any, space: Space) -> bool:
    return isinstance(ref, TileRef) and ref.buffer.space == space
