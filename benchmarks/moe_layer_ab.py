"""A/B of the MoE layer's host-side switches (issue #23): `moe.TOPK_OF_LOGITS` and `moe.SHARED_TILE_COUNTS` on and
off, the layer timed eagerly (as a prefill step runs it: host work included) and captured in a CUDA graph (the GPU's
time alone), all variants interleaved in one process, L2 flushed before each launch, medians.

    PYTHONPATH=src python benchmarks/moe_layer_ab.py --cases Qwen3-30B-A3B:4096 Mixtral:16 --rounds 10
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


def with_switches(topk: bool, shared: bool, fn):  # noqa: ANN001, ANN202
    return with_flags(moe, fn, TOPK_OF_LOGITS=topk, SHARED_TILE_COUNTS=shared)


def main() -> int:
    import torch

    p = argparse.ArgumentParser()
    p.add_argument("--cases", nargs="+", default=["Qwen3-30B-A3B:4096", "Mixtral:16"])
    p.add_argument("--rounds", type=int, default=10)
    args = p.parse_args()
    dev = torch.device("cuda")
    scratch = torch.empty(256 << 20, dtype=torch.uint8, device=dev)
    shapes = {s[0]: s[1:] for s in SHAPES}
    print("| shape | T | switches (topk of logits, shared tile counts) | eager ms | graph ms |")
    print("|---|---|---|---|---|")
    for case in args.cases:
        label, tokens = case.split(":")
        hidden, inter, experts, top_k = shapes[label]
        torch.manual_seed(0)
        w1, w2, router = layer_weights(torch, hidden, inter, experts, dev)
        x = torch.randn(int(tokens), hidden, device=dev).to(torch.bfloat16)
        launches = {}
        for topk in (True, False):
            for shared in (True, False):
                fn = with_switches(topk, shared, lambda: moe.moe_layer(x, router, w1, w2, top_k))  # noqa: B023
                fn()
                launches[(topk, shared, "eager")] = fn
                launches[(topk, shared, "graph")] = graphed(torch, fn)[0]
        torch.cuda.synchronize()
        times = interleaved(torch, launches, args.rounds, scratch)
        for topk in (True, False):
            for shared in (True, False):
                eager = statistics.median(times[(topk, shared, "eager")])
                graph = statistics.median(times[(topk, shared, "graph")])
                print(f"| {label} | {tokens} | {int(topk)}, {int(shared)} | {eager:.3f} | {graph:.3f} |", flush=True)
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
