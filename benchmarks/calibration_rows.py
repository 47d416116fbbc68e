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

Where the same (problem, candidate) was measured in several files, the newest file's number is kept (the files are
read in date order). ``--featurize`` runs the cost model on every row (a minute or two) so that fitting needs no
tracing. The GPU is taken from the file's recorded environment, for the convolution sweeps the ``env.txt`` beside
them (all are H200 runs).
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
}

_GEMM_LABEL = re.compile(
    r"^(?P<bm>\d+)x(?P<bn>\d+)x(?P<bk>\d+) s(?P<s>\d+) c(?P<c>\d+)(?: split(?P<split>\d+))?(?: tail(?P<tail>\d+))?"
    r" (?P<ep>\w+)(?P<swap> swap)?$"
)
_ATTENTION_LABEL = re.compile(r"^(?P<bm>\d+)x(?P<bn>\d+) s(?P<s>\d+) c(?P<c>\d+)(?P<flags>(?: \w+)*)$")
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
