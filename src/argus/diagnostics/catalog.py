"""The diagnostics catalog: every code argus reports, with its category, a message template and a fix.

`Code` is a string enum whose value is the code itself, so ``Code.DSL_UNKNOWN_PARAM == "DSL_UNKNOWN_PARAM"`` and
existing string comparisons keep working; a raise site may pass ``Code.X`` wherever it passes ``"X"`` today.
Each member carries:

* ``category`` — the layer that reports it (`Category`), which is not always the code's prefix (the verifier's
  ``LAYOUT_TMA_BOX`` is a finding of the verifier; the gate's ``VERIFY_VIOLATED`` is a gate outcome);
* ``message`` — what the report says, with ``{placeholders}`` where the reporting site fills in values;
* ``fix`` — what the user does about it (for an internal invariant: report it as a bug).

The catalog holds three vocabularies in one namespace, checked for clashes by `tests/test_diagnostics_catalog.py`:
the codes of typed errors (`argus.diagnostics.ArgusError` and its kin), the verifier's findings (whose title,
description and severity live in `argus.verify.catalog`, whose hint equals the fix here), and the gate's outcome
codes (whose stage and meaning live in `argus.eval.codes`). A code enters when something reports it and leaves
when nothing does: the test scans the source for both. `ArgusError` shows the fix as its hint when the raise site
gives none; ``argus explain CODE`` prints an entry; `docs/diagnostics.md` is `markdown()`'s output.

This module imports nothing but the standard library (layer 0, like `argus.diagnostics`).
"""

from __future__ import annotations

import re
from enum import StrEnum, auto


class Category(StrEnum):
    """The layer that reports a code, in layer order (docs/architecture.md)."""

    LAYOUT = "LAYOUT"
    IR = "IR"
    ATOM = "ATOM"
    DSL = "DSL"
    VERIFY = "VERIFY"
    INTERP = "INTERP"
    CODEGEN = "CODEGEN"
    RUNTIME = "RUNTIME"
    KERNEL = "KERNEL"
    TASK = "TASK"
    GATE = "GATE"
    KB = "KB"
    LINEAGE = "LINEAGE"
    FRONTEND = "FRONTEND"
    AGENT = "AGENT"
    CLI = "CLI"

    @property
    def description(self) -> str:
        """Where codes of this category come from, and as what."""
        return _CATEGORY_TEXT[self]


_CATEGORY_TEXT: dict[Category, str] = {
    Category.LAYOUT: "the layout algebra (argus.layout), raised as LayoutError (LayoutParseError for text)",
    Category.IR: "IR types and the IR serializer (argus.ir), raised as DTypeError and IRSerializeError",
    Category.ATOM: "the hardware atoms and their constraints (argus.atoms), raised (or returned by diagnose) as "
    "AtomError",
    Category.DSL: "the tile DSL and its tracer (argus.lang, and the library kernels' own parameter checks), raised as "
    "DSLError at the kernel's line",
    Category.VERIFY: "the verifier (argus.verify): the findings of `argus verify` (violations, warnings and unknowns; "
    "title, description and severity in argus.verify.catalog, docs/verify.md), and PinnedShapeError",
    Category.INTERP: "the lane-level CPU interpreter (argus.interp), raised as InterpError",
    Category.CODEGEN: "the CUDA code generator and toolchain (argus.backend.cuda), raised as CodegenError, and as "
    "ToolchainError, CompileError and InspectError (BackendError)",
    Category.RUNTIME: "loading and launching compiled kernels (argus.runtime): ArgumentError before a launch, "
    "LaunchError from the CUDA driver",
    Category.KERNEL: "the kernel library and kernels of your own (argus.kernels), raised as KernelLookupError and "
    "UserKernelError",
    Category.TASK: "tasks: built-in, KernelBench and your kernel's (argus.tasks), raised as TaskError",
    Category.GATE: "the gate (argus.eval): the outcome code of a stage (StageResult.code; stage and meaning in "
    "argus.eval.codes, docs/eval.md), timing flags, and the errors of its sandbox, results store, executor and cost "
    "model (SandboxError, StoreError, ExecutorError, CostModelError)",
    Category.KB: "the knowledge base (argus.kb), raised as KBError and SchemaError",
    Category.LINEAGE: "KLineage (argus.lineage), raised as LineageError",
    Category.FRONTEND: "from a PyTorch module to DSL kernels (argus.frontend, `argus solve`), raised as FrontendError",
    Category.AGENT: "the optimization loop (argus.agent): AgentError, CoderError, the run store's StoreError and the "
    "LLM providers' ProviderError",
    Category.CLI: "the argus command itself (argus.cli)",
}


def _entry(category: Category, message: str, fix: str) -> tuple[object, Category, str, str]:
    """One member's value: its code (the member's name, filled in by `Code._generate_next_value_`), category,
    message template and fix."""
    return (auto(), category, message, fix)


class Code(StrEnum):
    """Every code argus reports. The value is the code; ``category``, ``message`` (a template) and ``fix`` are
    attached. Members are grouped by category, in layer order."""

    category: Category
    message: str
    fix: str

    @staticmethod
    def _generate_next_value_(name: str, start: int, count: int, last_values: list[object]) -> str:
        return name

    def __new__(cls, value: str, category: Category, message: str, fix: str) -> Code:
        member = str.__new__(cls, value)
        member._value_ = value
        member.category = category
        member.message = message
        member.fix = fix
        return member

    # --- LAYOUT: the layout algebra ---------------------------------------------------------------------------
    LAYOUT_BAD_COORDINATE = _entry(
        Category.LAYOUT,
        "coordinate {coordinate} is not congruent with shape {shape}",
        "give one coordinate per mode of the shape, nested the same way, or a single integer index below "
        "size(shape); a slice (None) selects modes and cannot be evaluated to an index",
    )
    LAYOUT_BAD_INT_TUPLE = _entry(
        Category.LAYOUT,
        "{what} contains {value!r} ({type}), expected an integer or a tuple of them",
        "build shapes, strides and coordinates from Python ints and nested tuples of them (not bools, floats or lists)",
    )
    LAYOUT_BAD_MODE = _entry(
        Category.LAYOUT,
        "mode {index} of {layout} does not exist (rank {rank})",
        "index modes from 0 to rank(layout) - 1",
    )
    LAYOUT_BAD_OPERAND = _entry(
        Category.LAYOUT,
        "{operation}: {operand!r} is not an operand it is defined for (expected {expected})",
        "pass what the operation takes: a Layout (a ComposedLayout or a layout string where the docstring says "
        "so), a permutation of the modes for an order, a positive int for a cotarget",
    )
    LAYOUT_BAD_PROFILE = _entry(
        Category.LAYOUT,
        "{operation}({layout}, {profile}): profile has more modes",
        "give a profile with at most as many modes as the layout, nested like its shape",
    )
    LAYOUT_BAD_SHAPE = _entry(
        Category.LAYOUT,
        "{what} {shape} is not a shape of positive extents",
        "use positive integers for every extent; a tile shape is two of them, written M,N or (M,N)",
    )
    LAYOUT_BAD_SWIZZLE = _entry(
        Category.LAYOUT,
        "Swizzle<{bits},{base},{shift}> is not a swizzle (or: Hopper has no {swizzle_bytes}-byte swizzle mode)",
        "use integers B, M >= 0 with |S| >= B (Hopper's swizzles have S = 3); a swizzle mode is 0 (none), 32, 64 or "
        "128 bytes, over elements of 8, 16, 32, 64 or 128 bits",
    )
    LAYOUT_BAD_TILER = _entry(
        Category.LAYOUT,
        "{operation}({layout}, {tiler}): the tiler has {modes} modes, the layout only {rank}",
        "give the tiler at most as many modes as the layout (group the layout's modes first if it needs fewer)",
    )
    LAYOUT_DIVISIBILITY = _entry(
        Category.LAYOUT,
        "shape_div({a}, {b}): neither divides the other",
        "choose tile and shape extents that divide one another (a tile of 64 along an extent of 256, not of 48)",
    )
    LAYOUT_INCONGRUENT = _entry(
        Category.LAYOUT,
        "shape {shape} and stride {stride} are not congruent",
        "give one stride per shape extent, nested the same way (the same tuple structure); elementwise operations "
        "need operands of the same structure",
    )
    LAYOUT_NEEDS_PILLOW = _entry(
        Category.LAYOUT,
        "drawing a layout as PNG needs Pillow, which is not installed",
        "pip install 'argus-kernels[viz]', or print the layout as text (argus layout show without --png)",
    )
    LAYOUT_NEGATIVE_STRIDE = _entry(
        Category.LAYOUT,
        "{operation}({layout}): negative stride {stride}",
        "cosize, complement and composition's right operand are defined for non-negative strides: reverse the "
        "mode's order instead of negating its stride",
    )
    LAYOUT_NOT_COMPLEMENTABLE = _entry(
        Category.LAYOUT,
        "stride {stride} of complement({layout}, {cotarget}) {what}",
        "complement needs an injective layout whose sorted strides divide each other and fit in the cotarget; "
        "coalesce it, or drop the mode that overlaps",
    )
    LAYOUT_PARSE = _entry(
        Category.LAYOUT,
        "cannot parse {text!r}: expected {expected} at position {position}, found {found}",
        "write the layout as CuTe prints it: shape:stride such as (4,8):(8,1), or Sw<B,M,S> o offset o layout for "
        "a swizzled one",
    )
    LAYOUT_RENDER_RANK = _entry(
        Category.LAYOUT,
        "cannot draw {layout} as a grid: it has rank {rank}, a picture shows rank 1 or 2",
        "group the modes into two (make_layout(make_layout(L[0], L[1]), L[2])) or draw a slice (L(None, None, 0)); "
        "a TV layout has exactly two modes, thread and value",
    )
    LAYOUT_RENDER_SIZE = _entry(
        Category.LAYOUT,
        "{title} has {rows}x{cols} cells, more than the {limit} a PNG picture draws",
        "draw a slice or a tile of the layout instead (L(None, 0), or zipped_divide by a tile)",
    )
    LAYOUT_SHAPE_DIVISIBILITY = _entry(
        Category.LAYOUT,
        "shape {shape} is not divisible by {new_shape} in composition({a}, {b})",
        "make the right operand's extent split evenly across the left operand's modes",
    )
    LAYOUT_SOLVER_UNKNOWN = _entry(
        Category.LAYOUT,
        "Z3 could not decide whether {layout} is injective: {reason}",
        "try a smaller layout (a tile of it) or a longer solver timeout",
    )
    LAYOUT_STRIDE_DIVISIBILITY = _entry(
        Category.LAYOUT,
        "stride {stride} does not divide shape {shape}, nor the reverse, in composition({a}, {b})",
        "make the right operand step over whole extents of the left one (its strides multiples or divisors of the "
        "left shape's prefix products)",
    )
    LAYOUT_TOO_LARGE = _entry(
        Category.LAYOUT,
        "cosize({layout}) would enumerate {count} coordinates",
        "work on a tile of the layout: a composed layout's cosize is found by enumerating its domain",
    )
    LAYOUT_TV_OUT_OF_TILE = _entry(
        Category.LAYOUT,
        "TV layout {tv} maps thread {thread}, value {value} to index {index}, outside the {m}x{n} tile",
        "give the tile shape (M, N) that holds every index the layout produces, or fix the layout's strides",
    )

    # --- IR: types and the serializer -------------------------------------------------------------------------
    DTYPE_BAD_DEFINITION = _entry(
        Category.IR,
        "{kind} type {name!r}: {problem}",
        "a float type's sign, exponent and mantissa bits add up to its width, and only float types set them; argus's "
        "own dtypes never raise this, so if one does, report it as a bug",
    )
    DTYPE_NOT_FLOAT = _entry(
        Category.IR,
        "{what} is defined for float types; {dtype} is {kind}",
        "ask for it of a float dtype (f32, f16, bf16), or cast the value to one first",
    )
    DTYPE_NOT_INTEGER = _entry(
        Category.IR,
        "{what} is defined for integer types; {dtype} is {kind}",
        "ask for it of an integer dtype (i32, u32), or cast the value to one first",
    )
    DTYPE_NOT_NUMERIC = _entry(
        Category.IR,
        "cannot convert an array of {array_dtype} to {dtype}",
        "pass arrays of numbers (ints, floats or bools), not objects or strings",
    )
    DTYPE_NO_NUMPY = _entry(
        Category.IR,
        "{dtype} has no numpy representation",
        "pass the data as a torch tensor, or convert it to a dtype numpy holds (f32, f16, i32, u32) first",
    )
    DTYPE_OUT_OF_RANGE = _entry(
        Category.IR,
        "values in [{low}, {high}] do not fit {dtype} ([{min_value}, {max_value}])",
        "clamp or wrap the values explicitly before converting; NaN and infinity have no integer form",
    )
    DTYPE_UNKNOWN = _entry(
        Category.IR,
        "unknown dtype {name!r}",
        "use a dtype name argus knows, such as bf16, f16 or f32 (the hint lists them all and the closest)",
    )
    IR_SERIALIZE_MALFORMED = _entry(
        Category.IR,
        "{problem} (at {path})",
        "pass the output of argus.ir.serialize.kernel_to_data (through JSON) unchanged; data edited on the way, or "
        "written by another version of argus, is refused",
    )
    IR_SERIALIZE_UNSUPPORTED = _entry(
        Category.IR,
        "{value} has no plain-data form in the IR (at {path})",
        "IR holds only IR nodes, layouts, registered dtypes, Python scalars, tuples, lists and dicts: make trace-time "
        "parameters such values (not functions or arrays), and pass a traced Kernel (fn.trace(**params))",
    )

    # --- ATOM: hardware atoms ---------------------------------------------------------------------------------
    ATOM_CP_ASYNC_ALIGN = _entry(
        Category.ATOM,
        "{atom}: {what} is not {alignment}-byte aligned",
        "align both addresses to the copy's size (16 bytes for cp.async.cg), or use a smaller cp-size",
    )
    ATOM_CP_ASYNC_CACHE = _entry(
        Category.ATOM,
        "cp.async's cache operator is .ca (all levels) or .cg (L2 only, 16-byte copies only); got {cache}",
        "use .cg for 16-byte copies and .ca for 4- and 8-byte copies",
    )
    ATOM_CP_ASYNC_SIZE = _entry(
        Category.ATOM,
        "cp.async copies 4, 8 or 16 bytes per thread; got cp-size = {nbytes}",
        "split the copy into 16-byte pieces",
    )
    ATOM_CP_ASYNC_SRC_SIZE = _entry(
        Category.ATOM,
        "{atom}: src-size is the number of bytes read (the rest is zero-filled); got {src_size}",
        "clamp src-size to the bytes left in bounds, between 0 and the cp-size",
    )
    ATOM_DTYPE_UNSUPPORTED = _entry(
        Category.ATOM,
        "{atom}: {what} {dtype} is known to argus but not yet supported by any atom",
        "use a supported dtype (bf16, f16, or e4m3/e5m2 on wgmma): a format declared unsupported has no atom yet",
    )
    ATOM_ELEMENT_BITS = _entry(
        Category.ATOM,
        "{atom} is modelled for 8-, 16- and 32-bit elements (and a copy holds whole elements); got {bits}-bit elements",
        "copy 8-, 16- or 32-bit elements, in a copy at least one element wide",
    )
    ATOM_MATRIX_ADDRESSES = _entry(
        Category.ATOM,
        "{atom} takes one shared-memory address per matrix row from lanes 0..{last_lane}; got {count}",
        "give 8 row addresses per matrix (8 for .x1, 16 for .x2, 32 for .x4)",
    )
    ATOM_MATRIX_ALIGN = _entry(
        Category.ATOM,
        "{atom}: the row address of lane {lane} is not 16-byte aligned",
        "each 8-element row of 16-bit values must start on a 16-byte boundary: check the swizzle and the leading "
        "dimension",
    )
    ATOM_MATRIX_INDEX = _entry(
        Category.ATOM,
        "{atom} moves {num} matrices of 8 rows; matrix {matrix}, row {row} is not one",
        "index matrices below .num and rows 0..7",
    )
    ATOM_MATRIX_NUM = _entry(
        Category.ATOM,
        "{op} moves one, two or four 8x8 matrices; got num = {num}",
        "use .x1, .x2 or .x4, and issue several instructions for more matrices",
    )
    ATOM_MMA_ACC_DTYPE = _entry(
        Category.ATOM,
        "{atom} with {dtype} inputs accumulates in {allowed}; got {acc}",
        "accumulate in f32",
    )
    ATOM_MMA_DTYPE = _entry(
        Category.ATOM,
        "{atom} multiplies {allowed} operands of one dtype; got A {a}, B {b}",
        "convert the operands to bf16 or f16 (f32 too for the FMA atom), both to the same dtype",
    )
    ATOM_OPERAND = _entry(
        Category.ATOM,
        "an MMA operand is 'A', 'B' or 'C' (also 'D'); got {operand!r}",
        "name the operand 'A', 'B' or 'C'",
    )
    ATOM_OPERAND_SOURCE = _entry(
        Category.ATOM,
        "{atom}: operand {operand} is in {source}, which this atom does not read it from",
        "wgmma reads A from shared memory or registers and B from shared memory: stage global data in shared memory "
        "first (TMA or cp.async), and ask register layouts only of register operands",
    )
    ATOM_SMEM_DTYPE = _entry(
        Category.ATOM,
        "wgmma shared-memory operands have 8-, 16- or 32-bit elements; {dtype} has {bits}",
        "store the operand as a 16-bit type (bf16, f16)",
    )
    ATOM_SMEM_MAJOR = _entry(
        Category.ATOM,
        "a shared-memory operand is K-major or MN-major, and MN-major only for 16-bit types; got {major} {dtype}",
        "store the operand K-major (MN-major, transposed operands exist for f16 and bf16 only)",
    )
    ATOM_SMEM_SWIZZLE_ALIGN = _entry(
        Category.ATOM,
        "{what} with {width}-byte swizzle starts inside a swizzle pattern: address {address} is not a multiple of "
        "{repeat}",
        "align the shared-memory buffer to the swizzle's repeat (1024 bytes for a 128-byte swizzle)",
    )
    ATOM_SMEM_TILE = _entry(
        Category.ATOM,
        "a {major}-major {dtype} tile with {mode} is built from swizzle atoms of {unit} along {dim}; got {extent}",
        "make the extent a positive multiple of the swizzle atom (the hint gives the nearest), or use a narrower "
        "swizzle",
    )
    ATOM_SWIZZLE_MODE = _entry(
        Category.ATOM,
        "Hopper's shared-memory swizzle modes are 0 (none), 32, 64 and 128 bytes; got {swizzle}",
        "use swizzle=0, 32, 64 or 128",
    )
    ATOM_TMA_BOX = _entry(
        Category.ATOM,
        "{atom}: box dimension {dim} is out of range: box = {box}",
        "keep every box extent in 1..256: split the tile into boxes of at most 256 along that dimension and issue "
        "several copies",
    )
    ATOM_TMA_BOX_INNER = _entry(
        Category.ATOM,
        "{atom}: the inner box dimension is not a whole number of 16-byte chunks: box[0] = {inner} -> {bytes} bytes",
        "make box[0] times the element size a multiple of 16 bytes (8 bf16 elements)",
    )
    ATOM_TMA_ELEMENT_STRIDE = _entry(
        Category.ATOM,
        "{atom}: element stride {dim} is out of range: {stride}",
        "use element strides in 1..8 (1 for a dense box)",
    )
    ATOM_TMA_GLOBAL_ALIGN = _entry(
        Category.ATOM,
        "{atom}: the tensor's global base address {address} is not 16-byte aligned",
        "describe the tensor from an aligned base and move the offset into the box coordinates",
    )
    ATOM_TMA_GLOBAL_DIM = _entry(
        Category.ATOM,
        "{atom}: global dimension {dim} is out of range: {extent}",
        "keep every global extent in 1..2**32",
    )
    ATOM_TMA_GLOBAL_STRIDE = _entry(
        Category.ATOM,
        "{atom}: the byte stride of global dimension {dim} is not a positive multiple of 16: {stride} bytes",
        "pad the leading dimension to a multiple of 16 bytes (8 bf16 elements), or copy with cp.async",
    )
    ATOM_TMA_RANK = _entry(
        Category.ATOM,
        "{atom} copies a {rank}-d box, but {what} has {count} dimensions",
        "use the TMA atom of the tensor's rank (1 to 5), with rank - 1 global strides (dimension 0 has none)",
    )
    ATOM_TMA_SMEM_ALIGN = _entry(
        Category.ATOM,
        "{atom}: the shared-memory box at {address} is not 128-byte aligned",
        "align the shared-memory buffer and every stage to 128 bytes (1024 with a 128-byte swizzle)",
    )
    ATOM_TMA_MULTICAST = _entry(
        Category.ATOM,
        "a multicast TMA box: {problem}",
        "give the multicast box an even outermost extent whose half starts where a box may start (8 rows of 128 "
        "bytes with the 128-byte swizzle), or load it without multicast",
    )
    ATOM_TMA_IM2COL = _entry(
        Category.ATOM,
        "im2col: {problem}",
        "keep the tensor channels last (3-d to 5-d), the corners and offsets in the rank's ranges, whole 16-byte "
        "chunks of at most 256 channels, and start the traversal at an output position's base pixel "
        "(o * stride - padding)",
    )
    ATOM_TMA_SWIZZLE = _entry(
        Category.ATOM,
        "TMA swizzle modes are 0 (none), 32, 64 and 128 bytes; got {swizzle}",
        "use swizzle 0, 32, 64 or 128",
    )
    ATOM_TMA_SWIZZLE_SPAN = _entry(
        Category.ATOM,
        "{atom}: with {swizzle}-byte swizzle the inner box dimension must fit in one swizzle row: box[0] = {inner} "
        "-> {bytes} bytes",
        "use a box whose inner extent fits the swizzle span and issue several copies along dimension 0, or a wider "
        "swizzle",
    )
    ATOM_UNKNOWN = _entry(
        Category.ATOM,
        "no atom is called {name!r}",
        "use a name atom_names() lists (the hint gives the closest)",
    )
    ATOM_VECTOR_ALIGN = _entry(
        Category.ATOM,
        "{atom}: the global address {address} is not {alignment}-byte aligned",
        "start rows and tiles at multiples of the vector width in bytes (pad the leading dimension), or use a "
        "narrower vector",
    )
    ATOM_WGMMA_N = _entry(
        Category.ATOM,
        "wgmma.mma_async.m64nNk16 has no N = {n}",
        "use N a multiple of 8 between 8 and 256 (the hint gives the nearest), and cover a wider tile with several "
        "instructions",
    )
    ATOM_WGMMA_SMEM_ALIGN = _entry(
        Category.ATOM,
        "{atom}: operand {operand}'s shared-memory start address {address} is not 16-byte aligned",
        "advance descriptors by whole 16-byte chunks and align the buffer to at least 16 bytes",
    )

    # --- DSL: the tile DSL and its tracer ---------------------------------------------------------------------
    DSL_ASSUME = _entry(
        Category.DSL,
        "T.assume({condition}): {problem}",
        'write T.assume(T.eq(K % 8, 0)) or T.assume("K % 8 == 0"): a comparison over the problem sizes (shape '
        "symbols) only, inside the kernel (== between expressions is Python's identity test)",
    )
    DSL_ATOM_SPACES = _entry(
        Category.DSL,
        "T.copy: {atom} copies {want} memory, not {found}",
        "pick the atom for the copy's direction (cp.async and tma: global -> shared, ldmatrix: shared -> fragment, "
        "tma.store: fragment -> global), or atom='auto'; global -> global copies are not supported",
    )
    DSL_BAD_INDEX = _entry(
        Category.DSL,
        "a fragment can only be indexed to broadcast it, as in m[:, None]",
        "index its buffer through T.copy, or use None to add a broadcast axis",
    )
    DSL_BAD_OPERAND = _entry(
        Category.DSL,
        "{operation}: {operand} is not an operand it takes (expected {expected})",
        "pass what the operation takes: tiles (A.tile(...), shared buffers, fragments) to T.copy, fragments or "
        "numbers to elementwise math, 'A', 'B' or 'C' as an MMA operand, tensors and fragments to T.tag",
    )
    DSL_BAD_PARAM = _entry(
        Category.DSL,
        "{param} must be one of {choices}, not {value!r}",
        "pass a value the kernel takes for that parameter (the message says which, and why the one given is refused; "
        "the kernel's docstring lists them)",
    )
    DSL_BLOCKS_PER_SM = _entry(
        Category.DSL,
        "blocks_per_sm={blocks_per_sm}: {problem}",
        "give an int from 1 up to the blocks an SM holds, with threads x blocks_per_sm at most an SM's threads",
    )
    DSL_CLUSTER = _entry(
        Category.DSL,
        "{problem}",
        "open the grid as T.grid(n, ..., cluster=2) with n even, and use multicast TMA loads and cluster mbarriers "
        "(T.alloc_mbarrier(..., cluster=True), no TMA bytes announced on them) only in such a grid",
    )
    DSL_CALL_ARGUMENTS = _entry(
        Category.DSL,
        "kernel {kernel}: {problem}",
        "call the kernel with one CPU tensor or numpy array per tensor parameter, in order (the interpreter runs "
        "on the CPU)",
    )
    DSL_EXCLUDE_AFTER_READ = _entry(
        Category.DSL,
        "T.exclude on {fragment} after {line} computed from it: what was computed before the declaration does not "
        "carry it, so no mask applied to that value is checked against it",
        "declare every T.exclude on a fragment right after the statement that writes it, before any statement "
        "reads it (the causal and window masks of attention: both exclusions first, then the T.where masks)",
    )
    DSL_FLOAT_OP = _entry(
        Category.DSL,
        "{operation} works on float fragments; every value here is an integer",
        "T.cast an operand to T.f32 first (T.cast(x, T.f32) / y for true division)",
    )
    DSL_FRAGMENT_ATOM = _entry(
        Category.DSL,
        "T.gemm: fragment {name} was laid out for {atom} (groups {groups}), the accumulator for {acc_atom} "
        "(groups {acc_groups})",
        "allocate the operand fragments with the accumulator's mma atom and groups",
    )
    DSL_FRAGMENT_LAYOUT = _entry(
        Category.DSL,
        "a {shape} tile does not spread evenly over {threads} threads",
        "choose a tile whose element count is a multiple of the thread count times the vector width",
    )
    DSL_FRAGMENT_MISMATCH = _entry(
        Category.DSL,
        "{operation}: thread {thread} computes element {coord} but does not hold element {source_coord} of {buffer}, "
        "which has another thread-value layout",
        "convert one operand through shared memory, or allocate both fragments with the same layout",
    )
    DSL_GEMM_ACCUMULATOR = _entry(
        Category.DSL,
        "T.gemm: the accumulator must be a fragment allocated with mma=<atom>",
        "T.alloc_fragment((BM, BN), T.f32, mma=T.mma_sync(...)) (or mma=T.wgmma(...)) for the accumulator",
    )
    DSL_GEMM_OPERAND = _entry(
        Category.DSL,
        "T.gemm: {atom} reads operand {operand} from {wanted} memory; it is in {space} memory",
        "mma.sync multiplies registers: T.copy the operand into a fragment allocated with the atom, operand= and "
        "the accumulator's groups; wgmma reads B (and optionally A) from shared memory",
    )
    DSL_GRID_RANK = _entry(
        Category.DSL,
        "T.grid takes 1 to 3 positive extents; got {extents}",
        "open the grid as T.grid(n) to T.grid(x, y, z), with positive ints or shape expressions",
    )
    DSL_GROUP_BARRIER = _entry(
        Category.DSL,
        "T.group_barrier: {problem}",
        "pass a 1-d i32 tensor parameter the kernel reads no other way, an index and a rank (0 .. count - 1) that "
        "do not depend on the thread, and the number of blocks that arrive as a positive int",
    )
    DSL_INTEGER_OP = _entry(
        Category.DSL,
        "{operation} works on integer fragments (i32, u32)",
        "T.cast the fragment to T.i32 or T.u32 first",
    )
    DSL_GATHER = _entry(
        Category.DSL,
        "{tensor}.gather: {problem}",
        "pass a 1-d integer tensor parameter as the index, the window's shape (rows first) and one origin per "
        "dimension after the rows, and load it with T.copy(X.gather(...), shared_tile, atom='tma', mbarrier=...)",
    )
    DSL_IM2COL = _entry(
        Category.DSL,
        "{tensor}.im2col: {problem}",
        "give start (n, spatial..., c), one offset per spatial dimension (0 or more), Python-int corners, strides "
        "and extents in the atom's ranges, and load it with T.copy(..., atom='tma', mbarrier=...) into shared memory",
    )
    DSL_KERNEL_RAISED = _entry(
        Category.DSL,
        "tracing kernel {kernel} raised {exception}: {text}",
        "fix the kernel's Python at the line shown: it runs once, while tracing, with the problem sizes as symbols",
    )
    DSL_KERNEL_REFERENCE = _entry(
        Category.DSL,
        "reference= of kernel {kernel} is a {type}, not a function",
        "pass a function of the kernel's input tensors that returns its outputs",
    )
    DSL_KERNEL_SIGNATURE = _entry(
        Category.DSL,
        "{parameter} of kernel {kernel}: {problem}",
        "annotate tensors with T.Tensor[shape, dtype] and give trace-time parameters defaults; a shape function's "
        "arguments and a dtype given by name must be such parameters",
    )
    DSL_KERNEL_SIZES = _entry(
        Category.DSL,
        "sizes= of kernel {kernel} must map size names to ints",
        "write sizes={'M': 128, 'N': 64, ...}",
    )
    DSL_MBARRIER = _entry(
        Category.DSL,
        "{operation}: {problem}",
        "allocate mbarriers with positive int counts (T.alloc_mbarrier(count, arrive_count)) and pass an element of "
        "that array to T.mbarrier_arrive and T.mbarrier_wait",
    )
    DSL_MMA_GROUPS = _entry(
        Category.DSL,
        "{atom}: {groups} groups of {atom_threads} threads do not make the block's {threads}",
        "give groups whose product is the block's threads divided by the atom's threads",
    )
    DSL_MMA_TILE = _entry(
        Category.DSL,
        "{atom}: {problem}",
        "choose a tile that is a multiple of the atom's tile times its groups",
    )
    DSL_NAMED_BARRIER = _entry(
        Category.DSL,
        "named barrier {barrier_id} for {threads} threads is not valid",
        "use an id in 1..15 (0 is __syncthreads) and a thread count that is a multiple of 32, at most the block's",
    )
    DSL_NOT_A_FRAGMENT = _entry(
        Category.DSL,
        "{operation} works on fragments (registers); got {found}",
        "T.copy shared or global tiles into a fragment first; scalars combine with Python arithmetic (max and min "
        "for two scalars)",
    )
    DSL_NO_GPU_PATH = _entry(
        Category.DSL,
        "kernel {kernel}: {problem}",
        "call it with device='cpu' (or set ARGUS_INTERPRET=1) to run it on the interpreter, or compile and launch "
        "it through argus.runtime",
    )
    DSL_NO_GRID = _entry(
        Category.DSL,
        "kernel {kernel} never opened `with T.grid(...)`",
        "put the kernel body under `with T.grid(n_blocks, threads=128) as (bx,):`",
    )
    DSL_OPERAND_MAJOR = _entry(
        Category.DSL,
        "{param} = {value!r}: an operand of the Hopper GEMMs is K-major or {other}-major",
        "pass 'K' (the default) or the other major the hint names",
    )
    DSL_OUTSIDE_GRID = _entry(
        Category.DSL,
        "{what} must be inside `with T.grid(...)`",
        "open the grid first, and call it from inside the grid's block",
    )
    DSL_NO_RUNNER = _entry(
        Category.DSL,
        "kernel {kernel}: nothing runs kernels on device {device!r}",
        "import the package that registers the device's runner (argus.runtime for 'cpu'); if importing it failed, "
        "the message says why",
    )
    DSL_OUTSIDE_KERNEL = _entry(
        Category.DSL,
        "{what} can only be used inside an @argus.kernel function while it is traced",
        "call it from the body of a kernel",
    )
    DSL_RANK_MISMATCH = _entry(
        Category.DSL,
        "{buffer}.tile: {buffer} has {rank} dimensions; got index {index}, shape {shape}",
        "give one tile index and one tile extent per dimension of the tensor",
    )
    DSL_REDUCE_AXIS = _entry(
        Category.DSL,
        "reductions take a 2-D fragment and axis 0 or 1; got {shape}, axis={axis}",
        "reduce a 2-D fragment along axis 0 or 1",
    )
    DSL_REDUCE_LAYOUT = _entry(
        Category.DSL,
        "{operation}: {problem}",
        "reduce along an axis whose elements the fragment's layout spreads over lanes of one warp (a row of an MMA "
        "accumulator); allocate the result with T.alloc_reduced",
    )
    DSL_ROLE = _entry(
        Category.DSL,
        "T.role {name!r}: {problem}",
        "give each role warpgroups that exist in the block (indices below threads / 128), and do not nest roles",
    )
    DSL_ROLE_REGISTERS = _entry(
        Category.DSL,
        "T.role {name!r}: setmaxnreg takes a multiple of 8 between 24 and 256; got {registers}",
        "give registers= a multiple of 8 in 24..256",
    )
    DSL_SHAPE_MISMATCH = _entry(
        Category.DSL,
        "{operation}: operand shapes do not match: {shapes}",
        "make both sides the same shape (broadcast axes aside); for T.gemm a is (M, K), b (K, N), acc (M, N)",
    )
    DSL_SMEM_BUDGET = _entry(
        Category.DSL,
        "shared memory over budget: this buffer needs {nbytes} bytes and {used} are already in use",
        "use fewer stages or a smaller tile (or fewer blocks per SM)",
    )
    DSL_STAGES = _entry(
        Category.DSL,
        "T.pipeline: {problem}",
        "give stages a positive int and start a non-negative int or a runtime expression",
    )
    DSL_STAGE_INDEX = _entry(
        Category.DSL,
        "{buffer} has one dimension; it has no stages to index",
        "allocate the buffer with a leading stage dimension, (STAGES, rows, cols), to index it by stage",
    )
    DSL_TAG_FUNCTION = _entry(
        Category.DSL,
        "a tag function returns ints or integer expressions; got {value}",
        "return tag coordinates as ints or integer expressions of the index, not comparisons",
    )
    DSL_TAG_INDEX = _entry(
        Category.DSL,
        "tag coordinates are indexed by Python ints; got {index!r}",
        "index tag coordinates with a constant, e.g. a[0]",
    )
    DSL_TAG_NAME = _entry(
        Category.DSL,
        "a tag needs a non-empty string name; got {name!r}",
        "give T.tag a name such as 'A', and compare a tag's name with a string (a.name == 'A')",
    )
    DSL_TAG_PREDICATE = _entry(
        Category.DSL,
        "T.assert_tag's predicate must return a comparison over tags; got {result}",
        "compare tag coordinates with ==, !=, <, <=, combine with & and |, and write the tag coordinate on one side "
        "of == (a plain expression compared with == is Python's identity test)",
    )
    DSL_TENSOR_DTYPE = _entry(
        Category.DSL,
        "tensor {tensor}: parameter {param} = {value!r} does not name a dtype",
        "give the parameter a dtype name such as 'f32', 'bf16' or 'f16'",
    )
    DSL_TENSOR_SHAPE = _entry(
        Category.DSL,
        "tensor {tensor}: {problem}",
        "return a tuple of shape symbols or ints, such as ('K', 'N'), from the shape function",
    )
    DSL_THREADS = _entry(
        Category.DSL,
        "threads={threads} is not a valid block size",
        "use a multiple of 32 between 32 and 1024",
    )
    DSL_TILE_ORDER = _entry(
        Category.DSL,
        "unknown tile order {order!r} (or a grouped order without a positive group)",
        "use one of the tile orders T.tile_order lists; 'grouped' takes a positive int group",
    )
    DSL_TILE_SHAPE = _entry(
        Category.DSL,
        "{what}: {problem}",
        "give shared buffers and fragments a static shape of positive Python ints (an MMA fragment is 2-D), and "
        "either layout= or panels=True, not both",
    )
    DSL_TMA_MBARRIER = _entry(
        Category.DSL,
        "T.copy(..., atom={atom!r}): {problem} (a TMA load completes on an mbarrier, other copies do not)",
        "give T.copy(..., atom='tma') mbarrier=<an element of T.alloc_mbarrier> and wait on it before reading; "
        "other atoms take no mbarrier",
    )
    DSL_TMA_PAD = _entry(
        Category.DSL,
        "{problem}; pad must be 0",
        "drop pad= on TMA copies: TMA fills out-of-bounds elements with 0, and a store has no padding",
    )
    DSL_TMA_STAGING = _entry(
        Category.DSL,
        "T.copy(..., atom={atom!r}): {problem} (a tma.store goes through a staging buffer of swizzled chunks)",
        "give atom='tma.store' staging=<a whole T.alloc_shared((2, rows, 128 // itemsize), dtype, swizzle=128)> "
        "of a 2-D fragment whose columns are whole chunks, and use the staging buffer for nothing else",
    )
    DSL_TRACED_PARAMS = _entry(
        Category.DSL,
        "kernel {kernel} was traced with {params}; it cannot be specialized again with {differs}",
        "trace the kernel function itself with these parameters",
    )
    DSL_TRACE_TIME_CONDITION = _entry(
        Category.DSL,
        "T.if_ got the Python bool {condition}: the condition was decided while tracing, not at run time",
        "compare runtime values with T.eq(a, b) / T.ne(a, b) (== and != on expressions compare identity), or use a "
        "plain Python `if` for a trace-time choice",
    )
    DSL_ELEMENT = _entry(
        Category.DSL,
        "{tensor}[...]: {problem}",
        "read elements of an integer tensor the kernel does not write (offsets, counts), with one integer index "
        "per dimension",
    )
    DSL_LET = _entry(
        Category.DSL,
        "T.let: {problem}",
        "bind an integer expression every thread of the block agrees on (sizes, block and loop indices, tensor "
        "elements), under an identifier",
    )
    DSL_TRANSPOSE = _entry(
        Category.DSL,
        "only 2-D shared or global tiles have a transposed view; got shape {shape}",
        "transpose a 2-D tile (take a window first for a higher-rank buffer)",
    )
    DSL_TURN = _entry(
        Category.DSL,
        "the turns of role {role} could deadlock: {problem}",
        "take the turn with T.turn_wait() and hand it on with T.turn_pass(), alternately, inside a role of two or "
        "more warpgroups, in code every warpgroup of the role runs the same number of times",
    )
    DSL_TWO_GRIDS = _entry(
        Category.DSL,
        "a kernel has exactly one T.grid",
        "merge the two grids into one kernel, or write two kernels",
    )
    DSL_UNKNOWN_ATOM = _entry(
        Category.DSL,
        "T.copy: unknown atom {atom!r}",
        "use one of the copy atoms the message lists, or atom='auto'",
    )
    DSL_UNKNOWN_PARAM = _entry(
        Category.DSL,
        "kernel {kernel} has no parameter {name!r}",
        "pass only the kernel's trace-time parameters (its arguments with defaults); check the spelling",
    )
    DSL_UNKNOWN_POLICY = _entry(
        Category.DSL,
        "unknown policy {policy!r} (or a policy that names a parameter the kernel does not have)",
        "use one of the policy names the message lists, and map it to parameters the kernel has",
    )
    DSL_UNROLL_EXTENT = _entry(
        Category.DSL,
        "T.unroll needs a Python int extent; got {extent}",
        "unroll a loop of constant extent; use T.serial for one whose extent is a runtime expression",
    )
    DSL_VIEW_LAYOUT = _entry(
        Category.DSL,
        "view layout {layout} does not cover the buffer's shape {shape}",
        "give the view a layout whose shape is the buffer's shape",
    )
    DSL_WINDOW = _entry(
        Category.DSL,
        "a window of a {shape} tile: {problem}",
        "take windows of shared-memory tiles with static origins and extents inside the tile, before any "
        "transpose (.T)",
    )

    # --- VERIFY: the verifier's findings, and its pinned shapes -----------------------------------------------
    MMA_K_MISMATCH = _entry(
        Category.VERIFY,
        "T.gemm multiplies A element {a} by B element {b}: their contraction indices differ (accumulator element "
        "{acc}, k={k} of the tile)",
        "make A's and B's tiles hold the same K block, and lay fragments out with the atom's own layout",
    )
    MMA_ROW_MISMATCH = _entry(
        Category.VERIFY,
        "the instruction accumulates into the register holding accumulator element {acc} a product with row {row} of "
        "the A operand, not row {want} (k={k} of the tile)",
        "allocate the A fragment with mma=<atom>, operand='A' and the accumulator's groups",
    )
    MMA_COL_MISMATCH = _entry(
        Category.VERIFY,
        "the instruction accumulates into the register holding accumulator element {acc} a product with column "
        "{column} of the B operand, not column {want} (k={k} of the tile)",
        "allocate the B fragment with mma=<atom>, operand='B' and the accumulator's groups",
    )
    MMA_ROW_MIXED = _entry(
        Category.VERIFY,
        "the instruction accumulates into the register holding accumulator element {acc} products with {first} at "
        "k={k1} and {second} at k={k2} of the tile: two elements of different rows of the A operand",
        "write and read the shared tile through one layout (the same swizzle on both sides); a T.assert_tag on the "
        "operand naming its row shows which side moved it",
    )
    MMA_COL_MIXED = _entry(
        Category.VERIFY,
        "the instruction accumulates into the register holding accumulator element {acc} products with {first} at "
        "k={k1} and {second} at k={k2} of the tile: two elements of different columns of the B operand",
        "write and read the shared tile through one layout (the same swizzle on both sides); a T.assert_tag on the "
        "operand naming its column shows which side moved it",
    )
    MMA_ACC_NOT_RESET = _entry(
        Category.VERIFY,
        "the T.gemm accumulates tile {tile} into {acc}, which still holds the products of the previous tile",
        "reset the accumulator at the top of each tile, inside the tile loop and before its K loop: T.fill(acc, 0.0)",
    )
    RACE_WRITE_WRITE = _entry(
        Category.VERIFY,
        "possible write-write race on {buffer}[{index}] ({relation}, no barrier between)",
        "give each element one writer, or separate the writes with T.barrier()",
    )
    RACE_READ_WRITE = _entry(
        Category.VERIFY,
        "possible read-write race on {buffer}[{index}] ({relation}, no barrier between)",
        "put a T.barrier() between the write and the read (and before the location is overwritten)",
    )
    RACE_GLOBAL = _entry(
        Category.VERIFY,
        "a block reads {buffer} where another block stores in the same launch, unordered",
        "let each block read only what it stores, move the read to a second kernel, or put a T.group_barrier after "
        "the store and before the load at which both blocks arrive at the same counter",
    )
    RACE_GROUP_RANK = _entry(
        Category.VERIFY,
        "{problem}",
        "give each of the count blocks that arrive at one counter its own rank in 0 .. count - 1, once per launch",
    )
    RACE_BARRIER_THREADS = _entry(
        Category.VERIFY,
        "{barrier} counts {counted} threads, but {executing} execute it: {effect}",
        "inside a role use T.barrier(id, threads=<the role's threads>); give a named barrier the number of threads of "
        "every role that uses its id",
    )
    PIPELINE_STALE_READ = _entry(
        Category.VERIFY,
        "read of {buffer}[{index}] before the asynchronous copy that writes it landed ({why})",
        "cp.async: T.async_wait(n) with n at most the groups committed after the copy, then T.barrier(); TMA: "
        "T.mbarrier_wait on the copy's barrier before reading",
    )
    PIPELINE_OVERWRITE = _entry(
        Category.VERIFY,
        "stage of {buffer} overwritten while other threads read it: possible race on {buffer}[{index}] ({relation})",
        "refill a stage only after a barrier that follows its last read; keep the prefetch distance below the number "
        "of stages",
    )
    PIPELINE_STORE_OVERWRITE = _entry(
        Category.VERIFY,
        "chunk {chunk} of a staged TMA store overwrites a chunk buffer that an earlier TMA store may still read",
        "a code generator's protocol (argus.atoms.tma.staged_store_wait): wait until every TMA store that read the "
        "chunk buffer has read it before writing it (cp.async.bulk.wait_group.read with fewer groups in flight)",
    )
    PIPELINE_CLUSTER_ASYMMETRIC = _entry(
        Category.VERIFY,
        "the two blocks of a cluster differ in {what} at a multicast load or a cluster arrival",
        "derive a multicast box, its stage and a cluster barrier's index from the cluster's index (the first block "
        "index // 2), never from the block's own, and guard them alike in both blocks",
    )
    MBARRIER_PHASE = _entry(
        Category.VERIFY,
        "the wait on {barrier} is for the wrong barrier element or phase parity: {problem}",
        "wait on the barrier of the stage with parity (k // STAGES) % 2 (the producer's first pass: + 1)",
    )
    MBARRIER_TX = _entry(
        Category.VERIFY,
        "the bytes announced on {barrier} ({announced}) are not the bytes of the TMA boxes completing on it ({copied})",
        "announce exactly the sum of the boxes' bytes (elements x element size) of the copies on that barrier",
    )
    MMA_IN_FLIGHT = _entry(
        Category.VERIFY,
        "{buffer} is used while wgmma MMAs that write it may still be in flight: {why}",
        "wait for the MMAs first: T.wgmma_wait(0) after the loop that issues them with wait_group > 0, before "
        "anything else reads or writes the accumulator",
    )
    MBARRIER_ARRIVE_COUNT = _entry(
        Category.VERIFY,
        "{barrier} is initialised with arrive_count={arrive_count}, but {arrivals} arrival(s) reach each phase: "
        "{effect}",
        "give T.alloc_mbarrier the number of T.mbarrier_arrive statements executed on it per phase",
    )
    FENCE_PROXY_ASYNC = _entry(
        Category.VERIFY,
        "{buffer}[{index}] is written with ordinary stores (generic proxy) and read by {reader} (async proxy) with "
        "no T.fence_proxy_async() by the writing thread",
        "call T.fence_proxy_async() right after the stores, before the barrier that hands the buffer to wgmma/TMA",
    )
    OOB_GROUP_COUNTER = _entry(
        Category.VERIFY,
        "{problem}",
        "size the counter tensor for every index the kernel arrives at (T.assume its extent)",
    )
    OOB_SHARED = _entry(
        Category.VERIFY,
        "the view of {buffer} puts element {coord} at offset {offset}, past the {allocated} elements allocated for it",
        "allocate the buffer with the view's layout (T.alloc_shared(..., layout=...)), or use a view within it",
    )
    OOB_MASKED_MMA = _entry(
        Category.VERIFY,
        "T.gemm adds the product of A's element {a} and B's element {b} into an accumulator element of real data",
        "pad the contraction's tail with 0 (TMA's fill, the copy's default pad) or mask it to 0 with "
        "T.where(T.index(x, axis) + offset < extent, x, 0.0) before the MMA",
    )
    OOB_MASKED_REDUCTION = _entry(
        Category.VERIFY,
        "T.reduce_{op} combines element {coord} of {buffer}, padding of an element outside the tensor whose value "
        "is {fill}, not the identity of {op}",
        "make the padding the reduction's identity where it is reduced: pad the copy with it (-inf before a max, 0 "
        "before a sum) or mask with T.where(T.index(x, axis) + offset < extent, x, identity), the offset being the "
        "tile's origin",
    )
    COVERAGE_CONTRACTION = _entry(
        Category.VERIFY,
        "element {coord} of {tensor} ({extents}) is never loaded, yet it feeds a T.gemm: its products are missing "
        "from every sum it belongs to (the loads at {sites})",
        "loop over cdiv(K, BK) blocks of the contraction (the copy masks the partial last one), and give the grid "
        "cdiv(size, tile) blocks; if sizes are always multiples of the tile, declare it (T.assume('K % 64 == 0'))",
    )
    VALUE_SCALE_MISMATCH = _entry(
        Category.VERIFY,
        "{op} combines a value relative to {statistic} with one relative to {other}: partial results scaled by "
        "different running statistics",
        "rescale what was accumulated under the old maximum before adding new terms: alpha = exp2(m - m_new), "
        "o = o * alpha[:, None] and l = l * alpha + reduce_sum(p) (alpha computed before m is updated), and divide "
        "o by the l of the same maximum",
    )
    COVERAGE_OUTPUT = _entry(
        Category.VERIFY,
        "element {coord} of {tensor} ({extents}) is never written: no block stores a window that holds it (the "
        "stores at {sites})",
        "cover the whole tensor: a grid of cdiv(size, tile) blocks along every dimension, or a loop over the "
        "tiles of a row; if larger sizes never occur, declare it (T.assume('N <= 128'))",
    )
    COVERAGE_OUTPUT_TWICE = _entry(
        Category.VERIFY,
        "element {coord} of {tensor} ({extents}) is stored twice, by {first} and by {second}: the value left is "
        "whichever store lands last",
        "give every output tile exactly one block: a grid of cdiv(size, tile) blocks with tile indices that differ "
        "from block to block; for split-K, reduce the partial sums (a second pass or an atomic epilogue) instead of "
        "storing each into the tile",
    )
    COVERAGE_CONTRACTION_TWICE = _entry(
        Category.VERIFY,
        "element {coord} of {tensor} ({extents}) is loaded twice for one accumulation of {acc} ({first} and "
        "{second}): its products enter the sum twice",
        "visit each K block once: a loop of cdiv(K, BK) iterations whose block index is the loop variable (the copy "
        "masks the partial last block; no clamping of the index, no separate tail iteration that repeats a block); "
        "for a split, shares that do not overlap (split z takes K-blocks z * share .. (z + 1) * share)",
    )
    ALIGN_VECTOR = _entry(
        Category.VERIFY,
        "T.copy(..., atom={atom!r}) of {tensor} moves {bytes}-byte vectors, but for {sizes} {why}: the vectors are "
        "misaligned",
        "declare the sizes the kernel is for (T.assume(T.eq(K % 8, 0))), align tile origins, or use atom='auto'",
    )
    ALIGN_ASSUMPTION = _entry(
        Category.VERIFY,
        "T.copy(..., atom={atom!r}) of {tensor} moves {bytes}-byte vectors only if {why} holds, which the kernel does "
        "not declare",
        "declare the assumption if other sizes never occur (T.assume(T.eq(K % 8, 0))), or pad the rows",
    )
    ALIGN_TMA = _entry(
        Category.VERIFY,
        "TMA copy of {tensor}: {problem}",
        "declare the sizes the kernel is for (T.assume(T.eq(K % 8, 0)) for a bf16 row of K elements), or choose a "
        "box whose inner extent is 16-byte aligned and at most 256 elements per dimension",
    )
    LAYOUT_TMA_BOX = _entry(
        Category.VERIFY,
        "TMA box {box} into {buffer} (layout {layout}): no swizzle mode lays the box out where the buffer's layout "
        "puts it",
        "give the buffer a row-major swizzled layout whose rows are one swizzle span wide (T.alloc_shared(..., "
        "swizzle=128)); for a wider tile, allocate it in panels (panels=True) and load one box per panel with "
        "stage.window(...)",
    )
    LAYOUT_WGMMA_OPERAND = _entry(
        Category.VERIFY,
        "wgmma operand {operand} ({buffer}, layout {layout}): {why}, so no matrix descriptor can describe it",
        "allocate the operand K-major with a 128-byte swizzle and 64-element rows, or, for an MN-major 16-bit "
        "operand, in panels (T.alloc_shared(..., swizzle=128, panels=True)) with the tile (BK, BMN)",
    )
    BUDGET_SMEM = _entry(
        Category.VERIFY,
        "the block needs {total} bytes of shared memory ({parts}); the budget is {budget}",
        "use fewer stages, smaller tiles or a tighter layout",
    )
    BUDGET_REGISTERS = _entry(
        Category.VERIFY,
        "{where} needs at least {registers} registers for the fragments live there; the budget is {budget}",
        "use smaller fragments, more threads, or a larger setmaxnreg budget for this role",
    )
    PERF_BANK_CONFLICT = _entry(
        Category.VERIFY,
        "{access} of shared {buffer} by {op} is served in {degree}x the wavefronts of a conflict-free access",
        "swizzle the shared buffer (swizzle=64 or 128) or pad its rows",
    )
    PERF_UNCOALESCED = _entry(
        Category.VERIFY,
        "{access} of global {buffer} by {op} touches {degree}x the 32-byte sectors its bytes need",
        "let consecutive threads access consecutive 16-byte vectors of the contiguous dimension",
    )
    TAG_ASSERT = _entry(
        Category.VERIFY,
        "T.assert_tag fails at element {coord} of {buffer}: {listing}",
        "the counterexample names the element and the chain of operations that brought its tag there",
    )
    UNKNOWN_STATEMENT = _entry(
        Category.VERIFY,
        "{statement} could not be encoded: {reason}",
        "check this part with the interpreter until the verifier supports it",
    )
    UNKNOWN_SOLVER = _entry(
        Category.VERIFY,
        "Z3: {reason}",
        "pin the parameter named in the reason to a constant (e.g. --shape K=256) and verify again",
    )
    UNKNOWN_LOOKBACK = _entry(
        Category.VERIFY,
        "{buffer}'s element may have been written more than {lookback} iterations of loop {loop} ago",
        "raise the look-back (lookback=...) or write every stage within `stages` iterations",
    )
    UNKNOWN_LAYOUT_INVERSE = _entry(
        Category.VERIFY,
        "the layout {layout} of {buffer} interleaves its modes: the verifier cannot invert it",
        "use a layout whose modes do not interleave (row-major, column-major, padded, swizzled)",
    )
    UNKNOWN_TAG_AXES = _entry(
        Category.VERIFY,
        "cannot tell which tag coordinate of the {operand} operand follows K",
        "tag the operand with T.tag so that one coordinate follows the K axis",
    )
    UNKNOWN_VALUE_SCALE = _entry(
        Category.VERIFY,
        "the scale of the values combined at {loc} could not be decided: {reason}",
        "keep the exponent of exp2 linear in the row statistics (exp2(x - m[:, None]), exp2((m_old - m_new) * c)) "
        "and the rescale in the consumer's own registers; or check the kernel's numbers with the interpreter",
    )
    UNKNOWN_WARP_ROLES = _entry(
        Category.VERIFY,
        "{problem}: the data flow between warp roles is not modelled",
        "check the kernel with the interpreter under every schedule (argus interpret)",
    )
    UNKNOWN_MBARRIER_ORDER = _entry(
        Category.VERIFY,
        "the mbarrier wait at {loc} cannot be related to the TMA load it guards: {problem}",
        "wait on stage k % STAGES with parity (k // STAGES) % 2 inside T.pipeline, or use producer/consumer roles",
    )
    UNKNOWN_ASYNC_READ = _entry(
        Category.VERIFY,
        "the asynchronous wgmma read at {loc} may still be reading when the buffer is written: where it retires is "
        "not placed",
        "make the wgmma the only MMA of its loop's body, outside branches, with a wgmma wait of 0 after the loop; or "
        "wait_group 0",
    )
    UNKNOWN_BRANCH = _entry(
        Category.VERIFY,
        "the branch at {loc} depends on the thread",
        "make the branch uniform across the block, or move barriers out of it",
    )
    VERIFY_PINNED_SHAPE = _entry(
        Category.VERIFY,
        "kernel {kernel}: {problem} (a pinned size that is not a problem size, or pinned sizes that violate the "
        "kernel's T.assume)",
        "pin only the kernel's problem sizes (its shape symbols), to values its T.assume declarations allow, or "
        "verify for all sizes",
    )

    # --- INTERP: the CPU interpreter --------------------------------------------------------------------------
    INTERP_ARGUMENT_RANK = _entry(
        Category.INTERP,
        "{tensor} must have {rank} dimensions; got shape {shape}",
        "pass an array with one dimension per extent of the kernel's tensor",
    )
    INTERP_ASSUMPTION = _entry(
        Category.INTERP,
        "kernel {kernel} at {sizes} violates its assumption {assumption} (declared with T.assume)",
        "pick sizes that satisfy it (pad the tensors), or use a kernel written for these sizes",
    )
    INTERP_DATA_ASSUMPTION = _entry(
        Category.INTERP,
        "kernel {kernel}: {tensor}[{index}] = {value} violates the declaration {tensor} {assumption} (T.assume_values)",
        "pass data that satisfies it (offsets as a cumulative sum of counts, argus.kernels.moe), or drop the "
        "declaration if the kernel does not rely on it",
    )
    INTERP_DEADLOCK = _entry(
        Category.INTERP,
        "every warp role is blocked: {waits}",
        "check the mbarrier phases, the arrive counts and the expected bytes (argus verify checks them)",
    )
    INTERP_GROUP_BARRIER = _entry(
        Category.INTERP,
        "a group barrier's arrival breaks its protocol: {problem}",
        "give each of the count blocks that share a counter its own rank in 0 .. count - 1, and let each arrive once "
        "per generation",
    )
    INTERP_IM2COL = _entry(
        Category.INTERP,
        "an im2col load of {tensor} from {start}: {problem}",
        "start the traversal inside the bounding box, on its stride grid (an output position's o * stride - "
        "padding), with offsets in range: the hardware's behaviour is undefined otherwise",
    )
    INTERP_DIVERGENT = _entry(
        Category.INTERP,
        "{expression} differs between threads where one value is needed",
        "make the value uniform across the threads that use it (a loop bound, a barrier's count, a TMA "
        "coordinate): compute it from block indices and sizes, not the thread index",
    )
    INTERP_ELEMENT_OOB = _entry(
        Category.INTERP,
        "{tensor}[...] read index {index} of dimension {dim}, outside its extent {extent}",
        "guard the read with T.if_ or clamp the index (T.minimum / T.maximum)",
    )
    INTERP_FRAGMENT_MISMATCH = _entry(
        Category.INTERP,
        "{buffer} is not held where {needed_by} needs it (values per thread: {held}, read: {read})",
        "allocate the fragment with the layout of the atom or fragment that reads it; IR built through argus.lang "
        "never does this, so report it if the DSL made it",
    )
    INTERP_INTERNAL = _entry(
        Category.INTERP,
        "internal interpreter invariant broken: {what}",
        "this is a bug in argus's interpreter, not in the kernel: report it with the kernel",
    )
    INTERP_LDMATRIX_OPERAND = _entry(
        Category.INTERP,
        "{loc}: ldmatrix fills mma.sync A/B operand fragments; {buffer} is not one",
        "copy with ldmatrix only into a fragment allocated with mma=<atom>, operand='A' or 'B'",
    )
    INTERP_MBARRIER_INDEX = _entry(
        Category.INTERP,
        "mbarrier {buffer}[{index}] does not exist",
        "index mbarriers below the count given to T.alloc_mbarrier (stage % STAGES)",
    )
    INTERP_MBARRIER_OVERARRIVE = _entry(
        Category.INTERP,
        "{loc}: more arrivals on {barrier} than its count {count} in one phase",
        "give T.alloc_mbarrier the number of arrivals per phase, and arrive once per phase per arriving thread group",
    )
    INTERP_MBARRIER_UNINITIALIZED = _entry(
        Category.INTERP,
        "mbarrier {buffer} used before its init",
        "allocate mbarriers with T.alloc_mbarrier (which initialises them) before any arrive or wait",
    )
    INTERP_MEMORY_BUDGET = _entry(
        Category.INTERP,
        "running {kernel} at {sizes} on the interpreter needs {needed}, more than its memory budget of {budget}",
        "use smaller --shape sizes (small and partial-tile sizes check correctness as well as large ones), or raise "
        "ARGUS_INTERP_MAX_BYTES (or max_bytes=) where the machine has the memory",
    )
    INTERP_MEMORY_BUDGET_SETTING = _entry(
        Category.INTERP,
        "cannot read {text!r} as a memory budget",
        "give bytes or a size with a unit, e.g. ARGUS_INTERP_MAX_BYTES=16G",
    )
    INTERP_MISSING_ARGUMENT = _entry(
        Category.INTERP,
        "{kernel} takes {count} tensors ({names}); no array given for {tensor}",
        "pass one array per tensor parameter of the kernel, in order",
    )
    INTERP_MISSING_SIZE = _entry(
        Category.INTERP,
        "{kernel}: no size for {symbol} (the shape of {tensor})",
        "give every shape symbol, e.g. --shape M=128,N=128,K=128",
    )
    INTERP_SCHEDULE = _entry(
        Category.INTERP,
        "unknown schedule {schedule!r}",
        "use one of the interpreter's warp-role schedules (the hint lists them)",
    )
    INTERP_SHAPE_MISMATCH = _entry(
        Category.INTERP,
        "{tensor}: {problem}",
        "pass arrays whose extents agree on every shape symbol; an operand that looks transposed needs .T or the "
        "kernel's variant for that layout (A_MAJOR / B_MAJOR)",
    )
    INTERP_TMA_BARRIER = _entry(
        Category.INTERP,
        "{loc}: a TMA load needs an mbarrier to complete on",
        "give the TMA copy mbarrier=<an element of T.alloc_mbarrier>; IR built through argus.lang always has one",
    )
    INTERP_UNSUPPORTED = _entry(
        Category.INTERP,
        "{loc}: {construct} is not interpreted yet",
        "check this kernel with argus verify and on the GPU; for TMA, use atom='cp.async' or 'auto' to run it on "
        "the interpreter",
    )

    # --- CODEGEN: the CUDA code generator and toolchain -------------------------------------------------------
    CODEGEN_INVALID = _entry(
        Category.CODEGEN,
        "the IR is not well formed for code generation: {problem}",
        "the IR is not well formed for code generation (a buffer without a layout, a fragment over another thread "
        "count): a bug in what built the IR, report it if it came from the DSL",
    )
    CODEGEN_UNSUPPORTED = _entry(
        Category.CODEGEN,
        "{construct}: not supported by the CUDA code generator yet",
        "run the kernel on the interpreter meanwhile, or write the construct in a form the code generator lowers "
        "(the hint says which when there is one)",
    )
    COMPILE_ARCH = _entry(
        Category.CODEGEN,
        "NVRTC {version} cannot compile {program} for {arch!r}",
        "compile for sm_90a (Hopper: H100, H200); the 'a' suffix enables wgmma, setmaxnreg and TMA multicast",
    )
    COMPILE_NAME_EXPRESSION = _entry(
        Category.CODEGEN,
        "NVRTC returned no lowered name for {names} in {program}",
        "a name expression must name a __global__ function or a __device__/__constant__ variable of the source",
    )
    COMPILE_NVRTC = _entry(
        Category.CODEGEN,
        "NVRTC could not compile {program} for {arch}: {summary}",
        "read the NVRTC log: the location points at the DSL line; if that line is valid DSL this is a code-generator "
        "bug (the generated source is in CompileError.source)",
    )
    COMPILE_NVRTC_API = _entry(
        Category.CODEGEN,
        "{call} failed with {status}",
        "NVRTC itself failed (not the kernel): reinstall nvidia-cuda-nvrtc matching cuda-bindings' CUDA major, or "
        "fix ARGUS_CUDA_HOME",
    )
    COMPILE_OPTION = _entry(
        Category.CODEGEN,
        "NVRTC rejected an option for {program}: {reason}",
        "pass only options NVRTC supports, and the architecture through arch=, not as an option",
    )
    COMPILE_TOOLCHAIN = _entry(
        Category.CODEGEN,
        "the CUDA toolchain is missing or cannot be loaded: {problem}",
        "install the compile toolchain with pip install 'argus-kernels[cuda]', or point ARGUS_CUDA_HOME at a CUDA "
        "toolkit that has NVRTC, its headers, cuobjdump and nvdisasm",
    )
    INSPECT_NOT_CUBIN = _entry(
        Category.CODEGEN,
        "{problem}: not a 64-bit CUDA ELF (cubin)",
        "pass CompiledModule.cubin; fatbins and PTX text are not cubins",
    )
    INSPECT_TOOL = _entry(
        Category.CODEGEN,
        "{tool} {arguments} failed: {problem}",
        "check that the cubin was built for an architecture this cuobjdump/nvdisasm knows (sm_75 to sm_121), and "
        "that the tool runs on its own",
    )

    # --- RUNTIME: loading and launching -----------------------------------------------------------------------
    RUNTIME_ARG_ALIAS = _entry(
        Category.RUNTIME,
        "{kernel}: argument {name!r}: the kernel writes it, and its memory overlaps argument {other!r}",
        "pass a separate output tensor: outputs must not alias other arguments (the generated code assumes "
        "__restrict__)",
    )
    RUNTIME_ARG_ALIGNMENT = _entry(
        Category.RUNTIME,
        "{kernel}: argument {name!r}: data pointer {pointer} is not {alignment}-byte aligned",
        "pass a tensor that starts at an allocation boundary (e.g. .contiguous() of a copy), not a view offset into "
        "another tensor",
    )
    RUNTIME_ARG_COUNT = _entry(
        Category.RUNTIME,
        "{kernel}: takes {count} tensors ({names}), got {given}",
        "pass the tensors positionally in the kernel's parameter order; shape symbols are inferred",
    )
    RUNTIME_ARG_DEVICE = _entry(
        Category.RUNTIME,
        "{kernel}: argument {name!r}: {problem}",
        "put every argument on the same CUDA device (.cuda(), or device='cuda' when creating it)",
    )
    RUNTIME_ARG_DTYPE = _entry(
        Category.RUNTIME,
        "{kernel}: argument {name!r}: dtype {dtype}, the kernel takes {want}",
        "convert it, e.g. x.to(torch.bfloat16)",
    )
    RUNTIME_ARG_RANGE = _entry(
        Category.RUNTIME,
        "{kernel}: argument {name!r}: {symbol} = {extent} is too large for the kernel's 32-bit tile coordinates",
        "split the problem into pieces below the limit the message gives",
    )
    RUNTIME_ARG_WIDE = _entry(
        Category.RUNTIME,
        "{kernel}: tensor {name} has more elements than its 32-bit offsets address, and this LoadedKernel cannot "
        "compile the 64-bit variant",
        "load it from argus.runtime.build or compile_kernel (which keep the traced kernel), or compile it with "
        "compile_kernel(..., wide=True)",
    )
    RUNTIME_ARG_RANK = _entry(
        Category.RUNTIME,
        "{kernel}: argument {name!r}: {rank} dimensions, the kernel takes {want}",
        "pass a tensor with one dimension per extent of the kernel's parameter (reshape or view it)",
    )
    RUNTIME_ARG_READONLY = _entry(
        Category.RUNTIME,
        "{kernel}: argument {name!r}: the kernel writes it, but its memory is marked read-only",
        "pass a writable tensor as the output (a copy of a read-only buffer)",
    )
    RUNTIME_ARG_SHAPE = _entry(
        Category.RUNTIME,
        "{kernel}: argument {name!r}: {problem}",
        "pass tensors whose extents agree on every shape symbol and match the kernel's static extents; a transposed "
        "operand needs .T or the kernel's variant for that layout",
    )
    RUNTIME_ARG_STRIDES = _entry(
        Category.RUNTIME,
        "{kernel}: argument {name!r}: strides {strides} (in elements) are not row-major contiguous",
        "pass x.contiguous()",
    )
    RUNTIME_ARG_TMA = _entry(
        Category.RUNTIME,
        "argument {name!r} of {kernel}: cannot describe it for TMA: {problem}",
        "make the tensor's base 16-byte aligned and its row strides multiples of 16 bytes (pad the leading "
        "dimension), or use a kernel that loads with cp.async",
    )
    RUNTIME_ARG_TYPE = _entry(
        Category.RUNTIME,
        "{kernel}: argument {name!r}: expected a CUDA tensor (torch, or an object with __cuda_array_interface__), "
        "got {type}",
        "move host data to the GPU first, e.g. torch.as_tensor(a, device='cuda')",
    )
    RUNTIME_ASSUMPTION = _entry(
        Category.RUNTIME,
        "{kernel}: the shapes {shapes} violate the kernel's assumption {assumption}",
        "pass sizes that satisfy it (pad the tensors), or use a kernel written for these sizes",
    )
    RUNTIME_LAUNCH_CONFIG = _entry(
        Category.RUNTIME,
        "{kernel}: {problem}",
        "the grid for these sizes is one the hardware cannot launch (too many blocks along an axis): use smaller "
        "sizes or a persistent variant of the kernel",
    )
    RUNTIME_NOT_DEPENDENT = _entry(
        Category.RUNTIME,
        "{kernel}: launched as a programmatic dependent (dependent=True), but generated without the griddepcontrol "
        "prologue that waits for the grid before it",
        "compile it for dependent launch (compile_kernel(..., dependent=True) or argus.runtime.build(..., "
        "dependent=True)), or launch it without dependent=True",
    )
    RUNTIME_NO_CUDA = _entry(
        Category.RUNTIME,
        "{kernel}: {problem} (no cuda.bindings, no driver or no GPU)",
        "pip install 'argus-kernels[cuda]' and run on a machine with an NVIDIA GPU and driver",
    )
    RUNTIME_CUDA_INIT = _entry(
        Category.RUNTIME,
        "{kernel}: cuInit failed: {cuda_error}: {cuda_message}",
        "the CUDA driver did not initialise: check nvidia-smi, the driver install, and that CUDA_VISIBLE_DEVICES "
        "names a GPU",
    )
    RUNTIME_CUDA_DEVICEGET = _entry(
        Category.RUNTIME,
        "{kernel}: cuDeviceGet failed: {cuda_error}: {cuda_message}",
        "the device index does not exist: check CUDA_VISIBLE_DEVICES and that the tensors are on a visible GPU",
    )
    RUNTIME_CUDA_DEVICEPRIMARYCTXRETAIN = _entry(
        Category.RUNTIME,
        "{kernel}: cuDevicePrimaryCtxRetain failed: {cuda_error}: {cuda_message}",
        "the GPU's context could not be created: it may be held by another process in exclusive-process mode, out of "
        "memory, or in an error state (nvidia-smi)",
    )
    RUNTIME_CUDA_CTXGETCURRENT = _entry(
        Category.RUNTIME,
        "{kernel}: cuCtxGetCurrent failed: {cuda_error}: {cuda_message}",
        "the CUDA context is unusable, usually after an earlier kernel faulted: restart the process, and find the "
        "fault with CUDA_LAUNCH_BLOCKING=1 or compute-sanitizer",
    )
    RUNTIME_CUDA_CTXPUSHCURRENT = _entry(
        Category.RUNTIME,
        "{kernel}: cuCtxPushCurrent failed: {cuda_error}: {cuda_message}",
        "the CUDA context is unusable, usually after an earlier kernel faulted: restart the process, and find the "
        "fault with CUDA_LAUNCH_BLOCKING=1 or compute-sanitizer",
    )
    RUNTIME_CUDA_CTXPOPCURRENT = _entry(
        Category.RUNTIME,
        "{kernel}: cuCtxPopCurrent failed: {cuda_error}: {cuda_message}",
        "the CUDA context is unusable, usually after an earlier kernel faulted: restart the process, and find the "
        "fault with CUDA_LAUNCH_BLOCKING=1 or compute-sanitizer",
    )
    RUNTIME_CUDA_POINTERGETATTRIBUTE = _entry(
        Category.RUNTIME,
        "{kernel}: cuPointerGetAttribute failed: {cuda_error}: {cuda_message}",
        "the argument's data pointer is not device memory the driver knows: pass a CUDA tensor allocated in this "
        "process",
    )
    RUNTIME_CUDA_TENSORMAPENCODEIM2COL = _entry(
        Category.RUNTIME,
        "{kernel}: cuTensorMapEncodeIm2col failed: {cuda_error}: {cuda_message}",
        "the im2col tensor map was refused: the tensor needs a 16-byte-aligned base and strides that are multiples "
        "of 16 bytes, corners in the rank's range and a box of whole 16-byte chunks of channels (argus.atoms.tma, "
        "diagnose_im2col)",
    )
    RUNTIME_CUDA_TENSORMAPENCODETILED = _entry(
        Category.RUNTIME,
        "{kernel}: cuTensorMapEncodeTiled failed: {cuda_error}: {cuda_message}",
        "the TMA tensor map was refused: the tensor needs a 16-byte-aligned base and row strides that are multiples "
        "of 16 bytes (argus verify reports ALIGN_TMA for the sizes that break this)",
    )
    RUNTIME_CUDA_MODULELOADDATA = _entry(
        Category.RUNTIME,
        "{kernel}: cuModuleLoadData failed: {cuda_error}: {cuda_message}",
        "argus compiles for sm_90a, so the kernel loads on Hopper GPUs (H100, H200) only; on one, clear the compile "
        "cache (ARGUS_CACHE_DIR) in case the cubin is stale",
    )
    RUNTIME_CUDA_MODULEGETFUNCTION = _entry(
        Category.RUNTIME,
        "{kernel}: cuModuleGetFunction failed: {cuda_error}: {cuda_message}",
        "the kernel's symbol is not in the cubin: clear the compile cache (ARGUS_CACHE_DIR), and report it as a "
        "code-generator bug if it persists",
    )
    RUNTIME_CUDA_FUNCSETATTRIBUTE = _entry(
        Category.RUNTIME,
        "{kernel}: cuFuncSetAttribute failed: {cuda_error}: {cuda_message}",
        "the kernel asks for more dynamic shared memory than the device allows per block: use fewer stages or "
        "smaller tiles (argus verify reports BUDGET_SMEM)",
    )
    RUNTIME_CUDA_LAUNCHKERNEL = _entry(
        Category.RUNTIME,
        "{kernel}: cuLaunchKernel failed: {cuda_error}: {cuda_message}",
        "out of resources at this block size (registers, shared memory), or an earlier asynchronous fault on the "
        "stream: run with CUDA_LAUNCH_BLOCKING=1 or compute-sanitizer to find which",
    )
    RUNTIME_CUDA_LAUNCHKERNELEX = _entry(
        Category.RUNTIME,
        "{kernel}: cuLaunchKernelEx failed: {cuda_error}: {cuda_message}",
        "the launch as a programmatic dependent (argus.runtime.loaded.PreparedLaunch.dependent) needs a driver of "
        "CUDA 12 or later; otherwise as cuLaunchKernel: out of resources at this block size, or an earlier "
        "asynchronous fault on the stream (CUDA_LAUNCH_BLOCKING=1 or compute-sanitizer find which)",
    )

    # --- KERNEL: the library and kernels of your own ----------------------------------------------------------
    CONV_ARGUMENTS = _entry(
        Category.KERNEL,
        "{kernel}: order {order}: the positions of the input, weight and bias among the call's tensors",
        "give one position per operand, each naming one of the call's input tensors",
    )
    CONV_COLUMNS_OVER_BUDGET = _entry(
        Category.KERNEL,
        "one image's column matrix is {bytes} bytes, over the {budget} bytes of COLUMN_BUDGET",
        "the im2col convolution needs the column matrix of at least one image in memory; the implicit-GEMM kernel "
        "(no column matrix) does not take this convolution (implicit_refusal says why): use PyTorch for it, or pass "
        "a larger budget where the memory exists",
    )
    CONV_DTYPE = _entry(
        Category.KERNEL,
        "{dtype} values: a convolution takes f32, f16 and bf16",
        "convert the input and the weight to one of those dtypes",
    )
    CONV_RANK = _entry(
        Category.KERNEL,
        "a {rank}-d convolution: 1-d, 2-d and 3-d are built",
        "use PyTorch for this convolution",
    )
    CONV_PHASES = _entry(
        Category.KERNEL,
        "the stride phases of a transposed convolution without groups, not {conv}",
        "ask transposed_refusal(conv) first; conv_plan takes the gather path for what the phases do not take",
    )
    CONV_EPILOGUE_PATH = _entry(
        Category.KERNEL,
        "a fused epilogue runs in the implicit kernel's store, and {conv} takes {path}",
        "leave the elementwise operations after this convolution to kernels of their own (conv_plan(conv).describe() "
        "says which path it takes)",
    )
    CONV_PHASE_GATHER = _entry(
        Category.KERNEL,
        "{conv} is a stride phase of a transposed convolution (padding given at both ends), which only the implicit "
        "kernel takes, and it does not: {reason}",
        "plan the transposed convolution itself (conv_plan takes its phases or the gather path), not one phase",
    )
    CONV_SHAPE = _entry(
        Category.KERNEL,
        "{problem}",
        "check the convolution's extents, groups, strides, padding and dilation against its input",
    )
    CONV_SPAN_OVER_SHARED = _entry(
        Category.KERNEL,
        "the input span of one tile of outputs needs {bytes} bytes of shared memory, over the {budget} a block has",
        "a window this wide is not built: use PyTorch for this convolution",
    )
    CONV_NO_GEMM = _entry(
        Category.KERNEL,
        "this convolution runs on the implicit-GEMM kernel, without a GEMM plan",
        "read ConvPlan.implicit (the kernel's tile) or ConvPlan.kernels(); ask conv_plan(conv, implicit=False) for "
        "the gather path and its GEMM",
    )
    KERNEL_BAD_SHAPE = _entry(
        Category.KERNEL,
        "cannot read {part!r} in shape {text!r}",
        "write NAME=VALUE pairs separated by commas, e.g. M=128,N=64",
    )
    KERNEL_FILE = _entry(
        Category.KERNEL,
        "{problem}: {path}",
        "give FILE.py:function with an existing Python file",
    )
    KERNEL_FILE_IMPORT = _entry(
        Category.KERNEL,
        "importing {path} raised {exception}: {text}",
        "run `python FILE.py` to see the full error, and fix it",
    )
    KERNEL_FILE_SYNTAX = _entry(
        Category.KERNEL,
        "{path}:{line}: {problem}",
        "fix the syntax error at that line",
    )
    KERNEL_NOT_A_KERNEL = _entry(
        Category.KERNEL,
        "{spec} is a {type}, neither an @argus.kernel nor a LibraryKernel",
        "name the function decorated with @argus.kernel",
    )
    KERNEL_REFERENCE_FAILED = _entry(
        Category.KERNEL,
        "the reference of {kernel} raised {exception}: {text}",
        "the reference is called with CPU tensors, one per input: run it on its own to see why it fails",
    )
    KERNEL_REFERENCE_MISSING = _entry(
        Category.KERNEL,
        "{kernel} has no reference to compare with (or the reference named is not a function)",
        "give one: @argus.kernel(reference=my_reference) in the kernel's file, or --reference FILE.py:function",
    )
    KERNEL_REFERENCE_NO_OUTPUT = _entry(
        Category.KERNEL,
        "kernel {kernel} writes none of its tensors, so there is nothing to compare with a reference",
        "copy the result into an output tensor (T.copy(fragment, Y.tile(...)))",
    )
    KERNEL_REFERENCE_OUTPUTS = _entry(
        Category.KERNEL,
        "the reference of {kernel} returned {got}; the kernel writes {want}",
        "return one tensor per output, with the kernel tensor's shape, in parameter order (or a dict by name)",
    )
    KERNEL_SIZES = _entry(
        Category.KERNEL,
        "kernel {kernel} needs the problem sizes {missing}",
        "give them with --shape NAME=VALUE,... or sizes= on @argus.kernel",
    )
    KERNEL_DECLARATION = _entry(
        Category.KERNEL,
        "workload {workload}: its problem {problem} declares no interpreter inputs",
        "give the problem a make function in argus.kernels.workloads (a declaration bug in argus, not your input)",
    )
    KERNEL_UNKNOWN = _entry(
        Category.KERNEL,
        "no library kernel named {name!r} (or {path} defines no {attr!r})",
        "name a library kernel (argus kernels list; the hint gives the closest), or a function the file defines",
    )
    LINEAGE_UNKNOWN = _entry(
        Category.KERNEL,
        "no kernel lineage named {family!r}",
        "name one of the library's lineages (the hint lists them)",
    )

    # --- TASK: tasks ------------------------------------------------------------------------------------------
    TASK_DTYPE = _entry(
        Category.TASK,
        "unknown dtype {name!r}",
        "use one of the dtypes the hint lists",
    )
    TASK_KERNELBENCH_DIR = _entry(
        Category.TASK,
        "no level{level}/ directory in {root}",
        "point --problems (or ARGUS_KERNELBENCH_DIR) at a KernelBench problems directory",
    )
    TASK_PROBLEM_LOAD = _entry(
        Category.TASK,
        "{path} does not load: {error}",
        "run the problem file with python first; install what it imports (a module it needs and this environment "
        "lacks) or fix the line named",
    )
    TASK_KERNELBENCH_FORMAT = _entry(
        Category.TASK,
        "{path} defines no {missing}",
        "a KernelBench problem file defines Model, get_inputs and get_init_inputs; check the file is one",
    )
    TASK_KERNELBENCH_MISSING = _entry(
        Category.TASK,
        "level {level} has no problem(s) {missing} in {root}",
        "name problems that exist in that level (list the directory), or point at a complete KernelBench checkout",
    )
    TASK_KERNELBENCH_RESUME = _entry(
        Category.TASK,
        "cannot resume KernelBench run {run}: {problem}",
        "pass --store with the file the run was written to and a KernelBench run of the same level in it "
        "(its id is printed when the run starts and stored with its rows)",
    )
    TASK_NO_REFERENCE = _entry(
        Category.TASK,
        "{kernel} has no reference, so it defines no task",
        "give one: @argus.kernel(reference=my_reference), or --reference FILE.py:function",
    )
    TASK_SIZE = _entry(
        Category.TASK,
        "{task} needs {requirement}, got {value}",
        "choose sizes the task allows (grouped_gemm: R a multiple of 16, e.g. R=256)",
    )
    TASK_SIZE_MISSING = _entry(
        Category.TASK,
        "tensor {tensor} needs the size {extent!r}",
        "give it, e.g. --shapes NAME=128",
    )
    TASK_SIZE_UNKNOWN = _entry(
        Category.TASK,
        "{file} has no module-level {names} to override",
        "override only the module-level sizes the problem file defines (the hint lists them)",
    )
    TASK_UNKNOWN = _entry(
        Category.TASK,
        "no task named {name!r} (or {name!r} is not a user task name)",
        "name a built-in task (argus bench lists them; the hint gives the closest), or a kernel of your own as "
        "FILE.py:NAME[ref=FILE.py:fn][M=..,N=..]",
    )

    # --- GATE: the gate's outcome codes and its harness -------------------------------------------------------
    STATIC_FORBIDDEN_CALL = _entry(
        Category.GATE,
        "line {line}: {what}, which this task forbids",
        "implement the computation in the kernel; the task's `forbidden` list names the library routines (torch."
        "matmul on a GEMM task, vendor libraries) that are not allowed",
    )
    STATIC_PRECISION_TOGGLE = _entry(
        Category.GATE,
        "line {line}: {what} on an fp32 task",
        "remove the toggle: fp32 tasks are checked at fp32 tolerance, with TF32 and reduced-precision reductions off",
    )
    STATIC_UNPARSEABLE = _entry(
        Category.GATE,
        "line {line}: {problem}",
        "fix the Python syntax error at that line",
    )
    STATIC_NO_SOURCE = _entry(
        Category.GATE,
        "no source text to check (skipped)",
        "gate a candidate file (or pass its source) to get the static checks",
    )
    COMPILE_FAILED = _entry(
        Category.GATE,
        "the generated CUDA did not compile: {error}",
        "NVRTC rejected the generated CUDA: fix the kernel at the DSL line the error points to (details.error_code "
        "has the compiler's code)",
    )
    COMPILE_TRACE = _entry(
        Category.GATE,
        "the kernel did not trace: {error}",
        "the kernel could not be traced to IR: fix the DSL error at its caret (the error text is in the details)",
    )
    COMPILE_UNSUPPORTED = _entry(
        Category.GATE,
        "{construct}: not supported by the CUDA code generator yet (skipped)",
        "nothing to fix in the kernel: correctness still runs on the interpreter; GPU timing needs the code "
        "generator to support the construct",
    )
    COMPILE_UNAVAILABLE = _entry(
        Category.GATE,
        "{problem} (skipped)",
        "install the compile toolchain (pip install 'argus-kernels[cuda]') to compile and time kernels here",
    )
    COMPILE_SIGNATURE = _entry(
        Category.GATE,
        "the kernel's tensors ({kernel_parameters}) are not the task's ({task_parameters})",
        "name the kernel's tensor parameters as the task does, in its order (argus bench lists them)",
    )
    COMPILE_IMPORT = _entry(
        Category.GATE,
        "importing the solution file raised {exception}: {text}",
        "importing the solution file raised: run `python FILE.py` to see the traceback and fix it",
    )
    COMPILE_MISSING = _entry(
        Category.GATE,
        "{path} defines no {attr} (or there is no candidate file)",
        "give a solution file that defines `class ModelNew` (the candidate module)",
    )
    COMPILE_INIT = _entry(
        Category.GATE,
        "constructing the candidate raised {exception}: {text}",
        "constructing the candidate raised: fix ModelNew.__init__ (it is called with the task's init inputs)",
    )
    VERIFY_VIOLATED = _entry(
        Category.GATE,
        "{location}: error[{finding}]: {message}",
        "read the counterexample in the details (thread, element, program point) and fix what its finding's code "
        "names (argus explain CODE)",
    )
    VERIFY_UNKNOWN = _entry(
        Category.GATE,
        "some checks undecided",
        "nothing is rejected; to decide them, pin the parameter each unknown finding names (argus verify --shape)",
    )
    VERIFY_UNAVAILABLE = _entry(
        Category.GATE,
        "verifier not importable: {problem} (skipped)",
        "install argus with its verifier's dependencies (z3-solver): pip install argus-kernels",
    )
    VERIFY_NOT_APPLICABLE = _entry(
        Category.GATE,
        "no argus kernel in the candidate (skipped)",
        "write the kernel in the argus DSL to get proofs",
    )
    VERIFY_ERROR = _entry(
        Category.GATE,
        "the verifier raised {exception}: {text}",
        "the verifier itself failed (a harness error, not the candidate's): report it with the details",
    )
    CORRECT_MISMATCH = _entry(
        Category.GATE,
        "trial {trial} ({distribution} inputs, seed {seed}): {output}: {problem}",
        "the details name the input distribution, the element, the value and the bound: reproduce it with that "
        "seed and compare with the reference element by element",
    )
    CORRECT_NONFINITE = _entry(
        Category.GATE,
        "{output}: {count} of {elements} elements are NaN/Inf where the reference is not (or the reverse)",
        "write every output element (an element never written reads as NaN), and check for overflow on the input "
        "distribution named",
    )
    CORRECT_SHAPE = _entry(
        Category.GATE,
        "{output}: shape {shape} but the reference has {expected_shape}",
        "return outputs of the reference's shapes",
    )
    CORRECT_DTYPE = _entry(
        Category.GATE,
        "output {output} has dtype {dtype}, expected {expected}",
        "return outputs of the reference's dtypes (cast before returning)",
    )
    CORRECT_OUTPUT_COUNT = _entry(
        Category.GATE,
        "the candidate returned {count} output(s), the reference {expected} (or an output is not a tensor)",
        "return what the reference returns: the same number of tensors, in order",
    )
    CORRECT_OUTPUT_TYPE = _entry(
        Category.GATE,
        "output {output} is a {type}, not a plain torch.Tensor",
        "return plain torch.Tensor objects, not subclasses",
    )
    CORRECT_OUTPUT_DEVICE = _entry(
        Category.GATE,
        "output {output} is on {device}, expected {expected}",
        "return outputs on the device of the inputs",
    )
    CORRECT_INPUT_MODIFIED = _entry(
        Category.GATE,
        "trial {trial} ({distribution} inputs): the candidate wrote into input(s) {inputs}",
        "write results to outputs only; copy an input before changing it",
    )
    CORRECT_EXCEPTION = _entry(
        Category.GATE,
        "trial {trial} ({distribution} inputs): the candidate raised {exception}: {text}",
        "run the candidate on the trial's inputs outside the gate; the traceback is in the details",
    )
    CORRECT_PRECISION_FLAGS = _entry(
        Category.GATE,
        "the candidate changed PyTorch's precision settings ({changed})",
        "leave torch.backends and torch.set_float32_matmul_precision as the harness set them",
    )
    CORRECT_FORBIDDEN_OP = _entry(
        Category.GATE,
        "the candidate dispatched {operators}, which this task forbids",
        "implement the computation in the kernel instead of calling the forbidden PyTorch operator",
    )
    CORRECT_NO_VALID_TRIALS = _entry(
        Category.GATE,
        "only {valid} of {trials} trials had inputs on which the task's own reference meets its tolerance",
        "a harness error, not the candidate's: the task's inputs or tolerance need attention",
    )
    CORRECT_REFERENCE_FAILED = _entry(
        Category.GATE,
        "the task's reference (or input generator) raised: {text}",
        "a harness error, not the candidate's: check the task definition by running its reference on its inputs",
    )
    PROFILE_NO_GPU = _entry(
        Category.GATE,
        "no CUDA GPU here (skipped)",
        "run on an H100 or H200 to time the kernel; the cost model's estimate is in the details where it has one",
    )
    PROFILE_NOT_COMPILED = _entry(
        Category.GATE,
        "the kernel was not compiled, so it cannot be timed (skipped)",
        "see the compile stage's code: timing needs a compiled kernel",
    )
    PROFILE_NO_GENERATOR = _entry(
        Category.GATE,
        "the task has no file the sandbox can draw timed inputs from (skipped)",
        "time a task defined in a file (a KernelBench problem or FILE.py:NAME), or gate it without the sandbox",
    )
    PROFILE_FAILED = _entry(
        Category.GATE,
        "timing the candidate raised {exception}: {text}",
        "the candidate failed while being timed: run it in a loop outside the gate to reproduce",
    )
    PROFILE_STALE_RESULT = _entry(
        Category.GATE,
        "the outputs of the timed calls are wrong ({stale}): the candidate caches results across calls or skips work "
        "when timed",
        "compute from the inputs on every call",
    )
    PROFILE_TIMING_IMPOSSIBLE = _entry(
        Category.GATE,
        "round {round}: the sandbox reported {ms} ms for a repetition whose round trip took {wall_ms} ms",
        "do not touch the timing functions: the sandbox's timer was tampered with",
    )
    WORKER_CRASHED = _entry(
        Category.GATE,
        "the worker process died: {reason}",
        "the details give the exit status or signal (a segfault or illegal memory access: run the candidate alone "
        "under compute-sanitizer); killed on both attempts points at the OOM killer",
    )
    WORKER_LOST = _entry(
        Category.GATE,
        "the job's worker was lost on both attempts: {reason}",
        "not a verdict on the candidate: the executor lost the worker or node running the job twice (a Ray worker "
        "or node that died, Ray's out-of-memory kill); check the cluster (ray status, the raylet logs) and run again",
    )
    WORKER_TIMEOUT = _entry(
        Category.GATE,
        "ran past its time limit of {timeout_s} s; the worker was killed and replaced",
        "look for a hang (a wait that never completes, an unbounded loop), or raise the time limit for a large problem",
    )
    WORKER_EXCEPTION = _entry(
        Category.GATE,
        "the evaluation raised outside any stage: {exception}",
        "the evaluation raised outside any stage: the traceback is in the details; report it if it is argus's own",
    )
    EXECUTOR_RAY_MISSING = _entry(
        Category.GATE,
        "Ray was asked for ({address}) but cannot be imported: {error}",
        "install the optional extra: pip install 'argus-kernels[ray]'; or leave out --ray and $ARGUS_RAY_ADDRESS to "
        "use the local worker pool",
    )
    EXECUTOR_RAY_CONNECT = _entry(
        Category.GATE,
        "no Ray cluster answers at {address}: {error}",
        "start one (ray start --head) or give the head node's address: --ray HOST:6379, ray://HOST:10001, or auto on "
        "a node of the cluster; --ray local starts a private instance on this machine (docs/scale-out.md)",
    )
    EXECUTOR_NO_GPU = _entry(
        Category.GATE,
        "job {key!r} needs a GPU, and the executor has none",
        "run on a machine or Ray cluster with GPUs (ray start --num-gpus N), or let the caller submit CPU jobs",
    )
    SANDBOX_CONFIG = _entry(
        Category.GATE,
        "ARGUS_SANDBOX_NAMESPACES names {name!r}",
        "set ARGUS_SANDBOX_NAMESPACES to a comma-separated subset of net, pid, mnt, or to all or none",
    )
    SANDBOX_CRASHED = _entry(
        Category.GATE,
        "the candidate's process {what}",
        "run the solution alone to reproduce; the reason gives the exit status or signal (a SIGKILL the judge did "
        "not send is retried once)",
    )
    SANDBOX_TIMEOUT = _entry(
        Category.GATE,
        "no answer within {timeout_s} s",
        "look for a hang, or raise GateOptions.sandbox_timeout_s for a large problem",
    )
    SANDBOX_PROTOCOL = _entry(
        Category.GATE,
        "the candidate's process sent a malformed answer: {problem}",
        "return plain tensors from forward and do not touch argus's modules: only a process that tampers with the "
        "harness sends a malformed answer",
    )
    SANDBOX_START = _entry(
        Category.GATE,
        "the sandbox could not start: {problem}",
        "a harness error, not a rejection: run benchmarks/sandbox_diagnose.py; set ARGUS_SANDBOX_NAMESPACES=none "
        "where namespaces are refused",
    )
    CANDIDATE_FAILED = _entry(
        Category.GATE,
        "the candidate's process raised: {exception}",
        "the candidate's process raised outside the operation's own handling: read the traceback in the details",
    )
    FLAG_SPEEDUP_SUSPICIOUS = _entry(
        Category.GATE,
        "{speedups} (threshold {threshold}x)",
        "check that the kernel does all the work, on the timed stream; a real speedup this large needs a second look "
        "before it is believed",
    )
    FLAG_BEYOND_CEILING = _entry(
        Category.GATE,
        "{achieved} {unit} exceeds this GPU's measured ceiling of {ceiling} {unit}",
        "check the task's declared FLOP and byte counts, and that the kernel computes every output",
    )
    FLAG_UNSYNCED_WORK = _entry(
        Category.GATE,
        "a device-synchronized wall clock measured {wall_ms} ms per call but the timing events {event_ms} ms",
        "launch on the current stream (torch.cuda.current_stream()), not on a stream of your own",
    )
    FLAG_TIMING_NOISY = _entry(
        Category.GATE,
        "interquartile range is {spread} of the median (threshold {threshold})",
        "re-run on an idle GPU (nothing else running, clocks settled)",
    )
    FLAG_PRECISION_CAST = _entry(
        Category.GATE,
        "line {line}: {what} on an fp32 task",
        "make sure the result still meets fp32 tolerance, or keep the computation in f32",
    )
    STORE_READ_ONLY = _entry(
        Category.GATE,
        "cannot write to the store {path}: {why}",
        "make the store and its directory writable (SQLite also writes -wal and -shm files beside it), or use a "
        "writable copy or another path (--store, ARGUS_RUNS_DB)",
    )
    STORE_CORRUPT = _entry(
        Category.GATE,
        "the store {path} is not a readable SQLite database",
        "move it aside (mv STORE STORE.corrupt) and let argus start a new one; sqlite3's .recover may save its rows",
    )
    STORE_DISK_FULL = _entry(
        Category.GATE,
        "the disk that holds the store {path} is full: this write was not recorded",
        "free space on that file system or point the store elsewhere (--store, ARGUS_RUNS_DB), then run again",
    )
    STORE_LOCKED = _entry(
        Category.GATE,
        "the store {path} is locked by another process",
        "let the other argus process (or sqlite3 shell) finish, then retry; keep the store on a local disk",
    )
    STORE_IO = _entry(
        Category.GATE,
        "the operating system reported an I/O error on the store {path}",
        "check the disk and the file system (dmesg, df -h); keep the store on a local disk",
    )
    STORE_NOT_FOUND = _entry(
        Category.GATE,
        "there is no store at {path}",
        "check the path (--store, ARGUS_RUNS_DB)",
    )
    STORE_CANNOT_OPEN = _entry(
        Category.GATE,
        "SQLite cannot open the store {path}",
        "check that its directory exists and is readable and writable by this user, and that the path is a file",
    )
    COSTMODEL_GPU = _entry(
        Category.GATE,
        "the cost model knows no GPU named {name!r}",
        "name one of the GPUs the cost model lists (the hint gives them)",
    )
    COSTMODEL_SIZES = _entry(
        Category.GATE,
        "no size given for {missing} of {kernel}",
        "pass every shape symbol, e.g. sizes={'M': 4096, 'N': 4096, 'K': 4096}",
    )
    COSTMODEL_TARGET = _entry(
        Category.GATE,
        "cannot estimate {target!r}",
        "pass a library kernel, an @argus.kernel or a traced Kernel",
    )
    COSTMODEL_UNSUPPORTED = _entry(
        Category.GATE,
        "cannot evaluate {kernel}'s launch or loops: {problem}",
        "the cost model needs launch and loop extents it can evaluate at the given sizes; time the kernel on a GPU "
        "instead",
    )

    CALIBRATION_ROW = _entry(
        Category.GATE,
        "a calibration row the cost model's calibration cannot use: {problem}",
        "give each row family, group, label, ms (> 0), gpu, source and plan, as benchmarks/calibration_rows.py "
        "writes them (docs/agent.md, section Calibration)",
    )
    CALIBRATION_PLAN = _entry(
        Category.GATE,
        "a calibration row's plan cannot be rebuilt into kernels: {problem}",
        "give gemm rows a GemmProblem and a GemmConfig, attention rows an AttentionProblem and an AttentionConfig, "
        "conv rows a Conv and an ImplicitConfig the implicit kernels take, as fields, moe rows the grouped product, "
        "the grouped kernel's parameters and the routing's rows per expert (docs/agent.md, section Calibration)",
    )
    CALIBRATION_DATA = _entry(
        Category.GATE,
        "too little calibration data for {what}",
        "fit on rows of two groups (problems) or more, each with its features (argus calibrate --featurize)",
    )
    CALIBRATION_FILE = _entry(
        Category.GATE,
        "cannot read the calibration {path}: {problem}",
        "fit it again from the rows (argus calibrate ROWS --out FILE)",
    )

    # --- KB: the knowledge base -------------------------------------------------------------------------------
    KB_DUPLICATE_ID = _entry(
        Category.KB,
        "{count} problem(s) in {files}: duplicate id {id!r}",
        "give every entry file its own id",
    )
    KB_FEATURES_ARCH = _entry(
        Category.KB,
        "unknown target {arch!r}",
        "name a target the knowledge base describes (the message lists them)",
    )
    KB_FEATURES_PARAMS = _entry(
        Category.KB,
        "kernel {kernel} is already traced; parameters {params} unused",
        "pass parameters with the @argus.kernel function or library kernel, not with an already traced Kernel",
    )
    KB_FEATURES_TARGET = _entry(
        Category.KB,
        "cannot read features of {target!r}",
        "pass a library kernel (argus.kernels.get_kernel), an @argus.kernel or a traced Kernel",
    )
    KB_FINDINGS = _entry(
        Category.KB,
        "cannot read a verifier finding from {finding!r} (or its code is not the verifier's)",
        "pass Finding objects or their JSON, as argus verify --json writes them",
    )
    KB_NO_ENTRIES = _entry(
        Category.KB,
        "no entry directory {directory}",
        "point at a directory of entry TOML files (the shipped ones are in argus/kb/entries)",
    )
    KB_PROFILE = _entry(
        Category.KB,
        "profile {key} = {value!r}",
        "give profile keys among those listed, a bound of memory, compute or latency, and fractions between 0 and 1",
    )
    KB_SCHEMA = _entry(
        Category.KB,
        "{file} is malformed: {problems}",
        "see docs/kb.md for the schema; `argus kb show ID` prints a well-formed entry",
    )
    KB_TRANSFORM_BUDGET = _entry(
        Category.KB,
        "{kernel} with {policy} = {value!r} is over budget: [{code}] {problem}",
        "choose a smaller value (smaller tiles or fewer stages), or let the transform pick a candidate",
    )
    KB_TRANSFORM_NONE = _entry(
        Category.KB,
        "entry {entry!r} has no executable transform",
        "apply the entry by hand (its reason says what changes), or use the llm coder for it",
    )
    KB_TRANSFORM_NO_POLICY = _entry(
        Category.KB,
        "kernel {kernel} does not declare the policy {policy!r}",
        "declare it: @argus.kernel(policies={'POLICY': ...}) naming the parameter(s) that carry it",
    )
    KB_TRANSFORM_TARGET = _entry(
        Category.KB,
        "cannot apply {entry!r} to {kernel!r}",
        "pass an Entry, an Action or an entry id, and a library kernel (argus.kernels.get_kernel) or an @argus.kernel",
    )
    KB_TRANSFORM_TRACE = _entry(
        Category.KB,
        "{kernel} with {policy} = {value!r} does not trace (or traces with another value): {problem}",
        "choose another value; the traced error's hint says what the kernel needs",
    )
    KB_TRANSFORM_VALUE = _entry(
        Category.KB,
        "invalid value for policy {policy!r} of {kernel}: {problem}",
        "give a value of the policy's form (one per parameter it sets), among the entry's candidates",
    )
    KB_UNKNOWN_ENTRY = _entry(
        Category.KB,
        "no knowledge-base entry {entry_id!r}",
        "name an entry `argus kb list` shows (the hint gives the closest)",
    )

    # --- LINEAGE: KLineage ------------------------------------------------------------------------------------
    LINEAGE_ADMIT = _entry(
        Category.LINEAGE,
        "no lineage move from {kernel} adds {step} (or no skill {skill!r} in {directory})",
        "replay the skill from a rung where a move starts (held_out_moves lists them); `argus skills list` shows "
        "the skills",
    )
    LINEAGE_FILE = _entry(
        Category.LINEAGE,
        "cannot read lineage {path}: {problem}",
        "pass a lineage file written by argus lineage walk (kind 'lineage')",
    )
    LINEAGE_NO_TASK = _entry(
        Category.LINEAGE,
        "no built-in task has the tensors of kernel {kernel} ({tensors})",
        "pass task=NAME (argus.tasks) to walk()",
    )
    LINEAGE_REBUILD = _entry(
        Category.LINEAGE,
        "{variant} rebuilt in a walk's worker has fingerprint {actual}, not the walk's {expected}",
        "install the same argus and the same kernel file on every node the walk's jobs run on",
    )
    LINEAGE_WORKER = _entry(
        Category.LINEAGE,
        "gate job {job} of the walk: its result never came back from the executor",
        "rerun the walk; with --ray, check the cluster's workers (`ray status`)",
    )
    LINEAGE_SKILL = _entry(
        Category.LINEAGE,
        "precondition {feature} {op} {value!r} of skill {skill} does not hold on {kernel} (it has {actual!r})",
        "mine the skill from a step whose simpler kernel satisfies its preconditions, or loosen the precondition",
    )
    LINEAGE_UNKNOWN_STEP = _entry(
        Category.LINEAGE,
        "no mechanism step {name!r} (or lineage rung {rung!r}) in the vocabulary (argus.lineage.mechanisms)",
        "use a name the vocabulary lists (the error names them all); a new mechanism is added to "
        "argus.lineage.mechanisms first",
    )
    LINEAGE_UNKNOWN_OPERATOR = _entry(
        Category.LINEAGE,
        "no operator {operator!r}",
        "name one of the operators the hint lists",
    )

    # --- FRONTEND: from a PyTorch module to DSL kernels (argus solve) ----------------------------------------------
    SOLVE_EMIT = _entry(
        Category.FRONTEND,
        "cannot write {node} ({operator}) as Python: {problem}",
        "an operator argument that has no Python spelling: report it as a bug in argus, with the problem file",
    )
    SOLVE_EXPORT = _entry(
        Category.FRONTEND,
        "torch.export cannot capture {problem} ({where}): {exception}",
        "argus solve needs a forward that torch.export can trace: no control flow on tensor values, no operator "
        "without a tracing rule; rewrite that part (torch.where, torch.cond) or leave it to PyTorch",
    )
    SOLVE_POINTWISE_PLAN = _entry(
        Category.FRONTEND,
        "{kernel}: no pointwise kernel for this group: {reason}",
        "a bug in argus (the partitioner asks the template about a group before it writes it): report it with the "
        "problem file",
    )
    SOLVE_INPUTS = _entry(
        Category.FRONTEND,
        "{problem}: building the model or drawing its inputs failed, or an input is not a tensor or a number",
        "run the problem's get_init_inputs(), Model(...) and get_inputs() on their own; pass tensors and numbers",
    )
    SOLVE_CONSTANT = _entry(
        Category.FRONTEND,
        "the forward creates a constant tensor of {elements} elements ({target}); a solution carries such constants "
        "as literals, at most {limit} elements",
        "make it a buffer of the model (register_buffer), which the solution reads from the problem's Model",
    )
    SOLVE_OUTPUTS = _entry(
        Category.FRONTEND,
        "the forward returns a {type} of outputs; argus solve takes a tensor or a tuple of tensors",
        "return a tensor or a tuple of tensors",
    )
    SOLVE_PROBLEM = _entry(
        Category.FRONTEND,
        "no such problem file: {path}",
        "give the path of a problem .py file (Model, get_inputs, get_init_inputs)",
    )
    SOLVE_WRITE = _entry(
        Category.FRONTEND,
        "cannot write the solution to {path}: {problem}",
        "give --out a path in a writable directory",
    )

    # --- AGENT: the optimization loop, its run store and LLM providers ----------------------------------------
    AGENT_GENERATED_IN_PROCESS = _entry(
        Category.AGENT,
        "refusing to import generated code ({file}) in the agent's own process",
        "generated kernels are loaded only by the gate's worker processes: load them through the gate",
    )
    AGENT_NO_TASK = _entry(
        Category.AGENT,
        "no built-in task has the tensors of {kernel} ({tensors})",
        "give the kernel a reference (@argus.kernel(reference=fn, sizes={...}) or --reference FILE.py:fn), or "
        "optimize a kernel whose parameters match a built-in task (argus bench lists them)",
    )
    AGENT_TARGET = _entry(
        Category.AGENT,
        "{target} is not an @argus.kernel (or no kernel to optimize)",
        "name a library kernel or FILE.py:function of an @argus.kernel",
    )
    AGENT_TUNE = _entry(
        Category.AGENT,
        "cannot tune {what}: {problem}",
        "tuning measures on a CUDA GPU: run it where torch sees one, for a bf16, f16 or f32 GEMM the tensor-core "
        "plan takes (argus.kernels.matmul)",
    )
    AGENT_WORKER = _entry(
        Category.AGENT,
        "{target} failed in the worker: [{code}] {reason}",
        "the worker's code says what failed (argus explain CODE); fix that and run again",
    )
    CODER_GENERATED_BASE = _entry(
        Category.AGENT,
        "a generated kernel is transformed only in a worker process",
        "give the transform coder a remote (the loop does) so generated kernels are transformed in a worker",
    )
    CODER_KB_TRANSFORM_BUDGET = _entry(
        Category.AGENT,
        "{kernel} with {policy} = {value!r} is over budget: [{code}] {problem}",
        "the transform coder's value does not fit the budget: the planner tries another arm; for the entry itself, "
        "choose a smaller value",
    )
    CODER_KB_TRANSFORM_NONE = _entry(
        Category.AGENT,
        "entry {entry!r} has no executable transform",
        "use the llm coder (--coder llm) for this entry",
    )
    CODER_KB_TRANSFORM_NO_POLICY = _entry(
        Category.AGENT,
        "kernel {kernel} does not declare the policy {policy!r}",
        "declare it: @argus.kernel(policies={'POLICY': ...}) naming the parameter(s) that carry it",
    )
    CODER_KB_TRANSFORM_TARGET = _entry(
        Category.AGENT,
        "cannot apply {entry!r} to {kernel!r}",
        "the arm names something the transform coder cannot apply; report it if the planner offered it",
    )
    CODER_KB_TRANSFORM_TRACE = _entry(
        Category.AGENT,
        "{kernel} with {policy} = {value!r} does not trace: {problem}",
        "the transform's value breaks the kernel: the planner tries another arm; the traced error's hint says what "
        "the kernel needs",
    )
    CODER_KB_TRANSFORM_VALUE = _entry(
        Category.AGENT,
        "invalid value for policy {policy!r} of {kernel}: {problem}",
        "give a value among the entry's candidates, of the policy's form",
    )
    CODER_KB_UNKNOWN_ENTRY = _entry(
        Category.AGENT,
        "no knowledge-base entry {entry_id!r}",
        "the arm names an entry the knowledge base lacks: pass the entries the run was planned with",
    )
    CODER_LLM_FAILED = _entry(
        Category.AGENT,
        "the LLM coder gave no usable code: {reason}",
        "check the provider (the hint carries its error); the loop counts the step as failed and goes on",
    )
    CODER_MALFORMED = _entry(
        Category.AGENT,
        "the LLM coder's answer is unusable: {problem}",
        "the model's answer must hold a ```python block defining an @argus.kernel function; a capable model or a "
        "clearer prompt fixes it",
    )
    CODER_NO_PROVIDER = _entry(
        Category.AGENT,
        "the llm coder needs an LLM provider",
        "configure one with ARGUS_LLM_* (docs/agent.md), or use --coder transform",
    )
    CODER_NO_TRANSFORM = _entry(
        Category.AGENT,
        "{entry} has no executable transform",
        "the llm coder can rewrite the kernel for it (--coder llm)",
    )
    CODER_RESTRICTED = _entry(
        Category.AGENT,
        "generated code refused: {violations}",
        "write a DSL module: import only argus, argus.lang, argus.layout and math, use only the public DSL names "
        "after T., and no files, processes, eval/exec/getattr, underscore names, classes or generators",
    )
    CODER_UNKNOWN = _entry(
        Category.AGENT,
        "no coder named {kind!r}",
        "use --coder transform or --coder llm",
    )
    PLANNER_MALFORMED = _entry(
        Category.AGENT,
        "the LLM planner's answer is unusable: {problem}",
        "the LLM planner's answer must be a JSON object whose 'action' is one of the ids offered; the step is "
        "counted as failed",
    )
    PLANNER_NO_ARMS = _entry(
        Category.AGENT,
        "no applicable action for {kernel}",
        "nothing in the knowledge base or the lineage applies to this kernel: give it policies "
        "(@argus.kernel(policies=...)) or use the llm coder",
    )
    PLANNER_NO_PROVIDER = _entry(
        Category.AGENT,
        "the llm planner needs an LLM provider",
        "configure one with ARGUS_LLM_* (docs/agent.md), or use --planner bandit",
    )
    PLANNER_UNKNOWN = _entry(
        Category.AGENT,
        "no planner named {kind!r} (or no bandit method {method!r})",
        "use --planner bandit, thompson or llm (bandit methods: ucb1, thompson)",
    )
    RUN_BAD_GATE_RESULT = _entry(
        Category.AGENT,
        "a gate result is a GateResult or its to_json(); got {data}",
        "record the GateResult the gate returned (or its to_json()); anything else is a bug in the caller",
    )
    RUN_BAD_STATUS = _entry(
        Category.AGENT,
        "{what} is one of {allowed}; got {status!r}",
        "use a status the run store knows (proposed or invalid for a new candidate, a terminal one to finish it, "
        "finished or failed for a run); anything else is a bug in the caller",
    )
    RUN_CANDIDATE_FINISHED = _entry(
        Category.AGENT,
        "candidate {candidate} is already {status}; it is not gated or finished again",
        "gate and finish each candidate once; a resumed run skips finished candidates",
    )
    RUN_CANDIDATE_UNKNOWN = _entry(
        Category.AGENT,
        "run {run} has no candidate {candidate}",
        "name a candidate of that run (argus runs show RUN lists them)",
    )
    RUN_EXISTS = _entry(
        Category.AGENT,
        "a run {run} already exists in {path}",
        "resume it, or choose another run id",
    )
    RUN_LOCKED = _entry(
        Category.AGENT,
        "run {run} is being written by process {pid} on {host} (or this process no longer holds it)",
        "one writer per run: wait for it to finish or stop it; pass --force only if it is really gone",
    )
    RUN_NOT_FOUND = _entry(
        Category.AGENT,
        "no run {run} in {path}",
        "argus runs list shows the runs",
    )
    LLM_AUTH = _entry(
        Category.AGENT,
        "{provider} at {url} refused the API key (HTTP {status}): {detail}",
        "check the key (ARGUS_LLM_API_KEY, OPENAI_API_KEY or ANTHROPIC_API_KEY) and that it may use this model",
    )
    LLM_BAD_MESSAGES = _entry(
        Category.AGENT,
        "the messages are not a chat the provider takes: {problem}",
        "pass a non-empty list of {'role': 'system' | 'user' | 'assistant', 'content': str} with at least one "
        "user message (first, for Anthropic, after the system message)",
    )
    LLM_BAD_REQUEST = _entry(
        Category.AGENT,
        "{provider} rejected the request: {detail}",
        "check the model name, max_tokens (a positive int), temperature (0 to 2) and the messages",
    )
    LLM_CACHE_MISS = _entry(
        Category.AGENT,
        "replay-only: no cached response for request {key} ({provider}, model {model}) in {directory}",
        "the prompt differs from the recorded run, or the cache directory is not the run's; set ARGUS_LLM_CACHE=use "
        "to call the model",
    )
    LLM_CONFIG_INVALID = _entry(
        Category.AGENT,
        "invalid LLM configuration: {problem}",
        "fix the setting the message names (ARGUS_LLM_* or the [llm] table of the config file; docs/agent.md lists "
        "them)",
    )
    LLM_CONFIG_MISSING = _entry(
        Category.AGENT,
        "the LLM provider is not configured: {problem}",
        "set ARGUS_LLM_MODEL and an API key (ARGUS_LLM_API_KEY, OPENAI_API_KEY or ANTHROPIC_API_KEY), or the same "
        "under [llm] in the config file",
    )
    LLM_CONNECTION = _entry(
        Category.AGENT,
        "cannot reach {provider} at {url}: {detail}",
        "check ARGUS_LLM_BASE_URL and that the server is running",
    )
    LLM_MALFORMED_RESPONSE = _entry(
        Category.AGENT,
        "{provider} at {url} answered with something that is not a completion: {detail}",
        "check that the base URL is an OpenAI-compatible /v1 endpoint (or Anthropic's API) and the model a chat model",
    )
    LLM_RATE_LIMITED = _entry(
        Category.AGENT,
        "{provider} at {url} is rate limiting (HTTP 429): {detail}",
        "lower the request rate or raise the account's limits; retries back off exponentially",
    )
    LLM_SDK_MISSING = _entry(
        Category.AGENT,
        "the {module!r} package is not installed; the {module} provider needs it",
        'pip install "argus-kernels[llm]"',
    )
    LLM_SERVER_ERROR = _entry(
        Category.AGENT,
        "{provider} at {url} failed (HTTP {status}): {detail}",
        "the server failed or is overloaded, and retries with backoff did not get through: try again later",
    )
    LLM_TIMEOUT = _entry(
        Category.AGENT,
        "{provider} at {url} did not answer in time: {detail}",
        "raise ARGUS_LLM_TIMEOUT for a slow model, or check that the server is not overloaded",
    )
    LLM_UNEXPECTED = _entry(
        Category.AGENT,
        "{provider} at {url}: {exception}: {detail}",
        "the provider's SDK raised something argus does not classify: check the endpoint, and report it if it persists",
    )

    # --- CLI: the argus command -------------------------------------------------------------------------------
    CLI_UNKNOWN_CODE = _entry(
        Category.CLI,
        "no diagnostic code {code!r}",
        "give a code as errors print it (e.g. DSL_UNKNOWN_PARAM), or a category or prefix to list its codes "
        "(argus explain DSL)",
    )


_BY_CODE: dict[str, Code] = {c.value: c for c in Code}


def lookup(code: str) -> Code | None:
    """The catalog entry of `code` (a string or a `Code`), or None when argus has no such code."""
    return _BY_CODE.get(str(code))


def fix_for(code: str) -> str | None:
    """The catalog's fix for `code`, or None when argus has no such code."""
    entry = lookup(code)
    return entry.fix if entry is not None else None


def codes(category: Category | str | None = None) -> list[Code]:
    """Every code, optionally of one category, in catalog order."""
    return [c for c in Code if category is None or c.category == category]


def explain(code: Code) -> str:
    """The entry of `code` as plain text: the code and its category, the message template and the fix."""
    return "\n".join(
        [
            f"{code.value}",
            f"  category: {code.category.value} — {code.category.description}",
            f"  message:  {code.message}",
            f"  fix:      {code.fix}",
        ]
    )


def markdown() -> str:
    """`docs/diagnostics.md`: every code, grouped by category in layer order, with its message and fix."""
    lines = [
        "# Diagnostics",
        "",
        "<!-- Generated from argus.diagnostics.catalog by markdown(); do not edit. Regenerate with",
        "     ARGUS_UPDATE_GOLDEN=1 python -m pytest tests/test_diagnostics_catalog.py -->",
        "",
        "Every code argus reports, with what its message says (`{placeholders}` are filled in where it is reported)",
        "and what to do about it. An error without a hint of its own shows the fix below as its hint;",
        "`argus explain CODE` prints one entry, `argus explain CATEGORY` the codes of a category. The catalog is",
        '`argus.diagnostics.Code` (a string enum: `Code.DSL_UNKNOWN_PARAM == "DSL_UNKNOWN_PARAM"`).',
        "",
        "The verifier's findings (category VERIFY) have a title, a description and a severity in",
        "[verify.md](verify.md); the gate's outcome codes (category GATE) a stage in [eval.md](eval.md).",
        "",
        f"{len(Code)} codes:",
        "",
    ]
    lines += [f"- [{c.value}](#{c.value.lower()}): {len(codes(c))}" for c in Category]
    for category in Category:
        lines += ["", f"## {category.value}", "", _text(category.description[0].upper() + category.description[1:])]
        lines[-1] += "."
        for code in codes(category):
            lines += [
                "",
                f"### {code.value}",
                "",
                f"- message: {_code_span(code.message)}",
                f"- fix: {_text(code.fix)}",
            ]
    return "\n".join(lines) + "\n"


def _code_span(text: str) -> str:
    """`text` as a Markdown code span (longer fences when it holds backticks)."""
    fence = "`" * (max((len(m) for m in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _text(text: str) -> str:
    """`text` as Markdown prose: dunder names as code, ``*`` and HTML brackets escaped, backticked spans kept."""
    parts = re.split(r"(`[^`]*`)", text)
    for i in range(0, len(parts), 2):
        part = parts[i].replace("\\", "\\\\").replace("*", "\\*").replace("<", "&lt;").replace(">", "&gt;")
        parts[i] = re.sub(r"(?<![\w`])(__\w+?__)", r"`\1`", part)
    return "".join(parts)
