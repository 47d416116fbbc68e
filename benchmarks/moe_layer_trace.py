"""Where a MoE layer's decode step spends its time (issue #23): the layer captured in a CUDA graph, replayed under
the PyTorch profiler (CUPTI kernel records), and each replay's kernels listed in order with their GPU time, the gap
before each, and the step's span (first kernel's start to last kernel's end)::

    PYTHONPATH=src python benchmarks/moe_layer_trace.py --cases Qwen3-30B-A3B:1 Mixtral:1 --replays 20 \
        [--set SEARCH_RADIX=4]

What it prints, per case: one row per kernel of the step (median over the replays of its duration and of the gap
before it, in microseconds), then the step's median span, the sum of its kernels' times and of its gaps. The
weights touched by the routing over the span is the step's share of HBM bandwidth (the A/B's `% HBM` measure,
`moe_layer_ab.py`, which times whole replays instead).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

try:
    import argus  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

sys.path.insert(0, str(Path(__file__).resolve().parent))

from moe_layer_bench import (  # noqa: E402
    ROUTING_HELP,
    ROUTINGS,
    SHAPES,
    graphed,
    layer_weights,
    routing_kwargs,
    touched_experts,
)

from argus.kernels import moe  # noqa: E402


def main() -> int:
    import torch

    p = argparse.ArgumentParser()
    p.add_argument("--cases", nargs="+", default=["Qwen3-30B-A3B:1", "Mixtral:1"])
    p.add_argument("--replays", type=int, default=20)
    p.add_argument("--routing", choices=ROUTINGS, default="softmax", help=ROUTING_HELP)
    p.add_argument("--set", nargs="*", default=[], metavar="NAME=INT", help="int values of argus.kernels.moe to set")
    p.add_argument("--hbm", type=float, help="bytes a second of the GPU's memory (default: 4.8e12 on an H200, else "
                   "an H100 SXM's 3.35e12)")  # fmt: skip
    args = p.parse_args()
    for item in args.set:
        name, _, value = item.partition("=")
        if not isinstance(getattr(moe, name, None), int):
            p.error(f"{item}: NAME=INT for an int or boolean value of argus.kernels.moe")
        setattr(moe, name, int(value))
    dev = torch.device("cuda")
    if args.hbm is None:
        args.hbm = 4.8e12 if "H200" in torch.cuda.get_device_name() else 3.35e12
    print(torch.cuda.get_device_name(), f"HBM {args.hbm:.3g} B/s")
    shapes = {s[0]: s[1:] for s in SHAPES}
    for case in args.cases:
        label, tokens = case.split(":")
        trace_case(torch, shapes[label], label, int(tokens), args, dev)
        torch.cuda.empty_cache()
    return 0


def trace_case(torch, shape, label, tokens, args, dev):  # noqa: ANN001, PLR0913
    hidden, inter, experts, top_k = shape
    torch.manual_seed(0)
    w1, w2, router = layer_weights(torch, hidden, inter, experts, dev)
    x = torch.randn(tokens, hidden, device=dev).to(torch.bfloat16)
    bias = torch.zeros(tokens, experts, device=dev)
    kwargs = routing_kwargs(torch, args.routing, experts, dev)
    if kwargs:
        offs = moe.route(x, router, top_k, **kwargs).offs
        counts = torch.diff(offs, prepend=offs.new_zeros(1))
        touched = int((counts > 0).sum())
    else:
        touched = touched_experts(x, router, bias, top_k)
    weight_bytes = touched * 3 * hidden * inter * 2
    replay, _ = graphed(torch, lambda: moe.moe_layer(x, router, w1, w2, top_k, **kwargs))
    scratch = torch.empty(256 << 20, dtype=torch.uint8, device=dev)
    for _ in range(3):
        replay()
    torch.cuda.synchronize()
    activities = [torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=activities) as prof:
        for _ in range(args.replays):  # idle time on both sides of the L2 flush: the replays are apart on the trace
            scratch.zero_()  # the L2 holds no weight when a replay starts, as in a model's step
            torch.cuda.synchronize()
            time.sleep(0.002)
            replay()
            torch.cuda.synchronize()
            time.sleep(0.002)
    kernels = sorted(
        (e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA and e.time_range.elapsed_us() > 0),
        key=lambda e: e.time_range.start,
    )
    groups, group = [], []
    for e in kernels:  # a gap of half a millisecond or more: the next replay (or the flush)
        if group and e.time_range.start - group[-1].time_range.end > 500:
            groups.append(group)
            group = []
        group.append(e)
    groups.append(group)
    steps = [g for g in groups if len(g) > 1 or "fill" not in g[0].name.lower()]
    width = statistics.mode(len(s) for s in steps)
    steps = [s for s in steps if len(s) == width]
    print(f"\n## {label} T={tokens}: {width} kernels a step, {len(steps)} replays, {weight_bytes / 1e6:.1f} MB touched")
    print("| # | kernel | median us | gap before us |")
    print("|---|---|---|---|")
    for i in range(width):
        dur = statistics.median(s[i].time_range.elapsed_us() for s in steps)
        gap = statistics.median(s[i].time_range.start - s[i - 1].time_range.end for s in steps) if i else 0.0
        print(f"| {i} | {steps[0][i].name[:90]} | {dur:.1f} | {gap:.1f} |")
    span = statistics.median(s[-1].time_range.end - s[0].time_range.start for s in steps)
    busy = statistics.median(sum(e.time_range.elapsed_us() for e in s) for s in steps)
    share = weight_bytes / (span * 1e-6) / args.hbm * 100
    print(f"span {span:.1f} us, kernels {busy:.1f} us, gaps {span - busy:.1f} us; {share:.0f} % HBM over the span")


if __name__ == "__main__":
    raise SystemExit(main())
