"""Implicit-GEMM convolution (issue #21): `argus.kernels.conv_implicit.conv_implicit_gemm` against cuDNN
(`torch.nn.functional.conv2d` on channels-last tensors), interleaved in one process, L2 flushed before every launch,
CUDA events (`gemm_parity.interleaved_times`).

    PYTHONPATH=src python benchmarks/conv_implicit_sweep.py [--rounds 15] [--json F] [--variants | --splits]
        [--extra] [--heldout] [--widths] [--persistent] [--fused] [--only TEXT ...]

Rows: KLineage's workload (NHWC fp16, N=8, C=64, 56x56, F=128, 3x3) and ResNet-50's convolutions in bf16 at batch 32
(the 1x1, 3x3 and strided 3x3 of each stage, and the strided 1x1 projections). Columns:
- ``kernel``: the implicit kernel's launch alone on NHWC tensors (the tile `implicit_config` chooses);
- ``call``: `LibraryConv` on channels-last tensors, a whole user call (weight permuted per call, host work);
- ``host µs``: the host's time per call of ``call`` and of cuDNN (50 calls queued back to back): where it exceeds
  the GPU's time the call is bound by the host;
- ``gemm`` (1x1, stride 1 only): argus's GEMM library on the same data viewed as (N*H*W, C) x (F, C);
- with ``--variants``, other tiles and stage counts of the kernel (and its split-K forms); with ``--splits``, only
  the split-K forms (the chosen tile split 1-8 ways along K, and the 8 x 8 one-consumer tile's);
- with ``--extra``, rows of few tiles beyond ResNet-50 at batch 32: its late layers at inference batches (8, 1) and
  other deep, small-spatial layers;
- with ``--heldout``, rows no tile choice was tuned on (VGG-16, U-Net, YOLO-like and Stable Diffusion layers, odd
  sizes and windows), with their own geometric mean;
- with ``--widths``, the rows of filter counts that are not powers of two (`WIDTH_ROWS`) and, beside a flattened
  tile, the tile the rule before fitted widths took (``rule``) and each width `flat_widths` weighs (``w<BN>``);
- with ``--persistent``, where the flattened tile may run, the plan without `conv.FLAT_PERSISTENT` (``before``),
  the flattened tile a block per tile (``flat``) and its persistent forms (``flatp c2``: 128 positions a tile, a
  block an SM; ``flatp c1``: 64 positions, two blocks an SM), and the geometric means of ``before`` beside the plan's;
- with ``--fused``, where the flattened tile may run in one wave of split blocks, the plan without
  `conv.FLAT_FUSE_SPLITS` (``unfused``: the split's reduction in a second launch) and the split tiles summed in their
  own launch at the plan's width, 128 and 256 filters (``fused w<BN> s<S>``), and the geometric means of ``unfused``
  beside the plan's;
- with ``--flat``, beside the planned tile the other kernel's: where the plan is a flattened-position tile
  (`ImplicitConfig.FLAT`, `conv_im2col_gemm`) the implicit kernel's tile the planner took before it (``implicit``)
  and flattened variants (BN 256, 4 stages); elsewhere the flattened tile (``flat``) where it may run. The printed
  geometric means then include the implicit kernel's alone (``implicit`` where timed, else the planned tile).
Every output is checked against conv2d in float64 on the GPU first (relative max error <= 2e-2).
"""

from __future__ import annotations

import argparse
import json
import math
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

#: (label, N, C, F, H, W, kernel, stride, padding, dtype)
ROWS = [
    ("KLineage 3x3 64->128 56 f16", 8, 64, 128, 56, 56, 3, 1, 1, "f16"),
    ("r50 1x1 64->64 56", 32, 64, 64, 56, 56, 1, 1, 0, "bf16"),
    ("r50 3x3 64->64 56", 32, 64, 64, 56, 56, 3, 1, 1, "bf16"),
    ("r50 1x1 64->256 56", 32, 64, 256, 56, 56, 1, 1, 0, "bf16"),
    ("r50 1x1 256->64 56", 32, 256, 64, 56, 56, 1, 1, 0, "bf16"),
    ("r50 1x1 256->128 56", 32, 256, 128, 56, 56, 1, 1, 0, "bf16"),
    ("r50 3x3/2 128 56->28", 32, 128, 128, 56, 56, 3, 2, 1, "bf16"),
    ("r50 1x1/2 256->512 56->28", 32, 256, 512, 56, 56, 1, 2, 0, "bf16"),
    ("r50 3x3 128->128 28", 32, 128, 128, 28, 28, 3, 1, 1, "bf16"),
    ("r50 1x1 128->512 28", 32, 128, 512, 28, 28, 1, 1, 0, "bf16"),
    ("r50 3x3/2 256 28->14", 32, 256, 256, 28, 28, 3, 2, 1, "bf16"),
    ("r50 3x3 256->256 14", 32, 256, 256, 14, 14, 3, 1, 1, "bf16"),
    ("r50 1x1 1024->256 14", 32, 1024, 256, 14, 14, 1, 1, 0, "bf16"),
    ("r50 3x3/2 512 14->7", 32, 512, 512, 14, 14, 3, 2, 1, "bf16"),
    ("r50 3x3 512->512 7", 32, 512, 512, 7, 7, 3, 1, 1, "bf16"),
    ("r50 1x1 512->2048 7", 32, 512, 2048, 7, 7, 1, 1, 0, "bf16"),
]

#: rows of few tiles (``--extra``): ResNet-50's late layers at inference batches, other deep small-spatial layers
EXTRA_ROWS = [
    ("r50 b8 3x3 512->512 7", 8, 512, 512, 7, 7, 3, 1, 1, "bf16"),
    ("r50 b1 3x3 512->512 7", 1, 512, 512, 7, 7, 3, 1, 1, "bf16"),
    ("r50 b8 3x3/2 512 14->7", 8, 512, 512, 14, 14, 3, 2, 1, "bf16"),
    ("r50 b8 3x3 256->256 14", 8, 256, 256, 14, 14, 3, 1, 1, "bf16"),
    ("r50 b1 3x3 256->256 14", 1, 256, 256, 14, 14, 3, 1, 1, "bf16"),
    ("VGG b4 3x3 512->512 14", 4, 512, 512, 14, 14, 3, 1, 1, "bf16"),
    ("b16 3x3 1024->1024 8 f16", 16, 1024, 1024, 8, 8, 3, 1, 1, "f16"),
    ("b32 3x3 384->384 12", 32, 384, 384, 12, 12, 3, 1, 1, "bf16"),
    ("b8 3x3 256->128 56", 8, 256, 128, 56, 56, 3, 1, 1, "bf16"),
]

#: rows no tile choice was tuned on (``--heldout``, session 40): VGG-16, U-Net, YOLO-like and Stable Diffusion U-Net
#: layers, odd sizes and windows
HELDOUT_ROWS = [
    ("vgg16 b16 3x3 64 224", 16, 64, 64, 224, 224, 3, 1, 1, "bf16"),
    ("vgg16 b16 3x3 128 112", 16, 128, 128, 112, 112, 3, 1, 1, "bf16"),
    ("vgg16 b16 3x3 256 56", 16, 256, 256, 56, 56, 3, 1, 1, "bf16"),
    ("vgg16 b16 3x3 512 28", 16, 512, 512, 28, 28, 3, 1, 1, "bf16"),
    ("unet b4 3x3 64 256", 4, 64, 64, 256, 256, 3, 1, 1, "bf16"),
    ("unet b4 3x3 128 128", 4, 128, 128, 128, 128, 3, 1, 1, "bf16"),
    ("yolo b16 3x3/2 64->128 160", 16, 64, 128, 160, 160, 3, 2, 1, "bf16"),
    ("yolo b16 3x3 256 40", 16, 256, 256, 40, 40, 3, 1, 1, "bf16"),
    ("odd b8 3x3 96->160 33", 8, 96, 160, 33, 33, 3, 1, 1, "bf16"),
    ("odd b8 5x5 64->96 27", 8, 64, 96, 27, 27, 5, 1, 2, "bf16"),
    ("odd b4 7x7 128 19", 4, 128, 128, 19, 19, 7, 1, 3, "bf16"),
    ("b64 3x3 192 17", 64, 192, 192, 17, 17, 3, 1, 1, "bf16"),
    ("sd b2 3x3 320 64 f16", 2, 320, 320, 64, 64, 3, 1, 1, "f16"),
    ("sd b2 3x3 640 32 f16", 2, 640, 640, 32, 32, 3, 1, 1, "f16"),
    ("sd b2 3x3 1280 16 f16", 2, 1280, 1280, 16, 16, 3, 1, 1, "f16"),
]

#: rows of filter counts that are not a power of two (``--widths``, session 65), none of them seen by the tile rules
#: before they were measured: Stable Diffusion's U-Net at other batches and its up-blocks' concatenated channels,
#: Inception- and EfficientNet-like widths
WIDTH_ROWS = [
    ("sd b8 3x3 320 64 f16", 8, 320, 320, 64, 64, 3, 1, 1, "f16"),
    ("sd b2 3x3 960->320 64 f16", 2, 960, 320, 64, 64, 3, 1, 1, "f16"),
    ("sd b4 3x3 640 32 f16", 4, 640, 640, 32, 32, 3, 1, 1, "f16"),
    ("b16 3x3 160->320 28", 16, 160, 320, 28, 28, 3, 1, 1, "bf16"),
    ("b32 3x3 192->384 14", 32, 192, 384, 14, 14, 3, 1, 1, "bf16"),
    ("b8 3x3 256->448 28", 8, 256, 448, 28, 28, 3, 1, 1, "bf16"),
    ("b16 3x3 96->208 35", 16, 96, 208, 35, 35, 3, 1, 1, "bf16"),
    ("b32 1x1/2 672->192 14", 32, 672, 192, 14, 14, 1, 2, 0, "bf16"),
]

#: f32 rows, NCHW as KernelBench gives them: (label, rank, N, C, F, spatial, kernel, stride, padding, dilation, bias)
F32_ROWS = [
    ("KB L1-55 3x3 64->128 512x1024", 2, 8, 64, 128, (512, 1024), (3, 3), (1, 1), (0, 0), (1, 1), False),
    ("KB L1-56 5x7 64->128 512x256", 2, 8, 64, 128, (512, 256), (5, 7), (1, 1), (0, 0), (1, 1), False),
    ("KB L1-76 1-d k3 s3 d4 64->128 524280", 1, 64, 64, 128, (524280,), (3,), (3,), (0,), (4,), False),
    ("L2-like 3x3 3->16 32x32 N=128 bias", 2, 128, 3, 16, (32, 32), (3, 3), (1, 1), (0, 0), (1, 1), True),
    ("L2-like 3x3 64->128 32x32 N=128 bias", 2, 128, 64, 128, (32, 32), (3, 3), (1, 1), (1, 1), (1, 1), True),
    ("L2-like 3x3 8->64 32x32 N=128 bias", 2, 128, 8, 64, (32, 32), (3, 3), (1, 1), (0, 0), (1, 1), True),
    ("L2-like 3x3 16->64 32x32 N=128 bias", 2, 128, 16, 64, (32, 32), (3, 3), (1, 1), (0, 0), (1, 1), True),
    ("L2-like 3x3 32->64 32x32 N=128 bias", 2, 128, 32, 64, (32, 32), (3, 3), (1, 1), (0, 0), (1, 1), True),
    ("L2-like 3x3 3->64 64x64 N=128 bias", 2, 128, 3, 64, (64, 64), (3, 3), (1, 1), (0, 0), (1, 1), True),
]


def _pad3(v: tuple, fill: int) -> tuple:
    return (fill,) * (3 - len(v)) + tuple(v)


def f32_rows(args, torch, scratch) -> list:  # noqa: ANN001
    """The f32 table: a whole `LibraryConv` call on NCHW tensors (the permute to NHWC, the split planes, the kernel,
    the permute back) against cuDNN on the same NCHW tensors, with TF32 (torch's default for convolutions) and
    strict fp32 (``torch.backends.cudnn.allow_tf32 = False``). Ours is bf16x3 split precision."""
    import torch.nn.functional as F  # noqa: N812

    from argus.kernels.conv import Conv, LibraryConv, implicit_config, implicit_refusal

    print(
        "\n| f32 row | tile | call ms | cuDNN TF32 ms | cuDNN fp32 ms | × TF32 | × fp32 | call TFLOP/s | err | "
        "err TF32 | gather path ms |\n|---|---|---|---|---|---|---|---|---|---|---|"
    )
    out_rows = []
    for label, rank, n, c, f, size, k, st, p, d, has_bias in F32_ROWS:
        conv = Conv(
            rank, n, c, f, 1, _pad3(size, 1), _pad3(k, 1), _pad3(st, 1), _pad3(p, 0), _pad3(d, 1), has_bias, "f32"
        )
        row: dict = {"row": label, "dtype": "f32"}
        why = implicit_refusal(conv)
        if why is not None:
            print(f"| {label} | refused: {why} |")
            row["refused"] = why
            out_rows.append(row)
            continue
        gen = torch.Generator(device="cuda").manual_seed(n + c + f)
        x = torch.rand(n, c, *size, device="cuda", generator=gen)
        w = (torch.rand(f, c, *k, device="cuda", generator=gen) - 0.5) / math.sqrt(c * math.prod(k))
        b = torch.rand(f, device="cuda", generator=gen) if has_bias else None
        fn = F.conv1d if rank == 1 else F.conv2d
        call = LibraryConv("conv", conv)
        inputs = [x, w] + ([b] if has_bias else [])
        try:
            out = call.empty_output(*inputs)
            call(*inputs, out)
            torch.cuda.synchronize()
        except Exception as e:  # noqa: BLE001 - a row that fails is reported, the sweep goes on
            row["error"] = f"{type(e).__name__}: {str(e)[:300]}"
            print(f"| {label} | FAILED: {row['error']} |")
            out_rows.append(row)
            continue
        ref = fn(x.double(), w.double(), None if b is None else b.double(), st, p, d)
        scale = ref.abs().max().clamp_min(1.0)
        err = ((out.double() - ref).abs().max() / scale).item()
        tf32 = fn(x, w, b, st, p, d)
        err_tf32 = ((tf32.double() - ref).abs().max() / scale).item()
        del ref, tf32

        def strict(x=x, w=w, b=b, fn=fn, st=st, p=p, d=d) -> None:  # noqa: ANN001
            torch.backends.cudnn.allow_tf32 = False
            fn(x, w, b, st, p, d)
            torch.backends.cudnn.allow_tf32 = True

        gather = LibraryConv("conv", conv, implicit=False)
        try:
            gathered = gather.empty_output(*inputs)
            gather(*inputs, gathered)
            torch.cuda.synchronize()
            err_gather = ((gathered.double() - out.double()).abs().max() / scale).item()
        except Exception as e:  # noqa: BLE001 - the gather path may refuse (memory): reported, not timed
            gather, err_gather = None, f"{type(e).__name__}: {str(e)[:120]}"
        row["err_gather_vs_implicit"] = err_gather
        launches = {
            "call": lambda call=call, inputs=inputs, out=out: call(*inputs, out),
            "tf32": lambda x=x, w=w, b=b, fn=fn, st=st, p=p, d=d: fn(x, w, b, st, p, d),
            "fp32": strict,
        }
        if gather is not None:
            launches["gather"] = lambda gather=gather, inputs=inputs, out=gathered: gather(*inputs, out)
        times = interleaved_times(torch, launches, max(5, args.rounds // 2), scratch)
        ms = {name: statistics.median(t) for name, t in times.items()}
        flops = 2.0 * n * f * conv.positions * c * math.prod(k)
        cfg = implicit_config(conv)
        row.update(tile=cfg.label(), ms=ms, err=err, err_tf32=err_tf32, flops=flops)
        ok = "" if err <= 1e-4 else " WRONG"
        print(
            f"| {label} | {cfg.label()} | {ms['call']:.3f} | {ms['tf32']:.3f} | {ms['fp32']:.3f} | "
            f"{ms['tf32'] / ms['call']:.2f} | {ms['fp32'] / ms['call']:.2f} | {flops / ms['call'] / 1e9:.0f} | "
            f"{err:.1e}{ok} | {err_tf32:.1e} | "
            + (f"{ms['gather']:.3f} ({ms['fp32'] / ms['gather']:.2f}x fp32) |" if "gather" in ms else f"{err_gather} |")
        )
        out_rows.append(row)
        del x, w, b, out, inputs, call, launches, gather
        if "gathered" in locals():
            del gathered
        torch.cuda.empty_cache()
    return out_rows


def _variants(conv, config):  # noqa: ANN001, ANN202
    """Other tiles worth timing beside the chosen one: more stages, BN 64, and the best tile of the other consumer
    count (two warpgroups' 2 x 64 rows, or one warpgroup's 8 x 8 at two blocks per SM)."""
    from argus.kernels.conv import with_stages

    sms = 132
    out = {"s6": with_stages(conv, config, 6), "persistent": replace(config, BLOCKS=sms * config.blocks_per_sm)}
    if config.BN == 128:
        out["bn64"] = with_stages(conv, replace(config, BN=64), 6)
    ow = conv.out[2]
    if config.CONSUMERS == 1:
        bw = 128 if ow > 64 else 64 if ow > 32 else 32 if ow > 16 else 16
        out["c2"] = with_stages(conv, replace(config, BH=128 // bw, BW=bw, CONSUMERS=2))
    else:
        out["c1"] = with_stages(conv, replace(config, BH=8, BW=8, CONSUMERS=1))
    alt = "c2" if "c2" in out else "c1"
    out[f"{alt} persistent"] = replace(out[alt], BLOCKS=sms * out[alt].blocks_per_sm)
    out.update(_split_variants(conv, config))
    return {k: v for k, v in out.items() if v != config}


def _split_variants(conv, config):  # noqa: ANN001, ANN202
    """The chosen tile split 1-8 ways along K, and the 8 x 8 one-consumer tile's splits (one block per tile; splits
    that divide the K-steps into shares of at least 4)."""
    from argus.kernels.conv import implicit_k_steps, with_stages

    steps = implicit_k_steps(conv, config.BK)
    c1 = replace(config, BH=8, BW=8, CONSUMERS=1, BLOCKS=0)
    out = {}
    for s in (1, 2, 3, 4, 6, 8):
        if steps % s == 0 and steps // s >= 4:
            out[f"split{s}"] = with_stages(conv, replace(config, BLOCKS=0, SPLITS=s))
            if config.CONSUMERS == 2:
                out[f"c1 split{s}"] = with_stages(conv, replace(c1, SPLITS=s))
    return out


def _without(switch: str, plan):  # noqa: ANN001, ANN202
    """`plan()` with the planner's switch `switch` (`argus.kernels.conv.FLAT_TILES`, ...) off, restored after: the
    plan a row had before that mechanism."""
    import argus.kernels.conv as C  # noqa: N812

    setattr(C, switch, False)
    try:
        return plan()
    finally:
        setattr(C, switch, True)


def _flat_variants(conv, config):  # noqa: ANN001, ANN202
    """``--flat``: the implicit kernel's tile where the plan is flattened (the planner with `FLAT_TILES` off), and
    flattened variants; else the flattened tile where `flat_refusal` allows it."""
    import argus.kernels.conv as C  # noqa: N812

    out = {}
    if config.FLAT:
        out["implicit"] = _without("FLAT_TILES", lambda: C.implicit_config(conv))
        out["flat s4"] = C.with_stages(conv, config, 4)
        if conv.filters >= 256:
            out["flat bn256"] = C.with_stages(conv, replace(config, BN=256), C.FLAT_MAX_STAGES)
    elif C.flat_refusal(conv) is None:
        out["flat"] = C.flat_config(conv)
    return {k: v for k, v in out.items() if v != config}


def _width_variants(conv, config, most: int = 4):  # noqa: ANN001, ANN202
    """``--widths``: where the plan is a flattened tile, the tile the rule before fitted widths took (128 filters, or
    256 of a multiple of 256: ``rule``) and the `most` widths of `flat_candidates` the planner's model ranks first
    (``w<BN>``, each with its own split and stages), the plan's among them."""
    import argus.kernels.conv as C  # noqa: N812

    if not config.FLAT:
        return {}
    out = {"rule": _without("FLAT_FITTED_WIDTHS", lambda: C.flat_config(conv))}
    for _, pick in sorted(C.flat_candidates(conv), key=lambda t: (t[0], t[1].BN))[:most]:
        out[f"w{pick.BN}"] = C.with_stages(conv, pick, C.FLAT_MAX_STAGES)
    return _unique(config, out)


def _unique(config, tiles: dict) -> dict:  # noqa: ANN001
    """`tiles` without the plan `config` and without a tile named before under another name."""
    seen, kept = {config}, {}
    for name, cfg in tiles.items():
        if cfg not in seen:
            seen.add(cfg)
            kept[name] = cfg
    return kept


def _persistent_variants(conv, config):  # noqa: ANN001, ANN202
    """``--persistent``: where the flattened tile may run, the planner's tile without `FLAT_PERSISTENT` (``before``),
    the flattened tile a block per tile (``flat``) and its persistent forms (``flatp c2``: 128 positions, one block
    an SM; ``flatp c1``: 64 positions on one consumer warpgroup, two blocks an SM, up to `TWO_BLOCKS_MAX_BN`
    filters), unsplit, at the planner's width and as many stages as fit (up to `FLAT_MAX_STAGES`); each once, and
    none that is the plan."""
    import argus.kernels.conv as C  # noqa: N812
    from argus.kernels.conv_im2col import TWO_BLOCKS_MAX_BN

    if C.flat_refusal(conv) is not None:
        return {}
    sms = 132
    before = _without("FLAT_PERSISTENT", lambda: C.implicit_config(conv))  # without the persistent flattened tile
    flat = C.flat_config(conv)
    whole = replace(flat, SPLITS=1)
    out = {"before": before, "flat": flat}
    out["flatp c2"] = C.with_stages(conv, replace(whole, BW=128, CONSUMERS=2, BLOCKS=sms), C.FLAT_MAX_STAGES)
    if flat.BN <= TWO_BLOCKS_MAX_BN:
        out["flatp c1"] = C.with_stages(conv, replace(whole, BW=64, CONSUMERS=1, BLOCKS=2 * sms), C.FLAT_MAX_STAGES)
    return _unique(config, out)


def _fused_variants(conv, config, most: int = 6):  # noqa: ANN001, ANN202
    """``--fused``: where the flattened tile may run, the planner without `FLAT_FUSE_SPLITS` (``unfused``) and the
    split flattened tiles that sum their slices in their own launch (`conv_im2col_split_fused`) at the plan's width,
    128 and 256 filters (those that divide into tiles), each split of at least `IMPLICIT_SPLIT_MIN_STEPS` K-steps
    whose blocks make one wave (``fused w<BN> s<S>``), the `most` the planner's model times least."""
    import argus.kernels.conv as C  # noqa: N812

    if C.flat_refusal(conv) is not None:
        return {}
    out = {"unfused": _without("FLAT_FUSE_SPLITS", lambda: C.implicit_config(conv))}
    steps = C.implicit_k_steps(conv, C.IMPLICIT_BK)
    found = []
    for bn in sorted({config.BN, 128} | ({256} if conv.filters >= 256 else set())):
        for s in range(2, C.IMPLICIT_MAX_SPLITS + 1):
            pick = C.ImplicitConfig(1, 128, bn, 1, 2, SPLITS=s, FLAT=True, FUSE=True)
            if steps % s or steps // s < C.IMPLICIT_SPLIT_MIN_STEPS or C.flat_fuse_refusal(conv, pick) is not None:
                continue
            found.append((C.implicit_split_time(conv, pick, s) * C.flat_tile_time(bn), f"fused w{bn} s{s}", pick))
    for _, name, pick in sorted(found, key=lambda t: t[0])[:most]:
        out[name] = C.with_stages(conv, pick, C.FLAT_MAX_STAGES)
    return _unique(config, out)


def _host_us(torch, fn, n: int = 50) -> float:  # noqa: ANN001
    """Microseconds of host time per call of `fn` (`n` calls queued back to back, no synchronization between them):
    a call whose host time exceeds its GPU time is bound by the host, and its CUDA-event time shows it."""
    import time

    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(n):
        fn()
    took = time.perf_counter() - start
    torch.cuda.synchronize()
    return took / n * 1e6


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--variants", action="store_true")
    parser.add_argument("--splits", action="store_true", help="only the split-K variants beside the chosen tile")
    parser.add_argument("--extra", action="store_true", help="also the rows of few tiles beyond ResNet-50 at batch 32")
    parser.add_argument("--f32", action="store_true", help="also the f32 table (KernelBench's convolutions)")
    parser.add_argument("--only-f32", action="store_true", help="only the f32 table")
    parser.add_argument("--only", action="append", default=[], help="the rows whose label starts with this text")
    parser.add_argument("--flat", action="store_true", help="the flattened tile against the implicit one")
    parser.add_argument("--heldout", action="store_true", help="also rows no tile choice was tuned on")
    parser.add_argument(
        "--widths", action="store_true", help="each filter width of a flattened tile, the rows of odd widths"
    )
    parser.add_argument("--persistent", action="store_true", help="the flattened tile's persistent forms")
    parser.add_argument("--fused", action="store_true", help="split flattened tiles summed in their own launch")
    args = parser.parse_args()

    import torch
    import torch.nn.functional as F  # noqa: N812

    from argus.kernels.conv import (
        Conv,
        LibraryConv,
        _implicit_shapes,
        implicit_config,
        implicit_refusal,
        prepare_implicit,
    )
    from argus.kernels.matmul import prepare as gemm_prepare

    for line in environment(torch):
        print(line)
    print(f"cuDNN {torch.backends.cudnn.version()}")
    scratch = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    dtypes = {"bf16": torch.bfloat16, "f16": torch.float16}
    results = []
    print(
        "\n| row | tile | kernel ms | call ms | cuDNN ms | kernel × cuDNN | call × cuDNN | kernel TFLOP/s | cuDNN "
        "TFLOP/s | err | host µs call / cuDNN | other |\n|---|---|---|---|---|---|---|---|---|---|---|---|"
    )
    ratios, heldout, widths, persist, fusion = [], [], [], [], []
    args.f32 = args.f32 or args.only_f32
    rows = ROWS + (EXTRA_ROWS if args.extra else []) + (HELDOUT_ROWS if args.heldout else [])
    rows += WIDTH_ROWS if args.widths else []
    for label, n, c, f, h, w, k, s, p, dt in [] if args.only_f32 else rows:
        if args.only and not any(label.startswith(text) for text in args.only):
            continue
        conv = Conv(2, n, c, f, 1, (1, h, w), (1, k, k), (1, s, s), (0, p, p), (1, 1, 1), False, dt)
        row: dict = {"row": label}
        why = implicit_refusal(conv)
        if why is not None:
            print(f"| {label} | refused: {why} |")
            row["refused"] = why
            results.append(row)
            continue
        gen = torch.Generator(device="cuda").manual_seed(n + c + f + h + k)
        x = torch.randn(n, c, h, w, device="cuda", generator=gen).to(dtypes[dt])
        wt = (torch.randn(f, c, k, k, device="cuda", generator=gen) / math.sqrt(c * k * k)).to(dtypes[dt])
        x_cl = x.to(memory_format=torch.channels_last)
        w_cl = wt.to(memory_format=torch.channels_last)
        ref = F.conv2d(x.double(), wt.double(), stride=s, padding=p)
        scale = ref.abs().max().clamp_min(1.0)
        config = implicit_config(conv)
        xs, ws, ys = _implicit_shapes(conv)
        xv = x_cl.permute(0, 2, 3, 1).view(xs)
        wv = wt.reshape(f, c, -1).permute(0, 2, 1).contiguous().view(ws)
        bias = torch.zeros(1, dtype=x.dtype, device="cuda")
        launches, errors = {}, {}
        tiles = {"kernel": config}
        if args.variants:
            tiles |= _variants(conv, config)
        elif args.splits:
            tiles |= {k: v for k, v in _split_variants(conv, config).items() if v != config}
        if args.flat:
            tiles |= _flat_variants(conv, config)
        if args.widths:
            tiles |= _width_variants(conv, config)
        if args.persistent:
            tiles |= _persistent_variants(conv, config)
        if args.fused:
            tiles |= _fused_variants(conv, config)
        for name, cfg in tiles.items():
            try:
                y = torch.empty(ys, dtype=x.dtype, device="cuda")
                prepared, work = prepare_implicit(conv, cfg, xv, wv, bias, y, nchw=False)

                def run(prepared=prepared, work=work) -> None:  # noqa: ANN001, ARG001 - work: kept alive
                    for launch in prepared:
                        launch.launch()

                run()
                torch.cuda.synchronize()
                errors[name] = ((y.permute(0, 3, 1, 2).double() - ref).abs().max() / scale).item()
                launches[name] = run
            except Exception as e:  # noqa: BLE001 - a variant that fails is reported, the sweep goes on
                row[f"{name}_error"] = f"{type(e).__name__}: {str(e)[:300]}"
                print(f"| {label} | {name} FAILED: {row[f'{name}_error']} |")
        if "kernel" not in launches:
            results.append(row)
            continue
        call = LibraryConv("conv", conv)
        out = torch.empty(ys, dtype=x.dtype, device="cuda").permute(0, 3, 1, 2)  # channels last
        call(x_cl, w_cl, out)
        torch.cuda.synchronize()
        errors["call"] = ((out.double() - ref).abs().max() / scale).item()
        launches["call"] = lambda call=call, x_cl=x_cl, w_cl=w_cl, out=out: call(x_cl, w_cl, out)
        if k == 1 and s == 1:
            a2 = xv.view(n * h * w, c)
            b2 = wt.view(f, c)
            y2, gl = gemm_prepare(a2, b2.t(), out_dtype=x.dtype)

            def gemm(gl=gl) -> None:  # noqa: ANN001
                for launch in gl:
                    launch.launch()

            gemm()
            torch.cuda.synchronize()
            errors["gemm"] = ((y2.view(n, h, w, f).permute(0, 3, 1, 2).double() - ref).abs().max() / scale).item()
            launches["gemm"] = gemm
        launches["cudnn"] = lambda x_cl=x_cl, w_cl=w_cl, s=s, p=p: F.conv2d(x_cl, w_cl, stride=s, padding=p)
        times = interleaved_times(torch, launches, args.rounds, scratch)
        ms = {name: statistics.median(t) for name, t in times.items()}
        host = {name: _host_us(torch, launches[name]) for name in ("call", "cudnn")}
        row["host_us"] = host
        flops = 2.0 * n * f * conv.positions * c * k * k
        row.update(tile=config.label(), ms=ms, errors=errors, flops=flops, shape=[n, c, f, h, w, k, s, p], dtype=dt)
        bad = [name for name, e in errors.items() if e > 2e-2]
        row["wrong"] = bad
        row["tiles"] = {name: cfg.label() for name, cfg in tiles.items()}
        other = ", ".join(
            f"{name} [{tiles[name].label() if name in tiles else ''}] {ms[name]:.4f} ({ms['cudnn'] / ms[name]:.2f}x)"
            for name in ms
            if name not in ("kernel", "call", "cudnn")
        )
        implicit_ms = ms.get("implicit", ms["kernel"])
        if (label, n, c, f, h, w, k, s, p, dt) in ROWS:  # the geometric means: the ResNet-50 and KLineage rows'
            ratios.append((label, ms["cudnn"] / ms["kernel"], ms["cudnn"] / ms["call"], ms["cudnn"] / implicit_ms))
        elif (label, n, c, f, h, w, k, s, p, dt) in HELDOUT_ROWS:
            heldout.append((label, ms["cudnn"] / ms["kernel"], ms["cudnn"] / ms["call"], ms["cudnn"] / implicit_ms))
        if args.widths:  # the plan against the rule before fitted widths (its tile where they differ)
            widths.append((label, ms["cudnn"] / ms["kernel"], ms["cudnn"] / ms.get("rule", ms["kernel"])))
        if args.persistent:  # the plan against the planner without the persistent flattened tile
            persist.append((label, ms["cudnn"] / ms["kernel"], ms["cudnn"] / ms.get("before", ms["kernel"])))
        if args.fused:  # the plan against the planner with the split's reduction in a second launch
            fusion.append((label, ms["cudnn"] / ms["kernel"], ms["cudnn"] / ms.get("unfused", ms["kernel"])))
        print(
            f"| {label} | {config.label()} | {ms['kernel']:.4f} | {ms['call']:.4f} | {ms['cudnn']:.4f} | "
            f"{ms['cudnn'] / ms['kernel']:.2f} | {ms['cudnn'] / ms['call']:.2f} | {flops / ms['kernel'] / 1e9:.0f} | "
            f"{flops / ms['cudnn'] / 1e9:.0f} | {max(errors.values()):.1e}{' WRONG ' + str(bad) if bad else ''} | "
            f"{host['call']:.0f} / {host['cudnn']:.0f} | {other} |"
        )
        results.append(row)
    if args.f32:
        results += f32_rows(args, torch, scratch)

    def geomean(xs: list[float]) -> float:
        return math.exp(statistics.mean(map(math.log, xs)))

    def compared(pairs: list[tuple], title: str, other: str) -> None:
        """The geometric means of (label, kernel x cuDNN, the other tile's x cuDNN) rows: every row, then each group."""
        if not pairs:
            return
        print(
            f"\n{title}, every row ({len(pairs)}): kernel x cuDNN {geomean([r[1] for r in pairs]):.3f}, {other} "
            f"{geomean([r[2] for r in pairs]):.3f}"
        )
        for name, group in (("ResNet-50", ROWS), ("held-out", HELDOUT_ROWS), ("odd widths", WIDTH_ROWS)):
            sub = [r for r in pairs if any(r[0] == g[0] for g in group) and (name != "ResNet-50" or "r50" in r[0])]
            if sub:
                print(
                    f"  {name} ({len(sub)}): kernel x cuDNN {geomean([r[1] for r in sub]):.3f}, {other} "
                    f"{geomean([r[2] for r in sub]):.3f}"
                )

    compared(widths, "fitted widths", "with the 128/256 rule")
    compared(persist, "persistent flattened tiles", "the planner before")
    compared(fusion, "split tiles summed in their own launch", "the reduction in a second launch")
    if heldout:
        print(
            f"\nheld-out rows ({len(heldout)}): kernel x cuDNN {geomean([r[1] for r in heldout]):.3f}, call x cuDNN "
            f"{geomean([r[2] for r in heldout]):.3f}"
            + (f", implicit kernel alone x cuDNN {geomean([r[3] for r in heldout]):.3f}" if args.flat else "")
        )
    if ratios:
        r50 = [r for r in ratios if r[0].startswith("r50 ")]  # ResNet-50 at batch 32: the criterion
        print(f"\ngeomean kernel x cuDNN over {len(ratios)} rows: {geomean([r[1] for r in ratios]):.3f}")
        if r50:
            print(
                f"ResNet-50 (batch 32, {len(r50)} rows): kernel x cuDNN {geomean([r[1] for r in r50]):.3f}, "
                f"call x cuDNN {geomean([r[2] for r in r50]):.3f}"
                + (f", implicit kernel alone x cuDNN {geomean([r[3] for r in r50]):.3f}" if args.flat else "")
            )
    for line in environment(torch):
        print(f"after: {line}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
