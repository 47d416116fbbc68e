"""Where a `matmul` call's host time goes (issue #20): the per-call cost of planning, binding (argument checks and
TMA descriptor encoding) and launching, next to the GPU time of the same launches, for a few shapes.

Usage (from the repository root on a GPU machine)::

    PYTHONPATH=src python benchmarks/gemm_call_overhead.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

try:
    import argus  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))


def main() -> int:
    import torch

    from argus.kernels import matmul as mm

    print(torch.cuda.get_device_name(), torch.__version__)
    for m, n, k, dtype in ((4096, 4096, 4096, torch.float32), (4096, 4096, 4096, torch.bfloat16),
                           (2048, 4096, 8192, torch.float32), (1, 4096, 4096, torch.bfloat16)):  # fmt: skip
        a = torch.rand(m, k, device="cuda", dtype=dtype)
        b = torch.rand(k, n, device="cuda", dtype=dtype)
        c = torch.empty(m, n, device="cuda", dtype=dtype)
        for _ in range(3):
            mm.matmul(a, b)
        torch.cuda.synchronize()
        reps = 20
        t = time.perf_counter()
        for _ in range(reps):
            mm.problem_of(a, b)
            mm.plan(mm.problem_of(a, b))
        plan_us = (time.perf_counter() - t) / reps * 1e6
        t = time.perf_counter()
        for _ in range(reps):
            _, launches = mm.prepare(a, b, out=c)
        prepare_us = (time.perf_counter() - t) / reps * 1e6
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(reps):
            for launch in launches:
                launch.launch()
        launch_us = (time.perf_counter() - t) / reps * 1e6
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(reps):
            for launch in launches:
                launch.launch()
        end.record()
        torch.cuda.synchronize()
        gpu_us = start.elapsed_time(end) / reps * 1e3
        start.record()
        for _ in range(reps):
            mm.matmul(a, b)
        end.record()
        torch.cuda.synchronize()
        call_us = start.elapsed_time(end) / reps * 1e3
        start.record()
        for _ in range(reps):
            torch.matmul(a, b)
        end.record()
        torch.cuda.synchronize()
        torch_us = start.elapsed_time(end) / reps * 1e3
        print(
            f"{m}x{n}x{k} {str(dtype)[6:]:>8}: {len(launches)} launches; host per call: plan {plan_us:7.1f} us, "
            f"prepare {prepare_us:7.1f} us, launch {launch_us:6.1f} us; GPU (prepared, back to back) "
            f"{gpu_us:8.1f} us; matmul() back to back {call_us:8.1f} us; torch.matmul {torch_us:8.1f} us"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
