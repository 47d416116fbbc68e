"""FP8 GEMM (issue #20): `argus.kernels.matmul.scaled_mm` against ``torch._scaled_mm`` (cuBLAS), interleaved.

Usage (from the repository root on a GPU machine)::

    PYTHONPATH=src python benchmarks/gemm_fp8.py [--sweep 4] [--scaling tensor|row] [--json F] [--shapes M,N,K ...]

For every shape: a (M, K) float8_e4m3fn row-major and w (N, K) float8_e4m3fn row-major (an nn.Linear weight), both
drawn normal and cast; C = (a @ w.T) * scale_a * scale_b in bf16, the scales f32 (one element each with
``--scaling tensor``; one per row of a and one per column of w with ``--scaling row``). Contenders:

* ``torch``: ``torch._scaled_mm(a, w.t(), scale_a, scale_b, out_dtype=bf16)`` (cuBLAS; ``use_fast_accum=False``,
  its default: the FP8 products are promoted into an f32 sum at intervals);
* ``torch fast``: the same with ``use_fast_accum=True`` (the products accumulate in the tensor core's accumulator over
  all of K, as argus's do);
* ``heuristic``: argus's configuration (`argus.kernels.matmul.choose`), prepared launches (the host's per-call
  cost is not in the time; a split-K configuration is both its kernels);
* the `--sweep` configurations the model ranks next.

Every contender is first checked against the f32 product of the same FP8 values (``torch.matmul`` on the widened
tensors, TF32 off): its largest error over the largest |C|; the script exits 1 when argus's exceeds both 1e-2 (C is
bf16: 2^-9 of rounding, plus the accumulation) and 1.25 times the error of ``torch fast`` (which accumulates as argus
does: its error grows with K, past 1e-2 at K = 28672). Then all are timed with `gemm_parity.interleaved_times`
(each round flushes L2 and times one launch of each with CUDA events, the order rotating; the median over the
rounds).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path

try:
    import argus  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gemm_parity import interleaved_times  # noqa: E402
from gemm_variants import environment  # noqa: E402

#: The issue's FP8 rows (4096^3, 8192^3, two LLM shapes: Llama-3-70B's MLP at 8192 tokens, up and down), then shapes
#: nobody tuned for: prefill and decode sizes of other models, a small-M and a long-K product.
ISSUE = [(4096, 4096, 4096), (8192, 8192, 8192), (8192, 28672, 8192), (8192, 8192, 28672)]
HELDOUT = [(4096, 7168, 2048), (2048, 4096, 14336), (16384, 1536, 7168), (128, 8192, 8192), (16, 14336, 4096),
           (1024, 1024, 16384), (3008, 5008, 4000)]  # fmt: skip


def _compile(job: tuple) -> tuple[tuple, str | None]:
    """Trace and compile the kernels of one plan (problem, configuration, epilogue) into the on-disk cache, in a
    pool worker: the kernels `argus.kernels.matmul.prepare` then loads."""
    problem, config, epilogue = job
    try:
        from argus.backend.cuda.codegen import compile_kernel
        from argus.kernels import matmul as mm

        plan = mm.plan(problem, config, epilogue=epilogue)
        for kernel in (plan.main_kernel(), plan.reduce_kernel()):
            if kernel is not None:
                compile_kernel(kernel)
        return job, None
    except Exception as err:  # noqa: BLE001 - reported per plan
        return job, f"{type(err).__name__}: {err}"


def _scales(torch, m: int, n: int, scaling: str):  # noqa: ANN001, ANN202
    if scaling == "tensor":
        return torch.tensor(0.5, device="cuda"), torch.tensor(0.25, device="cuda")
    g = torch.Generator(device="cuda").manual_seed(m + n)
    return (
        torch.rand(m, 1, device="cuda", generator=g) + 0.5,
        torch.rand(1, n, device="cuda", generator=g) + 0.5,
    )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sweep", type=int, default=4, help="configurations timed besides the heuristic's")
    parser.add_argument("--groups", type=int, nargs="*", default=[], help="GROUP values also timed on the heuristic's")
    parser.add_argument(
        "--block-configs", nargs="*", default=[], help="with --scaling block: BM,CONSUMERS,STAGES,GROUP also timed"
    )
    parser.add_argument("--scaling", default="tensor", choices=["tensor", "row", "block"])
    parser.add_argument("--budget", type=float, default=0.6, help="seconds of timed launches per shape (rounds)")
    parser.add_argument("--workers", type=int, default=16)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--shapes", nargs="*", help="M,N,K instead of the suites")
    parser.add_argument(
        "--cluster",
        action="store_true",
        help="also time the heuristic's configuration in 2-block clusters sharing B (`GemmConfig.CLUSTER`), where the "
        "kernel can run it (`matmul.cluster_refusal`)",
    )
    args = parser.parse_args()

    import torch

    from argus.atoms.target import DEFAULT_TARGET
    from argus.kernels import matmul as mm

    torch.backends.cuda.matmul.allow_tf32 = False
    for line in environment(torch):
        print(line)
    rows_in = [(*(int(x) for x in s.split(",")), "cli") for s in args.shapes or []]
    if not rows_in:
        rows_in = [(*s, "issue") for s in ISSUE] + [(*s, "heldout") for s in HELDOUT]
    if args.scaling == "block":
        return block_scaled(torch, mm, rows_in, args)

    plans = []
    for m, n, k, suite in rows_in:
        problem = mm.GemmProblem(m, n, k, "e4m3", "bf16")
        chosen = mm.choose(problem)
        ranked = sorted(mm.candidates(mm.padded_extent(problem)), key=lambda c: mm.estimate(problem, c))
        others = [c for c in ranked if c != chosen][: args.sweep]
        regrouped = [(f"{chosen.label} g{g}", replace(chosen, GROUP=g)) for g in args.groups if g != chosen.GROUP]
        twin = replace(chosen, CLUSTER=2)
        if args.cluster and chosen.CLUSTER == 1 and mm.cluster_refusal(problem, twin) is None:
            regrouped.append((twin.label, twin))
        plans.append((problem, suite, [("heuristic", chosen), *regrouped] + [(c.label, c) for c in others]))

    jobs = set()
    for problem, _, configs in plans:
        sa, sb = _scales(torch, problem.M, problem.N, args.scaling)
        a0 = torch.empty(problem.M, problem.K, device="cuda", dtype=torch.float8_e4m3fn)
        w0 = torch.empty(problem.N, problem.K, device="cuda", dtype=torch.float8_e4m3fn)
        epilogue, _ = mm.scaled_operands(a0, w0.t(), sa, sb)
        for _, c in configs:
            jobs.add((problem, c, epilogue))
    t0 = time.time()
    with ProcessPoolExecutor(args.workers) as pool:
        failed = [(job, err) for job, err in pool.map(_compile, sorted(jobs, key=repr)) if err]
    for job, err in failed:
        print(f"compile failed: {job[0]} {job[1].label}: {err[:300]}")
    print(f"compiled {len(jobs)} kernels in {time.time() - t0:.0f} s ({len(failed)} failed)")

    scratch = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    out_rows, wrong = [], False
    print(
        f"{'shape':>20} {'torch ms':>9} {'fast ms':>9} {'argus ms':>9} {'x torch':>7} {'x fast':>7} {'best x':>7} "
        f"{'TFLOP/s':>7}  err argus/torch/fast  heuristic / best"
    )
    for problem, suite, configs in plans:
        m, n, k = problem.M, problem.N, problem.K
        g = torch.Generator(device="cuda").manual_seed(m + 3 * n + 7 * k)
        a = torch.randn(m, k, device="cuda", generator=g).to(torch.float8_e4m3fn)
        w = torch.randn(n, k, device="cuda", generator=g).to(torch.float8_e4m3fn)
        sa, sb = _scales(torch, m, n, args.scaling)
        ref = (a.float() @ w.float().t()) * sa * sb
        scale = float(ref.abs().max())
        launches = {
            "torch": lambda a=a, w=w, sa=sa, sb=sb: torch._scaled_mm(a, w.t(), sa, sb, out_dtype=torch.bfloat16),
            "torch fast": lambda a=a, w=w, sa=sa, sb=sb: torch._scaled_mm(
                a, w.t(), sa, sb, out_dtype=torch.bfloat16, use_fast_accum=True
            ),
        }
        errs, params_of = {}, {}
        for name, fn in list(launches.items()):
            try:
                errs[name] = float((fn().float() - ref).abs().max()) / scale
            except Exception as err:  # noqa: BLE001 - torch refuses some scalings
                print(f"  {name}: {type(err).__name__}: {str(err)[:200]}")
                del launches[name]
        epilogue, tensors = mm.scaled_operands(a, w.t(), sa, sb)
        for label, config in configs:
            try:
                c, prepared = mm.prepare(a, w.t(), config=config, epilogue=epilogue, operands=tensors)
            except Exception as err:  # noqa: BLE001 - reported per contender
                print(f"  {label}: {type(err).__name__}: {str(err)[:300]}")
                wrong |= label == "heuristic"
                continue
            for p in prepared:
                p.launch()
            torch.cuda.synchronize()
            err = float((c.float() - ref).abs().max()) / scale
            errs[label] = err
            if not err <= max(1e-2, 1.25 * errs.get("torch fast", 0.0)):
                wrong = True
                print(f"  WRONG {label} at {m}x{n}x{k}: relative error {err}")
                continue
            params_of[label] = config
            launches[label] = lambda prepared=prepared: [p.launch() for p in prepared]
        t = time.time()
        for fn in launches.values():
            fn()
        torch.cuda.synchronize()
        rounds = int(min(200, max(10, args.budget / max(time.time() - t, 1e-5))))
        times = interleaved_times(torch, launches, rounds, scratch)
        med = {name: statistics.median(v) for name, v in times.items()}
        ours = {name: v for name, v in med.items() if name in params_of}
        best = min(ours, key=ours.get) if ours else None
        heur = ours.get("heuristic")
        base, fast = med.get("torch"), med.get("torch fast")
        row = {
            "shape": [m, n, k],
            "suite": suite,
            "scaling": args.scaling,
            "rounds": rounds,
            "torch_ms": base,
            "torch_fast_ms": fast,
            "heuristic": params_of["heuristic"].label if "heuristic" in params_of else None,
            "heuristic_ms": heur,
            "ratio": base / heur if heur and base else None,
            "ratio_fast": fast / heur if heur and fast else None,
            "best": (params_of[best].label if best == "heuristic" else best) if best else None,
            "best_ratio": base / ours[best] if best and base else None,
            "tflops": problem.flops / heur / 1e9 if heur else None,
            "errors": errs,
            "contenders": {
                name: {
                    "ms": v,
                    "estimate_ms": mm.estimate(problem, params_of[name]) * 1e3 if name in params_of else None,
                }
                for name, v in med.items()
            },
        }
        out_rows.append(row)

        def f(x: float | None, spec: str = ".3f") -> str:
            return format(x, spec) if x is not None else "-"

        print(
            f"{m}x{n}x{k:<8} {f(base, '9.4f')} {f(fast, '9.4f')} {f(heur, '9.4f')} {f(row['ratio']):>7} "
            f"{f(row['ratio_fast']):>7} {f(row['best_ratio']):>7} {f(row['tflops'], '7.0f')}  "
            f"{errs.get('heuristic', float('nan')):.1e}/{errs.get('torch', float('nan')):.1e}/"
            f"{errs.get('torch fast', float('nan')):.1e}  {row['heuristic']} / {row['best']}",
            flush=True,
        )
    for suite_name in ("issue", "heldout", "cli"):
        sel = [r for r in out_rows if r["suite"] == suite_name and r["ratio"]]
        if sel:
            gm = math.exp(statistics.fmean(math.log(r["ratio"]) for r in sel))
            gf = math.exp(statistics.fmean(math.log(r["ratio_fast"]) for r in sel if r["ratio_fast"]))
            gb = math.exp(statistics.fmean(math.log(r["best_ratio"]) for r in sel))
            print(
                f"{suite_name}: {len(sel)} shapes, geometric mean x torch._scaled_mm: heuristic {gm:.3f} "
                f"(x fast accumulation {gf:.3f}), best of sweep {gb:.3f}; lowest {min(r['ratio'] for r in sel):.3f}"
            )
    if args.json:
        args.json.write_text(
            json.dumps({"environment": environment(torch), "target": DEFAULT_TARGET.name, "rows": out_rows}, indent=1)
        )
    return 1 if wrong else 0


def _torch_block(torch, a, w, scale_a, scale_b):  # noqa: ANN001, ANN202
    """torch's block-wise ``_scaled_mm`` (1x128 for a, 128x128 for w) where this torch and cuBLAS have it, else None."""
    try:
        out = torch._scaled_mm(a, w.t(), scale_a, scale_b, out_dtype=torch.bfloat16)
        return lambda: torch._scaled_mm(a, w.t(), scale_a, scale_b, out_dtype=torch.bfloat16), out
    except Exception as err:  # noqa: BLE001 - reported once per shape
        print(f"  torch block-wise _scaled_mm: {type(err).__name__}: {str(err)[:160]}")
        return None, None


def block_scaled(torch, mm, rows_in, args) -> int:  # noqa: ANN001
    """``--scaling block``: `argus.kernels.matmul.block_scaled_mm` (the scales copied into the kernel's layout and the
    kernel, both timed) against torch's block-wise ``_scaled_mm`` where it runs, and against the per-tensor
    ``torch._scaled_mm`` of the same operands (default and fast accumulation) as the speed of a product without
    block scales. Errors against the f32 product of the dequantized operands."""
    scratch = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    rows, wrong = [], False
    print(f"{'shape':>20} {'argus ms':>9} {'TFLOP/s':>7} {'x torch-block':>13} {'x tensor':>8} {'x fast':>7}  err")
    for m, n, k, suite in rows_in:
        g = torch.Generator(device="cuda").manual_seed(m + 3 * n + 7 * k)
        a = torch.randn(m, k, device="cuda", generator=g).to(torch.float8_e4m3fn)
        w = torch.randn(n, k, device="cuda", generator=g).to(torch.float8_e4m3fn)
        kb, nb = -(-k // 128), -(-n // 128)
        scale_a = (torch.rand(kb, m, device="cuda", generator=g) + 0.5).t()  # (M, KB) column-major, as torch takes it
        scale_b = torch.rand(kb, nb, device="cuda", generator=g) + 0.5
        a_deq = a.float() * scale_a.repeat_interleave(128, dim=1)[:, :k]
        w_deq = w.float() * scale_b.t().repeat_interleave(128, dim=0)[:n].repeat_interleave(128, dim=1)[:, :k]
        ref = a_deq @ w_deq.t()
        del a_deq, w_deq
        scale = float(ref.abs().max())
        one = torch.tensor(1.0, device="cuda")
        launches = {
            "torch tensor": lambda a=a, w=w, one=one: torch._scaled_mm(a, w.t(), one, one, out_dtype=torch.bfloat16),
            "torch fast": lambda a=a, w=w, one=one: torch._scaled_mm(
                a, w.t(), one, one, out_dtype=torch.bfloat16, use_fast_accum=True
            ),
        }
        errs = {}
        fn, out = _torch_block(torch, a, w, scale_a, scale_b)
        if fn is not None:
            launches["torch block"] = fn
            errs["torch block"] = float((out.float() - ref).abs().max()) / scale
        configs = [("argus", mm.block_scaled_config(m, n))]
        for text in args.block_configs:
            bm, consumers, stages, group = (int(x) for x in text.split(","))
            config = mm.BlockScaledConfig(bm, consumers, stages, group)
            if config != configs[0][1] and bm <= max(64, -(-m // 64) * 64):
                configs.append((config.label, config))
        for label, config in configs:
            c, prepared = mm.prepare_block_scaled(a, w.t(), scale_a, scale_b, config=config)
            for p in prepared:
                p.launch()
            torch.cuda.synchronize()
            errs[label] = float((c.float() - ref).abs().max()) / scale
            if not errs[label] <= 8e-3:
                wrong = True
                print(f"  WRONG {label} block-scaled at {m}x{n}x{k}: relative error {errs[label]}")
            else:
                launches[label] = lambda prepared=prepared: [p.launch() for p in prepared]
        t = time.time()
        for f in launches.values():
            f()
        torch.cuda.synchronize()
        rounds = int(min(200, max(10, args.budget / max(time.time() - t, 1e-5))))
        med = {name: statistics.median(v) for name, v in interleaved_times(torch, launches, rounds, scratch).items()}
        ours = med.get("argus")
        baselines = ("argus", "torch tensor", "torch fast", "torch block")
        others = {name: t for name, t in med.items() if name not in baselines}
        row = {
            "shape": [m, n, k],
            "suite": suite,
            "scaling": "block",
            "config": mm.block_scaled_config(m, n).label,
            "rounds": rounds,
            "ms": med,
            "errors": errs,
            "tflops": 2 * m * n * k / ours / 1e9 if ours else None,
            "ratio_block": med["torch block"] / ours if ours and "torch block" in med else None,
            "ratio_tensor": med["torch tensor"] / ours if ours else None,
            "ratio_fast": med["torch fast"] / ours if ours else None,
            "others": {name: {"ms": t, "ratio_tensor": med["torch tensor"] / t} for name, t in others.items()},
        }
        rows.append(row)

        def f(x: float | None, spec: str = ".3f") -> str:
            return format(x, spec) if x is not None else "-"

        print(
            f"{m}x{n}x{k:<8} {f(ours, '9.4f')} {f(row['tflops'], '7.0f')} {f(row['ratio_block']):>13} "
            f"{f(row['ratio_tensor']):>8} {f(row['ratio_fast']):>7}  argus {errs['argus']:.1e}"
            + (f" torch-block {errs['torch block']:.1e}" if "torch block" in errs else "")
            + "".join(f"; {name} x tensor {v['ratio_tensor']:.3f}" for name, v in row["others"].items()),
            flush=True,
        )
    sel = [r for r in rows if r["ratio_tensor"]]
    if sel:
        gm = math.exp(statistics.fmean(math.log(r["ratio_tensor"]) for r in sel))
        gb = [r["ratio_block"] for r in sel if r["ratio_block"]]
        print(
            f"block-scaled: {len(sel)} shapes, geometric mean x per-tensor torch._scaled_mm {gm:.3f}"
            + (f", x torch block-wise {math.exp(statistics.fmean(math.log(x) for x in gb)):.3f}" if gb else "")
        )
    if args.json:
        args.json.write_text(json.dumps({"environment": environment(torch), "rows": rows}, indent=1))
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
