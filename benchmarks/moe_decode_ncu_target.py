"""Launch the MoE decode products once each inside an NVTX range, for Nsight Compute (issue #23)::

    ncu --nvtx --nvtx-include "prof/" --section SpeedOfLight ... \
        python benchmarks/moe_decode_ncu_target.py Qwen3-30B-A3B:1 Mixtral:1

For each shape and token count (a random balanced routing, as `moe_decode_configs.py` draws it), the up-projection
as `moe.moe_layer` runs it (the fused SwiGLU kernel, or the split plain product and `moe_glu_sum`), the
down-projection as `moe.decode_plan` launches it, and ``torch._grouped_mm`` on the same rows: each prepared and
launched twice outside the range (compiled, loaded, warm), then once inside it (every range is named "prof":
ncu's `--nvtx-include "prof/"` matches a range's whole name). What it prints is each launch's label in order, to
match the report's kernels to products.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

try:
    import argus  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

sys.path.insert(0, str(Path(__file__).resolve().parent))

from moe_decode_configs import SHAPES  # noqa: E402


def main() -> int:
    import torch

    from argus.kernels import moe

    p = argparse.ArgumentParser()
    p.add_argument("cases", nargs="+", help="SHAPE:TOKENS, e.g. Qwen3-30B-A3B:1")
    args = p.parse_args()
    shapes = {s[0]: s[1:] for s in SHAPES}
    dev = torch.device("cuda")
    for case in args.cases:
        label, tokens = case.split(":")
        hidden, inter, experts, top_k = shapes[label]
        tokens = int(tokens)
        torch.manual_seed(0)
        w1 = (torch.randn(experts, hidden, 2 * inter, device=dev) * hidden**-0.5).to(torch.bfloat16)
        w2 = (torch.randn(experts, inter, hidden, device=dev) * inter**-0.5).to(torch.bfloat16)
        g = torch.Generator().manual_seed(tokens)
        chosen = torch.stack([torch.randperm(experts, generator=g)[:top_k] for _ in range(tokens)])
        offs = torch.bincount(chosen.reshape(-1), minlength=experts).cumsum(0).to(torch.int32).to(dev)
        rows = tokens * top_k
        a = torch.randn(rows, hidden, device=dev).to(torch.bfloat16)
        h = torch.randn(rows, inter, device=dev).to(torch.bfloat16)
        scale = torch.ones(rows, dtype=torch.float32, device=dev)
        launches = []
        split = moe.decode_up_split(rows, inter, hidden, experts)
        if split is None:
            launches.append(("up fused", moe.prepare(a, w1, offs, epilogue="swiglu", scale=scale)[1].launch))
        else:
            slices, first = moe.prepare(a, w1, offs, config=split)
            _, second = moe.prepare_glu_sum(slices, scale)
            launches.append((f"up split {split['BN']}x{split['SPLITS']}", first.launch))
            launches.append(("up gated sum", second.launch))
        down = moe.decode_plan(rows, hidden, inter, experts)
        launches.append((f"down {down['BN']}x{down.get('SPLITS', 1)}", moe.prepare(h, w2, offs, config=down)[1].launch))
        launches.append(("torch up", lambda a=a, w1=w1, offs=offs: torch._grouped_mm(a, w1, offs=offs)))
        launches.append(("torch down", lambda h=h, w2=w2, offs=offs: torch._grouped_mm(h, w2, offs=offs)))
        for _, launch in launches:
            launch()
            launch()
        torch.cuda.synchronize()
        for name, launch in launches:
            print(f"{label} T={tokens}: {name}", flush=True)
            torch.cuda.nvtx.range_push("prof")  # one name: ncu's "prof/" matches a push/pop range by its whole name
            launch()
            torch.cuda.synchronize()
            torch.cuda.nvtx.range_pop()
        del w1, w2
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
