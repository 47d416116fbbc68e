"""Shared-memory layouts the Hopper atoms impose (`LAYOUT_TMA_BOX`, `LAYOUT_WGMMA_OPERAND`).

The interpreter reads and writes shared memory through each buffer's layout, so a tile laid out in a way the
hardware cannot produce or consume still computes the right numbers there. Two atoms fix the layout:

* a **TMA load** writes its box densely, row-major over the box, swizzled by one of Hopper's modes
  (`argus.atoms.smem.tma_box_swizzle`): the destination window, relative to its first element, must be laid out
  exactly so, in every stage. A tile wider than the swizzle span (e.g. a 256-column MN-major operand) is loaded
  as several boxes, one per panel (`T.alloc_shared(..., panels=True)` and ``stage.window(...)``);
* a **wgmma** operand in shared memory is read through a matrix descriptor: each warpgroup's sub-tile of each
  k16 step must be one of PTX's canonical layouts, K-major or (16-bit types) MN-major, with one leading and one
  stride byte offset for every stage and warpgroup (`argus.atoms.smem.match_canonical`).

Both are facts of `argus.atoms.smem`, which the code generator applies as well; here they are checked on the IR,
so that a kernel the code generator would refuse, or one whose layout a later change breaks, fails verification
with the operation's line rather than only at compile time. Windows whose position is not static in their kept
dimensions are left alone (the code generator refuses those itself).
"""

from __future__ import annotations

import itertools
import math
import time
from typing import Any

import numpy as np

from argus.atoms import MmaAtom, get_atom
from argus.atoms.smem import match_canonical, swizzle_mode_of, tma_box_swizzle
from argus.ir.nodes import Copy, Gemm, Space, TileRef
from argus.layout import ComposedLayout, Layout, Swizzle
from argus.verify.access import np_layout
from argus.verify.context import Context
from argus.verify.program import first_thread
from argus.verify.report import Counterexample, Element, Finding, ThreadPoint, Verdict

#: Most stage assignments enumerated per window.
MAX_PLACEMENTS = 64


def check_smem_layouts(ctx: Context) -> list[Finding]:
    findings: list[Finding] = []
    for site in ctx.analysis.program.sites:
        s = site.stmt
        if isinstance(s, Copy) and s.atom == "tma" and s.dst.space == Space.SHARED:
            start = time.perf_counter()
            got = _check_tma_box(ctx, site, s)
            what = "TMA box layout"
        elif isinstance(s, Gemm) and Space.SHARED in (s.a.space, s.b.space):
            atom = get_atom(s.atom)
            if not (isinstance(atom, MmaAtom) and atom.ptx.startswith("wgmma.")):
                continue
            start = time.perf_counter()
            got = _check_wgmma(ctx, site, s, atom)
            what = "wgmma operand layout"
        else:
            continue
        findings += got
        ctx.record(what, str(s.loc), Verdict.VIOLATED if got else Verdict.VERIFIED, start)
    return findings


def _layout(ref: TileRef) -> Any:
    return ref.layout if ref.layout is not None else ref.buffer.layout


def _offsets(ref: TileRef, window: np.ndarray, layout: Any) -> np.ndarray | None:
    """Element offsets under `layout` of window coordinates ``(N, rank)``, one row per assignment of the dropped
    dimensions (stages): ``(S, N)``; None when a kept dimension's origin is not static or there are too many."""
    if any(not isinstance(ref.origin[d], int) for d in ref.kept):
        return None
    shape = ref.buffer.static_shape
    dropped = [d for d in range(len(ref.origin)) if d not in ref.kept]
    choices = [[int(ref.origin[d])] if isinstance(ref.origin[d], int) else range(shape[d]) for d in dropped]
    if math.prod(len(c) for c in choices) > MAX_PLACEMENTS:
        return None
    rows = []
    for values in itertools.product(*choices):
        assignment = dict(zip(dropped, values, strict=True))
        crd = tuple(
            int(ref.origin[d]) + window[:, ref.kept.index(d)]
            if d in ref.kept
            else np.full(window.shape[0], assignment[d], dtype=np.int64)
            for d in range(len(ref.origin))
        )
        rows.append(np.asarray(np_layout(layout, crd), dtype=np.int64))
    return np.stack(rows)


def _finding(ctx: Context, site: Any, s: Any, code: str, buffer: str, message: str, **variables: int) -> Finding:
    role = site.role
    cex = Counterexample(
        code=code,
        message=message,
        op_loc=s.loc,
        program_point=str(s.loc),
        block={v.name: 0 for v in ctx.kernel.block_vars},  # any block: shared layouts are the same in every one
        thread=ThreadPoint(first_thread(role), role.name if role else None),
        element=Element(buffer, "shared"),
        variables=dict(variables),
    )
    return Finding(code, Verdict.VIOLATED, message, loc=s.loc, counterexample=cex)


def _check_tma_box(ctx: Context, site: Any, s: Copy) -> list[Finding]:
    dst = s.dst
    shape = tuple(dst.shape)
    window = np.indices(shape).reshape(len(shape), -1).T  # row-major: TMA's box order
    offsets = _offsets(dst, window, _layout(dst))
    if offsets is None:
        return []
    if tma_box_swizzle(offsets - offsets[:, :1], shape, dst.dtype.bits) is not None:
        return []
    inner_bytes = shape[-1] * dst.dtype.itemsize
    message = (
        f"TMA box {list(shape)} into {dst.buffer.name} (layout {_layout(dst)}): TMA writes a box densely, row-major, "
        "with a Hopper swizzle, and no swizzle mode lays these elements out where the buffer's layout puts them"
        + (
            f"; the box's rows are {inner_bytes} bytes, wider than a 128-byte swizzle span: allocate the buffer in "
            "panels (T.alloc_shared(..., swizzle=128, panels=True)) and load one box per panel (stage.window(...))"
            if inner_bytes > 128
            else ""
        )
    )
    return [_finding(ctx, site, s, "LAYOUT_TMA_BOX", dst.buffer.name, message, box_inner_bytes=inner_bytes)]


def _check_wgmma(ctx: Context, site: Any, s: Gemm, atom: MmaAtom) -> list[Finding]:
    am, an, ak = atom.shape
    gm, gn = s.groups
    m, k = s.a.shape
    n = s.b.shape[1]
    if k % ak or m != gm * am or n != gn * an:
        return []  # the MMA checks and the code generator report tiles the atom does not cover
    findings = []
    for name, ref, mn_dim, k_dim, sub, groups in (("A", s.a, 0, 1, am, gm), ("B", s.b, 1, 0, an, gn)):
        if ref.space != Space.SHARED:
            continue
        layout = _layout(ref)
        if isinstance(layout, ComposedLayout) and isinstance(layout.inner, Swizzle):
            outer, sw, offset = layout.outer, layout.inner, layout.offset
        elif isinstance(layout, Layout):
            outer, sw, offset = layout, None, 0
        else:
            outer = sw = None
        width = swizzle_mode_of(sw, ref.dtype.bits) if outer is not None else None
        if width is None:
            if _offsets(ref, np.zeros((1, 2), dtype=np.int64), layout) is None:
                continue  # not static: the code generator refuses it itself
            why = "its swizzle is none of Hopper's modes (32, 64, 128 bytes or none)"
        else:
            sub_tiles = _sub_tiles(ref, outer, offset, mn_dim, k_dim, sub, groups, k // ak, ak)
            if sub_tiles is None or match_canonical(sub_tiles, sub, ak, ref.dtype, width) is not None:
                continue
            why = (
                f"no canonical wgmma shared-memory layout matches its {sub}x{ak} sub-tiles (K-major, or MN-major for "
                "16-bit types, built from swizzle atoms with one leading and one stride byte offset, both "
                "non-negative, for every stage and warpgroup)"
            )
        message = (
            f"wgmma operand {name} ({ref.buffer.name}, layout {layout}): {why}, so no matrix descriptor can describe it"
        )
        findings.append(_finding(ctx, site, s, "LAYOUT_WGMMA_OPERAND", ref.buffer.name, message))
    return findings


def _sub_tiles(
    ref: TileRef, outer: Any, offset: int, mn_dim: int, k_dim: int, sub: int, groups: int, steps: int, ak: int
) -> list[np.ndarray] | None:
    """Pre-swizzle offsets ``(S, sub * ak)`` of every warpgroup's sub-tile of every k step (as the code generator
    describes them with descriptors), or None when the window's position is not static."""
    mn, kk = np.meshgrid(np.arange(sub), np.arange(ak), indexing="ij")
    out = []
    for g in range(groups):
        for step in range(steps):
            coords = np.zeros((mn.size, 2), dtype=np.int64)
            coords[:, mn_dim] = g * sub + mn.ravel()
            coords[:, k_dim] = step * ak + kk.ravel()
            pre = _offsets(ref, coords, outer)
            if pre is None:
                return None
            out.append(pre + offset)
    return out
