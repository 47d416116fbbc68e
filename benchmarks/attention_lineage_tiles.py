"""The attention lineage's upper rungs at several parameter sets (issue #22): each variant's output checked against
SDPA's math backend in f32, then every variant and SDPA's cuDNN and flash backends timed interleaved (L2 flushed,
CUDA events, rotating order: `gemm_parity.interleaved_times`). `argus bench RUNG` measures a rung at its defaults;
this measures the parameters a rung's defaults are chosen from (tiles, blocks per SM, register budgets).

Usage (from the repository root on a GPU machine)::

    PYTHONPATH=src python benchmarks/attention_lineage_tiles.py [--shapes BH,S ...] [--rounds 15] [--json F]
        [--variants "attention_warp_specialized:BLOCKS_PER_SM=2,BM=128" ...] [--lineage] [--d 128]

``--lineage`` times every rung of the lineage (`argus.kernels.registry.lineage("attention")`, naive to the
intra-warpgroup overlap) at its registered parameters: the lineage table of issue #22 (``--d 128 --shapes 16,4096``).
A variant names a rung's kernel or a registered rung (its parameters first, then the variant's).

Inputs: bf16 Q, K, V (BH, S, D) drawn from N(0, 1) (D = 64 unless --d), O in f32 (the lineage's problem).
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

#: rung:params, params comma-separated NAME=INT
VARIANTS = [
    "attention_tma_wgmma:",
    "attention_tma_wgmma:BM=128",
    "attention_warp_specialized:",
    "attention_warp_specialized:BLOCKS_PER_SM=2",
    "attention_warp_specialized:BLOCKS_PER_SM=3",
    "attention_warp_specialized:BM=128",
    "attention_warp_specialized:BM=128,STAGES=3",
]

SHAPES = [(16, 2048), (32, 4096), (8, 8192)]


def parse_variant(text: str) -> tuple[str, dict[str, int]]:
    name, _, rest = text.partition(":")
    params = {}
    for item in filter(None, rest.split(",")):
        key, _, value = item.partition("=")
        params[key.strip()] = int(value)
    return name.strip(), params


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shapes", nargs="*", default=None, help="BH,S ...")
    parser.add_argument("--d", type=int, default=64, help="head dim (every variant is traced with it)")
    parser.add_argument("--variants", nargs="*", default=None)
    parser.add_argument("--lineage", action="store_true", help="every rung of the lineage at its registry parameters")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    shapes = [tuple(int(v) for v in s.split(",")) for s in args.shapes] if args.shapes else SHAPES
    variants = [parse_variant(v) for v in (args.variants or ([] if args.lineage else VARIANTS))]
    if args.lineage:
        from argus.kernels.registry import lineage

        variants = [(step.kernel, {}) for step in lineage("attention")] + variants

    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.functional import scaled_dot_product_attention as sdpa

    from argus.backend.cuda.codegen import compile_kernel
    from argus.kernels import attention_lineage
    from argus.runtime import load

    for line in environment(torch):
        print(line)
    loaded = {}
    from argus.kernels.registry import all_kernels, get_kernel

    registered = {e.name for e in all_kernels()}
    for name, extra in variants:
        if name in registered:  # a registered rung: its kernel at its parameters, then the variant's
            entry = get_kernel(name)
            kernel, params = entry.kernel, {**entry.params, **extra}
        else:
            kernel, params = getattr(attention_lineage, name), extra
        compiled = compile_kernel(kernel.trace(**{"D": args.d, **params}))
        label = name + ("{" + ",".join(f"{k}={v}" for k, v in extra.items()) + "}" if extra else "")
        loaded[label] = load(compiled)
        print(f"compiled {label}", flush=True)  # (registers and spills: `argus compile`, where cuobjdump is)
    scratch = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    rows = []
    for bh, s in shapes:
        d = args.d
        g = torch.Generator(device="cuda").manual_seed(bh * 7 + s)
        q, k, v = (torch.randn(bh, s, d, device="cuda", generator=g).to(torch.bfloat16) for _ in range(3))
        with sdpa_kernel(SDPBackend.MATH):
            ref = sdpa(q.float(), k.float(), v.float())
        launches, errors, keep = {}, {}, []
        for label, module in loaded.items():
            o = torch.full((bh, s, d), float("nan"), device="cuda")
            launch = module.prepare(q, k, v, o)
            launch.launch()
            torch.cuda.synchronize()
            errors[label] = float((o - ref).abs().max() / ref.abs().max())
            keep.append((o, launch))
            launches[label] = launch.launch
        for backend, key in ((SDPBackend.CUDNN_ATTENTION, "sdpa-cudnn"), (SDPBackend.FLASH_ATTENTION, "sdpa-flash")):

            def run(backend=backend, qkv=(q[None], k[None], v[None])) -> None:  # noqa: ANN001 - 4-d for SDPA
                with sdpa_kernel(backend):
                    sdpa(*qkv)

            launches[key] = run
        times = interleaved_times(torch, launches, args.rounds, scratch)
        med = {name: statistics.median(t) for name, t in times.items()}
        flops = 4 * bh * s * s * d
        print(f"BH={bh} S={s} D={d}: sdpa-cudnn {med['sdpa-cudnn']:.4f} ms, sdpa-flash {med['sdpa-flash']:.4f} ms")
        for label in loaded:
            print(
                f"  {label:<58} {med[label]:8.4f} ms {flops / med[label] / 1e9:7.1f} TFLOP/s  "
                f"x cuDNN {med['sdpa-cudnn'] / med[label]:.3f}  x flash {med['sdpa-flash'] / med[label]:.3f}  "
                f"rel. err {errors[label]:.1e}",
                flush=True,
            )
        rows.append({"BH": bh, "S": s, "D": d, "rounds": args.rounds, "ms": med, "errors": errors})
        del keep, launches, q, k, v, ref
        torch.cuda.empty_cache()
    if args.json:
        args.json.write_text(json.dumps({"environment": environment(torch), "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
