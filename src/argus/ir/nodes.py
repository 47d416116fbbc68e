"""IR nodes: buffers in the three memory spaces, tile references, statements and the kernel.

Every node is a frozen dataclass; statements carry the `SourceLoc` of the DSL line that made
them. Semantics (what the interpreter executes, what the verifier reasons about and what the code
generator emits) are written on each node; `docs/dsl-ir.md` gives the overall model.

Conventions:

* A **global** buffer is a kernel parameter with a (possibly symbolic) shape and element strides;
  the default is row-major (last dimension contiguous), as torch tensors are.
* A **shared** buffer has a static shape and a `layout` from `argus.layout` that maps the
  logical coordinate to the element offset in the block's shared memory (swizzle included). A
  multi-stage buffer has the stage as its first dimension.
* A **fragment** is a register tile: static `shape`, spread over `threads` threads by its
  thread–value layout `tv`: ``tv(t, v)`` is the column-major index (CuTe's convention: for a 2-D
  tile, ``row + rows * col``) of the tile element that thread ``t`` holds as value ``v``. A stride-0
  thread mode means the element is replicated in those threads (e.g. a row maximum held by every
  thread of the row).
* A `TileRef` is a rectangular window of a buffer: ``origin`` and ``extent`` per dimension, and the
  dimensions that are fixed to one index (``dropped``) and so do not appear in the window's shape.
  Parts of a global window outside the tensor are masked: loads yield the fill value (0), stores
  are dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from argus.ir.expr import Element, Expr, SourceLoc, Var, as_expr
from argus.ir.types import DType, f32, i32
from argus.layout import ComposedLayout, Layout


class Space(StrEnum):
    GLOBAL = "global"
    SHARED = "shared"
    FRAGMENT = "fragment"
    MBARRIER = "mbarrier"  # an array of mbarrier objects (they live in shared memory on the hardware)


@dataclass(frozen=True, eq=False)
class Buffer:
    """A named tensor in one memory space (identity by object, like `Var`)."""

    name: str
    space: Space
    dtype: DType
    shape: tuple[Expr | int, ...]
    strides: tuple[Expr | int, ...] | None = None  # global: element strides
    layout: Layout | ComposedLayout | None = None  # shared: coordinate -> element offset
    tv: Layout | None = None  # fragment: (thread, value) -> column-major tile index
    threads: int | None = None  # fragment: how many threads hold it
    atom: str | None = None  # fragment: the atom whose layout `tv` is
    groups: tuple[int, int] | None = None  # MMA fragment: thread groups (GM, GN) over the accumulator
    operand: str | None = None  # MMA fragment: "A", "B" or "C"
    loc: SourceLoc | None = None

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def static_shape(self) -> tuple[int, ...]:
        if not all(isinstance(s, int) for s in self.shape):
            raise TypeError(f"buffer {self.name} has a symbolic shape {self.shape}")
        return tuple(int(s) for s in self.shape)  # type: ignore[arg-type]

    @property
    def values_per_thread(self) -> int:
        if self.tv is None:
            raise TypeError(f"buffer {self.name} is not a fragment")
        return self.tv[1].size()


@dataclass(frozen=True, eq=False)
class Im2col:
    """The traversal of a TMA im2col load (`argus.atoms.tma`, "im2col mode"), held by the `TileRef` of its source: a
    channels-last global tensor (N, spatial..., C) whose window is (pixels, channels). Per spatial dimension, in
    tensor order: the bounding box's `lower` and `upper` corners (base pixels ``lower .. extent - 1 + upper``), the
    traversal `strides`, and the `offsets` (a filter tap's) added to every base pixel. `position`: the index of the
    first base pixel in the traversal of the whole tensor (images outermost, the last spatial dimension fastest),
    e.g. a convolution's flattened output position; row r is the base pixel at ``position + r``. The window's origin
    is `start` of it (the first pixel's n and spatial coordinates), then the first channel."""

    lower: tuple[int, ...]
    upper: tuple[int, ...]
    strides: tuple[int, ...]
    offsets: tuple[Expr | int, ...]
    position: Expr | int

    def counts(self, shape: tuple[Expr | int, ...]) -> tuple[Expr | int, ...]:
        """Base pixels per spatial dimension of a tensor of `shape` (N, spatial..., C): ``(extent - 1 + upper -
        lower) // stride + 1`` (for a convolution's box, its output extents)."""
        return tuple(
            (e + (u - a - 1)) // s + 1
            for e, a, u, s in zip(shape[1:-1], self.lower, self.upper, self.strides, strict=True)
        )

    def pixel(self, index: Expr | int, shape: tuple[Expr | int, ...]) -> tuple[Expr | int, ...]:
        """(n, spatial...) of the base pixel at traversal `index`: the last spatial dimension fastest."""
        counts = self.counts(shape)
        out: list[Expr | int] = []
        rest = index
        for c, a, s in reversed(tuple(zip(counts, self.lower, self.strides, strict=True))):
            out.append(a + (rest % c) * s)
            rest = rest // c
        return (rest, *reversed(out))


@dataclass(frozen=True, eq=False)
class Gather:
    """The rows of a gathered window (`argus.lang.tiles.Tensor.gather`), held by the `TileRef` of its source: row r of
    the window is the tensor's row ``index[position + r]`` along dimension 0 (`index` a 1-d integer tensor the kernel
    only reads), its other dimensions those of the window's origin; a row whose position is at or past the index's
    end reads 0. The window's origin along dimension 0 is 0 and unused. A MoE layer's up-projection reads each routed
    row's token this way (the gather fused into the GEMM's operand load)."""

    index: Buffer
    position: Expr | int

    def row(self, r: Expr | int) -> Expr:
        """The tensor row that window row `r` reads (an `Element` of the index; meaningful where ``position + r``
        lies inside the index)."""
        return Element(self.index, (as_expr(self.position) + r,))


@dataclass(frozen=True, eq=False)
class TileRef:
    """A window of `buffer`: for each dimension ``d`` the elements ``origin[d] .. origin[d]+extent[d]-1``;
    dimensions listed in `dropped` have extent 1 and are not part of the window's `shape`."""

    buffer: Buffer
    origin: tuple[Expr | int, ...]
    extent: tuple[int, ...]
    dropped: tuple[int, ...] = ()
    layout: Layout | ComposedLayout | None = None  # shared: an explicit view layout (expert escape hatch)
    perm: tuple[int, ...] | None = None  # window dimension i is the buffer's kept dimension perm[i] (a transpose)
    # global: per buffer dimension, an exclusive upper limit on the coordinates accessed (None: the tensor's extent),
    # e.g. the end of an expert's rows; elements at or past it are masked like those past the tensor's end
    bound: tuple[Expr | int | None, ...] | None = None
    # global: a TMA im2col load's source (T.Tensor.im2col): row r of the (pixels, channels) window is the r-th base
    # pixel of the traversal from the origin, not origin + r along the first dimension
    im2col: Im2col | None = None
    # global: a gathered window's source (T.Tensor.gather): row r is the tensor's row index[position + r]
    gather: Gather | None = None

    @property
    def kept(self) -> tuple[int, ...]:
        """The buffer dimensions the window's dimensions are, in window order."""
        dims = tuple(d for d in range(len(self.extent)) if d not in self.dropped)
        return dims if self.perm is None else tuple(dims[i] for i in self.perm)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.extent[d] for d in self.kept)

    @property
    def dtype(self) -> DType:
        return self.buffer.dtype

    @property
    def space(self) -> Space:
        return self.buffer.space

    def is_whole(self) -> bool:
        """True when the window is the whole buffer."""
        return (
            not self.dropped
            and self.perm is None
            and all(isinstance(o, int) and o == 0 for o in self.origin)
            and tuple(self.extent) == tuple(self.buffer.shape)
        )


def whole(buffer: Buffer) -> TileRef:
    """The window that is the whole (static-shaped) buffer."""
    return TileRef(buffer, tuple(0 for _ in buffer.shape), buffer.static_shape)


# --- statements ------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Stmt:
    """A statement. `loc` is the DSL line that made it; `made_by` names the pass (`argus.ir.passes`) that inserted
    or moved it (None: traced as written). The code generator explains such a statement inline instead of with a
    ``// file.py:LINE`` comment of its own; findings still point at `loc`."""

    loc: SourceLoc | None = field(default=None, kw_only=True)
    made_by: str | None = field(default=None, kw_only=True)


@dataclass(frozen=True, eq=False)
class Alloc(Stmt):
    """Bring a shared buffer or a fragment into existence. Shared memory starts poisoned (NaN for
    floats) in the interpreter; fragments start poisoned too until written."""

    buffer: Buffer


@dataclass(frozen=True, eq=False)
class Copy(Stmt):
    """Copy `src` into `dst` (same shape, elementwise, converting dtype where they differ).

    `atom` names the instruction (an `argus.atoms` name or a kind: ``"auto"`` lets the lowering
    choose). Asynchronous atoms (``cp.async``, TMA) complete at a later wait: a ``cp.async`` copy
    at the next `AsyncWait`, a TMA copy when the `mbarrier` it signals completes its phase.

    ``atom="tma.store"`` stores a fragment into a global tile through `staging`, a shared buffer of two
    128-byte-swizzled column chunks that the copy alone uses: each warpgroup writes its rows of a chunk there
    and one of its threads hands the chunk to a TMA store, which drains while the threads go on. Its
    effect on the destination is the plain fragment -> global copy's; the stores complete before the block
    exits, and the kernel must not read the destination (`argus.lang.memory.copy` enforces both).
    """

    src: TileRef
    dst: TileRef
    atom: str = "auto"
    mbarrier: TileRef | None = None
    pad: float = 0.0  # the value masked (out-of-bounds) source elements read as
    staging: TileRef | None = None  # atom "tma.store": the shared chunk buffers (2, rows, 128 bytes of columns)
    #: atom "tma" in a kernel of 2-block clusters (`Kernel.cluster`): the two blocks load the same box together, each
    #: one half of it (split along its first dimension) into both blocks' `dst`, completing on the `mbarrier` at the
    #: same offset in each. Its effect on each block is the whole box's load; `argus.verify.checks.cluster` proves the
    #: two blocks name the same box at every execution.
    multicast: bool = False


@dataclass(frozen=True, eq=False)
class Fill(Stmt):
    """Set every element of `dst` to `value`."""

    dst: TileRef
    value: Expr


class MapOp(StrEnum):
    ADD = "add"
    SUB = "sub"
    MUL = "mul"
    DIV = "div"
    MAX = "max"
    MIN = "min"
    FMA = "fma"
    NEG = "neg"
    EXP2 = "exp2"
    # 2^srcs[0], with every srcs[1]-th register of a thread (registers P - 1, 2P - 1, ...) evaluated by a polynomial
    # on the FMA pipe instead of the special-function unit (a lowering choice: the value is 2^x either way, within a
    # few f32 ulp; `T.exp2(x, fma_every=P)`)
    EXP2_FMA = "exp2_fma"
    EXP = "exp"
    LOG2 = "log2"
    RSQRT = "rsqrt"
    SQRT = "sqrt"
    RCP = "rcp"
    ABS = "abs"
    CAST = "cast"
    SELECT = "select"
    LT = "lt"
    COORD = "coord"  # the element's own tile coordinate along axis srcs[0]
    # float math (C's f32 functions; the interpreter rounds the exact value once)
    TANH = "tanh"
    ERF = "erf"
    LOG = "log"
    LOG1P = "log1p"
    EXPM1 = "expm1"
    SIGMOID = "sigmoid"  # 1 / (1 + exp(-x))
    SIN = "sin"
    COS = "cos"
    FLOOR = "floor"
    CEIL = "ceil"
    POW = "pow"
    FMOD = "fmod"  # C's fmod (C's % on integers): truncated division's remainder, with the sign of srcs[0]
    # comparisons: 1 where true, 0 where false (a > b is LT(b, a), a >= b is LE(b, a))
    LE = "le"
    EQ = "eq"
    NE = "ne"
    # integer (i32/u32) operations
    FLOORDIV = "floordiv"  # Python's //: rounds toward negative infinity (torch.div(rounding_mode="floor"))
    MOD = "mod"  # Python's %: the sign of the divisor (torch.remainder), so a == (a // b) * b + a % b
    AND = "and"
    OR = "or"
    XOR = "xor"
    SHL = "shl"
    SHR = "shr"  # arithmetic for i32, logical for u32 (C's >>)
    INVERT = "invert"  # ~x


MAP_ARITY = {
    MapOp.ADD: 2,
    MapOp.SUB: 2,
    MapOp.MUL: 2,
    MapOp.DIV: 2,
    MapOp.MAX: 2,
    MapOp.MIN: 2,
    MapOp.LT: 2,
    MapOp.FMA: 3,
    MapOp.SELECT: 3,
    MapOp.NEG: 1,
    MapOp.EXP2: 1,
    MapOp.EXP2_FMA: 2,
    MapOp.EXP: 1,
    MapOp.LOG2: 1,
    MapOp.RSQRT: 1,
    MapOp.SQRT: 1,
    MapOp.RCP: 1,
    MapOp.ABS: 1,
    MapOp.CAST: 1,
    MapOp.COORD: 1,
    MapOp.TANH: 1,
    MapOp.ERF: 1,
    MapOp.LOG: 1,
    MapOp.LOG1P: 1,
    MapOp.EXPM1: 1,
    MapOp.SIGMOID: 1,
    MapOp.SIN: 1,
    MapOp.COS: 1,
    MapOp.FLOOR: 1,
    MapOp.CEIL: 1,
    MapOp.POW: 2,
    MapOp.FMOD: 2,
    MapOp.LE: 2,
    MapOp.EQ: 2,
    MapOp.NE: 2,
    MapOp.FLOORDIV: 2,
    MapOp.MOD: 2,
    MapOp.AND: 2,
    MapOp.OR: 2,
    MapOp.XOR: 2,
    MapOp.SHL: 2,
    MapOp.SHR: 2,
    MapOp.INVERT: 1,
}

#: Operations defined on float values only: a `Map` whose values are all integers (an integer
#: destination and integer operands) may not use them (``/`` is true division; ``//`` is integer division).
FLOAT_MAP_OPS = frozenset(
    {
        MapOp.DIV,
        MapOp.EXP2,
        MapOp.EXP2_FMA,
        MapOp.EXP,
        MapOp.LOG2,
        MapOp.RSQRT,
        MapOp.SQRT,
        MapOp.RCP,
        MapOp.TANH,
        MapOp.ERF,
        MapOp.LOG,
        MapOp.LOG1P,
        MapOp.EXPM1,
        MapOp.SIGMOID,
        MapOp.SIN,
        MapOp.COS,
        MapOp.FLOOR,
        MapOp.CEIL,
        MapOp.POW,
    }
)

#: Operations defined on integer (``i32``/``u32``) values only: every operand and the destination are integers.
INTEGER_MAP_OPS = frozenset(
    {MapOp.FLOORDIV, MapOp.MOD, MapOp.AND, MapOp.OR, MapOp.XOR, MapOp.SHL, MapOp.SHR, MapOp.INVERT}
)


@dataclass(frozen=True, eq=False)
class Broadcast:
    """A fragment operand of a `Map` whose elements repeat along `axes` of the destination tile
    (e.g. a row maximum of shape ``(R,)`` used as ``(R, C)`` with ``axes=(1,)``)."""

    ref: TileRef
    axes: tuple[int, ...]


Operand = TileRef | Broadcast | Expr


def map_compute_dtype(dst: DType, operands: tuple[Operand, ...] | list[Operand]) -> DType:
    """The type an elementwise statement computes in: ``f32`` when the destination or any operand is a float
    (16-bit floats widen to it), else the destination's integer type (``bool`` computes as ``i32``). The tracer's
    checks of `FLOAT_MAP_OPS` and `INTEGER_MAP_OPS`, the interpreter and the code generator all read it."""
    dtypes = [dst] + [(x.ref if isinstance(x, Broadcast) else x).dtype for x in operands]
    if any(d.is_float for d in dtypes):
        return f32
    return dst if dst.is_integer else i32


@dataclass(frozen=True, eq=False)
class Map(Stmt):
    """``dst[i] = op(srcs[0][i], srcs[1][i], ...)`` for every element ``i`` of a fragment `dst`.

    Fragment operands must be held by the same thread as the destination element (the tracer
    checks this with the TV layouts); a scalar `Expr` operand is the same for every element.
    """

    op: MapOp
    dst: TileRef
    srcs: tuple[Operand, ...]


class ReduceOp(StrEnum):
    SUM = "sum"
    MAX = "max"
    MIN = "min"


@dataclass(frozen=True, eq=False)
class Reduce(Stmt):
    """``dst[r] = op over c of src[r, c]`` along `axis` of a fragment (``accumulate``: combine with
    the old ``dst`` too). Values held by one thread combine in registers; the partial results of
    threads of one warp that share a row combine with XOR shuffles over `shuffle_lanes` (lane
    offsets); the tracer rejects layouts that would need shared memory."""

    op: ReduceOp
    dst: TileRef
    src: TileRef
    axis: int
    shuffle_lanes: tuple[int, ...] = ()
    accumulate: bool = False


@dataclass(frozen=True, eq=False)
class Gemm(Stmt):
    """``acc += a @ b`` with the MMA atom `atom`, tiled over `groups` = (GM, GN) thread groups (of the
    atom's thread count) that hold `acc`: `a` is ``(M, K)`` and `b` ``(K, N)`` logically (shared-memory
    windows, or fragments whose registers the atom reads by its A/B layouts), `acc` an ``(M, N)``
    fragment read and written by the atom's C layout. Group ``(gm, gn)`` computes the sub-tile
    ``acc[gm*M/GM.., gn*N/GN..]``; the register convention is `argus.lang.fragments.mma_tv`'s."""

    a: TileRef
    b: TileRef
    acc: TileRef
    atom: str
    groups: tuple[int, int] = (1, 1)  # (GM, GN) thread groups of the atom's size over acc
    #: An asynchronous MMA (``wgmma``) commits its work as one group of the issuing warpgroup and then waits until
    #: at most `pending` of the warpgroup's groups are still in flight (``wgmma.wait_group pending``). With 0 (the
    #: default) the statement has finished reading `a` and `b` and writing `acc` when it ends; with ``p > 0`` the
    #: MMAs of this statement (and of up to ``p - 1`` before it) may still be reading their shared operands and
    #: writing `acc` afterwards, until a later wait (a `Gemm`'s own, or `WgmmaWait`) leaves fewer groups in flight.
    #: Set by the deferred-release pass (`argus.ir.passes`), not by the DSL.
    pending: int = 0


class LoopKind(StrEnum):
    SERIAL = "serial"
    UNROLLED = "unrolled"
    PIPELINED = "pipelined"


@dataclass(frozen=True, eq=False)
class For(Stmt):
    """``for var in range(extent)``: the body runs with ``var`` bound to 0, 1, ... ``extent-1``.
    A pipelined loop records its stage count; the pipelining pass rewrites it into prologue,
    steady state and stage rotation. `start` is a pipelined loop's global iteration at ``var = 0``: iteration
    ``var`` is global iteration ``start + var`` of the stage rotation, whose stage is ``(start + var) % stages``
    (a persistent kernel's k loop continues the rotation of the tile before it: ``start = it * k_tiles``)."""

    var: Var
    extent: Expr | int
    body: tuple[Stmt, ...]
    kind: LoopKind = LoopKind.SERIAL
    stages: int = 1
    start: Expr | int = 0


@dataclass(frozen=True, eq=False)
class If(Stmt):
    """A branch on a runtime condition (uniform or per thread)."""

    cond: Expr
    then: tuple[Stmt, ...]
    orelse: tuple[Stmt, ...] = ()


@dataclass(frozen=True, eq=False)
class Let(Stmt):
    """Run `body` with `var` bound to `value` (evaluated once, on entry). `var` may be a variable already bound
    outside (a loop's): inside `body` it then means `value`, and outside it keeps its own value (a shadowing
    binding, as C's ``{ const int k = ...; }``). `note` is a comment for readers of the printed IR and the
    generated code; ``{value}`` in it stands for the value as written there."""

    var: Var
    value: Expr | int
    body: tuple[Stmt, ...]
    note: str = ""


@dataclass(frozen=True, eq=False)
class Role(Stmt):
    """Warp specialization: the body runs only in `warpgroups`; `registers` is the per-thread
    register budget the role sets with ``setmaxnreg`` (None: unchanged)."""

    name: str
    warpgroups: tuple[int, ...]
    body: tuple[Stmt, ...]
    registers: int | None = None


class BarrierKind(StrEnum):
    BLOCK = "block"  # __syncthreads / bar.sync 0
    NAMED = "named"  # bar.sync id, threads


@dataclass(frozen=True, eq=False)
class Barrier(Stmt):
    kind: BarrierKind = BarrierKind.BLOCK
    barrier_id: int = 0
    threads: int | None = None


@dataclass(frozen=True, eq=False)
class AsyncWait(Stmt):
    """``cp.async.wait_group pending``: all but the newest `pending` groups of this thread's
    ``cp.async`` copies have landed (and are visible after the next barrier)."""

    pending: int = 0


@dataclass(frozen=True, eq=False)
class AsyncCommit(Stmt):
    """``cp.async.commit_group``: close the current group of ``cp.async`` copies."""


@dataclass(frozen=True, eq=False)
class MbarrierInit(Stmt):
    """Initialise every mbarrier of `barriers` (an `Space.MBARRIER` buffer) with `arrive_count`:
    a phase completes when that many arrivals have happened and the announced transaction bytes
    (TMA traffic) have all landed; then the barrier's phase parity flips."""

    barriers: TileRef
    arrive_count: int
    #: The count is ``role arrivals x warpgroups``: the releasing role arrives once per warpgroup
    #: (`MbarrierArrive.per_warpgroup`), so each of its arrivals counts `warpgroups` times (1: arrivals as written).
    warpgroups: int = 1
    #: A barrier of the block's 2-block cluster (`Kernel.cluster`): every arrival on it is made on this block's
    #: barrier and on the peer block's at the same offset, so a phase completes once both blocks have made their
    #: `arrive_count` arrivals (the hardware count is twice `arrive_count`). No TMA bytes are announced on it.
    cluster: bool = False


@dataclass(frozen=True, eq=False)
class MbarrierArrive(Stmt):
    """Arrive on an mbarrier (once per executing role: one elected thread arrives); with
    `expect_bytes`, also announce that many bytes of TMA traffic for the current phase."""

    barrier: TileRef
    expect_bytes: int = 0
    #: Each warpgroup of the executing role arrives for itself (one elected thread per warpgroup, no barrier among
    #: the role's threads first): ``len(role.warpgroups)`` arrivals. Set by the deferred-release pass, where each
    #: warpgroup releases a stage once its own MMAs have finished reading it.
    per_warpgroup: bool = False


@dataclass(frozen=True, eq=False)
class MbarrierWait(Stmt):
    """Block until the mbarrier's phase with parity `phase` has completed, i.e. until the
    barrier's current phase parity differs from `phase` (``mbarrier.try_wait.parity``)."""

    barrier: TileRef
    phase: Expr


@dataclass(frozen=True, eq=False)
class WgmmaWait(Stmt):
    """``wgmma.wait_group pending``: wait until at most `pending` of the executing warpgroup's ``wgmma`` groups
    are in flight (0: every asynchronous `Gemm` before it has finished reading its operands and writing its
    accumulator). `after`, a register fragment, pins the wait behind that fragment's computation in the emitted
    code (a scheduling constraint only: ptxas otherwise hoists a wait, which names no register, as far up as the
    previous one, and the work meant to overlap the MMAs in flight waits for them). `note` is a comment for
    readers."""

    pending: int = 0
    note: str = ""
    after: TileRef | None = None


class TurnKind(StrEnum):
    WAIT = "wait"  # bar.sync on this warpgroup's turn barrier: until the previous warpgroup passes the turn
    PASS = "pass"  # bar.arrive on the next warpgroup's turn barrier: hand the turn on


@dataclass(frozen=True, eq=False)
class WarpgroupTurn(Stmt):
    """Turn-taking among the warpgroups of a warp role (FlashAttention-3's ping-pong): the warpgroups hold one turn in
    a ring, and what one does between taking the turn (`TurnKind.WAIT`) and handing it on (`TurnKind.PASS`) is issued
    while the others wait (their MMAs queue behind its, their softmax overlaps them). Scheduling only: no data moves
    and no access is ordered that the mbarriers and waits do not already order, so the verifier and the interpreter
    treat it as doing nothing; the tracer proves the protocol cannot deadlock (`argus.lang.sync.check_turns`). The
    code generator gives the role one named barrier per warpgroup, passes the first turn to warpgroup 0 at the role's
    start and collects the ring's last pass at its end."""

    kind: TurnKind = TurnKind.WAIT


@dataclass(frozen=True, eq=False)
class GroupBarrier(Stmt):
    """A barrier among `count` blocks of the grid (`T.group_barrier`), on the 32-bit counter `counter` (element
    ``index`` of an integer global tensor, shape (1,)): each arriving block adds to the counter once, the block of
    `rank` 0 ``2^31 - (count - 1)`` and the others 1, so that the counter's top bit flips exactly when all `count`
    blocks have arrived, and each waits for that flip. The counter starts at a generation boundary (0, as
    allocated, or left so by a completed barrier) and is left at the next one: no reset between launches.

    Memory: what the arriving blocks' threads of the executing scope wrote to global memory before it is visible
    to their reads after it (a fence and the arrival at GPU scope, the wait an acquire). Progress rests on the
    `count` blocks that share a counter all running at once (a persistent grid of at most one block per SM, each
    block waiting only for units of the same round or earlier), which the kernel's plan provides; the interpreter
    runs every block of such a kernel together and reports a barrier that can never complete."""

    counter: TileRef
    rank: Expr
    count: int


class FenceKind(StrEnum):
    PROXY_ASYNC = "proxy_async"  # fence.proxy.async: generic-proxy writes visible to TMA/wgmma
    WGMMA = "wgmma"  # wgmma.fence: registers/shared memory ready for wgmma


@dataclass(frozen=True, eq=False)
class Fence(Stmt):
    kind: FenceKind


# --- the kernel ------------------------------------------------------------------------------------


class TileOrder(StrEnum):
    ROW_MAJOR = "row_major"
    COLUMN_MAJOR = "column_major"
    GROUPED = "grouped"  # L2-friendly swizzled raster


@dataclass(frozen=True)
class Policies:
    """The compiler policies a kernel was traced with, named so that one can change at a time.
    Each is a plain value; ``None`` means "not used by this kernel"."""

    tile_shape: tuple[int, ...] | None = None
    stages: int | None = None
    swizzle: int | None = None
    warp_roles: tuple[str, ...] | None = None
    register_split: tuple[int, ...] | None = None
    tile_order: TileOrder | None = None
    persistent: bool | None = None
    unroll: int | None = None

    def changed(self, **kwargs: Any) -> Policies:
        from dataclasses import replace

        return replace(self, **kwargs)


@dataclass(frozen=True, eq=False)
class PartialOutput:
    """``T.writes_part(C, why)``: the kernel writes only part of global tensor `tensor`, by design (a split tail's
    whole-wave kernel leaves the tail's tiles to the kernels after it). The verifier does not check that every
    element of it is written (*output coverage*, listed as not checked with `why`), or, with `below`, checks the
    elements below those limits only (a grouped GEMM's rows before the last expert's end); every other check
    applies."""

    tensor: Buffer
    why: str
    loc: SourceLoc | None = None
    # per dimension, an exclusive upper limit on the part written (None: the whole extent); expressions of the sizes
    # and of tensor data read at indices of the sizes (``offs[E - 1]``). Given, the verifier checks that every element
    # below the limits is written; without, it checks nothing of the tensor's coverage
    below: tuple[Expr | int | None, ...] | None = None


@dataclass(frozen=True, eq=False)
class PartialSums:
    """``T.partial_sums(W, axis, why)``: the slices of global tensor `tensor` along `axis` are terms of one sum, added
    (or merged, as split attention's log-sum-exp combine) by a later kernel: a split of a contraction's partial
    results. The verifier proves that no element of a matrix-multiply operand enters the accumulations stored into two
    slices at the same other coordinates (*contraction accumulated once across the slices*)."""

    tensor: Buffer
    axis: int
    why: str
    loc: SourceLoc | None = None


@dataclass(frozen=True, eq=False)
class ValueAssumption:
    """A declaration about the *contents* of an integer global tensor the kernel reads as scalars (``offs[g]``):
    every element lies in ``lo .. hi`` (inclusive; None: unbounded on that side; expressions of the shape symbols),
    and, with `nondecreasing`, ``tensor[i] <= tensor[j]`` for every ``i <= j`` (a 1-d tensor). Made by
    ``T.assume_values``.

    Semantics: the verifier proves the kernel for every content of `tensor` these facts allow (and only for those);
    the interpreter refuses a call whose data violates one (``INTERP_DATA_ASSUMPTION``); the GPU runtime does not
    read device data before a launch, so there it is the caller's contract (`argus.kernels.moe` establishes the
    grouped kernels' by construction: offsets from a cumulative sum of counts); the code generator emits nothing
    for it."""

    tensor: Buffer
    lo: Expr | int | None = None
    hi: Expr | int | None = None
    nondecreasing: bool = False
    loc: SourceLoc | None = None
    # ``tile_counts=(offs, tile)``: element g is the count of `tile`-row tiles of the first g + 1 segments of the
    # cumulative row ends `counts_of`: ``sum(cdiv(offs[h] - offs[h - 1], tile) for h <= g)``, ``offs[-1] = 0``
    counts_of: Buffer | None = None
    tile: int = 0

    def describe(self) -> str:
        """The declaration in words: ``offs nondecreasing, in [0, R]``."""
        parts = ["nondecreasing"] if self.nondecreasing else []
        if self.lo is not None or self.hi is not None:
            lo = "-inf" if self.lo is None else str(self.lo)
            hi = "inf" if self.hi is None else str(self.hi)
            parts.append(f"in [{lo}, {hi}]")
        if self.counts_of is not None:
            parts.append(f"= tile_counts({self.counts_of.name}, {self.tile})")
        return f"{self.tensor.name} " + ", ".join(parts)


@dataclass(frozen=True, eq=False)
class Kernel:
    """A traced kernel: parameters, launch shape and body.

    `grid` holds one extent per grid dimension and `block_vars` the matching block indices;
    `threads` is the block size; `thread_var` is the thread index inside the block. `shape_vars`
    are the symbolic extents of the global parameters (``M``, ``N``, ``K``), with `assumptions`
    (boolean expressions over them) that the verifier may rely on. `params` lists the scalar
    trace-time parameters (tile sizes, stages) the kernel was specialized with.
    """

    name: str
    tensors: tuple[Buffer, ...]
    shape_vars: tuple[Var, ...]
    grid: tuple[Expr | int, ...]
    block_vars: tuple[Var, ...]
    threads: int
    thread_var: Var
    body: tuple[Stmt, ...]
    params: tuple[tuple[str, Any], ...] = ()
    policies: Policies = Policies()
    assumptions: tuple[Expr, ...] = ()
    # where each of `assumptions` was declared (``T.assume``), parallel to it; None for the implicit ``size >= 1``
    assumption_locs: tuple[SourceLoc | None, ...] = ()
    grid_loc: SourceLoc | None = None  # the ``with T.grid(...)`` statement (grid, threads, blocks_per_sm)
    loc: SourceLoc | None = None
    blocks_per_sm: int = 1  # blocks meant to be resident on an SM together (launch bounds, budgets)
    # declared with T.assume_values: facts about the contents of tensors read as scalars (offsets, tile counts)
    value_assumptions: tuple[ValueAssumption, ...] = ()
    # declared with T.writes_part: outputs the kernel writes only part of by design (another kernel of its plan
    # writes the rest), each with the reason: the verifier's output coverage lists them as not checked
    partial_outputs: tuple[PartialOutput, ...] = ()
    # declared with T.partial_sums: outputs whose slices along an axis are terms of one sum a later kernel adds (a
    # split's partial results): the verifier proves no operand element enters two slices' accumulations
    partial_sums: tuple[PartialSums, ...] = ()
    # blocks per thread-block cluster along the first grid dimension (``T.grid(..., cluster=2)``): blocks 2c and
    # 2c + 1 form cluster c and share multicast TMA loads (`Copy.multicast`) and cluster barriers
    # (`MbarrierInit.cluster`); 1: no clusters
    cluster: int = 1

    def tensor(self, name: str) -> Buffer:
        for t in self.tensors:
            if t.name == name:
                return t
        raise KeyError(f"kernel {self.name} has no tensor parameter {name!r}")

    def cluster_barriers(self) -> frozenset[int]:
        """id() of the mbarrier buffers that are the cluster pair's (`MbarrierInit.cluster`)."""
        return frozenset(id(s.barriers.buffer) for s in walk(self.body) if isinstance(s, MbarrierInit) and s.cluster)


def walk(stmts: tuple[Stmt, ...]):
    """Every statement, depth first, in program order."""
    for s in stmts:
        yield s
        if isinstance(s, For | Role | Let):
            yield from walk(s.body)
        elif isinstance(s, If):
            yield from walk(s.then)
            yield from walk(s.orelse)


def written_tensors(kernel: Kernel) -> tuple[Buffer, ...]:
    """The global tensors `kernel` writes (its outputs), in parameter order: the destinations of its copies,
    fills and elementwise statements that are kernel parameters."""
    written = {id(s.dst.buffer) for s in walk(kernel.body) if isinstance(getattr(s, "dst", None), TileRef)}
    written |= {id(s.counter.buffer) for s in walk(kernel.body) if isinstance(s, GroupBarrier)}
    return tuple(t for t in kernel.tensors if id(t) in written)
