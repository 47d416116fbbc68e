"""Attention (issue #22): `argus.kernels.sdpa.sdpa` against torch's SDPA with the cuDNN and FlashAttention-2
backends, interleaved in one process, L2 flushed before every launch, CUDA events (`gemm_parity.interleaved_times`).

Usage (from the repository root on a GPU machine)::

    PYTHONPATH=src python benchmarks/attention_sweep.py [--json F] [--rounds 20] [--quick] [--lengths S ...]
        [--only TEXT] [--alt ...] [--head-dims 80 96 ...]

Rows: bf16, (B, H, S, D) with B * H * S = 65536 (H = 16, fewer where S is long), S in 1k..16k, head dims 64, 128 and
256, non-causal and causal (SQ = SK, so the bottom-right mask is torch's ``is_causal``); then grouped-query
attention (32 query heads over 8 key/value heads), the (B, S, H, D) layout read in place, causal grids of many waves
(B = 64, H = 16, S = 1k: 8192 blocks), and decoding (one query token against a long KV). Every output is checked
against torch's SDPA math backend in f32 before it is timed (max abs error <= 2e-2). argus runs the configuration
`choose` picks and, with ``--alt FIELD=VALUE,...`` (repeatable, optionally for some rows only: ``--alt
d=64,causal=0:BM=192,CONSUMERS=3``), variants of it beside it, each checked too; the ratios are the chosen
configuration's, the variants' in the last column. TFLOP/s count 4 * B * H * (kept query-key pairs) * D (causal:
about half the pairs).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import replace
from pathlib import Path

try:
    import argus  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gemm_parity import interleaved_times  # noqa: E402
from gemm_variants import environment  # noqa: E402

TOKENS = 65536  # B * H * S of every sweep row


HEAD_DIMS = (64, 128, 256)


def sweep_rows(
    quick: bool, lengths: tuple[int, ...] = (), tokens: int = TOKENS, head_dims: tuple[int, ...] = HEAD_DIMS
) -> list[tuple[str, int, int, int, int, int, int, bool]]:
    """(label, B, H, HK, SQ, SK, D, causal); ``lengths`` replaces the default sequence lengths (lengths that no
    tile divides time the key-tail masks: 1000, 4000); ``tokens`` replaces B * H * S of the prefill rows (a larger
    batch: more blocks, more waves); ``head_dims`` the prefill rows' head dims (each beyond the default three gets a
    decoding row too: "decode B=16 32/8 d96 SK=8192")."""
    rows = []
    lengths = lengths or ((1024, 4096, 16384) if quick else (1024, 2048, 4096, 8192, 16384))
    for d in head_dims:
        for causal in (False, True):
            for s in lengths:
                h = max(1, min(16, tokens // s))
                b = max(1, tokens // (s * h))
                rows.append((f"d{d} {'causal' if causal else 'full'} S={s}", b, h, h, s, s, d, causal))
    rows.append(("GQA 32/8 d128 S=4096", 2, 32, 8, 4096, 4096, 128, False))
    rows.append(("bshd d128 causal S=4096", 4, 16, 16, 4096, 4096, 128, True))
    rows.append(("GQA 32/8 d128 causal S=4096", 2, 32, 8, 4096, 4096, 128, True))
    # grids of many waves (8192 blocks of 128 query rows): where the launch order and each block's fixed cost matter
    for d in (64, 128):
        rows.append((f"waves d{d} causal B=64 S=1024", 64, 16, 16, 1024, 1024, d, True))
    for b, sk in ((1, 8192), (16, 8192), (64, 4096), (4, 65536)):
        rows.append((f"decode B={b} 32/8 d128 SK={sk}", b, 32, 8, 1, sk, 128, False))
    for d in head_dims:
        if d not in HEAD_DIMS:
            rows.append((f"decode B=16 32/8 d{d} SK=8192", 16, 32, 8, 1, 8192, d, False))
    return rows


def _ours(q, k, v, layout: str):  # noqa: ANN001, ANN202
    """q, k, v as `sdpa` takes them: (B, H, S, D), or for "bshd" the (B, S, H, D) tensors under the views."""
    return (q, k, v) if layout == "bhsd" else tuple(x.transpose(1, 2) for x in (q, k, v))


def _fields(text: str) -> dict[str, int]:
    """``"PINGPONG=1,STAGES=3"`` -> {"PINGPONG": 1, "STAGES": 3} (booleans as 0/1)."""
    out = {}
    for item in filter(None, text.split(",")):
        key, _, value = item.partition("=")
        out[key.strip()] = int(value)
    return out


def _variant(text: str) -> tuple[dict[str, int], dict[str, int]]:
    """``"d=64,causal=0:BM=192,CONSUMERS=3"`` -> ({"d": 64, "causal": 0}, {"BM": 192, "CONSUMERS": 3}): the rows
    a variant applies to (head dim ``d``, ``causal`` 0/1, query length ``s``; every row without a filter) and the
    AttentionConfig fields it sets on `choose`'s configuration."""
    where, _, fields = text.rpartition(":")
    return _fields(where), _fields(fields)


def _applies(where: dict[str, int], d: int, causal: bool, s: int) -> bool:
    row = {"d": d, "causal": int(causal), "s": s}
    unknown = set(where) - set(row)
    if unknown:
        raise SystemExit(f"--alt filters on {sorted(unknown)}: the filters are d, causal and s")
    return all(row[key] == value for key, value in where.items())


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", type=Path)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--lengths", type=int, nargs="+", default=[], help="sequence lengths instead of 1k..16k (e.g. 1000 4000)"
    )
    parser.add_argument("--tokens", type=int, default=TOKENS, help="B * H * S of the prefill rows (default 65536)")
    parser.add_argument(
        "--head-dims", type=int, nargs="+", default=list(HEAD_DIMS), help="the prefill rows' head dims (64 128 256)"
    )
    parser.add_argument(
        "--alt",
        type=_variant,
        action="append",
        default=[],
        help="time a variant beside the chosen one (repeatable): AttentionConfig fields, e.g. PINGPONG=1 or "
        "STAGES=3,BN=64, optionally only on some rows: d=64,causal=0:BM=192,CONSUMERS=3",
    )
    parser.add_argument(
        "--only", action="append", default=[], help="the rows whose label starts with this text (repeatable: 'd128 ')"
    )
    args = parser.parse_args()

    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.functional import scaled_dot_product_attention as torch_sdpa

    from argus.kernels import sdpa as S

    for line in environment(torch):
        print(line)
    print(f"cuDNN {torch.backends.cudnn.version()}")
    scratch = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    results = []
    print(
        "\n| row | config | argus ms | TFLOP/s | cuDNN ms | TFLOP/s | FA2 ms | TFLOP/s | ×cuDNN | ×FA2 | err "
        "| variants: TFLOP/s (× cuDNN) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for label, b, h, hk, sq, sk, d, causal in sweep_rows(
        args.quick, tuple(args.lengths), args.tokens, tuple(args.head_dims)
    ):
        if args.only and not any(label.startswith(prefix) for prefix in args.only):
            continue
        g = torch.Generator(device="cuda").manual_seed(b * 7 + h * 13 + sq + sk + d)
        q = torch.randn(b, h, sq, d, device="cuda", generator=g).to(torch.bfloat16)
        k = torch.randn(b, hk, sk, d, device="cuda", generator=g).to(torch.bfloat16)
        v = torch.randn(b, hk, sk, d, device="cuda", generator=g).to(torch.bfloat16)
        layout = "bshd" if label.startswith("bshd") else "bhsd"
        if layout == "bshd":  # the tensors (B, S, H, D); torch's SDPA gets their (B, H, S, D) views, no copy
            q, k, v = (x.transpose(1, 2).contiguous().transpose(1, 2) for x in (q, k, v))
        problem = S.problem_of(*_ours(q, k, v, layout), causal=causal, layout=layout)
        row = {"row": label, "shape": [b, h, hk, sq, sk, d], "causal": causal}
        chosen = S.choose(problem)
        variants = {"argus": chosen}
        for where, fields in args.alt:  # variants: `choose`'s configuration with the fields --alt sets
            alt = replace(chosen, **fields)
            fits = S.fits(problem, alt)
            if _applies(where, d, causal, sq) and fits and alt not in variants.values():
                if not alt.PINGPONG or alt.CONSUMERS > 1:
                    variants[alt.label()] = alt
        launches, errors, kept = {}, {}, []
        with sdpa_kernel([SDPBackend.MATH]):
            kk, vv = (x.float().repeat_interleave(h // hk, dim=1) for x in (k, v))
            ref = torch_sdpa(q.float(), kk, vv, is_causal=causal)
        del kk, vv
        for name, config in variants.items():
            try:
                o, lse, prepared = S.prepare(*_ours(q, k, v, layout), causal=causal, layout=layout, config=config)
                o_view = o.transpose(1, 2) if layout == "bshd" else o

                def launch(prepared=prepared) -> None:  # noqa: ANN001
                    for one in prepared:
                        one.launch()

                launch()
                torch.cuda.synchronize()
                errors[name] = (o_view.float() - ref).abs().max().item()
                launches[name] = launch
                kept.append((o, lse, prepared))
            except Exception as e:  # noqa: BLE001 - a variant that fails is reported, the sweep goes on
                row[f"{name}_error"] = f"{type(e).__name__}: {e}"
                print(f"| {label} | {config.label()} | {name} FAILED: {type(e).__name__}: {str(e)[:200]} |")
        del ref
        if "argus" not in launches:
            results.append(row)
            continue
        err = max(errors.values())
        row.update(config=chosen.label(), err=err, errors=errors, ok=err <= 2e-2)
        gqa = hk != h
        for name, backend in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("fa2", SDPBackend.FLASH_ATTENTION)):

            def run(backend=backend, q=q, k=k, v=v, causal=causal, gqa=gqa) -> None:  # noqa: ANN001
                with sdpa_kernel([backend]):
                    torch_sdpa(q, k, v, is_causal=causal, enable_gqa=gqa)

            try:
                run()
                torch.cuda.synchronize()
                launches[name] = run
            except Exception as e:  # noqa: BLE001 - a backend that does not take the row is left out
                row[f"{name}_error"] = f"{type(e).__name__}: {str(e)[:120]}"
        times = interleaved_times(torch, launches, args.rounds, scratch)
        flops = problem.flops()
        cells = []
        for name in ("argus", "cudnn", "fa2"):
            if name in times:
                ms = statistics.median(times[name])
                row[f"{name}_ms"] = ms
                row[f"{name}_tflops"] = flops / ms / 1e9
                cells += [f"{ms:.4f}", f"{flops / ms / 1e9:.0f}"]
            else:
                cells += ["—", "—"]
        ratios = []
        best = row["argus_ms"]  # the chosen configuration's: what a user gets
        for name in ("cudnn", "fa2"):
            if name in times:
                row[f"x_{name}"] = row[f"{name}_ms"] / best
                ratios.append(f"{row[f'x_{name}']:.2f}")
            else:
                ratios.append("—")
        alts = []
        for name in variants:
            if name != "argus" and name in times:
                ms = statistics.median(times[name])
                row.setdefault("variants", {})[name] = {"ms": ms, "tflops": flops / ms / 1e9}
                versus = f" ({row['cudnn_ms'] / ms:.2f})" if "cudnn_ms" in row else ""
                alts.append(f"{name}: {flops / ms / 1e9:.0f}{versus}")
        verdict = "" if row["ok"] else " WRONG"
        print(
            f"| {label} | {row['config']} | {' | '.join(cells)} | {' | '.join(ratios)} | {err:.1e}{verdict} "
            f"| {'; '.join(alts)} |"
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
