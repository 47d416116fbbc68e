"""A MoE layer's forward (prefill) on one GPU: `argus.kernels.moe.moe_layer` against the layer composed from PyTorch
operators and its ``torch.compile``, interleaved in one process (issue #23).

Usage (from the repository root on a GPU machine)::

    PYTHONPATH=src python benchmarks/moe_layer_bench.py [--rounds 10] [--tokens 4096 16384] [--json F]

The composed layer (`composed`): f32 router logits, softmax, top-k renormalized; routing metadata without a host
synchronization (stable argsort of the chosen experts, per-expert counts by scatter-add, cumulative offsets); the
routed rows gathered (``index_select``); ``torch._grouped_mm`` on the fused gate-and-up weight (E, H, 2I); silu(gate)
* up; ``torch._grouped_mm`` on the down weight (E, I, H); the rows weighted and added back to their tokens
(``index_add_`` in f32). ``compiled`` is ``torch.compile`` of the same function. Shapes: Mixtral (H 4096, I 14336,
E 8, top 2), Qwen3-30B-A3B (2048, 768, 128, top 8), DeepSeek-V3 (7168, 2048, 256, top 8: routed experts only, no
shared expert, softmax routing); routings: balanced (the router as drawn), Zipf-skewed and one expert taking most
tokens (a bias added to the logits, the same for every contender). Each contender is checked first against an f32
per-expert reference (relative max error <= 2e-2), then timed by `grouped_sweep.interleaved` (L2 flushed before each
launch, CUDA events, order rotated every round, medians). TFLOP/s counts 6 T k H I. "weights TB/s" is the bytes of
the touched experts' weights (each expert that a token chose: its (H, 2I) and (I, H) matrices, bf16) over the time:
at decode sizes (``--tokens 1 16 64 256``) the layer is bound by streaming them, and "% HBM" is that rate over the
H200's 4.8 TB/s. With ``--graphs`` every contender is captured in a CUDA graph and its replay timed (the GPU's time
alone, as a serving loop runs a decode step: at decode sizes the eager layers are bound by their launches and host
work). With ``--combine-kernel`` argus runs a second time with the other combine (`moe.COMBINE_KERNEL`: the
`moe_combine` kernel or PyTorch's scatter and sum), interleaved with the rest; with ``--fused-gather`` likewise with the
other side of `moe.FUSED_GATHER` (the token gather fused into the up-projection's operand load, or ``index_select``
first), and with ``--direct-store`` with the down-projection storing every tile from registers (`moe.PLAIN_EPILOGUE`
"direct"; the default stores full tiles through TMA stores).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
try:
    import argus  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from grouped_sweep import interleaved  # noqa: E402

from argus.kernels import moe  # noqa: E402

SHAPES = (  # (label, H, I, E, k)
    ("Mixtral", 4096, 14336, 8, 2),
    ("Qwen3-30B-A3B", 2048, 768, 128, 8),
    ("DeepSeek-V3", 7168, 2048, 256, 8),
)
ROUTINGS = ("balanced", "zipf", "hot")
HBM_BYTES_PER_S = 4.8e12  # H200


def layer_weights(torch, hidden: int, inter: int, experts: int, dev):  # noqa: ANN001, ANN201
    """(w1 (E, H, 2I), w2 (E, I, H), router (H, E)): the layer's weights, normal and scaled by 1/sqrt(fan-in), bf16
    (the router f32), from the current seed; drawn in bf16 (since session 71: DeepSeek-V3's w1 drawn in f32 was a
    28 GiB temporary, which a second such case in one process could not allocate)."""
    w1 = torch.randn(experts, hidden, 2 * inter, device=dev, dtype=torch.bfloat16).mul_(hidden**-0.5)
    w2 = torch.randn(experts, inter, hidden, device=dev, dtype=torch.bfloat16).mul_(inter**-0.5)
    router = torch.randn(hidden, experts, device=dev) * hidden**-0.5
    return w1, w2, router


#: The routings the layer benchmarks take (`--routing`): the default softmax top-k, or DeepSeek-V3's.
ROUTINGS = ("softmax", "deepseek")
ROUTING_HELP = "deepseek: DeepSeek-V3's (sigmoid scores, a correction bias, 8 groups, 4 chosen, weights x 2.5)"


def routing_kwargs(torch, routing: str, experts: int, dev) -> dict:  # noqa: ANN001
    """`moe_layer`'s routing keywords for `routing` (`ROUTINGS`): none for the softmax, DeepSeek-V3's for "deepseek"
    (8 groups: the experts must split in 8 groups of 2 or more), its correction drawn from the current seed."""
    if routing != "deepseek":
        return {}
    return {"scoring": "sigmoid", "correction": torch.randn(experts, device=dev) * 0.1, "groups": 8, "top_groups": 4,
            "scaling": 2.5}  # fmt: skip


def touched_experts(x, router, bias, top_k: int) -> int:  # noqa: ANN001
    """How many experts the routing sends at least one token to (as `reference` routes)."""
    import torch

    chosen = torch.softmax(x.float() @ router.float() + bias, dim=-1).topk(top_k, dim=-1).indices
    return int(torch.unique(chosen).numel())


def composed(x, router, bias, w1, w2, top_k: int):  # noqa: ANN001, ANN201 - torch tensors
    import torch

    tokens, experts, inter = x.shape[0], router.shape[1], w2.shape[1]
    logits = x.float() @ router.float() + bias
    weights, chosen = torch.softmax(logits, dim=-1).topk(top_k, dim=-1)
    weights = weights / weights.sum(dim=-1, keepdim=True)
    flat = chosen.reshape(-1)
    order = torch.argsort(flat, stable=True)
    counts = torch.zeros(experts, dtype=torch.int64, device=x.device).index_add_(0, flat, torch.ones_like(flat))
    offs = torch.cumsum(counts, 0).to(torch.int32)
    token = order // top_k
    h = torch._grouped_mm(x.index_select(0, token), w1, offs=offs)
    a = torch.nn.functional.silu(h[:, :inter]) * h[:, inter:]
    y = torch._grouped_mm(a, w2, offs=offs)
    out = torch.zeros(tokens, x.shape[1], dtype=torch.float32, device=x.device)
    out.index_add_(0, token, y.float() * weights.reshape(-1)[order][:, None])
    return out.to(x.dtype)


def reference(x, router, bias, w1, w2, top_k: int):  # noqa: ANN001, ANN201
    """f32, per expert: each expert's tokens through its FFN, weighted, summed."""
    import torch

    inter = w2.shape[1]
    logits = x.float() @ router.float() + bias
    weights, chosen = torch.softmax(logits, dim=-1).topk(top_k, dim=-1)
    weights = weights / weights.sum(dim=-1, keepdim=True)
    out = torch.zeros(x.shape, dtype=torch.float32, device=x.device)
    for e in range(router.shape[1]):
        tok, slot = (chosen == e).nonzero(as_tuple=True)
        if tok.numel() == 0:
            continue
        h = x[tok].float() @ w1[e].float()
        y = (torch.nn.functional.silu(h[:, :inter]) * h[:, inter:]) @ w2[e].float()
        out.index_add_(0, tok, y * weights[tok, slot][:, None])
    return out


def with_flags(module, fn, **flags):  # noqa: ANN001, ANN201
    """`fn` run with the module-level switches `flags` of `module` set (``ROUTE_KERNEL=True``), restored after: one
    side of an A/B in one process."""

    def run():  # noqa: ANN202
        saved = {name: getattr(module, name) for name in flags}
        for name, value in flags.items():
            setattr(module, name, value)
        try:
            return fn()
        finally:
            for name, value in saved.items():
                setattr(module, name, value)

    return run


def graphed(torch, fn):  # noqa: ANN001, ANN201
    """(replay, output): `fn` captured in a CUDA graph (after a warm-up on a side stream), so that a replay is the
    GPU's time alone, as a serving loop runs a decode step; `output` is the captured call's result, refreshed by
    every replay."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fn()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = fn()
    return graph.replay, out


def routing_bias(torch, kind: str, tokens: int, experts: int, dev):  # noqa: ANN001, ANN201
    g = torch.Generator(device="cpu").manual_seed(7)
    if kind == "balanced":
        bias = torch.zeros(tokens, experts)
    elif kind == "zipf":
        ranks = torch.randperm(experts, generator=g).float()
        bias = (-1.2 * torch.log(ranks + 1)).expand(tokens, experts).clone()
    else:  # one expert first for ~70 % of the tokens
        bias = torch.zeros(tokens, experts)
        bias[torch.rand(tokens, generator=g) < 0.7, 0] = 20.0
    return bias.to(dev)


def with_plain_epilogue(epilogue: str, fn, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN201
    """`fn` with `moe.PLAIN_EPILOGUE` (the plain grouped kernel's store at prefill) set to `epilogue` for the call."""
    saved, moe.PLAIN_EPILOGUE = moe.PLAIN_EPILOGUE, epilogue
    try:
        return fn(*args, **kwargs)
    finally:
        moe.PLAIN_EPILOGUE = saved


def main() -> int:
    import torch

    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--tokens", type=int, nargs="+", default=[4096, 16384])
    p.add_argument("--shapes", nargs="+", default=[s[0] for s in SHAPES])
    p.add_argument("--routings", nargs="+", default=list(ROUTINGS))
    p.add_argument("--no-compile", action="store_true")
    p.add_argument("--graphs", action="store_true", help="time each contender captured in a CUDA graph")
    p.add_argument("--combine-kernel", action="store_true", help="also argus with moe.COMBINE_KERNEL's other side")
    p.add_argument("--fused-gather", action="store_true", help="also argus with moe.FUSED_GATHER's other side")
    p.add_argument(
        "--direct-store", action="store_true", help="also argus with the down-projection's direct store (not TMA)"
    )
    p.add_argument("--json")
    args = p.parse_args()
    if not torch.cuda.is_available():
        print("needs a CUDA GPU")
        return 2
    dev = torch.device("cuda")
    scratch = torch.empty(256 << 20, dtype=torch.uint8, device=dev)
    compiled = None if args.no_compile else torch.compile(composed)
    rows, failed = [], False
    print("| shape | T | routing | contender | ms | TFLOP/s | weights TB/s | % HBM | x composed | x compiled | err |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for label, hidden, inter, experts, top_k in SHAPES:
        if label not in args.shapes:
            continue
        torch.manual_seed(0)
        w1, w2, router = layer_weights(torch, hidden, inter, experts, dev)
        for tokens in args.tokens:
            x = torch.randn(tokens, hidden, device=dev).to(torch.bfloat16)
            for kind in args.routings:
                bias = routing_bias(torch, kind, tokens, experts, dev)
                ref = reference(x, router, bias, w1, w2, top_k)
                contenders = {
                    "composed": partial(composed, x, router, bias, w1, w2, top_k),
                    "argus": partial(moe.moe_layer, x, router, w1, w2, top_k, bias=bias),
                }
                if args.combine_kernel:
                    other = not moe.COMBINE_KERNEL
                    contenders[f"argus combine {'kernel' if other else 'torch'}"] = partial(
                        moe.moe_layer, x, router, w1, w2, top_k, bias=bias, combine_kernel=other
                    )
                if args.fused_gather:
                    other = not moe.FUSED_GATHER
                    contenders[f"argus gather {'fused' if other else 'index_select'}"] = partial(
                        moe.moe_layer, x, router, w1, w2, top_k, bias=bias, fused_gather=other
                    )
                if args.direct_store:
                    contenders["argus direct store"] = partial(
                        with_plain_epilogue, "direct", moe.moe_layer, x, router, w1, w2, top_k, bias=bias
                    )
                if compiled is not None:
                    contenders["compiled"] = partial(compiled, x, router, bias, w1, w2, top_k)
                errs, launches = {}, {}
                for name, fn in contenders.items():
                    try:
                        if args.graphs:  # the replay is timed; its output is checked after a replay
                            replay, captured = graphed(torch, fn)
                            replay()
                            got, fn = captured.float(), replay
                        else:
                            got = fn().float()
                        torch.cuda.synchronize()
                    except Exception as e:  # noqa: BLE001 - report, time the others
                        print(f"| {label} | {tokens} | {kind} | {name} | failed: {type(e).__name__}: {e} |")
                        continue
                    err = float((got - ref).abs().max() / ref.abs().max())
                    errs[name] = err
                    if err <= 2e-2:
                        launches[name] = fn
                    else:
                        failed |= name == "argus"
                times = interleaved(torch, launches, args.rounds, scratch)
                med = {n: statistics.median(t) for n, t in times.items()}
                flops = 6.0 * tokens * top_k * hidden * inter
                weight_bytes = touched_experts(x, router, bias, top_k) * 3 * hidden * inter * 2
                for name in contenders:
                    if name not in errs:
                        continue
                    ms = med.get(name)
                    row = dict(
                        shape=label, H=hidden, I=inter, E=experts, k=top_k, T=tokens, routing=kind, contender=name,
                        ms=ms, err=errs[name], tflops=None if ms is None else flops / ms / 1e9,
                        x_composed=None if ms is None else med.get("composed", float("nan")) / ms,
                        x_compiled=None if ms is None or "compiled" not in med else med["compiled"] / ms,
                        weight_bytes=weight_bytes, weights_tb_s=None if ms is None else weight_bytes / ms / 1e9,
                    )  # fmt: skip
                    rows.append(row)
                    if ms is None:
                        print(f"| {label} | {tokens} | {kind} | {name} | WRONG | | | | | | {errs[name]:.1e} |")
                        continue
                    xc = "" if row["x_compiled"] is None else f"{row['x_compiled']:.3f}"
                    print(
                        f"| {label} H={hidden} I={inter} E={experts} k={top_k} | {tokens} | {kind} | {name} | "
                        f"{ms:.3f} | {row['tflops']:.0f} | {row['weights_tb_s']:.2f} | "
                        f"{100 * row['weights_tb_s'] * 1e12 / HBM_BYTES_PER_S:.0f} | {row['x_composed']:.3f} | {xc} | "
                        f"{errs[name]:.1e} |",
                        flush=True,
                    )
            del x
        del w1, w2, router
        torch.cuda.empty_cache()
    if args.json:
        env = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "cuda": torch.version.cuda}
        Path(args.json).write_text(json.dumps({"env": env, "argv": sys.argv, "rows": rows}, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
