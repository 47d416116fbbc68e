"""The 32-bit / 64-bit global offsets on a GPU: a batched f32 product whose split pass writes a tensor of more than
2^31 elements (the runtime must launch the split kernel's wide variant) and the same product at a small size
(the narrow variant), each checked against float64; prints which variant each launch took.

    PYTHONPATH=src python benchmarks/wide_offsets_gpu.py
"""

from __future__ import annotations

import torch

from argus.kernels import matmul as mm


def check(batch: int, n: int) -> None:
    torch.manual_seed(0)
    a = torch.randn(batch, 1, 3, device="cuda")
    b = torch.randn(batch, 3, n, device="cuda")
    c = mm.matmul(a, b)
    torch.cuda.synchronize()
    want = a.double() @ b.double()
    err = ((c.double() - want).abs().max() / want.abs().max()).item()
    steps = [s for s in mm.split_steps(mm.GemmProblem(1, n, 3, "f32", "f32", "K", "N", batch)) if s.name == "B"]
    y = steps[0].y_shape
    count = 1
    for e in y:
        count *= e
    print(f"batch {batch} n {n}: split B -> {y} ({count} elements, wide needed: {count > 2**31}); rel err {err:.2e}")
    assert err < 1e-5, err


if __name__ == "__main__":
    check(2, 1000)
    check(2, 11184811)
    print("ok")
