"""A/B of the MoE layer's switches (issue #23): module-level switches of `argus.kernels.moe` on and off (every
combination), the layer timed eagerly (as a prefill step runs it: host work included) and captured in a CUDA graph
(the GPU's time alone, as a serving loop replays a decode step), all variants interleaved in one process, L2 flushed
before each launch, medians; every variant's output checked against the f32 per-expert reference first. "% HBM" is the
touched experts' weights (w1 and w2 rows of the experts the routing sends a token to) over the graph's time, of
``--hbm`` bytes a second.

    PYTHONPATH=src python benchmarks/moe_layer_ab.py --cases Qwen3-30B-A3B:4096 Mixtral:16 --rounds 10
    PYTHONPATH=src python benchmarks/moe_layer_ab.py --switches DECODE_SPLITS --cases Mixtral:1 Mixtral:2
    PYTHONPATH=src python benchmarks/moe_layer_ab.py --switches DECODE_MAX_SPLITS=4,8 --cases Mixtral:1   # an int value
"""

from __future__ import annotations

import argparse
import gc
import itertools
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
try:
    import argus  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from grouped_sweep import interleaved  # noqa: E402
from moe_layer_bench import (  # noqa: E402
    ROUTING_HELP,
    ROUTINGS,
    SHAPES,
    graphed,
    layer_weights,
    reference,
    routing_kwargs,
    touched_experts,
    with_flags,
)

from argus.kernels import moe  # noqa: E402


def main() -> int:
    import torch

    p = argparse.ArgumentParser()
    p.add_argument("--cases", nargs="+", default=["Qwen3-30B-A3B:4096", "Mixtral:16"])
    p.add_argument("--switches", nargs="+", default=["TOPK_OF_LOGITS", "SHARED_TILE_COUNTS"])
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--router", choices=["f32", "bf16"], default="f32", help="the router weight's dtype")
    p.add_argument("--routing", choices=ROUTINGS, default="softmax", help=ROUTING_HELP)
    p.add_argument("--hbm", type=float, help="bytes a second of the GPU's memory (default: 4.8e12 on an H200, else "
                   "an H100 SXM's 3.35e12)")  # fmt: skip
    args = p.parse_args()
    choices = []  # per switch: its name and the values to time (a boolean's True and False, or NAME=v1,v2 ints)
    for switch in args.switches:
        name, _, values = switch.partition("=")
        current = getattr(moe, name, None)
        if values and isinstance(current, int) and not isinstance(current, bool):
            choices.append((name, tuple(int(v) for v in values.split(","))))
        elif not values and isinstance(current, bool):
            choices.append((name, (True, False)))
        else:
            p.error(f"{switch}: a boolean switch of argus.kernels.moe, or NAME=v1,v2 for an int value of it")
    args.switches = [name for name, _ in choices]
    dev = torch.device("cuda")
    if args.hbm is None:
        args.hbm = 4.8e12 if "H200" in torch.cuda.get_device_name() else 3.35e12
    print(torch.cuda.get_device_name(), f"HBM {args.hbm:.3g} B/s")
    scratch = torch.empty(256 << 20, dtype=torch.uint8, device=dev)
    shapes = {s[0]: s[1:] for s in SHAPES}
    combos = list(itertools.product(*(values for _, values in choices)))
    print(f"| shape | T | {', '.join(args.switches)} | eager ms | graph ms | % HBM (graph) | max error |")
    print("|---|---|---|---|---|---|---|")
    for case in args.cases:
        label, tokens = case.split(":")
        for line in time_case(torch, args, shapes[label], label, int(tokens), combos, scratch, dev):
            print(line, flush=True)
        gc.collect()  # the case's graphs and closures (their memory pools hold its 28 GiB at DeepSeek-V3)
        torch.cuda.empty_cache()
    return 0


def time_case(torch, args, shape, label, tokens, combos, scratch, dev):  # noqa: ANN001, ANN201, PLR0913
    """The table's rows of one (shape, tokens) case: every combination of the switches, eager and graphed."""
    hidden, inter, experts, top_k = shape
    torch.manual_seed(0)
    w1, w2, router = layer_weights(torch, hidden, inter, experts, dev)
    if args.router == "bf16":
        router = router.to(torch.bfloat16)
    x = torch.randn(tokens, hidden, device=dev).to(torch.bfloat16)
    bias = torch.zeros(tokens, experts, device=dev)
    kwargs = routing_kwargs(torch, args.routing, experts, dev)
    if kwargs:
        want, touched = routed_reference(torch, x, router, w1, w2, top_k, kwargs)
    else:
        want = reference(x, router, bias, w1, w2, top_k)
        touched = touched_experts(x, router, bias, top_k)
    weight_bytes = touched * 3 * hidden * inter * 2  # the gate, up and down columns of each touched expert
    launches, errors = {}, {}
    for combo in combos:
        flags = dict(zip(args.switches, combo, strict=True))
        fn = with_flags(moe, lambda: moe.moe_layer(x, router, w1, w2, top_k, **kwargs), **flags)
        out = fn()
        errors[combo] = float((out.float() - want).abs().max() / want.abs().max())
        launches[(combo, "eager")] = fn
        launches[(combo, "graph")] = graphed(torch, fn)[0]
    torch.cuda.synchronize()
    times = interleaved(torch, launches, args.rounds, scratch)
    rows = []
    for combo in combos:
        eager = statistics.median(times[(combo, "eager")])
        graph = statistics.median(times[(combo, "graph")])
        share = weight_bytes / (graph * 1e-3) / args.hbm * 100
        on = ", ".join(str(int(v)) for v in combo)
        rows.append(f"| {label} | {tokens} | {on} | {eager:.4f} | {graph:.4f} | {share:.0f} | {errors[combo]:.1e} |")
    return rows


def routed_reference(torch, x, router, w1, w2, top_k, kwargs):  # noqa: ANN001, ANN201, PLR0913
    """(f32 output, touched experts) of the layer under `route`'s PyTorch routing with `kwargs` (the routing kernels
    off), each expert's tokens through its FFN in f32."""
    saved = moe.ROUTE_KERNEL
    moe.ROUTE_KERNEL = False
    try:
        routing = moe.route(x, router, top_k, **kwargs)
    finally:
        moe.ROUTE_KERNEL = saved
    inter = w2.shape[1]
    out = torch.zeros(x.shape, dtype=torch.float32, device=x.device)
    ends = routing.offs.tolist()
    for e, (lo, hi) in enumerate(zip([0, *ends[:-1]], ends, strict=True)):
        if hi > lo:
            token = routing.token[lo:hi]
            h = x[token].float() @ w1[e].float()
            y = (torch.nn.functional.silu(h[:, :inter]) * h[:, inter:]) @ w2[e].float()
            out.index_add_(0, token, y * routing.weight[lo:hi, None])
    return out, sum(1 for lo, hi in zip([0, *ends[:-1]], ends, strict=True) if hi > lo)


if __name__ == "__main__":
    raise SystemExit(main())
