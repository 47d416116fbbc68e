"""Host time of a `LibraryConv` call on the implicit kernel (issue #21): back-to-back calls on channels-last tensors,
wall time per call with the GPU synchronized at the end only, beside the kernel's own prepared launch, and the
functions the call spends its host time in (cProfile, top 15 by cumulative time).

    PYTHONPATH=src python benchmarks/conv_call_overhead.py [--calls 500]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
from pathlib import Path

try:
    import argus  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=500)
    args = parser.parse_args()

    import torch

    from argus.kernels.conv import Conv, LibraryConv

    conv = Conv(2, 8, 64, 128, 1, (1, 56, 56), (1, 3, 3), (1, 1, 1), (0, 1, 1), (1, 1, 1), False, "f16")
    x = torch.randn(8, 64, 56, 56, device="cuda").half().to(memory_format=torch.channels_last)
    w = torch.randn(128, 64, 3, 3, device="cuda").half()
    call = LibraryConv("conv", conv)
    out = torch.empty(8, 56, 56, 128, device="cuda").half().permute(0, 3, 1, 2)
    for _ in range(5):
        call(x, w, out)
    torch.cuda.synchronize()

    def timed(fn, n: int) -> float:  # noqa: ANN001
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(n):
            fn()
        torch.cuda.synchronize()
        return (time.perf_counter() - t) / n * 1e6

    us = timed(lambda: call(x, w, out), args.calls)
    conv_us = timed(lambda: torch.nn.functional.conv2d(x, w, padding=1), args.calls)
    print(f"LibraryConv call: {us:.1f} us per call back to back; cuDNN conv2d: {conv_us:.1f} us")
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(200):
        call(x, w, out)
    prof.disable()
    torch.cuda.synchronize()
    pstats.Stats(prof).sort_stats("cumulative").print_stats(15)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
