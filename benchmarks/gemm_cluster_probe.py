"""Would a 2-block cluster with a TMA multicast of B close the expert GEMM's last gap to cuBLAS? A probe.

Usage (from the repository root on a GPU machine)::

    PYTHONPATH=src python benchmarks/gemm_cluster_probe.py [--rounds 100] [--json F]

A diagnostic, not a kernel (like `gemm_probe.py`): the persistent expert's generated CUDA
(`gemm_hopper_persistent`) is edited as text into the mechanism cuBLAS's ``nvjet_sm90_tst_*_1x2_*`` kernels use,
so that its worth is measured before the DSL, code generator and verifier are taught it:

* the kernel is compiled with ``__cluster_dims__(2, 1, 1)``: blocks 2c and 2c+1 form cluster c. With the grouped
  tile order, 132 blocks and a tile grid whose rows of tiles come in groups of 16, the two blocks of a cluster
  always hold tiles (bm, bn) and (bm + 1, bn): the same B tile;
* each block loads half of that B tile (128 of its 256 rows, a TMA box of 64 x 128) and multicasts it into the same
  stage of both blocks (``.multicast::cluster``, CTA mask 0b11); each block's ``full`` barrier still expects the
  whole stage's bytes, half of B arriving from its peer;
* a stage may be refilled only when the consumers of both blocks have released it: the ``empty`` barriers count
  four arrivals, each consumer warpgroup arriving on its own block's and its peer's (``mapa`` + a remote
  ``mbarrier.arrive.shared::cluster`` with the default CTA-scope release: a ``.release.cluster`` arrival compiles
  to ``MEMBAR.ALL.GPU`` and made the first version of this probe 2.4x slower);
* a cluster barrier after the barriers' initialisation (no multicast into a peer's uninitialised barrier) and
  one before exit (no remote arrival on an exited block's shared memory).

L2 -> SM traffic per stage drops from 48 KB (A 16 KB + B 32 KB) to 32 KB per block. The probe only handles shapes
whose M is a multiple of 2048 (16 rows of 128-row tiles per group); it checks every variant against the f32
product, then times cuBLAS, the unmodified expert and the cluster variant interleaved (`gemm_parity.py`'s
method)."""

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
__device__ __forceinline__ unsigned probe_cluster_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
__device__ __forceinline__ void probe_cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}
// arrive on the barrier at the same shared-memory offset in block `rank` of the cluster
__device__ __forceinline__ void probe_arrive_in(unsigned local, unsigned rank) {
  asm volatile(
      "{\n .reg .b32 remote;\n mapa.shared::cluster.u32 remote, %0, %1;\n"
      " mbarrier.arrive.shared::cluster.b64 _, [remote];\n}\n" ::"r"(local), "r"(rank)
      : "memory");
}
// this block's half of a (HALF_ROWS * 2)-row box: rows [c1 + rank * HALF_ROWS, +HALF_ROWS), multicast to both blocks
__device__ __forceinline__ void probe_tma_half_multicast(unsigned dst, const argus::TensorMap* map, int c0, int c1,
                                                         unsigned mbarrier) {
  const unsigned rank = probe_cluster_rank();
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(dst + rank * HALF_BYTES), "l"(map), "r"(c0),
      "r"(c1 + static_cast<int>(rank) * HALF_ROWS), "r"(mbarrier), "h"(static_cast<unsigned short>(3))
      : "memory");
}
"""


def cluster_multicast_b(generated):  # noqa: ANN001, ANN201
    """The persistent expert's generated source and tensor maps, edited into the 2-block multicast variant."""
    src = generated.source
    bn = dict(generated.params)["BN"]
    bk = dict(generated.params)["BK"]
    half_rows, half_bytes = bn // 2, bn // 2 * bk * 2

    def sub(pattern: str, repl, text: str, count: int = 0) -> str:  # noqa: ANN001
        out, n = re.subn(pattern, repl, text, count=count)
        if n == 0:
            raise SystemExit(f"probe edit found nothing to change: {pattern!r}")
        return out

    helpers = HELPERS.replace("HALF_ROWS", str(half_rows)).replace("HALF_BYTES", f"{half_bytes}u")
    src = sub(
        r'(extern "C" __global__ void __launch_bounds__\(\d+, 1\) )',
        lambda m: helpers + m.group(1) + "__cluster_dims__(2, 1, 1) ",
        src,
    )
    # the empty barriers: two consumer warpgroups in each of the two blocks
    src = sub(r"(argus::mbarrier_init\(argus::smem_u32\(&bar_1\[i1\]\), )2\);", r"\g<1>4);", src)
    last_sync = src.rindex("__syncthreads();  // every thread sees the initialised barriers")
    src = (
        src[:last_sync]
        + "__syncthreads();\n  probe_cluster_sync();  // the peer's barriers are initialised"
        + src[last_sync + len("__syncthreads();  // every thread sees the initialised barriers") :]
    )
    src = sub(
        r"argus::mbarrier_arrive\(argus::smem_u32\(&bar_1\[([^\]]*)\]\)\);",
        r"{ probe_arrive_in(argus::smem_u32(&bar_1[\1]), 0); probe_arrive_in(argus::smem_u32(&bar_1[\1]), 1); }",
        src,
    )
    src = sub(r"argus::tma_load_2d\((argus::smem_u32\(s_1 [^\n]*&tmap_B)", r"probe_tma_half_multicast(\1", src)
    end = src.rstrip().rindex("}")
    src = src[:end] + "  probe_cluster_sync();  // no remote arrival on an exited block\n" + src[end:]
    maps = tuple(
        dataclasses.replace(m, box=(m.box[0], half_rows)) if m.tensor == "B" else m for m in generated.tensor_maps
    )
    return dataclasses.replace(generated, source=src, tensor_maps=maps)


def max_active_clusters(kernel, generated) -> object:  # noqa: ANN001
    """``cuOccupancyMaxActiveClusters`` for a 2-block-cluster kernel at one block per SM (or the error's text)."""
    try:
        import torch
        from cuda.bindings import driver

        function = kernel._function(torch.cuda.current_device())
        cfg = driver.CUlaunchConfig()
        cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = 132, 1, 1
        cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = generated.threads, 1, 1
        cfg.sharedMemBytes = generated.shared_bytes
        cfg.numAttrs = 0
        err, n = driver.cuOccupancyMaxActiveClusters(function, cfg)
        return n if int(err) == 0 else f"error {err}"
    except Exception as e:  # noqa: BLE001 -- a diagnostic: report, do not stop the probe
        return f"not known ({type(e).__name__}: {e})"


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
    p.add_argument("--blocks", default="132,128,120", help="BLOCKS of the cluster variants (even)")
    args = p.parse_args()
    for line in environment(torch):
        print(line)
    entry = get_kernel("gemm_hopper_persistent")
    params = {**entry.params, "EPILOGUE": "direct"}  # the expert as these probes measured it (session 4's epilogue)
    print(f"kernel gemm_hopper_persistent {params}")
    generated = generate(entry.kernel.trace(**params))
    variants = {"expert": generated}
    for blocks in (int(x) for x in args.blocks.split(",")):
        edited = cluster_multicast_b(generate(entry.kernel.trace(**{**params, "BLOCKS": blocks})))
        variants[f"cluster 2, B multicast, {blocks} blocks"] = edited
        if args.source_out:
            Path(args.source_out).write_text(edited.source)
    loaded = {}
    for name, g in variants.items():
        loaded[name] = load(CompiledKernel(g, compile_cuda(g.source, g.program_name, cache=False)))
        if name != "expert":
            print(f"{name}: at most {max_active_clusters(loaded[name], g)} clusters of 2 resident at once")
    rows, failed = probe_against_cublas(
        torch,
        loaded,
        SQUARE + ISSUE_SHAPES,
        args.rounds,
        skip=lambda s: "the probe needs M % 2048 == 0" if s[0] % 2048 else None,
    )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
