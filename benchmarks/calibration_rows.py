"""Turn the benchmark rows the repository has recorded into the cost model's calibration rows
(`argus.eval.calibration.Row`, JSON lines), each citing the file and position it came from.

    python benchmarks/calibration_rows.py --out benchmarks/calibration/recorded.jsonl [--featurize]

What it reads (only files measured on the kernels as they are now; older ones are listed in `STALE` with why):

* GEMM: the ``contenders`` of `benchmarks/gemm_shapes.py`'s JSON (16-bit tensor-core plans; GEMV plans skipped):
  one row per contender, the group the shape and layout.
* Attention: the ``argus_ms`` and ``variants`` of `benchmarks/attention_sweep.py`'s JSON: one row per configuration,
  the group the problem.
* Convolution: the kernel-only contenders of `benchmarks/conv_implicit_sweep.py`'s JSON (the planned tile and the
  variants it timed beside it, each named by its `ImplicitConfig` label in ``tiles``; not the whole ``call``,
  cuDNN, or the pointwise rows' ``gemm``): one row per tile, the group the convolution.
* MoE: the argus configurations of the grouped GEMMs timed alone (`benchmarks/grouped_sweep.py`'s and
  `benchmarks/swiglu_sweep.py`'s JSON, `benchmarks/moe_decode_configs.py`'s JSON or printed table; not
  ``torch._grouped_mm``, the plain kernel followed by PyTorch's SwiGLU, or whole layers): one row per configuration,
  the group the product (plain or SwiGLU, E, R, K, N) and its routing, whose rows per expert the plan carries
  (recomputed as the benchmark drew them).

Where the same (problem, candidate) was measured in several files, the newest file's number is kept (the files are
read in date order). ``--featurize`` runs the cost model on every row (a minute or two) so that fitting needs no
tracing. The GPU is taken from the file's recorded environment, for the convolution sweeps the ``env.txt`` beside
them, for the MoE files the first line of a printed table, the ``env*.txt`` beside it or its directory's README
(all are H200 runs).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"

#: GEMM result files on the current kernels (2026-12-01 on: the split tail, swap-AB, wide K-blocks, tile binding)
GEMM_FILES = (
    "2026-12-01-gemm-swap/layouts.json",
    "2026-12-01-gemm-swap/shapes.json",
    "2026-12-01-gemm-swap/suite.json",
    "2026-12-01-mid-gemm/odd.json",
    "2026-12-01-wide-k/narrow.json",
    "2026-12-01-wide-k/skinny6.json",
    "2026-12-01-wide-k/suite.json",
    "2026-12-01-wide-k/suite4.json",
    "2026-12-01-wide-k/suite6.json",
    "2026-12-01-wide-k/tall7.json",
    "2026-12-01-wide-k/weak.json",
    "2026-12-01-wide-k/wide_k.json",
    "2026-12-02-tile-binding/gemm_new.json",
    "2026-12-02-tile-binding/gemm_table_new.json",
)
#: attention result files on the current kernels; ``overlap`` configurations only from 2026-12-02 (rebuilt then)
ATTENTION_FILES = (
    "2026-12-01-attention-tiles/call1-d64.json",
    "2026-12-01-attention-tiles/call1-d128.json",
    "2026-12-01-attention-tiles/call1-d256.json",
    "2026-12-01-attention-tiles/call3-lpt.json",
    "2026-12-01-attention-tiles/call4-sweep.json",
    "2026-12-02-attention-overlap/call1-overlap.json",
    "2026-12-02-attention-overlap/call2-overlap.json",
    "2026-12-02-attention-overlap/call3-overlap.json",
    "2026-12-02-attention-overlap/call4-sweep.json",
    "2026-12-02-attention-overlap/call6-pingpong.json",
    "2026-12-02-conv-split-moe-combine/attn_tail.json",
)
#: convolution result files on the current kernels: `conv_implicit_sweep.py --flat` from session 40's call 2 on (the
#: flattened tile's epilogue as it is now; the implicit and flattened kernels' generated CUDA is the same as today's
#: but for its line comments), the newest number of each tile kept
CONV_FILES = (
    "2026-12-02-flat-tiles/call2/sweep.json",
    "2026-12-02-flat-tiles/call3/sweep.json",
    "2026-12-02-flat-tiles/call5/sweep.json",
    "2026-12-02-flat-tiles/call6/sweep.json",
)
#: MoE result files on the current kernels: for every configuration stored directly (EPILOGUE "direct") the grouped
#: kernels' generated CUDA at the commit each was measured on (88fb583's parent, 3d99709, 75df990, a33c4d6, de44f7c)
#: is today's but for its line comments and the header's parameter list (ORDER, added since, is the order they ran);
#: their TMA-store configurations are stale (`STALE`)
MOE_FILES = (
    "2026-12-01-moe-decode/configs.json",
    "2026-12-02-moe-gather/call3/sweep3.json",
    "2026-12-02-moe-gather/call5/swiglu5.json",
    "2026-12-03-moe-decode/call2/down.txt",
    "2026-12-03-moe-decode/call2/up.txt",
    "2026-12-03-moe-decode/call3/down.txt",
    "2026-12-03-moe-decode/call3/up.txt",
)
STALE = {
    "2026-11-28-gemm-shapes": "before the split tail, swap-AB and the wide K-blocks",
    "2026-11-30-gemm-tail": "before swap-AB and the wide K-blocks",
    "2026-12-02-tile-binding/*_old.json": "the kernel before the tile binding change (measured for comparison)",
    "2026-12-01 overlap configurations": "the overlapped attention loop was rebuilt on 2026-12-02",
    "2026-12-01-conv-remeasure, 2026-12-02-conv-split-moe-combine": "the implicit convolution kernel before its tile's "
    "coordinates were bound once (T.let) and before the flattened tile",
    "2026-12-02-conv-ncu/conv_let.json": "the implicit kernel's first T.let binding (its generated CUDA differs from "
    "today's: the binding was reworked the same night, untimed)",
    "2026-12-02-conv-ncu/conv_flat.json": "its flat tiles were rows of all images as one sequence (removed)",
    "2026-12-02-flat-tiles/call1": "the flattened kernel before its epilogue was rounded as it is stored",
    "the MoE files' EPILOGUE 'tma' configurations": "the grouped kernels' TMA-store epilogue before its first chunk "
    "waited for every earlier store to read its buffer (2026-12-04, commit 10f3791: the generated CUDA differs)",
    "2026-11-28-moe-grouped, 2026-11-29-moe-layer": "the grouped kernels before the wgmma helper took its scale-d "
    "operand (the generated CUDA differs); the SwiGLU sweep of run 1 before the per-row scale",
    "2026-12-03-moe-lineage": "the lineage's rungs through the gate (not the library call's kernels but for the "
    "persistent rung, at the task's random routing, which the results do not record)",
    "MoE whole layers (moe-decode, moe-gather, conv-split-moe-combine layer*.json and *.txt)": "not one kernel: "
    "routing, gathers, both products and the combine",
}

_GEMM_LABEL = re.compile(
    r"^(?P<bm>\d+)x(?P<bn>\d+)x(?P<bk>\d+) s(?P<s>\d+) c(?P<c>\d+)(?: split(?P<split>\d+))?(?: tail(?P<tail>\d+))?"
    r" (?P<ep>\w+)(?P<swap> swap)?$"
)
_ATTENTION_LABEL = re.compile(r"^(?P<bm>\d+)x(?P<bn>\d+) s(?P<s>\d+) c(?P<c>\d+)(?P<flags>(?: \w+)*)$")
_MOE_LABEL = re.compile(
    r"^(?P<bm>\d+)x(?P<bn>\d+)x(?P<bk>\d+) s(?P<s>\d+) c(?P<c>\d+) g(?P<group>\d+) (?P<ep>direct|tma)$"
)
_CONV_LABEL = re.compile(
    r"^(?:flat (?P<positions>\d+)x(?P<flat_bn>\d+)|(?P<bh>\d+)x(?P<bw>\d+)x(?P<bn>\d+)) s(?P<s>\d+) c(?P<c>\d+)"
    r"(?: p(?P<blocks>\d+))?(?: k(?P<bk>\d+))?(?: split(?P<split>\d+))?$"
)


def gemm_config(label: str) -> dict | None:
    m = _GEMM_LABEL.match(label)
    if m is None:
        return None
    return {
        "BM": int(m["bm"]),
        "BN": int(m["bn"]),
        "BK": int(m["bk"]),
        "STAGES": int(m["s"]),
        "CONSUMERS": int(m["c"]),
        "SPLITS": int(m["split"] or 1),
        "TAIL": int(m["tail"] or 1),
        "EPILOGUE": m["ep"],
        "SWAP": bool(m["swap"]),
    }


def attention_config(label: str) -> dict | None:
    m = _ATTENTION_LABEL.match(label)
    if m is None:
        return None
    flags = m["flags"].split()
    config = {"BM": int(m["bm"]), "BN": int(m["bn"]), "STAGES": int(m["s"]), "CONSUMERS": int(m["c"])}
    names = {"packed": "PACK", "regP": "P_REGISTERS", "pingpong": "PINGPONG", "overlap": "OVERLAP", "lpt": "LPT"}
    for f in flags:
        if f.startswith("split"):
            config["SPLITS"] = int(f[5:])
        elif f in names:
            config[names[f]] = True
        else:
            return None
    return config


def conv_config(label: str) -> dict | None:
    """The `ImplicitConfig` fields of its label (`ImplicitConfig.label`: ``8x16x128 s4 c2 p132 k32 split2``, or the
    flattened tile's ``flat 128x128 s6 c2 split2``, whose positions are one row: BH 1); None for another label."""
    from argus.kernels.conv import IMPLICIT_BK  # the K step a label leaves out

    m = _CONV_LABEL.match(label)
    if m is None:
        return None
    flat = m["positions"] is not None
    return {
        "BH": 1 if flat else int(m["bh"]),
        "BW": int(m["positions"] if flat else m["bw"]),
        "BN": int(m["flat_bn"] if flat else m["bn"]),
        "STAGES": int(m["s"]),
        "CONSUMERS": int(m["c"]),
        "BLOCKS": int(m["blocks"] or 0),
        "BK": int(m["bk"] or IMPLICIT_BK),
        "SPLITS": int(m["split"] or 1),
        "FLAT": flat,
    }


def conv_problem(n: int, c: int, f: int, h: int, w: int, r: int, stride: int, padding: int, dtype: str) -> dict:
    """The `Conv` fields of `conv_implicit_sweep.py`'s rows: 2-d, N images of C channels of H x W, F filters of an
    R x R window, square stride and padding, no dilation, groups or bias."""
    return {
        "rank": 2,
        "batch": n,
        "channels": c,
        "filters": f,
        "groups": 1,
        "size": [1, h, w],
        "kernel": [1, r, r],
        "stride": [1, stride, stride],
        "padding": [0, padding, padding],
        "dilation": [1, 1, 1],
        "bias": False,
        "dtype": dtype,
    }


#: the grouped kernels' defaults a configuration may leave out (`grouped_gemm_persistent`, `grouped_gemm_swiglu`)
MOE_DEFAULTS = {"CONSUMERS": 2, "GROUP": 8, "EPILOGUE": "direct"}


def moe_config(label: str) -> dict | None:
    """The grouped kernel's parameters of a MoE row's label (`moe_label`: ``64x128x64 s8 c1 g8 direct``); None for
    another label."""
    m = _MOE_LABEL.match(label)
    if m is None:
        return None
    return {
        "BM": int(m["bm"]),
        "BN": int(m["bn"]),
        "BK": int(m["bk"]),
        "STAGES": int(m["s"]),
        "CONSUMERS": int(m["c"]),
        "GROUP": int(m["group"]),
        "EPILOGUE": m["ep"],
    }


def moe_label(config: dict) -> str:
    """The label of a grouped kernel configuration (its defaults, `MOE_DEFAULTS`, written out)."""
    c = MOE_DEFAULTS | config
    return f"{c['BM']}x{c['BN']}x{c['BK']} s{c['STAGES']} c{c['CONSUMERS']} g{c['GROUP']} {c['EPILOGUE']}"


def moe_problem(experts: int, rows: int, k: int, n: int, epilogue: str) -> dict:
    """A bf16 grouped product of `rows` routed rows over `experts` experts, (K, N) = (k, n), N the output's columns
    (the SwiGLU weight holds 2N: each expert's gate then up columns)."""
    problem = {"experts": experts, "rows": rows, "k": k, "n": n, "dtype": "bf16", "epilogue": epilogue}
    return problem | ({"activation": "silu"} if epilogue == "swiglu" else {})


def gemm_problem(m: int, n: int, k: int, layout: str) -> dict:
    """The `GemmProblem` fields of a bf16 product in `layout` (the benchmarks' NT etc.: A then B, N as stored, T
    transposed)."""
    return {
        "M": m,
        "N": n,
        "K": k,
        "dtype": "bf16",
        "out": "bf16",
        "a_major": "K" if layout[0] == "N" else "M",
        "b_major": "N" if layout[1] == "N" else "K",
    }


def _gpu(environment: list[str]) -> str:
    text = " ".join(environment)
    return "H200" if "H200" in text else ("H100-SXM" if "H100" in text else "unknown")


def _measured(ms: object) -> bool:
    return isinstance(ms, float) and ms == ms  # a number, not NaN (a contender that failed)


def _row(family: str, group: str, label: str, ms: float, gpu: str, rel: str, where: str, problem: dict,
         config: dict) -> dict:  # fmt: skip
    """One calibration row (`argus.eval.calibration.Row` as data), citing ``benchmarks/results/REL#WHERE``."""
    return {"family": family, "group": group, "label": label, "ms": ms, "gpu": gpu,
            "source": f"benchmarks/results/{rel}#{where}", "date": rel[:10],
            "plan": {"problem": problem, "config": config}}  # fmt: skip


def gemm_rows(rel: str) -> list[dict]:
    data = json.loads((RESULTS / rel).read_text())
    gpu = _gpu(data.get("environment", []))
    out = []
    for i, row in enumerate(data["rows"]):
        m, n, k = row["shape"]
        layout = row.get("layout", "NT")
        problem = gemm_problem(m, n, k, layout)
        for label, c in row.get("contenders", {}).items():
            config = gemm_config(label)
            ms = c.get("ms")
            if config is not None and _measured(ms):
                where = f"rows[{i}].contenders[{label!r}].ms"
                out.append(_row("gemm", f"gemm {m}x{n}x{k} {layout} bf16", label, ms, gpu, rel, where, problem, config))
    return out


def attention_rows(rel: str) -> list[dict]:
    data = json.loads((RESULTS / rel).read_text())
    gpu = "H200"  # every attention sweep file here ran on the H200 (their READMEs); the JSON has no environment
    out = []
    for i, row in enumerate(data):
        if not isinstance(row.get("config"), str) or not row.get("ok", True):
            continue
        b, h, hk, sq, sk, d = row["shape"]
        layout = "bshd" if "bshd" in row["row"] else "bhsd"
        problem = {
            "batch": b,
            "heads": h,
            "kv_heads": hk,
            "sq": sq,
            "sk": sk,
            "d": d,
            "dv": d,
            "causal": bool(row["causal"]),
            "layout": layout,
        }
        found = [(row["config"], row["argus_ms"], f"[{i}].argus_ms")]
        found += [(lab, v["ms"], f"[{i}].variants[{lab!r}].ms") for lab, v in row.get("variants", {}).items()]
        for label, ms, where in found:
            config = attention_config(label)
            if config is None or not _measured(ms) or (config.get("OVERLAP") and rel < "2026-12-02"):
                continue
            group = f"attention B={b} H={h}/{hk} S={sq}/{sk} d={d} {'causal' if row['causal'] else 'full'} {layout}"
            out.append(_row("attention", group, label, ms, gpu, rel, where, problem, config))
    return out


def conv_rows(rel: str) -> list[dict]:
    """The kernel-only contenders of a `conv_implicit_sweep.py` JSON (a list of rows, each with ``shape`` [N, C, F,
    H, W, R, stride, padding], ``dtype``, ``ms`` per contender and ``tiles``: contender -> `ImplicitConfig` label),
    launched on channels-last tensors (`prepare_implicit` with ``nchw=False``)."""
    path = RESULTS / rel
    data = json.loads(path.read_text())
    env = path.parent / "env.txt"  # nvidia-smi's line, written by the call's script beside the sweep
    gpu = _gpu([env.read_text()] if env.exists() else [])
    out = []
    for i, row in enumerate(data):
        if "ms" not in row or "tiles" not in row:  # a row the implicit kernel refused, or that failed
            continue
        n, c, f, h, w, r, stride, padding = row["shape"]
        dtype = row["dtype"]
        problem = conv_problem(n, c, f, h, w, r, stride, padding, dtype)
        group = f"conv N={n} {c}->{f} {h}x{w} {r}x{r}/{stride} p{padding} {dtype}"
        for name, label in row["tiles"].items():
            config = conv_config(label)
            ms = row["ms"].get(name)
            if config is None or not _measured(ms) or name in row.get("wrong", []):
                continue
            found = _row("conv", group, label, ms, gpu, rel, f"[{i}].ms[{name!r}]", problem, config)
            found["plan"]["layout"] = "channels_last"
            out.append(found)
    return out


def _moe_row(group: str, config: dict, ms: float, gpu: str, rel: str, where: str, problem: dict,
             routing: list[int]) -> dict:  # fmt: skip
    """A MoE row: its configuration with the kernel's defaults written out, its routing (rows per expert)."""
    config = MOE_DEFAULTS | config
    found = _row("moe", group, moe_label(config), ms, gpu, rel, where, problem, config)
    found["plan"]["routing"] = routing
    return found


def _moe_group(problem: dict, routing: str) -> str:
    p = problem
    return f"moe {p['epilogue']} E={p['experts']} R={p['rows']} K={p['k']} N={p['n']} {p['dtype']} {routing}"


def _moe_gpu(path: Path, first_line: str = "") -> str:
    """The GPU of a MoE result: a printed table's first line (``torch.cuda.get_device_name()``), else the
    ``env*.txt`` beside it, else its results directory's README."""
    if "NVIDIA" in first_line:
        return _gpu([first_line])
    env = next(iter(sorted(path.parent.glob("env*.txt"))), None)
    readme = RESULTS / path.relative_to(RESULTS).parts[0] / "README.md"
    return _gpu([(env or readme).read_text()])


def _sweep_routing(routing: str, experts: int, rows: int) -> list[int]:
    """The rows per expert of `grouped_sweep.py`'s (and `swiglu_sweep.py`'s) `routing`: multiples of 16."""
    if str(ROOT / "benchmarks") not in sys.path:
        sys.path.insert(0, str(ROOT / "benchmarks"))
    from grouped_sweep import group_sizes

    return group_sizes(routing, experts, rows, 16)


#: `grouped_sweep.py`'s argus contenders: ``argus 128x256x64/4 g8 direct`` (`` (chosen)`` on `moe.choose`'s)
_SWEEP_CONTENDER = re.compile(r"^argus (\d+)x(\d+)x(\d+)/(\d+) g(\d+) (direct|tma)(?: \(chosen\))?$")
#: `swiglu_sweep.py`'s SwiGLU contenders, call 5 of 2026-12-02-moe-gather: `moe.choose` then (128 x 128 x 64, 4
#: stages, stored directly) and its other store (not: the plain kernel then PyTorch's SwiGLU)
_SWIGLU_CONTENDERS = {
    "argus swiglu": {"BM": 128, "BN": 128, "BK": 64, "STAGES": 4, "GROUP": 8},
    "argus swiglu tma": {"BM": 128, "BN": 128, "BK": 64, "STAGES": 4, "GROUP": 8, "EPILOGUE": "tma"},
}


def moe_sweep_rows(rel: str) -> list[dict]:
    """The argus contenders of a `grouped_sweep.py` JSON (rows of E, R, K, N, routing, contender, ms; its odd-group
    correctness rows skipped) or of a `swiglu_sweep.py` JSON (``{"env", "argv", "rows"}``, N the gate-and-up
    weight's 2I columns), each timed alone on `grouped_sweep.group_sizes`' routing."""
    path = RESULTS / rel
    data = json.loads(path.read_text())
    swiglu = isinstance(data, dict)
    rows = data["rows"] if swiglu else data
    gpu = _gpu([data["env"]["gpu"]]) if swiglu else _moe_gpu(path)
    out = []
    for i, row in enumerate(rows):
        if row.get("odd") or not _measured(row.get("ms")) or row.get("err", 1.0) > 2e-2:
            continue
        name = row["contender"]
        if swiglu:
            config = _SWIGLU_CONTENDERS.get(name)
        else:
            m = _SWEEP_CONTENDER.match(name)
            keys = ("BM", "BN", "BK", "STAGES", "GROUP")
            config = None if m is None else dict(zip(keys, map(int, m.groups()[:5]), strict=True)) | {"EPILOGUE": m[6]}
        if config is None or config.get("EPILOGUE") == "tma":  # torch, or a stale TMA-store epilogue (STALE)
            continue
        experts, routed, k, n = row["E"], row["R"], row["K"], row["N"]
        problem = moe_problem(experts, routed, k, n // 2 if swiglu else n, "swiglu" if swiglu else "plain")
        routing = _sweep_routing(row["routing"], experts, routed)
        if not swiglu and (max(routing), min(routing)) != (row["sizes_max"], row["sizes_min"]):
            raise ValueError(f"{rel}[{i}]: the routing drawn again is not the one timed")
        group = _moe_group(problem, row["routing"])
        out.append(_moe_row(group, config, row["ms"], gpu, rel, f"[{i}].ms", problem, routing))
    return out


#: `moe_decode_configs.py`'s shapes: (label, hidden H, intermediate I, experts, top-k)
DECODE_SHAPES = {
    "Mixtral": (4096, 14336, 8, 2),
    "Qwen3-30B-A3B": (2048, 768, 128, 8),
    "DeepSeek-V3": (7168, 2048, 256, 8),
}


def decode_routing(experts: int, top_k: int, tokens: int) -> list[int]:
    """The rows per expert `moe_decode_configs.py` drew for `tokens` tokens: top-k distinct experts a token, from
    ``torch.randperm`` on a CPU generator seeded with the token count."""
    import torch

    g = torch.Generator().manual_seed(tokens)
    chosen = torch.stack([torch.randperm(experts, generator=g)[:top_k] for _ in range(tokens)])
    return torch.bincount(chosen.reshape(-1), minlength=experts).tolist()


def decode_chosen(rel: str, product: str, rows: int, experts: int, n: int) -> dict | None:
    """The configuration a `moe_decode_configs.py` result's ``chosen`` column timed: `moe.choose` of the commit it
    ran on; None where it is stale (a TMA-store epilogue) or timed under its own name in the same call too."""
    if rel.startswith("2026-12-01-moe-decode/"):  # before the decode configurations: the prefill ones, direct
        if product == "up":
            return {"BM": 128, "BN": 128, "BK": 64, "STAGES": 4, "GROUP": 8}
        wide = n % 256 == 0 and n >= 1024
        return {"BM": 128, "BN": 256 if wide else 128, "BK": 64, "STAGES": 4 if wide else 5, "GROUP": 8}
    if rel.startswith("2026-12-03-moe-decode/call2/"):  # DECODE_CONFIGS (commit a33c4d6)
        if rows > 32 * experts:  # past the decode threshold: the prefill configuration with TMA stores (STALE)
            return None
        bn = 64 if product == "up" else 128
        return {"BM": 64, "BN": bn, "BK": 64, "STAGES": 8, "CONSUMERS": 1, "GROUP": 8}
    return None  # call 3: moe.choose took one of the configurations timed beside it


def _decode_config(name: str) -> dict | None:
    """The configuration of a `moe_decode_configs.py` column: ``64x128 s8`` (its `CONFIGS`) or ``--config``'s
    ``64x128x64:5[:tma]``, one consumer warpgroup and GROUP 8."""
    if m := re.match(r"^(\d+)x(\d+) s(\d+)$", name):
        bm, bn, bk, stages, epilogue = int(m[1]), int(m[2]), 64, int(m[3]), "direct"
    elif m := re.match(r"^(\d+)x(\d+)x(\d+):(\d+)(?::(direct|tma))?$", name):
        bm, bn, bk, stages, epilogue = int(m[1]), int(m[2]), int(m[3]), int(m[4]), m[5] or "direct"
    else:
        return None
    return {"BM": bm, "BN": bn, "BK": bk, "STAGES": stages, "CONSUMERS": 1, "GROUP": 8, "EPILOGUE": epilogue}


def _decode_table(path: Path) -> tuple[str, list[tuple[int, dict]]]:
    """(the first line, (line number, row) of each timed row) of `moe_decode_configs.py`'s printed table: rows of
    shape, T, touched, product and ``µs / %HBM`` per column (a failed configuration's lines are skipped)."""
    lines = path.read_text().splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("| shape |"))
    names = [c.strip().removesuffix(" µs / %HBM") for c in lines[header].strip("|").split("|")]
    found = []
    for n, line in enumerate(lines[header + 2 :], header + 3):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != len(names):
            continue
        row = dict(zip(names, cells, strict=True))
        found.append((n, {"shape": row["shape"], "T": int(row["T"]), "touched": int(row["touched"]),
                          "product": row["product"], "ms": {c: float(row[c].split("/")[0]) / 1e3
                                                            for c in names[4:] if row[c] != "—"}}))  # fmt: skip
    return lines[0], found


def moe_decode_rows(rel: str) -> list[dict]:
    """The argus configurations of a `moe_decode_configs.py` result (its JSON, or its printed table where the call
    kept no JSON: µs to one decimal): each product alone at decode sizes, the up-projection on the SwiGLU kernel,
    the down-projection on the plain one, the routing drawn again (`decode_routing`, checked against the experts
    it touched)."""
    path = RESULTS / rel
    if path.suffix == ".json":
        first, found = "", [(i, row) for i, row in enumerate(json.loads(path.read_text()))]
    else:
        first, found = _decode_table(path)
    gpu = _moe_gpu(path, first)
    out = []
    for pos, row in found:
        hidden, inter, experts, top_k = DECODE_SHAPES[row["shape"]]
        tokens, product = row["T"], row["product"].split("+")[0]
        routed = tokens * top_k
        routing = decode_routing(experts, top_k, tokens)
        if sum(1 for c in routing if c) != row["touched"]:
            raise ValueError(f"{rel} {row['shape']} T={tokens}: the routing drawn again is not the one timed")
        k, n = (hidden, inter) if product == "up" else (inter, hidden)
        problem = moe_problem(experts, routed, k, n, "swiglu" if product == "up" else "plain")
        group = _moe_group(problem, f"{row['shape']} {product} T={tokens}")
        kept: dict[str, dict] = {}
        for name, ms in row["ms"].items():
            config = decode_chosen(rel, product, routed, experts, n) if name == "chosen" else _decode_config(name)
            if config is None or config.get("EPILOGUE") == "tma" or not _measured(ms):  # torch, or STALE
                continue
            where = f"[{pos}].ms[{name!r}]" if path.suffix == ".json" else f"L{pos}[{name!r}]"
            found_row = _moe_row(group, config, ms, gpu, rel, where, problem, routing)
            kept[found_row["label"]] = found_row  # timed twice in one call: the named column (after "chosen")
        out += kept.values()
    return out


def recorded() -> list[dict]:
    """Every row, the newest measurement of each (group, label)."""
    kept: dict[tuple[str, str], dict] = {}
    for rel in sorted(GEMM_FILES):
        for r in gemm_rows(rel):
            kept[(r["group"], r["label"])] = r
    for rel in sorted(ATTENTION_FILES):
        for r in attention_rows(rel):
            kept[(r["group"], r["label"])] = r
    for rel in sorted(CONV_FILES):
        for r in conv_rows(rel):
            kept[(r["group"], r["label"])] = r
    for rel in sorted(MOE_FILES):
        for r in moe_decode_rows(rel) if "decode" in rel else moe_sweep_rows(rel):
            kept[(r["group"], r["label"])] = r
    return list(kept.values())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--featurize", action="store_true", help="compute the cost model's features of every row")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "src"))
    from argus.eval.calibration import CalibrationError, Row, with_features, write_rows

    rows = [Row.from_json(r) for r in recorded()]
    if args.featurize:
        ok = []
        for r in rows:
            try:
                ok += with_features([r])
            except (CalibrationError, ValueError) as e:
                print(f"skipped {r.group} {r.label}: {e}", file=sys.stderr)
        rows = ok
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_rows(rows, args.out)
    by_family: dict[str, int] = {}
    for r in rows:
        by_family[r.family] = by_family.get(r.family, 0) + 1
    print(f"{len(rows)} rows ({by_family}) in {len({r.group for r in rows})} groups -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
