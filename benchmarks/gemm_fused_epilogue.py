"""Fused GEMM epilogues (issue #20): `argus.kernels.matmul.matmul` with an epilogue against PyTorch eager (the
GEMM through cuBLAS, then one kernel per elementwise op) and ``torch.compile`` of the same function (Inductor
fuses the elementwise tail; the GEMM stays cuBLAS), interleaved in one process, L2 flushed, CUDA events.

Usage (from the repository root on a GPU machine)::

    PYTHONPATH=src python benchmarks/gemm_fused_epilogue.py [--json F] [--budget 1.0]

Rows: linear layers with the epilogues of KernelBench level 2 (bias + ReLU; bias - c, * c, ReLU, problem 9's
chain; bias, sigmoid, * c, + residual) in bf16 and in fp32 (strict fp32 cuBLAS, ``allow_tf32`` off, as the
baseline; argus's fp32 is split precision on bf16 tensor cores). Every output is compared with the float64
result under the gate's tolerance of its dtype before anything is timed. argus's time is its prepared launches
(split passes for fp32, the fused GEMM, the fused split-K reduction where the plan splits).
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

#: (label, M, N, K): x (M, K) @ w (N, K)^T, as nn.Linear computes.
SHAPES = [
    ("L2/9-like 1024x8192x8192", 1024, 8192, 8192),
    ("4096^3", 4096, 4096, 4096),
    ("odd 2000x3000x1000", 2000, 3000, 1000),
]
#: fp32 rows: the shapes and epilogues below (each fp32 row compiles three kernels and times strict fp32 cuBLAS)
F32_SHAPES = ("L2/9-like 1024x8192x8192", "odd 2000x3000x1000")
F32_EPILOGUES = ("bias+relu", "bias-2*1.5 relu (L2/9)")
#: operand name -> its kind in `argus.kernels.epilogue.Epilogue`
KINDS = {"bias": "columns", "res": "tile"}
#: (label, epilogue expression over acc and the operands, torch reference of (y, ops), operand kinds)
EPILOGUES = [
    ("bias+relu", "T.maximum(acc + bias, 0.0)", lambda y, o: y.add(o["bias"]).relu(), ("bias",)),
    (
        "bias-2*1.5 relu (L2/9)",
        "T.maximum((acc + bias - 2.0) * 1.5, 0.0)",
        lambda y, o: ((y + o["bias"] - 2.0) * 1.5).relu(),
        ("bias",),
    ),
    (
        "bias sigmoid*2+res (L2/70)",
        "T.sigmoid(acc + bias) * 2.0 + res",
        lambda y, o: torch_sigmoid(y + o["bias"]) * 2.0 + o["res"],
        ("bias", "res"),
    ),
]


def torch_sigmoid(x):  # noqa: ANN001, ANN201
    return x.sigmoid()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", type=Path)
    parser.add_argument("--budget", type=float, default=0.5, help="seconds of timed launches per row")
    args = parser.parse_args()

    import torch

    from argus.eval.tolerance import compare, input_scale, tolerance_for
    from argus.kernels import matmul as mm
    from argus.kernels.epilogue import Epilogue

    for line in environment(torch):
        print(line)
    torch.backends.cuda.matmul.allow_tf32 = False
    scratch = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    rows, failed = [], False
    print(f"{'shape':<26} {'dtype':>5} {'epilogue':<27} {'eager':>8} {'compile':>8} {'argus':>8} {'x eager':>7} "
          f"{'x comp':>7}  ok config")  # fmt: skip
    for dtype in (torch.bfloat16, torch.float32):
        tol = tolerance_for(dtype)
        for label, m, n, k in SHAPES:
            if dtype == torch.float32 and label not in F32_SHAPES:
                continue
            g = torch.Generator(device="cuda").manual_seed(m + n + k)
            x = torch.randn(m, k, device="cuda", generator=g).to(dtype)
            w = (torch.randn(n, k, device="cuda", generator=g) / k**0.5).to(dtype)
            ops_all = {
                "bias": torch.randn(n, device="cuda", generator=g).to(dtype),
                "res": torch.randn(m, n, device="cuda", generator=g).to(dtype),
            }
            prod = x.double() @ w.double().T
            for ep_label, expression, reference, names in EPILOGUES:
                if dtype == torch.float32 and ep_label not in F32_EPILOGUES:
                    continue
                ops = {name: ops_all[name] for name in names}
                ref = reference(prod, {kk: v.double() for kk, v in ops.items()})

                def eager(x=x, w=w, ops=ops, reference=reference) -> torch.Tensor:
                    return reference(x @ w.T, ops)

                compiled = torch.compile(eager)
                dt = {torch.bfloat16: "bf16", torch.float32: "f32"}[dtype]
                epilogue = Epilogue.of(expression, **{name: (KINDS[name], dt) for name in names})
                c, prepared = mm.prepare(x, w.T, epilogue=epilogue, operands=ops)
                config = mm.plan(mm.problem_of(x, w.T), epilogue=epilogue).config.label

                def run_argus(prepared=prepared) -> None:
                    for p in prepared:
                        p.launch()

                run_argus()
                outs = {"argus": c, "eager": eager(), "compile": compiled()}
                torch.cuda.synchronize()
                verdicts = {}
                for name, out in outs.items():
                    cmp = compare(out, ref, tol, input_scale=input_scale([x, w]))
                    verdicts[name] = {"ok": cmp.ok, "code": cmp.code, "reason": cmp.reason}
                failed |= not verdicts["argus"]["ok"]
                launches = {"eager": eager, "compile": compiled, "argus": run_argus}
                rounds = 20
                times = interleaved_times(torch, launches, rounds, scratch)
                med = {name: statistics.median(v) for name, v in times.items()}
                row = {
                    "shape": [m, n, k], "label": label, "dtype": str(dtype), "epilogue": ep_label,
                    "expression": expression, "config": config, "rounds": rounds,
                    **{f"{kk}_ms": v for kk, v in med.items()},
                    "x_eager": med["eager"] / med["argus"], "x_compile": med["compile"] / med["argus"],
                    "verdicts": verdicts,
                }  # fmt: skip
                rows.append(row)
                ok = "/".join("ok" if verdicts[kk]["ok"] else "FAIL" for kk in ("argus", "eager", "compile"))
                print(
                    f"{label:<26} {str(dtype)[6:]:>5} {ep_label:<27} {med['eager']:8.3f} {med['compile']:8.3f} "
                    f"{med['argus']:8.3f} {row['x_eager']:7.2f} {row['x_compile']:7.2f}  {ok} {config}",
                    flush=True,
                )
                del c, prepared, outs
            del x, w, ops_all, prod
            torch.cuda.empty_cache()
    if args.json:
        args.json.write_text(json.dumps({"environment": environment(torch), "rows": rows}, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
