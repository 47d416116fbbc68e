"""Which thread touches which element: the memory accesses of every statement, as maps from a
thread slot and a value index to a window coordinate (on ints or Z3 terms).

* A copy between a fragment and shared or global memory is done by the fragment's threads, each
  moving the elements its thread–value layout names.
* A copy between global and shared memory (``auto``, ``vector``, ``cp.async``) and a fill of
  shared memory are spread the canonical coalesced way: the window, read row-major, is cut into
  16-byte vectors and consecutive threads take consecutive vectors (the lowering's contract).
* A TMA copy is one thread's instruction (the first of its role) moving the whole box.
* An MMA reading shared memory (``wgmma``) is read by every thread of the group for its sub-tile.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import z3

from argus.atoms.common import WARPGROUP_SIZE as WG
from argus.ir.nodes import Copy, Fill, Gemm, Space, TileRef
from argus.verify import smt
from argus.verify.program import Program, Site, absolute_thread, decompose, window_shape

VECTOR_BYTES = 16


def concrete(x: Any) -> bool:
    return isinstance(x, (int, np.integer, np.ndarray))


def np_layout(layout: Any, crd: Any) -> Any:
    """`layout(crd)` for integer numpy arrays (CuTe's crd2idx: an index at a tuple mode splits
    column-major, the last sub-mode taking the rest; a swizzle XORs bit ranges)."""
    from argus.layout import ComposedLayout, Swizzle

    if isinstance(layout, ComposedLayout):
        x = np_layout(layout.outer, crd) + layout.offset
        inner = layout.inner
        if isinstance(inner, Swizzle):
            bits = x & inner.yyy_mask
            return x ^ (bits >> inner.shift if inner.shift >= 0 else bits << -inner.shift)
        return np_layout(inner, x)
    shape, stride = layout.shape, layout.stride
    if isinstance(crd, tuple) and isinstance(shape, tuple) and len(crd) == len(shape):
        return sum(_np_mode(c, s, d) for c, s, d in zip(crd, shape, stride, strict=True))
    if isinstance(crd, tuple) and len(crd) == 1:
        crd = crd[0]
    return _np_mode(crd, shape, stride)


def _np_mode(c: Any, s: Any, d: Any) -> Any:
    if isinstance(s, tuple):
        from argus.layout.int_tuple import product

        total = 0
        for si, di in zip(s[:-1], d[:-1], strict=True):
            n = product(si)
            total = total + _np_mode(c % n, si, di)
            c = c // n
        return total + _np_mode(c, s[-1], d[-1])
    return c * d


@dataclass(frozen=True, eq=False)
class Access:
    site: Site
    ref: TileRef
    kind: str  # "read" / "write"
    mode: str  # "sync", "cp.async", "tma"
    dist: str  # "fragment", "blocked", "single", "group"
    threads: int  # thread slots
    values: int
    fragment: Any = None  # the fragment buffer for dist == "fragment"
    group: tuple | None = None  # (atom threads, row offset fn, col offset fn, sub-tile) for dist == "group"

    @property
    def op(self) -> str:
        s = self.site.stmt
        if isinstance(s, Copy):
            return f"copy ({s.atom})"
        return type(s).__name__.lower()

    def window(self, t: Any, v: Any) -> tuple[tuple[Any, ...], Any]:
        """(window coordinate, valid) of value `v` of thread slot `t`."""
        shape = tuple(int(x) for x in window_shape(self.ref))
        if concrete(t) and concrete(v):
            return self._window_np(np.asarray(t), np.asarray(v), shape)
        if self.dist == "fragment":
            idx = self.fragment.tv((t, v))
            return decompose(smt.val(idx), shape), True
        size = 1
        for x in shape:
            size *= x
        if self.dist == "blocked":
            vec = vector_elements(self.ref)
            linear = (
                (v // vec) * (self.threads * vec) + t * vec + v % vec
                if isinstance(v, int)
                else (z3.UDiv(smt.val(v), vec) * (self.threads * vec) + smt.val(t) * vec + z3.URem(smt.val(v), vec))
            )
            return _rowmajor(linear, shape), (linear < size) if isinstance(linear, int) else z3.ULT(linear, size)
        if self.dist == "single":
            return _rowmajor(v, shape), True
        if self.dist == "group":
            at, groups, operand, sub = self.group
            g = t // at if isinstance(t, int) else z3.UDiv(smt.val(t), at)
            gm, gn = (
                (g % groups[0], g // groups[0])
                if isinstance(g, int)
                else (z3.URem(g, groups[0]), z3.UDiv(g, groups[0]))
            )
            r, c = decompose(v if isinstance(v, int) else smt.val(v), sub)
            r0 = gm * sub[0] if operand == "A" else 0
            c0 = gn * sub[1] if operand == "B" else 0
            return (r0 + r, c0 + c), True
        raise ValueError(self.dist)

    def _window_np(self, t: np.ndarray, v: np.ndarray, shape: tuple[int, ...]) -> tuple[tuple[Any, ...], Any]:
        size = int(np.prod(shape))
        if self.dist == "fragment":
            idx = np_layout(self.fragment.tv, (t, v))
            return _colmajor_np(idx, shape), np.ones_like(idx, dtype=bool)
        if self.dist == "blocked":
            vec = vector_elements(self.ref)
            linear = (v // vec) * (self.threads * vec) + t * vec + v % vec
            return _rowmajor_np(linear, shape), linear < size
        if self.dist == "single":
            return _rowmajor_np(v + 0 * t, shape), np.ones(np.broadcast(t, v).shape, dtype=bool)
        at, groups, operand, sub = self.group
        g = t // at
        r, c = _colmajor_np(v + 0 * t, sub)
        r0 = (g % groups[0]) * sub[0] if operand == "A" else 0
        c0 = (g // groups[0]) * sub[1] if operand == "B" else 0
        return (r0 + r, c0 + c), np.ones(np.broadcast(t, v).shape, dtype=bool)

    def absolute(self, prog: Program, t: Any) -> Any:
        """The block thread index of thread slot `t`."""
        if self.dist == "fragment":
            return absolute_thread(self.fragment, t, self.site.role)
        role = self.site.role
        if role is None:
            return t
        wgs = role.warpgroups
        if concrete(t):
            return np.asarray(wgs)[np.asarray(t) // WG] * WG + np.asarray(t) % WG
        term = smt.val(0)
        for i, wg in reversed(list(enumerate(wgs))):
            term = z3.If(z3.UDiv(smt.val(t), WG) == i, z3.URem(smt.val(t), WG) + WG * wg, term)
        return term


def vector_elements(ref: TileRef) -> int:
    return max(1, VECTOR_BYTES * 8 // ref.buffer.dtype.bits)


def _colmajor_np(idx: np.ndarray, shape: tuple[int, ...]) -> tuple[np.ndarray, ...]:
    out = []
    for s in shape:
        out.append(idx % s)
        idx = idx // s
    return tuple(out)


def _rowmajor_np(linear: np.ndarray, shape: tuple[int, ...]) -> tuple[np.ndarray, ...]:
    out = []
    for s in reversed(shape):
        out.append(linear % s)
        linear = linear // s
    return tuple(reversed(out))


def _rowmajor(linear: Any, shape: tuple[int, ...]) -> tuple[Any, ...]:
    out = []
    rest = linear
    for s in reversed(shape):
        if isinstance(rest, int):
            out.append(rest % s)
            rest //= s
        else:
            out.append(z3.URem(rest, s) if s > 1 else smt.val(0))
            rest = z3.UDiv(rest, s) if s > 1 else rest
    return tuple(reversed(out))


def accesses(prog: Program) -> list[Access]:
    """Every shared- and global-memory access of the kernel."""
    out: list[Access] = []
    for site in prog.sites:
        s = site.stmt
        nthreads = len(prog.role_threads(site.role))
        if isinstance(s, Copy):
            if s.src.buffer.space == Space.MBARRIER or s.dst.buffer.space == Space.MBARRIER:  # type: ignore[attr-defined]
                continue
            mode = "tma" if s.atom == "tma" else "cp.async" if s.atom == "cp.async" else "sync"
            frag = (
                s.src.buffer
                if s.src.buffer.space == Space.FRAGMENT
                else (s.dst.buffer if s.dst.buffer.space == Space.FRAGMENT else None)
            )
            for ref, kind in ((s.src, "read"), (s.dst, "write")):
                if ref.buffer.space not in (Space.SHARED, Space.GLOBAL):
                    continue
                size = 1
                for x in window_shape(ref):
                    size *= int(x)
                if frag is not None:
                    acc = Access(site, ref, kind, mode, "fragment", frag.threads, frag.values_per_thread, fragment=frag)
                elif mode == "tma":
                    acc = Access(site, ref, kind, mode, "single", 1, size)
                else:
                    vec = vector_elements(ref)
                    per = -(-size // (nthreads * vec)) * vec
                    acc = Access(site, ref, kind, mode, "blocked", nthreads, per)
                out.append(acc)
        elif isinstance(s, Fill) and s.dst.buffer.space == Space.SHARED:
            size = 1
            for x in window_shape(s.dst):
                size *= int(x)
            vec = vector_elements(s.dst)
            out.append(Access(site, s.dst, "write", "sync", "blocked", nthreads, -(-size // (nthreads * vec)) * vec))
        elif isinstance(s, Gemm):
            from argus.atoms import get_atom
            from argus.atoms.mma import group_subtile

            atom = get_atom(s.atom)
            for ref, operand in ((s.a, "A"), (s.b, "B")):
                if ref.buffer.space != Space.SHARED:
                    continue
                full = (s.acc.shape[0], ref.shape[1]) if operand == "A" else (ref.shape[0], s.acc.shape[1])
                sub = group_subtile(operand, full, s.groups)
                out.append(
                    Access(
                        site,
                        ref,
                        "read",
                        "sync",
                        "group",
                        nthreads,
                        sub[0] * sub[1],
                        group=(atom.thread_count, s.groups, operand, sub),
                    )
                )
    return out


def staged(ref: TileRef, site: Site) -> bool:
    """True when the access picks a stage of a multi-stage buffer by a loop variable."""
    from argus.verify.program import depends_on

    for d in ref.dropped:
        o = ref.origin[d]
        if any(depends_on(o, lp.var) for lp in site.loops):
            return True
    return False
