"""The flattened-position convolution (`argus.kernels.conv_im2col`, TMA im2col loads) in several tiles against cuDNN
and against the implicit kernel's tile, on `conv_implicit_sweep.py`'s rows, interleaved in one process (L2 flushed
before every launch, CUDA events; `gemm_parity.interleaved_times`). Since session 40 the planner takes the flattened
tile itself (`argus.kernels.conv.FLAT_TILES`) and `conv_implicit_sweep.py --flat` times the planned tile beside
the implicit one; this probe times fixed tiles (its ``implicit`` contender: the planner with `FLAT_TILES` off).

    PYTHONPATH=src python benchmarks/conv_im2col_probe.py [--rounds 15] [--json F] [--only TEXT ...] [--extra]

Contenders per row: ``cudnn`` (`torch.nn.functional.conv2d`, channels-last tensors), ``implicit`` (the planned
implicit kernel's launches, `implicit_config`: BH x BW tiles, split-K where planned) and ``im2col BMxBN sS``
(this kernel: one block per tile of BM flattened positions x BN filters, S stages). Every output is checked
against conv2d in float64 first (relative max error <= 2e-2; a wrong contender is reported and not timed).
Compiles run in a process pool before any timing.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

try:
    import argus  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

sys.path.insert(0, str(Path(__file__).resolve().parent))

from conv_implicit_sweep import EXTRA_ROWS, ROWS  # noqa: E402
from gemm_parity import interleaved_times  # noqa: E402
from gemm_variants import environment  # noqa: E402


def im2col_params(c: int, k: int, s: int, p: int, bn: int, stages: int, dt: str) -> dict:
    return {
        "KH": k, "KW": k, "SH": s, "SW": s, "PH": p, "PW": p, "BN": bn, "CB": -(-c // 64), "STAGES": stages,
        "IN": dt, "OUT": dt,
    }  # fmt: skip


def configs(c: int, f: int, k: int, s: int, p: int, dt: str) -> dict[str, dict]:
    out = {}
    for bn in (128, 256) if f >= 256 else (128,) if f >= 128 else (64,):
        for stages in (4, 6) if bn == 128 else (3, 4):
            out[f"im2col 128x{bn} s{stages}"] = im2col_params(c, k, s, p, bn, stages, dt)
    return out


def _compile(params: dict) -> str | None:
    try:
        from argus.backend.cuda.codegen import compile_kernel
        from argus.kernels.conv_im2col import conv_im2col_gemm

        compile_kernel(conv_im2col_gemm.trace(**params))  # into the cubin cache
        return None
    except Exception as e:  # noqa: BLE001 - reported in the table
        return f"{type(e).__name__}: {str(e)[:200]}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--only", action="append", default=[])
    parser.add_argument("--extra", action="store_true")
    parser.add_argument("--workers", type=int, default=16)
    args = parser.parse_args()

    import torch
    import torch.nn.functional as F  # noqa: N812

    import argus.kernels.conv as C  # noqa: N812
    from argus.backend.cuda.codegen import compile_kernel
    from argus.kernels.conv import Conv, _implicit_shapes, implicit_config, implicit_refusal, prepare_implicit
    from argus.kernels.conv_im2col import conv_im2col_gemm
    from argus.runtime import load

    for line in environment(torch):
        print(line)
    rows = [
        r
        for r in ROWS + (EXTRA_ROWS if args.extra else [])
        if not args.only or any(r[0].startswith(t) for t in args.only)
    ]
    jobs = {}
    for _, _, c, f, _, _, k, s, p, dt in rows:
        for params in configs(c, f, k, s, p, dt).values():
            jobs[tuple(sorted(params.items()))] = params
    with ProcessPoolExecutor(args.workers) as pool:
        failed = dict(zip(jobs, pool.map(_compile, jobs.values()), strict=True))
    scratch = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    dtypes = {"bf16": torch.bfloat16, "f16": torch.float16}
    print("\n| row | cuDNN ms | implicit (tile) ms | x cuDNN | best im2col | ms | x cuDNN | x implicit | others |")
    print("|---|---|---|---|---|---|---|---|---|")
    results, best_ratios, implicit_ratios = [], [], []
    for label, n, c, f, h, w, k, s, p, dt in rows:
        conv = Conv(2, n, c, f, 1, (1, h, w), (1, k, k), (1, s, s), (0, p, p), (1, 1, 1), False, dt)
        gen = torch.Generator(device="cuda").manual_seed(n + c + f + h + k)
        x = torch.randn(n, c, h, w, device="cuda", generator=gen).to(dtypes[dt])
        wt = (torch.randn(f, c, k, k, device="cuda", generator=gen) / math.sqrt(c * k * k)).to(dtypes[dt])
        x_cl, w_cl = x.to(memory_format=torch.channels_last), wt.to(memory_format=torch.channels_last)
        ref = F.conv2d(x.double(), wt.double(), stride=s, padding=p)
        scale = ref.abs().max().clamp_min(1.0)
        oh, ow = ref.shape[2], ref.shape[3]
        xv = x_cl.permute(0, 2, 3, 1)  # (N, H, W, C), contiguous
        wv = wt.reshape(f, c, -1).permute(0, 2, 1).contiguous().view(1, f, k * k, c)
        launches, errors, row = {}, {}, {"row": label, "wrong": [], "failed": {}}
        launches["cudnn"] = lambda x_cl=x_cl, w_cl=w_cl, s=s, p=p: F.conv2d(x_cl, w_cl, stride=s, padding=p)
        if implicit_refusal(conv) is None:
            C.FLAT_TILES = False  # the implicit kernel's own tile
            try:
                config = implicit_config(conv)
            finally:
                C.FLAT_TILES = True
            xs, ws, ys = _implicit_shapes(conv)
            yi = torch.empty(ys, dtype=x.dtype, device="cuda")
            bias = torch.zeros(1, dtype=x.dtype, device="cuda")
            prepared, work = prepare_implicit(conv, config, xv.view(xs), wv.view(ws), bias, yi, nchw=False)

            def implicit(prepared=prepared, work=work) -> None:  # noqa: ANN001, ARG001
                for launch in prepared:
                    launch.launch()

            implicit()
            torch.cuda.synchronize()
            errors["implicit"] = ((yi.permute(0, 3, 1, 2).double() - ref).abs().max() / scale).item()
            launches["implicit"] = implicit
            row["implicit_tile"] = config.label()
        for name, params in configs(c, f, k, s, p, dt).items():
            why = failed[tuple(sorted(params.items()))]
            if why:
                row["failed"][name] = why
                continue
            try:
                loaded = load(compile_kernel(conv_im2col_gemm.trace(**params)))
                y = torch.empty(n * oh * ow, f, dtype=x.dtype, device="cuda")
                launch = loaded.prepare(xv, wv, torch.zeros(1, dtype=x.dtype, device="cuda"), y)  # no bias
                launch.launch()
                torch.cuda.synchronize()
            except Exception as e:  # noqa: BLE001 - reported in the table, the probe goes on
                row["failed"][name] = f"{type(e).__name__}: {str(e)[:200]}"
                continue
            errors[name] = ((y.view(n, oh, ow, f).permute(0, 3, 1, 2).double() - ref).abs().max() / scale).item()
            if errors[name] > 2e-2:
                row["wrong"].append(name)
                continue
            launches[name] = launch.launch
        times = interleaved_times(torch, launches, args.rounds, scratch)
        ms = {name: statistics.median(t) for name, t in times.items()}
        row.update(ms=ms, errors=errors)
        im2col = {k2: v for k2, v in ms.items() if k2.startswith("im2col")}
        best = min(im2col, key=im2col.get) if im2col else None
        others = ", ".join(f"{k2} {v:.4f}" for k2, v in im2col.items() if k2 != best)
        bad = f" WRONG {row['wrong']}" if row["wrong"] else ""
        bad += f" FAILED {list(row['failed'])}" if row["failed"] else ""
        if best is None:
            print(f"| {label} | {ms['cudnn']:.4f} | {ms.get('implicit', float('nan')):.4f} | | none{bad} | | | | |")
        else:
            r_best, r_impl = ms["cudnn"] / ms[best], ms["cudnn"] / ms["implicit"]
            print(
                f"| {label} | {ms['cudnn']:.4f} | {ms['implicit']:.4f} ({row['implicit_tile']}) | {r_impl:.2f} | "
                f"{best} | {ms[best]:.4f} | {r_best:.2f} | {ms['implicit'] / ms[best]:.2f} | {others}{bad} |"
            )
            if label.startswith("r50 "):
                best_ratios.append(r_best)
                implicit_ratios.append(r_impl)
        results.append(row)
    if best_ratios:
        g = lambda xs: math.exp(statistics.mean(map(math.log, xs)))  # noqa: E731
        both = [max(a, b) for a, b in zip(best_ratios, implicit_ratios, strict=True)]
        print(
            f"\nResNet-50 rows ({len(best_ratios)}): implicit x cuDNN {g(implicit_ratios):.3f}, best im2col x cuDNN "
            f"{g(best_ratios):.3f}, best of both {g(both):.3f}"
        )
    for line in environment(torch):
        print(f"after: {line}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
