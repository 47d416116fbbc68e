"""Where the grouped GEMM's time goes against the dense persistent GEMM (issue #23): one expert's product timed four
ways, interleaved: torch.matmul, argus's dense persistent GEMM (B row-major, as the grouped kernel reads it) with
its direct and its TMA-store epilogue, and the grouped kernel with one expert (E = 1) and with E experts of the same
rows each (timed per expert). Usage: PYTHONPATH=src python benchmarks/grouped_probe.py [--rounds 20]"""

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

from grouped_sweep import interleaved  # noqa: E402

from argus.kernels import matmul as mm  # noqa: E402
from argus.kernels import moe as grouped  # noqa: E402


def main() -> int:
    import torch

    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=20)
    args = p.parse_args()
    dev = torch.device("cuda")
    scratch = torch.empty(256 << 20, dtype=torch.uint8, device=dev)
    print("| rows x N x K | contender | ms per expert | TFLOP/s | x torch.matmul |\n|---|---|---|---|---|")
    for rows, n, k, experts in ((1024, 28672, 4096, 8), (512, 1536, 2048, 128), (4096, 4096, 4096, 4)):
        torch.manual_seed(0)
        a = torch.randn(rows * experts, k, device=dev, dtype=torch.bfloat16)
        b = torch.randn(experts, k, n, device=dev, dtype=torch.bfloat16) * k**-0.5
        a1, b1 = a[:rows], b[0]
        launches, keep = {}, []
        launches["torch.matmul"] = lambda a1=a1, b1=b1: torch.matmul(a1, b1)
        for epi in ("direct", "tma"):
            cfg = mm.GemmConfig(BM=128, BN=256, CONSUMERS=2, STAGES=4, EPILOGUE=epi)
            c, ls = mm.prepare(a1, b1, config=cfg)
            keep.append(ls)
            launches[f"dense persistent {epi}"] = lambda ls=ls: [x.launch() for x in ls]
        for variant, cfg in (
            ("grouped", {}),
            ("grouped STAGES=3", {"STAGES": 3}),
            ("grouped 1 consumer 64x256", {"BM": 64, "CONSUMERS": 1, "STAGES": 5}),
        ):
            params = dict(grouped.choose(rows, n, k, 1)) | cfg
            offs1 = torch.tensor([rows], dtype=torch.int32, device=dev)
            c, g1 = grouped.prepare(a1, b[:1], offs1, config=params)
            keep.append(g1)
            launches[f"{variant} E=1"] = g1.launch
        offs = torch.arange(1, experts + 1, dtype=torch.int32, device=dev) * rows
        c, ge = grouped.prepare(a, b, offs)
        keep.append(ge)
        launches[f"grouped E={experts} (per expert)"] = ge.launch
        times = interleaved(torch, launches, args.rounds, scratch)
        base = statistics.median(times["torch.matmul"])
        for name, t in times.items():
            ms = statistics.median(t) / (experts if "per expert" in name else 1)
            print(f"| {rows}x{n}x{k} | {name} | {ms:.4f} | {2 * rows * n * k / ms / 1e9:.0f} | {base / ms:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
