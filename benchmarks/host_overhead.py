"""Host time of one library call (issues #20, #21, #22): what a call costs the CPU before its kernel runs, for the
pointwise convolution (ResNet-50's 1x1, 64 -> 64 at 56x56, batch 32, bf16, channels last), its GEMM, the pieces of
`matmul.prepare`, and attention, beside torch's own calls on the same tensors.

    PYTHONPATH=src python benchmarks/host_overhead.py

Each row: 200 calls back to back after 5 warm-up calls, "host" the time until the last call returns, "wall" until
the GPU is done too (a call whose host time exceeds its kernel's is host-bound: its wall time is its host time).
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

try:
    import argus  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))


def main() -> int:
    import torch

    from argus.kernels import matmul, sdpa
    from argus.kernels.conv import Conv, LibraryConv

    n, c, f, hw = 32, 64, 64, 56
    conv = Conv(2, n, c, f, 1, (1, hw, hw), (1, 1, 1), (1, 1, 1), (0, 0, 0), (1, 1, 1), False, "bf16")
    x = torch.randn(n, c, hw, hw, device="cuda").to(torch.bfloat16).to(memory_format=torch.channels_last)
    w = (torch.randn(f, c, 1, 1, device="cuda") / math.sqrt(c)).to(torch.bfloat16)
    w = w.to(memory_format=torch.channels_last)
    out = torch.empty(n, hw, hw, f, dtype=torch.bfloat16, device="cuda").permute(0, 3, 1, 2)
    call = LibraryConv("conv", conv)
    a, b = x.permute(0, 2, 3, 1).reshape(-1, c), w.reshape(f, c).t()
    y = out.permute(0, 2, 3, 1).reshape(-1, f)
    _, launches = matmul.prepare(a, b, out=y)
    q = torch.randn(4, 16, 1024, 128, device="cuda", dtype=torch.bfloat16)

    def timed(label: str, fn, calls: int = 200) -> None:  # noqa: ANN001
        for _ in range(5):
            fn()
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        host = (time.perf_counter() - start) / calls
        torch.cuda.synchronize()
        wall = (time.perf_counter() - start) / calls
        print(f"| {label} | {host * 1e6:.1f} | {wall * 1e6:.1f} |")

    print("| call | host us | wall us |\n|---|---|---|")
    timed("LibraryConv 1x1 (the pointwise GEMM)", lambda: call(x, w, out))
    timed("matmul.prepare", lambda: matmul.prepare(a, b, out=y))
    timed("its prepared launch", lambda: [one.launch() for one in launches])
    timed("torch.matmul", lambda: torch.matmul(a, b, out=y))
    timed("matmul.tuned_config", lambda: matmul.tuned_config(matmul.problem_of(a, b), a.device))
    timed("matmul.problem_of", lambda: matmul.problem_of(a, b))
    timed("matmul.plan", lambda: matmul.plan(matmul.problem_of(a, b)))
    timed("sdpa (4x16x1024x128)", lambda: sdpa.sdpa(q, q, q))
    timed("torch SDPA", lambda: torch.nn.functional.scaled_dot_product_attention(q, q, q))
    return 0


if __name__ == "__main__":
    sys.exit(main())
