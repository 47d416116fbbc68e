"""Why the judge's wall clock of a solution whose convolution takes the f32 implicit kernel is about twice its
CUDA-event time (FLAG_UNSYNCED_WORK on level 2's 1, 4, 13, 17, 32, 35, 46, 54): the sandbox's own operations
(`argus.eval.sandbox_runner`: `rep`, `wall`) run here in one plain process on the generated solution, then the same
calls with the host time of each call, the allocator's counters, and a profile of back-to-back calls.

    python3 probe_unsynced.py PROBLEM_FILE SOLUTION_FILE
"""

import statistics
import sys
import time

import torch

from argus.eval import sandbox_runner as sr


def main(problem: str, solution: str) -> None:
    from argus.eval.judge import _init_state
    from argus.tasks.kernelbench import load_problem

    init, rng = _init_state(load_problem(problem, {}, strict=False), 0)
    state = sr._State()
    msg = {"path": solution, "device": "cuda", "fp32": True, "problem": problem, "init_inputs": init, "rng_state": rng}
    r = sr._op_load_module(state, msg)
    assert "error" not in r, r
    sr._op_prepare_timing(state, {"problem": problem, "clock": "cuda"})
    for i in range(3):
        assert "error" not in sr._op_rep(state, {"seed": i})
    reps = [sr._op_rep(state, {"seed": 10 + i})["ms"] for i in range(10)]
    walls = [sr._op_wall(state, {"n": 10})["ms"] for _ in range(3)]
    rows = {"rep events ms (median of 10)": statistics.median(reps), "wall ms (3 runs of 10)": walls}
    host, total = [], []
    for _ in range(10):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        sr._call(state, state.buffers)
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        host.append((t1 - t0) * 1e3)
        total.append((time.perf_counter() - t0) * 1e3)
    rows["host ms of one call, no sync inside"] = statistics.median(host)
    rows["one call to completion ms"] = statistics.median(total)
    before = torch.cuda.memory_stats()
    sr._op_wall(state, {"n": 10})
    after = torch.cuda.memory_stats()
    for k in ("num_alloc_retries", "num_device_alloc", "num_device_free", "num_sync_all_streams"):
        rows[f"allocator {k} during a wall of 10"] = after.get(k, 0) - before.get(k, 0)
    rows["allocator reserved GB"] = after.get("reserved_bytes.all.current", 0) / 2**30
    free, total_mem = torch.cuda.mem_get_info()
    rows["device free GB / total"] = (free / 2**30, total_mem / 2**30)
    for k, v in rows.items():
        print(f"  {k}: {v}")
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        sr._op_wall(state, {"n": 3})
    print("back-to-back x3, by device time:")
    print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=14, max_name_column_width=60))
    print("back-to-back x3, by host time:")
    print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=14, max_name_column_width=60))
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for i in range(3):
            sr._op_rep(state, {"seed": 30 + i})
    print("rep x3, by device time:")
    print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=14, max_name_column_width=60))
    prof.export_chrome_trace(sys.argv[3]) if len(sys.argv) > 3 else None


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
