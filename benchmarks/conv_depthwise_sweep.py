"""Depthwise convolution (issue #21): the direct kernel (`argus.kernels.conv_kernels.conv_depthwise`, through
`argus.kernels.conv.LibraryConv`) against torch's `conv2d` (cuDNN, NCHW, PyTorch's defaults), interleaved in one
process, L2 flushed before every launch, CUDA events (`gemm_parity.interleaved_times`). A call of ours includes its
host work, as a user's call does.

    PYTHONPATH=src python benchmarks/conv_depthwise_sweep.py [--rounds 10] [--json F] [--variants]

Rows: KernelBench level 1's depthwise problems 82-85 at their own sizes (f32), and the depthwise layers of
MobileNetV2 (3x3, stride 1 and 2), EfficientNet (5x5) and ConvNeXt (7x7) at batch 32 in bf16 and f32. Every output
is checked against torch's conv2d in float64 on the GPU first (relative max error: bf16 2e-2, f32 1e-5: the kernel
computes in f32 on the CUDA cores). `--variants` also times other tiles (CB, BH, BW) of the kernel itself on each
row (the launch alone, without LibraryConv's host work), to see what the default tile leaves.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import replace
from pathlib import Path

try:
    import argus  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gemm_parity import interleaved_times  # noqa: E402
from gemm_variants import environment  # noqa: E402

#: (label, N, C, H, W, (KH, KW), stride, padding, dtype)
ROWS = [
    ("KB82 3x3 C64 512x512", 16, 64, 512, 512, (3, 3), 1, 0, "f32"),
    ("KB83 3x1 C8 512x512", 64, 8, 512, 512, (3, 1), 1, 0, "f32"),
    ("KB84 3x3 C128 256x512", 64, 128, 256, 512, (3, 3), 1, 0, "f32"),
    ("KB85 3x7 C128 128x256", 32, 128, 128, 256, (3, 7), 1, 0, "f32"),
    ("MobileNetV2 3x3 C144 56x56", 32, 144, 56, 56, (3, 3), 1, 1, "bf16"),
    ("MobileNetV2 3x3/2 C144 56x56", 32, 144, 56, 56, (3, 3), 2, 1, "bf16"),
    ("MobileNetV2 3x3 C960 7x7", 32, 960, 7, 7, (3, 3), 1, 1, "bf16"),
    ("EfficientNet 5x5 C240 28x28", 32, 240, 28, 28, (5, 5), 1, 2, "bf16"),
    ("ConvNeXt 7x7 C128 56x56", 32, 128, 56, 56, (7, 7), 1, 3, "bf16"),
    ("ConvNeXt 7x7 C512 14x14", 32, 512, 14, 14, (7, 7), 1, 3, "bf16"),
    ("MobileNetV2 3x3 C144 56x56 f32", 32, 144, 56, 56, (3, 3), 1, 1, "f32"),
    ("ConvNeXt 7x7 C128 56x56 f32", 32, 128, 56, 56, (7, 7), 1, 3, "f32"),
]


def _variants(config):  # noqa: ANN001, ANN202
    """Other tiles of the kernel to time beside the default one: taller and shorter row tiles, and the channel
    and column split the other way."""
    out = [config]  # the default tile's launch alone, to compare the others with
    for bh in (4, 16):
        if bh != config.BH:
            out.append(replace(config, BH=bh))
    for cb in (1, 2, 4, 8):
        if cb != config.CB:
            out.append(replace(config, CB=cb, BW=128 // cb))
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--variants", action="store_true")
    args = parser.parse_args()

    import torch

    from argus.kernels import conv as lib
    from argus.kernels.conv import Conv, LibraryConv, conv_plan

    for line in environment(torch):
        print(line)
    print(f"cuDNN {torch.backends.cudnn.version()}, allow_tf32 (conv) {torch.backends.cudnn.allow_tf32}")
    scratch = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    dtypes = {"bf16": torch.bfloat16, "f32": torch.float32}
    results = []
    print("\n| row | tile | argus ms | cuDNN ms | x cuDNN | argus GB/s | err |\n|---|---|---:|---:|---:|---:|---|")
    for label, n, c, h, w, (kh, kw), s, p, dt in ROWS:
        conv = Conv(2, n, c, c, c, (1, h, w), (1, kh, kw), (1, s, s), (0, p, p), (1, 1, 1), False, dt)
        gen = torch.Generator(device="cuda").manual_seed(n + c + h + kh)
        x = torch.rand(n, c, h, w, device="cuda", generator=gen).to(dtypes[dt])
        wt = (torch.rand(c, 1, kh, kw, device="cuda", generator=gen) - 0.5).to(dtypes[dt])
        config = conv_plan(conv).depthwise
        row = {"row": label, "tile": None if config is None else config.label()}
        try:
            call = LibraryConv("conv", conv)
            out = call.empty_output(x, wt)
            call(x, wt, out)
            ref = torch.nn.functional.conv2d(x.double(), wt.double(), stride=s, padding=p, groups=c)
            torch.cuda.synchronize()
            err = ((out.double() - ref).abs().max() / ref.abs().max().clamp_min(1.0)).item()
            row["err"] = err
        except Exception as e:  # noqa: BLE001 - a row that fails is reported, the sweep goes on
            row["error"] = f"{type(e).__name__}: {str(e)[:300]}"
            print(f"| {label} | FAILED: {row['error']} |")
            results.append(row)
            continue

        def ours(call=call, x=x, wt=wt, out=out) -> None:  # noqa: ANN001
            call(x, wt, out)

        def theirs(x=x, wt=wt, s=s, p=p, c=c) -> None:  # noqa: ANN001
            torch.nn.functional.conv2d(x, wt, stride=s, padding=p, groups=c)

        launches = {"argus": ours, "cudnn": theirs}
        if args.variants and config is not None:
            for alt in _variants(config):
                if c % alt.CB or lib.depthwise_span_bytes(conv, alt) > lib.shared_budget(1):
                    continue
                o2 = torch.empty_like(out)

                def variant(alt=alt, o2=o2, x=x, wt=wt, conv=conv) -> None:  # noqa: ANN001
                    lib.run_depthwise_on_gpu(conv, alt, x, wt, None, o2)

                variant()
                torch.cuda.synchronize()
                verr = ((o2.double() - ref).abs().max() / ref.abs().max().clamp_min(1.0)).item()
                launches[f"{alt.label()} (err {verr:.0e})"] = variant
        times = interleaved_times(torch, launches, args.rounds, scratch)
        ms = {name: statistics.median(t) for name, t in times.items()}
        moved = (x.numel() + out.numel()) * x.element_size()
        row.update(argus_ms=ms["argus"], cudnn_ms=ms["cudnn"], x_cudnn=ms["cudnn"] / ms["argus"])
        ok = "" if err <= (2e-2 if dt == "bf16" else 1e-5) else " WRONG"
        print(
            f"| {label} | {row['tile']} | {ms['argus']:.4f} | {ms['cudnn']:.4f} | {row['x_cudnn']:.2f} | "
            f"{moved / ms['argus'] / 1e6:.0f} | {err:.1e}{ok} |"
        )
        for name, t in ms.items():
            if name not in ("argus", "cudnn"):
                print(f"|   variant {name} | | {t:.4f} | | {ms['cudnn'] / t:.2f} | {moved / t / 1e6:.0f} | |")
                row.setdefault("variants", {})[name] = t
        results.append(row)
    for line in environment(torch):
        print(f"after: {line}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
