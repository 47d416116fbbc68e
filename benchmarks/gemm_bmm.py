"""Batched GEMM (issue #20): `argus.kernels.matmul` on (L, M, K) x (L, K, N) against ``torch.bmm`` (strict fp32 for
the f32 rows), interleaved (`gemm_parity.interleaved_times`: L2 flushed, CUDA events, 30 rounds), the configuration
of each row printed.

Usage (from the repository root on a GPU machine)::

    PYTHONPATH=src python benchmarks/gemm_bmm.py
"""

from __future__ import annotations

import statistics
import sys
from dataclasses import replace
from pathlib import Path

try:
    import argus  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gemm_parity import interleaved_times  # noqa: E402

SHAPES = (
    (128, 512, 2048, 1024),  # KernelBench level 1's bmm size
    (32, 1024, 1024, 1024),
    (8, 4096, 4096, 512),
    (16, 2048, 2048, 2048),
    (64, 256, 256, 4096),
    (4, 8192, 1024, 1024),
    (48, 512, 512, 2048),
    (24, 2048, 1024, 4096),
)


def main() -> int:
    import torch

    from argus.kernels import matmul as mm

    print(torch.cuda.get_device_name(), torch.__version__)
    scratch = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    torch.backends.cuda.matmul.allow_tf32 = False
    for dt in (torch.bfloat16, torch.float32):
        for batch, m, n, k in SHAPES:
            a = torch.rand(batch, m, k, device="cuda").to(dt)
            b = torch.rand(batch, k, n, device="cuda").to(dt)
            _, launches = mm.prepare(a, b)
            fns = {"torch.bmm": lambda a=a, b=b: torch.bmm(a, b), "argus": lambda p=launches: [x.launch() for x in p]}
            config = mm.plan(mm.problem_of(a, b)).config
            direct = None
            if getattr(config, "EPILOGUE", None) == "tma":  # the same tiles with direct stores, in the same rounds
                direct = replace(config, EPILOGUE="direct")
                _, direct_launches = mm.prepare(a, b, config=direct)
                fns["argus direct"] = lambda p=direct_launches: [x.launch() for x in p]
            # the same plan with other BLOCKS (blocks per matrix, the grid (BLOCKS, L)): every matrix at once (about
            # one block per SM in all), one tile per block (blocks start in matrix order), or min(tiles, SMs) (about
            # one matrix per wave, each block walking a few of its tiles)
            q = mm.plan(mm.problem_of(a, b)).padded
            tiles = -(-q.M // config.BM) * -(-q.N // config.BN)
            sms = mm.DEFAULT_TARGET.sms
            variants = {
                "all-at-once": {"BLOCKS": max(1, sms // batch), "BATCH_GRID": "matrix"},
                "1-tile": {"BLOCKS": tiles, "BATCH_GRID": "matrix"},
                "min-tiles-sms": {"BLOCKS": min(tiles, sms), "BATCH_GRID": "matrix"},
                "flat": {"BLOCKS": sms, "BATCH_GRID": "flat"},  # persistent over every matrix's tiles, in order
            }
            original = mm.GemmConfig.kernel_params
            for name, override in variants.items():

                def with_blocks(self, problem, target=mm.DEFAULT_TARGET, original=original, override=override):  # noqa: ANN001, ANN202
                    return {**original(self, problem, target), **override}

                mm.GemmConfig.kernel_params = with_blocks
                try:
                    _, variant_launches = mm.prepare(a, b)
                finally:
                    mm.GemmConfig.kernel_params = original
                fns[f"argus {name}"] = lambda p=variant_launches: [x.launch() for x in p]
            med = {name: statistics.median(v) for name, v in interleaved_times(torch, fns, 30, scratch).items()}
            line = (
                f"{str(dt)[6:]:>8} bmm {batch}x{m}x{n}x{k}: torch.bmm {med['torch.bmm']:.3f} ms, argus "
                f"{med['argus']:.3f} ms, x {med['torch.bmm'] / med['argus']:.2f}  config {config.label}"
            )
            if direct is not None:
                ratio = med["torch.bmm"] / med["argus direct"]
                line += f"; {direct.label}: {med['argus direct']:.3f} ms, x {ratio:.2f}"
            blocks_now = dict(mm.plan(mm.problem_of(a, b)).main_params())["BLOCKS"]
            line += f"; BLOCKS {blocks_now} of {tiles} tiles"
            for name, override in variants.items():
                line += f"; {name} ({override['BLOCKS']}): x {med['torch.bmm'] / med[f'argus {name}']:.2f}"
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
