"""Held-out rows for the cost model's calibration (issue #26): problems no recorded row has, their candidates
ranked by the static cost model on the CPU, then timed on the GPU.

    # on the CPU (traces every candidate: minutes): what to time
    PYTHONPATH=src python benchmarks/calibration_gpu.py plan --out benchmarks/calibration/heldout-plan.json
    # on the GPU: time them (interleaved per problem, L2 flushed, CUDA events) and write calibration rows
    PYTHONPATH=src python benchmarks/calibration_gpu.py run --plan benchmarks/calibration/heldout-plan.json \\
        --out heldout.jsonl [--rounds 15] [--workers 16]

Candidates per problem: the union of the static cost model's TOP, the GEMM family model's TOP (`matmul.estimate`,
what `choose` and `argus tune` rank by) and the configuration `choose` picks, so that every model's top is measured.
Every candidate's output is checked before it is timed (GEMM: max error relative to the f32 product <= 1e-2;
attention: max absolute error against SDPA's math backend in f32 <= 2e-2); a wrong or failing candidate is
reported and left out. The library's baseline (cuBLAS through `torch.matmul`, cuDNN through SDPA) is timed in the
same interleave, for context.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict
from functools import partial
from pathlib import Path

try:
    import argus  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

sys.path.insert(0, str(Path(__file__).resolve().parent))

from calibration_rows import gemm_problem as _gemm_problem  # noqa: E402 - the benchmarks folder is on sys.path

TOP = 10

#: (M, N, K, layout) that no recorded GEMM row has
GEMM_PROBLEMS = (
    (1536, 1536, 1536, "NT"),
    (2560, 8192, 1024, "NT"),
    (384, 11008, 4096, "NT"),
    (8192, 2816, 2048, "NT"),
    (6144, 1024, 8192, "NT"),
    (192, 5120, 5120, "NT"),
    (3072, 3072, 768, "NT"),
    (20480, 256, 4096, "NT"),
    (1111, 2222, 3333, "NT"),
    (5000, 1200, 1500, "TN"),
    (32768, 1024, 1024, "NT"),
    (512, 2048, 8192, "NN"),
    (4096, 4096, 512, "NT"),
    (12288, 4096, 12288, "NT"),
)
#: (name, B, H, HK, SQ, SK, D, causal, layout) that no recorded attention row has
ATTENTION_PROBLEMS = (
    ("d128 full S=2048", 2, 16, 16, 2048, 2048, 128, False, "bhsd"),
    ("d128 causal S=2048", 2, 16, 16, 2048, 2048, 128, True, "bhsd"),
    ("d64 full S=8192", 1, 8, 8, 8192, 8192, 64, False, "bhsd"),
    ("d64 causal S=2048", 2, 16, 16, 2048, 2048, 64, True, "bhsd"),
    ("d256 full S=2048", 2, 16, 16, 2048, 2048, 256, False, "bhsd"),
    ("d256 causal S=8192", 1, 8, 8, 8192, 8192, 256, True, "bhsd"),
    ("GQA 32/4 d128 S=2048", 2, 32, 4, 2048, 2048, 128, False, "bhsd"),
    ("d128 full S=3000", 2, 16, 16, 3000, 3000, 128, False, "bhsd"),
    ("d128 causal S=8192", 1, 8, 8, 8192, 8192, 128, True, "bhsd"),
    ("bshd d128 full S=2048", 2, 16, 16, 2048, 2048, 128, False, "bshd"),
    ("decode B=8 32/8 d128 SK=16384", 8, 32, 8, 1, 16384, 128, False, "bhsd"),
)


# ---------------------------------------------------------------------------------------------------------------
# the plan (CPU)


def _attention_configs(problem) -> list:  # noqa: ANN001
    """Every configuration `sdpa.plan` accepts for `problem` whose shared memory fits: tiles, stages, and each
    mechanism on and off where it applies."""
    from argus.kernels import sdpa as S

    found = []
    if problem.sq == 1:  # decode: one query token (packed where the heads allow)
        for bn in (64, 128):
            for stages in (2, 3):
                for splits in (1, 2, 4, 8, 16, 32):
                    for pack in (False, True):
                        found.append(S.AttentionConfig(64, bn, stages, 1, SPLITS=splits, PACK=pack, P_REGISTERS=True))
    else:
        for bm, consumers in ((64, 1), (128, 2), (192, 3)):
            for bn in (64, 80, 96, 128, 160, 176, 192):
                for stages in (2, 3):
                    for overlap in (False, True):
                        for pingpong in (False, True) if consumers == 2 else (False,):
                            for lpt in (False, True) if problem.causal else (False,):
                                found.append(
                                    S.AttentionConfig(
                                        bm, bn, stages, consumers, P_REGISTERS=True, OVERLAP=overlap,
                                        PINGPONG=pingpong, LPT=lpt,
                                    )
                                )  # fmt: skip
    out = []
    for c in found:
        try:
            S.plan(problem, c)
        except (S.AttentionError, ValueError):
            continue
        if S.fits(problem, c) and problem.d % 16 == 0 and c.BN % 16 == 0:
            out.append(c)
    return out


def _ranked(rows: list, gemm_model=None) -> list:  # noqa: ANN001
    """The rows to time: the static model's TOP, the family model's TOP (`gemm_model(row)`, GEMM only) and the
    chosen configuration's row (``chosen`` set)."""
    static = sorted(rows, key=lambda r: r["estimate_ms"])[:TOP]
    keep = {r["label"]: r for r in static}
    if gemm_model is not None:
        for r in sorted(rows, key=gemm_model)[:TOP]:
            keep.setdefault(r["label"], r)
    for r in rows:
        if r.get("chosen"):
            keep.setdefault(r["label"], r)
    return list(keep.values())


def plan_main(out: Path) -> int:
    from argus.eval.calibration import CalibrationError, Row, featurize
    from argus.kernels import matmul as mm
    from argus.kernels import sdpa as S

    groups = []
    t0 = time.time()
    for m, n, k, layout in GEMM_PROBLEMS:
        problem = mm.GemmProblem(**_gemm_problem(m, n, k, layout))
        chosen = mm.plan(problem).config
        group = f"gemm {m}x{n}x{k} {layout} bf16"
        rows = []
        for c in mm.candidates_for(problem):
            config = {f: v for f, v in asdict(c).items() if f in mm.GemmConfig.__dataclass_fields__}
            row = {"family": "gemm", "group": group, "label": c.label, "ms": 1.0, "gpu": "H200", "source": "",
                   "plan": {"problem": _gemm_problem(m, n, k, layout), "config": config}}  # fmt: skip
            try:
                est, features = featurize(Row.from_json(row))
            except CalibrationError as e:
                print(f"skipped {group} {c.label}: {e}", file=sys.stderr)
                continue
            row.update(estimate_ms=est, features=features, family_ms=mm.estimate(mm.kernel_problem(problem), c) * 1e3)
            row["chosen"] = c == chosen
            rows.append(row)
        kept = _ranked(rows, lambda r: r["family_ms"])
        print(f"{group}: {len(rows)} candidates, {len(kept)} to time ({time.time() - t0:.0f} s)", flush=True)
        groups.append({"group": group, "family": "gemm", "problem": [m, n, k, layout], "rows": kept})
    for name, b, h, hk, sq, sk, d, causal, layout in ATTENTION_PROBLEMS:
        problem = S.AttentionProblem(b, h, hk, sq, sk, d, d, causal=causal, layout=layout)
        chosen = S.choose(problem)
        group = f"attention B={b} H={h}/{hk} S={sq}/{sk} d={d} {'causal' if causal else 'full'} {layout}"
        rows = []
        configs = _attention_configs(problem)
        if chosen not in configs:
            configs.append(chosen)
        for c in configs:
            row = {"family": "attention", "group": group, "label": c.label(), "ms": 1.0, "gpu": "H200", "source": "",
                   "plan": {"problem": asdict(problem), "config": asdict(c)}}  # fmt: skip
            try:
                est, features = featurize(Row.from_json(row))
            except (CalibrationError, ValueError) as e:
                print(f"skipped {group} {c.label()}: {e}", file=sys.stderr)
                continue
            row.update(estimate_ms=est, features=features, chosen=c == chosen)
            rows.append(row)
        kept = _ranked(rows)
        print(f"{group}: {len(rows)} candidates, {len(kept)} to time ({time.time() - t0:.0f} s)", flush=True)
        groups.append({"group": group, "family": "attention", "problem": [name, b, h, hk, sq, sk, d, causal, layout],
                       "rows": kept})  # fmt: skip
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"top": TOP, "groups": groups}, indent=1) + "\n")
    print(f"{sum(len(g['rows']) for g in groups)} candidates in {len(groups)} groups -> {out}")
    return 0


# ---------------------------------------------------------------------------------------------------------------
# the run (GPU)


def _compile(job: tuple) -> tuple[str, str | None]:
    family, plan_json = job
    try:
        from argus.backend.cuda.codegen import compile_kernel
        from argus.eval.calibration import Row, launches

        row = Row.from_json({"family": family, "group": "", "label": "", "ms": 1.0, "gpu": "", "source": "",
                             "plan": json.loads(plan_json)})  # fmt: skip
        for kernel, _ in launches(row):
            if family == "gemm":
                from argus.kernels import matmul as mm

                compile_kernel(kernel, dependent=mm.DEPENDENT_LAUNCHES)
            else:
                from argus.kernels import sdpa

                compile_kernel(kernel, dependent=sdpa.DEPENDENT_LAUNCHES)
        return plan_json, None
    except Exception as err:  # noqa: BLE001 - reported per plan
        return plan_json, f"{type(err).__name__}: {err}"


def _launch_all(torch, prepared: list) -> None:  # noqa: ANN001
    for p in prepared:
        p.launch()
    torch.cuda.synchronize()


def _gemm_error(torch, mm, a, b, ref, scale: float, fields: dict) -> tuple[float, list]:  # noqa: ANN001
    """(max error relative to the f32 product's largest value, the prepared launches) of one GEMM configuration."""
    c, prepared = mm.prepare(a, b, config=mm.GemmConfig(**fields))
    _launch_all(torch, prepared)
    return float((c.float() - ref).abs().max()) / scale, prepared


def _attention_error(torch, S, qkv: tuple, causal: bool, layout: str, ref, fields: dict) -> tuple[float, list]:  # noqa: ANN001, N803
    """(max abs error against the f32 reference, the prepared launches) of one attention configuration."""
    o, _, prepared = S.prepare(*qkv, causal=causal, layout=layout, config=S.AttentionConfig(**fields))
    _launch_all(torch, prepared)
    return float(((o.transpose(1, 2) if layout == "bshd" else o).float() - ref).abs().max()), prepared


def _keep(group: str, row: dict, error_of, tolerance: float, launches: dict, rows_of: dict) -> None:  # noqa: ANN001
    """Run one candidate once (`error_of() -> (error, prepared launches)`) and keep it for timing where it ran and its
    error is within `tolerance`; a failure or a wrong result is reported and the candidate left out."""
    try:
        err, prepared = error_of()
    except Exception as e:  # noqa: BLE001 - reported per candidate
        print(f"  {group} {row['label']}: {type(e).__name__}: {str(e)[:200]}")
        return
    if not err <= tolerance:
        print(f"  WRONG {group} {row['label']}: error {err} over {tolerance}")
        return
    launches[row["label"]] = lambda prepared=prepared: [p.launch() for p in prepared]
    rows_of[row["label"]] = row


def run_main(plan_path: Path, out: Path, rounds: int, workers: int) -> int:
    import torch
    from gemm_parity import interleaved_times
    from gemm_variants import environment

    from argus.kernels import matmul as mm
    from argus.kernels import sdpa as S

    env = environment(torch)
    for line in env:
        print(line)
    plan = json.loads(plan_path.read_text())
    jobs = sorted({(g["family"], json.dumps(r["plan"], sort_keys=True)) for g in plan["groups"] for r in g["rows"]})
    t0 = time.time()
    failed = {}
    with ProcessPoolExecutor(workers) as pool:
        for key, err in pool.map(_compile, jobs):
            if err:
                failed[key] = err
                print(f"compile failed: {key}: {err[:300]}")
    print(f"compiled {len(jobs)} plans in {time.time() - t0:.0f} s ({len(failed)} failed)", flush=True)
    scratch = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    written = []
    gpu = "H200" if "H200" in " ".join(env) else ("H100-SXM" if "H100" in " ".join(env) else "unknown")
    stamp = time.strftime("%Y-%m-%d")
    for g in plan["groups"]:
        launches, rows_of = {}, {}
        if g["family"] == "gemm":
            m, n, k, layout = g["problem"]
            gen = torch.Generator(device="cuda").manual_seed(m + 7 * n + 13 * k)
            a = torch.randn(m, k, device="cuda", generator=gen).to(torch.bfloat16)
            b = torch.randn(k, n, device="cuda", generator=gen).to(torch.bfloat16)
            if layout[0] == "T":
                a = a.t().contiguous().t()
            if layout[1] == "T":
                b = b.t().contiguous().t()
            ref = a.float() @ b.float()
            scale = float(ref.abs().max())
            launches["baseline"] = lambda a=a, b=b: torch.matmul(a, b)
            for r in g["rows"]:
                error_of = partial(_gemm_error, torch, mm, a, b, ref, scale, r["plan"]["config"])
                _keep(g["group"], r, error_of, 1e-2, launches, rows_of)
            del ref
        else:
            _, b, h, hk, sq, sk, d, causal, layout = g["problem"]
            gen = torch.Generator(device="cuda").manual_seed(b * 7 + h * 13 + sq + sk + d)
            q = torch.randn(b, h, sq, d, device="cuda", generator=gen).to(torch.bfloat16)
            kt = torch.randn(b, hk, sk, d, device="cuda", generator=gen).to(torch.bfloat16)
            vt = torch.randn(b, hk, sk, d, device="cuda", generator=gen).to(torch.bfloat16)
            if layout == "bshd":
                q, kt, vt = (x.transpose(1, 2).contiguous().transpose(1, 2) for x in (q, kt, vt))
            from torch.nn.attention import SDPBackend, sdpa_kernel
            from torch.nn.functional import scaled_dot_product_attention as sdpa

            with sdpa_kernel([SDPBackend.MATH]):
                kk, vv = (x.float().repeat_interleave(h // hk, dim=1) for x in (kt, vt))
                ref = sdpa(q.float(), kk, vv, is_causal=causal)
            del kk, vv
            ours = (lambda x: x.transpose(1, 2)) if layout == "bshd" else (lambda x: x)

            def baseline(q=q, kt=kt, vt=vt, causal=causal, gqa=hk != h) -> None:  # noqa: ANN001
                with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
                    sdpa(q, kt, vt, is_causal=causal, enable_gqa=gqa)

            try:
                baseline()
                launches["baseline"] = baseline
            except Exception as e:  # noqa: BLE001 - cuDNN may not take a row
                print(f"  {g['group']}: cuDNN: {type(e).__name__}: {str(e)[:120]}")
            qkv = (ours(q), ours(kt), ours(vt))
            for r in g["rows"]:
                error_of = partial(_attention_error, torch, S, qkv, causal, layout, ref, r["plan"]["config"])
                _keep(g["group"], r, error_of, 2e-2, launches, rows_of)
            del ref
        if not rows_of:
            continue
        times = interleaved_times(torch, launches, rounds, scratch)
        med = {name: statistics.median(v) for name, v in times.items()}
        base = med.get("baseline")
        best = min(med[label] for label in rows_of)
        shown = f"{base:.4f}" if base else "—"
        print(f"{g['group']}: {len(rows_of)} timed, best {best:.4f} ms, baseline {shown} ms")
        for label, r in rows_of.items():
            # the features are computed again where the rows are used (`with_features`): the plan's only ranked them
            row = {k: v for k, v in r.items() if k not in ("chosen", "family_ms", "features", "estimate_ms")}
            row.update(ms=med[label], gpu=gpu, date=stamp, source=f"{out.name}#{g['group']}:{label}")
            written.append((row, {"chosen": r.get("chosen", False), "family_ms": r.get("family_ms"),
                                  "baseline_ms": base, "rounds": rounds}))  # fmt: skip
            mark = "  chosen" if r.get("chosen") else ""
            print(f"    {label:>36} {med[label]:.4f} ms  est {r['estimate_ms']:.4f}{mark}")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(row, sort_keys=True) + "\n" for row, _ in written))
    extra = out.with_suffix(".context.json")
    extra.write_text(json.dumps({"environment": env, "rows": [{"group": r["group"], "label": r["label"], **x}
                                                               for r, x in written]}, indent=1))  # fmt: skip
    print(f"{len(written)} rows -> {out} (context: {extra})")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("plan")
    p.add_argument("--out", type=Path, required=True)
    r = sub.add_parser("run")
    r.add_argument("--plan", type=Path, required=True)
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--rounds", type=int, default=15)
    r.add_argument("--workers", type=int, default=16)
    args = parser.parse_args()
    if args.cmd == "plan":
        return plan_main(args.out)
    return run_main(args.plan, args.out, args.rounds, args.workers)


if __name__ == "__main__":
    raise SystemExit(main())
