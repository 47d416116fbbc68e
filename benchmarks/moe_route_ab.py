"""A/B of the MoE routing kernels (issue #23, decode): `moe.ROUTE_KERNEL` on (the choices sorted by expert in two
DSL launches, `argus.kernels.moe_route`) and off (PyTorch's stable argsort, scatter-add, cumulative sum and gathers),
for the routing alone and for the whole layer, each eager (host work included) and captured in a CUDA graph (the
GPU's time alone, as a serving loop replays a decode step); all variants interleaved in one process, L2 flushed
before each launch, medians. Before timing, the routing with the kernels is checked equal, field by field, to the
one without (the choices and rows exactly, the weights within 4 ulp: the top-k kernel's softmax rounds its
exponentials its own way), and the layer's outputs within 1 % of their largest value.

    PYTHONPATH=src python benchmarks/moe_route_ab.py --cases Qwen3-30B-A3B:1 Mixtral:16 --rounds 20
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
try:
    import argus  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from grouped_sweep import interleaved  # noqa: E402
from moe_layer_bench import SHAPES, graphed, layer_weights, with_flags  # noqa: E402

from argus.kernels import moe  # noqa: E402


def switched(on: bool, fn):  # noqa: ANN001, ANN202
    return with_flags(moe, fn, ROUTE_KERNEL=on)


def main() -> int:
    import torch

    p = argparse.ArgumentParser()
    p.add_argument("--cases", nargs="+", default=["Qwen3-30B-A3B:1", "Qwen3-30B-A3B:16", "Mixtral:1", "DeepSeek-V3:64"])
    p.add_argument("--rounds", type=int, default=20)
    args = p.parse_args()
    dev = torch.device("cuda")
    print(torch.cuda.get_device_name(), "torch", torch.__version__, "cuda", torch.version.cuda)
    scratch = torch.empty(256 << 20, dtype=torch.uint8, device=dev)
    shapes = {s[0]: s[1:] for s in SHAPES}
    print("| shape | T | what | off eager ms | on eager ms | off graph ms | on graph ms | graph off/on | same |")
    print("|---|---|---|---|---|---|---|---|---|")
    failed = False
    for case in args.cases:
        label, tokens = case.split(":")
        hidden, inter, experts, top_k = shapes[label]
        torch.manual_seed(0)
        w1, w2, router = layer_weights(torch, hidden, inter, experts, dev)
        x = torch.randn(int(tokens), hidden, device=dev).to(torch.bfloat16)
        jobs = {
            "route": lambda: moe.route(x, router, top_k),  # noqa: B023
            "layer": lambda: moe.moe_layer(x, router, w1, w2, top_k),  # noqa: B023
        }
        a, b = switched(False, jobs["route"])(), switched(True, jobs["route"])()
        same_route = b.pos is not None and all(
            torch.equal(getattr(a, f).long(), getattr(b, f).long()) for f in ("token", "order", "offs", "counts")
        )
        same_route = same_route and torch.equal(a.positions(), b.positions())
        same_route = same_route and torch.allclose(a.weight, b.weight, rtol=5e-7, atol=0)  # the top-k's softmax
        y0, y1 = (switched(on, jobs["layer"])().float() for on in (False, True))
        same_layer = (y0 - y1).abs().max().item() <= 1e-2 * y0.abs().max().item()  # weights within ulps: bf16 out
        failed |= not (same_route and same_layer)
        launches = {}
        for what, fn in jobs.items():
            for on in (False, True):
                run = switched(on, fn)
                run()
                launches[(what, on, "eager")] = run
                launches[(what, on, "graph")] = graphed(torch, run)[0]
        torch.cuda.synchronize()
        times = interleaved(torch, launches, args.rounds, scratch)
        for what in jobs:
            med = {(on, mode): statistics.median(times[(what, on, mode)]) for on in (False, True)
                   for mode in ("eager", "graph")}  # fmt: skip
            same = same_route if what == "route" else same_layer
            print(f"| {label} | {tokens} | {what} | {med[(False, 'eager')]:.4f} | {med[(True, 'eager')]:.4f} | "
                  f"{med[(False, 'graph')]:.4f} | {med[(True, 'graph')]:.4f} | "
                  f"{med[(False, 'graph')] / med[(True, 'graph')]:.2f} | {'yes' if same else 'NO'} |",
                  flush=True)  # fmt: skip
        w1 = w2 = router = launches = jobs = a = b = y0 = y1 = None  # freed before the next shape's weights
        torch.cuda.empty_cache()
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
