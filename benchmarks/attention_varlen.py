"""Variable-length attention (issue #22, "a varlen batch, lengths drawn between 128 and 8k: >= 1.00x cuDNN /
FlashAttention-2 varlen"): `argus.kernels.sdpa_varlen` against FlashAttention-2's varlen kernel
(``torch.ops.aten._flash_attention_forward`` with cumulative sequence offsets) and SDPA on nested (jagged) tensors
with the cuDNN backend, where each runs, interleaved in one process, L2 flushed before every launch
(`gemm_parity.interleaved_times`), medians of the rounds.

Usage (from the repository root on a GPU machine)::

    PYTHONPATH=src python benchmarks/attention_varlen.py [--rounds 20] [--window W] [--json F]

Rows: bf16, 16 sequences whose query (= key) lengths are drawn uniformly in 128..8192 (seeded), head dims 64, 128,
256, causal (bottom-right, which for lq = lk is torch's ``is_causal``) and not, 16 query heads, and grouped heads
(32 over 8). Every output is checked first against torch's math backend in f32, sequence by sequence (max abs error
<= 2e-2). TFLOP/s count 4 * H * (kept query-key pairs) * D over the sequences. With ``--window W`` only the causal
rows run, each query seeing its last W keys, against FA2's ``window_size=(W - 1, 0)`` (SDPA's nested tensors take
no window) and a math reference with the window as a boolean mask.
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

ROWS = (  # (label, H, HK, D, causal)
    ("d64", 16, 16, 64, False),
    ("d64 causal", 16, 16, 64, True),
    ("d128", 16, 16, 128, False),
    ("d128 causal", 16, 16, 128, True),
    ("GQA 32/8 d128", 32, 8, 128, False),
    ("GQA 32/8 d128 causal", 32, 8, 128, True),
    ("d256", 16, 16, 256, False),
    ("d256 causal", 16, 16, 256, True),
)


def _fa2(torch, q, k, v, cu, longest: int, causal: bool, window: int = 0):  # noqa: ANN001, ANN202
    """FlashAttention-2's varlen forward through torch's operator (its output); a window W is FA2's
    ``window_size=(W - 1, 0)``."""
    extra = {"window_size_left": window - 1, "window_size_right": 0} if window else {}
    out = torch.ops.aten._flash_attention_forward(q, k, v, cu, cu, longest, longest, 0.0, causal, False, **extra)
    return out[0]


def _kept_pairs(n: int, causal: bool, window: int) -> int:
    """The query-key pairs one sequence of n tokens keeps (lq = lk)."""
    if window:
        w = min(window, n)
        return w * (w + 1) // 2 + (n - w) * w
    return n * (n + 1) // 2 if causal else n * n


def _cudnn_nested(torch, q, k, v, cu, causal: bool):  # noqa: ANN001, ANN202
    """SDPA on jagged nested tensors (B, j, H, D) viewed as (B, H, j, D), the cuDNN backend."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.functional import scaled_dot_product_attention as torch_sdpa

    nq, nk, nv = (torch.nested.nested_tensor_from_jagged(x, cu.long()).transpose(1, 2) for x in (q, k, v))
    with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
        return torch_sdpa(nq, nk, nv, is_causal=causal, enable_gqa=q.shape[1] != k.shape[1])


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", type=Path)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--sequences", type=int, default=16)
    parser.add_argument(
        "--window", type=int, default=0, help="a sliding window W on the causal rows (the others are skipped)"
    )
    args = parser.parse_args()

    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.functional import scaled_dot_product_attention as torch_sdpa

    from argus.kernels import sdpa_varlen as SV

    for line in environment(torch):
        print(line)
    print(f"cuDNN {torch.backends.cudnn.version()}")
    g = torch.Generator().manual_seed(22)
    lengths = torch.randint(128, 8193, (args.sequences,), generator=g).tolist()
    print(f"lengths ({len(lengths)} sequences, {sum(lengths)} tokens): {lengths}")
    cu = torch.tensor([0, *torch.tensor(lengths).cumsum(0).tolist()], dtype=torch.int32, device="cuda")
    scratch = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    names = ("argus", "fa2", "cudnn")
    print("\n| row | " + " | ".join(f"{n} ms | TFLOP/s" for n in names) + " | x FA2 | x cuDNN | err |")
    print("|---|" + "---|" * (2 * len(names) + 3))
    results, failed = [], False
    rows = [(f"{lb} window {args.window}", *rest) for lb, *rest in ROWS if rest[-1]] if args.window else ROWS
    window = args.window
    for label, h, hk, d, causal in rows:
        total = sum(lengths)
        q = torch.randn(total, h, d, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(total, hk, d, device="cuda", dtype=torch.bfloat16)
        v = torch.randn(total, hk, d, device="cuda", dtype=torch.bfloat16)
        pairs = sum(_kept_pairs(n, causal, window) for n in lengths)
        flops = 4.0 * h * pairs * d
        o, _, prepared = SV.prepare(q, k, v, cu, cu, causal=causal, **({"window": window} if window else {}))
        contenders = {"argus": lambda prepared=prepared: [p.launch() for p in prepared]}
        contenders["fa2"] = lambda q=q, k=k, v=v, causal=causal: _fa2(torch, q, k, v, cu, max(lengths), causal, window)
        if not window:  # SDPA's nested tensors take no window
            contenders["cudnn"] = lambda q=q, k=k, v=v, causal=causal: _cudnn_nested(torch, q, k, v, cu, causal)
        row = {"row": label, "heads": [h, hk], "d": d, "causal": causal, "window": window, "lengths": lengths}
        outs, launches = {}, {}
        for name, fn in contenders.items():
            try:
                got = fn()
                torch.cuda.synchronize()
                outs[name] = o if name == "argus" else (got.transpose(1, 2).values() if got.is_nested else got)
                launches[name] = fn
            except Exception as e:  # noqa: BLE001 - a baseline that does not run is reported, the others timed
                row[f"{name}_error"] = f"{type(e).__name__}: {str(e)[:160]}"
                print(f"| {label} | {name} failed: {row[f'{name}_error']} |")
        errors = {name: 0.0 for name in outs}
        with sdpa_kernel([SDPBackend.MATH]):
            for b, n in enumerate(lengths):
                s0 = int(cu[b])
                qb = q[s0 : s0 + n].transpose(0, 1).float()
                kb, vb = (x[s0 : s0 + n].transpose(0, 1).float().repeat_interleave(h // hk, dim=0) for x in (k, v))
                if window:
                    i = torch.arange(n, device="cuda")
                    keep = (i[None, :] <= i[:, None]) & (i[None, :] > i[:, None] - window)
                    ref = torch_sdpa(qb, kb, vb, attn_mask=keep)
                else:
                    ref = torch_sdpa(qb, kb, vb, is_causal=causal)
                for name, out in outs.items():
                    if out.shape[0] == total:  # (tokens, heads, dim)
                        err = (out[s0 : s0 + n].transpose(0, 1).float() - ref).abs().max().item()
                        errors[name] = max(errors[name], err)
                del qb, kb, vb, ref
        ok = errors.get("argus", 1.0) <= 2e-2
        failed |= not ok
        for name in list(launches):
            if errors.get(name, 1.0) > 2e-2 and name != "argus":
                row[f"{name}_error"] = f"max abs error {errors[name]:.2e} against the f32 reference"
                del launches[name]
        if not ok:
            launches.pop("argus", None)
        times = interleaved_times(torch, launches, args.rounds, scratch)
        med = {n: statistics.median(t) for n, t in times.items()}
        row.update({f"{n}_ms": ms for n, ms in med.items()}, errors=errors, ok=ok)
        row.update({f"{n}_tflops": flops / ms / 1e9 for n, ms in med.items()})

        def ratio(name: str, med=med, row=row) -> str:  # noqa: ANN001
            if "argus" not in med or name not in med:
                return "—"
            row[f"x_{name}"] = med[name] / med["argus"]
            return f"{row[f'x_{name}']:.2f}"

        cells = []
        for n in names:
            cells += [f"{med[n]:.3f}", f"{flops / med[n] / 1e9:.0f}"] if n in med else ["—", "—"]
        print(
            f"| {label} | {' | '.join(cells)} | {ratio('fa2')} | {ratio('cudnn')} | {errors.get('argus', 1.0):.1e}"
            f"{'' if ok else ' WRONG'} |",
            flush=True,
        )
        results.append(row)
        del q, k, v, o, prepared, contenders, launches, outs
        torch.cuda.empty_cache()
    for line in environment(torch):
        print("after:", line)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
