"""Where the block-scaled FP8 GEMM spends its time (issue #20): time it beside the per-tensor FP8 GEMM on the same
128x128 tiles (no promotion: what the tile shape alone costs) and on the heuristic's tiles, then, under Nsight Compute,
launch each once for the profiler.

Usage (from the repository root on a GPU machine)::

    PYTHONPATH=src python benchmarks/gemm_fp8_profile.py [--shape 4096,4096,4096] [--launch-only]
    ncu --kernel-name regex:"gemm_fp8|gemm_fused" --launch-count 2 --section SpeedOfLight --section WarpStateStats \\
        python benchmarks/gemm_fp8_profile.py --launch-only
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

try:
    import argus  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gemm_parity import interleaved_times  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shape", default="4096,4096,4096")
    parser.add_argument("--launch-only", action="store_true", help="one launch of each (under a profiler)")
    parser.add_argument("--configs", nargs="*", default=[], help="block-scaled BM,CONSUMERS,STAGES,GROUP to add")
    args = parser.parse_args()

    import torch

    from argus.kernels import matmul as mm

    m, n, k = (int(x) for x in args.shape.split(","))
    a = torch.randn(m, k, device="cuda").to(torch.float8_e4m3fn)
    w = torch.randn(n, k, device="cuda").to(torch.float8_e4m3fn)
    kb, nb = -(-k // 128), -(-n // 128)
    scale_a = (torch.rand(kb, m, device="cuda") + 0.5).t()
    scale_b = torch.rand(kb, nb, device="cuda") + 0.5
    one = torch.tensor(1.0, device="cuda")
    epilogue, tensors = mm.scaled_operands(a, w.t(), one, one)
    contenders = {}
    for label, config in (
        ("per-tensor heuristic", None),
        ("per-tensor 128x128x128 s6 c2", mm.GemmConfig(128, 128, 2, 6, BK=128)),
    ):
        _, prepared = mm.prepare(a, w.t(), config=config, epilogue=epilogue, operands=tensors)
        contenders[label] = prepared
    block_configs = [mm.block_scaled_config(m, n)]
    for text in args.configs:
        bm, consumers, stages, group = (int(x) for x in text.split(","))
        block_configs.append(mm.BlockScaledConfig(bm, consumers, stages, group))
    for config in block_configs:
        _, prepared = mm.prepare_block_scaled(a, w.t(), scale_a, scale_b, config=config)
        contenders[config.label] = prepared
    launches = {label: (lambda p=p: [x.launch() for x in p]) for label, p in contenders.items()}
    if args.launch_only:
        for fn in launches.values():
            fn()
        torch.cuda.synchronize()
        return 0
    scratch = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    times = interleaved_times(torch, launches, 30, scratch)
    for label, v in times.items():
        ms = statistics.median(v)
        print(f"{label:<44} {ms:8.4f} ms {2 * m * n * k / ms / 1e9:7.0f} TFLOP/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
