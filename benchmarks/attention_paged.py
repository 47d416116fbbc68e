"""Decoding against a paged KV cache (issue #22, "paged KV"): `argus.kernels.sdpa_paged` against the same keys and
values laid out contiguously, run by argus's `sdpa` and by torch's SDPA (cuDNN and FlashAttention-2 backends),
interleaved in one process, L2 flushed before every launch (`gemm_parity.interleaved_times`), medians: what paging
costs, and the bandwidth it reaches.

Usage (from the repository root on a GPU machine)::

    PYTHONPATH=src python benchmarks/attention_paged.py [--rounds 20] [--window W] [--json F]

Rows: bf16, one query token per sequence, every sequence of the row the same length (so that the contiguous
contenders take it), its pages drawn at random from a pool twice the size needed (a fragmented cache). Each output
is checked first against torch's math backend in f32 on the gathered keys (max abs error <= 2e-2). Bandwidth counts
the K and V bytes the sequences hold (and Q, O) over the median time, of the GPU's HBM bandwidth (an H100 SXM's 3.35
TB/s, an H200's 4.8). "paged" is the library's plan with split keys merged in the kernel's own launch where the grid
fits one wave (`sdpa_paged.COMBINE_IN_KERNEL` on, whatever its default); "paged-2" the same split in two launches
(the paged kernel, then `attention_combine`), timed only where they differ and checked equal to "paged" bit for bit.
With ``--window W`` the paged call attends to each sequence's last W tokens (vLLM's sliding window) and the
contiguous contenders (and the reference) take those W tokens sliced out; bandwidth counts the window's bytes.
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

HBM = {"H100": 3.35e12, "H200": 4.8e12}
ROWS = (  # (label, B, H, HK, L, D, page)
    ("llama3-8b", 1, 32, 8, 8192, 128, 256),
    ("llama3-8b", 4, 32, 8, 4096, 128, 256),
    ("llama3-8b", 1, 32, 8, 32768, 128, 256),
    ("llama3-8b", 8, 32, 8, 8192, 128, 256),
    ("llama3-8b", 8, 32, 8, 32768, 128, 256),
    ("llama3-8b", 32, 32, 8, 4096, 128, 256),
    ("llama3-8b", 64, 32, 8, 16384, 128, 256),
    ("llama3-8b page 64", 8, 32, 8, 32768, 128, 64),
    ("llama3-8b page 16", 8, 32, 8, 32768, 128, 16),
    ("llama3-8b page 16", 1, 32, 8, 8192, 128, 16),
    ("llama3-70b", 4, 64, 8, 32768, 128, 256),
    ("d64 16/2", 16, 16, 2, 16384, 64, 128),
)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", type=Path)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--window", type=int, default=0, help="a sliding window of the last W tokens")
    args = parser.parse_args()
    window = args.window

    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.functional import scaled_dot_product_attention as torch_sdpa

    from argus.kernels import sdpa as S
    from argus.kernels import sdpa_paged as SP

    for line in environment(torch):
        print(line)
    print(f"cuDNN {torch.backends.cudnn.version()}")
    scratch = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    hbm = next((v for k, v in HBM.items() if k in torch.cuda.get_device_name()), HBM["H200"])
    names = ("paged", "paged-2", "dense", "cudnn", "fa2")
    print("\n| row | B | H/HK | L | page | config | " + " | ".join(f"{n} µs" for n in names)
          + " | paged TB/s | % HBM | x cuDNN | x dense | x paged-2 | err |")  # fmt: skip
    print("|" + "---|" * (6 + len(names) + 6))
    results, failed = [], False
    two = o_two = None
    for label, b, h, hk, length, d, page in ROWS:
        g = torch.Generator(device="cuda").manual_seed(b + length + page)
        per_seq = length // page
        pool = 2 * b * per_seq
        kc = torch.randn(pool, page, hk, d, device="cuda", generator=g).to(torch.bfloat16)
        vc = torch.randn(pool, page, hk, d, device="cuda", generator=g).to(torch.bfloat16)
        table = torch.randperm(pool, device="cuda", generator=g)[: b * per_seq].view(b, per_seq).to(torch.int32)
        lens = torch.full((b,), length, dtype=torch.int32, device="cuda")
        q = torch.randn(b, h, d, device="cuda", generator=g).to(torch.bfloat16)
        # the same keys and values, contiguous (B, HK, L, D)
        kept = min(window, length) if window else length
        k, v = (
            c[table.long()].reshape(b, length, hk, d)[:, length - kept :].transpose(1, 2).contiguous() for c in (kc, vc)
        )
        extra = {"window": window} if window else {}
        q4 = q[:, :, None]
        default = SP.COMBINE_IN_KERNEL
        SP.COMBINE_IN_KERNEL = True  # "paged": merged where the grid is one wave, whatever the default
        try:
            o_paged, _, paged = SP.prepare(q, kc, vc, table, lens, max_seqlen_k=length, **extra)
            plan = SP.PagedPlan(SP.problem_of(q, kc, vc, table, lens, max_seqlen_k=length, **extra))
        finally:
            SP.COMBINE_IN_KERNEL = default
        o_dense, _, dense = S.prepare(q4, k, v)
        row = {
            "row": label,
            "shape": [b, h, hk, length, d, page],
            "window": window,
            "config": plan.describe()["params"],
        }
        launches = {
            "paged": lambda paged=paged: [x.launch() for x in paged],
            "dense": lambda dense=dense: [x.launch() for x in dense],
        }
        if len(paged) == 1 and plan.splits > 1:  # merged: the two launches too
            SP.COMBINE_IN_KERNEL = False
            try:
                o_two, _, two = SP.prepare(q, kc, vc, table, lens, max_seqlen_k=length, **extra)
            finally:
                SP.COMBINE_IN_KERNEL = default
            launches["paged-2"] = lambda two=two: [x.launch() for x in two]
        for name, backend in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("fa2", SDPBackend.FLASH_ATTENTION)):

            def run(backend=backend, q4=q4, k=k, v=v) -> None:  # noqa: ANN001
                with sdpa_kernel([backend]):
                    torch_sdpa(q4, k, v, enable_gqa=True)

            try:
                run()
                launches[name] = run
            except Exception as e:  # noqa: BLE001 - a backend that does not take the row is left out
                row[f"{name}_error"] = f"{type(e).__name__}: {str(e)[:120]}"
        for fn in launches.values():
            fn()
        torch.cuda.synchronize()
        err = 0.0
        with sdpa_kernel([SDPBackend.MATH]):
            for i in range(b):
                ref = torch_sdpa(
                    q4[i : i + 1].float(),
                    k[i : i + 1].float().repeat_interleave(h // hk, dim=1),
                    v[i : i + 1].float().repeat_interleave(h // hk, dim=1),
                )[0, :, 0]
                err = max(err, (o_paged[i].float() - ref).abs().max().item())
                err = max(err, (o_dense[i, :, 0].float() - ref).abs().max().item())
        ok = err <= 2e-2
        if "paged-2" in launches:
            same = torch.equal(o_paged, o_two)
            row["merged_equal_two_launches"] = same
            ok &= same
        failed |= not ok
        if not ok:
            launches.pop("paged")
            launches.pop("paged-2", None)
        times = interleaved_times(torch, launches, args.rounds, scratch)
        med = {n: statistics.median(t) for n, t in times.items()}
        if "paged-2" in times:  # relaunched many times on the same counters: still the two launches' result
            torch.cuda.synchronize()
            row["merged_equal_after_timing"] = same = torch.equal(o_paged, o_two)
            failed |= not same
        moved = 2 * (2 * b * hk * kept * d + 2 * b * h * d)
        rate = moved / (med["paged"] * 1e-3) if "paged" in med else float("nan")
        row.update({f"{n}_ms": ms for n, ms in med.items()}, err=err, ok=ok, rate=rate, hbm=rate / hbm)

        def ratio(name: str, med=med) -> str:  # noqa: ANN001
            return f"{med[name] / med['paged']:.2f}" if "paged" in med and name in med else "—"

        cells = [f"{med[n] * 1e3:.1f}" if n in med else "—" for n in names]
        merged = " merged" if plan.combined else ""
        tag = f" window {window}" if window else ""
        print(
            f"| {label}{tag} | {b} | {h}/{hk} | {length} | {page} | split{plan.splits}{merged} | {' | '.join(cells)} | "
            f"{rate / 1e12:.2f} | {100 * rate / hbm:.0f} | {ratio('cudnn')} | {ratio('dense')} | {ratio('paged-2')} | "
            f"{err:.1e}"
            f"{'' if ok else ' WRONG'} |",
            flush=True,
        )
        results.append(row)
        del kc, vc, k, v, paged, dense, launches
        two = o_two = None
        torch.cuda.empty_cache()
    for line in environment(torch):
        print("after:", line)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
