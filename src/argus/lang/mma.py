"""Matrix multiply-accumulate: ``T.gemm`` and the MMA atoms a kernel names (``T.mma_sync``, ``T.wgmma_atom``,
``T.fma_atom``), which `argus.atoms` defines."""

from __future__ import annotations

from argus.atoms import MmaAtom, mma_sync_m16n8k16, wgmma
from argus.atoms import fma as fma_of  # `fma` is the DSL's elementwise T.fma
from argus.atoms import get_atom as get_atom_by_name
from argus.ir.nodes import Gemm, Space
from argus.ir.types import DType, bf16, f32
from argus.lang.errors import DSLError, caller_loc
from argus.lang.fragment import Fragment
from argus.lang.tiles import Tile
from argus.lang.trace import current


def gemm(a: Tile, b: Tile, acc: Fragment, wait_group: int = 0) -> None:
    """``acc += a @ b`` with the MMA atom `acc` was allocated with: `a` is ``(M, K)``, `b` ``(K, N)``.

    `wait_group` (``wgmma`` only): after issuing, wait until at most that many of the warpgroup's MMA groups are in
    flight (``wgmma.wait_group``); with 1 this statement's MMAs go on reading `a` and `b` and writing `acc` after it,
    until the next `T.gemm`'s wait or `T.wgmma_wait`. The deferred-release pass (`argus.ir.passes`) writes this
    itself for the consumer loops it rewrites; write it by hand only with the releases that go with it."""
    st = current("T.gemm")
    loc = caller_loc()
    if not isinstance(acc, Fragment) or acc.buffer.atom is None:
        raise DSLError(
            "DSL_GEMM_ACCUMULATOR",
            "T.gemm: the accumulator must be a fragment allocated with mma=<atom>",
            "T.alloc_fragment((BM, BN), T.f32, mma=T.mma_sync(...))",
            loc=loc,
        )
    (m, k), (k2, n), (m2, n2) = a.shape, b.shape, acc.shape
    if k != k2 or m != m2 or n != n2:
        raise DSLError(
            "DSL_SHAPE_MISMATCH",
            "T.gemm: operand shapes do not form a matrix product",
            requirement="a (M, K), b (K, N), acc (M, N)",
            actual=f"a {a.shape}, b {b.shape}, acc {acc.shape}",
            loc=loc,
        )
    atom = get_atom_by_name(acc.buffer.atom)
    if atom.b_source.value == "shared" and b.ref.space != Space.SHARED:
        raise DSLError("DSL_GEMM_OPERAND", f"T.gemm: {atom.name} reads B from shared memory", loc=loc)
    if atom.a_source.value == "shared" and a.ref.space != Space.SHARED:
        raise DSLError("DSL_GEMM_OPERAND", f"T.gemm: {atom.name} reads A from shared memory", loc=loc)
    if atom.scope.value == "thread":  # the per-thread FMA atom multiplies what each thread holds
        for name, t in (("a", a), ("b", b)):
            if t.ref.space != Space.FRAGMENT:
                raise DSLError(
                    "DSL_GEMM_OPERAND",
                    f"T.gemm: {atom.name} multiplies registers; operand {name} is in {t.ref.space.value} memory",
                    f"load it into a fragment first: T.alloc_fragment(shape, dtype, mma=<the atom>, "
                    f"operand={name.upper()!r}, groups=<the accumulator's>) and T.copy",
                    loc=loc,
                )
    for name, t in (("a", a), ("b", b)):
        if t.ref.space == Space.FRAGMENT and t.buffer.atom != acc.buffer.atom:
            raise DSLError(
                "DSL_FRAGMENT_ATOM",
                f"T.gemm: fragment {name} was laid out for {t.buffer.atom}, the accumulator for {acc.buffer.atom}",
                "allocate the operand with the same mma atom",
                loc=loc,
            )
    for name, t in (("a", a), ("b", b)):
        if t.ref.space == Space.FRAGMENT and t.buffer.groups != acc.buffer.groups:
            raise DSLError(
                "DSL_FRAGMENT_ATOM",
                f"T.gemm: fragment {name} is spread over {t.buffer.groups} thread groups, the accumulator over "
                f"{acc.buffer.groups}",
                "allocate the operands with the same groups as the accumulator",
                loc=loc,
            )
    if not isinstance(wait_group, int) or wait_group < 0:
        raise DSLError(
            "DSL_GEMM_OPERAND", f"T.gemm: wait_group must be a non-negative int, got {wait_group!r}", loc=loc
        )
    if wait_group and not atom.ptx.startswith("wgmma."):
        raise DSLError(
            "DSL_GEMM_OPERAND",
            f"T.gemm: wait_group={wait_group} needs an asynchronous MMA (wgmma); {atom.name} completes in order",
            loc=loc,
        )
    st.emit(Gemm(a.ref, b.ref, acc.ref, acc.buffer.atom, acc.buffer.groups, pending=wait_group, loc=loc))


def mma_sync(a_dtype: DType = bf16, acc_dtype: DType = f32) -> MmaAtom:
    """The ``mma.sync.aligned.m16n8k16`` atom (one warp)."""
    return mma_sync_m16n8k16(a_dtype, a_dtype, acc_dtype)


def wgmma_atom(n: int, a_dtype: DType = bf16, acc_dtype: DType = f32, a_source: str = "shared") -> MmaAtom:
    """The ``wgmma.mma_async`` atom (one warpgroup): ``m64nNk16`` for bf16/f16 inputs, ``m64nNk32`` for e4m3/e5m2,
    ``m64nNk8`` for f32 inputs, which the instruction reads as TF32 (`argus.atoms.wgmma`)."""
    return wgmma(n, a_dtype, acc_dtype=acc_dtype, a_source=a_source)


def fma_atom(a_dtype: DType = bf16, acc_dtype: DType = f32) -> MmaAtom:
    """The per-thread FMA atom (one thread, ``1x1x1``, ``fma.rn.f32`` on CUDA cores): `T.gemm` with it makes
    each thread multiply the A rows and B columns it holds into the accumulator micro-tile it owns."""
    return fma_of(a_dtype, a_dtype, acc_dtype)
