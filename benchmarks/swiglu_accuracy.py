"""Where the SwiGLU kernel's error comes from (a diagnostic, issue #23): on one shape, the f32 accumulators of the
plain grouped kernel (OUT=f32) and of torch's f32 matmul against a float64 product, and the SwiGLU kernel's output
against the float64 formula, with the worst elements' inputs.

    PYTHONPATH=src python benchmarks/swiglu_accuracy.py [task [NAME=VALUE ...]]
"""

from __future__ import annotations

import sys
from pathlib import Path

try:
    import argus  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from argus.kernels import moe  # noqa: E402


def main() -> int:
    import torch

    dev = "cuda"
    torch.manual_seed(0)
    if len(sys.argv) > 1 and sys.argv[1] == "task":  # the grouped_swiglu task's own draw at Mixtral's shape
        from argus.tasks import get_task

        sizes = {"R": 8192, "E": 8, "K": 4096, "N": 14336, "N2": 28672}
        a, b, offs, _, scale = get_task("grouped_swiglu").sample(sizes, 17, dev)
        rows, experts, k, n = 8192, 8, 4096, 14336
    else:
        rows, experts, k, n = 4096, 4, 4096, 512
        a = torch.randn(rows, k, device=dev).to(torch.bfloat16)
        b = (torch.randn(experts, k, 2 * n, device=dev) * k**-0.5).to(torch.bfloat16)
        offs = torch.tensor([1000, 1000, 3000, 4096], device=dev, dtype=torch.int32)
        scale = torch.rand(rows, device=dev)
    h64 = torch.zeros(rows, 2 * n, dtype=torch.float64, device=dev)
    h32 = torch.zeros(rows, 2 * n, dtype=torch.float32, device=dev)
    start = 0
    for g, end in enumerate(offs.tolist()):
        h64[start:end] = a[start:end].double() @ b[g].double()
        h32[start:end] = a[start:end].float() @ b[g].float()
        start = end
    params = dict(moe.choose(rows, 2 * n, k, experts)) | {"OUT": "f32", "IN": "bf16"}
    params["SEARCH"] = moe.search_steps(experts)
    plain = torch.empty(rows, 2 * n, dtype=torch.float32, device=dev)
    tiles = moe.tile_counts(offs, params["BM"])
    moe._loaded("plain", tuple(sorted(params.items()))).prepare(a, b, offs, tiles, plain).launch()
    torch.cuda.synchronize()
    for name, h in (("torch f32 matmul", h32), ("argus plain, f32 out", plain)):
        err = (h.double() - h64).abs()
        print(f"{name}: max abs err {float(err.max()):.3e}, max |h| {float(h64.abs().max()):.2f}")
    config = dict(moe.choose(rows, n, k, experts, "swiglu"))
    if len(sys.argv) > 2:  # e.g. SEARCH=8 (the task's workload parameters: 8 search steps whatever E is)
        config |= {kv.split("=")[0]: int(kv.split("=")[1]) for kv in sys.argv[2:]}
    print("swiglu configuration", config)
    out = moe.grouped_swiglu(a, b, offs, scale=scale, config=config).double()
    g, u = h64[:, :n], h64[:, n:]
    want = scale.double()[:, None] * g * torch.sigmoid(g) * u
    err = (out - want).abs()
    bound = 0.01 + 0.01 * want.abs()
    print(f"swiglu: max abs err {float(err.max()):.3e}, elements over the gate's bound {int((err > bound).sum())}")
    rel = err / want.abs().clamp_min(1e-3)
    if rows == 8192:  # the element the gate reported (bench run 4, seed 17)
        r, c = 3602, 8316
        print(
            f"  gate's element [{r},{c}]: got {float(out[r, c]):.5f} want {float(want[r, c]):.5f} "
            f"g {float(g[r, c]):.5f} u {float(u[r, c]):.5f} scale {float(scale[r]):.6f}"
        )
        from argus.kernels.workloads import grouped_swiglu_product

        ref = grouped_swiglu_product(a.double(), b.double(), offs, None, scale.double())
        print(
            f"  the task reference there: {float(ref[r, c]):.5f}; "
            f"max |ref - want| {float((ref - want).abs().max()):.3e}"
        )
    for idx in torch.topk((err - bound).flatten(), 5).indices.tolist():
        r, c = divmod(idx, n)
        print(
            f"  [{r},{c}] got {float(out[r, c]):.5f} want {float(want[r, c]):.5f} rel {float(rel[r, c]):.2e} "
            f"g {float(g[r, c]):.5f} u {float(u[r, c]):.5f} scale {float(scale[r]):.5f} "
            f"plain g {float(plain[r, c]):.5f} plain u {float(plain[r, n + c]):.5f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
