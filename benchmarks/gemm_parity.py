"""The expert GEMMs against cuBLAS with interleaved timing: the parity measurement of issue #7.

Usage (from the repository root on a GPU machine)::

    PYTHONPATH=src python benchmarks/gemm_parity.py [--rounds 200] [--json F]

Why interleaved: on an H200 under a tensor-core load the clock follows power and temperature, and cuBLAS timed a
few seconds after our kernel differed from itself by up to 10 % within one process (session 4's runs). Here each
round flushes L2 and times one launch of every contender back to back (CUDA events), in an order that rotates
every round, so every contender sees the same clock states; the table gives each contender's median over the rounds,
the ratio of the medians, and the median and quartiles of the per-round ratios. Inputs: bf16 (`--dtype f16`: f16)
A and B (N x K), both
normal ("gate": the distribution of the gate's first correctness draw and of `argus bench`'s timing) and A normal,
B uniform in [-1, 1] ("variants": `gemm_variants.py`'s). Every contender's output is checked against the f32
product first (relative max error <= 1e-2); the script exits 1 if one is wrong.
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

from gemm_variants import ISSUE_SHAPES, SQUARE, environment  # noqa: E402

#: (label, library kernel, parameter overrides, code-generator switches): the persistent expert (its epilogue
#: through shared memory and TMA stores), the same with the direct epilogue (registers -> global, session 4's
#: expert), without the TMA descriptor prefetch at kernel start, with its producer loop run by the first warp of
#: the producer warpgroup only (`Emitter.single_warp_issuers`; measured 4 % slower, so off by default), and the
#: 2-D-grid expert.
CONTENDERS = (
    ("gemm_hopper_persistent", "gemm_hopper_persistent", {}, {}),
    ("persistent (direct epilogue)", "gemm_hopper_persistent", {"EPILOGUE": "direct"}, {}),
    ("persistent (no descriptor prefetch)", "gemm_hopper_persistent", {}, {"prefetch_tensormaps": False}),
    ("persistent (1-warp producer)", "gemm_hopper_persistent", {}, {"single_warp_issuers": True}),
    ("gemm_hopper", "gemm_hopper", {}, {}),
)
KERNELS = tuple(c[0] for c in CONTENDERS)


def interleaved_times(torch, launches: dict, rounds: int, scratch) -> dict[str, list[float]]:  # noqa: ANN001
    """Per-round times (ms) of every launch in `launches`: each round zeroes `scratch` (an L2 flush) before each
    launch and times it with CUDA events; the order rotates every round. Three warm-up launches each first."""
    names = list(launches)
    for fn in launches.values():
        for _ in range(3):
            fn()
    times: dict[str, list[float]] = {name: [] for name in names}
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in names]
    for r in range(rounds):
        order = names[r % len(names) :] + names[: r % len(names)]
        for i, name in enumerate(order):
            scratch.zero_()
            start, end = events[i]
            start.record()
            launches[name]()
            end.record()
        torch.cuda.synchronize()
        for i, name in enumerate(order):
            times[name].append(events[i][0].elapsed_time(events[i][1]))
    return times


def probe_against_cublas(torch, loaded: dict, shapes, rounds: int, *, check_only=(), skip=None):  # noqa: ANN001, ANN201
    """The probes' loop: every kernel of `loaded` (label -> loaded kernel of (A (M, K), B (N, K), C) in bf16) at each
    (M, N, K) of `shapes`, checked against the f32 product (relative max error <= 1e-2), then timed interleaved with
    cuBLAS (`interleaved_times`); shapes in `check_only` are only checked, and `skip(shape)` may name a reason to
    leave a shape out. Prints the table and each kernel's geometric mean; returns (rows, whether one was wrong)."""
    scratch = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    rows, failed = [], False
    print("\n| M×N×K | kernel | ms (median) | cuBLAS ms (median) | ratio of medians | per-round ratio [q1, q3] |")
    print("|---|---|---|---|---|---|")
    for m, n, k in shapes:
        reason = skip((m, n, k)) if skip else None
        if reason:
            print(f"skip {m}x{n}x{k}: {reason}")
            continue
        g = torch.Generator(device="cuda").manual_seed(m + 3 * n + 7 * k)
        a = torch.randn(m, k, device="cuda", generator=g).to(torch.bfloat16)
        b = torch.randn(n, k, device="cuda", generator=g).to(torch.bfloat16)
        ref = a.float() @ b.float().T
        launches = {"cublas": lambda a=a, b=b: torch.matmul(a, b.T)}
        for name, kern in loaded.items():
            c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
            prepared = kern.prepare(a, b, c)
            prepared.launch()
            torch.cuda.synchronize()
            err = float((c.float() - ref).abs().max() / ref.abs().max())
            if not err <= 1e-2:
                print(f"{name} WRONG at {m}x{n}x{k}: relative error {err}")
                failed = True
            launches[name] = prepared.launch
        if (m, n, k) in check_only:
            continue
        times = interleaved_times(torch, launches, rounds, scratch)
        base = statistics.median(times["cublas"])
        for name in loaded:
            med = statistics.median(times[name])
            per_round = sorted(c / x for c, x in zip(times["cublas"], times[name], strict=True))
            q = statistics.quantiles(per_round, n=4)
            rows.append({"shape": [m, n, k], "kernel": name, "ms": med, "cublas_ms": base, "ratio": base / med})
            print(
                f"| {m}×{n}×{k} | {name} | {med:.4f} | {base:.4f} | {base / med:.3f} | "
                f"{statistics.median(per_round):.3f} [{q[0]:.3f}, {q[2]:.3f}] |",
                flush=True,
            )
    print("\ngeometric mean of the ratios of medians, and the worst shape:")
    for name in loaded:
        ratios = [r["ratio"] for r in rows if r["kernel"] == name]
        if ratios:
            gm = math.exp(statistics.fmean(math.log(x) for x in ratios))
            print(f"  {name:<24} geomean {gm:.3f}  min {min(ratios):.3f}")
    return rows, failed


def main() -> int:
    import torch

    from argus.backend.cuda.codegen import compile_kernel
    from argus.kernels.registry import get_kernel
    from argus.runtime import load

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=200)
    p.add_argument("--dtype", default="bf16", choices=("bf16", "f16"), help="A, B and C (the kernels' IN and OUT)")
    p.add_argument("--json", default="")
    p.add_argument(
        "--layout",
        default="tn",
        choices=("tn", "nn"),
        help="tn: B given as (N, K), C = A @ B^T (the kernels' default); nn: B as (K, N), C = A @ B (B_MAJOR='N')",
    )
    p.add_argument("--shapes", nargs="*", default=None, help="M,N,K triples (default: the issue's seven)")
    p.add_argument("--kernels", default="", help="comma-separated contender labels (default: all)")
    args = p.parse_args()
    chosen = [c for c in CONTENDERS if not args.kernels or c[0] in args.kernels.split(",")]
    if not chosen:
        raise SystemExit(f"--kernels {args.kernels!r} names none of {', '.join(KERNELS)}")
    kernels = tuple(c[0] for c in chosen)
    shapes = [tuple(int(x) for x in t.split(",")) for t in args.shapes] if args.shapes else SQUARE + ISSUE_SHAPES
    for line in environment(torch):
        print(line)
    from argus.backend.cuda.codegen.emitter import Emitter

    loaded = {}
    for label, name, overrides, switches in chosen:
        entry = get_kernel(name)
        params = {**entry.params, **overrides, "IN": args.dtype, "OUT": args.dtype}
        if args.layout == "nn":
            params["B_MAJOR"] = "N"
        saved = {k: getattr(Emitter, k) for k in switches}
        for k, v in switches.items():
            setattr(Emitter, k, v)
        try:
            loaded[label] = (load(compile_kernel(entry.kernel.trace(**params))), params)
        finally:
            for k, v in saved.items():
                setattr(Emitter, k, v)
        print(f"{label}: {name} {params} {switches or ''}")
    scratch = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    dt = {"bf16": torch.bfloat16, "f16": torch.float16}[args.dtype]
    rows, failed = [], False
    print(
        "\n| M×N×K | inputs | kernel | ms (median) | cuBLAS ms (median) | ratio of medians | per-round ratio [q1, q3] |"
    )
    print("|---|---|---|---|---|---|---|")
    for m, n, k in shapes:
        for dist in ("gate", "variants"):
            g = torch.Generator(device="cuda").manual_seed(m + 3 * n + 7 * k)
            a = torch.randn(m, k, device="cuda", generator=g).to(dt)
            if dist == "gate":
                b = torch.randn(n, k, device="cuda", generator=g).to(dt)
            else:
                b = (torch.rand(n, k, device="cuda", generator=g) * 2 - 1).to(dt)
            if args.layout == "nn":
                b = b.T.contiguous()  # the same values, stored as (K, N)
            ref = a.float() @ (b.float() if args.layout == "nn" else b.float().T)
            outs = {name: torch.full((m, n), float("nan"), device="cuda", dtype=dt) for name in kernels}
            if args.layout == "nn":
                launches = {"cublas": lambda a=a, b=b: torch.matmul(a, b)}
            else:
                launches = {"cublas": lambda a=a, b=b: torch.matmul(a, b.T)}
            for name, (kern, _) in loaded.items():
                prepared = kern.prepare(a, b, outs[name])
                prepared.launch()
                launches[name] = prepared.launch
            torch.cuda.synchronize()
            for name, c in outs.items():
                err = float((c.float() - ref).abs().max() / ref.abs().max())
                if not err <= 1e-2:
                    print(f"{name} WRONG at {m}x{n}x{k} ({dist}): relative error {err}")
                    failed = True
            times = interleaved_times(torch, launches, args.rounds, scratch)
            base = statistics.median(times["cublas"])
            for name in kernels:
                med = statistics.median(times[name])
                per_round = sorted(c / x for c, x in zip(times["cublas"], times[name], strict=True))
                q = statistics.quantiles(per_round, n=4)
                row = {
                    "shape": [m, n, k],
                    "inputs": dist,
                    "kernel": name,
                    "ms": med,
                    "cublas_ms": base,
                    "ratio": base / med,
                    "round_ratio_median": statistics.median(per_round),
                    "q1": q[0],
                    "q3": q[2],
                    "rounds": args.rounds,
                }
                rows.append(row)
                print(
                    f"| {m}×{n}×{k} | {dist} | {name} | {med:.4f} | {base:.4f} | {base / med:.3f} | "
                    f"{row['round_ratio_median']:.3f} [{q[0]:.3f}, {q[2]:.3f}] |",
                    flush=True,
                )
    print("\ngeometric mean of the ratios of medians over the shapes, and the worst shape:")
    for name in kernels:
        for dist in ("gate", "variants"):
            ratios = [r["ratio"] for r in rows if r["kernel"] == name and r["inputs"] == dist]
            gm = math.exp(statistics.fmean(math.log(x) for x in ratios))
            print(f"  {name:<24} {dist:<9} geomean {gm:.3f}  min {min(ratios):.3f}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
