"""TF32 GEMM on a GPU (issue #20): how the tensor core converts f32 operands for ``wgmma ... .tf32`` (checked bit
for bit against the interpreter's model, `argus.atoms.mma.tf32_operand`), then ``matmul(a, b, precision="tf32")``
against cuBLAS at TF32 (``torch.backends.cuda.matmul.allow_tf32 = True``): the error of each against the float64
product, and the times, interleaved.

Usage (from the repository root on a GPU machine)::

    PYTHONPATH=src python benchmarks/gemm_tf32.py [--json F] [--budget 1.0] [--shapes M,N,K ...]

**The conversion check.** ``A @ I`` (I the K x K identity) makes every output element one product ``tf32(a) * 1``
plus exact zeros, so the output *is* the tensor core's TF32 value of each element of A, bit for bit (and ``I @ B``
the same for B). Each is compared with three models of the conversion: truncation (the low 13 mantissa bits
cleared, `tf32_operand`), round to nearest even, and round half away from zero. The interpreter's model is right
only if every element matches truncation; if the hardware rounds, `tf32_operand` is what must change.

**Accuracy and time.** Inputs ``torch.randn`` (signed: errors cancel as in real use); each output compared with the
float64 product by the relative Frobenius norm of the difference and the largest element error relative to
``|A| |B|`` (the bound a TF32 product is held to); then argus's TF32, cuBLAS's TF32 and argus's default
(bf16x3 split precision, f32 accuracy) are timed interleaved (`gemm_parity.interleaved_times`: L2 flushed, CUDA
events, rotating order).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

try:
    import argus  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gemm_parity import interleaved_times  # noqa: E402
from gemm_variants import environment  # noqa: E402

#: (M, N, K): square, the shapes of issue #20's table, odd sizes and a tall-K one.
SHAPES = [
    (4096, 4096, 4096),
    (8192, 8192, 8192),
    (2048, 4096, 8192),
    (3000, 5000, 4000),
    (6144, 5120, 3072),
    (128, 4096, 4096),
    (1024, 1024, 16384),
    (1000, 1000, 1000),
]

DROPPED = 13  # f32's 23 mantissa bits less TF32's 10


def conversion_models(torch, x):  # noqa: ANN001, ANN201
    """The TF32 value of every element of the f32 tensor `x` under each model, as int32 bit patterns."""
    bits = x.contiguous().view(torch.int32)
    low = (1 << DROPPED) - 1
    trunc = bits & ~low
    half = 1 << (DROPPED - 1)
    away = (bits + half) & ~low  # on the magnitude: the sign bit is untouched for finite values below the top
    lsb = (bits >> DROPPED) & 1
    even = (bits + (half - 1) + lsb) & ~low
    return {"truncate": trunc, "nearest-even": even, "half-away": away}


def conversion_check(torch, mm, side: str, k: int = 256, rows: int = 256) -> dict:  # noqa: ANN001
    """The hardware's TF32 value of each operand element on `side` ("A" or "B") against the models."""
    g = torch.Generator(device="cuda").manual_seed(7 if side == "A" else 11)
    # mantissas uniformly random, exponents spread over 2^-20 .. 2^20, both signs
    x = torch.randn(rows, k, device="cuda", generator=g) * torch.exp2(
        torch.randint(-20, 21, (rows, k), device="cuda", generator=g).float()
    )
    eye = torch.eye(k, device="cuda")  # symmetric: eye.T is the K-major view TF32's B needs
    if side == "A":
        observed = mm.matmul(x, eye.T, precision="tf32")  # A (M, K) row-major: K-major
    else:
        observed = mm.matmul(eye, x.T, precision="tf32").T  # B = x.T (K, N), K-major: I @ B = B
    torch.cuda.synchronize()
    got = observed.contiguous().view(torch.int32)
    models = conversion_models(torch, x)
    res = {"side": side, "elements": x.numel()}
    for name, want in models.items():
        res[name] = int((got == want).sum())
    # cuBLAS's own TF32 conversion of the same operand, for contrast
    torch.backends.cuda.matmul.allow_tf32 = True
    ref = (x @ eye.T) if side == "A" else (eye @ x.T).T
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.cuda.synchronize()
    rbits = ref.contiguous().view(torch.int32)
    res["cublas"] = {name: int((rbits == want).sum()) for name, want in models.items()}
    # the interpreter's model itself (numpy), on the same values: must equal the truncation column
    from argus.atoms.mma import tf32_operand

    model = torch.from_numpy(tf32_operand(x.cpu().numpy()).astype("float32")).cuda().view(torch.int32)
    res["model_equals_truncate"] = bool((model == models["truncate"]).all())
    res["model_matches_hardware"] = int((model == got).sum())
    return res


def errors(torch, out, ref, bound) -> dict:  # noqa: ANN001
    d = out.double() - ref
    return {
        "rel_fro": float(d.norm() / ref.norm()),
        "max_err_over_AB": float((d.abs() / bound.clamp_min(1e-300)).max()),
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", type=Path)
    parser.add_argument("--budget", type=float, default=1.0, help="seconds of timed launches per row")
    parser.add_argument("--shapes", nargs="*", default=None, help="M,N,K ... (default: SHAPES)")
    args = parser.parse_args()
    shapes = [tuple(int(v) for v in s.split(",")) for s in args.shapes] if args.shapes else SHAPES

    import torch

    from argus.kernels import matmul as mm

    for line in environment(torch):
        print(line)
    torch.backends.cuda.matmul.allow_tf32 = False
    checks = [conversion_check(torch, mm, side) for side in ("A", "B")]
    print("conversion (elements equal to each model, of N): side  N  truncate  nearest-even  half-away | cuBLAS: ...")
    for c in checks:
        cb = c["cublas"]
        print(
            f"  {c['side']}  {c['elements']}  {c['truncate']}  {c['nearest-even']}  {c['half-away']} | "
            f"{cb['truncate']}  {cb['nearest-even']}  {cb['half-away']}  (tf32_operand == truncate: "
            f"{c['model_equals_truncate']}; tf32_operand == hardware: {c['model_matches_hardware']})",
            flush=True,
        )
    scratch = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    rows = []
    print(f"{'M x N x K':>18} {'argus tf32':>10} {'cuBLAS tf32':>11} {'x cuBLAS':>8} {'bf16x3':>8}  "
          "rel. Frobenius error argus / cuBLAS (max |err| / (|A||B|))  config")  # fmt: skip
    for m, n, k in shapes:
        g = torch.Generator(device="cuda").manual_seed(m + 3 * n + 7 * k)
        a = torch.randn(m, k, device="cuda", generator=g)
        b = torch.randn(n, k, device="cuda", generator=g).T  # K-major: the layout TF32's B must have
        ref = a.double() @ b.double()
        bound = a.double().abs() @ b.double().abs()
        t0 = time.time()
        c, prepared = mm.prepare(a, b, precision="tf32")
        c3, prepared3 = mm.prepare(a, b)
        config = mm.plan(mm.problem_of(a, b, precision="tf32")).config.label

        def run_argus(prepared=prepared) -> None:
            for p in prepared:
                p.launch()

        def run_bf16x3(prepared=prepared3) -> None:
            for p in prepared:
                p.launch()

        def run_cublas(a=a, b=b) -> None:
            torch.backends.cuda.matmul.allow_tf32 = True
            torch.matmul(a, b)
            torch.backends.cuda.matmul.allow_tf32 = False

        run_argus()
        run_bf16x3()
        torch.backends.cuda.matmul.allow_tf32 = True
        cub = torch.matmul(a, b)
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.cuda.synchronize()
        err = {"argus": errors(torch, c, ref, bound), "cublas": errors(torch, cub, ref, bound),
               "bf16x3": errors(torch, c3, ref, bound)}  # fmt: skip
        del ref, bound, cub
        launches = {"cublas": run_cublas, "argus": run_argus, "bf16x3": run_bf16x3}
        t = time.time()
        for fn in launches.values():
            fn()
        torch.cuda.synchronize()
        per_round = max(time.time() - t, 1e-5)
        rounds = int(min(100, max(5, args.budget / per_round)))
        times = interleaved_times(torch, launches, rounds, scratch)
        med = {name: statistics.median(v) for name, v in times.items()}
        row = {"shape": [m, n, k], "config": config, "rounds": rounds, "ms": med,
               "x_cublas": med["cublas"] / med["argus"], "errors": err, "setup_s": time.time() - t0}  # fmt: skip
        rows.append(row)
        print(
            f"{f'{m}x{n}x{k}':>18} {med['argus']:10.3f} {med['cublas']:11.3f} {row['x_cublas']:8.3f} "
            f"{med['bf16x3']:8.3f}  {err['argus']['rel_fro']:.2e} / {err['cublas']['rel_fro']:.2e} "
            f"({err['argus']['max_err_over_AB']:.1e} / {err['cublas']['max_err_over_AB']:.1e})  {config}",
            flush=True,
        )
        del a, b, c, c3, prepared, prepared3
        torch.cuda.empty_cache()
    if args.json:
        args.json.write_text(json.dumps({"environment": environment(torch), "conversion": checks, "rows": rows},
                                        indent=1))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
