"""The TMA maps' L2 promotion (`argus.runtime.tensor_maps.L2_PROMOTION_BYTES`) as an A/B at a few bf16 shapes: for each
shape, the heuristic's configuration (and, where it copies the operands to whole pitches, the same configuration
without the copies) prepared once per promotion on its own copies of the operands, every contender checked against
the f32 product, then timed interleaved with cuBLAS (`gemm_parity.interleaved_times`: L2 flushed every round, CUDA
events, order rotating). Ratios are cuBLAS time / argus time.

    PYTHONPATH=src python benchmarks/gemm_l2_promotion.py --shapes 6000,6000,3000 --promotions 128 256
"""

from __future__ import annotations

import argparse
import statistics
import sys
from dataclasses import replace
from pathlib import Path

try:
    import argus  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gemm_parity import interleaved_times  # noqa: E402
from gemm_shapes import _operands, timed_call  # noqa: E402
from gemm_variants import environment  # noqa: E402


def main() -> int:
    import torch

    from argus.kernels import matmul as mm
    from argus.runtime import tensor_maps

    parser = argparse.ArgumentParser()
    parser.add_argument("--shapes", nargs="+", default=["6000,6000,3000", "4096,4096,4096"])
    parser.add_argument("--promotions", nargs="+", type=int, default=[128, 256], help="bytes: 0, 64, 128, 256")
    parser.add_argument("--rounds", type=int, default=60)
    args = parser.parse_args()
    for line in environment(torch):
        print(line)
    scratch = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    wrong = False
    for spec in args.shapes:
        m, n, k = (int(x) for x in spec.split(","))
        a0, b0 = _operands(torch, m, n, k, "NT")
        ref = a0.float() @ b0.float()
        problem = mm.problem_of(a0, b0)
        chosen = mm.plan(problem).config
        configs = [chosen]
        if isinstance(chosen, mm.GemmConfig) and chosen.PITCH:
            configs.append(replace(chosen, PITCH=False))
        launches = {"cublas": lambda a0=a0, b0=b0: torch.matmul(a0, b0)}
        for promotion in args.promotions:
            tensor_maps.L2_PROMOTION_BYTES = promotion
            for config in configs:
                a, b = a0.clone(), b0.t().contiguous().t()  # own copies: prepared launches are kept per tensors
                c, prepared = mm.prepare(a, b, config=config)
                for p in prepared:
                    p.launch()
                torch.cuda.synchronize()
                err = float((c.float() - ref).abs().max() / ref.abs().max())
                name = f"{config.label} L2 promotion {promotion} B"
                if not err <= 1e-2:
                    wrong = True
                    print(f"  WRONG {name}: relative error {err}")
                    continue
                launches[name] = timed_call(mm, torch, problem, config, a, b, prepared)
        tensor_maps.L2_PROMOTION_BYTES = 128
        times = interleaved_times(torch, launches, args.rounds, scratch)
        med = {name: statistics.median(v) for name, v in times.items()}
        print(f"## {m}x{n}x{k}: cuBLAS {med['cublas']:.4f} ms")
        for name, t in med.items():
            if name != "cublas":
                print(f"  {t:.4f} ms  {med['cublas'] / t:.3f}x  {name}")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
