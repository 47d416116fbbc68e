"""The device-side helpers generated kernels call, as named snippets of CUDA C++.

Each snippet is one concept (masked global vectors, ``cp.async``, ``ldmatrix``, an MMA instruction, ...);
the emitter records the snippets a kernel uses and `render` writes exactly those, in dependency order,
inside ``namespace argus``, so a generated translation unit carries only what it needs and reads top to
bottom: includes, helpers, the kernel.

Conventions shared with the emitter:

* a vector of ``V`` elements of type ``T`` is ``Vec<T, V>`` (aligned to its size, so one ``LDG.128`` /
  ``STS.128`` moves it);
* a masked run of ``V`` consecutive global elements is described by its ``offset`` from the tensor's base,
  ``row_ok`` (every coordinate but the run's is in bounds) and the run's first coordinate ``col`` and extent
  ``n`` along its dimension; element ``j`` is in bounds when ``row_ok && 0 <= col + j < n``. Masked elements
  are neither read nor written, and loads give ``pad`` for them;
* ``vector_ok`` is the kernel-uniform condition under which every run's address is aligned to the
  vector size (e.g. the row length is a multiple of ``V``); when it fails, the element-wise path runs;
* shared-memory addresses for inline PTX are 32-bit (``cvta.to.shared``), in bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

from argus.atoms import Major, MmaAtom
from argus.atoms.tma import MULTICAST_MASK, MULTICAST_PTX
from argus.backend.cuda.codegen.cexpr import float_literal


@dataclass(frozen=True)
class Snippet:
    name: str
    text: str
    needs: tuple[str, ...] = ()


_SNIPPETS: dict[str, Snippet] = {}


def _snippet(name: str, text: str, needs: tuple[str, ...] = ()) -> None:
    _SNIPPETS[name] = Snippet(name, text.strip("\n"), needs)


_snippet(
    "vec",
    """
// V elements of T moved as one aligned vector access.
template <typename T, int V>
struct alignas(sizeof(T) * V) Vec {
  T v[V];
};
""",
)

_snippet(
    "bounds",
    """
// 0 <= i < n, in one unsigned comparison.
__device__ __forceinline__ bool in_range(int i, int n) { return static_cast<unsigned>(i) < static_cast<unsigned>(n); }

// A run of V elements at columns col .. col+V-1 of an in-bounds row lies entirely inside 0 .. n-1.
template <int V>
__device__ __forceinline__ bool whole_run(bool row_ok, int col, int n) {
  return row_ok && col >= 0 && col <= n - V;
}
""",
)

_snippet(
    "floor",
    """
// Python's floor division and modulo (the IR's // and %), for operands that may be negative.
__device__ __forceinline__ int floordiv(int a, int b) {
  const int q = a / b;
  return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q;
}
__device__ __forceinline__ int floormod(int a, int b) { return a - floordiv(a, b) * b; }
""",
)

_snippet(
    "swizzle",
    """
// argus.layout.Swizzle(B, M, S): XOR the B bits at M+S into the B bits at M.
template <int B, int M, int S>
__device__ __forceinline__ int swizzle(int offset) {
  constexpr int mask = ((1 << B) - 1) << (M + S);
  return offset ^ ((offset & mask) >> S);
}
""",
)

_snippet(
    "global_load",
    """
// dst[j] = base[offset + j] for the V elements of a run at columns col.. of a row (row_ok: the row is in
// bounds); elements outside 0 <= col + j < n read pad. One vector access when the whole run is inside and
// vector_ok says the address is aligned.
template <int V, typename T>
__device__ __forceinline__ void load_global(T* dst, const T* __restrict__ base, long long offset, bool row_ok,
                                            int col, int n, bool vector_ok, T pad) {
  if (V > 1 && vector_ok && whole_run<V>(row_ok, col, n)) {
    const Vec<T, V> x = *reinterpret_cast<const Vec<T, V>*>(base + offset);
#pragma unroll
    for (int j = 0; j < V; ++j) dst[j] = x.v[j];
  } else {
#pragma unroll
    for (int j = 0; j < V; ++j) dst[j] = row_ok && in_range(col + j, n) ? base[offset + j] : pad;
  }
}
""",
    ("vec", "bounds"),
)

_snippet(
    "global_store",
    """
// base[offset + j] = src[j] for the elements of a run that lie inside (masked elements are not written).
template <int V, typename T>
__device__ __forceinline__ void store_global(T* __restrict__ base, long long offset, bool row_ok, int col, int n,
                                             bool vector_ok, const T* src) {
  if (V > 1 && vector_ok && whole_run<V>(row_ok, col, n)) {
    Vec<T, V> x;
#pragma unroll
    for (int j = 0; j < V; ++j) x.v[j] = src[j];
    *reinterpret_cast<Vec<T, V>*>(base + offset) = x;
  } else {
#pragma unroll
    for (int j = 0; j < V; ++j)
      if (row_ok && in_range(col + j, n)) base[offset + j] = src[j];
  }
}
""",
    ("vec", "bounds"),
)

_snippet(
    "lane_exchange",
    """
// G neighbouring lanes (q = lane % G) transpose their G runs of R 32-bit words: before, a[i] is this lane's
// run i; after, a[i] is run q of lane i (argus.atoms.copy.LaneExchange). One butterfly round per bit of G: a
// lane sends the runs whose index differs from its own in that bit and receives its partner's in their place.
template <int G, int R>
__device__ __forceinline__ void lane_exchange(unsigned (&a)[G][R], int q) {
#pragma unroll
  for (int bit = 1; bit < G; bit <<= 1) {
    const bool high = (q & bit) != 0;
#pragma unroll
    for (int m = 0; m < G; ++m) {
      if (m & bit) continue;
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const unsigned send = high ? a[m][r] : a[m | bit][r];
        const unsigned got = __shfl_xor_sync(0xffffffffu, send, bit);
        if (high) a[m][r] = got; else a[m | bit][r] = got;
      }
    }
  }
}

// The W elements at src as R = sizeof(T) * W / 4 32-bit words.
template <typename T, int W, int R>
__device__ __forceinline__ void pack_words(unsigned (&dst)[R], const T (&src)[W]) {
  static_assert(sizeof(T) * W == 4 * R, "a run is a whole number of 32-bit words");
  memcpy(dst, src, sizeof(T) * W);
}
""",
)

_snippet(
    "shared_access",
    """
// V consecutive shared-memory elements (contiguous and aligned: checked when the code was generated).
template <int V, typename T>
__device__ __forceinline__ void load_shared(T* dst, const T* src) {
  const Vec<T, V> x = *reinterpret_cast<const Vec<T, V>*>(src);
#pragma unroll
  for (int j = 0; j < V; ++j) dst[j] = x.v[j];
}
template <int V, typename T>
__device__ __forceinline__ void store_shared(T* dst, const T* src) {
  Vec<T, V> x;
#pragma unroll
  for (int j = 0; j < V; ++j) x.v[j] = src[j];
  *reinterpret_cast<Vec<T, V>*>(dst) = x;
}
""",
    ("vec",),
)

_snippet(
    "smem_address",
    """
// The 32-bit shared-memory address PTX's shared-state-space instructions take.
__device__ __forceinline__ unsigned smem_u32(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
""",
)

_snippet(
    "cp_async",
    """
// cp.async of a run of V elements global -> shared, zero-filling its masked tail (src-size = the bytes in
// bounds); a synchronous element-wise copy where the vector would be misaligned, or where masked elements
// must read a pad other than 0.
template <int V, typename T>
__device__ __forceinline__ void cp_async(T* dst, const T* __restrict__ base, long long offset, bool row_ok, int col,
                                         int n, bool vector_ok, T pad, bool pad_is_zero) {
  constexpr int bytes = V * static_cast<int>(sizeof(T));
  static_assert(bytes == 4 || bytes == 8 || bytes == 16, "cp.async copies 4, 8 or 16 bytes");
  if (vector_ok && col >= 0 && (pad_is_zero || whole_run<V>(row_ok, col, n))) {
    const int valid = row_ok ? min(max(n - col, 0), V) : 0;  // in-bounds elements: a prefix, since col >= 0
    const T* src = valid > 0 ? base + offset : base;
    const int src_bytes = valid * static_cast<int>(sizeof(T));
    if constexpr (bytes == 16) {
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\\n" ::"r"(smem_u32(dst)), "l"(src), "r"(src_bytes)
                   : "memory");
    } else {
      asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\\n" ::"r"(smem_u32(dst)), "l"(src), "n"(bytes),
                   "r"(src_bytes)
                   : "memory");
    }
  } else {
#pragma unroll
    for (int j = 0; j < V; ++j) dst[j] = row_ok && in_range(col + j, n) ? base[offset + j] : pad;
  }
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\\n" ::"n"(N) : "memory");
}
""",
    ("smem_address", "bounds"),
)

_snippet(
    "copy_to_shared",
    """
// Synchronous copy of a run of V elements global -> shared (masked elements become pad).
template <int V, typename T>
__device__ __forceinline__ void copy_global_to_shared(T* dst, const T* __restrict__ base, long long offset,
                                                      bool row_ok, int col, int n, bool vector_ok, T pad) {
  if (V > 1 && vector_ok && whole_run<V>(row_ok, col, n)) {
    *reinterpret_cast<Vec<T, V>*>(dst) = *reinterpret_cast<const Vec<T, V>*>(base + offset);
  } else {
#pragma unroll
    for (int j = 0; j < V; ++j) dst[j] = row_ok && in_range(col + j, n) ? base[offset + j] : pad;
  }
}
""",
    ("vec", "bounds"),
)

_snippet(
    "copy_to_global",
    """
// Copy of a run of V elements shared -> global (masked elements are not written).
template <int V, typename T>
__device__ __forceinline__ void copy_shared_to_global(T* __restrict__ base, long long offset, bool row_ok, int col,
                                                      int n, bool vector_ok, const T* src) {
  if (V > 1 && vector_ok && whole_run<V>(row_ok, col, n)) {
    *reinterpret_cast<Vec<T, V>*>(base + offset) = *reinterpret_cast<const Vec<T, V>*>(src);
  } else {
#pragma unroll
    for (int j = 0; j < V; ++j)
      if (row_ok && in_range(col + j, n)) base[offset + j] = src[j];
  }
}
""",
    ("vec", "bounds"),
)

_snippet(
    "registers",
    """
// The i-th 32-bit register of a fragment of 16-bit values (two values, the even one in the low half).
template <typename T>
__device__ __forceinline__ unsigned& reg(T* fragment, int i) {
  return reinterpret_cast<unsigned*>(fragment)[i];
}
""",
)


_snippet(
    "mbarrier",
    """
// mbarriers (64-bit words in shared memory), as inline PTX. `init` by one thread, then
// fence.mbarrier_init and a block barrier; an arrival with expect_tx adds the bytes TMA will deliver
// to the phase's transaction count; `wait` spins on try_wait.parity until the phase with that parity
// has completed (on a fresh barrier, parity 1 passes at once: the phase before phase 0 counts as done).
__device__ __forceinline__ void mbarrier_init(unsigned address, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\\n" ::"r"(address), "r"(count) : "memory");
}
__device__ __forceinline__ void mbarrier_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;\\n" ::: "memory");
}
__device__ __forceinline__ void mbarrier_arrive(unsigned address) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\\n" ::"r"(address) : "memory");
}
__device__ __forceinline__ void mbarrier_arrive_expect_tx(unsigned address, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\\n" ::"r"(address), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbarrier_wait(unsigned address, unsigned parity) {
  unsigned done;
  do {
    asm volatile(
        "{\\n .reg .pred p;\\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\\n selp.u32 %0, 1, 0, p;\\n}\\n"
        : "=r"(done)
        : "r"(address), "r"(parity)
        : "memory");
  } while (!done);
}
""",
    ("smem_address",),
)

_snippet(
    "grid_dependency",
    """
// Programmatic dependent launch (sm_90). A kernel generated for it starts with both, before it touches global memory:
// wait until the grids this one depends on in its stream have completed and their memory is visible (nothing to wait
// for when it was not launched as a programmatic dependent), then allow the next launch in the stream to start
// early; its blocks run their own set-up and then wait here in turn. Stream order is unchanged; what overlaps is
// launch latency and set-up.
// Both exist from sm_90 on; compiled for an older architecture (the lineage's hardware preconditions) they are empty.
__device__ __forceinline__ void grid_dependency_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\\n" ::: "memory");
#endif
}
__device__ __forceinline__ void launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\\n" ::: "memory");
#endif
}
""",
)

_snippet(
    "group_barrier",
    """
// A barrier among `count` blocks on a 32-bit counter in global memory (T.group_barrier), called by one thread of
// each arriving block after a barrier over the threads it arrives for. Rank 0 adds 2^31 - (count - 1), the others 1:
// the counter's top bit flips exactly when the last of the count blocks arrives, and the counter is left at the next
// generation (no reset). The fence orders the block's earlier global writes before the arrival (the barrier before
// the call orders its other threads' writes before this thread's fence); the acquire load orders the block's later
// reads after every arrival it observed.
__device__ __forceinline__ void group_barrier(int* counter, bool first, unsigned count) {
  unsigned* const word = reinterpret_cast<unsigned*>(counter);
  __threadfence();
  const unsigned old = atomicAdd(word, first ? 0x80000000u - (count - 1u) : 1u);
  unsigned now;
  do {
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\\n" : "=r"(now) : "l"(word) : "memory");
  } while (((old ^ now) & 0x80000000u) == 0u);
}
""",
)

_snippet(
    "tma",
    """
// A CUtensorMap (128 opaque bytes, 64-byte aligned), encoded on the host by cuTensorMapEncodeTiled and
// passed as a const __grid_constant__ kernel parameter.
struct alignas(64) TensorMap {
  unsigned long long opaque[16];
};
// Fetch a tensor map (a kernel parameter) into the TMA unit's descriptor cache ahead of its first copy.
__device__ __forceinline__ void prefetch_tensormap(const TensorMap* map) {
  asm volatile("prefetch.tensormap [%0];\\n" ::"l"(map) : "memory");
}
// TMA tile loads: one thread copies a whole box; the bytes complete on the mbarrier at `mbarrier`.
// Coordinates are in TMA order (dimension 0 innermost) and may lie outside the tensor (zero fill).
__device__ __forceinline__ void tma_load_2d(unsigned dst, const TensorMap* map, int c0, int c1, unsigned mbarrier) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\\n"
      ::"r"(dst), "l"(map), "r"(c0), "r"(c1), "r"(mbarrier)
      : "memory");
}
__device__ __forceinline__ void tma_load_3d(unsigned dst, const TensorMap* map, int c0, int c1, int c2,
                                            unsigned mbarrier) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], "
      "[%5];\\n" ::"r"(dst), "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(mbarrier)
      : "memory");
}
__device__ __forceinline__ void tma_load_4d(unsigned dst, const TensorMap* map, int c0, int c1, int c2, int c3,
                                            unsigned mbarrier) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, "
      "%5}], [%6];\\n" ::"r"(dst), "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(mbarrier)
      : "memory");
}
__device__ __forceinline__ void tma_load_5d(unsigned dst, const TensorMap* map, int c0, int c1, int c2, int c3,
                                            int c4, unsigned mbarrier) {
  asm volatile(
      "cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, "
      "%5, %6}], [%7];\\n" ::"r"(dst), "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4), "r"(mbarrier)
      : "memory");
}
""",
    ("smem_address",),
)


def _multicast_load(rank: int) -> str:
    """The C helper of a rank-`rank` multicast TMA load (`argus.atoms.tma.MULTICAST_PTX`) into both blocks of the
    cluster (`MULTICAST_MASK`)."""
    coords = ", ".join(f"int c{i}" for i in range(rank))
    regs = ", ".join(f"%{i + 2}" for i in range(rank))
    ops = ", ".join(f'"r"(c{i})' for i in range(rank))
    ptx = MULTICAST_PTX.format(rank=rank)
    return (
        f"__device__ __forceinline__ void tma_load_{rank}d_multicast(unsigned dst, const TensorMap* map, {coords},\n"
        f"                                                      unsigned mbarrier) {{\n"
        f'  asm volatile("{ptx} [%0], [%1, {{{regs}}}], "\n'
        f'               "[%{rank + 2}], %{rank + 3};\\n"\n'
        f'               ::"r"(dst), "l"(map), {ops}, "r"(mbarrier),\n'
        f'                 "h"(static_cast<unsigned short>({MULTICAST_MASK}))\n'
        f'               : "memory");\n'
        "}"
    )


_snippet(
    "cluster",
    """
// 2-block thread-block clusters (argus.atoms.tma.CLUSTER_BLOCKS): blocks 2c and 2c + 1 of the grid's first
// dimension, cluster ranks 0 and 1. The barrier after the mbarriers' initialisation (every thread of both blocks)
// keeps a peer's multicast bytes and remote arrivals away from barriers not yet initialised: the initialising
// thread's fence.mbarrier_init.release.cluster orders the init, so the arrival is relaxed. The barrier before exit
// keeps a block from exiting while its peer may still arrive on its barriers or multicast into it (release).
// Neither is .aligned: they may follow the warp roles' divergent branches.
__device__ __forceinline__ unsigned cluster_rank() {
  unsigned rank;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\\n" : "=r"(rank));
  return rank;
}
__device__ __forceinline__ void cluster_sync_after_init() {
  asm volatile("barrier.cluster.arrive.relaxed;\\nbarrier.cluster.wait.acquire;\\n" ::: "memory");
}
__device__ __forceinline__ void cluster_sync_before_exit() {
  asm volatile("barrier.cluster.arrive.release;\\nbarrier.cluster.wait.acquire;\\n" ::: "memory");
}
// an arrival on the peer block's mbarrier at the shared-memory offset of `address` in this block
__device__ __forceinline__ void mbarrier_arrive_peer(unsigned address) {
  asm volatile(
      "{\\n .reg .b32 peer;\\n mapa.shared::cluster.u32 peer, %0, %1;\\n"
      " mbarrier.arrive.shared::cluster.b64 _, [peer];\\n}\\n" ::"r"(address), "r"(cluster_rank() ^ 1u)
      : "memory");
}
// multicast TMA loads: this block's part of a box (argus.atoms.tma.multicast_half) lands at `dst` in both blocks of
// the cluster, its bytes completing on the mbarrier at `mbarrier`'s offset in each
"""
    + "\n".join(_multicast_load(rank) for rank in (2, 3, 4, 5)),
    ("tma", "mbarrier"),
)

_snippet(
    "tma_store",
    """
// Staged TMA stores (shared -> global), one bulk async-group per store: the scope's threads write a box into
// shared memory, fence_proxy_async_shared makes their writes visible to the async proxy and a barrier orders
// them before the one thread that issues and commits the store. The store drains in the background:
// tma_store_wait_read<N> (by the issuing thread) returns once at most N of its groups still read shared memory,
// tma_store_wait_all once all of its stores are complete (before the block exits).
__device__ __forceinline__ void tma_store_2d(const TensorMap* map, unsigned src, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\\n"
               ::"l"(map), "r"(c0), "r"(c1), "r"(src)
               : "memory");
}
__device__ __forceinline__ void tma_store_3d(const TensorMap* map, unsigned src, int c0, int c1, int c2) {
  asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%1, %2, %3}], [%4];\\n"
               ::"l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(src)
               : "memory");
}
__device__ __forceinline__ void tma_store_4d(const TensorMap* map, unsigned src, int c0, int c1, int c2, int c3) {
  asm volatile("cp.async.bulk.tensor.4d.global.shared::cta.bulk_group [%0, {%1, %2, %3, %4}], [%5];\\n"
               ::"l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(src)
               : "memory");
}
__device__ __forceinline__ void tma_store_5d(const TensorMap* map, unsigned src, int c0, int c1, int c2, int c3,
                                             int c4) {
  asm volatile("cp.async.bulk.tensor.5d.global.shared::cta.bulk_group [%0, {%1, %2, %3, %4, %5}], [%6];\\n"
               ::"l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4), "r"(src)
               : "memory");
}
__device__ __forceinline__ void tma_store_commit() { asm volatile("cp.async.bulk.commit_group;\\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void tma_store_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;\\n" ::"n"(N) : "memory");
}
__device__ __forceinline__ void tma_store_wait_all() { asm volatile("cp.async.bulk.wait_group 0;\\n" ::: "memory"); }
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;\\n" ::: "memory");
}
__device__ __forceinline__ void named_barrier(int id, int threads) {
  asm volatile("bar.sync %0, %1;\\n" ::"r"(id), "r"(threads) : "memory");
}
""",
    ("tma", "smem_address"),
)

_snippet(
    "tma_im2col",
    """
// TMA im2col loads (argus.atoms.tma, "im2col mode"): the box is the tensor map's pixelsPerColumn base pixels of
// its traversal from the start {c, w[, h[, d]], n}, each read at the base pixel plus the filter offsets
// {off_w[, off_h[, off_d]]} (16-bit unsigned), channelsPerPixel channels from c.
__device__ __forceinline__ void tma_load_im2col_3d(unsigned dst, const TensorMap* map, int c, int w, int n,
                                                   unsigned short off_w, unsigned mbarrier) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], "
      "[%5], {%6};\\n" ::"r"(dst), "l"(map), "r"(c), "r"(w), "r"(n), "r"(mbarrier), "h"(off_w)
      : "memory");
}
__device__ __forceinline__ void tma_load_im2col_4d(unsigned dst, const TensorMap* map, int c, int w, int h, int n,
                                                   unsigned short off_w, unsigned short off_h, unsigned mbarrier) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, "
      "%5}], [%6], {%7, %8};\\n" ::"r"(dst), "l"(map), "r"(c), "r"(w), "r"(h), "r"(n), "r"(mbarrier), "h"(off_w),
      "h"(off_h)
      : "memory");
}
__device__ __forceinline__ void tma_load_im2col_5d(unsigned dst, const TensorMap* map, int c, int w, int h, int d,
                                                   int n, unsigned short off_w, unsigned short off_h,
                                                   unsigned short off_d, unsigned mbarrier) {
  asm volatile(
      "cp.async.bulk.tensor.5d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, "
      "%5, %6}], [%7], {%8, %9, %10};\\n" ::"r"(dst), "l"(map), "r"(c), "r"(w), "r"(h), "r"(d), "r"(n),
      "r"(mbarrier), "h"(off_w), "h"(off_h), "h"(off_d)
      : "memory");
}
""",
    ("tma",),
)

_snippet(
    "wgmma",
    """
// wgmma bookkeeping and the shared-memory matrix descriptor (PTX ISA, "Matrix Descriptor Format"):
// start address >> 4 in bits 0-13, leading-dimension byte offset >> 4 in 16-29, stride-dimension byte
// offset >> 4 in 32-45, base offset 0 (tiles start where their swizzle pattern starts), swizzle mode in
// 62-63 (0 none, 1 128-byte, 2 64-byte, 3 32-byte).
__device__ __forceinline__ unsigned long long wgmma_descriptor(unsigned address, unsigned lbo, unsigned sbo,
                                                               unsigned mode) {
  return static_cast<unsigned long long>((address & 0x3FFFF) >> 4) |
         (static_cast<unsigned long long>((lbo >> 4) & 0x3FFF) << 16) |
         (static_cast<unsigned long long>((sbo >> 4) & 0x3FFF) << 32) | (static_cast<unsigned long long>(mode) << 62);
}
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\\n" ::"n"(N) : "memory");
}
""",
)

_snippet(
    "wgmma_wait_after",
    """
// The same wait, kept behind the computation of v. A wait names no register, and ptxas schedules it as early as
// the previous wait allows: the work written between an MMA's issue and its wait (meant to run while the MMA
// does) then runs after it. A branch on a warp-uniform vote over v's bits, both ways the same wait, cannot be
// hoisted above v (uniform: ptxas keeps the MMAs in flight; a divergent branch would serialize them).
template <int N>
__device__ __forceinline__ void wgmma_wait_after(float v) {
  if (__all_sync(0xffffffffu, __float_as_uint(v) != 0x7fffffffu)) wgmma_wait<N>(); else wgmma_wait<N>();
}
""",
    needs=("wgmma",),
)


_snippet(
    "exp2",
    """
// 2^x on the special-function unit: ex2.approx.ftz.f32 (at most 2 ulp; subnormal inputs and results flush to 0).
// exp2f wraps the same instruction in a range reduction (a compare and two multiplies per element) that keeps
// subnormal results, which no kernel's tolerance can see.
__device__ __forceinline__ float exp2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
""",
)


#: 2^f for f in [-0.5, 0.5]: the coefficients c0 (1) to c5 of the degree-5 polynomial `exp2_fma` evaluates by
#: Horner's rule, as f32 values (fitted here to the relative error: at most 1.7e-7, 2.8 f32 ulp, over every x whose
#: 2^x is a normal number below 2^127.5, checked by `tests/backend/test_exp2_fma.py` on an f32 emulation and on the
#: GPU). The special-function unit's ``ex2.approx`` is documented at 2 ulp.
EXP2_POLY = (1.0, 0.6931470036506653, 0.24022242426872253, 0.05550733581185341, 0.009671512991189957,
             0.0013264816952869296)  # fmt: skip


def _exp2_fma_source() -> str:
    horner = float_literal(EXP2_POLY[-1])
    for c in reversed(EXP2_POLY[:-1]):
        horner = f"fmaf({horner}, f, {float_literal(c)})"
    return f"""
// 2^x evaluated on the FMA pipe (the special-function unit issues ex2 at a sixteenth of the FMA rate): x clamped to
// [-127, 128] (NaN kept: max.NaN / min.NaN), x = j + f with j = rint(x) (x + 1.5 * 2^23 leaves j in the low bits of
// the sum) and f in [-0.5, 0.5]; 2^f by a degree-5 polynomial (EXP2_POLY in the code generator), times 2^j built
// from j's bits: 2^-127 builds as 0 (so exp2(-inf) = 0, and results below 2^-126.5 are 0, as ex2.approx.ftz flushes
// subnormal ones), 2^128 as +inf (so x >= 127.5 gives +inf: the top half binade below f32's overflow), a NaN stays
// NaN through the product.
__device__ __forceinline__ float exp2_fma(float x) {{
  asm("max.NaN.f32 %0, %0, 0fC2FE0000;" : "+f"(x));  // -127
  asm("min.NaN.f32 %0, %0, 0f43000000;" : "+f"(x));  // 128
  const float t = x + 12582912.0f;
  const float f = x - (t - 12582912.0f);
  const float p = {horner};
  return p * __uint_as_float((__float_as_uint(t) << 23) + 0x3f800000u);  // 2^j: (j + 127) << 23, j < 0 wraps
}}

// 2^x for register v of a fragment: every P-th register (P - 1, 2P - 1, ...) on the FMA pipe, the others on the
// special-function unit; v is a constant once the register loop is unrolled.
template <int P>
__device__ __forceinline__ float exp2_split(float x, int v) {{
  return v % P == P - 1 ? exp2_fma(x) : exp2_approx(x);
}}
"""


_snippet("exp2_fma", _exp2_fma_source(), needs=("exp2",))


def wgmma_function_name(atom: MmaAtom) -> str:
    """The helper that issues one ``wgmma.mma_async`` of `atom` (A from shared memory, or from registers: ``_rs``)."""
    registers = atom.a_source.value == "registers"
    return (
        "wgmma_"
        + "".join(ch if ch.isalnum() else "_" for ch in atom.ptx.removeprefix("wgmma.mma_async.sync.aligned."))
        + ("_rs" if registers else "")
    )


def wgmma_snippet(atom: MmaAtom) -> Snippet:
    """``wgmma.mma_async`` with A and B from shared-memory descriptors and f32 accumulators ``d[0..]`` in
    place (scale-d = 1: D = A * B + D; with ``scale_d`` 0, D = A * B); ``TRANS_A``/``TRANS_B`` are imm-trans-a/b
    (1: MN-major). FP8 (k32) and TF32 (k8) take no imm-trans operands (their operands are K-major: both must be 0).
    For an atom that reads A from registers (``.rs``), `wgmma_rs_snippet`."""
    c_regs = atom.values_per_thread("C")
    if atom.acc_dtype.bits != 32:
        raise ValueError(f"{atom.name}: only f32 accumulators are lowered")
    if atom.a_source.value == "registers":
        return wgmma_rs_snippet(atom)
    regs = ", ".join(f"%{i}" for i in range(c_regs))
    da, db, one, ta, tb = c_regs, c_regs + 1, c_regs + 2, c_regs + 3, c_regs + 4
    outs = ", ".join(f'"+f"(d[{i}])' for i in range(c_regs))
    name = wgmma_function_name(atom)
    k_major = Major.MN not in atom.b_majors  # FP8 and TF32: no transposition
    kind = "TF32" if atom.reads_tf32 else "FP8"
    trans = "" if k_major else f", %{ta}, %{tb}"
    trans_in = "" if k_major else ', "n"(TRANS_A), "n"(TRANS_B)'
    check = f'\n  static_assert(TRANS_A == 0 && TRANS_B == 0, "{kind} wgmma operands are K-major");' if k_major else ""
    text = f"""
// {atom.ptx} (both operands from shared memory): D = A * B + D, in place.
template <int TRANS_A, int TRANS_B>
__device__ __forceinline__ void {name}(float* d, unsigned long long desc_a, unsigned long long desc_b,
                                       int scale_d = 1) {{{check}
  asm volatile(
      "{{\\n .reg .pred p;\\n setp.ne.b32 p, %{one}, 0;\\n"
      "{atom.ptx} {{{regs}}}, %{da}, %{db}, p, 1, 1{trans};\\n}}\\n"
      : {outs}
      : "l"(desc_a), "l"(desc_b), "r"(scale_d){trans_in}
      : "memory");
}}
"""
    return Snippet(name, text.strip("\n"))


def wgmma_rs_snippet(atom: MmaAtom) -> Snippet:
    """``wgmma.mma_async`` with A from registers (four 32-bit registers of packed 16-bit values per thread, the
    atom's A register layout: K-major, no imm-trans-a) and B from a shared-memory descriptor; f32 accumulators
    ``d[0..]`` in place (D = A * B + D); ``TRANS_B`` is imm-trans-b (1: MN-major)."""
    c_regs = atom.values_per_thread("C")
    a_regs = atom.values_per_thread("A") * atom.a_dtype.bits // 32
    regs = ", ".join(f"%{i}" for i in range(c_regs))
    a_list = ", ".join(f"%{c_regs + i}" for i in range(a_regs))
    db, one, tb = c_regs + a_regs, c_regs + a_regs + 1, c_regs + a_regs + 2
    outs = ", ".join(f'"+f"(d[{i}])' for i in range(c_regs))
    ins = ", ".join(f'"r"(a{i})' for i in range(a_regs))
    params = ", ".join(f"unsigned a{i}" for i in range(a_regs))
    name = wgmma_function_name(atom)
    text = f"""
// {atom.ptx} (A from registers, B from shared memory): D = A * B + D, in place.
template <int TRANS_B>
__device__ __forceinline__ void {name}(float* d, {params}, unsigned long long desc_b) {{
  asm volatile(
      "{{\\n .reg .pred p;\\n setp.ne.b32 p, %{one}, 0;\\n"
      "{atom.ptx} {{{regs}}}, {{{a_list}}}, %{db}, p, 1, 1, %{tb};\\n}}\\n"
      : {outs}
      : {ins}, "l"(desc_b), "r"(1), "n"(TRANS_B)
      : "memory");
}}
"""
    return Snippet(name, text.strip("\n"))


def _matrix_snippet(op: str, num: int, trans: bool) -> Snippet:
    suffix = f"x{num}" + ("_trans" if trans else "")
    ptx = f"{op}.sync.aligned.m8n8.x{num}{'.trans' if trans else ''}.shared.b16"
    regs = ", ".join(f"%{i}" for i in range(num))
    params = ", ".join(f"unsigned{'&' if op == 'ldmatrix' else ''} r{i}" for i in range(num))
    if op == "ldmatrix":
        outs = ", ".join(f'"=r"(r{i})' for i in range(num))
        body = f'asm volatile("{ptx} {{{regs}}}, [%{num}];\\n" : {outs} : "r"(address) : "memory");'
        comment = "// ldmatrix: lane 8j+r gives the address of row r of matrix j; matrix j lands in register r{j}."
    else:
        ins = ", ".join(f'"r"(r{i})' for i in range(num))
        sources = ", ".join(f"%{i + 1}" for i in range(num))
        body = f'asm volatile("{ptx} [%0], {{{sources}}};\\n" :: "r"(address), {ins} : "memory");'
        comment = "// stmatrix: lane 8j+r gives the address of row r of matrix j; matrix j comes from register r{j}."
    text = f"""
{comment}
__device__ __forceinline__ void {op}_{suffix}({params}, unsigned address) {{
  {body}
}}
"""
    return Snippet(f"{op}_{suffix}", text.strip("\n"))


for _op in ("ldmatrix", "stmatrix"):
    for _num in (1, 2, 4):
        for _trans in (False, True):
            _s = _matrix_snippet(_op, _num, _trans)
            _SNIPPETS[_s.name] = _s


def mma_function_name(atom: MmaAtom) -> str:
    """The helper that issues `atom` (one name per atom: the PTX types are part of it)."""
    return "mma_" + "".join(ch if ch.isalnum() else "_" for ch in atom.name.removeprefix("mma."))


def mma_snippet(atom: MmaAtom) -> Snippet:
    """The helper for one ``mma.sync`` atom: accumulators by reference (``"+f"`` for f32, packed
    ``"+r"`` pairs for f16), A and B as 32-bit registers of packed 16-bit values."""
    a_regs = atom.values_per_thread("A") * atom.a_dtype.bits // 32
    b_regs = atom.values_per_thread("B") * atom.b_dtype.bits // 32
    c_values = atom.values_per_thread("C")
    f32_acc = atom.acc_dtype.bits == 32
    c_regs = c_values if f32_acc else c_values * atom.acc_dtype.bits // 32
    c_type, c_con = ("float", "f") if f32_acc else ("unsigned", "r")
    n = 0

    def group(count: int) -> str:
        nonlocal n
        text = "{" + ", ".join(f"%{n + i}" for i in range(count)) + "}"
        n += count
        return text

    d, a, b = group(c_regs), group(a_regs), group(b_regs)
    ptx = f"{atom.ptx} {d}, {a}, {b}, {d};"
    params = (
        [f"{c_type}& d{i}" for i in range(c_regs)]
        + [f"unsigned a{i}" for i in range(a_regs)]
        + [f"unsigned b{i}" for i in range(b_regs)]
    )
    outs = ", ".join(f'"+{c_con}"(d{i})' for i in range(c_regs))
    ins = ", ".join([f'"r"(a{i})' for i in range(a_regs)] + [f'"r"(b{i})' for i in range(b_regs)])
    name = mma_function_name(atom)
    text = f"""
// {atom.ptx}: D = A * B + D, in place.
__device__ __forceinline__ void {name}({", ".join(params)}) {{
  asm volatile("{ptx}\\n" : {outs} : {ins});
}}
"""
    return Snippet(name, text.strip("\n"))


def render(used: set[str], extra: tuple[Snippet, ...] = ()) -> str:
    """The ``namespace argus { ... }`` block with the snippets in `used` and what they need, in
    definition order (which is dependency order), then the kernel-specific `extra` snippets (MMA
    helpers)."""
    wanted: set[str] = set()

    def visit(name: str) -> None:
        if name in wanted:
            return
        wanted.add(name)
        for dep in _SNIPPETS[name].needs:
            visit(dep)

    for name in used:
        if name in _SNIPPETS:
            visit(name)
    texts = [s.text for name, s in _SNIPPETS.items() if name in wanted] + [s.text for s in extra]
    if not texts:
        return ""
    body = "\n\n".join(texts)
    return f"namespace argus {{\n\n{body}\n\n}}  // namespace argus\n"
