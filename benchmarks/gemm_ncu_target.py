"""Launch named GEMM plans and cuBLAS once each inside an NVTX range, for Nsight Compute (issue #20)::

    ncu --nvtx --nvtx-include "prof/" --section SpeedOfLight ... \
        python benchmarks/gemm_ncu_target.py 512,512,65536 128,128,64,6,2,8,2 [--fp8]

Each configuration (``BM,BN,BK,STAGES,CONSUMERS,SPLITS,CLUSTER``, as `gemm_config_probe.py` takes them; the word
``heuristic`` for the planner's own choice) is prepared and launched twice outside the range (compiled, loaded,
warm), checked against the f32 product, then launched once inside it; cuBLAS (``torch.matmul``, or
``torch._scaled_mm`` with ``--fp8``: e4m3 operands, per-tensor scales, bf16 C) likewise. The profiler's report names
the kernels: argus's ``gemm_*`` and cuBLAS's ``nvjet_*`` / ``splitKreduce_kernel``. What it prints itself is each
contender's label in launch order, to match the report's kernels to configurations.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

try:
    import argus  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gemm_config_probe import parse_config  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("shape", help="M,N,K")
    parser.add_argument("configs", nargs="*", default=["heuristic"])
    parser.add_argument("--fp8", action="store_true", help="e4m3 operands, per-tensor scales (scaled_mm)")
    args = parser.parse_args()

    import torch

    from argus.kernels import matmul as mm

    m, n, k = (int(x) for x in args.shape.split(","))
    g = torch.Generator(device="cuda").manual_seed(m + 3 * n + 7 * k)
    a = torch.randn(m, k, device="cuda", generator=g)
    w = torch.randn(n, k, device="cuda", generator=g)
    if args.fp8:  # per-tensor scales of one: the fused epilogue scaled_mm applies
        a, w = a.to(torch.float8_e4m3fn), w.to(torch.float8_e4m3fn)
        one = torch.ones((), device="cuda")
        epilogue, tensors = mm.scaled_operands(a, w.t(), one, one)
        cublas = lambda: torch._scaled_mm(a, w.t(), one, one, out_dtype=torch.bfloat16)  # noqa: E731
    else:
        a, w = a.to(torch.bfloat16), w.to(torch.bfloat16)
        epilogue, tensors = None, None
        cublas = lambda: torch.matmul(a, w.T)  # noqa: E731
    ref = a.float() @ w.float().T
    scale = float(ref.abs().max())
    heuristic = mm.plan(mm.problem_of(a, w.T), epilogue=epilogue).config
    runs = []
    for text in args.configs:
        config = heuristic if text == "heuristic" else parse_config(text, mm, m)
        c, prepared = mm.prepare(a, w.T, config=config, epilogue=epilogue, operands=tensors)
        for _ in range(2):
            for p in prepared:
                p.launch()
        torch.cuda.synchronize()
        err = float((c.float() - ref).abs().max()) / scale
        print(f"{text}: {config.label}, {len(prepared)} launches, relative error {err:.2e}", flush=True)
        if not err <= 2e-2:
            print(f"WRONG {text}")
            return 1
        runs.append(lambda prepared=prepared: [p.launch() for p in prepared])
    for _ in range(2):
        cublas()
    torch.cuda.synchronize()
    for run in [*runs, cublas]:
        torch.cuda.nvtx.range_push("prof")
        run()
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()
    print("launch order: " + ", ".join([*args.configs, "cublas"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
