"""The ncu target for the grouped GEMM against the dense persistent GEMM at one expert's shape (issue #23):
5 launches of each at 1024 x 28672 x 4096 (bf16, B row-major). Usage (on a GPU machine):

    ncu --kernel-name regex:'grouped_gemm|gemm_warp' --launch-skip 4 --launch-count 2 --section SpeedOfLight \\
        --section WarpStateStats python benchmarks/grouped_profile.py
"""

from __future__ import annotations

import sys
from pathlib import Path

try:
    import argus  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from argus.kernels import matmul as mm  # noqa: E402
from argus.kernels import moe as grouped  # noqa: E402


def main() -> int:
    import torch

    rows, n, k = 1024, 28672, 4096
    a = torch.randn(rows, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(1, k, n, device="cuda", dtype=torch.bfloat16) * k**-0.5
    offs = torch.tensor([rows], dtype=torch.int32, device="cuda")
    _, g = grouped.prepare(a, b, offs)
    _, dense = mm.prepare(a, b[0], config=mm.GemmConfig(BM=128, BN=256, CONSUMERS=2, STAGES=4, EPILOGUE="direct"))
    for _ in range(5):
        g.launch()
    for _ in range(5):
        for x in dense:
            x.launch()
    torch.cuda.synchronize()
    return 0


if __name__ == "__main__":
    sys.exit(main())
