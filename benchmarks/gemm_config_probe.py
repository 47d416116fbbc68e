"""Named GEMM configurations at one shape, against cuBLAS and the heuristic's plan (issue #20).

Usage (from the repository root on a GPU machine)::

    PYTHONPATH=src python benchmarks/gemm_config_probe.py M,N,K "BM,BN,BK,STAGES,CONSUMERS,SPLITS,CLUSTER" ... \
        [--rounds 100] [--json F] [--kernel-only] [--profile] [--no-cooperative]

A configuration may end in ``,fused``: split-K with the reduction in the GEMM kernel (`GemmConfig.FUSE`). Every
contender is checked against the f32 product before and after the timed relaunches. A configuration
``gemv:BN,STAGES,THREADS,LANES,PARTIAL,SPLITS[,VSTAGE]`` is a `gemv_rows_tma` plan (`GemvConfig`) instead, for
one row of A times B stored (N, K). ``--kernel-only`` also times the first kernel of every plan of two launches
alone (its result incomplete: the split-K reduction's share of the time); ``--profile`` prints the kernels
cuBLAS launches for the product and their times (`torch.profiler`).

For the bf16 product A (M, K) @ B (N, K)^T (C in bf16, nn.Linear's layout): the heuristic's plan
(`argus.kernels.matmul.plan`) and every configuration given (`GemmConfig` fields in that order, then optionally
``direct`` or ``tma``: the EPILOGUE, by default "direct" where SPLITS > 1 else "tma"), each prepared through
`matmul.prepare` (the library's own launches, PDL included), checked against the f32 product (relative max error
<= 1e-2; the script exits 1 if one is wrong or refused), then timed with `gemm_parity.interleaved_times` (L2
flushed before every launch, CUDA events, the order rotating every round) with cuBLAS (``torch.matmul``). What
`gemm_shapes.py --sweep` cannot time: configurations the planner does not offer (128x128x64 with 6 stages,
cuBLAS's tile at 512x512x65536).
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

FIELDS = ("BM", "BN", "BK", "STAGES", "CONSUMERS", "SPLITS", "CLUSTER")
GEMV_FIELDS = ("BN", "STAGES", "THREADS", "LANES", "PARTIAL", "SPLITS")


def parse_config(text: str, mm, rows: int = 1, swap: bool = False):  # noqa: ANN001, ANN201
    """A `GemmConfig` from ``BM,BN,BK,STAGES,CONSUMERS,SPLITS,CLUSTER``, or a `GemvConfig` of `rows` rows of A from
    ``gemv:BN,STAGES,THREADS,LANES,PARTIAL,SPLITS[,VSTAGE]`` (`swap`: a matrix-vector product, A's rows the matrix's,
    one row of the vector)."""
    if text.startswith("gemv:"):
        values = [int(x) for x in text[5:].split(",")]
        if len(values) not in (len(GEMV_FIELDS), len(GEMV_FIELDS) + 1):
            raise SystemExit(f"{text!r}: give gemv:{','.join(GEMV_FIELDS)}[,VSTAGE]")
        g = dict(zip((*GEMV_FIELDS, "VSTAGE"), values, strict=False))
        return mm.GemvConfig("rows_tma", swap, 1 if swap else rows, g["SPLITS"], 64, g["BN"], STAGES=g["STAGES"],
                             THREADS=g["THREADS"], LANES=g["LANES"], PARTIAL=bool(g["PARTIAL"]),
                             VSTAGE=bool(g.get("VSTAGE", 0)))  # fmt: skip
    parts = text.split(",")
    fuse = parts[-1] == "fused"
    if fuse:
        parts.pop()
    store = parts.pop() if parts[-1] in ("direct", "tma") else None
    values = [int(x) for x in parts]
    if len(values) != len(FIELDS):
        raise SystemExit(f"{text!r}: give {','.join(FIELDS)}[,direct|tma][,fused]")
    fields = dict(zip(FIELDS, values, strict=True))
    epilogue = store or ("direct" if fields["SPLITS"] > 1 else "tma")
    return mm.GemmConfig(**fields, EPILOGUE=epilogue, FUSE=fuse)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("shape", help="M,N,K")
    parser.add_argument("configs", nargs="+", help="BM,BN,BK,STAGES,CONSUMERS,SPLITS,CLUSTER")
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--kernel-only", action="store_true", help="also time a split plan's first kernel alone")
    parser.add_argument("--profile", action="store_true", help="print cuBLAS's kernels for the product")
    parser.add_argument(
        "--no-cooperative",
        action="store_true",
        help="launch kernels with group barriers (fused split-K) without the cooperative attribute (A/B)",
    )
    parser.add_argument(
        "--cooperative-alone",
        action="store_true",
        help="a cooperative launch does not also take the programmatic-dependent attribute (A/B)",
    )
    args = parser.parse_args()

    import torch

    from argus.kernels import matmul as mm
    from argus.runtime import loaded

    loaded.COOPERATIVE_LAUNCHES = not args.no_cooperative
    loaded.COOPERATIVE_DEPENDENT = not args.cooperative_alone

    for line in environment(torch):
        print(line)
    m, n, k = (int(x) for x in args.shape.split(","))
    g = torch.Generator(device="cuda").manual_seed(m + 3 * n + 7 * k)
    a = torch.randn(m, k, device="cuda", generator=g).to(torch.bfloat16)
    b = torch.randn(n, k, device="cuda", generator=g).to(torch.bfloat16).T  # (K, N), a transposed view: NT
    ref = a.float() @ b.float()
    scale = float(ref.abs().max())
    problem = mm.problem_of(a, b)
    swap = n == 1 and m > mm.GEMV_ROWS  # a matrix-vector product: a GEMV configuration's matrix is A
    contenders = [("heuristic", mm.plan(problem).config)] + [(c, parse_config(c, mm, m, swap)) for c in args.configs]
    launches = {"cublas": lambda: torch.matmul(a, b)}
    labels, wrong, outputs = {}, False, {}
    for name, config in contenders:
        try:
            c, prepared = mm.prepare(a, b, config=config)
        except Exception as err:  # noqa: BLE001 - reported per contender
            print(f"{name} ({config.label}): refused: {type(err).__name__}: {str(err)[:300]}")
            wrong = True
            continue
        for p in prepared:
            p.launch()
        torch.cuda.synchronize()
        err = float((c.float() - ref).abs().max()) / scale
        if not err <= 1e-2:
            print(f"WRONG {name} ({config.label}): relative error {err}")
            wrong = True
            continue
        launches[name] = lambda prepared=prepared: [p.launch() for p in prepared]
        labels[name] = config.label
        outputs[name] = c
        if args.kernel_only and len(prepared) > 1:
            launches[f"{name}/k"] = prepared[0].launch
            labels[f"{name}/k"] = f"{config.label} [first kernel only]"
    if args.profile:
        profile_cublas(torch, lambda: torch.matmul(a, b))
    scratch = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    times = interleaved_times(torch, launches, args.rounds, scratch)
    for name, c in outputs.items():  # every relaunch overwrote C: still the product (a fused plan's counters reused)
        launches[name]()
        torch.cuda.synchronize()
        err = float((c.float() - ref).abs().max()) / scale
        if not err <= 1e-2:
            print(f"WRONG after the timed relaunches {name} ({labels[name]}): relative error {err}")
            wrong = True
    med = {name: statistics.median(v) for name, v in times.items()}
    print(f"{m}x{n}x{k}: cuBLAS {med['cublas'] * 1e3:.1f} us")
    rows = []
    for name in sorted(labels, key=lambda x: med[x]):
        ratio = med["cublas"] / med[name]
        rows.append({"name": name, "config": labels[name], "us": med[name] * 1e3, "ratio": ratio})
        mark = "  (heuristic)" if name == "heuristic" else ""
        print(f"  {labels[name]:<48} {med[name] * 1e3:8.1f} us  {ratio:.3f}x cuBLAS{mark}")
    if args.json:
        args.json.write_text(
            json.dumps({"environment": environment(torch), "shape": [m, n, k], "rows": rows}, indent=1)
        )
    return 1 if wrong else 0


def profile_cublas(torch, fn) -> None:  # noqa: ANN001
    """The kernels `fn` launches and their mean device times over 20 calls (`torch.profiler`)."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(20):
            fn()
        torch.cuda.synchronize()
    for ev in prof.key_averages():
        if ev.device_type == torch.autograd.DeviceType.CUDA:
            print(f"  cuBLAS kernel {ev.key[:160]}: {ev.count} calls, {ev.device_time_total / ev.count:.1f} us each")


if __name__ == "__main__":
    sys.exit(main())
