"""The MMA rules: ``T.gemm`` with ``mma.sync``, with the per-thread FMA atom, and with ``wgmma``.

* ``mma.sync`` reads operand registers in the atom's own convention (value ``i + values_per_atom * repeat``),
  as the interpreter does, one call of a per-atom helper (`prelude.mma_snippet`) per (m, n, k) repeat;
* the per-thread FMA atom: each thread runs unrolled ``__fmaf_rn`` loops over its registers in that same
  convention;
* ``wgmma`` with both operands in shared memory: ``wgmma.fence``, one ``wgmma.mma_async`` per k16 step with
  matrix descriptors fitted (and checked by enumeration) to the buffers' layouts, ``commit_group``,
  ``wait_group`` with the `Gemm`'s ``pending`` (1 in a loop the deferred-release pass rewrote); accumulators are the
  fragment's registers in the atom's C order; ``fence.proxy.async`` plus a scope barrier first when an operand
  buffer is written by ordinary stores somewhere in the kernel. An operand sub-tile (one warpgroup's rows, one
  k16 step) must be one of PTX's canonical layouts (`argus.atoms.smem.match_canonical`) with a leading and a
  stride byte offset (`DescriptorPlan`), for every stage;
* ``wgmma`` with A from registers (the ``.rs`` atoms): A is a fragment laid out for the atom, passed as four 32-bit
  registers per k16 step in the atom's register order (as ``mma.sync`` reads its fragments), B as above.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from argus.atoms import MmaAtom, Scope, get_atom
from argus.atoms.smem import Major, match_canonical, swizzle_mode_of
from argus.atoms.swizzle import DESCRIPTOR_SWIZZLE_ENCODING, SWIZZLE_REPEAT_BYTES
from argus.backend.cuda.codegen import prelude
from argus.backend.cuda.codegen.addressing import Window
from argus.backend.cuda.codegen.cexpr import add, convert, layout_at_coords, mul, paren
from argus.backend.cuda.codegen.context import WARPGROUP, Context
from argus.backend.cuda.codegen.sync import scope_barrier
from argus.ir.nodes import Buffer, Gemm, Space
from argus.layout import ComposedLayout, Layout, Swizzle


def gemm(cx: Context, s: Gemm) -> None:
    """`Gemm`, by atom: ``wgmma``, the per-thread FMA, or ``mma.sync``."""
    atom = get_atom(s.atom)
    if isinstance(atom, MmaAtom) and atom.ptx.startswith("wgmma."):
        wgmma(cx, s, atom)
        return
    if isinstance(atom, MmaAtom) and atom.scope is Scope.THREAD:
        fma_gemm(cx, s, atom)
        return
    if not isinstance(atom, MmaAtom) or atom.thread_count != 32 or not atom.ptx.startswith("mma.sync"):
        raise cx.error(f"{s.atom} (Gemm with a warpgroup MMA)", "wgmma lowering comes with the Hopper pipeline")
    mma_sync(cx, s, atom)


def _open_loop(cx: Context, var: str, extent: int) -> int:
    """An unrolled ``for`` over `var` (nothing for an extent of 1); how many braces it opened."""
    if extent == 1:
        return 0
    cx.line("#pragma unroll")
    cx.open(f"for (int {var} = 0; {var} < {extent}; ++{var}) {{")
    return 1


def _fragment_operands(cx: Context, s: Gemm, atom_name: str, hint: str) -> None:
    for name, ref in (("a", s.a), ("b", s.b), ("acc", s.acc)):
        if ref.space != Space.FRAGMENT:
            raise cx.error(f"T.gemm with {atom_name} reading operand {name} from {ref.space.value} memory", hint)
        if not ref.is_whole():
            raise cx.error(f"T.gemm on part of fragment {ref.buffer.name}")


# --- mma.sync ---------------------------------------------------------------------------------------------------


def _mma_sync_tiling(cx: Context, s: Gemm, atom: MmaAtom) -> tuple[tuple[int, int], tuple[int, int, int], dict]:
    """The warp's sub-tile, the atom's repeats over it (m, n, k), and the 32-bit registers per atom of each
    operand; checks that the operand fragments hold what the atom reads."""
    _fragment_operands(cx, s, "mma.sync", "copy the operand into a fragment first: T.copy(sA, rA, atom='ldmatrix')")
    gm, gn = s.groups
    m, k = s.a.shape
    _, n = s.b.shape
    sub_m, sub_n = m // gm, n // gn
    am, an, ak = atom.shape
    rep_m, rep_n, rep_k = sub_m // am, sub_n // an, k // ak
    if gm * gn * atom.thread_count != cx.threads or rep_m * am != sub_m or rep_n * an != sub_n:
        raise cx.invalid(f"{atom.name} over {gm}x{gn} groups does not tile a {m}x{n} accumulator")
    counts = {
        "A": (s.a.buffer, atom.values_per_thread("A"), atom.a_dtype, rep_m * rep_k),
        "B": (s.b.buffer, atom.values_per_thread("B"), atom.b_dtype, rep_k * rep_n),
        "C": (s.acc.buffer, atom.values_per_thread("C"), atom.acc_dtype, rep_m * rep_n),
    }
    regs: dict[str, int] = {}
    for operand, (buf, per_atom, dtype, repeats) in counts.items():
        if buf.values_per_thread != per_atom * repeats:
            raise cx.invalid(
                f"{buf.name} holds {buf.values_per_thread} values per thread; {atom.name} over this tile reads "
                f"{per_atom * repeats}"
            )
        if buf.dtype != dtype:
            raise cx.invalid(f"{buf.name} is {buf.dtype.name}; {atom.name} takes {dtype.name} for {operand}")
        regs[operand] = per_atom * dtype.bits // 32 if dtype.bits < 32 else per_atom
    return (sub_m, sub_n), (rep_m, rep_n, rep_k), regs


def mma_sync(cx: Context, s: Gemm, atom: MmaAtom) -> None:
    """Every warp runs the atom over its sub-tile: loops over the k, m and n repeats around one helper call."""
    (sub_m, sub_n), (rep_m, rep_n, rep_k), regs = _mma_sync_tiling(cx, s, atom)
    helper = prelude.mma_function_name(atom)
    cx.needs.extra_snippets[helper] = prelude.mma_snippet(atom)
    cx.use("registers")
    cx.dtype_c(atom.a_dtype)
    a, b, c = (cx.buffer_name(x.buffer) for x in (s.a, s.b, s.acc))
    mm, nn, kk = (cx.local(v) if extent > 1 else "0" for v, extent in (("m", rep_m), ("n", rep_n), ("k", rep_k)))
    cx.line(
        f"// per warp: {rep_m} x {rep_n} x {rep_k} {atom.name} on its ({sub_m}, {sub_n}) sub-tile; operand "
        "registers in the atom's order (value i + values_per_atom * repeat)"
    )
    a_rep = add(mm, mul(kk, rep_m))
    b_rep = add(kk, mul(nn, rep_k))
    c_rep = add(mm, mul(nn, rep_m))
    cx.dtype_c(atom.acc_dtype)

    def registers(name: str, operand: str, rep: str, packed: bool) -> list[str]:
        out = []
        for i in range(regs[operand]):
            index = add(mul(paren(rep), regs[operand]), i) if rep != "0" else str(i)
            out.append(f"argus::reg({name}, {index})" if packed else f"{name}[{index}]")
        return out

    args = (
        registers(c, "C", c_rep, atom.acc_dtype.bits < 32)
        + registers(a, "A", a_rep, True)
        + registers(b, "B", b_rep, True)
    )
    opened = sum(_open_loop(cx, var, extent) for var, extent in ((kk, rep_k), (mm, rep_m), (nn, rep_n)))
    cx.line(f"argus::{helper}({', '.join(args)});")
    for _ in range(opened):
        cx.close()
    cx.forget(mm, nn, kk)  # scoped to their loops


# --- the per-thread FMA atom ---------------------------------------------------------------------------------------


def fma_gemm(cx: Context, s: Gemm, atom: MmaAtom) -> None:
    """``T.gemm`` with the per-thread FMA atom: every thread multiplies its own registers, ``(SM, K)`` of A
    by ``(K, SN)`` of B into its ``(SM, SN)`` accumulator micro-tile, one ``fma.rn.f32`` per product. The
    registers are read in the atom's convention (value ``r + rows * c`` is element ``(r, c)`` of the
    thread's sub-tile: the repeats of a 1x1x1 atom, rows first), as the interpreter reads them."""
    hint = "copy the operand into a fragment allocated with the same atom first: T.copy(sA, rA)"
    _fragment_operands(cx, s, atom.name, hint)
    if atom.shape != (1, 1, 1) or atom.thread_count != 1:
        raise cx.error(f"{atom.name}: a per-thread MMA atom other than 1x1x1 on one thread")
    gm, gn = s.groups
    m, k = s.a.shape
    _, n = s.b.shape
    sub_m, sub_n = m // gm, n // gn
    if gm * gn != cx.threads or sub_m * gm != m or sub_n * gn != n:
        raise cx.invalid(f"{atom.name} over {gm}x{gn} threads does not tile a {m}x{n} accumulator")
    for ref, dtype, values in (
        (s.a, atom.a_dtype, sub_m * k),
        (s.b, atom.b_dtype, k * sub_n),
        (s.acc, atom.acc_dtype, sub_m * sub_n),
    ):
        if ref.buffer.values_per_thread != values:
            raise cx.invalid(
                f"{ref.buffer.name} holds {ref.buffer.values_per_thread} values per thread; {atom.name} over "
                f"this tile reads {values}"
            )
        if ref.buffer.dtype != dtype:
            raise cx.invalid(f"{ref.buffer.name} is {ref.buffer.dtype.name}; {atom.name} takes {dtype.name}")
    a, b, c = (cx.buffer_name(x.buffer) for x in (s.a, s.b, s.acc))
    a_c, b_c = cx.dtype_c(atom.a_dtype), cx.dtype_c(atom.b_dtype)
    cx.dtype_c(atom.acc_dtype)
    cx.line(
        f"// per thread: its ({sub_m}, {k}) rows of A times its ({k}, {sub_n}) columns of B into its "
        f"({sub_m}, {sub_n}) accumulator, {atom.ptx}"
    )
    with cx.block():  # the loop variables and a_value are local to this gemm
        mm, nn, kk = (cx.local(v) if e > 1 else "0" for v, e in (("m", sub_m), ("n", sub_n), ("k", k)))
        a_value = cx.local("a_value")
        opened = _open_loop(cx, kk, k) + _open_loop(cx, mm, sub_m)
        a_element = f"{a}[{add(mm, mul(kk, sub_m))}]"  # converted once, then met by the thread's columns
        cx.line(f"const float {a_value} = {convert(a_element, a_c, 'float')};")
        opened += _open_loop(cx, nn, sub_n)
        b_value = convert(f"{b}[{add(kk, mul(nn, k))}]", b_c, "float")
        acc = f"{c}[{add(mm, mul(nn, sub_m))}]"
        cx.line(f"{acc} = __fmaf_rn({a_value}, {b_value}, {acc});")
        for _ in range(opened):
            cx.close()


# --- wgmma ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DescriptorPlan:
    """How one ``wgmma`` operand is described: swizzle mode (bytes), major-ness, LBO and SBO (bytes)."""

    swizzle: int
    major: Major
    lbo: int
    sbo: int

    @property
    def mode(self) -> int:
        return DESCRIPTOR_SWIZZLE_ENCODING[self.swizzle]

    @property
    def trans(self) -> int:
        return 1 if self.major is Major.MN else 0


def _wgmma_tiling(cx: Context, s: Gemm, atom: MmaAtom) -> tuple[int, int, int]:
    """The warpgroup's sub-tile (m, n) and the number of k steps; checks operands, shapes and the accumulator."""
    registers = atom.a_source.value == "registers"
    if s.b.space != Space.SHARED or s.a.space != (Space.FRAGMENT if registers else Space.SHARED):
        where = "A in a fragment and B" if registers else "A and B"
        raise cx.error(
            f"{atom.name} with operands A in {s.a.space.value}, B in {s.b.space.value}",
            f"keep {where} in shared memory",
        )
    if s.acc.space != Space.FRAGMENT or not s.acc.is_whole():
        raise cx.error(f"{atom.name} accumulating into something other than a whole fragment")
    acc = s.acc.buffer
    if acc.dtype.bits != 32 or atom.acc_dtype != acc.dtype:
        raise cx.error(f"{atom.name} with a {acc.dtype.name} accumulator", "accumulate in f32")
    am, an, ak = atom.shape
    gm, gn = s.groups
    m, k = s.a.shape
    kb, n = s.b.shape
    if kb != k or s.acc.shape != (m, n):
        raise cx.invalid(f"gemm shapes {s.a.shape} @ {s.b.shape} -> {s.acc.shape}")
    sub_m, sub_n = m // gm, n // gn
    if (sub_m, sub_n) != (am, an) or k % ak:
        raise cx.error(
            f"{atom.name} over a {m}x{n}x{k} tile in {gm}x{gn} warpgroups (one m{am}n{an} atom per warpgroup "
            f"and k a multiple of {ak} are lowered)"
        )
    if gm * gn * atom.thread_count != cx.threads:
        raise cx.invalid(f"{atom.name} over {gm}x{gn} warpgroups, but the scope has {cx.threads} threads")
    if acc.values_per_thread != atom.values_per_thread("C"):
        raise cx.invalid(
            f"{acc.name} holds {acc.values_per_thread} values per thread; {atom.name} writes "
            f"{atom.values_per_thread('C')}"
        )
    if registers:
        a = s.a.buffer
        if not s.a.is_whole() or a.atom != atom.name or a.dtype != atom.a_dtype or tuple(s.groups) != (gm, 1):
            raise cx.invalid(f"{atom.name}: A must be a whole {atom.a_dtype.name} fragment laid out for the atom")
        if a.values_per_thread != atom.values_per_thread("A") * (k // ak):
            raise cx.invalid(
                f"{a.name} holds {a.values_per_thread} values per thread; {atom.name} reads "
                f"{atom.values_per_thread('A')} per k step"
            )
    return sub_m, sub_n, k // ak


def wgmma(cx: Context, s: Gemm, atom: MmaAtom) -> None:
    """One ``wgmma.mma_async`` per k step on descriptors of the operands' sub-tiles, then commit and wait."""
    sub_m, sub_n, k_steps = _wgmma_tiling(cx, s, atom)
    if atom.a_source.value == "registers":
        _wgmma_registers(cx, s, atom, sub_n, k_steps)
        return
    ak = atom.shape[2]
    gm, gn = s.groups
    wa, wb = Window(cx, s.a), Window(cx, s.b)
    plan_a, steps_a = _descriptor_plan(cx, wa, "A", mn_dim=0, k_dim=1, sub=sub_m, groups=gm, k_steps=k_steps, ak=ak)
    plan_b, steps_b = _descriptor_plan(cx, wb, "B", mn_dim=1, k_dim=0, sub=sub_n, groups=gn, k_steps=k_steps, ak=ak)
    helper = prelude.wgmma_function_name(atom)
    cx.needs.extra_snippets[helper] = prelude.wgmma_snippet(atom)
    cx.use("wgmma")
    cx.use("smem_address")
    for ref in (s.a, s.b):
        if ref.buffer in cx.facts.generic_shared_writes:
            cx.line(f"// {ref.buffer.name} is written by ordinary stores: make them visible to the async proxy")
            cx.line('asm volatile("fence.proxy.async.shared::cta;\\n" ::: "memory");')
            cx.line(scope_barrier(cx))
            break
    with cx.block():
        wg = "0"
        if gm * gn > 1:
            wg = cx.local("warpgroup")
            if cx.switches.uniform_warpgroup:  # the same in every lane of the warp, as the compiler then knows
                cx.line(f"const int {wg} = __shfl_sync(0xffffffffu, {cx.tid} / {WARPGROUP}, 0);")
            else:
                cx.line(f"const int {wg} = {cx.tid} / {WARPGROUP};")
        g_m = wg if gn == 1 else f"{paren(wg)} % {gm}"
        g_n = wg if gm == 1 else f"{paren(wg)} / {gm}"
        g_m = "0" if gm == 1 else g_m
        g_n = "0" if gn == 1 else g_n
        starts = {}
        for name, w, plan, g, sub, mn_dim in (("a", wa, plan_a, g_m, sub_m, 0), ("b", wb, plan_b, g_n, sub_n, 1)):
            var = cx.local(f"{name}_base")
            win = ["0", "0"]
            win[mn_dim] = mul(g, sub) if g != "0" else "0"
            pre = _pre_swizzle_c(w, win)
            base = cx.buffer_name(w.buffer)
            cx.line(
                f"const unsigned {var} = argus::smem_u32({base}) + {w.buffer.dtype.itemsize} * {paren(pre)};  "
                f"// {name.upper()}: {plan.major}-major, {plan.swizzle}-byte swizzle, "
                f"LBO {plan.lbo}, SBO {plan.sbo}"
            )
            desc = cx.local(f"{name}_desc")
            cx.line(
                f"const unsigned long long {desc} = argus::wgmma_descriptor({var}, {plan.lbo}, {plan.sbo}, "
                f"{plan.mode});  // k step kk: + its byte offset / 16 (the start address field)"
            )
            starts[name] = (desc, steps_a if name == "a" else steps_b)
        cx.line("argus::wgmma_fence();")
        fname = cx.buffer_name(s.acc.buffer)
        zeroed = s.acc.buffer in cx.zeroed_by_mma  # the fill before it was folded in: the first step writes D
        cx.zeroed_by_mma.discard(s.acc.buffer)
        for kk in range(k_steps):
            descs = [_step_descriptor(*starts[name], kk) for name in ("a", "b")]
            first = ", 0" if zeroed and kk == 0 else ""
            note = "  // scale-d = 0: D = A * B (the zero fill before it)" if first else ""
            cx.line(f"argus::{helper}<{plan_a.trans}, {plan_b.trans}>({fname}, {descs[0]}, {descs[1]}{first});{note}")
        cx.line("argus::wgmma_commit();")
        pending = int(s.pending)
        cx.line(f"argus::wgmma_wait<{pending}>();" + ("  // the previous iteration's MMAs" if pending else ""))


def _wgmma_registers(cx: Context, s: Gemm, atom: MmaAtom, sub_n: int, k_steps: int) -> None:
    """``wgmma`` with A from registers (``.rs``): each thread passes the four 32-bit registers of its warpgroup's
    A fragment for k step kk (values ``8 kk ...``, the atom's register order, as `mma_sync` reads operand
    fragments), B from a descriptor of its sub-tile, as in the shared-memory form. The A registers must stay
    unchanged until the MMAs complete: ``wgmma.wait_group`` follows at once unless the `Gemm` defers it."""
    ak = atom.shape[2]
    wb = Window(cx, s.b)
    plan_b, steps_b = _descriptor_plan(cx, wb, "B", mn_dim=1, k_dim=0, sub=sub_n, groups=1, k_steps=k_steps, ak=ak)
    helper = prelude.wgmma_function_name(atom)
    cx.needs.extra_snippets[helper] = prelude.wgmma_snippet(atom)
    cx.use("wgmma")
    cx.use("smem_address")
    cx.use("registers")
    for ref in (s.b,):
        if ref.buffer in cx.facts.generic_shared_writes:
            cx.line(f"// {ref.buffer.name} is written by ordinary stores: make them visible to the async proxy")
            cx.line('asm volatile("fence.proxy.async.shared::cta;\\n" ::: "memory");')
            cx.line(scope_barrier(cx))
            break
    per_step = atom.values_per_thread("A") * atom.a_dtype.bits // 32  # 32-bit registers per k step
    a_name, fname = cx.buffer_name(s.a.buffer), cx.buffer_name(s.acc.buffer)
    with cx.block():
        var = cx.local("b_base")
        base = cx.buffer_name(wb.buffer)
        pre = _pre_swizzle_c(wb, ["0", "0"])
        cx.line(
            f"const unsigned {var} = argus::smem_u32({base}) + {wb.buffer.dtype.itemsize} * {paren(pre)};  "
            f"// B: {plan_b.major}-major, {plan_b.swizzle}-byte swizzle, LBO {plan_b.lbo}, SBO {plan_b.sbo}; "
            f"A: this warpgroup's rows of {a_name}, in registers"
        )
        b_desc = cx.local("b_desc")
        cx.line(
            f"const unsigned long long {b_desc} = argus::wgmma_descriptor({var}, {plan_b.lbo}, {plan_b.sbo}, "
            f"{plan_b.mode});  // k step kk: + its byte offset / 16 (the start address field)"
        )
        cx.line("argus::wgmma_fence();  // the A and accumulator registers written before are visible to wgmma")
        for kk in range(k_steps):
            desc = _step_descriptor(b_desc, steps_b, kk)
            regs = [f"argus::reg({a_name}, {kk * per_step + i})" for i in range(per_step)]
            cx.line(f"argus::{helper}<{plan_b.trans}>({fname}, {', '.join(regs)}, {desc});")
        cx.line("argus::wgmma_commit();")
        pending = int(s.pending)
        cx.line(f"argus::wgmma_wait<{pending}>();" + ("  // the previous iteration's MMAs" if pending else ""))


def _step_descriptor(desc: str, steps: list[int], kk: int) -> str:
    """The descriptor of k step `kk`: the operand's first descriptor plus the step's byte offset in units of 16 bytes,
    added to the start address field (bits 0-13). Exact: the offset is a multiple of 16 and the step's address stays
    inside shared memory (below 2^18 bytes), so the field does not overflow into the next. One 64-bit add of a
    constant per step, instead of the descriptor's shifts and masks of a new address."""
    if steps[kk] % 16:
        raise ValueError(f"a wgmma k step {steps[kk]} bytes into its tile: descriptors address 16-byte units")
    return f"{desc} + {steps[kk] // 16}ull" if steps[kk] else desc


def _pre_swizzle_c(w: Window, window_coords: list[str]) -> str:
    """C text of the pre-swizzle element offset of window coordinates (the descriptor's start address)."""
    layout = w.layout
    coords = w.buffer_coords(window_coords)
    if isinstance(layout, ComposedLayout):
        text = layout_at_coords(layout.outer, coords)
        return add(text, layout.offset) if layout.offset else text
    return layout_at_coords(layout, coords)


def _descriptor_plan(
    cx: Context, w: Window, operand: str, *, mn_dim: int, k_dim: int, sub: int, groups: int, k_steps: int, ak: int
) -> tuple[DescriptorPlan, list[int]]:
    """The operand's `DescriptorPlan` (one canonical layout for every group, k step and stage), and the byte
    offset (pre-swizzle) of each k step from the sub-tile's k = 0: the same constant in every stage and group."""
    buf: Buffer = w.buffer
    layout = w.layout
    if isinstance(layout, ComposedLayout) and isinstance(layout.inner, Swizzle):
        outer, sw, offset = layout.outer, layout.inner, layout.offset
    elif isinstance(layout, Layout):
        outer, sw, offset = layout, None, 0
    else:
        raise cx.error(f"wgmma operand {buf.name} with layout {layout}")
    width = swizzle_mode_of(sw, buf.dtype.bits)
    if width is None:
        raise cx.error(f"wgmma operand {buf.name}: its swizzle {sw} is not a Hopper swizzle mode")
    start = cx.facts.shared[buf]
    if width and start % SWIZZLE_REPEAT_BYTES[width]:
        raise cx.invalid(f"{buf.name} does not start where its swizzle pattern starts")
    mn, kk = np.meshgrid(np.arange(sub), np.arange(ak), indexing="ij")
    mn, kk = mn.ravel(), kk.ravel()
    pres = []
    for g in range(groups):
        for step in range(k_steps):
            coords = np.zeros((mn.size, 2), dtype=np.int64)
            coords[:, mn_dim] = g * sub + mn
            coords[:, k_dim] = step * ak + kk
            pre = w.offsets_of(coords, layout=outer)
            if pre is None:
                raise cx.error(f"wgmma operand {buf.name}: its position is not static enough to prove its layout")
            pres.append(pre + offset)
    match = match_canonical(pres, sub, ak, buf.dtype, width)  # the same for every group, k step and stage
    if match is None:
        raise cx.error(
            f"wgmma operand {operand} ({buf.name}, layout {layout}): no canonical wgmma shared-memory layout "
            "matches it",
            "allocate the operand K-major (or MN-major for 16-bit types) with a Hopper swizzle and a tile that "
            "is a whole number of swizzle atoms (argus.atoms.smem.canonical_smem_layout)",
        )
    plan = DescriptorPlan(width, *match)
    for value, what in ((plan.lbo, "LBO"), (plan.sbo, "SBO")):
        if value % 16 or value >= 1 << 18:
            raise cx.error(f"wgmma operand {buf.name}: {what} of {value} bytes cannot be encoded")
    return plan, _k_step_bytes(cx, buf, pres, groups, k_steps, start)


def _k_step_bytes(cx: Context, buf: Buffer, pres: list, groups: int, k_steps: int, start: int) -> list[int]:
    """The byte offset of each k step's sub-tile from k step 0's, checked equal in every group and stage, and each
    sub-tile's start checked 16-byte aligned (`pres`: the pre-swizzle offsets, group-major)."""
    itemsize = buf.dtype.itemsize
    out = []
    for step in range(k_steps):
        deltas = set()
        for g in range(groups):
            p0, p = pres[g * k_steps], pres[g * k_steps + step]
            deltas |= set((p[:, 0] - p0[:, 0]).tolist())
        for g in range(groups):
            first = pres[g * k_steps + step][:, 0]
            if np.any((start + first * itemsize) % 16):
                raise cx.invalid(f"wgmma operand {buf.name}: a sub-tile does not start 16-byte aligned")
        if len(deltas) != 1:
            raise cx.error(f"wgmma operand {buf.name}: the k steps are not at a fixed distance")
        out.append(deltas.pop() * itemsize)
    return out
