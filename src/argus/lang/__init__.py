"""The tile DSL: write ``import argus.lang as T`` and decorate kernels with ``@argus.kernel``.

The tracer is split by concern (`docs/dsl-ir.md` is the model, `docs/dsl-reference.md` every call):

* `decorator` — ``@argus.kernel``, `KernelFunction` (``trace``, the call) and `TracedKernel`;
* `trace` — the trace in progress (statements, grid, warp role) and the IR names it gives;
* `names` — the names the kernel's source gives buffers, loop variables and block indices;
* `tiles` — tensor annotations, global tensors, tiles and shared buffers (views: they emit nothing);
* `fragment` — register tiles and their operators (elementwise `Map`s);
* `pointwise` — math on fragments and reductions;
* `memory` — allocation, ``T.copy`` and ``T.fill``;
* `sync` — barriers, fences, ``cp.async`` groups and mbarriers;
* `control` — the grid, loops, branches, warp roles, ``T.assume``, ``T.assume_values``, ``T.writes_part`` and
  ``T.partial_sums``;
* `mma` — ``T.gemm`` and the MMA atoms;
* `call` — a kernel call: the device runners' registry (the CPU's is `argus.runtime.cpu`);
* `tags` — tags and tag assertions; `errors` — `DSLError` and source locations; `fragments` — fragment layouts.
"""

from argus.atoms.common import SHARED_MEMORY_BUDGET  # Hopper's shared memory per block
from argus.ir.expr import cdiv
from argus.ir.types import bf16, boolean, f16, f32, i32, i64, u32
from argus.lang.control import (
    assume,
    assume_values,
    grid,
    if_,
    lane_id,
    let,
    partial_sums,
    persistent_grid,
    pipeline,
    role,
    serial,
    thread_id,
    tile_order,
    unroll,
    warp_id,
    writes_part,
)
from argus.lang.decorator import KernelFunction, kernel
from argus.lang.errors import DSLError, macro
from argus.lang.fragment import Fragment
from argus.lang.memory import alloc_fragment, alloc_reduced, alloc_shared, copy, fill
from argus.lang.mma import fma_atom, gemm, mma_sync, wgmma_atom
from argus.lang.pointwise import (
    abs,
    cast,
    ceil,
    cos,
    eq,
    erf,
    exp,
    exp2,
    expm1,
    floor,
    fma,
    fmod,
    index,
    log,
    log1p,
    log2,
    maximum,
    minimum,
    ne,
    pow,
    rcp,
    reduce_max,
    reduce_sum,
    rsqrt,
    sigmoid,
    sin,
    sqrt,
    tanh,
    where,
)
from argus.lang.sync import (
    Mbarriers,
    alloc_mbarrier,
    async_commit,
    async_wait,
    barrier,
    fence_proxy_async,
    group_barrier,
    mbarrier_arrive,
    mbarrier_wait,
    turn_pass,
    turn_wait,
    wgmma_wait,
)
from argus.lang.tags import assert_tag, assert_tag_eq, exclude, tag
from argus.lang.tiles import GlobalTensor, Shared, Tensor, TensorSpec, Tile

__all__ = [
    "SHARED_MEMORY_BUDGET",
    "DSLError",
    "Fragment",
    "GlobalTensor",
    "KernelFunction",
    "Mbarriers",
    "Shared",
    "Tensor",
    "TensorSpec",
    "Tile",
    "abs",
    "alloc_fragment",
    "alloc_mbarrier",
    "alloc_reduced",
    "alloc_shared",
    "assert_tag",
    "assert_tag_eq",
    "assume",
    "assume_values",
    "writes_part",
    "partial_sums",
    "async_commit",
    "async_wait",
    "barrier",
    "bf16",
    "boolean",
    "cast",
    "cdiv",
    "ceil",
    "copy",
    "cos",
    "eq",
    "erf",
    "exclude",
    "exp",
    "exp2",
    "expm1",
    "f16",
    "f32",
    "fence_proxy_async",
    "fill",
    "floor",
    "fma",
    "fma_atom",
    "fmod",
    "gemm",
    "grid",
    "i32",
    "i64",
    "if_",
    "let",
    "index",
    "kernel",
    "lane_id",
    "log",
    "log1p",
    "log2",
    "macro",
    "maximum",
    "mbarrier_arrive",
    "mbarrier_wait",
    "minimum",
    "mma_sync",
    "ne",
    "persistent_grid",
    "pipeline",
    "pow",
    "rcp",
    "reduce_max",
    "reduce_sum",
    "role",
    "rsqrt",
    "serial",
    "sigmoid",
    "sin",
    "sqrt",
    "tag",
    "tanh",
    "thread_id",
    "tile_order",
    "u32",
    "unroll",
    "warp_id",
    "wgmma_atom",
    "turn_pass",
    "group_barrier",
    "turn_wait",
    "wgmma_wait",
    "where",
]
