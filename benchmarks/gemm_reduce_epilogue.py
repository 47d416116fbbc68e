"""Reducing GEMM epilogues (issue #20): `argus.kernels.matmul.matmul(..., reduce=)` — the product, an elementwise
tail and a reduction of each row, the product never stored — against PyTorch eager (cuBLAS, then one kernel per op),
``torch.compile`` of the same function (Inductor fuses the tail and the reduction after a cuBLAS GEMM), and argus
unfused (argus's GEMM with the elementwise epilogue, then torch's reduction), interleaved in one process, L2
flushed, CUDA events.

Usage (from the repository root on a GPU machine)::

    PYTHONPATH=src python benchmarks/gemm_reduce_epilogue.py [--json F] [--rounds 20] [--only SUBSTRING]

Rows: the GEMM + reduction chains of KernelBench level 2 at their sizes in fp32 (strict fp32 cuBLAS, ``allow_tf32``
off, as the baseline: argus's fp32 is split precision on bf16 tensor cores) and LLM-like shapes in bf16 (a logits
LogSumExp at prefill and at decode, a row sum, an odd-sized max). Every output is compared with the float64
result under the gate's tolerance of its dtype before anything is timed; each row records the plan that served it.
"""

from __future__ import annotations

import argparse
import dataclasses
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

#: (label, M, N, K, dtype, epilogue expression over acc and bias, torch of (y, bias), reduction)
ROWS = [
    ("L2/56 sigmoid sum", 128, 32768, 32768, "f32", "T.sigmoid(acc + bias)", lambda y, b: (y + b).sigmoid(), "sum"),
    ("L2/64 logsumexp", 1024, 8192, 8192, "f32", "acc + bias", lambda y, b: y + b, "logsumexp"),
    ("L2/80 max", 1024, 8192, 8192, "f32", "acc + bias", lambda y, b: y + b, "max"),
    (
        "L2/22 scale clamp lse",
        1024,
        8192,
        8192,
        "f32",
        "T.minimum(T.maximum((acc + bias) * 4.0, -10.0), 10.0)",
        lambda y, b: ((y + b) * 4.0).clamp(-10.0, 10.0),
        "logsumexp",
    ),
    ("L2/18 sum", 1024, 8192, 8192, "f32", "acc + bias", lambda y, b: y + b, "sum"),
    ("L2/45 second lse", 16384, 1024, 4096, "f32", "acc + bias", lambda y, b: y + b, "logsumexp"),
    ("logits lse prefill", 4096, 32000, 4096, "bf16", "acc", lambda y, b: y, "logsumexp"),
    ("logits lse decode", 8, 128256, 4096, "bf16", "acc", lambda y, b: y, "logsumexp"),
    ("sum 2048x8192x2048", 2048, 8192, 2048, "bf16", "T.sigmoid(acc + bias)", lambda y, b: (y + b).sigmoid(), "sum"),
    ("odd max 1000x5000x3000", 1000, 5000, 3000, "bf16", "acc + bias", lambda y, b: y + b, "max"),
    ("mean 4096^3", 4096, 4096, 4096, "bf16", "T.maximum(acc + bias, 0.0)", lambda y, b: (y + b).relu(), "mean"),
    # over the columns (dim 0): the transposed product's rows, as `matmul(..., dim=0)` runs it
    ("columns lse 8192x4096x4096", 8192, 4096, 4096, "bf16", "acc + bias", lambda y, b: y + b, "logsumexp:0"),
    (
        "columns sum 4096x1024x8192",
        4096,
        1024,
        8192,
        "f32",
        "T.sigmoid(acc + bias)",
        lambda y, b: (y + b).sigmoid(),
        "sum:0",
    ),  # fmt: skip
]


def reduced(torch, y, op: str):  # noqa: ANN001, ANN201
    """`op` of each row of y (``"op:0"``: of each column), as torch computes it."""
    op, _, dim = op.partition(":")
    d = int(dim or -1)
    return {
        "sum": lambda: y.sum(d),
        "mean": lambda: y.mean(d),
        "max": lambda: y.amax(d),
        "min": lambda: y.amin(d),
        "logsumexp": lambda: torch.logsumexp(y, d),
    }[op]()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", type=Path)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--only", default="", help="rows whose label contains this")
    parser.add_argument("--no-compile", action="store_true", help="leave torch.compile out (its compile time)")
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
    print(f"{'row':<24} {'MxNxK':>17} {'dt':>4} {'op':>9} {'eager':>8} {'compile':>8} {'unfused':>8} {'argus':>8} "
          f"{'x eager':>7} {'x comp':>7} {'x unf':>6}  ok config")  # fmt: skip
    for label, m, n, k, dt, expression, tail, op in ROWS:
        if args.only not in label:
            continue
        dtype = {"bf16": torch.bfloat16, "f32": torch.float32}[dt]
        g = torch.Generator(device="cuda").manual_seed(m + n + k)
        x = torch.rand(m, k, device="cuda", generator=g).to(dtype)
        w = ((torch.rand(n, k, device="cuda", generator=g) * 2 - 1) / k**0.5).to(dtype)
        bias = (torch.rand(n, device="cuda", generator=g) * 2 - 1).to(dtype)
        ops = {"bias": bias} if "bias" in expression else {}
        ref = reduced(torch, tail(x.double() @ w.double().T, bias.double()), op)

        def eager(x=x, w=w, bias=bias, tail=tail, op=op) -> torch.Tensor:
            return reduced(torch, tail(x @ w.T, bias), op)

        compiled = None if args.no_compile else torch.compile(eager)
        kinds = {name: ("columns", dt) for name in ops}
        plain = Epilogue.of(expression, **kinds)
        c_unfused, prepared_unfused = mm.prepare(x, w.T, epilogue=plain, operands=ops)
        columns = op.endswith(":0")
        epilogue = plain.reducing(op.partition(":")[0])
        # over the columns: the transposed product w @ x^T's rows, its per-column operands read as per-row ones (what
        # `matmul(..., dim=0)` runs)
        a, b = (w, x.T) if columns else (x, w.T)
        epilogue = epilogue.transposed() if columns else epilogue
        out, prepared = mm.prepare(a, b, epilogue=epilogue, operands=ops)
        problem = mm.problem_of(a, b)
        the_plan = mm.plan(problem, epilogue=epilogue)
        config = the_plan.config.label
        # the plan on every fused tile (`REDUCE_WIDE_TILES`: 128 x 256 spills), where it differs
        wide = mm.choose(problem, tiles=mm.FUSED_TILES, swap=mm.SWAP_SPLIT_ONLY)
        wide = dataclasses.replace(wide, TAIL=1)
        out_wide, prepared_wide = (None, None)
        if wide != the_plan.config and wide.label != the_plan.config.label:
            out_wide, prepared_wide = mm.prepare(a, b, epilogue=epilogue, operands=ops, config=wide)

        def run_argus(prepared=prepared) -> None:
            for p in prepared:
                p.launch()

        def run_unfused(prepared=prepared_unfused, c=c_unfused, op=op) -> torch.Tensor:
            for p in prepared:
                p.launch()
            return reduced(torch, c, op)

        run_argus()
        outs = {"argus": out, "eager": eager(), "unfused": run_unfused()}
        if prepared_wide is not None:
            run_argus(prepared_wide)
            outs["wide"] = out_wide
        if compiled is not None:
            outs["compile"] = compiled()
        torch.cuda.synchronize()
        verdicts = {}
        for name, value in outs.items():
            cmp = compare(value, ref, tolerance_for(dtype), input_scale=input_scale([x, w]))
            err = float((value.double() - ref).abs().max() / ref.abs().max().clamp_min(1e-30))
            verdicts[name] = {"ok": cmp.ok, "code": cmp.code, "reason": cmp.reason, "rel_err": err}
        failed |= not verdicts["argus"]["ok"]
        launches = {"eager": eager, "unfused": run_unfused, "argus": run_argus}
        if compiled is not None:
            launches["compile"] = compiled
        if prepared_wide is not None:
            launches["wide"] = lambda prepared=prepared_wide: run_argus(prepared)
        times = interleaved_times(torch, launches, args.rounds, scratch)
        med = {name: statistics.median(v) for name, v in times.items()}
        row = {
            "label": label, "shape": [m, n, k], "dtype": dt, "reduce": op, "expression": expression,
            "config": config, "kernels": [kk.name for kk in the_plan.kernels()], "rounds": args.rounds,
            **{f"{kk}_ms": v for kk, v in med.items()},
            "x_eager": med["eager"] / med["argus"], "x_unfused": med["unfused"] / med["argus"],
            "x_compile": med["compile"] / med["argus"] if "compile" in med else None, "verdicts": verdicts,
            "wide_config": wide.label if prepared_wide is not None else None,
            "x_eager_wide": med["eager"] / med["wide"] if "wide" in med else None,
        }  # fmt: skip
        rows.append(row)
        ok = "/".join("ok" if verdicts[kk]["ok"] else "FAIL" for kk in verdicts)
        comp = med.get("compile", float("nan"))
        x_comp = comp / med["argus"]
        print(
            f"{label:<24} {f'{m}x{n}x{k}':>17} {dt:>4} {op:>9} {med['eager']:8.3f} {comp:8.3f} {med['unfused']:8.3f} "
            f"{med['argus']:8.3f} {row['x_eager']:7.2f} {x_comp:7.2f} {row['x_unfused']:6.2f}  {ok} {config} "
            f"err {verdicts['argus']['rel_err']:.1e}",
            flush=True,
        )
        if "wide" in med:
            wide_ok = "ok" if verdicts["wide"]["ok"] else "FAIL"
            print(f"{'':<24} wide {wide.label}: {med['wide']:8.3f} ms, x eager {row['x_eager_wide']:.2f}, "
                  f"x default {med['argus'] / med['wide']:.2f} ({wide_ok})")  # fmt: skip
        del out_wide, prepared_wide
        del out, prepared, prepared_unfused, c_unfused, outs, x, w
        torch.cuda.empty_cache()
    if args.json:
        args.json.write_text(json.dumps({"environment": environment(torch), "rows": rows}, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
