"""Decoding attention (issue #22, "decode >= 80 % of HBM bandwidth"): `argus.kernels.sdpa` on one query token
against a long KV cache, against torch's SDPA (cuDNN and FlashAttention-2 backends), interleaved in one process,
L2 flushed before every launch (`gemm_parity.interleaved_times`), medians of the rounds.

Usage (from the repository root on a GPU machine)::

    PYTHONPATH=src python benchmarks/attention_decode.py [--rounds 20] [--json F] [--layout bshd] [--tokens N]
        [--causal]

Rows: bf16, grouped heads of Llama-3-8B (32 query heads over 8 key/value heads) and -70B (64/8), multi-head (32/32)
and multi-query (16/1) attention, head dims 128 and 64, batch 1..64, KV lengths 4k..128k. Contenders, each checked
against torch's math backend in f32 first (max abs error <= 2e-2, batch by batch):

* ``argus``: the configuration `sdpa.choose` makes (the keys split by `sdpa.key_splits`, waves counted);
* ``argus-prev``: the same with the keys split by the rule before it (``ceil(SMS / blocks)`` ways, no waves
  counted), where that differs;
* ``argus-s3``: three K/V stages (``choose`` keeps two), where they fit;
* ``argus-pdl``: the chosen configuration launched as programmatic dependents (`sdpa.DEPENDENT_LAUNCHES` on: the
  combine's launch overlaps the split kernel's tail; off by default). Run 2 (``decode2.md``) timed the switch the
  other way round: ``argus`` there had it on and ``argus-nodep`` off;
* ``argus-merged``: the chosen configuration with the split keys merged in the kernel's own launch
  (`AttentionConfig.COMBINED`, `flash_attention_combined`: the splits of a unit meet at a group barrier; no
  `attention_combine` launch), where the split grid is one wave; `choose` takes it only with
  `sdpa.COMBINE_IN_KERNEL`, which this column decides;
* ``cudnn``, ``fa2``: torch's SDPA backends (``enable_gqa``).

With ``--layout bshd`` the cache is FlashAttention's (B, S, HK, D) (q (B, 1, H, D)), and the columns are: ``argus``
(`sdpa(..., layout="bshd")`: K and V read in place, heads packed and keys split as for (B, H, S, D) tensors,
`sdpa.DECODE_KV_IN_PLACE`), ``argus-prev`` (the same call with that switch off: the (B, S, H, D) kernel, one block a
query head), ``argus-bhsd`` (argus on (B, H, S, D) copies of the same data, the copies not timed), and torch's
backends on the (B, H, S, D) views of the bshd tensors (``transpose(1, 2)``, no copy).

With ``--tokens N`` each row has N query tokens (speculative decoding's drafts, a chunk of a prefill), with
``--causal`` masked at the bottom right (token i sees keys j <= i + SK - N; torch's backends take
``causal_lower_right``, a backend that does not is left out). In bshd the query and output of several tokens are
copied to and from (B, H, S, D) inside the timed call (`sdpa.query_copied`).

Bandwidth counts the bytes a decode must move once: K and V, plus Q and O (``B*HK*SK*(D+DV) + B*H*N*(D+DV)``
16-bit elements), over the median time; "% HBM" is of the H200's 4.8 TB/s (an H100's 3.35), "% copy" of what ``torch``'s
device-to-device copy of 1 GiB reaches in the same run (read + write).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import replace
from functools import partial
from pathlib import Path

try:
    import argus  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gemm_parity import interleaved_times  # noqa: E402
from gemm_variants import environment  # noqa: E402

#: HBM bandwidth by device name (the first name the device's contains), the H200's otherwise
HBM_BYTES_PER_S = {"H100": 3.35e12, "H200": 4.8e12}
DEFAULT_HBM_BYTES_PER_S = HBM_BYTES_PER_S["H200"]

ROWS = (  # (label, B, H, HK, SK, D)
    ("llama3-8b", 1, 32, 8, 8192, 128),
    ("llama3-8b", 1, 32, 8, 32768, 128),
    ("llama3-8b", 1, 32, 8, 131072, 128),
    ("llama3-8b", 4, 32, 8, 8192, 128),
    ("llama3-8b", 4, 32, 8, 65536, 128),
    ("llama3-8b", 16, 32, 8, 8192, 128),
    ("llama3-8b", 16, 32, 8, 32768, 128),
    ("llama3-8b", 64, 32, 8, 4096, 128),
    ("llama3-8b", 64, 32, 8, 16384, 128),
    ("llama3-70b", 1, 64, 8, 32768, 128),
    ("llama3-70b", 8, 64, 8, 8192, 128),
    ("mha", 1, 32, 32, 16384, 128),
    ("mha", 8, 32, 32, 4096, 128),
    ("mqa", 4, 16, 1, 32768, 128),
    ("gqa-d64", 4, 32, 8, 16384, 64),
    ("gqa-d64", 2, 16, 2, 65536, 64),
)


def previous_splits(blocks: int, key_tiles: int, sms: int) -> int:
    """The split rule `sdpa.choose` had before `key_splits`: enough splits for one block per SM, no waves counted."""
    from argus.kernels import sdpa as S

    if blocks >= sms:
        return 1
    return max(1, min(-(-sms // blocks), key_tiles // S.MIN_TILES_PER_SPLIT, S.MAX_SPLITS))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", type=Path)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--layout", choices=("bhsd", "bshd"), default="bhsd")
    parser.add_argument("--tokens", type=int, default=1, help="query tokens per row")
    parser.add_argument("--causal", action="store_true", help="a causal mask aligned at the bottom right")
    args = parser.parse_args()

    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.attention.bias import causal_lower_right
    from torch.nn.functional import scaled_dot_product_attention as torch_sdpa

    from argus.kernels import sdpa as S

    for line in environment(torch):
        print(line)
    print(f"cuDNN {torch.backends.cudnn.version()}")
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    device = torch.cuda.get_device_name(0)
    hbm = next((rate for name, rate in HBM_BYTES_PER_S.items() if name in device), DEFAULT_HBM_BYTES_PER_S)
    print(f"HBM bandwidth taken as {hbm / 1e12:.2f} TB/s")
    scratch = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    src = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    copy_ms = statistics.median(interleaved_times(torch, {"copy": partial(dst.copy_, src)}, 20, scratch)["copy"])
    copy_rate = 2 * src.numel() / copy_ms / 1e-3
    del src, dst
    print(f"device copy of 1 GiB: {copy_ms:.3f} ms, {copy_rate / 1e12:.2f} TB/s (read + write)")
    names = ("argus", "argus-prev", "argus-s3", "argus-pdl", "argus-merged", "cudnn", "fa2")
    if args.layout == "bshd":
        names = ("argus", "argus-prev", "argus-bhsd", "cudnn", "fa2")
    print("\n| row | B | H/HK | SK | D | config | " + " | ".join(f"{n} ms" for n in names) + " | argus TB/s | % HBM "
          "| % copy | x cuDNN | x FA2 | x prev | x pdl | x merged | x bhsd | err |")  # fmt: skip
    print("|" + "---|" * (6 + len(names) + 10))
    results, failed = [], False
    sq, causal = args.tokens, args.causal
    for label, b, h, hk, sk, d in ROWS:
        g = torch.Generator(device="cuda").manual_seed(b * 7 + h * 13 + sk + d)
        q = torch.randn(b, h, sq, d, device="cuda", generator=g).to(torch.bfloat16)
        k = torch.randn(b, hk, sk, d, device="cuda", generator=g).to(torch.bfloat16)
        v = torch.randn(b, hk, sk, d, device="cuda", generator=g).to(torch.bfloat16)
        bhsd = (q, k, v)  # the reference's (and argus-bhsd's) tensors
        if args.layout == "bshd":  # the timed tensors: (B, S, heads, D), torch's backends on their bhsd views
            q, k, v = (x.transpose(1, 2).contiguous() for x in bhsd)
        problem = S.problem_of(q, k, v, causal=causal, layout=args.layout)
        chosen = S.choose(problem)
        matrices, rows, _ = S.kernel_extents(problem, chosen.PACK)
        blocks = -(-rows // chosen.BM) * matrices
        key_tiles = -(-sk // chosen.BN)
        variants = {"argus": chosen}
        if args.layout == "bshd":
            S.DECODE_KV_IN_PLACE = False
            variants["argus-prev"] = S.choose(problem)  # the (B, S, H, D) kernel
            S.DECODE_KV_IN_PLACE = True
            variants["argus-bhsd"] = S.choose(S.problem_of(*bhsd, causal=causal))
        else:
            # (in two launches: the previous rule's splits may not fit one wave, which the merge in the launch needs)
            prev = replace(chosen, SPLITS=previous_splits(blocks, key_tiles, sms), COMBINED=False)
            if prev != chosen:
                variants["argus-prev"] = prev
            variants["argus-pdl"] = chosen  # the same, launched as programmatic dependents
            s3 = replace(chosen, STAGES=3)
            if S.fits(problem, s3):
                variants["argus-s3"] = s3
            merged = replace(chosen, COMBINED=True)
            if S.combined_refusal(problem, merged, sms) is None:
                variants["argus-merged"] = merged
        keep = torch.ones(sq, sk, device="cuda", dtype=torch.bool).tril(diagonal=sk - sq) if causal else None
        with sdpa_kernel([SDPBackend.MATH]):  # the f32 reference, one batch at a time
            ref = torch.cat(
                [
                    torch_sdpa(
                        bhsd[0][i : i + 1].float(),
                        bhsd[1][i : i + 1].float().repeat_interleave(h // hk, dim=1),
                        bhsd[2][i : i + 1].float().repeat_interleave(h // hk, dim=1),
                        attn_mask=keep,
                    )
                    for i in range(b)
                ]
            )
        launches, errors, kept = {}, {}, []
        row = {"row": label, "shape": [b, h, hk, sq, sk, d], "config": chosen.label(), "blocks": blocks}
        row["causal"] = causal
        row["layout"] = args.layout
        for name, config in variants.items():
            try:
                S.DEPENDENT_LAUNCHES = name == "argus-pdl"
                S.DECODE_KV_IN_PLACE = name != "argus-prev"
                tensors, layout = (bhsd, "bhsd") if name == "argus-bhsd" else ((q, k, v), args.layout)
                o, lse, prepared = S.prepare(*tensors, causal=causal, config=config, layout=layout)
                S.DEPENDENT_LAUNCHES = False
                S.DECODE_KV_IN_PLACE = True
                if layout == "bshd":  # (B, SQ, H, DV): the reference's (B, H, SQ, DV)
                    o = o.transpose(1, 2)

                def launch(prepared=prepared) -> None:  # noqa: ANN001
                    for one in prepared:
                        one.launch()

                launch()
                torch.cuda.synchronize()
                errors[name] = (o.float() - ref).abs().max().item()
                row[f"{name}_config"] = config.label()
                if errors[name] <= 2e-2:
                    launches[name] = launch
                kept.append((o, lse, prepared))
            except Exception as e:  # noqa: BLE001 - a variant that fails is reported, the run goes on
                row[f"{name}_error"] = f"{type(e).__name__}: {str(e)[:200]}"
                print(f"| {label} | {name} FAILED: {row[f'{name}_error']} |")
        for name, backend in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("fa2", SDPBackend.FLASH_ATTENTION)):
            views = tuple(x.transpose(1, 2) for x in (q, k, v)) if args.layout == "bshd" else (q, k, v)

            mask = causal_lower_right(sq, sk) if causal else None

            def run(backend=backend, views=views, gqa=hk != h, mask=mask) -> None:  # noqa: ANN001
                with sdpa_kernel([backend]):
                    torch_sdpa(*views, attn_mask=mask, enable_gqa=gqa)

            try:
                run()
                torch.cuda.synchronize()
                launches[name] = run
            except Exception as e:  # noqa: BLE001 - a backend that does not take the row is left out
                row[f"{name}_error"] = f"{type(e).__name__}: {str(e)[:120]}"
        del ref
        times = interleaved_times(torch, launches, args.rounds, scratch)
        med = {n: statistics.median(t) for n, t in times.items()}
        row.update({f"{n}_ms": ms for n, ms in med.items()}, errors=errors)
        moved = 2 * (b * hk * sk * 2 * d + b * h * sq * 2 * d)
        ok = "argus" in med
        failed |= not ok
        rate = moved / med["argus"] / 1e-3 if ok else float("nan")
        row.update(bytes=moved, rate=rate, hbm=rate / hbm, copy=rate / copy_rate)

        def ratio(name: str, med=med, ok=ok) -> str:  # noqa: ANN001
            return f"{med[name] / med['argus']:.2f}" if ok and name in med else "—"

        cells = [f"{med[n]:.4f}" if n in med else "—" for n in names]
        err = max(errors.values()) if errors else float("nan")
        title = label + (f" x{sq}" if sq > 1 else "") + (" causal" if causal else "")
        print(
            f"| {title} | {b} | {h}/{hk} | {sk} | {d} | {chosen.label()} | {' | '.join(cells)} | {rate / 1e12:.2f} | "
            f"{100 * rate / hbm:.0f} | {100 * rate / copy_rate:.0f} | {ratio('cudnn')} | {ratio('fa2')} "
            f"| {ratio('argus-prev')} | {ratio('argus-pdl')} | {ratio('argus-merged')} | {ratio('argus-bhsd')} "
            f"| {err:.1e}"
            f"{'' if ok else ' WRONG'} |",
            flush=True,
        )
        results.append(row)
        del kept, launches, q, k, v, bhsd
        torch.cuda.empty_cache()
    for line in environment(torch):
        print("after:", line)
    if args.json:
        args.json.write_text(json.dumps({"copy_tb_s": copy_rate / 1e12, "rows": results}, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
