"""Why a solution's device-synchronized wall clock exceeds its event time (`FLAG_UNSYNCED_WORK`): the forward of a
generated solution called back to back as the sandbox's cross-check does (after emptying the CUDA cache, as the
sandbox does before timing), each call's host time and the allocator's counters printed, then the same calls
between CUDA events. A diagnostic, not the judge.

    python benchmarks/wall_vs_events_gpu.py PROBLEM.py SOLUTION.py [--calls 10]
"""

from __future__ import annotations

import argparse
import gc
import time
from pathlib import Path


def main() -> None:
    import torch

    from argus.eval.candidates import import_file

    ap = argparse.ArgumentParser()
    ap.add_argument("problem")
    ap.add_argument("solution")
    ap.add_argument("--calls", type=int, default=10)
    args = ap.parse_args()
    problem, solution = import_file(Path(args.problem), "problem"), import_file(Path(args.solution), "solution")
    torch.manual_seed(0)
    new = solution.ModelNew(*problem.get_init_inputs()).cuda()
    inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in problem.get_inputs()]
    with torch.no_grad():
        for label, empty in (("after empty_cache", True), ("cache warm", False)):
            new(*inputs)
            torch.cuda.synchronize()
            if empty:
                gc.collect()
                torch.cuda.empty_cache()
            before = torch.cuda.memory_stats()
            host = []
            t0 = time.perf_counter()
            for _ in range(args.calls):
                h = time.perf_counter()
                new(*inputs)
                host.append((time.perf_counter() - h) * 1e3)
            torch.cuda.synchronize()
            wall = (time.perf_counter() - t0) * 1e3 / args.calls
            after = torch.cuda.memory_stats()
            mallocs = after.get("num_device_alloc", 0) - before.get("num_device_alloc", 0)
            frees = after.get("num_device_free", 0) - before.get("num_device_free", 0)
            events = []
            for _ in range(args.calls):
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                new(*inputs)
                e.record()
                torch.cuda.synchronize()
                events.append(s.elapsed_time(e))
            print(
                f"{label}: wall {wall:.3f} ms/call; host per call {', '.join(f'{x:.2f}' for x in host)} ms; "
                f"cudaMalloc {mallocs}, cudaFree {frees}; events median {sorted(events)[len(events) // 2]:.3f} ms"
            )


if __name__ == "__main__":
    main()
