"""Where a fused epilogue's fp32 error comes from (issue #20): the f32 GEMM (split precision) at 1024 x 8192 x 8192
with signed inputs (x ~ N(0, 1), w ~ N(0, 1/K): outputs of unit scale), plain and with three epilogues, each judged
by the gate's comparison (fp32 tolerance) against the float64 result, with the worst element beside the unfused
result (the plain GEMM's output put through the same epilogue in float64).

Usage (GPU machine, repository root): ``PYTHONPATH=src python benchmarks/gemm_f32_epilogue_probe.py``
"""

import sys

import torch

sys.path.insert(0, "src")
from argus.eval.tolerance import compare, input_scale, tolerance_for
from argus.kernels import matmul as mm
from argus.kernels.epilogue import Epilogue

torch.backends.cuda.matmul.allow_tf32 = False
m, n, k = 1024, 8192, 8192
g = torch.Generator(device="cuda").manual_seed(m + n + k)
x = torch.randn(m, k, device="cuda", generator=g)
w = torch.randn(n, k, device="cuda", generator=g) / k**0.5
bias = torch.randn(n, device="cuda", generator=g)
prod = x.double() @ w.double().T
tol = tolerance_for(torch.float32)
sc = input_scale([x, w])
plain = mm.matmul(x, w.T)
print("plain gemm", compare(plain, prod, tol, input_scale=sc).ok, float((plain.double() - prod).abs().max()))
for expr, f in [
    ("acc + bias", lambda y: y + bias.double()),
    ("(acc + bias - 2.0) * 1.5", lambda y: (y + bias.double() - 2.0) * 1.5),
    ("T.maximum((acc + bias - 2.0) * 1.5, 0.0)", lambda y: ((y + bias.double() - 2.0) * 1.5).relu()),
]:
    ep = Epilogue.of(expr, bias="columns")
    out = mm.matmul(x, w.T, epilogue=ep, bias=bias)
    ref = f(prod)
    unf = f(plain.double())
    v = compare(out, ref, tol, input_scale=sc)
    d = (out.double() - ref).abs()
    i = int(d.argmax())
    print(
        expr,
        v.ok,
        v.reason,
        "maxabs",
        float(d.max()),
        "at",
        i,
        "out",
        float(out.view(-1)[i]),
        "ref",
        float(ref.view(-1)[i]),
        "unfused",
        float(unf.view(-1)[i]),
    )
