"""Where a MoE decode step's time goes (issue #23): the layer at a few token counts, each kernel's GPU time from the
profiler (the layer run eagerly), grouped by step (routing, gather, up-projection, down-projection, combine), next
to the CUDA-graph replay of the whole layer and of each step alone. Prints one markdown table per shape.

    PYTHONPATH=src python benchmarks/moe_decode_profile.py --tokens 1 16 64 --rounds 20
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
try:
    import argus  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from moe_layer_bench import HBM_BYTES_PER_S, SHAPES, graphed, layer_weights, touched_experts  # noqa: E402

from argus.kernels import moe  # noqa: E402


def replay_us(torch, replay, rounds: int) -> float:  # noqa: ANN001
    """The median of `rounds` timed replays (CUDA events), in µs."""
    times = []
    for _ in range(rounds):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    return statistics.median(times)


def kernel_times(torch, fn) -> list[tuple[str, float]]:  # noqa: ANN001
    """(kernel name, µs) of every kernel one eager call of `fn` launches, in launch order."""
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    out = []
    for ev in prof.events():
        if ev.device_type.name == "CUDA" and ev.device_time_total > 0:
            out.append((ev.name, ev.device_time_total))
    return out


def main() -> int:
    import torch

    p = argparse.ArgumentParser()
    p.add_argument("--tokens", type=int, nargs="+", default=[1, 16, 64])
    p.add_argument("--shapes", nargs="+", default=[s[0] for s in SHAPES])
    p.add_argument("--rounds", type=int, default=20)
    args = p.parse_args()
    dev = torch.device("cuda")
    for label, hidden, inter, experts, top_k in SHAPES:
        if label not in args.shapes:
            continue
        torch.manual_seed(0)
        w1, w2, router = layer_weights(torch, hidden, inter, experts, dev)
        for tokens in args.tokens:
            x = torch.randn(tokens, hidden, device=dev).to(torch.bfloat16)
            bias = torch.zeros(tokens, experts, device=dev)
            routing = moe.route(x, router, top_k, bias=bias)
            rows = x.index_select(0, routing.token)
            h = moe.grouped_swiglu(rows, w1, routing.offs, scale=routing.weight)
            y = moe.grouped_mm(h, w2, routing.offs)
            steps = {
                "layer": lambda: moe.moe_layer(x, router, w1, w2, top_k, bias=bias),  # noqa: B023
                "route": lambda: moe.route(x, router, top_k, bias=bias),  # noqa: B023
                "gather": lambda: x.index_select(0, routing.token),  # noqa: B023
                "up+swiglu": lambda: moe.grouped_swiglu(rows, w1, routing.offs, scale=routing.weight),  # noqa: B023
                "down": lambda: moe.grouped_mm(h, w2, routing.offs),  # noqa: B023
                "combine": lambda: moe.combine(y, routing, tokens, top_k),  # noqa: B023
            }
            weight_bytes = touched_experts(x, router, bias, top_k) * 3 * hidden * inter * 2
            print(f"\n### {label} T={tokens}: touched weights {weight_bytes / 1e6:.1f} MB "
                  f"({weight_bytes / HBM_BYTES_PER_S * 1e6:.1f} µs at 4.8 TB/s)\n")  # fmt: skip
            print("| step | graph replay µs | kernels | kernel µs (sum) | kernels (µs) |")
            print("|---|---|---|---|---|")
            for name, fn in steps.items():
                replay, _ = graphed(torch, fn)
                us = replay_us(torch, replay, args.rounds)
                ks = kernel_times(torch, fn)
                agg: dict[str, float] = defaultdict(float)
                for k, t in ks:
                    agg[k[:48]] += t
                listing = "; ".join(f"{k} {t:.1f}" for k, t in sorted(agg.items(), key=lambda kv: -kv[1]))
                print(f"| {name} | {us:.1f} | {len(ks)} | {sum(t for _, t in ks):.1f} | {listing} |", flush=True)
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
