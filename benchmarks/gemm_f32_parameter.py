"""f32 linear layers whose weight is a module parameter (`argus.kernels.matmul.CACHE_PARAMETER_SPLITS`): the
`LibraryGemm` call `argus solve` emits, with the weight an ``nn.Parameter`` (its bf16 split parts made once) and
with the same weight as a plain tensor (split on every call), against strict fp32 eager (``allow_tf32`` off) and
``torch.compile``, interleaved in one process, L2 flushed, CUDA events. Outputs checked against float64 first.

Usage (from the repository root on a GPU machine)::

    PYTHONPATH=src python benchmarks/gemm_f32_parameter.py [--json F] [--rounds 20]
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

#: (label, M, N, K, reduce): x (M, K) @ w (N, K)^T + bias, then (optionally) sigmoid and a row sum
ROWS = [
    ("L2/56 128x32768x32768 sigmoid sum", 128, 32768, 32768, "sum"),
    ("batch 128 8192x8192", 128, 8192, 8192, None),
    ("batch 256 4096x16384", 256, 4096, 16384, None),
    ("batch 1024 8192x8192", 1024, 8192, 8192, None),
    ("batch 32 16384x4096", 32, 16384, 4096, None),
]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", type=Path)
    parser.add_argument("--rounds", type=int, default=20)
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
    print(f"{'row':<36} {'eager':>8} {'compile':>8} {'tensor':>8} {'param':>8} {'x eager':>7} {'x comp':>7} "
          f"{'x tensor':>8}  ok plan")  # fmt: skip
    for label, m, n, k, reduce in ROWS:
        g = torch.Generator(device="cuda").manual_seed(m + n + k)
        x = torch.rand(m, k, device="cuda", generator=g)
        w = (torch.rand(n, k, device="cuda", generator=g) * 2 - 1) / k**0.5
        bias = torch.rand(n, device="cuda", generator=g) * 2 - 1
        param = torch.nn.Parameter(w, requires_grad=False)
        y = x.double() @ w.double().T + bias.double()
        ref = y.sigmoid().sum(-1, keepdim=True) if reduce else y
        if reduce:
            ep = Epilogue.of("T.sigmoid(acc + bias)", reduce="sum", bias="columns")

            def eager(x=x, w=w, bias=bias) -> torch.Tensor:
                return torch.sigmoid(x @ w.T + bias).sum(-1, keepdim=True)
        else:
            ep = Epilogue.of("acc + bias", bias="columns")

            def eager(x=x, w=w, bias=bias) -> torch.Tensor:
                return x @ w.T + bias

        problem = mm.GemmProblem(m, n, k, "f32", "f32", "K", "K")
        call = mm.LibraryGemm("linear", problem, transpose_b=True, order=(0, 1), epilogue=ep, epilogue_order=(2,),
                              keepdim=bool(reduce))  # fmt: skip
        plain = mm.LibraryGemm("linear", problem, transpose_b=True, order=(0, 1), epilogue=ep, epilogue_order=(2,),
                               keepdim=bool(reduce))  # fmt: skip
        out_p, out_t = call.empty_output(x, param, bias), plain.empty_output(x, w, bias)

        def run_param(call=call, x=x, param=param, bias=bias, out=out_p) -> None:
            call(x, param, bias, out)

        def run_tensor(call=plain, x=x, w=w, bias=bias, out=out_t) -> None:
            call(x, w, bias, out)

        compiled = torch.compile(eager)
        run_param()
        run_tensor()
        outs = {"param": out_p, "tensor": out_t, "eager": eager(), "compile": compiled()}
        torch.cuda.synchronize()
        verdicts = {}
        for name, value in outs.items():
            cmp = compare(value, ref, tolerance_for(torch.float32), input_scale=input_scale([x, w]))
            verdicts[name] = {"ok": cmp.ok, "code": cmp.code, "reason": cmp.reason}
        failed |= not (verdicts["param"]["ok"] and verdicts["tensor"]["ok"])
        launches = {"eager": eager, "compile": compiled, "tensor": run_tensor, "param": run_param}
        times = interleaved_times(torch, launches, args.rounds, scratch)
        med = {name: statistics.median(v) for name, v in times.items()}
        config = mm.plan(problem, epilogue=ep).config.label
        row = {
            "label": label, "shape": [m, n, k], "reduce": reduce, "config": config, "rounds": args.rounds,
            **{f"{kk}_ms": v for kk, v in med.items()}, "verdicts": verdicts,
            "x_eager": med["eager"] / med["param"], "x_compile": med["compile"] / med["param"],
            "x_tensor": med["tensor"] / med["param"],
        }  # fmt: skip
        rows.append(row)
        ok = "/".join("ok" if verdicts[kk]["ok"] else "FAIL" for kk in ("param", "tensor", "eager", "compile"))
        print(
            f"{label:<36} {med['eager']:8.3f} {med['compile']:8.3f} {med['tensor']:8.3f} {med['param']:8.3f} "
            f"{row['x_eager']:7.2f} {row['x_compile']:7.2f} {row['x_tensor']:8.2f}  {ok} {config}",
            flush=True,
        )
        del call, plain, outs, out_p, out_t, x, w, param
        torch.cuda.empty_cache()
    if args.json:
        args.json.write_text(json.dumps({"environment": environment(torch), "rows": rows}, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
