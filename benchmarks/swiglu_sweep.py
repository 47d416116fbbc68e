"""The MoE up-projection with SwiGLU in its epilogue (`argus.kernels.grouped.grouped_gemm_swiglu`) against PyTorch's
``silu(h[:, :I]) * h[:, I:]`` after ``torch._grouped_mm``, interleaved (issue #23).

Usage (from the repository root on a GPU machine)::

    PYTHONPATH=src python benchmarks/swiglu_sweep.py [--rounds 15] [--json F]

Shapes: the issue's three grouped shapes are gate-and-up projections (N = 2I: Mixtral 2 x 14336, Qwen3-30B-A3B
2 x 768, DeepSeek-V3 2 x 2048); routings as in `grouped_sweep.py` (balanced, Zipf, one expert 70 %). Contenders:
``torch`` (``_grouped_mm`` then silu * mul, B row-major and B transposed from a contiguous (E, N, K), the faster
counted as the baseline), ``argus grouped + torch swiglu`` (the plain grouped kernel, then PyTorch's silu * mul) and
``argus swiglu`` (one launch; with ``--tma-store`` also with the other EPILOGUE: full tiles through TMA stores or
every tile from registers). Every contender is checked first against an f32 per-expert reference (relative max
error <= 2e-2; output poisoned with NaN first); the method of timing is `grouped_sweep.interleaved` (L2 flushed
before each launch, CUDA events, order rotated every round, medians). FLOPs: 2 R K N (the GEMM's).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
try:
    import argus  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from grouped_sweep import ROUTINGS, SHAPES, group_sizes, interleaved, reference, rel_err  # noqa: E402

from argus.kernels import moe  # noqa: E402


def main() -> int:
    import torch

    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--json")
    p.add_argument("--tma-store", action="store_true", help="also the SwiGLU kernel with the other EPILOGUE")
    args = p.parse_args()
    dev = torch.device("cuda")
    scratch = torch.empty(256 << 20, dtype=torch.uint8, device=dev)
    silu = torch.nn.functional.silu
    out_rows, failed = [], False
    print("| shape | routing | contender | ms | TFLOP/s | x torch (best B) | err |")
    print("|---|---|---|---|---|---|---|")
    for label, E, R, K, N in SHAPES[:3]:  # noqa: N806
        inter = N // 2
        torch.manual_seed(0)
        a = torch.randn(R, K, device=dev, dtype=torch.bfloat16)
        b = torch.randn(E, K, N, device=dev, dtype=torch.bfloat16) * K**-0.5
        bt = b.transpose(-2, -1).contiguous().transpose(-2, -1)
        for routing in ROUTINGS:
            sizes = group_sizes(routing, E, R, 16)
            offs = torch.tensor(sizes, dtype=torch.int64).cumsum(0).to(dev, torch.int32)
            full = reference(torch, a, b, offs)
            ref = silu(full[:, :inter]) * full[:, inter:]
            del full

            def torch_swiglu(bb, a=a, offs=offs, inter=inter):  # noqa: ANN001, ANN202
                h = torch._grouped_mm(a, bb, offs=offs)
                return silu(h[:, :inter]) * h[:, inter:]

            launches = {
                "torch (row-major B)": lambda b=b: torch_swiglu(b),
                "torch (B transposed)": lambda bt=bt: torch_swiglu(bt),
            }
            h_plain, plain = moe.prepare(a, b, offs)
            launches["argus grouped + torch swiglu"] = lambda h=h_plain, plain=plain, inter=inter: (
                plain.launch(),
                silu(h[:, :inter]) * h[:, inter:],
            )[1]
            c = torch.full((R, inter), float("nan"), dtype=torch.bfloat16, device=dev)
            c, fused = moe.prepare(a, b, offs, out=c, epilogue="swiglu")
            launches["argus swiglu"] = fused.launch
            outputs = {"argus swiglu": c}
            if args.tma_store:  # the other store of the SwiGLU kernel's choice
                config = moe.choose(R, inter, K, E, "swiglu")
                other = "direct" if config.get("EPILOGUE", "direct") == "tma" else "tma"
                c2 = torch.full((R, inter), float("nan"), dtype=torch.bfloat16, device=dev)
                c2, fused2 = moe.prepare(a, b, offs, out=c2, epilogue="swiglu", config=config | {"EPILOGUE": other})
                launches[f"argus swiglu {other}"] = fused2.launch
                outputs[f"argus swiglu {other}"] = c2
            errs = {}
            for name, fn in launches.items():
                got = fn()
                torch.cuda.synchronize()
                errs[name] = rel_err(torch, outputs.get(name, got), ref, R)
            times = interleaved(torch, launches, args.rounds, scratch)
            med = {n: statistics.median(t) for n, t in times.items()}
            base = min(med["torch (row-major B)"], med["torch (B transposed)"])
            flops = 2.0 * R * K * N
            for name in launches:
                ok = errs[name] <= 2e-2
                failed |= not ok and name.startswith("argus")
                row = dict(
                    shape=label, E=E, R=R, K=K, N=N, routing=routing, contender=name, ms=med[name],
                    tflops=flops / med[name] / 1e9, x_best=base / med[name], err=errs[name],
                )  # fmt: skip
                out_rows.append(row)
                print(
                    f"| {label} E={E} R={R} K={K} N=2x{inter} | {routing} | {name} | {med[name]:.3f} | "
                    f"{row['tflops']:.0f} | {row['x_best']:.3f} | {errs[name]:.1e}{'' if ok else ' WRONG'} |",
                    flush=True,
                )
            del launches, plain, fused, h_plain, c, ref, outputs
            torch.cuda.empty_cache()
        del a, b, bt
        torch.cuda.empty_cache()
    if args.json:
        env = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "cuda": torch.version.cuda}
        Path(args.json).write_text(json.dumps({"env": env, "argv": sys.argv, "rows": out_rows}, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
