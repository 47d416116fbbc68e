"""Launch the plan's kernels for a few decode-sized bf16 products, for a profiler (``ncu --kernel-name regex:gemm
python benchmarks/gemm_decode_profile.py``): each plan prepared once, then launched three times; cuBLAS
(``torch.matmul``) once per shape after it, for the same profiler run to compare (its kernels have other names)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

try:
    import argus  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))


def main() -> None:
    import torch

    from argus.kernels import matmul as mm

    parser = argparse.ArgumentParser()
    parser.add_argument("--shapes", nargs="*", default=["8,8192,8192", "1,4096,4096", "96,7168,7168", "1024,1024,1024"])
    args = parser.parse_args()
    for spec in args.shapes:
        m, n, k = (int(x) for x in spec.split(","))
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16).t()  # nn.Linear's weight (N, K): layout NT
        _, launches = mm.prepare(a, b)
        for _ in range(3):
            for launch in launches:
                launch.launch()
        torch.cuda.synchronize()
        torch.matmul(a, b)
        torch.cuda.synchronize()
        print(spec, mm.plan(mm.problem_of(a, b)).config.label, flush=True)


if __name__ == "__main__":
    main()
