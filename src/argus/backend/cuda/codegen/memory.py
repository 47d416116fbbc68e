"""The memory rules: allocations, copies and fills.

* `alloc` — a fragment becomes a per-thread register array (declared where it is allocated, or at the top when
  it is used outside that scope); shared buffers and mbarriers were carved before emission (`analysis`);
* `copy` — by source and destination space, and atom: fragment <-> global or shared memory value by value in
  vector runs (`fragment_memory`; stores from a ``wgmma`` accumulator may go through a lane exchange,
  `epilogue.exchange_store`), ``ldmatrix`` / ``stmatrix`` (`matrix_copy`), copies between global and shared
  memory spread over the scope's threads in vectors, ``cp.async`` where asked (`block_copy`), TMA loads
  (`tma.tma_copy`) and staged TMA stores (`epilogue.tma_store`);
* `fill` — a fragment's registers, or a global or shared window spread over the scope's threads.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from argus.atoms.copy import forced_trans
from argus.backend.cuda.codegen import placement as pl
from argus.backend.cuda.codegen.addressing import (
    Window,
    block_width,
    distribute,
    fragment_coords,
    holders_only,
    shared_run_width,
    uniform_condition,
)
from argus.backend.cuda.codegen.cexpr import add, convert, value_literal
from argus.backend.cuda.codegen.context import Context
from argus.backend.cuda.codegen.epilogue import exchange_store, tma_store
from argus.backend.cuda.codegen.errors import CodegenError
from argus.backend.cuda.codegen.pointwise import elementwise
from argus.backend.cuda.codegen.tma import tma_copy
from argus.ir.expr import Const, Expr
from argus.ir.nodes import Alloc, Buffer, Copy, Fill, Space, TileRef
from argus.ir.types import DType

#: Most bytes one thread moves in one vector access.
VECTOR_BYTES = 16


# --- alloc ----------------------------------------------------------------------------------------------------


def alloc(cx: Context, s: Alloc) -> None:
    b = s.buffer
    if b.space in (Space.SHARED, Space.MBARRIER):
        cx.line(f"// {cx.buffer_name(b)}: shared memory at byte {cx.facts.shared[b]} (declared above)")
        return
    if b.space != Space.FRAGMENT:
        what = f"mbarrier array {b.name}" if b.space.value == "mbarrier" else f"{b.space.value} buffer {b.name}"
        raise cx.error(what, "fragments, shared buffers and mbarrier arrays are the allocations lowered")
    if b in cx.facts.hoisted:
        cx.line(f"// {cx.buffer_name(b)}: declared at the top (used outside this scope)")
        return
    declare_fragment(cx, b)


def declare_fragment(cx: Context, b: Buffer) -> None:
    """``T name[values];`` once per fragment; its threads must be the scope's."""
    if b in cx.declared:
        return
    if b.threads != cx.threads:
        role = cx.scope.role
        where = f"role {role.name!r}" if role is not None and b not in cx.facts.hoisted else "the block"
        raise CodegenError(
            "CODEGEN_INVALID",
            f"fragment {b.name} is spread over {b.threads} threads, {where} has {cx.threads}",
            loc=b.loc,
        )
    cx.declared.add(b)
    c = cx.dtype_c(b.dtype)
    align = "alignas(16) " if b.dtype.bits < 32 else ""
    cx.line(f"{align}{c} {cx.buffer_name(b)}[{b.values_per_thread}];")


# --- copy -----------------------------------------------------------------------------------------------------


def copy(cx: Context, s: Copy) -> None:
    src, dst = s.src, s.dst
    if s.atom == "tma.store":
        tma_store(cx, s)
        return
    if s.atom == "tma" or s.mbarrier is not None:
        tma_copy(cx, s)
        return
    if src.shape != dst.shape:
        raise cx.invalid(f"copy between windows of shapes {src.shape} and {dst.shape}")
    spaces = (src.space, dst.space)
    if dst.space == Space.FRAGMENT and src.space == Space.FRAGMENT:
        if not s.dst.is_whole() or not s.src.is_whole():
            raise cx.error("copies between parts of fragments")
        elementwise(cx, s.dst.buffer, [s.src], lambda args: args[0], "copy")
    elif dst.space == Space.FRAGMENT and src.space in (Space.GLOBAL, Space.SHARED):
        if s.atom.startswith("ldmatrix") and matrix_copy(cx, s, load=True):
            return
        fragment_memory(cx, s, load=True)
    elif src.space == Space.FRAGMENT and dst.space in (Space.GLOBAL, Space.SHARED):
        if s.atom == "stmatrix" and matrix_copy(cx, s, load=False):
            return
        fragment_memory(cx, s, load=False)
    elif spaces in ((Space.GLOBAL, Space.SHARED), (Space.SHARED, Space.GLOBAL), (Space.SHARED, Space.SHARED)):
        block_copy(cx, s)
    else:
        raise cx.error(f"copy from {src.space.value} to {dst.space.value} memory")


# --- fragment <-> memory ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Access:
    """One fragment <-> memory copy: the fragment's placement, the memory window, C types and names."""

    copy: Copy
    load: bool
    p: pl.Placement
    window: Window
    mem_ref: TileRef
    mem_c: str
    frag_c: str
    fname: str
    mname: str
    limit: int


def fragment_memory(cx: Context, s: Copy, load: bool) -> None:
    """Fragment <-> global or shared memory, value by value, in vector runs where possible."""
    frag_ref, mem_ref = (s.dst, s.src) if load else (s.src, s.dst)
    if not frag_ref.is_whole():
        raise cx.error("copies into or out of part of a fragment")
    frag = frag_ref.buffer
    p = pl.placement(frag)
    window = Window(cx, mem_ref)
    mem_c, frag_c = cx.dtype_c(mem_ref.dtype), cx.dtype_c(frag.dtype)
    fname, mname = cx.buffer_name(frag), cx.buffer_name(mem_ref.buffer)
    limit = max(1, VECTOR_BYTES // mem_ref.dtype.itemsize)
    access = _Access(s, load, p, window, mem_ref, mem_c, frag_c, fname, mname, limit)
    with cx.block():
        if window.is_global:
            _fragment_global(cx, access)
        else:
            _fragment_shared(cx, access)


def _fragment_global(cx: Context, a: _Access) -> None:
    """Runs along the window's contiguous dimension, as wide as every thread's values and the strides allow;
    masked per run; stores from a replicated fragment by the first holder only."""
    p, window, mem_ref = a.p, a.window, a.mem_ref
    run = window.run_dim()
    width, conditions = 1, []
    if run is not None:
        width = pl.vector_width(p.coords, run, a.limit)
        while width > 1 and window.vector_conditions(width) is None:
            width //= 2
        conditions = window.vector_conditions(width) or []
    run_buffer_dim = window.kept[run if run is not None else -1]
    if not a.load and run is not None and exchange_store(cx, p, window, mem_ref, a.fname, a.frag_c, run):
        return
    cx.require_alignment(mem_ref.buffer, width * mem_ref.dtype.itemsize)
    vec = uniform_condition(cx, conditions, width)
    at = fragment_coords(cx, p)
    if a.load:
        cx.use("global_load")
        pad = value_literal(a.copy.pad, mem_ref.dtype)
        for v0 in range(0, p.values, width):
            coords = window.buffer_coords(at(v0))
            args = f"{a.mname}, {window.offset(coords)}, {window.mask(coords, run_buffer_dim)}"
            call = f"argus::load_global<{width}>({{dst}}, {args}, {vec}, {pad});"
            _load_into(cx, a.fname, v0, width, a.mem_c, a.frag_c, call)
        return
    cx.use("global_store")
    with holders_only(cx, p):
        for v0 in range(0, p.values, width):
            coords = window.buffer_coords(at(v0))
            source = _store_source(cx, a.fname, v0, width, a.frag_c, a.mem_c)
            mask = window.mask(coords, run_buffer_dim)
            cx.line(f"argus::store_global<{width}>({a.mname}, {window.offset(coords)}, {mask}, {vec}, {source});")


def _fragment_shared(cx: Context, a: _Access) -> None:
    """Contiguity and alignment of runs come from enumerating the shared layout over every thread and stage."""
    p, window = a.p, a.window
    offsets = window.offsets_of(p.coords)
    width = shared_run_width(offsets, a.limit) if offsets is not None else 1
    at = fragment_coords(cx, p)
    cx.use("shared_access")
    if a.load:
        for v0 in range(0, p.values, width):
            pointer = window.pointer(window.buffer_coords(at(v0)))
            call = f"argus::load_shared<{width}>({{dst}}, {pointer});"
            _load_into(cx, a.fname, v0, width, a.mem_c, a.frag_c, call)
        return
    with holders_only(cx, p):
        for v0 in range(0, p.values, width):
            pointer = window.pointer(window.buffer_coords(at(v0)))
            source = _store_source(cx, a.fname, v0, width, a.frag_c, a.mem_c)
            cx.line(f"argus::store_shared<{width}>({pointer}, {source});")


def _load_into(cx: Context, fname: str, v0: int, width: int, mem_c: str, frag_c: str, call: str) -> None:
    """Emit `call` (with ``{dst}`` for the destination) loading `width` values into ``fname[v0..]``,
    through a temporary when the fragment's dtype differs from memory's."""
    if mem_c == frag_c:
        cx.line(call.replace("{dst}", f"&{fname}[{v0}]"))
        return
    with cx.block():
        tmp = cx.local("loaded")
        cx.line(f"{mem_c} {tmp}[{width}];")
        cx.line(call.replace("{dst}", tmp))
        for j in range(width):
            cx.line(f"{fname}[{v0 + j}] = {convert(f'{tmp}[{j}]', mem_c, frag_c)};")


def _store_source(cx: Context, fname: str, v0: int, width: int, frag_c: str, mem_c: str) -> str:
    """C pointer to `width` values of ``fname[v0..]`` in memory's dtype (converted into a temporary
    when the dtypes differ)."""
    if frag_c == mem_c:
        return f"&{fname}[{v0}]"
    tmp = cx.local("converted")
    values = ", ".join(convert(f"{fname}[{v0 + j}]", frag_c, mem_c) for j in range(width))
    cx.line(f"const {mem_c} {tmp}[{width}] = {{{values}}};")
    return tmp


# --- ldmatrix / stmatrix ----------------------------------------------------------------------------------------


def matrix_copy(cx: Context, s: Copy, load: bool) -> bool:
    """``ldmatrix``/``stmatrix`` for a whole fragment; False (after a note) when the layouts do not
    allow it, so that the caller emits plain shared-memory accesses with the same effect."""
    op = "ldmatrix" if load else "stmatrix"
    frag_ref, mem_ref = (s.dst, s.src) if load else (s.src, s.dst)
    if mem_ref.space != Space.SHARED:
        cx.note(f"{op} works on shared memory; {mem_ref.buffer.name} is {mem_ref.space.value}: plain accesses")
        return False
    if not frag_ref.is_whole():
        raise cx.error(f"{op} into or out of part of a fragment")
    if frag_ref.dtype.bits != 16 or mem_ref.dtype != frag_ref.dtype:
        cx.note(f"{op} moves 16-bit elements of one dtype: plain shared-memory accesses instead")
        return False
    p = pl.placement(frag_ref.buffer)
    window = Window(cx, mem_ref)
    offsets = window.offsets_of(p.coords)
    if offsets is None:
        cx.note(f"{op}: the shared window's position is not static enough to prove the row layout")
        return False
    plan = pl.plan_matrix_copy(p, offsets)
    forced = forced_trans(s.atom)
    if isinstance(plan, str):
        if forced is not None:
            raise cx.error(f"{s.atom} on this fragment and shared layout ({plan})", "use atom='ldmatrix'")
        cx.note(f"{op} not applicable ({plan}): plain shared-memory accesses instead")
        return False
    if forced is not None:
        # a forced variant keeps the row addresses the layouts call for; if it disagrees with them, each
        # 8x8 matrix arrives transposed, exactly as the interpreter models the misuse
        plan = [dataclasses.replace(ins, trans=forced) for ins in plan]
    _matrix_instructions(cx, op, plan, p, window, cx.buffer_name(frag_ref.buffer))
    return True


def _matrix_instructions(
    cx: Context, op: str, plan: list[pl.MatrixInstruction], p: pl.Placement, window: Window, fname: str
) -> None:
    """One ``ldmatrix``/``stmatrix`` call per planned instruction, each lane's row address a layout of ``tid``."""
    cx.use("registers")
    cx.use("smem_address")
    counts: dict[str, int] = {}
    for ins in plan:
        key = f"{op}.x{ins.num}{'.trans' if ins.trans else ''}"
        counts[key] = counts.get(key, 0) + 1
    summary = ", ".join(f"{n} x {k}" for k, n in counts.items())
    with cx.block():
        cx.line(f"// {summary}: lane 8j+r addresses row r of matrix j (register j of the instruction)")
        rank = len(p.shape)
        names = {2: ["row", "col"]}.get(rank, [f"c{d}" for d in range(rank)])
        cache: dict[tuple, str] = {}
        for ins in plan:
            coords = []
            for d, f in enumerate(ins.row_start):
                if f.is_constant:
                    coords.append(str(f.constant))
                    continue
                key = (d, f.layout, f.domain)
                if key not in cache:
                    var = cx.local(names[d])
                    cx.line(f"const int {var} = {pl.Fit(f.layout, 0, f.domain).c(cx.tid)};")
                    cache[key] = var
                coords.append(add(cache[key], f.constant))
            pointer = window.pointer(window.buffer_coords(coords))
            helper = f"{op}_x{ins.num}{'_trans' if ins.trans else ''}"
            cx.use(helper)
            regs = ", ".join(f"argus::reg({fname}, {r})" for r in ins.registers)
            cx.line(f"argus::{helper}({regs}, argus::smem_u32({pointer}));")


# --- block copies (global/shared <-> shared/global) ---------------------------------------------------------------


def block_copy(cx: Context, s: Copy) -> None:
    """A copy between global and shared memory (or shared and shared), its runs spread over the scope's threads."""
    src, dst = Window(cx, s.src), Window(cx, s.dst)
    shape = tuple(s.src.shape)
    if not shape:
        raise cx.invalid("a copy of a zero-dimensional window")
    itemsize = max(s.src.dtype.itemsize, s.dst.dtype.itemsize)
    limit = max(1, VECTOR_BYTES // itemsize)
    cp_async = s.atom == "cp.async"
    width, conditions = block_width(shape, [src, dst], limit)
    if cp_async and s.src.dtype != s.dst.dtype:
        cx.note("cp.async cannot convert dtypes: a synchronous copy instead")
        cp_async = False
    if cp_async:
        while width > 1 and width * s.dst.dtype.itemsize > VECTOR_BYTES:
            width //= 2
        if width * s.dst.dtype.itemsize < 4:
            cx.note(
                f"cp.async needs 4-, 8- or 16-byte runs; this copy's runs are {width * s.dst.dtype.itemsize} "
                "bytes: a synchronous copy instead"
            )
            cp_async = False
    for w in (src, dst):
        if w.is_global:
            cx.require_alignment(w.buffer, width * w.buffer.dtype.itemsize)

    def run(coords: list[str], vec: str) -> None:
        sc, dc = src.buffer_coords(coords), dst.buffer_coords(coords)
        sc, dc = (src.hoist(sc) if src.is_global else sc), (dst.hoist(dc) if dst.is_global else dc)
        if src.is_global and not dst.is_global:
            _global_to_shared(cx, s, src, dst, sc, dc, width, vec, cp_async)
        elif dst.is_global and not src.is_global:
            _shared_to_global(cx, s, src, dst, sc, dc, width, vec)
        else:
            _shared_to_shared(cx, s, src, dst, sc, dc, width)

    distribute(cx, shape, width, conditions, run)


def _global_to_shared(
    cx: Context,
    s: Copy,
    src: Window,
    dst: Window,
    sc: list[str],
    dc: list[str],
    width: int,
    vec: str,
    cp_async: bool,
) -> None:
    src_c, dst_c = cx.dtype_c(s.src.dtype), cx.dtype_c(s.dst.dtype)
    valid = src.mask(sc, src.kept[-1])
    pad = value_literal(s.pad, s.src.dtype)
    target = dst.pointer(dc)
    name = cx.buffer_name(src.buffer)
    if cp_async:
        cx.use("cp_async")
        zero = "true" if s.pad == 0.0 else "false"
        cx.line(f"argus::cp_async<{width}>({target}, {name}, {src.offset(sc)}, {valid}, {vec}, {pad}, {zero});")
    elif src_c == dst_c:
        cx.use("copy_to_shared")
        cx.line(f"argus::copy_global_to_shared<{width}>({target}, {name}, {src.offset(sc)}, {valid}, {vec}, {pad});")
    else:
        cx.use("global_load")
        tmp = cx.local("tmp")
        cx.line(f"{src_c} {tmp}[{width}];")
        cx.line(f"argus::load_global<{width}>({tmp}, {name}, {src.offset(sc)}, {valid}, {vec}, {pad});")
        for j in range(width):
            cx.line(f"({target})[{j}] = {convert(f'{tmp}[{j}]', src_c, dst_c)};")


def _shared_to_global(
    cx: Context, s: Copy, src: Window, dst: Window, sc: list[str], dc: list[str], width: int, vec: str
) -> None:
    src_c, dst_c = cx.dtype_c(s.src.dtype), cx.dtype_c(s.dst.dtype)
    valid = dst.mask(dc, dst.kept[-1])
    source = src.pointer(sc)
    name = cx.buffer_name(dst.buffer)
    if src_c == dst_c:
        cx.use("copy_to_global")
        cx.line(f"argus::copy_shared_to_global<{width}>({name}, {dst.offset(dc)}, {valid}, {vec}, {source});")
    else:
        cx.use("global_store")
        tmp = cx.local("tmp")
        values = ", ".join(convert(f"({source})[{j}]", src_c, dst_c) for j in range(width))
        cx.line(f"const {dst_c} {tmp}[{width}] = {{{values}}};")
        cx.line(f"argus::store_global<{width}>({name}, {dst.offset(dc)}, {valid}, {vec}, {tmp});")


def _shared_to_shared(cx: Context, s: Copy, src: Window, dst: Window, sc: list[str], dc: list[str], width: int) -> None:
    src_c, dst_c = cx.dtype_c(s.src.dtype), cx.dtype_c(s.dst.dtype)
    cx.use("shared_access")
    tmp = cx.local("tmp")
    cx.line(f"{src_c} {tmp}[{width}];")
    cx.line(f"argus::load_shared<{width}>({tmp}, {src.pointer(sc)});")
    if src_c != dst_c:
        tmp2 = cx.local("tmp")
        values = ", ".join(convert(f"{tmp}[{j}]", src_c, dst_c) for j in range(width))
        cx.line(f"const {dst_c} {tmp2}[{width}] = {{{values}}};")
        tmp = tmp2
    cx.line(f"argus::store_shared<{width}>({dst.pointer(dc)}, {tmp});")


# --- fill -----------------------------------------------------------------------------------------------------


def fill(cx: Context, s: Fill) -> None:
    ref = s.dst
    c = cx.dtype_c(ref.dtype)
    value = _scalar(cx, s.value, ref.dtype)
    if ref.space == Space.FRAGMENT:
        if not ref.is_whole():
            raise cx.error("filling part of a fragment")
        b = ref.buffer
        v = cx.local("v")
        cx.line("#pragma unroll")
        cx.line(f"for (int {v} = 0; {v} < {b.values_per_thread}; ++{v}) {cx.buffer_name(b)}[{v}] = {value};")
        cx.forget(v)  # scoped to its loop
        return
    window = Window(cx, ref)
    shape = tuple(ref.shape)
    limit = max(1, VECTOR_BYTES // ref.dtype.itemsize)
    width, conditions = block_width(shape, [window], limit)
    if window.is_global:
        cx.require_alignment(ref.buffer, width * ref.dtype.itemsize)

    def body(coords: list[str], vec: str) -> None:
        bc = window.buffer_coords(coords)
        tmp = cx.local("tmp")
        cx.line(f"const {c} {tmp}[{width}] = {{{', '.join([value] * width)}}};")
        if window.is_global:
            cx.use("global_store")
            valid = window.mask(bc, window.kept[-1])
            cx.line(
                f"argus::store_global<{width}>({cx.buffer_name(ref.buffer)}, {window.offset(bc)}, {valid}, "
                f"{vec}, {tmp});"
            )
        else:
            cx.use("shared_access")
            cx.line(f"argus::store_shared<{width}>({window.pointer(bc)}, {tmp});")

    distribute(cx, shape, width, conditions, body)


def _scalar(cx: Context, e: Expr | int | float, dtype: DType) -> str:
    """A scalar IR expression converted to `dtype`'s C type."""
    if isinstance(e, Const) and not isinstance(e.value, bool) and isinstance(e.value, int | float):
        return value_literal(e.value, dtype)
    if isinstance(e, int | float):
        return value_literal(e, dtype)
    text = cx.expr(e)
    src = cx.dtype_c(e.dtype) if isinstance(e, Expr) else "int"
    return convert(text, src, cx.dtype_c(dtype))
