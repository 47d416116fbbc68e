"""The fp32 GEMM's accuracy on signed inputs (issue #20): split precision (bf16x3) on `torch.rand` (KernelBench's
draw, all positive) and on `torch.randn` operands at growing K, judged by the gate's comparison (fp32 tolerance),
with the largest error relative to the output's largest element. Prints one line per row; no timing.

Usage (GPU machine, repository root): ``PYTHONPATH=src python benchmarks/gemm_f32_signed_probe.py``
"""

from __future__ import annotations

import sys
from pathlib import Path

try:
    import argus  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))


def main() -> int:
    import torch

    from argus.eval.tolerance import compare, input_scale, tolerance_for
    from argus.kernels import matmul as mm

    tol = tolerance_for(torch.float32)
    print(f"{'draw':<6} {'M x N x K':>18} {'gate':>5} {'max err / max|ref|':>18} config")
    for draw in ("rand", "randn"):
        for m, n, k in ((512, 512, 1024), (512, 512, 4096), (500, 700, 9000), (512, 512, 32768), (256, 256, 131072)):
            g = torch.Generator(device="cuda").manual_seed(k)
            make = torch.rand if draw == "rand" else torch.randn
            a, b = make(m, k, device="cuda", generator=g), make(k, n, device="cuda", generator=g)
            c = mm.matmul(a, b)
            ref = a.double() @ b.double()
            v = compare(c, ref, tol, input_scale=input_scale([a, b]))
            err = float((c.double() - ref).abs().max() / ref.abs().max())
            print(f"{draw:<6} {f'{m}x{n}x{k}':>18} {'ok' if v.ok else 'FAIL':>5} {err:18.2e} "
                  f"{mm.plan(mm.problem_of(a, b)).config.label}", flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
