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
from argus.ir.expr import Expr, Var, VarKind, free_vars
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
            per = _count_body(f.owner.body, match, env)
            if not _is_zero(per):
                _independent(f.owner)
                total = total + env[f.owner.var] * per  # the earlier iterations, each a full body
    return total


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
    least once; branches and other roles' bodies do not count)."""
    for s in body:
        if match(s):
            return True
        if isinstance(s, For) and contains(s.body, match):
            return True
    return False


Instance = tuple[Any, Site, dict]  # (guard, site, env)


def latest_before(prog: Program, site: Site, env: dict, match: Callable[[Stmt], bool]) -> list[Instance]:
    """The latest executed instance of a statement matching `match` before `site` at `env`, as
    mutually exclusive alternatives ``(guard, site, env)``; no alternative holds when there is none."""
    return _scan_back(prog, list(site.frames), env, z3.BoolVal(True), match)


def _scan_back(prog: Program, frames: list[Frame], env: dict, guard: Any, match) -> list[Instance]:
    if not frames:
        return []
    f = frames[-1]
    for pos in range(f.pos - 1, -1, -1):
        s = f.body[pos]
        if match(s):
            return [(guard, prog.site(s), dict(env))]
        if isinstance(s, For) and contains(s.body, match):
            ext = smt.evaluate(s.extent, env) if isinstance(s.extent, Expr) else smt.val(s.extent)
            ran = smt.val(ext) >= 1
            inner_env = dict(env)
            inner_env[s.var] = smt.val(ext) - 1
            inner = _scan_back(
                prog,
                frames[:-1] + [Frame(f.owner, f.body, pos, f.branch), Frame(s, s.body, len(s.body))],
                inner_env,
                z3.And(guard, ran),
                match,
            )
            rest = _scan_back(
                prog, frames[:-1] + [Frame(f.owner, f.body, pos, f.branch)], env, z3.And(guard, z3.Not(ran)), match
            )
            return inner + rest
    owner = f.owner
    if isinstance(owner, For) and contains(owner.body, match):
        k = env[owner.var]
        more = smt.val(k) >= 1
        prev_env = dict(env)
        prev_env[owner.var] = smt.val(k) - 1
        prev = _scan_back(
            prog, frames[:-1] + [Frame(owner, owner.body, len(owner.body))], prev_env, z3.And(guard, more), match
        )
        out = _scan_back(prog, frames[:-1], env, z3.And(guard, z3.Not(more)), match)
        return prev + out
    return _scan_back(prog, frames[:-1], env, guard, match)


def loop_var_free(e: Expr | int, loops: tuple[For, ...]) -> bool:
    if isinstance(e, int):
        return True
    vs = free_vars(e)
    return not any(lp.var in vs for lp in loops)


def depends_on(e: Expr | int, var: Var) -> bool:
    return not isinstance(e, int) and var in free_vars(e)


def is_space(ref: Any, space: Space) -> bool:
    return isinstance(ref, TileRef) and ref.buffer.space == space
