"""Compile the kernels of GEMM plans into the on-disk cache in parallel, before a benchmark that times them.

Usage (from the repository root)::

    PYTHONPATH=src python benchmarks/gemm_precompile.py M,N,K[:BM,BN,BK,STAGES,CONSUMERS,SPLITS,CLUSTER[,direct|tma]
        [,fused]] ... [--jobs 16]

Each argument is a bf16 NT product (A (M, K) @ B (N, K)^T, as `gemm_config_probe.py` builds it) and optionally a
configuration in that script's form (else the heuristic's); every kernel of its plan is generated and compiled for
sm_90a (NVRTC, no GPU needed) with the launch prologue the library uses (`matmul.DEPENDENT_LAUNCHES`), so that the
benchmark's own calls find the cubins in the cache instead of compiling one at a time. Prints each plan's kernels
and the seconds each job took.
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def compile_plan(spec: str) -> str:
    from gemm_config_probe import parse_config

    from argus.backend.cuda.codegen import compile_kernel
    from argus.kernels import matmul as mm

    start = time.perf_counter()
    shape, _, config = spec.partition(":")
    m, n, k = (int(x) for x in shape.split(","))
    problem = mm.GemmProblem(m, n, k, "bf16", "bf16", "K", "K")
    plan = mm.plan(problem, parse_config(config, mm) if config else None)
    names = []
    for kernel in plan.kernels():
        compile_kernel(kernel, dependent=mm.DEPENDENT_LAUNCHES)
        names.append(kernel.name)
    return f"{spec}: {plan.config.label}: {', '.join(names)} ({time.perf_counter() - start:.0f} s)"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("specs", nargs="+", help="M,N,K[:configuration]")
    parser.add_argument("--jobs", type=int, default=16)
    args = parser.parse_args()
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for line in pool.map(compile_plan, args.specs):
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
