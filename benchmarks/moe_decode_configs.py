"""The grouped GEMMs at MoE decode sizes (issue #23): which tile configuration streams the touched experts' weights
fastest when each expert has a few routed rows. For each shape and token count, the up-projection
(`grouped_swiglu` on the fused (E, H, 2I) weight) and the down-projection (`grouped_mm` on (E, I, H)) under each
configuration of `CONFIGS`, against ``torch._grouped_mm`` on the same rows, interleaved in one process, L2 flushed
before every launch (`gemm_parity.interleaved_times`), medians; each checked first against ``torch._grouped_mm``
(relative max error <= 2e-2). "% HBM" is the touched experts' weight bytes over the median time, of the GPU's HBM
bandwidth (an H200's 4.8 TB/s, an H100 SXM's 3.35).

Usage (from the repository root on a GPU machine)::

    PYTHONPATH=src python benchmarks/moe_decode_configs.py [--rounds 15] [--tokens 1 16 64 256] [--json F]
        [--shapes Mixtral ...] [--config BMxBNxBK:STAGES[:EPILOGUE][:sSPLITS] ...] [--products up down]

``--config`` (repeatable) times the given configurations (one consumer warpgroup, GROUP 8) beside the chosen one
instead of `CONFIGS`' two; ``:s2`` splits K two ways: the down-projection's f32 slices, whose sum is checked (the sum
itself, which the layer's combine makes, is not timed), and for the up-projection the plain product of the
gate-and-up weight split so, then `moe_glu_sum` (the slices' sum and SwiGLU: both launches timed together, as the
layer runs them). "chosen" is `moe.choose`'s configuration (the fused SwiGLU kernel for the up-projection); "layer"
is what `moe.moe_layer` launches (`decode_plan`, `decode_up_split`).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from types import SimpleNamespace

try:
    import argus  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gemm_parity import interleaved_times  # noqa: E402

HBM = {"H100": 3.35e12, "H200": 4.8e12}
SHAPES = (("Mixtral", 4096, 14336, 8, 2), ("Qwen3-30B-A3B", 2048, 768, 128, 8), ("DeepSeek-V3", 7168, 2048, 256, 8))
CONFIGS = {  # label -> grouped kernel parameters (None: `moe.choose`'s; "layer": `moe.moe_layer`'s)
    "chosen": None,
    "layer": "layer",
    "64x128 s8": {"BM": 64, "BN": 128, "BK": 64, "STAGES": 8, "CONSUMERS": 1, "GROUP": 8},
    "64x64 s8": {"BM": 64, "BN": 64, "BK": 64, "STAGES": 8, "CONSUMERS": 1, "GROUP": 8},
}


def main() -> int:
    import torch

    from argus.kernels import moe

    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--tokens", type=int, nargs="+", default=[1, 16, 64, 256])
    p.add_argument("--json")
    p.add_argument("--shapes", nargs="+", default=[s[0] for s in SHAPES])
    p.add_argument("--config", action="append", default=[], help="BMxBNxBK:STAGES[:EPILOGUE], e.g. 64x128x64:5:tma")
    p.add_argument("--products", nargs="+", default=["up", "down"], choices=["up", "down"])
    args = p.parse_args()
    configs = dict(CONFIGS) if not args.config else {"chosen": None, "layer": "layer"}
    for text in args.config:
        tile, stages, *rest = text.split(":")
        bm, bn, bk = (int(v) for v in tile.split("x"))
        configs[text] = {"BM": bm, "BN": bn, "BK": bk, "STAGES": int(stages), "CONSUMERS": 1, "GROUP": 8}
        for extra in rest:
            if extra.startswith("s") and extra[1:].isdigit():
                configs[text]["SPLITS"] = int(extra[1:])
            else:
                configs[text]["EPILOGUE"] = extra
    dev = torch.device("cuda")
    scratch = torch.empty(256 << 20, dtype=torch.uint8, device=dev)
    print(torch.cuda.get_device_name(), torch.__version__)
    hbm = next((v for k, v in HBM.items() if k in torch.cuda.get_device_name()), HBM["H200"])
    print("| shape | T | touched | product | " + " | ".join(f"{c} µs / %HBM" for c in configs) + " | torch µs / %HBM |")
    print("|---|---|---|---|" + "---|" * (len(configs) + 1))
    rows_out, failed = [], False
    for label, hidden, inter, experts, top_k in SHAPES:
        if label not in args.shapes:
            continue
        torch.manual_seed(0)
        w1 = (torch.randn(experts, hidden, 2 * inter, device=dev) * hidden**-0.5).to(torch.bfloat16)
        w2 = (torch.randn(experts, inter, hidden, device=dev) * inter**-0.5).to(torch.bfloat16)
        for tokens in args.tokens:
            g = torch.Generator().manual_seed(tokens)
            chosen = torch.stack([torch.randperm(experts, generator=g)[:top_k] for _ in range(tokens)])
            counts = torch.bincount(chosen.reshape(-1), minlength=experts)
            offs = counts.cumsum(0).to(torch.int32).to(dev)
            touched = int((counts > 0).sum())
            rows = tokens * top_k
            for product, w, k, n in (("up+SwiGLU", w1, hidden, 2 * inter), ("down", w2, inter, hidden)):
                if product.split("+")[0] not in args.products:
                    continue
                a = torch.randn(rows, k, device=dev).to(torch.bfloat16)
                ref = torch._grouped_mm(a, w, offs=offs)
                if product == "up+SwiGLU":
                    ref = torch.nn.functional.silu(ref[:, :inter].float()) * ref[:, inter:].float()
                launches, keep = {}, []
                scale = torch.ones(rows, dtype=torch.float32, device=dev)
                for name, config in configs.items():
                    if config == "layer":
                        if product == "down":
                            config = moe.decode_plan(rows, n, k, experts)
                        else:
                            config = moe.decode_up_split(rows, inter, hidden, experts)
                    try:
                        if product == "up+SwiGLU" and config and config.get("SPLITS", 1) > 1:
                            slices, first = moe.prepare(a, w, offs, config=config)
                            c, second = moe.prepare_glu_sum(slices, scale)
                            launch = SimpleNamespace(launch=lambda f=first, s=second: (f.launch(), s.launch()))
                            keep.append((slices, first, second))
                        elif product == "up+SwiGLU":
                            c, launch = moe.prepare(a, w, offs, config=config, epilogue="swiglu")
                        else:
                            c, launch = moe.prepare(a, w, offs, config=config)
                        launch.launch()
                        torch.cuda.synchronize()
                        c = c.sum(0) if c.dim() == 3 else c  # split-K's slices
                        err = float((c.float() - ref.float()).abs().max() / ref.float().abs().max())
                        if err > 2e-2:
                            print(f"| {label} | {tokens} | {product} | {name} WRONG: {err:.2e} |")
                            failed = True
                            continue
                        launches[name] = launch.launch
                        keep.append((c, launch))
                    except Exception as e:  # noqa: BLE001 - a configuration that fails is reported
                        print(f"| {label} | {tokens} | {product} | {name} failed: {type(e).__name__}: {e} |")
                        failed = True
                launches["torch"] = lambda a=a, w=w, offs=offs: torch._grouped_mm(a, w, offs=offs)
                times = interleaved_times(torch, launches, args.rounds, scratch)
                med = {nm: statistics.median(t) for nm, t in times.items()}
                weight_bytes = touched * k * n * 2
                cells = []
                for name in [*configs, "torch"]:
                    if name in med:
                        cells.append(f"{med[name] * 1e3:.1f} / {100 * weight_bytes / (med[name] * 1e-3) / hbm:.0f}")
                    else:
                        cells.append("—")
                print(f"| {label} | {tokens} | {touched} | {product} | {' | '.join(cells)} |", flush=True)
                rows_out.append(
                    {"shape": label, "T": tokens, "touched": touched, "product": product, "ms": med,
                     "weight_bytes": weight_bytes}
                )  # fmt: skip
                del keep, launches
        del w1, w2
        torch.cuda.empty_cache()
    if args.json:
        Path(args.json).write_text(json.dumps(rows_out, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
