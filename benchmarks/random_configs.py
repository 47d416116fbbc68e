"""Random configurations of the library's calls on a GPU, each checked against a reference computed in f32 or f64
from the same inputs: shapes, strides, paddings, groups, head dims, masks and routings that no test names. This is
a correctness sweep (no timing): every row is `ok`, `WRONG` (the error past the dtype's tolerance), `REFUSED` (an
argus error with its code: a refusal must be one of the library's documented ones) or `CRASH` (any other exception).

    PYTHONPATH=src python benchmarks/random_configs.py OUT.jsonl --seed 1 --seconds 120 --families attention conv

Families: attention (`sdpa`), varlen (`sdpa_varlen`), paged (`sdpa_paged`), conv, gemm, grouped, moe.

Each family draws configurations from its own generator (seeded by `--seed` and the family's name) until its time
is spent or `--count` rows are done, and writes one JSON line per row (the configuration, the verdict, the largest
error relative to the reference's largest magnitude, and the seconds the row took, its compilations included)."""

from __future__ import annotations

import argparse
import itertools
import json
import math
import random
import sys
import time
import traceback
import zlib
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

#: the largest error, relative to the reference's largest magnitude, that a row's dtype allows
TOLERANCE = {torch.bfloat16: 2.5e-2, torch.float16: 4e-3, torch.float32: 2e-4}
DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}


def relative(got: torch.Tensor, want: torch.Tensor) -> float:
    got, want = got.double(), want.double()
    if got.shape != want.shape:
        raise AssertionError(f"shape {tuple(got.shape)}, the reference's {tuple(want.shape)}")
    if want.numel() == 0:
        return 0.0
    if not torch.isfinite(got).all():
        return math.inf
    return float((got - want).abs().max() / max(float(want.abs().max()), 1e-6))


# ---------------------------------------------------------------------------------------------------------------
# attention


def attention_config(rng: random.Random) -> dict[str, Any]:
    hkv = rng.choice([1, 1, 2, 4, 8])
    group = rng.choice([1, 1, 2, 4, 8])
    sq = rng.choice([1, 1, 2, 7, rng.randint(1, 64), rng.randint(1, 2500), rng.randint(1, 2500)])
    sk = rng.choice([sq, rng.randint(1, 4200), rng.randint(max(1, sq), 4200)])
    d = 8 * rng.randint(1, 32)
    dv = d if rng.random() < 0.7 else 8 * rng.randint(1, 32)
    causal = rng.random() < 0.5
    window = rng.randint(1, sk) if causal and rng.random() < 0.25 else 0
    b = rng.randint(1, 3)
    while b * hkv * group * sq * sk > 2e8:  # the reference's score matrix in f32: at most 0.8 GB
        b, hkv = (b - 1, hkv) if b > 1 else (b, max(1, hkv // 2)) if hkv > 1 else (b, hkv)
        group = group if b * hkv * group * sq * sk <= 2e8 or group == 1 else group // 2
        if b == 1 and hkv == 1 and group == 1:
            break
    return {
        "b": b, "hkv": hkv, "h": hkv * group, "sq": sq, "sk": sk, "d": d, "dv": dv,
        "causal": causal, "window": window, "dtype": rng.choice(["bf16", "f16"]),
        "layout": rng.choice(["bhsd", "bhsd", "bshd"]),
        "scale": rng.choice([None, None, round(rng.uniform(0.02, 0.3), 4)]),
    }  # fmt: skip


def attention_run(c: dict[str, Any]) -> tuple[float, float]:
    from argus.kernels import sdpa as S

    dt = DTYPES[c["dtype"]]
    b, h, hkv, sq, sk, d, dv = c["b"], c["h"], c["hkv"], c["sq"], c["sk"], c["d"], c["dv"]
    q = torch.randn(b, h, sq, d, device="cuda", dtype=dt)
    k = torch.randn(b, hkv, sk, d, device="cuda", dtype=dt)
    v = torch.randn(b, hkv, sk, dv, device="cuda", dtype=dt)
    if c["layout"] == "bshd":
        qs, ks, vs = (x.transpose(1, 2).contiguous() for x in (q, k, v))
        o, lse = S.sdpa(qs, ks, vs, causal=c["causal"], scale=c["scale"], return_lse=True, layout="bshd",
                        window=c["window"])  # fmt: skip
        o = o.transpose(1, 2)
    else:
        o, lse = S.sdpa(q, k, v, causal=c["causal"], scale=c["scale"], return_lse=True, window=c["window"])
    torch.cuda.synchronize()
    scale = c["scale"] if c["scale"] is not None else d**-0.5
    kk, vv = (x.float().repeat_interleave(h // hkv, dim=1) for x in (k, v))
    scores = (q.float() @ kk.transpose(-1, -2)) * scale
    i = torch.arange(sq, device="cuda")[:, None] + (sk - sq)  # the query's diagonal key (bottom-right aligned)
    j = torch.arange(sk, device="cuda")[None, :]
    keep = torch.ones(sq, sk, dtype=torch.bool, device="cuda")
    if c["causal"]:
        keep &= j <= i
        if c["window"]:
            keep &= j > i - c["window"]
    scores = scores.masked_fill(~keep, -math.inf)
    ref_lse = torch.logsumexp(scores, dim=-1)
    p = torch.exp(scores - ref_lse[..., None]).nan_to_num(0.0)  # a row that sees no key: O = 0
    ref = p @ vv
    seen = keep.any(dim=-1)
    lse_err = float((lse.float() - ref_lse)[..., seen].abs().max()) if bool(seen.any()) else 0.0
    return relative(o, ref), lse_err


def masked_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float, causal: bool, window: int):
    """(O, LSE, the rows that see a key) in f32 of q (H, SQ, D) against k (HK, SK, D), v (HK, SK, DV): the causal
    mask bottom-right aligned, the window the last `window` keys up to the diagonal."""
    h, sq, sk = q.shape[0], q.shape[1], k.shape[1]
    kk, vv = (x.float().repeat_interleave(h // k.shape[0], dim=0) for x in (k, v))
    scores = (q.float() @ kk.transpose(-1, -2)) * scale
    i = torch.arange(sq, device=q.device)[:, None] + (sk - sq)
    j = torch.arange(sk, device=q.device)[None, :]
    keep = torch.ones(sq, sk, dtype=torch.bool, device=q.device)
    if causal:
        keep &= j <= i
        if window:
            keep &= j > i - window
    scores = scores.masked_fill(~keep, -math.inf)
    lse = torch.logsumexp(scores, dim=-1)
    return torch.exp(scores - lse[..., None]).nan_to_num(0.0) @ vv, lse, keep.any(dim=-1)


def varlen_config(rng: random.Random) -> dict[str, Any]:
    hkv, group = rng.choice([1, 2, 4, 8]), rng.choice([1, 1, 2, 4, 8])
    batch = rng.randint(1, 12)
    lq = [rng.choice([0, 1, rng.randint(1, 300), rng.randint(1, 3000)]) for _ in range(batch)]
    lk = [rng.choice([x, x + rng.randint(0, 500), rng.randint(0, 3000)]) for x in lq]
    d = 8 * rng.randint(1, 32)
    causal = rng.random() < 0.6
    return {
        "h": hkv * group, "hkv": hkv, "lq": lq, "lk": lk, "d": d,
        "dv": d if rng.random() < 0.7 else 8 * rng.randint(1, 32), "causal": causal,
        "window": rng.randint(1, 2000) if causal and rng.random() < 0.4 else 0,
        "dtype": rng.choice(["bf16", "f16"]), "scale": rng.choice([None, None, round(rng.uniform(0.02, 0.3), 4)]),
    }  # fmt: skip


def varlen_run(c: dict[str, Any]) -> tuple[float, float]:
    from argus.kernels import sdpa_varlen as SV

    dt = DTYPES[c["dtype"]]
    cu_q = torch.tensor([0, *itertools.accumulate(c["lq"])], dtype=torch.int32, device="cuda")
    cu_k = torch.tensor([0, *itertools.accumulate(c["lk"])], dtype=torch.int32, device="cuda")
    q = torch.randn(int(cu_q[-1]), c["h"], c["d"], device="cuda", dtype=dt)
    k = torch.randn(int(cu_k[-1]), c["hkv"], c["d"], device="cuda", dtype=dt)
    v = torch.randn(int(cu_k[-1]), c["hkv"], c["dv"], device="cuda", dtype=dt)
    o, lse = SV.sdpa_varlen(q, k, v, cu_q, cu_k, causal=c["causal"], scale=c["scale"], window=c["window"],
                            return_lse=True)  # fmt: skip
    torch.cuda.synchronize()
    ref = torch.zeros(o.shape, device="cuda")
    lse_err = 0.0
    scale = c["scale"] if c["scale"] is not None else c["d"] ** -0.5
    for b in range(len(c["lq"])):
        (q0, q1), (k0, k1) = cu_q[b : b + 2].tolist(), cu_k[b : b + 2].tolist()
        if q1 == q0 or k1 == k0:
            continue
        ob, lb, seen = masked_attention(q[q0:q1].transpose(0, 1), k[k0:k1].transpose(0, 1),
                                        v[k0:k1].transpose(0, 1), scale, c["causal"], c["window"])  # fmt: skip
        ref[q0:q1] = ob.transpose(0, 1)
        if bool(seen.any()):
            lse_err = max(lse_err, float((lse[:, q0:q1] - lb)[:, seen].abs().max()))
    return relative(o, ref), lse_err


def paged_config(rng: random.Random) -> dict[str, Any]:
    hkv, group = rng.choice([1, 2, 4, 8]), rng.choice([1, 2, 4, 8, 16])
    page = rng.choice([16, 32, 64, 128, 256])
    maxp = rng.randint(1, 16384 // page)
    d = 8 * rng.randint(1, 32)
    return {
        "b": rng.randint(1, 8), "h": hkv * group, "hkv": hkv, "page": page, "maxp": maxp, "d": d,
        "dv": d if rng.random() < 0.7 else 8 * rng.randint(1, 32),
        "window": rng.randint(1, maxp * page) if rng.random() < 0.4 else 0,
        "max_seqlen": rng.choice([None, None, maxp * page]), "dtype": rng.choice(["bf16", "f16"]),
        "scale": rng.choice([None, None, round(rng.uniform(0.02, 0.3), 4)]),
    }  # fmt: skip


def paged_run(c: dict[str, Any], rng: random.Random) -> tuple[float, float]:
    from argus.kernels import sdpa_paged as SP

    dt = DTYPES[c["dtype"]]
    b, page, maxp = c["b"], c["page"], c["maxp"]
    pages = maxp * b + rng.randint(0, 8)
    lens = torch.tensor([rng.choice([0, rng.randint(0, maxp * page), maxp * page]) for _ in range(b)],
                        dtype=torch.int32)  # fmt: skip
    perm = torch.randperm(pages)
    table = perm[: b * maxp].reshape(b, maxp).to(torch.int32)  # distinct pages, as a cache keeps them
    kc = torch.randn(pages, page, c["hkv"], c["d"], device="cuda", dtype=dt)
    vc = torch.randn(pages, page, c["hkv"], c["dv"], device="cuda", dtype=dt)
    q = torch.randn(b, c["h"], c["d"], device="cuda", dtype=dt)
    o, lse = SP.sdpa_paged(q, kc, vc, table.cuda(), lens.cuda(), scale=c["scale"], window=c["window"],
                           max_seqlen_k=c["max_seqlen"], return_lse=True)  # fmt: skip
    torch.cuda.synchronize()
    ref = torch.zeros(o.shape, device="cuda")
    lse_err = 0.0
    scale = c["scale"] if c["scale"] is not None else c["d"] ** -0.5
    for i in range(b):
        n = int(lens[i])
        if n == 0:
            continue
        t = torch.arange(n)
        k, v = (x[table[i, t // page].long().cuda(), (t % page).cuda()].transpose(0, 1) for x in (kc, vc))
        ob, lb, _ = masked_attention(q[i][:, None], k, v, scale, bool(c["window"]), c["window"])
        ref[i] = ob[:, 0]
        lse_err = max(lse_err, float((lse[i] - lb[:, 0]).abs().max()))
    return relative(o, ref), lse_err


# ---------------------------------------------------------------------------------------------------------------
# convolution


def conv_config(rng: random.Random) -> dict[str, Any] | None:
    rank = rng.choice([1, 2, 2, 2, 3])
    transposed = rng.random() < 0.3
    kind = rng.choice(["dense", "dense", "dense", "groups", "depthwise", "pointwise"])
    g = {"dense": 1, "pointwise": 1, "groups": rng.choice([2, 3, 4, 8]), "depthwise": 0}[kind]
    if kind == "depthwise":
        c = rng.choice([3, 16, 32, 64, 96])
        g, f = c, c * rng.choice([1, 1, 2])
    else:
        c = g * rng.choice([1, 3, 4, 8, 16, 24, 64, 128])
        f = g * rng.choice([1, 5, 8, 16, 32, 64, 128])
    k = (1,) * rank if kind == "pointwise" else tuple(rng.choice([1, 2, 3, 3, 4, 5, 7]) for _ in range(rank))
    s = tuple(rng.choice([1, 1, 1, 2, 3]) for _ in range(rank)) if kind != "pointwise" else (1,) * rank
    dil = tuple(rng.choice([1, 1, 1, 2, 3]) for _ in range(rank)) if kind != "pointwise" else (1,) * rank
    hi = {1: 300, 2: 48, 3: 14}[rank]
    size = tuple(rng.randint(1, hi) for _ in range(rank))
    if transposed:
        reach = [dd * (kk - 1) for dd, kk in zip(dil, k, strict=True)]
        p = tuple(rng.randint(0, r + (1 if rng.random() < 0.2 else 0)) for r in reach)  # past the reach: cropped
        op = tuple(rng.randint(0, max(ss, dd) - 1) if rng.random() < 0.3 else 0 for ss, dd in zip(s, dil, strict=True))
        parts = zip(size, s, p, reach, op, strict=True)
        out = [(n - 1) * ss - 2 * pp + r + o + 1 for n, ss, pp, r, o in parts]
    else:
        p = tuple(rng.randint(0, 3) if kind != "pointwise" else 0 for _ in range(rank))
        op = (0,) * rank
        out = [(n + 2 * pp - dd * (kk - 1) - 1) // ss + 1 for n, pp, dd, kk, ss in zip(size, p, dil, k, s, strict=True)]
    if min(out) < 1:
        return None
    return {
        "rank": rank, "n": rng.randint(1, 8), "c": c, "f": f, "groups": g, "size": size, "k": k, "stride": s,
        "padding": p, "dilation": dil, "output_padding": op, "transposed": transposed, "bias": rng.random() < 0.6,
        "dtype": rng.choice(["f32", "bf16", "f16"]), "channels_last": rank == 2 and rng.random() < 0.25,
    }  # fmt: skip


def conv_run(c: dict[str, Any]) -> tuple[float, float]:
    from argus.kernels.conv import Conv, LibraryConv

    def three(v: tuple, fill: int) -> tuple[int, int, int]:
        full = (fill,) * (3 - c["rank"]) + tuple(v)
        return full[0], full[1], full[2]

    conv = Conv(
        c["rank"], c["n"], c["c"], c["f"], c["groups"], three(c["size"], 1), three(c["k"], 1), three(c["stride"], 1),
        three(c["padding"], 0), three(c["dilation"], 1), c["bias"], c["dtype"], transposed=c["transposed"],
        output_padding=three(c["output_padding"], 0),
    )  # fmt: skip
    dt = DTYPES[c["dtype"]]
    x = torch.randn(c["n"], c["c"], *c["size"], device="cuda").to(dt)
    wshape = (c["c"], c["f"] // c["groups"], *c["k"]) if c["transposed"] else (c["f"], c["c"] // c["groups"], *c["k"])
    w = (torch.randn(wshape, device="cuda") / math.sqrt(math.prod(wshape[1:]))).to(dt)
    b = torch.randn(c["f"], device="cuda").to(dt) if c["bias"] else None
    if c["channels_last"]:
        x = x.contiguous(memory_format=torch.channels_last)
    call = LibraryConv("conv", conv)
    inputs = (x, w, b) if b is not None else (x, w)
    out = call.empty_output(*inputs)
    call(*inputs, out)
    torch.cuda.synchronize()
    r = c["rank"]
    if c["transposed"]:
        fn = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[r - 1]
        ref = fn(x.double(), w.double(), None if b is None else b.double(), stride=c["stride"], padding=c["padding"],
                 output_padding=c["output_padding"], groups=c["groups"], dilation=c["dilation"])  # fmt: skip
    else:
        fn = (F.conv1d, F.conv2d, F.conv3d)[r - 1]
        ref = fn(x.double(), w.double(), None if b is None else b.double(), stride=c["stride"], padding=c["padding"],
                 dilation=c["dilation"], groups=c["groups"])  # fmt: skip
    return relative(out, ref), 0.0


# ---------------------------------------------------------------------------------------------------------------
# dense products


def gemm_config(rng: random.Random) -> dict[str, Any]:
    def extent() -> int:
        return rng.choice([1, rng.randint(1, 16), rng.randint(1, 700), rng.randint(1, 5000), 8 * rng.randint(1, 600)])

    return {
        "m": extent(), "n": extent(), "k": extent(), "dtype": rng.choice(["bf16", "bf16", "f16", "f32"]),
        "ta": rng.random() < 0.3, "tb": rng.random() < 0.4, "batch": rng.choice([0, 0, 0, rng.randint(1, 6)]),
    }  # fmt: skip


def gemm_run(c: dict[str, Any]) -> tuple[float, float]:
    from argus.kernels.matmul import matmul

    dt = DTYPES[c["dtype"]]
    lead = (c["batch"],) if c["batch"] else ()
    a = torch.randn(*lead, c["k"], c["m"], device="cuda").to(dt).transpose(-1, -2) if c["ta"] else None
    a = a if a is not None else torch.randn(*lead, c["m"], c["k"], device="cuda").to(dt)
    b = torch.randn(*lead, c["n"], c["k"], device="cuda").to(dt).transpose(-1, -2) if c["tb"] else None
    b = b if b is not None else torch.randn(*lead, c["k"], c["n"], device="cuda").to(dt)
    got = matmul(a, b)
    torch.cuda.synchronize()
    return relative(got, a.double() @ b.double()), 0.0


# ---------------------------------------------------------------------------------------------------------------
# grouped products and the MoE layer


def grouped_config(rng: random.Random) -> dict[str, Any]:
    e = rng.choice([1, 2, 8, rng.randint(1, 40), 128])
    r = rng.choice([0, 1, rng.randint(1, 64), rng.randint(1, 3000), rng.randint(1, 9000)])
    return {
        "experts": e, "rows": r, "k": 8 * rng.randint(1, 300), "n": 8 * rng.randint(1, 400),
        "routing": rng.choice(["uniform", "zipf", "one", "empty-ends"]), "dtype": rng.choice(["bf16", "f16"]),
    }  # fmt: skip


def group_sizes(rng: random.Random, experts: int, rows: int, routing: str) -> list[int]:
    if routing == "one":
        sizes = [0] * experts
        sizes[rng.randrange(experts)] = rows
        return sizes
    weights = [1.0 / (i + 1) ** 1.2 for i in range(experts)] if routing == "zipf" else [1.0] * experts
    if routing == "empty-ends" and experts > 2:
        weights[0] = weights[-1] = 0.0
    sizes = [0] * experts
    for _ in range(rows):
        sizes[rng.choices(range(experts), weights)[0]] += 1
    return sizes


def grouped_run(c: dict[str, Any], rng: random.Random) -> tuple[float, float]:
    from argus.kernels.moe import grouped_mm

    dt = DTYPES[c["dtype"]]
    sizes = group_sizes(rng, c["experts"], c["rows"], c["routing"])
    offs = torch.tensor(list(__import__("itertools").accumulate(sizes)), dtype=torch.int32, device="cuda")
    a = torch.randn(c["rows"], c["k"], device="cuda").to(dt)
    b = (torch.randn(c["experts"], c["k"], c["n"], device="cuda") / math.sqrt(c["k"])).to(dt)
    got = grouped_mm(a, b, offs)
    torch.cuda.synchronize()
    ref = torch.empty(c["rows"], c["n"], dtype=torch.float64, device="cuda")
    start = 0
    for g, size in enumerate(sizes):
        ref[start : start + size] = a[start : start + size].double() @ b[g].double()
        start += size
    return relative(got[: c["rows"]], ref), 0.0


def moe_config(rng: random.Random) -> dict[str, Any]:
    e = rng.choice([1, 2, 8, rng.randint(2, 64), 128])
    return {
        "tokens": rng.choice([0, 1, 2, rng.randint(1, 32), rng.randint(1, 600), rng.randint(1, 3000)]),
        "hidden": 8 * rng.randint(8, 160), "inter": 8 * rng.randint(1, 200), "experts": e,
        "top_k": rng.randint(1, min(e, 8)), "scoring": rng.choice(["softmax", "sigmoid"]),
        "activation": rng.choice(["silu", "silu", "gelu", "gelu_tanh"]), "renormalize": rng.random() < 0.8,
    }  # fmt: skip


def moe_run(c: dict[str, Any]) -> tuple[float, float]:
    from argus.kernels.moe import moe_layer

    t, h, i, e, k = c["tokens"], c["hidden"], c["inter"], c["experts"], c["top_k"]
    x = torch.randn(t, h, device="cuda").to(torch.bfloat16)
    router = torch.randn(h, e, device="cuda") * h**-0.5
    w1 = (torch.randn(e, h, 2 * i, device="cuda") * h**-0.5).to(torch.bfloat16)
    w2 = (torch.randn(e, i, h, device="cuda") * i**-0.5).to(torch.bfloat16)
    out = moe_layer(x, router, w1, w2, k, scoring=c["scoring"], activation=c["activation"],
                    renormalize=c["renormalize"])  # fmt: skip
    torch.cuda.synchronize()
    logits = x.float() @ router.float()
    probs = torch.softmax(logits, dim=-1) if c["scoring"] == "softmax" else torch.sigmoid(logits)
    weights, chosen = probs.double().topk(k, dim=-1)
    if c["renormalize"]:
        weights = weights / weights.sum(-1, keepdim=True)
    act = {"silu": F.silu, "gelu": F.gelu, "gelu_tanh": lambda v: F.gelu(v, approximate="tanh")}[c["activation"]]
    ref = torch.zeros(t, h, dtype=torch.float64, device="cuda")
    x64 = x.double()
    for g in range(e):
        tok, slot = (chosen == g).nonzero(as_tuple=True)
        if tok.numel() == 0:
            continue
        hh = x64[tok] @ w1[g].double()
        y = (act(hh[:, :i]) * hh[:, i:]) @ w2[g].double()
        ref.index_add_(0, tok, weights[tok, slot][:, None] * y)
    return relative(out, ref), 0.0


# ---------------------------------------------------------------------------------------------------------------

FAMILIES: dict[str, tuple[Callable[[random.Random], Any], Callable[..., tuple[float, float]]]] = {
    "attention": (attention_config, attention_run),
    "varlen": (varlen_config, varlen_run),
    "paged": (paged_config, paged_run),
    "conv": (conv_config, conv_run),
    "gemm": (gemm_config, gemm_run),
    "grouped": (grouped_config, grouped_run),
    "moe": (moe_config, moe_run),
}


def tolerance(family: str, config: dict[str, Any]) -> float:
    if family in ("grouped", "moe"):
        return TOLERANCE[DTYPES.get(config.get("dtype", "bf16"), torch.bfloat16)]
    return TOLERANCE[DTYPES[config["dtype"]]]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=120.0, help="per family")
    ap.add_argument("--count", type=int, default=1000, help="per family, at most")
    ap.add_argument("--families", nargs="+", default=list(FAMILIES))
    args = ap.parse_args()
    summary: dict[str, dict[str, int]] = {}
    with open(args.out, "a") as sink:
        for family in args.families:
            draw, run = FAMILIES[family]
            rng = random.Random(args.seed * 1_000_003 + zlib.crc32(family.encode()))
            counts = summary.setdefault(family, {})
            start = time.perf_counter()
            done = 0
            while done < args.count and time.perf_counter() - start < args.seconds:
                config = draw(rng)
                if config is None:
                    continue
                done += 1
                row: dict[str, Any] = {"family": family, "seed": args.seed, "config": config}
                t0 = time.perf_counter()
                try:
                    err, lse_err = run(config, rng) if family in ("grouped", "paged") else run(config)
                    row["error"], row["lse_error"] = err, lse_err
                    row["verdict"] = "ok" if err <= tolerance(family, config) and lse_err <= 2e-3 else "WRONG"
                except Exception as e:  # noqa: BLE001 (every failure is a row: the sweep goes on)
                    code = getattr(e, "code", None)
                    row["verdict"] = "REFUSED" if code else "CRASH"
                    row["why"] = f"{type(e).__name__}: {e}"[:800]
                    if not code:
                        row["trace"] = traceback.format_exc()[-2000:]
                    try:
                        torch.cuda.synchronize()
                    except Exception:  # noqa: BLE001 (a sticky CUDA error: this process's context is lost)
                        row["context_lost"] = True
                row["seconds"] = round(time.perf_counter() - t0, 2)
                counts[row["verdict"]] = counts.get(row["verdict"], 0) + 1
                sink.write(json.dumps(row) + "\n")
                sink.flush()
                if row["verdict"] != "ok":
                    print(json.dumps({k: row[k] for k in ("family", "config", "verdict") if k in row}
                                     | {"why": row.get("why", row.get("error"))}), flush=True)  # fmt: skip
                if row.get("context_lost") or "CUDA error" in row.get("why", ""):
                    print(f"{family}: the CUDA context is lost; the family stops here", flush=True)
                    break
            print(f"{family}: {done} rows in {time.perf_counter() - start:.0f} s: {counts}", flush=True)
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
