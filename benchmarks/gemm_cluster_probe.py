"""Would a 2-block cluster with a TMA multicast of B close the expert GEMM's last gap to cuBLAS? A probe.

Usage (from the repository root)::

    PYTHONPATH=src python benchmarks/gemm_cluster_probe.py --compile-only [--source-out F]   # no GPU
    PYTHONPATH=src python benchmarks/gemm_cluster_probe.py [--rounds 100] [--json F] [--source-out F]

A diagnostic, not a kernel (like `gemm_probe.py`): the persistent expert's generated CUDA
(`gemm_hopper_persistent`, a `gemm_warp_specialized_persistent` of 128x256x64 tiles and two consumer warpgroups) is
edited as text into the mechanism cuBLAS's ``nvjet_sm90_tst_*_1x2_*`` kernels use, so that its worth is measured
before the DSL, code generator and verifier are taught it. The edits are `gemm_cluster_small_probe.cluster_multicast`'s
for operand B (that script's docstring states the protocol; it refuses, naming the anchor, a generated source it does
not recognise):

* the kernel is compiled with ``__cluster_dims__(2, 1, 1)``: blocks 2c and 2c+1 form cluster c. With the grouped
  tile order, an even BLOCKS (132, 128, 120) and a tile grid whose rows of tiles come in groups of 16, the two
  blocks of a cluster always hold tiles (bm, bn) and (bm + 1, bn): the same B tile. Pairing is not assumed:
  `gemm_cluster_small_probe.pairing_refusal` walks every block's tiles at each shape, and a shape where a cluster's
  blocks would hold different B tiles is skipped (e.g. an M whose last group of rows of tiles is odd: 4160);
* each block loads half of that B tile (128 of its 256 rows, a TMA box of 64 x 128) and multicasts it into the same
  stage of both blocks (``.multicast::cluster``, CTA mask 0b11); each block's ``full`` barrier still expects the
  whole stage's bytes, half of B arriving from its peer;
* a stage may be refilled only when the consumers of both blocks have released it: the ``empty`` barriers count
  four arrivals, each consumer warpgroup arriving on its own block's and on its peer's (``mapa`` + a remote
  ``mbarrier.arrive.shared::cluster`` with the default CTA-scope release: a ``.release.cluster`` arrival compiles
  to ``MEMBAR.ALL.GPU`` and made the first version of this probe 2.4x slower);
* a cluster barrier after the barriers' initialisation (no multicast into a peer's uninitialised barrier) and
  one before exit (no remote arrival on an exited block's shared memory).

L2 -> SM traffic per stage drops from 48 KB (A 16 KB + B 32 KB) to 32 KB per block. On a GPU, the probe checks
every variant against the f32 product, then times cuBLAS, the unmodified expert and the cluster variants
interleaved (`gemm_parity.py`'s method). ``--compile-only`` needs neither torch nor a GPU: it generates, edits and
compiles (NVRTC, sm_90a) every variant and prints, for each, whether it compiled, its registers and spill bytes, the
cluster shape ptxas recorded and its SASS TMA loads (``n/a`` where cuobjdump or nvdisasm is missing); it exits 1 if
one does not compile."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

try:
    import argus  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gemm_parity import probe_against_cublas  # noqa: E402
from gemm_variants import ISSUE_SHAPES, SQUARE, environment  # noqa: E402

#: The expert's name in the kernel registry, and the epilogue these probes measured it with (session 4's).
KERNEL = "gemm_hopper_persistent"
EPILOGUE = "direct"


def _small_probe():  # noqa: ANN202
    """`gemm_cluster_small_probe`, imported on first use: it imports `max_active_clusters` from this module, so a
    module-level import here would leave either script, run as the main one, importing a half-initialised other."""
    import gemm_cluster_small_probe

    return gemm_cluster_small_probe


def cluster_multicast_b(generated):  # noqa: ANN001, ANN201
    """The persistent expert's generated source and tensor maps, edited into the 2-block multicast of B (B's box
    halved); exits naming the anchor an edit did not find."""
    small_probe = _small_probe()
    try:
        return small_probe.cluster_multicast(generated, "B")
    except small_probe.ProbeRefusal as why:
        raise SystemExit(f"probe edit refused on {generated.program_name}: {why}") from None


def pairing_skip(cluster_params: list[dict], shape: tuple[int, int, int]) -> str | None:
    """Why `shape` cannot run the cluster variants of `cluster_params` (a cluster's blocks would not share their B
    tile at some pass), or None."""
    for params in cluster_params:
        why = _small_probe().pairing_refusal(params, shape, "B")
        if why:
            return f"BLOCKS = {params['BLOCKS']}: {why}"
    return None


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


def compile_report(name: str, generated, module) -> str:  # noqa: ANN001
    """One table row: `module`'s registers, spills, cluster shape and TMA loads, or ``n/a`` where the cubin cannot
    be inspected (cuobjdump or nvdisasm missing)."""
    from argus.backend.cuda.errors import InspectError, ToolchainError

    try:
        r = module.resources[generated.entry]
        cluster = "x".join(map(str, r.cluster_dims)) if r.cluster_dims else "-"
        resources = f"{r.registers} | {r.spill_stores}/{r.spill_loads} | {cluster}"
    except (ToolchainError, InspectError):
        resources = "n/a | n/a | n/a"
    try:
        loads, multicast = _small_probe().sass_loads(module, generated.entry)
        tma = f"{loads} ({multicast})"
    except (ToolchainError, InspectError):
        tma = "n/a"
    return f"| {name} | {dict(generated.params)['BLOCKS']} | {resources} | {tma} |"


def compile_only(variants: dict) -> int:
    """Compile every variant for sm_90a (no GPU) and print the table; 1 if one does not compile."""
    from argus.backend.cuda.errors import CompileError
    from argus.backend.cuda.toolchain import compile_cuda

    print("\n| variant | blocks | registers | spills (st/ld bytes) | cluster | SASS TMA loads (multicast) | result |")
    print("|---|---|---|---|---|---|---|")
    failed = False
    for name, g in variants.items():
        started = time.perf_counter()
        try:
            module = compile_cuda(g.source, g.program_name, cache=False)
        except CompileError as err:
            failed = True
            print(
                f"| {name} | {dict(g.params)['BLOCKS']} | | | | | COMPILE ERROR: {' '.join(str(err).split())[:600]} |"
            )
            continue
        seconds = time.perf_counter() - started
        print(f"{compile_report(name, g, module)} compiled ({seconds:.1f} s) |", flush=True)
    return 1 if failed else 0


def main() -> int:
    from argus.backend.cuda.codegen import generate
    from argus.kernels.registry import get_kernel

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--compile-only", action="store_true", help="generate, edit and compile every variant; no GPU")
    p.add_argument("--rounds", type=int, default=100)
    p.add_argument("--json", default="")
    p.add_argument("--source-out", default="", help="write the edited CUDA source here")
    p.add_argument("--blocks", default="132,128,120", help="BLOCKS of the cluster variants (even)")
    args = p.parse_args()
    blocks_choices = [int(x) for x in args.blocks.split(",")]
    if any(b <= 0 or b % 2 for b in blocks_choices):
        raise SystemExit(f"--blocks takes positive even numbers (a block of an odd count has no peer): {args.blocks}")
    torch = None
    if not args.compile_only:
        import torch

        for line in environment(torch):
            print(line)
    entry = get_kernel(KERNEL)
    params = {**entry.params, "EPILOGUE": EPILOGUE}  # the expert as these probes measured it (session 4's epilogue)
    print(f"kernel {KERNEL} {params}")
    generated = generate(entry.kernel.trace(**params))
    variants = {"expert": generated}
    cluster_params = []
    for blocks in blocks_choices:
        edited = cluster_multicast_b(generate(entry.kernel.trace(**{**params, "BLOCKS": blocks})))
        variants[f"cluster 2, B multicast, {blocks} blocks"] = edited
        cluster_params.append(dict(edited.params))
        if args.source_out:
            Path(args.source_out).write_text(edited.source)
    shapes = SQUARE + ISSUE_SHAPES
    if args.compile_only:
        skipped = [(s, why) for s in shapes if (why := pairing_skip(cluster_params, s))]
        for (m, n, k), why in skipped:
            print(f"a GPU run would skip {m}x{n}x{k}: {why}")
        print(f"{len(shapes) - len(skipped)} of {len(shapes)} shapes pair every cluster's blocks on one B tile")
        return compile_only(variants)

    from argus.backend.cuda.codegen.source import CompiledKernel
    from argus.backend.cuda.toolchain import compile_cuda
    from argus.runtime import load

    loaded = {}
    for name, g in variants.items():
        loaded[name] = load(CompiledKernel(g, compile_cuda(g.source, g.program_name, cache=False)))
        if name != "expert":
            print(f"{name}: at most {max_active_clusters(loaded[name], g)} clusters of 2 resident at once")
    rows, failed = probe_against_cublas(
        torch, loaded, shapes, args.rounds, skip=lambda s: pairing_skip(cluster_params, s)
    )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
