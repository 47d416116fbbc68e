"""Pointwise (1x1, stride 1, unpadded, no bias) convolutions on NCHW tensors (issue #21): `LibraryConv`'s product per
image (W (F, C) @ X[n] (C, H*W), batched over the images, written NCHW as it is) against the channels-last product
it ran before (permute to NHWC, (N*H*W, C) @ (C, F), permute back) and against cuDNN (`F.conv2d`, NCHW, PyTorch's
defaults), interleaved in one process, L2 flushed before every launch, CUDA events (`gemm_parity.interleaved_times`).

    PYTHONPATH=src python benchmarks/conv_pointwise_sweep.py [--rounds 10] [--json F]

Rows: KernelBench 86's pointwise half (f32, its own sizes) and ResNet-50's 1x1 layers at batch 32 in bf16 and f32.
Every output is checked against torch's conv2d in float64 first (relative max error: bf16 2e-2, f32 1e-4).
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

#: (label, N, C, F, H, W, dtype)
ROWS = [
    ("KB86 pointwise 64->128 512x512", 16, 64, 128, 512, 512, "f32"),
    ("ResNet 1x1 256->64 56x56", 32, 256, 64, 56, 56, "bf16"),
    ("ResNet 1x1 64->256 56x56", 32, 64, 256, 56, 56, "bf16"),
    ("ResNet 1x1 1024->256 14x14", 32, 1024, 256, 14, 14, "bf16"),
    ("ResNet 1x1 512->2048 7x7", 32, 512, 2048, 7, 7, "bf16"),
    ("ResNet 1x1 256->64 56x56 f32", 32, 256, 64, 56, 56, "f32"),
    ("ResNet 1x1 1024->256 14x14 f32", 32, 1024, 256, 14, 14, "f32"),
]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    import torch

    from argus.kernels.conv import Conv, LibraryConv, conv_plan, run_pointwise_on_gpu

    for line in environment(torch):
        print(line)
    print(f"cuDNN {torch.backends.cudnn.version()}, allow_tf32 (conv) {torch.backends.cudnn.allow_tf32}")
    scratch = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    dtypes = {"bf16": torch.bfloat16, "f32": torch.float32}
    results = []
    print(
        "\n| row | per image ms | channels-last ms | cuDNN ms | x cuDNN (per image) | x channels-last | err |\n"
        "|---|---:|---:|---:|---:|---:|---|"
    )
    for label, n, c, f, h, w, dt in ROWS:
        conv = Conv(2, n, c, f, 1, (1, h, w), (1, 1, 1), (1, 1, 1), (0, 0, 0), (1, 1, 1), False, dt)
        gen = torch.Generator(device="cuda").manual_seed(n + c + f + h)
        x = torch.randn(n, c, h, w, device="cuda", generator=gen).to(dtypes[dt])
        wt = (torch.randn(f, c, 1, 1, device="cuda", generator=gen) / c**0.5).to(dtypes[dt])
        row = {"row": label, "plan": conv_plan(conv).describe()}
        try:
            call = LibraryConv("conv", conv)
            out = call.empty_output(x, wt)
            out2 = torch.empty_like(out)
            call(x, wt, out)
            run_pointwise_on_gpu(conv, x, wt, out2, per_image=False)
            ref = torch.nn.functional.conv2d(x.double(), wt.double())
            torch.cuda.synchronize()
            scale = ref.abs().max().clamp_min(1.0)
            err = max(((o.double() - ref).abs().max() / scale).item() for o in (out, out2))
            row["err"] = err
        except Exception as e:  # noqa: BLE001 - a row that fails is reported, the sweep goes on
            row["error"] = f"{type(e).__name__}: {str(e)[:300]}"
            print(f"| {label} | FAILED: {row['error']} |")
            results.append(row)
            continue

        def per_image(call=call, x=x, wt=wt, out=out) -> None:  # noqa: ANN001
            call(x, wt, out)

        def channels_last(conv=conv, x=x, wt=wt, out2=out2) -> None:  # noqa: ANN001
            run_pointwise_on_gpu(conv, x, wt, out2, per_image=False)

        def theirs(x=x, wt=wt) -> None:  # noqa: ANN001
            torch.nn.functional.conv2d(x, wt)

        launches = {"per_image": per_image, "channels_last": channels_last, "cudnn": theirs}
        times = interleaved_times(torch, launches, args.rounds, scratch)
        ms = {name: statistics.median(t) for name, t in times.items()}
        row.update({f"{k}_ms": v for k, v in ms.items()})
        ok = "" if err <= (2e-2 if dt == "bf16" else 1e-4) else " WRONG"
        print(
            f"| {label} | {ms['per_image']:.4f} | {ms['channels_last']:.4f} | {ms['cudnn']:.4f} | "
            f"{ms['cudnn'] / ms['per_image']:.2f} | {ms['channels_last'] / ms['per_image']:.2f} | {err:.1e}{ok} |"
        )
        results.append(row)
    for line in environment(torch):
        print(f"after: {line}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
