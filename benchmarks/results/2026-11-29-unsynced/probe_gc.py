"""Call 1's probe (`probe_unsynced.py`) did not reproduce the judge's excess wall clock in a plain process. This
one runs the sandbox's operations in the order the judge sends them, `verify_module` included (the verifier runs in
the sandbox process, and leaves its objects there), and counts Python's garbage collections during the back-to-back
wall clock: their number and time by generation, then the same after ``gc.freeze()``.

    python3 probe_gc.py PROBLEM_FILE SOLUTION_FILE
"""

import gc
import statistics
import sys
import time

from argus.eval import sandbox_runner as sr

_gc: dict[int, list[float]] = {}
_t0: list[float] = [0.0]


def _watch(phase: str, info: dict) -> None:
    if phase == "start":
        _t0[0] = time.perf_counter()
    else:
        _gc.setdefault(info["generation"], []).append((time.perf_counter() - _t0[0]) * 1e3)


def _wall(state: sr._State, label: str) -> None:
    _gc.clear()
    gc.callbacks.append(_watch)
    ms = sr._op_wall(state, {"n": 10})["ms"]
    gc.callbacks.remove(_watch)
    shown = {g: (len(v), round(sum(v), 2)) for g, v in sorted(_gc.items())}
    print(f"  {label}: wall {ms:.3f} ms/call; collections (count, total ms) by generation {shown}")


def main(problem: str, solution: str) -> None:
    from argus.eval.judge import _init_state
    from argus.tasks.kernelbench import load_problem

    init, rng = _init_state(load_problem(problem, {}, strict=False), 0)
    state = sr._State()
    msg = {"path": solution, "device": "cuda", "fp32": True, "problem": problem, "init_inputs": init, "rng_state": rng}
    assert "error" not in sr._op_load_module(state, msg)
    t = time.perf_counter()
    sr._op_verify_module(state, {})
    print(f"  verify_module {time.perf_counter() - t:.1f} s; objects tracked by gc: {len(gc.get_objects())}")
    sr._op_prepare_timing(state, {"problem": problem, "clock": "cuda"})
    gc.unfreeze()  # `prepare_timing` now freezes (the fix); first measured as before it
    for i in range(3):
        assert "error" not in sr._op_rep(state, {"seed": i})
    reps = [sr._op_rep(state, {"seed": 10 + i})["ms"] for i in range(10)]
    print(f"  rep events median {statistics.median(reps):.3f} ms")
    for k in range(3):
        _wall(state, f"after verify, wall {k}")
    gc.collect()
    gc.freeze()
    print(f"  frozen: {gc.get_freeze_count()} objects")
    for k in range(2):
        _wall(state, f"after gc.freeze(), wall {k}")
    reps = [sr._op_rep(state, {"seed": 40 + i})["ms"] for i in range(10)]
    print(f"  rep events median after freeze {statistics.median(reps):.3f} ms")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
