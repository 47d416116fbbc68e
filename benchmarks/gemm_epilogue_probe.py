"""Would an asynchronous epilogue (shared memory + TMA store) close the expert GEMM's gap at small K? A probe.

Usage (from the repository root on a GPU machine)::

    PYTHONPATH=src python benchmarks/gemm_epilogue_probe.py [--rounds 100] [--json F] [--source-out F]

Why: `gemm_probe.py --kernel gemm_hopper_persistent` showed that skipping the stores of C makes the persistent
expert 3.7 % faster at 8192x7168x2048 and 5.8 % at 2048^3 (K = 2048: 32 K-blocks per tile), and changes nothing at
K = 4096 or 8192 -- exactly the shapes where it trails cuBLAS. Its consumers store C with 16-byte global stores
(after the lane exchange) and only then start the next tile's MMAs, so the tensor cores idle for the epilogue.

A diagnostic, not a kernel (like `gemm_probe.py`): the persistent expert's generated CUDA is edited so that each
consumer warpgroup writes its 64 x 256 slab of C into shared memory in four 64 x 64 chunks (128-byte swizzled,
conflict-free 4-byte stores), alternating between two 8 KB buffers per warpgroup, and one thread issues a TMA
store of each chunk (``cp.async.bulk.tensor.2d.global.shared::cta.bulk_group``). The warpgroup then goes on to the
next tile; the store drains in the background. Before a buffer is rewritten its previous store must have finished
reading it (``cp.async.bulk.wait_group.read 1`` by the issuing thread, then the warpgroup's named barrier); a
``fence.proxy.async`` and the named barrier order the threads' writes before the store; the issuing thread waits
for every store (``wait_group 0``) before the block exits. Shared memory: the expert's four 48 KB stages plus
2 x 2 x 8 KB = 229,440 bytes (the limit is 232,448). Every variant is checked against the f32 product and timed
interleaved with cuBLAS and the unmodified expert (`gemm_parity.py`'s method)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
from pathlib import Path

try:
    import argus  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gemm_parity import probe_against_cublas  # noqa: E402
from gemm_variants import ISSUE_SHAPES, SQUARE, environment  # noqa: E402

HELPERS = r"""
__device__ __forceinline__ void probe_named_barrier(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void probe_st_shared_u32(unsigned address, unsigned value) {
  asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(address), "r"(value) : "memory");
}
__device__ __forceinline__ unsigned probe_pack_bf16(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const unsigned*>(&v);
}
__device__ __forceinline__ void probe_tma_store_2d(const argus::TensorMap* map, unsigned src, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\n" ::"l"(map), "r"(c0),
               "r"(c1), "r"(src)
               : "memory");
}
"""

EPILOGUE = r"""
        {  // probe: C through shared memory and TMA stores, four 64 x 64 chunks per warpgroup, two buffers
          const int warpgroup = consumer_tid / 128;
          const int t = consumer_tid % 128;
          const int warp = t / 32, lane = t % 32;
          const unsigned buffers = argus::smem_u32(argus_smem + OFFSET) + warpgroup * 16384;
          const int row0 = (ROWBASE) + 64 * warpgroup;  // C row of the slab's first row
          const int col0 = COLBASE;                     // C column of the tile's first column
          #pragma unroll
          for (int c = 0; c < 4; ++c) {
            const unsigned buffer = buffers + (c % 2) * 8192;
            if (t == 0) asm volatile("cp.async.bulk.wait_group.read 1;\n" ::: "memory");  // its last store read it
            probe_named_barrier(8 + warpgroup, 128);
            #pragma unroll
            for (int q = 0; q < 8; ++q) {
              #pragma unroll
              for (int h = 0; h < 2; ++h) {
                const int row = warp * 16 + lane / 4 + 8 * h;
                const int v = 4 * (8 * c + q) + 2 * h;
                probe_st_shared_u32(buffer + row * 128 + ((q ^ (row % 8)) * 16) + (lane % 4) * 4,
                                    probe_pack_bf16(r[v], r[v + 1]));
              }
            }
            asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
            probe_named_barrier(8 + warpgroup, 128);
            if (t == 0) {
              probe_tma_store_2d(&tmap_C, buffer, col0 + 64 * c, row0);
              asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
            }
          }
        }
"""


def _block_end(src: str, start: int) -> int:
    """The index just past the brace block that opens at the first ``{`` at or after `start`."""
    i = src.index("{", start)
    depth = 0
    for j in range(i, len(src)):
        depth += {"{": 1, "}": -1}.get(src[j], 0)
        if depth == 0:
            return j + 1
    raise SystemExit("unbalanced braces in the generated source")


def tma_store_epilogue(generated):  # noqa: ANN001, ANN201
    """The persistent expert's generated source, its epilogue replaced by the shared-memory + TMA-store one."""
    from argus.backend.cuda.codegen.source import TensorMapParam

    params = dict(generated.params)
    if (params["BM"], params["BN"], params.get("OUT")) != (128, 256, "bf16"):
        raise SystemExit(f"the probe's epilogue is written for 128x256 tiles and bf16 C, not {params}")
    src = generated.source
    mark = src.index("copy r -> C[")
    line_end = src.index("\n", mark)
    store = re.search(r"store_global<8>\(C, static_cast<long long>\((.*) \+ row\) \* N \+ (.*?) \+ col, ", src)
    if store is None:
        raise SystemExit("no 16-byte store of C found in the generated source")
    offset = (generated.shared_bytes + 1023) // 1024 * 1024
    body = EPILOGUE.replace("OFFSET", str(offset)).replace("ROWBASE", store.group(1))
    body = body.replace("COLBASE", store.group(2))
    end = _block_end(src, line_end)
    src = src[: line_end + 1] + body + src[end:]
    # every store drained before the block exits (its shared memory is the stores' source)
    role_end = src.rindex("}", 0, src.rstrip().rindex("}"))
    src = (
        src[:role_end]
        + '  if (consumer_tid % 128 == 0) asm volatile("cp.async.bulk.wait_group 0;\\n" ::: "memory");\n  '
        + src[role_end:]
    )
    src = src.replace(
        "const __grid_constant__ argus::TensorMap tmap_B)",
        "const __grid_constant__ argus::TensorMap tmap_B, const __grid_constant__ argus::TensorMap tmap_C)",
    )
    kernel = src.index('extern "C" __global__')
    src = src[:kernel] + HELPERS + src[kernel:]
    c_map = TensorMapParam(name="tmap_C", tensor="C", box=(64, 64), swizzle=128, dtype=generated.tensors[2].dtype)
    return dataclasses.replace(
        generated, source=src, tensor_maps=(*generated.tensor_maps, c_map), shared_bytes=offset + 32768
    )


def main() -> int:
    import torch

    from argus.backend.cuda.codegen import generate
    from argus.backend.cuda.codegen.source import CompiledKernel
    from argus.backend.cuda.toolchain import compile_cuda
    from argus.kernels.registry import get_kernel
    from argus.runtime import load

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=100)
    p.add_argument("--json", default="")
    p.add_argument("--source-out", default="", help="write the edited CUDA source here")
    args = p.parse_args()
    for line in environment(torch):
        print(line)
    entry = get_kernel("gemm_hopper_persistent")
    params = {**entry.params, "EPILOGUE": "direct"}  # the expert as these probes measured it (session 4's epilogue)
    print(f"kernel gemm_hopper_persistent {params}")
    generated = generate(entry.kernel.trace(**params))
    variants = {"expert": generated, "TMA-store epilogue": tma_store_epilogue(generated)}
    if args.source_out:
        Path(args.source_out).write_text(variants["TMA-store epilogue"].source)
    loaded = {}
    for name, g in variants.items():
        module = compile_cuda(g.source, g.program_name, cache=False)
        loaded[name] = load(CompiledKernel(g, module))
    rows, failed = probe_against_cublas(
        torch, loaded, [*SQUARE, *ISSUE_SHAPES, (1000, 1000, 1000)], args.rounds, check_only={(1000, 1000, 1000)}
    )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
