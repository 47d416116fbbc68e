"""f32 products of at most eight rows with a fused epilogue (session 76, `matmul.gemv_epilogue_config`): the plan
now runs them on the GEMV kernels (f32 FMAs) with the split-K reduction applying the epilogue; before, on the
tensor-core plan in split precision (bf16x3). Both are timed here (the tensor-core plan by passing its
configuration) against eager PyTorch in strict fp32 (``x @ w.T + b`` then the activation: cuBLAS and one
elementwise kernel), interleaved in one process, L2 flushed before every launch (`gemm_parity.interleaved_times`),
medians; the error of each against the product in f64, relative to its largest magnitude.

    PYTHONPATH=src python benchmarks/gemv_epilogue_gpu.py [--rounds 30] [--json F]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

try:
    import argus  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gemm_parity import interleaved_times  # noqa: E402
from gemm_variants import environment  # noqa: E402

#: (M, N, K): a GRU's recurrent and input products (hidden 256, 3 gates), decode-sized linears, a long K
SHAPES = ((2, 768, 256), (8, 768, 128), (8, 3072, 1024), (1, 4096, 4096), (4, 4096, 4096), (8, 11008, 4096),
          (2, 1024, 16384))  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    import torch

    from argus.kernels import matmul as mm
    from argus.kernels.epilogue import Epilogue

    for line in environment(torch):
        print(line)
    torch.backends.cuda.matmul.allow_tf32 = False  # eager in strict fp32, the gate's baseline
    scratch = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    ep = Epilogue.of("T.sigmoid(acc + bias)", bias="columns")
    print("\n| M x N x K | gemv µs | bf16x3 µs | eager µs | x eager | x bf16x3 | gemv err | bf16x3 err | config |")
    print("|---|---|---|---|---|---|---|---|---|")
    rows, failed = [], False
    for m, n, k in SHAPES:
        g = torch.Generator(device="cuda").manual_seed(m * n + k)
        x = torch.randn(m, k, device="cuda", generator=g)
        w = torch.randn(n, k, device="cuda", generator=g) / k**0.5
        b = torch.randn(n, device="cuda", generator=g)
        problem = mm.problem_of(x, w.T)
        new = mm.plan(problem, epilogue=ep)
        tc = mm.choose(problem, tiles=mm.plan_tiles(ep), swap=mm.SWAP_SPLIT_ONLY)
        c_new, l_new = mm.prepare(x, w.T, epilogue=ep, operands={"bias": b})
        c_tc, l_tc = mm.prepare(x, w.T, epilogue=ep, operands={"bias": b}, config=tc)
        launches = {
            "gemv": lambda l_new=l_new: [p.launch() for p in l_new],
            "bf16x3": lambda l_tc=l_tc: [p.launch() for p in l_tc],
            "eager": lambda x=x, w=w, b=b: torch.sigmoid(torch.addmm(b, x, w.T)),
        }
        for f in launches.values():
            f()
        torch.cuda.synchronize()
        ref = torch.sigmoid(x.double() @ w.double().T + b.double())
        err = {}
        for name, c in (("gemv", c_new), ("bf16x3", c_tc)):
            err[name] = float((c.double() - ref).abs().max() / ref.abs().max())
        ok = new.is_gemv and err["gemv"] < 1e-5
        failed |= not ok
        times = interleaved_times(torch, launches, args.rounds, scratch)
        med = {name: statistics.median(t) for name, t in times.items()}
        row = {
            "shape": [m, n, k],
            "config": new.config.label,
            "errors": err,
            **{f"{k_}_ms": v for k_, v in med.items()},
        }
        rows.append(row)
        print(
            f"| {m}x{n}x{k} | {med['gemv'] * 1e3:.1f} | {med['bf16x3'] * 1e3:.1f} | {med['eager'] * 1e3:.1f} | "
            f"{med['eager'] / med['gemv']:.2f} | {med['bf16x3'] / med['gemv']:.2f} | {err['gemv']:.1e} | "
            f"{err['bf16x3']:.1e} | {new.config.label}{'' if ok else ' WRONG'} |",
            flush=True,
        )
    for line in environment(torch):
        print("after:", line)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
