#!/usr/bin/env bash
# device call 8 (session 59, issue #20): the one-launch GEMV on operands TMA cannot take as they are (a row of A with
# strides (1, 1), a row starting mid-vector, a vector with strides (1, 1)), through `matmul.matmul`, against float64.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
mkdir -p $OUT/call8
python3 - <<'PY' 2>&1 | tee $OUT/call8/check.txt
import torch
from argus.kernels import matmul as mm
torch.manual_seed(0)
k, n = 4096, 4096
w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
cases = {
    "row x.T of a column": (torch.randn(k, 1, device="cuda", dtype=torch.bfloat16).T, w.T),
    "row starting mid-vector": (torch.randn(1, k + 1, device="cuda", dtype=torch.bfloat16)[:, 1:], w.T),
    "row plain": (torch.randn(1, k, device="cuda", dtype=torch.bfloat16), w.T),
    "matrix x vector (K,1)": (w, torch.randn(k, 1, device="cuda", dtype=torch.bfloat16)),
    "matrix x vector slice": (w, torch.randn(k, 8, device="cuda", dtype=torch.bfloat16)[:, 3:4]),
}
bad = 0
for name, (a, b) in cases.items():
    label = mm.plan(mm.problem_of(a, b)).config.label
    c = mm.matmul(a, b)
    for _ in range(3):
        c = mm.matmul(a, b)  # again: prepared launches replayed
    torch.cuda.synchronize()
    ref = a.double() @ b.double()
    err = float((c.double() - ref).abs().max() / ref.abs().max())
    bad += not err < 1e-2
    print(f"{name:28s} {label:60s} rel err {err:.2e} {'OK' if err < 1e-2 else 'WRONG'}")
print("wrong:", bad)
PY
