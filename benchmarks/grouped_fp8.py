"""The FP8 MoE grouped GEMM (`argus.kernels.moe.scaled_grouped_mm`, row-wise scales) against
``torch._scaled_grouped_mm``, interleaved (issues #20 and #23).

Usage (from the repository root on a GPU machine)::

    PYTHONPATH=src python benchmarks/grouped_fp8.py [--rounds 15] [--json F]

The shapes and routings of `grouped_sweep.py` (the up-projections of Mixtral, Qwen3-30B-A3B and DeepSeek-V3, two
more; balanced, Zipf-skewed, one expert taking 70 %; group sizes in multiples of 16, which torch requires). a (R, K)
and each expert's weight w (E, N, K) in float8_e4m3fn, b = w.transpose(1, 2); scale_a (R,), scale_b (E, N) f32; C in
bf16. Every contender is checked first against the per-expert f32 product of the same FP8 values and scales (largest
error over the largest |C|; argus's must be under 2e-2: it accumulates over all of K in the tensor core's FP8
accumulator, about 1e-2 at K = 14336), then each round flushes L2 and times one launch of each, the order
rotating. Contenders: ``torch._scaled_grouped_mm`` (default accumulation), argus (`prepare_scaled`'s FP8
configuration, and the other of `FP8_CONFIGS`), and the bf16 ``torch._grouped_mm`` of the same product as context.
TFLOP/s: 2 R K N.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path

try:
    import argus  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gemm_variants import environment  # noqa: E402
from grouped_sweep import ROUTINGS, SHAPES, group_sizes, interleaved  # noqa: E402

from argus.kernels import moe  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    for line in environment(torch):
        print(line)
    scratch = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    rows_out, wrong = [], False
    head = f"{'shape':<26} {'routing':<9} {'torch ms':>9} {'argus ms':>9} {'x torch':>7} {'TFLOP/s':>7}"
    print(head + "  err argus/torch")
    for label, experts, rows, k, n in SHAPES:
        g = torch.Generator(device="cuda").manual_seed(experts + rows + k + n)
        a = torch.randn(rows, k, device="cuda", generator=g).to(torch.float8_e4m3fn)
        w = torch.randn(experts, n, k, device="cuda", generator=g).to(torch.float8_e4m3fn)
        b = w.transpose(1, 2)
        scale_a = torch.rand(rows, device="cuda", generator=g) + 0.5
        scale_b = torch.rand(experts, n, device="cuda", generator=g) + 0.5
        a16, b16 = a.to(torch.bfloat16), b.to(torch.bfloat16)
        for routing in ROUTINGS:
            sizes = group_sizes(routing, experts, rows, 16)
            offs = torch.tensor(sizes, device="cuda").cumsum(0).to(torch.int32)
            ref = torch.empty(rows, n, device="cuda")
            start = 0
            for e, end in enumerate(offs.tolist()):
                ref[start:end] = (a[start:end].float() @ w[e].float().t()) * scale_a[start:end, None] * scale_b[e]
                start = end
            scale = float(ref.abs().max())
            launches = {
                "torch": lambda a=a, b=b, sa=scale_a, sb=scale_b, offs=offs: torch._scaled_grouped_mm(
                    a, b, sa, sb, offs=offs, out_dtype=torch.bfloat16
                ),
                "torch bf16": lambda a16=a16, b16=b16, offs=offs: torch._grouped_mm(a16, b16, offs=offs),
            }
            errs = {}
            try:
                errs["torch"] = float((launches["torch"]().float() - ref).abs().max()) / scale
            except Exception as err:  # noqa: BLE001 - reported, then timed without it
                print(f"  torch._scaled_grouped_mm: {type(err).__name__}: {str(err)[:200]}")
                del launches["torch"]
            chosen = None
            for bm, bn, bk, stages in moe.FP8_CONFIGS:
                config = {"BM": bm, "BN": bn, "BK": bk, "STAGES": stages, "GROUP": 8}
                name = f"argus {bm}x{bn}x{bk} s{stages}"
                c, launch = moe.prepare_scaled(a, b, scale_a, scale_b, offs, config=config)
                launch.launch()
                torch.cuda.synchronize()
                errs[name] = float((c.float() - ref).abs().max()) / scale
                if not errs[name] <= 2e-2:  # fast accumulation: about 1e-2 at K = 14336 (docs/moe.md)
                    wrong = True
                    print(f"  WRONG {name} {label} {routing}: {errs[name]}")
                    continue
                launches[name] = launch.launch
                default = moe.choose(rows, n, k, experts, "scaled")
                chosen = (
                    name if (bm, bn, bk, stages) == tuple(default[x] for x in ("BM", "BN", "BK", "STAGES")) else chosen
                )
            med = {name: statistics.median(v) for name, v in interleaved(torch, launches, args.rounds, scratch).items()}
            ours = med.get(chosen) if chosen else None
            base = med.get("torch")
            flops = 2 * rows * k * n
            row = {
                "shape": label,
                "E": experts,
                "R": rows,
                "K": k,
                "N": n,
                "routing": routing,
                "ms": med,
                "errors": errs,
                "argus": chosen,
                "ratio": base / ours if base and ours else None,
                "tflops": flops / ours / 1e9 if ours else None,
            }
            rows_out.append(row)
            print(
                f"{label:<26} {routing:<9} {base or float('nan'):9.4f} {ours or float('nan'):9.4f} "
                f"{row['ratio'] or float('nan'):7.3f} {row['tflops'] or float('nan'):7.0f}  "
                f"{errs.get(chosen, float('nan')):.1e}/{errs.get('torch', float('nan')):.1e}; "
                + ", ".join(f"{k2} {v:.4f}" for k2, v in med.items() if k2 not in ("torch", chosen)),
                flush=True,
            )
    named = [r for r in rows_out if r["ratio"] and "unnamed" not in r["shape"]]
    if named:
        gm = math.exp(statistics.fmean(math.log(r["ratio"]) for r in named))
        print(f"issue's shapes x routings: {len(named)} rows, geometric mean x torch._scaled_grouped_mm {gm:.3f}")
    if args.json:
        args.json.write_text(json.dumps({"environment": environment(torch), "rows": rows_out}, indent=1))
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
