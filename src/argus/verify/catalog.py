"""The catalog of the verifier's findings: one entry per stable code, the one source of truth.

Every finding the verifier reports carries a code ``CATEGORY_DETAIL`` from this table, with a
title, a description in the user's terms, a severity and a hint on how to fix it. Codes never
change meaning once published (programs and the agent key on them); new codes are added, old ones
may be retired but not reused.

Severities:

* ``error`` — a violated built-in invariant or tag assertion: the kernel computes something
  other than what it says, or may, for some block, thread or problem size;
* ``warning`` — a performance signal (bank conflicts, uncoalesced access) or a requirement the
  kernel does not state; never makes a kernel fail verification;
* ``unknown`` — an ``UNKNOWN_*`` reason: the verifier could not decide, and says what to pin or
  simplify so that it can.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from argus.diagnostics.catalog import fix_for


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class CatalogEntry:
    """One code of the catalog."""

    code: str
    title: str
    description: str
    severity: Severity
    reserved_hint: str = ""  # only for a reserved code the diagnostics catalog does not list (never produced)

    @property
    def hint(self) -> str:
        """How to fix it: the fix of the code in `argus.diagnostics.Code`, the one catalog of every code."""
        return fix_for(self.code) or self.reserved_hint

    @property
    def category(self) -> str:
        return self.code.split("_", 1)[0]


class CatalogError(KeyError):
    """A code that is not in the catalog (a bug in the verifier, never the user's)."""


_ENTRIES: tuple[CatalogEntry, ...] = (
    # --- MMA operand alignment -------------------------------------------------------------------
    CatalogEntry(
        "MMA_K_MISMATCH",
        "MMA operands disagree on the contraction index",
        "For some multiply of an MMA instruction, the A element and the B element it multiplies carry "
        "different contraction (K) indices: A(m, k) is multiplied with B(k', n) with k != k'. Typical "
        "causes: A and B tiles loaded from different K blocks, a wrong pipeline stage, a fragment laid out "
        "differently from the registers the instruction reads, a writer and a reader that disagree on the "
        "swizzle.",
        Severity.ERROR,
    ),
    CatalogEntry(
        "MMA_ROW_MISMATCH",
        "MMA accumulator row fed from the wrong A row",
        "Accumulator element (i, j) receives a product whose A factor comes from a row other than row i "
        "of the A operand tile (e.g. an A fragment whose registers hold rows in another order than the "
        "instruction reads them).",
        Severity.ERROR,
    ),
    CatalogEntry(
        "MMA_COL_MISMATCH",
        "MMA accumulator column fed from the wrong B column",
        "Accumulator element (i, j) receives a product whose B factor comes from a column other than "
        "column j of the B operand tile.",
        Severity.ERROR,
    ),
    CatalogEntry(
        "MMA_ROW_MIXED",
        "one accumulator row summed from different rows of A",
        "The products an MMA sums into one accumulator element (i, j) read, at different contraction steps k, A "
        "elements of different rows: the tag coordinate that follows A's rows (as the writes laid it down) differs "
        "between A(i, k1) and A(i, k2). Typical cause: a shared tile written through one layout and read through "
        "another that keeps the contraction index, such as a swizzle applied on one side only.",
        Severity.ERROR,
    ),
    CatalogEntry(
        "MMA_COL_MIXED",
        "one accumulator column summed from different columns of B",
        "The products an MMA sums into one accumulator element (i, j) read, at different contraction steps k, B "
        "elements of different columns: the tag coordinate that follows B's columns (as the writes laid it down) "
        "differs between B(k1, j) and B(k2, j). Typical cause: a shared tile written through one layout and read "
        "through another that keeps the contraction index, such as a swizzle applied on one side only (an N-major B "
        "tile, or V in attention's O = P V).",
        Severity.ERROR,
    ),
    # --- shared-memory races --------------------------------------------------------------------
    CatalogEntry(
        "MMA_ACC_NOT_RESET",
        "an accumulator carries one tile's products into the next",
        "A loop computes a different output tile in each iteration (it stores the accumulator to a window that moves "
        "with the loop) into one accumulator fragment, but for some iteration nothing rewrites the accumulator "
        "between the previous tile's MMAs and this tile's first MMA: the tile's result includes the previous "
        "tile's sums.",
        Severity.ERROR,
    ),
    CatalogEntry(
        "RACE_WRITE_WRITE",
        "write-write race on shared memory",
        "Two different threads write the same shared-memory location with no barrier between the two "
        "writes, so the value left there depends on timing.",
        Severity.ERROR,
    ),
    CatalogEntry(
        "RACE_READ_WRITE",
        "read-write race on shared memory",
        "A thread reads a shared-memory location that another thread writes with no barrier between the "
        "read and the write, so the read may see the old or the new value.",
        Severity.ERROR,
    ),
    CatalogEntry(
        "RACE_GLOBAL",
        "a block reads global memory another block writes in the same launch",
        "A block loads an element of a global tensor that another block of the same launch stores, and nothing "
        "orders the store before the load: blocks run at once and in any order, so the load sees the old or the new "
        "value. The one order between blocks is T.group_barrier: a barrier after the store and before the load, at "
        "which both blocks arrive at the same counter.",
        Severity.ERROR,
    ),
    CatalogEntry(
        "RACE_GROUP_RANK",
        "a group barrier's arrivals can exceed its count",
        "A T.group_barrier arrives with a rank outside 0 .. count - 1, or two of its instances (two blocks, or one "
        "block in two iterations) arrive at one counter with one rank: more than count blocks may arrive at a "
        "counter in one launch, so a generation can complete before a block the others wait for has arrived.",
        Severity.ERROR,
    ),
    CatalogEntry(
        "OOB_GROUP_COUNTER",
        "a group barrier's counter lies outside its tensor",
        "A T.group_barrier arrives at an index outside its counter tensor: the atomic add writes memory that is "
        "not the tensor's.",
        Severity.ERROR,
    ),
    CatalogEntry(
        "RACE_BARRIER_THREADS",
        "barrier that does not synchronize the threads executing it",
        "A barrier waits for a different number of threads than execute it: T.barrier() (__syncthreads) inside "
        "one warp role of a kernel with several (the other roles never arrive: a hang), or a named barrier "
        "T.barrier(id, threads=n) whose n differs from the threads of the scopes that use that id (more: it "
        "never completes; fewer: it releases before all have arrived, and they are not synchronized).",
        Severity.ERROR,
    ),
    # --- pipelines ----------------------------------------------------------------------------------
    CatalogEntry(
        "PIPELINE_STALE_READ",
        "read of an asynchronous copy's destination before it landed",
        "A thread reads shared memory that an asynchronous copy writes before that copy has completed: for "
        "cp.async, no T.async_wait covering the copy's group was executed before the read (or, when another "
        "thread issued the copy, no barrier followed that wait); for TMA, the reader did not wait on the "
        "mbarrier the copy completes on. The read sees stale or poisoned data.",
        Severity.ERROR,
    ),
    CatalogEntry(
        "PIPELINE_OVERWRITE",
        "pipeline stage overwritten before its readers finished",
        "A stage of a multi-stage buffer is written while other threads read the same stage in the same "
        "barrier interval: the refill of the stage and the consumption of its previous contents are not "
        "separated by a barrier, or the prefetch distance makes the refill hit the stage being consumed.",
        Severity.ERROR,
    ),
    CatalogEntry(
        "PIPELINE_STORE_OVERWRITE",
        "staged TMA store's chunk buffer written while an earlier TMA store still reads it",
        "A staged TMA store (atom='tma.store') writes each chunk of its tile into one of its staging buffer's chunk "
        "buffers after its warpgroup's issuing thread waits until all but its newest bulk async-groups have read "
        "shared memory (argus.atoms.tma.staged_store_wait); one of the groups that wait leaves in flight reads the "
        "chunk buffer written next, so the TMA unit may store the next chunk's values instead of that chunk's.",
        Severity.ERROR,
    ),
    CatalogEntry(
        "PIPELINE_CLUSTER_ASYMMETRIC",
        "the two blocks of a cluster issue different multicast loads or cluster arrivals",
        "In a kernel of 2-block clusters (T.grid(..., cluster=2)), each block of a cluster loads half of a multicast "
        "TMA box into both blocks, and an arrival on a cluster mbarrier is made on both blocks' barriers. The two "
        "blocks of some cluster reach such a statement a different number of times, or with a different box, stage "
        "or barrier: one block's stage then holds half of another box, or a barrier's phase completes early or never "
        "(a hang). Derive the shared operand's coordinates from the cluster index (the first block index // 2), not "
        "from the block's own index.",
        Severity.ERROR,
    ),
    CatalogEntry(
        "MMA_IN_FLIGHT",
        "accumulator used while asynchronous MMAs write it",
        "A T.gemm issued with wait_group > 0 (an asynchronous wgmma) goes on writing its accumulator after the "
        "statement, until a wgmma wait leaves fewer groups in flight; a statement other than another wgmma on the "
        "same accumulator reads or writes it before T.wgmma_wait(0) and sees (or clobbers) partial sums.",
        Severity.ERROR,
    ),
    CatalogEntry(
        "MBARRIER_PHASE",
        "mbarrier wait on the wrong barrier or phase",
        "A warp role waits on an mbarrier for a phase other than the one that signals the data it is about to "
        "use: another barrier of the array, or the wrong parity, so the wait returns for an earlier phase (or "
        "never) and the data has not landed (or the stage is refilled while it is still being read).",
        Severity.ERROR,
    ),
    CatalogEntry(
        "MBARRIER_TX",
        "mbarrier transaction bytes do not match the TMA copies",
        "The bytes announced with mbarrier_arrive(expect_bytes=...) for a phase differ from the bytes of the "
        "TMA copies that complete on that barrier: with fewer, the phase completes before all data landed; with "
        "more, it never completes.",
        Severity.ERROR,
    ),
    CatalogEntry(
        "MBARRIER_ARRIVE_COUNT",
        "mbarrier arrive count differs from the arrivals per phase",
        "An mbarrier was initialised with arrive_count=n, but the warp roles arrive on it m != n times per "
        "phase (each T.mbarrier_arrive is one arrival of the role that executes it: the interpreter counts one, "
        "and the generated code makes the role's first thread arrive once, or each warpgroup for a release it "
        "defers, with the count scaled to match). With fewer arrivals the phase "
        "never completes (a deadlock); with more, arrivals spill into the next phase, which then completes "
        "before its data has landed or its stage has been released.",
        Severity.ERROR,
    ),
    # --- proxies ---------------------------------------------------------------------------------------
    CatalogEntry(
        "FENCE_PROXY_ASYNC",
        "generic-proxy shared-memory writes read by the async proxy without fence.proxy.async",
        "Shared memory written with ordinary stores (the generic proxy: T.copy from registers, T.fill, a "
        "synchronous or cp.async copy) is later accessed by the async proxy (a wgmma operand read from shared "
        "memory, or a TMA load overwriting it), but the writing threads execute no T.fence_proxy_async() after "
        "the write and before the barrier (or mbarrier arrival) that hands the buffer over, or before the access. "
        "Without the fence the async proxy may read the old contents (or the generic write may land after the "
        "TMA data).",
        Severity.ERROR,
    ),
    # --- out of bounds ---------------------------------------------------------------------------------
    CatalogEntry(
        "OOB_GLOBAL",
        "out-of-bounds global access",
        "A global-memory access that is not masked reaches outside its tensor for some problem size. "
        "Reserved: every global access the DSL can express is masked element by element (tile windows, "
        "TMA boxes), so the verifier does not produce it (docs/verify.md, section 7).",
        Severity.ERROR,
        "access global memory through tile windows (masked), or guard the access",
    ),
    CatalogEntry(
        "OOB_SHARED",
        "shared-memory access past the buffer's allocation",
        "An access through an explicit view layout (Shared.view) reaches an offset at or past the elements "
        "allocated for the buffer (the cosize of its own layout): the view has larger strides or a larger "
        "extent than the memory the buffer was given, so the access reads or writes the next buffer.",
        Severity.ERROR,
    ),
    CatalogEntry(
        "OOB_MASKED_MMA",
        "padding of a partial tile enters an MMA's contraction as something other than no term",
        "A copy from global memory fills the out-of-bounds part of a partial tile with its `pad` value. In an MMA's "
        "contraction, padding 0 times a finite value adds nothing (the contraction's tail, as TMA fills it); an "
        "infinite padding (-inf, +inf: inf * x, or inf * 0 = NaN) or padding of unknown value (x + b over a padded x) "
        "adds a term that does not exist to an accumulator element of real data.",
        Severity.ERROR,
    ),
    CatalogEntry(
        "OOB_MASKED_REDUCTION",
        "masked elements of a partial tile enter a reduction with the wrong fill value",
        "A copy from global memory fills the out-of-bounds part of a partial tile with its `pad` value; that "
        "padding, as transformed by the operations after the copy (elementwise maps, T.where masks, MMAs), then "
        "enters a reduction over real data with a value that is not the reduction's identity (0 in a maximum, "
        "exp(0 - max) in a sum, for example), so the result depends on elements that do not exist. Elements a "
        "kernel declares excluded with T.exclude (attention's keys past the causal diagonal) count as such padding.",
        Severity.ERROR,
    ),
    CatalogEntry(
        "VALUE_SCALE_MISMATCH",
        "partial results scaled by different running statistics are combined",
        "Online softmax keeps its partial results (the output accumulator, the row sum) relative to the running "
        "row maximum: exp2(x - m). When the maximum grows, every partial result must be rescaled by "
        "exp2(m_old - m_new) before new terms are added, and the final normalisation must divide values relative "
        "to the same maximum. Here a sum, an accumulation (T.gemm into o) or a quotient combines two values "
        "scaled by different versions of the statistic, e.g. o never multiplied by alpha, or l summed without it.",
        Severity.ERROR,
    ),
    CatalogEntry(
        "COVERAGE_CONTRACTION",
        "an element of a matrix-multiply operand is never loaded",
        "For some problem size the kernel allows, an element of a global tensor that feeds a T.gemm operand lies "
        "in no window any block loads: a K loop of K // BK iterations that drops the tail, a grid short of the "
        "last tile. Every element of an operand contributes to some output, so a sum misses terms.",
        Severity.ERROR,
    ),
    CatalogEntry(
        "COVERAGE_OUTPUT",
        "an element of an output is never written",
        "For some problem size the kernel allows, an element of a tensor the kernel stores into lies in no "
        "window any block stores: a tile narrower than the row, an epilogue storing the tile of another block, "
        "a grid of M // BM blocks where cdiv(M, BM) are needed. The element keeps whatever the tensor held.",
        Severity.ERROR,
    ),
    CatalogEntry(
        "COVERAGE_OUTPUT_TWICE",
        "an element of an output is written twice",
        "For some problem size the kernel allows, an element of a tensor the kernel stores into lies in the "
        "windows of two different blocks (more blocks than tiles, a split-K grid storing partial sums to one tile, an "
        "epilogue that also stores the neighbouring tile), or in the windows one store writes in two iterations of a "
        "loop its window moves with. The element ends up with whichever value is stored last.",
        Severity.ERROR,
    ),
    CatalogEntry(
        "COVERAGE_CONTRACTION_TWICE",
        "an element of a matrix-multiply operand enters one accumulation twice",
        "Within one block and one accumulation (the iterations between resets of the accumulator), two different "
        "loads that feed a T.gemm operand read the same element of the tensor: a K loop of cdiv(K, BK) + 1 "
        "iterations with a clamped block index, a block index k // 2. Its products are added to the sum twice. "
        "(Windows past the end of the tensor read padding and do not count.) Also across the slices of an output "
        "declared partial sums (T.partial_sums: a later kernel adds them): two blocks storing into two slices at the "
        "same other coordinates load one element (splits of K whose shares overlap).",
        Severity.ERROR,
    ),
    # --- alignment and budgets --------------------------------------------------------------------
    CatalogEntry(
        "ALIGN_VECTOR",
        "misaligned vector copy",
        "A copy that asks for vectors (atom='vector' or 'cp.async') moves runs of 16 bytes (or the whole "
        "row, if shorter), but for some problem size, block or loop iteration allowed by the kernel's "
        "assumptions a run's global address is not a multiple of the run's size (a row stride or a tile "
        "origin that is not a multiple of the vector width). The generated code then moves those runs "
        "element by element, synchronously: the atom the kernel asked for does not run.",
        Severity.ERROR,
    ),
    CatalogEntry(
        "ALIGN_ASSUMPTION",
        "vector width of a copy depends on an undeclared assumption about the problem size",
        "A copy with atom='auto' moves 16-byte vectors only when a row stride or tile origin is a multiple "
        "of the vector width; for other problem sizes allowed by the kernel's assumptions the generated code "
        "falls back to element-by-element accesses (correct, but slower).",
        Severity.WARNING,
    ),
    CatalogEntry(
        "ALIGN_TMA",
        "TMA copy the tensor-map rules reject",
        "A TMA copy needs every global row stride to be a multiple of 16 bytes (for every problem size the "
        "kernel's assumptions allow), every box extent in 1..256, the box's inner extent a multiple of 16 "
        "bytes (and, with a swizzle, at most the swizzle's width). Otherwise cuTensorMapEncodeTiled rejects "
        "the tensor map and the kernel cannot be launched for those sizes (RUNTIME_ARG_TMA).",
        Severity.ERROR,
    ),
    CatalogEntry(
        "LAYOUT_TMA_BOX",
        "TMA box into a shared layout TMA cannot write",
        "A TMA load writes its box densely, row-major over the box, with one of Hopper's swizzles (none, 32, 64 or "
        "128 bytes), and its inner extent may not exceed the swizzle span. The destination window's layout "
        "(relative to its first element, in every stage) is not that, so the code generator refuses the copy; the "
        "interpreter, which writes through the layout, would hide it.",
        Severity.ERROR,
    ),
    CatalogEntry(
        "LAYOUT_WGMMA_OPERAND",
        "wgmma operand in a shared layout no descriptor describes",
        "wgmma reads a shared-memory operand through a matrix descriptor: each warpgroup's sub-tile of each k16 "
        "step must be one of PTX's canonical layouts, K-major or (16-bit types only) MN-major, built from "
        "swizzle atoms with one leading and one stride byte offset that hold for every stage and warpgroup. This "
        "operand's layout is none of them, so no descriptor (and no transpose flag) reads it correctly.",
        Severity.ERROR,
    ),
    CatalogEntry(
        "BUDGET_SMEM",
        "shared memory over budget",
        "The shared-memory buffers of one block, carved as the generated code carves them (physical extents, "
        "padding, mbarriers and the start alignment of each buffer included), "
        "need more than the 227 KiB a Hopper block may use.",
        Severity.ERROR,
    ),
    CatalogEntry(
        "BUDGET_REGISTERS",
        "register budget exceeded",
        "The fragments live at one program point need more 32-bit registers per thread than the thread "
        "may have (255, or the warp role's setmaxnreg budget), so the compiler must spill.",
        Severity.ERROR,
    ),
    # --- performance warnings ---------------------------------------------------------------------------
    CatalogEntry(
        "PERF_BANK_CONFLICT",
        "shared-memory bank conflicts",
        "The threads of a warp access the same shared-memory bank at different addresses in one "
        "instruction, which serializes the access into several wavefronts; the degree is the number of "
        "wavefronts per conflict-free wavefront.",
        Severity.WARNING,
    ),
    CatalogEntry(
        "PERF_UNCOALESCED",
        "uncoalesced global access",
        "The threads of a warp touch more 32-byte sectors of global memory in one instruction than the "
        "bytes they move need; the degree is sectors touched per sector needed.",
        Severity.WARNING,
    ),
    # --- user assertions --------------------------------------------------------------------------------
    CatalogEntry(
        "TAG_ASSERT",
        "tag assertion violated",
        "A T.assert_tag or T.assert_tag_eq does not hold for some block, thread, element or loop iteration.",
        Severity.ERROR,
    ),
    # --- reasons for `unknown` ----------------------------------------------------------------------
    CatalogEntry(
        "UNKNOWN_STATEMENT",
        "statement not modelled by the verifier",
        "The kernel contains a statement the verifier has no semantics for yet; anything that depends on "
        "it is reported unknown, never verified.",
        Severity.UNKNOWN,
    ),
    CatalogEntry(
        "UNKNOWN_SOLVER",
        "the SMT solver gave up",
        "Z3 returned unknown (time-out, resource limit or a non-linear term) for this query, or the query's "
        "encoding outgrew its budget (more than argus.verify.model.MAX_READS reads of buffer histories).",
        Severity.UNKNOWN,
    ),
    CatalogEntry(
        "UNKNOWN_LOOKBACK",
        "value may come from further back than the verifier looks",
        "The element read may have been written more loop iterations ago than the verifier's look-back "
        "bound, so its tag is not known.",
        Severity.UNKNOWN,
    ),
    CatalogEntry(
        "UNKNOWN_LAYOUT_INVERSE",
        "layout the verifier cannot invert",
        "Reading shared memory means finding which write landed at an offset; this layout's strides "
        "interleave, so the verifier cannot invert it.",
        Severity.UNKNOWN,
    ),
    CatalogEntry(
        "UNKNOWN_TAG_AXES",
        "cannot tell which tag coordinate is the contraction index",
        "The tags of an MMA operand do not follow its tile axes in a way the verifier can track (different "
        "writers disagree, or a user tag mixes coordinates).",
        Severity.UNKNOWN,
    ),
    CatalogEntry(
        "UNKNOWN_VALUE_SCALE",
        "scale of an online-softmax partial result not understood",
        "A sum or normalisation combines a value whose scale by a running statistic the verifier cannot follow: "
        "exp2 of a function that is not linear in the row statistics, a B operand scaled along the contraction, a "
        "scale that does not settle over the loop's iterations, a path through a branch on the thread, or a scaled "
        "value handed to another warp role.",
        Severity.UNKNOWN,
    ),
    CatalogEntry(
        "UNKNOWN_WARP_ROLES",
        "data flow between warp roles not modelled",
        "The value is produced in one warp role and consumed in another, synchronized by mbarriers; the "
        "verifier does not model that synchronization yet.",
        Severity.UNKNOWN,
    ),
    CatalogEntry(
        "UNKNOWN_MBARRIER_ORDER",
        "TMA load and its read not related by an mbarrier wait the verifier can check",
        "Outside warp roles, a read of a TMA destination must follow a wait on the load's mbarrier element; the "
        "wait's parity is checked against the tile order of a T.pipeline loop only. This wait is not in one, or "
        "not provably on the loop's stage.",
        Severity.UNKNOWN,
    ),
    CatalogEntry(
        "UNKNOWN_ASYNC_READ",
        "asynchronous MMA read whose retirement is not placed",
        "A wgmma with wait_group P > 0 keeps reading its shared operands after its statement, until a later wait "
        "retires it. The verifier places that retirement when the wgmma is the only MMA of its loop's body (not in "
        "a branch) and a wgmma wait of 0 follows the loop: the read of iteration j ends at iteration j + P. "
        "Elsewhere a write to the buffer may overlap the read, and the check is not decided.",
        Severity.UNKNOWN,
    ),
    CatalogEntry(
        "UNKNOWN_BRANCH",
        "branch not modelled",
        "A T.if_ whose condition depends on the thread, or that contains a barrier, is not modelled precisely.",
        Severity.UNKNOWN,
    ),
)

CATALOG: dict[str, CatalogEntry] = {e.code: e for e in _ENTRIES}

#: Codes in the catalog that the verifier never produces, and why (docs/verify.md, section 7).
NOT_PRODUCED: dict[str, str] = {
    "OOB_GLOBAL": "every global access the DSL can express is masked element by element (tile windows and "
    "TMA boxes), so none can reach outside its tensor",
}

#: Codes whose seeded bug is not a kernel of the corpus (`tests/verify/corpus`), with the test that seeds it: what
#: they check is the code generator's protocol, not the kernel's, so no kernel violates them while the protocol is
#: right.
SEEDED_OUTSIDE_CORPUS: dict[str, str] = {
    "PIPELINE_STORE_OVERWRITE": "tests/verify/test_staged_store.py (a staged TMA store's waits and chunk buffers are "
    "argus.atoms.tma's protocol; the test seeds session 52's wrong one)",
}


def entry(code: str) -> CatalogEntry:
    """The catalog entry of `code` (raises `CatalogError` for a code that does not exist)."""
    try:
        return CATALOG[code]
    except KeyError:
        raise CatalogError(f"verifier code {code!r} is not in the catalog") from None


def codes(severity: Severity | None = None) -> list[str]:
    """Every code, optionally of one severity, in catalog order."""
    return [e.code for e in _ENTRIES if severity is None or e.severity == severity]
