"""Alignment of TMA and vector copies for every allowed problem size (`ALIGN_TMA`, `ALIGN_VECTOR`,
`ALIGN_ASSUMPTION`).

What the generated code relies on, and so what is checked (for all problem sizes satisfying the kernel's
assumptions, ``T.assume`` included, all blocks and loop iterations):

* **TMA** (``atom="tma"``): the tensor map is encoded before each launch, and ``cuTensorMapEncodeTiled``
  (and `argus.runtime.tensor_maps.plan`, which refuses with ``RUNTIME_ARG_TMA``) needs every global
  stride but the innermost to be a multiple of 16 bytes, and the box to satisfy the atom's rules (extents
  in 1..256, the inner extent a multiple of 16 bytes and within the swizzle's width), as
  `argus.atoms.tma.TmaCopyAtom.diagnose` states them. A stride such as ``K * 2`` bytes is checked with Z3
  for all ``K``: without ``T.assume(T.eq(K % 8, 0))`` the kernel cannot be launched for ``K = 4097``,
  which is an `ALIGN_TMA` error with that size.
* **Vectors** (global <-> shared or fragment copies): the lowering picks a static vector width `w` (the
  widest power of two up to 16 bytes that the window's last extent, or the fragment's runs, allow) and
  guards it with a uniform run-time condition: every row stride but the innermost, and the window's
  origin along the contiguous dimension, are multiples of `w`; where that fails, the copy runs element by
  element (and a ``cp.async`` copy synchronously). The generated code is correct either way (the base
  address is checked at launch, ``RUNTIME_ARG_ALIGNMENT``), so the check says which copies lose their
  vectors for some allowed size:

  - a copy that asks for vectors (``atom="vector"`` or ``"cp.async"``) must get them for every allowed
    size, block and iteration: otherwise `ALIGN_VECTOR` (error), with the size, block and iteration;
  - an ``atom="auto"`` copy whose width depends on an undeclared condition gets `ALIGN_ASSUMPTION`
    (a performance warning), with a size for which it falls back.

The shared-memory side of a vector is not checked here: its contiguity is static (the lowering narrows
the width by enumerating the layout) and its base is aligned by the allocator.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import z3

from argus.atoms.copy import tile_lane_exchange
from argus.atoms.errors import AtomError
from argus.atoms.swizzle import swizzle_width
from argus.atoms.tma import IM2COL_OFFSET_MAX, STORE_ROWS_PER_WARPGROUP, tma_load, tma_store
from argus.ir.expr import Expr
from argus.ir.nodes import Buffer, Copy, Space, TileRef
from argus.layout import ComposedLayout
from argus.verify import smt
from argus.verify.access import np_layout
from argus.verify.blame import assumption_blame
from argus.verify.context import Context, Outcome
from argus.verify.program import Site, first_thread, kept
from argus.verify.report import Blame, Counterexample, Element, Finding, ThreadPoint, Verdict, undecided

VECTOR_BYTES = 16
TMA_STRIDE_BYTES = 16
_BOX_CODES = ("ATOM_TMA_BOX", "ATOM_TMA_BOX_INNER", "ATOM_TMA_SWIZZLE_SPAN")


def check_alignment(ctx: Context) -> list[Finding]:
    findings: list[Finding] = []
    for site in ctx.analysis.program.sites:
        s = site.stmt
        if not isinstance(s, Copy):
            continue
        start = time.perf_counter()
        if (s.atom == "tma" and s.src.buffer.space == Space.GLOBAL) or s.atom == "tma.store":
            got = _check_tma(ctx, site, s)
            what = "TMA alignment"
        elif s.atom in ("auto", "vector", "cp.async") and Space.GLOBAL in (s.src.buffer.space, s.dst.buffer.space):
            got = _check_vector(ctx, site, s)
            what = "vector alignment"
        else:
            continue
        findings += got
        verdict = Verdict.VIOLATED if any(f.verdict == Verdict.VIOLATED for f in got) else Verdict.VERIFIED
        ctx.record(what, str(s.loc), verdict, start)
    return findings


def _issuer(site: Site) -> ThreadPoint:
    role = site.role
    return ThreadPoint(first_thread(role), role.name if role else None)


def _strides(buf: Buffer) -> tuple[Expr | int, ...]:
    if buf.strides is not None:
        return tuple(buf.strides)
    out: list[Expr | int] = []
    acc: Expr | int = 1
    for d in reversed(buf.shape):
        out.append(acc)
        acc = acc * d
    return tuple(reversed(out))


def _term(e: Expr | int, env: dict) -> Any:
    return smt.val(smt.evaluate(e, env)) if isinstance(e, Expr) else smt.val(e)


# --- TMA ---------------------------------------------------------------------------------------------------


def _swizzle_bytes(ref: TileRef) -> int:
    layout = ref.layout if ref.layout is not None else ref.buffer.layout
    if isinstance(layout, ComposedLayout) and getattr(layout.inner, "bits", 0):
        return swizzle_width(layout.inner.bits)
    return 0


def _check_tma(ctx: Context, site: Site, s: Copy) -> list[Finding]:
    if s.atom == "tma.store":  # one box per warpgroup and chunk: (chunk columns, 64 rows), 128-byte swizzle
        g, atom = s.dst.buffer, tma_store(s.dst.buffer.rank)
        box: tuple[int, ...] = (int(s.staging.buffer.static_shape[2]), STORE_ROWS_PER_WARPGROUP)  # type: ignore[union-attr]
        swizzle = 128
    else:
        g, atom = s.src.buffer, tma_load(s.src.buffer.rank)
        box = tuple(int(x) for x in reversed(s.src.extent))  # TMA order: the innermost dimension first
        swizzle = _swizzle_bytes(s.dst)
    rank = g.rank
    findings: list[Finding] = []
    try:
        problems: tuple[AtomError, ...] = atom.diagnose(
            dtype=g.dtype,
            global_shape=box,
            global_strides=[TMA_STRIDE_BYTES] * (rank - 1),
            box=box,
            swizzle=swizzle,
        )
    except AtomError as err:
        problems = (err,)
    box_problems = [p for p in problems if p.code in _BOX_CODES]
    if box_problems:
        p = box_problems[0]
        msg = f"TMA box {list(box)} (TMA order) of {g.name}: {p.message} (needs {p.requirement}, got {p.actual})"
        cex = Counterexample(
            code="ALIGN_TMA",
            message=msg,
            op_loc=s.loc,
            program_point=str(s.loc),
            block={v.name: 0 for v in ctx.kernel.block_vars},  # any block: the box is the same in every one
            thread=_issuer(site),
            element=Element(g.name, "global"),
            variables={"box_" + str(i): b for i, b in enumerate(box)} | {"element_bytes": g.dtype.itemsize},
        )
        findings.append(Finding("ALIGN_TMA", Verdict.VIOLATED, msg, loc=s.loc, counterexample=cex))
    if s.atom == "tma" and s.src.im2col is not None:
        findings += _check_im2col_offsets(ctx, site, s)
    # global strides: every one but the innermost a multiple of 16 bytes, for every allowed size
    strides = _strides(g)
    env = dict(ctx.base_env)
    itemsize = g.dtype.itemsize
    for d in range(rank - 1):
        stride_bytes = _term(strides[d], env) * itemsize
        violation = smt.mod(stride_bytes, TMA_STRIDE_BYTES) != 0
        out = _decide(ctx, [], violation)
        if out.verdict == Verdict.UNKNOWN:
            findings.append(undecided(out, f"TMA stride check of {g.name} undecided", loc=s.loc))
            continue
        if out.verdict != Verdict.VIOLATED:
            continue
        m = out.model
        value = smt.model_int(m, stride_bytes)
        shapes = ctx.shape_values(m)
        sizes = ", ".join(f"{k}={v}" for k, v in shapes.items())
        msg = (
            f"TMA copy of {g.name}: the stride of dimension {d} is {strides[d]} elements = {value} bytes for {sizes}, "
            f"not a multiple of {TMA_STRIDE_BYTES} bytes: the tensor map cannot be encoded and the launch is refused "
            "(RUNTIME_ARG_TMA); declare the sizes the kernel is for with T.assume"
        )
        cex = Counterexample(
            code="ALIGN_TMA",
            message=msg,
            op_loc=s.loc,
            program_point=str(s.loc),
            block=ctx.block_values(m),
            shapes=shapes,
            thread=_issuer(site),
            element=Element(g.name, "global", None, None),
            variables={"dimension": d, "stride_bytes": value},
        )
        what = f"{g.name}'s stride {strides[d]} is {value} bytes, not a multiple of {TMA_STRIDE_BYTES}"
        blame = assumption_blame(ctx, [], violation, m, what)
        findings.append(Finding("ALIGN_TMA", Verdict.VIOLATED, msg, loc=s.loc, counterexample=cex, blame=blame))
        break
    return findings


def _check_im2col_offsets(ctx: Context, site: Site, s: Copy) -> list[Finding]:
    """An im2col load's offsets are 16-bit unsigned operands of a width the rank bounds (`IM2COL_OFFSET_MAX`): each in
    ``0 .. max`` at every iteration and block, for every allowed size (outside it the hardware's load is undefined)."""
    g = s.src.buffer
    top = IM2COL_OFFSET_MAX.get(g.rank, 0)
    env, cons = ctx.loop_env(site)
    for branch, taken in site.ifs:
        cond = smt.boolean(smt.evaluate(branch.cond, env))
        cons.append(cond if taken else z3.Not(cond))
    for i, o in enumerate(s.src.im2col.offsets):  # type: ignore[union-attr]
        term = _term(o, env)
        out = ctx.solve(cons, z3.Or(term < 0, term > top))
        if out.verdict == Verdict.UNKNOWN:
            return [undecided(out, f"the range of im2col offset {i} of {g.name} undecided", loc=s.loc)]
        if out.verdict != Verdict.VIOLATED:
            continue
        value = smt.model_int(out.model, term)
        msg = (
            f"TMA im2col load of {g.name}: offset {i} ({o}) is {value}, outside 0 .. {top} for a {g.rank}-d tensor "
            "(16-bit unsigned operands; the load is undefined)"
        )
        cex = Counterexample(
            code="ALIGN_TMA",
            message=msg,
            op_loc=s.loc,
            program_point=str(s.loc),
            block=ctx.block_values(out.model),
            shapes=ctx.shape_values(out.model),
            thread=_issuer(site),
            element=Element(g.name, "global"),
            variables={"offset": i, "value": value},
        )
        return [Finding("ALIGN_TMA", Verdict.VIOLATED, msg, loc=s.loc, counterexample=cex)]
    return []


# --- vectors -----------------------------------------------------------------------------------------------


def _pow2_at_most(n: int) -> int:
    w = 1
    while w * 2 <= n:
        w *= 2
    return w


def _fragment_coords(frag: Buffer) -> list[np.ndarray]:
    """Per tile dimension, the ``(threads, values)`` coordinate of each thread's value (``tv`` split column-major)."""
    threads, values = frag.threads or 1, frag.values_per_thread
    t = np.arange(threads)[:, None]
    v = np.arange(values)[None, :]
    rest = np_layout(frag.tv, (t, v)) * np.ones((threads, values), dtype=np.int64)
    coords = []
    for extent in frag.static_shape:  # column-major tile index -> coordinates
        coords.append(rest % extent)
        rest = rest // extent
    return coords


def _fragment_run(frag: Buffer, limit: int) -> int:
    """The widest power-of-two run (<= `limit`) of consecutive values of every thread that are consecutive,
    run-aligned elements of the fragment's last dimension."""
    shape = frag.static_shape
    values = frag.values_per_thread
    coords = _fragment_coords(frag)
    last = coords[-1]
    w = _pow2_at_most(min(limit, shape[-1], values))
    while w > 1:
        ok = values % w == 0 and bool(np.all(last[:, ::w] % w == 0))
        for i in range(1, w):
            if not ok:
                break
            ok = bool(np.all(last[:, i::w] == last[:, ::w] + i)) and all(
                bool(np.all(c[:, i::w] == c[:, ::w])) for c in coords[:-1]
            )
        if ok:
            return w
        w //= 2
    return 1


def _exchanged_run(frag: Buffer, itemsize: int) -> int:
    """Elements per store of the fragment's stores after a lane exchange (`argus.atoms.copy.tile_lane_exchange`,
    the plan the lowering uses), 1 when there is none."""
    coords = _fragment_coords(frag)
    plan = tile_lane_exchange(np.stack(coords, axis=-1), len(coords) - 1, itemsize)
    return plan.vector if plan is not None else 1


def _check_vector(ctx: Context, site: Site, s: Copy) -> list[Finding]:
    g_ref, other = (s.src, s.dst) if s.src.buffer.space == Space.GLOBAL else (s.dst, s.src)
    g = g_ref.buffer
    # the lowering's vector limit: 16 bytes of the wider side for block copies, of memory's side for fragments
    fragment = other.buffer.space == Space.FRAGMENT
    itemsize = g.dtype.itemsize if fragment else max(s.src.dtype.itemsize, s.dst.dtype.itemsize)
    limit = max(1, VECTOR_BYTES // itemsize)
    shape = tuple(int(x) for x in g_ref.shape)
    if not shape:
        return []
    if fragment:
        width = _fragment_run(other.buffer, limit) if other.is_whole() else 1
        if width > 1 and g_ref is s.dst:  # a store: widened to 16-byte runs by a lane exchange where there is one
            width = max(width, _exchanged_run(other.buffer, itemsize))
    else:
        width = _pow2_at_most(min(limit, shape[-1]))
        while width > 1 and shape[-1] % width:
            width //= 2
    explicit = s.atom in ("vector", "cp.async")
    if width == 1 and not explicit:
        return []
    ks = kept(g_ref)
    strides = _strides(g)
    contiguous = bool(ks) and ks[-1] == g.rank - 1 and (strides[-1] == 1 or getattr(strides[-1], "value", None) == 1)
    env, cons = ctx.loop_env(site)
    t = smt.fresh("t")
    cons.append(smt.in_range(t, 0, ctx.kernel.threads))
    env[ctx.kernel.thread_var] = t
    for branch, taken in site.ifs:
        cond = smt.boolean(smt.evaluate(branch.cond, env))
        cons.append(cond if taken else z3.Not(cond))
    if not contiguous:
        if not explicit:
            return []
        msg = (
            f"T.copy(..., atom={s.atom!r}) of {g.name}: the window's last dimension is not the tensor's contiguous "
            "one, so no run of it is a vector: the copy is made element by element"
        )
        return [_vector_finding(ctx, site, s, g, msg, None, {}, width)]

    def conditions(w: int) -> list[Any]:
        out = [smt.mod(_term(strides[d], env), w) == 0 for d in range(g.rank) if d != ks[-1]]
        out.append(smt.mod(_term(g_ref.origin[ks[-1]], env), w) == 0)
        return out

    def possible(w: int) -> bool:  # true by their form (a multiple of 128 for 8 elements), else some size allows them
        held = z3.And(*conditions(w))
        return z3.is_true(z3.simplify(held)) or _decide(ctx, cons, held).verdict == Verdict.VIOLATED

    if not explicit:  # the static width: the widest the conditions allow for some size
        while width > 1 and not possible(width):
            width //= 2
        if width == 1:
            return []
    violation = z3.Not(z3.And(*conditions(width)))
    out = _decide(ctx, cons, violation)
    if out.verdict == Verdict.UNKNOWN:
        return [undecided(out, f"vector alignment of the copy of {g.name} undecided", loc=s.loc)]
    if out.verdict != Verdict.VIOLATED:
        return []
    m = out.model
    run_d = ks[-1]
    values = {
        "vector_elements": width,
        "origin": smt.model_int(m, _term(g_ref.origin[run_d], env)),
    }
    for d in range(g.rank):
        if d != run_d:
            values[f"stride_{d}"] = smt.model_int(m, _term(strides[d], env))
    bad = [
        f"the stride of dimension {d} ({strides[d]} = {values[f'stride_{d}']})"
        for d in range(g.rank)
        if d != run_d and values[f"stride_{d}"] % width
    ]
    if values["origin"] % width:
        bad.append(f"the window's first column ({values['origin']})")
    sizes = ", ".join(f"{k}={v}" for k, v in ctx.shape_values(m).items())
    why = " and ".join(bad) or "a row start"
    fallback = "synchronously, element by element" if s.atom == "cp.async" else "element by element"
    msg = (
        f"T.copy(..., atom={s.atom!r}) of {g.name} moves {width * itemsize}-byte vectors of {width} elements, but for "
        f"{sizes} {why} is not a multiple of {width}: the vectors are misaligned and the copy runs {fallback}"
    )
    coord = tuple(smt.model_int(m, _term(o, env)) if isinstance(o, Expr) else int(o) for o in g_ref.origin)
    blame = assumption_blame(ctx, cons, violation, m, f"{why} is not a multiple of {width}")
    return [_vector_finding(ctx, site, s, g, msg, m, values, width, coord, explicit, env, blame)]


def _vector_finding(
    ctx: Context,
    site: Site,
    s: Copy,
    g: Buffer,
    msg: str,
    m: Any,
    values: dict[str, int],
    width: int,
    coord: tuple[int, ...] | None = None,
    explicit: bool = True,
    env: dict | None = None,
    blame: Blame | None = None,
) -> Finding:
    code = "ALIGN_VECTOR" if explicit else "ALIGN_ASSUMPTION"
    cex = Counterexample(
        code=code,
        message=msg,
        op_loc=s.loc,
        program_point=str(s.loc),
        block=ctx.block_values(m) if m is not None else {v.name: 0 for v in ctx.kernel.block_vars},
        shapes=ctx.shape_values(m) if m is not None else {},
        thread=_issuer(site),
        loops=ctx.loop_values(m, site, env) if m is not None and env is not None else {},
        element=Element(g.name, "global", None, coord),
        variables=values,
    )
    return Finding(code, Verdict.VIOLATED, msg, loc=s.loc, counterexample=cex, blame=blame)


def _decide(ctx: Context, cons: list[Any], violation: Any) -> Outcome:
    """`ctx.solve`, but a violation that Z3's simplifier rewrites to false (``(x % y) * 128 & 7 != 0``: a multiple of
    128 is a multiple of 8) is decided there: bit-blasting the division it no longer needs took one alignment query
    of the persistent implicit convolution 25 s. Only here: the terms the simplifier builds move the budgets of the
    queries after them (`argus.verify.engine`), and a coverage witness found within its budget was lost that way
    when every check's queries went through it."""
    if z3.is_false(z3.simplify(violation)):
        return Outcome(Verdict.VERIFIED)
    return ctx.solve(cons, violation)
