"""Tiny hand-written CUDA kernels, test fixtures for the compile toolchain (not part of argus).

Each exercises one Hopper instruction the SASS must show, or one failure the toolchain must report.
They only have to compile: descriptors, tensor maps and addresses are dummies.
"""

from __future__ import annotations

VECTOR_ADD = r"""
extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
"""

# one warp, one m16n8k16 bf16 MMA with f32 accumulators; fragments loaded raw from global memory
MMA_SYNC_BF16 = r"""
extern "C" __global__ void mma_m16n8k16(const unsigned* a, const unsigned* b, float* d) {
  const int lane = threadIdx.x & 31;
  unsigned a0 = a[lane * 4 + 0], a1 = a[lane * 4 + 1], a2 = a[lane * 4 + 2], a3 = a[lane * 4 + 3];
  unsigned b0 = b[lane * 2 + 0], b1 = b[lane * 2 + 1];
  float c0 = 0.f, c1 = 0.f, c2 = 0.f, c3 = 0.f;
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(c0), "+f"(c1), "+f"(c2), "+f"(c3)
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  d[lane * 4 + 0] = c0; d[lane * 4 + 1] = c1; d[lane * 4 + 2] = c2; d[lane * 4 + 3] = c3;
}
"""

LDMATRIX_X4 = r"""
extern "C" __global__ void ldmatrix_x4(const unsigned short* g, unsigned* out) {
  __shared__ alignas(128) unsigned short tile[4 * 8 * 8];  // four 8x8 b16 matrices
  for (int i = threadIdx.x; i < 4 * 8 * 8; i += blockDim.x) tile[i] = g[i];
  __syncthreads();
  const unsigned lane = threadIdx.x & 31;
  const unsigned row = static_cast<unsigned>(__cvta_generic_to_shared(&tile[lane * 8]));
  unsigned r0, r1, r2, r3;
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(row));
  out[lane * 4 + 0] = r0; out[lane * 4 + 1] = r1; out[lane * 4 + 2] = r2; out[lane * 4 + 3] = r3;
}
"""

# one warpgroup, one wgmma m64n64k16 with both operands in shared memory; the descriptors are runtime
# dummies (base address from the kernel argument plus the shared address)
WGMMA_M64N64K16 = r"""
extern "C" __global__ void __launch_bounds__(128) wgmma_m64n64k16(unsigned long long desc_a,
                                                                 unsigned long long desc_b, float* d) {
  __shared__ alignas(1024) unsigned short sA[64 * 16];
  __shared__ alignas(1024) unsigned short sB[64 * 16];
  sA[threadIdx.x] = 0; sB[threadIdx.x] = 0;
  __syncthreads();
  const unsigned long long da = desc_a + (static_cast<unsigned>(__cvta_generic_to_shared(sA)) >> 4);
  const unsigned long long db = desc_b + (static_cast<unsigned>(__cvta_generic_to_shared(sB)) >> 4);
  float acc[32];
  #pragma unroll
  for (int i = 0; i < 32; ++i) acc[i] = 0.f;
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
  asm volatile(
      "{\n"
      ".reg .pred scale_d;\n"
      "setp.ne.b32 scale_d, 1, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
      "%32, %33, scale_d, 1, 1, 0, 0;\n"
      "}\n"
      : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3]), "+f"(acc[4]), "+f"(acc[5]),
        "+f"(acc[6]), "+f"(acc[7]), "+f"(acc[8]), "+f"(acc[9]), "+f"(acc[10]), "+f"(acc[11]),
        "+f"(acc[12]), "+f"(acc[13]), "+f"(acc[14]), "+f"(acc[15]), "+f"(acc[16]), "+f"(acc[17]),
        "+f"(acc[18]), "+f"(acc[19]), "+f"(acc[20]), "+f"(acc[21]), "+f"(acc[22]), "+f"(acc[23]),
        "+f"(acc[24]), "+f"(acc[25]), "+f"(acc[26]), "+f"(acc[27]), "+f"(acc[28]), "+f"(acc[29]),
        "+f"(acc[30]), "+f"(acc[31])
      : "l"(da), "l"(db));
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
  #pragma unroll
  for (int i = 0; i < 32; ++i) d[threadIdx.x * 32 + i] = acc[i];
}
"""

# a 64x64 f32 TMA load into shared memory, completed through an mbarrier. NVRTC cannot include cuda.h
# (it pulls in <stdlib.h>), so the CUtensorMap is declared as what it is to device code: 128 opaque
# bytes, 64-byte aligned.
TMA_LOAD_2D = r"""
struct alignas(64) TensorMap { unsigned long long opaque[16]; };

extern "C" __global__ void tma_load_2d(const __grid_constant__ TensorMap tensor_map, float* out, int x, int y) {
  __shared__ alignas(128) float tile[64 * 64];
  __shared__ alignas(8) unsigned long long full;
  const unsigned full_addr = static_cast<unsigned>(__cvta_generic_to_shared(&full));
  const unsigned tile_addr = static_cast<unsigned>(__cvta_generic_to_shared(tile));
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" :: "r"(full_addr));
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n"
                 :: "r"(full_addr), "r"(64 * 64 * 4) : "memory");
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n"
        :: "r"(tile_addr), "l"(reinterpret_cast<unsigned long long>(&tensor_map)), "r"(x), "r"(y), "r"(full_addr)
        : "memory");
  }
  __syncthreads();
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "wait_full:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], 0;\n"
      "@!done bra wait_full;\n"
      "}\n" :: "r"(full_addr) : "memory");
  out[threadIdx.x] = tile[threadIdx.x];
}
"""

# __launch_bounds__(1024, 1) caps registers at 64; 64 live floats plus a dynamically indexed local array
# (which lives on the stack) make ptxas spill
SPILLING = r"""
extern "C" __global__ void __launch_bounds__(1024, 1) spilling(const float* a, float* c, int n, int k) {
  float buffer[64];
  #pragma unroll
  for (int j = 0; j < 64; ++j) buffer[j] = a[threadIdx.x * 64 + j] * (j + 1);
  float s = 0.f;
  for (int j = 0; j < n; ++j) s += buffer[(j * k) & 63];
  #pragma unroll
  for (int j = 0; j < 64; ++j) s += buffer[j] * buffer[63 - j];
  c[threadIdx.x] = s;
}
"""

# the headers kernels use: runtime types and intrinsics, bf16/fp16, libcu++ barriers
HEADERS = r"""
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda/barrier>

#pragma nv_diag_suppress static_var_with_dynamic_init  // the barrier is initialized by init() below

extern "C" __global__ void headers(const __nv_bfloat16* a, const __half* b, float* c) {
  __shared__ cuda::barrier<cuda::thread_scope_block> barrier;
  if (threadIdx.x == 0) init(&barrier, blockDim.x);
  __syncthreads();
  const float value = __bfloat162float(a[threadIdx.x]) + __half2float(b[threadIdx.x]);
  barrier.arrive_and_wait();
  c[threadIdx.x] = value;
}
"""

# a template kernel (mangled name, found through a name expression), a cluster kernel with a named barrier
TEMPLATE_AND_CLUSTER = r"""
template <int N>
__global__ void __launch_bounds__(256, 2) scale(float* x) { x[threadIdx.x] *= N; }

extern "C" __global__ void __cluster_dims__(2, 1, 1) clustered(float* x) {
  __shared__ float staged[256];
  staged[threadIdx.x] = x[threadIdx.x];
  asm volatile("bar.sync 1, 256;\n" ::: "memory");
  x[threadIdx.x] = staged[255 - threadIdx.x];
}
"""

# what the code generator emits, with a syntax error (missing ';') under kernel.py:42
SYNTAX_ERROR = r"""// kernel.py:40
extern "C" __global__ void broken(float* x) {
  // kernel.py:42
  float y = x[threadIdx.x]
  x[threadIdx.x] = y * 2.0f;
}
"""
SYNTAX_ERROR_LINE = 5  # NVRTC reports the missing ';' at the next statement

# inline PTX that ptxas rejects; NVRTC reports a PTX line, which the .loc directives map back
BAD_INLINE_PTX = r"""// kernel.py:10
extern "C" __global__ void bad_ptx(float* x) {
  float y = x[threadIdx.x];
  // kernel.py:12
  asm volatile("mov.b32 %0, %0;\n" "bogus.instr.f32 %0, %0;\n" : "+f"(y));
  x[threadIdx.x] = y;
}
"""

ALL_VALID = {
    "vector_add": VECTOR_ADD,
    "mma_sync_bf16": MMA_SYNC_BF16,
    "ldmatrix_x4": LDMATRIX_X4,
    "wgmma_m64n64k16": WGMMA_M64N64K16,
    "tma_load_2d": TMA_LOAD_2D,
    "spilling": SPILLING,
    "headers": HEADERS,
    "template_and_cluster": TEMPLATE_AND_CLUSTER,
}
