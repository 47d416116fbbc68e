"""Sliding-window attention (issue #22, session 72): `sdpa(..., causal=True, window=W)` against FlexAttention with a
sliding-window block mask (compiled: torch's only windowed attention) and against argus's own full causal call on
the same tensors (what skipping the key tiles outside the window is worth), interleaved in one process, L2 flushed
before every launch, CUDA events (`gemm_parity.interleaved_times`). Every output is checked first against torch's
SDPA math backend in f32 with the window as an explicit boolean mask (max abs error <= 2e-2).

Usage (from the repository root on a GPU machine)::

    PYTHONPATH=src python benchmarks/attention_window.py [--rounds 15] [--head-dims 64 128] [--lengths 4096 16384]
        [--windows 1024 4096] [--json F]

Rows: bf16, (B, H, S, D) with B * H * S = 65536 (H = 16), SQ = SK = S. TFLOP/s count the pairs the window keeps
(`AttentionProblem.flops`).
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

TOKENS = 65536


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--head-dims", type=int, nargs="+", default=[64, 128])
    parser.add_argument("--lengths", type=int, nargs="+", default=[4096, 16384])
    parser.add_argument("--windows", type=int, nargs="+", default=[1024, 4096])
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.functional import scaled_dot_product_attention as torch_sdpa

    from argus.kernels import sdpa as S

    try:
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention

        flex = torch.compile(flex_attention, dynamic=False)
    except Exception as e:  # noqa: BLE001 - no FlexAttention: the rows are timed without it
        print(f"FlexAttention unavailable: {type(e).__name__}: {e}")
        flex = None
    for line in environment(torch):
        print(line)
    scratch = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    results = []
    print("\n| row | config | argus ms | TFLOP/s | flex ms | × flex | argus causal ms | × own causal | err |")
    print("|---|---|---|---|---|---|---|---|---|")
    for d in args.head_dims:
        for s in args.lengths:
            for w in args.windows:
                if w >= s:
                    continue
                h = 16
                b = max(1, TOKENS // (s * h))
                label = f"d{d} S={s} W={w}"
                g = torch.Generator(device="cuda").manual_seed(s + w + d)
                q, k, v = (torch.randn(b, h, s, d, device="cuda", generator=g).to(torch.bfloat16) for _ in range(3))
                lag = torch.arange(s, device="cuda")[:, None] - torch.arange(s, device="cuda")[None, :]
                keep = (lag >= 0) & (lag < w)
                with sdpa_kernel([SDPBackend.MATH]):
                    ref = torch_sdpa(q.float(), k.float(), v.float(), attn_mask=keep)
                row: dict = {"row": label, "shape": [b, h, s, d], "window": w}
                problem = S.problem_of(q, k, v, causal=True, window=w)
                row["config"] = S.choose(problem).label()
                launches, errors, kept = {}, {}, []
                for name, window in (("argus", w), ("causal", 0)):
                    o, lse, prepared = S.prepare(q, k, v, causal=True, window=window)

                    def launch(prepared=prepared) -> None:  # noqa: ANN001
                        for one in prepared:
                            one.launch()

                    launch()
                    torch.cuda.synchronize()
                    if name == "argus":
                        errors[name] = (o.float() - ref).abs().max().item()
                    launches[name] = launch
                    kept.append((o, lse, prepared))
                if flex is not None:
                    try:
                        # a fresh compile per row: a compiled flex_attention kept the first row's window in its
                        # partial blocks' mask (0.1 max error at W = 4096 after W = 1024 rows, session 72 call 1)
                        torch._dynamo.reset()
                        flex = torch.compile(flex_attention, dynamic=False)

                        def sliding(b_, h_, qi, ki, w=w):  # noqa: ANN001, ANN202
                            return (qi - ki >= 0) & (qi - ki < w)

                        mask = create_block_mask(sliding, B=None, H=None, Q_LEN=s, KV_LEN=s, device="cuda")

                        def run_flex(q=q, k=k, v=v, mask=mask, fn=flex):  # noqa: ANN001, ANN202
                            return fn(q, k, v, block_mask=mask)

                        errors["flex"] = (run_flex().float() - ref).abs().max().item()
                        launches["flex"] = run_flex
                    except Exception as e:  # noqa: BLE001 - reported, the row goes on
                        row["flex_error"] = f"{type(e).__name__}: {str(e)[:200]}"
                del ref
                times = interleaved_times(torch, launches, args.rounds, scratch)
                ms = {name: statistics.median(t) for name, t in times.items()}
                row.update(ms=ms, errors=errors, ok=max(errors.values()) <= 2e-2)
                flops = problem.flops()
                x_flex = f"{ms['flex'] / ms['argus']:.2f}" if "flex" in ms else "—"
                flex_ms = f"{ms['flex']:.4f}" if "flex" in ms else "—"
                print(
                    f"| {label} | {row['config']} | {ms['argus']:.4f} | {flops / ms['argus'] / 1e9:.0f} | {flex_ms} | "
                    f"{x_flex} | {ms['causal']:.4f} | {ms['causal'] / ms['argus']:.2f} | "
                    f"{max(errors.values()):.1e}{'' if row['ok'] else ' WRONG'} |"
                )
                results.append(row)
                del kept, launches
                torch.cuda.empty_cache()
    for line in environment(torch):
        print("after:", line)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0 if all(r.get("ok") for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
