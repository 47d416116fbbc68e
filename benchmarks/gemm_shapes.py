"""GEMM for any shape (issue #20): `argus.kernels.matmul`'s heuristic configuration against cuBLAS, and a sweep of
the candidate configurations around it (which one was fastest: what an autotuner would pick, and where the
heuristic's model is wrong).

Usage (from the repository root on a GPU machine)::

    PYTHONPATH=src python benchmarks/gemm_shapes.py [--suite issue|table|layouts|all] [--sweep 6] [--json F]

For every shape: A (M, K) and B as nn.Linear stores its weight (N, K), both bf16 and normal; C = A @ B^T in bf16
(layout "NT"; `--suite layouts` runs the four layouts at two shapes). Every contender is checked first against the
f32 product (relative max error <= 1e-2; the script exits 1 if one is wrong), then timed with
`gemm_parity.interleaved_times` (each round flushes L2 and times one launch of every contender, CUDA events, the
order rotating): cuBLAS (``torch.matmul(a, b.T)``), argus's heuristic configuration ("heuristic"), and the `--sweep`
configurations the model ranks next (prepared launches: the host's per-call cost of `argus.kernels.matmul.matmul`
is not in the time; a split-K configuration is both of its kernels launched back to back). Compiles run in a
process pool before any timing.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path

try:
    import argus  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gemm_parity import interleaved_times  # noqa: E402
from gemm_variants import environment  # noqa: E402

#: The bf16 suite of issue #20 (M, N, K).
ISSUE = [
    (2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192), (8192, 7168, 2048), (4096, 14336, 4096),
    (16384, 4096, 4096), (2048, 8192, 28672), (1024, 1024, 1024), (16384, 16384, 16384), (1, 4096, 4096),
    (8, 8192, 8192), (16, 14336, 4096), (32, 4096, 14336), (96, 7168, 7168), (2048, 2048, 32768),
    (512, 512, 65536), (1000, 1000, 1000), (2049, 3071, 4097), (8205, 5921, 2949), (4096, 6144, 4096),
    (8192, 28672, 8192), (6000, 6000, 3000),
]  # fmt: skip
#: The shapes of the issue's opening table that the suite does not repeat.
TABLE = [(1024, 1024, 16384), (128, 4096, 4096), (64, 8192, 8192), (256, 7168, 2048), (3000, 5000, 4000),
         (4000, 4000, 4000), (6144, 5120, 3072), (12288, 12288, 12288)]  # fmt: skip
#: Shapes the heuristic's constants were not fitted on (LLM projections at decode and prefill sizes, odd sizes).
HELDOUT = [(4, 11008, 4096), (24, 5120, 13824), (200, 3072, 768), (768, 768, 3072), (3072, 1536, 6144),
           (777, 1999, 3001), (12000, 512, 1024), (48, 1024, 65536), (2500, 10000, 1500), (5120, 5120, 640),
           (160, 12288, 1536), (40, 40, 40)]  # fmt: skip
#: The planner's tile shapes (BM, BN, consumer warpgroups) before the 192-row (three consumer warpgroups) and
#: 192-column tiles: what `--previous-tiles` plans with.
PREVIOUS_TILES = ((128, 256, 2), (128, 128, 2), (64, 256, 1), (64, 128, 1), (64, 64, 1))
#: The tile efficiencies before session 43 (`mm.MMA_EFFICIENCY` then).
PREVIOUS_EFFICIENCY = {(128, 256): 0.76, (64, 256): 0.58, (128, 128): 0.48, (64, 128): 0.32, (64, 64): 0.17}


def choice_with(mm, problem, tiles=None, **constants):  # noqa: ANN001, ANN003, ANN201
    """What `mm.choose` picks for `problem` with some of the planner's module constants set otherwise for the call
    (`MMA_EFFICIENCY` replaced whole; not the remembered choice), among `tiles` (default: the planner's)."""
    saved = {name: getattr(mm, name) for name in constants}
    saved_efficiency = dict(mm.MMA_EFFICIENCY)
    try:
        for name, value in constants.items():
            if name == "MMA_EFFICIENCY":
                mm.MMA_EFFICIENCY.clear()
                mm.MMA_EFFICIENCY.update(value)
            else:
                setattr(mm, name, value)
        return mm.choose.__wrapped__(problem, tiles=tiles or mm.TILES)
    finally:
        for name, value in saved.items():
            if name != "MMA_EFFICIENCY":
                setattr(mm, name, value)
        mm.MMA_EFFICIENCY.clear()
        mm.MMA_EFFICIENCY.update(saved_efficiency)


def previous_choice(mm, problem):  # noqa: ANN001, ANN201
    """What `mm.choose` picked for `problem` before session 43: among `PREVIOUS_TILES`, with `PREVIOUS_EFFICIENCY`,
    no tiles narrowed to N or to fill waves (`mm.fitted_tiles`, `mm.wave_tiles`), no copies to whole row pitches and no
    penalty for reading rows that are not (`mm.PITCH_COPIES`, `mm.MISALIGNED_PITCH_FACTOR`)."""
    return choice_with(mm, problem, PREVIOUS_TILES, MMA_EFFICIENCY=PREVIOUS_EFFICIENCY, FIT_WASTE=math.inf,
                       PITCH_COPIES=False, MISALIGNED_PITCH_FACTOR=1.0, WAVE_FIT=False)  # fmt: skip


def baseline_choice(mm, problem, key: str):  # noqa: ANN001, ANN201
    """The configuration of baseline `key` for `problem`: ``previous`` (`previous_choice`), ``unpitched`` (no copies to
    whole row pitches), ``unfitted`` (no tiles narrowed to N), ``unwaved`` (no tiles narrowed to fill the SMs'
    waves, `mm.wave_tiles`), ``unclustered`` (no 2-block clusters, `mm.cluster_choice`), ``splitdirect`` (split
    slices stored directly from registers, `mm.SPLIT_TMA_STORE`)."""
    if key == "previous":
        return previous_choice(mm, problem)
    constants = {
        "unpitched": {"PITCH_COPIES": False},
        "unfitted": {"FIT_WASTE": math.inf},
        "unwaved": {"WAVE_FIT": False},
        "unclustered": {"CLUSTERS": False},
        "splitdirect": {"SPLIT_TMA_STORE": False},
    }
    return choice_with(mm, problem, **constants[key])


#: Shapes where the tile count and the SMs quantize badly with the previous tiles (the mid-size GEMMs), and others
#: no constant was fitted on.
MID = [(1536, 1536, 1536), (3072, 3072, 768), (20480, 256, 4096), (6000, 6000, 3000), (2304, 2304, 2304),
       (2816, 5632, 1408), (1792, 3584, 1024), (3584, 1536, 4096), (768, 6144, 2048), (10240, 1280, 2560),
       (2560, 2560, 5120), (1280, 1280, 8192), (12288, 3072, 1536), (3000, 5000, 4000), (6144, 5120, 3072),
       (4000, 4000, 4000), (4096, 4096, 4096), (8192, 8192, 8192)]  # fmt: skip
#: (M, N, K, layout) rows of the layout suite.
LAYOUTS = [(m, n, k, lay) for (m, n, k) in [(4096, 4096, 4096), (64, 8192, 8192)] for lay in ("NN", "NT", "TN", "TT")]


def _compile(job: tuple) -> tuple[tuple, str | None]:
    """Trace and compile every kernel of one (problem, configuration) plan into the on-disk cache (in a pool
    worker)."""
    problem, config = job
    try:
        from argus.backend.cuda.codegen import compile_kernel
        from argus.kernels import matmul as mm

        for traced in mm.plan(problem, config).kernels():
            compile_kernel(traced, dependent=mm.DEPENDENT_LAUNCHES)  # as `prepare` loads them
        return job, None
    except Exception as err:  # noqa: BLE001 - reported per plan
        return job, f"{type(err).__name__}: {err}"


#: `gemv_rows_tma` plans `--gemv-tma` times: (rows per block, stages, threads, waves of blocks split-K aims at,
#: lanes per row, partial sums kept per lane until the end)
GEMV_TMA_VARIANTS = ((64, 4, 128, 0.5, 8, False), (64, 4, 256, 0.5, 8, True), (64, 8, 256, 0.5, 8, True),
                     (64, 8, 256, 1.0, 8, True), (64, 4, 128, 0.5, 8, True), (128, 4, 256, 0.5, 8, True),
                     (64, 6, 256, 0.25, 8, True))  # fmt: skip


def gemv_tma_contenders(mm, problem, chosen) -> list:  # noqa: ANN001
    """(label, config) of the `gemv_rows_tma` variants that apply to `problem` (none where they do not)."""
    small = problem.M <= mm.GEMV_ROWS or problem.N == 1
    stored_k_major = problem.b_major == "K" if problem.M <= mm.GEMV_ROWS else problem.a_major == "K"
    if problem.batch != 1 or not small or not stored_k_major or problem.K % 8:
        return []
    out = []
    for bn, stages, threads, waves, lanes, partial in GEMV_TMA_VARIANTS:
        if partial and threads == 128 and problem.M > 4:
            continue  # 8 rows of partial sums on 128 threads spill
        g = mm.gemv_tma_config(problem, bn=bn, stages=stages, threads=threads, waves=waves, lanes=lanes,
                               partial=partial)  # fmt: skip
        if g != chosen and all(g != c for _, c in out):
            out.append((g.label, g))
    return out


#: Split counts and pipeline depths of the swap-AB plans `--swap` times (besides the heuristic's choice).
SWAP_SPLITS = (1, 2, 3, 4, 6, 8)
SWAP_DEEP_STAGES = (12, 16)


def swap_contenders(mm, problem, chosen, narrow: bool = False) -> list:  # noqa: ANN001
    """(label, config) of the swap-AB plans of `problem` (`mm.swap_tiles`; none where it has none): each tile shape
    at each of `SWAP_SPLITS` with the deepest pipeline the planner allows, and the unsplit tiles with deeper ones
    (`SWAP_DEEP_STAGES`, past the planner's MAX_STAGES); with `narrow`, also each tile's 64-row form."""
    tiles = mm.swap_tiles(problem)
    if not tiles:
        return []
    if narrow:  # the 64-row tile with one consumer warpgroup (where the planner has only 128-row ones)
        tiles = tuple(dict.fromkeys((*tiles, *((64, bn, 1) for _, bn, _ in tiles))))
    q = mm.padded_extent(mm.swapped(problem))
    found = [replace(c, SWAP=True) for c in mm.candidates(q, tiles=tiles) if c.SPLITS in SWAP_SPLITS]
    for c in [c for c in found if c.SPLITS == 1]:
        for stages in SWAP_DEEP_STAGES:
            deep = replace(c, STAGES=stages)
            if mm.shared_bytes(deep, q) <= mm.SHARED_MEMORY_BUDGET:
                found.append(deep)
    return [(c.label, c) for c in found if c != chosen]


def wide_k_contenders(mm, problem, configs) -> list:  # noqa: ANN001
    """(label, config) of each tensor-core configuration in `configs` with the other K-block width (16-bit inputs;
    GEMV plans have none): BK = 64 <-> 128 (two swizzle spans), the stages halved or doubled (the same bytes in
    flight), so that the planner's rule (`WIDE_K_MIN_STAGES`) is timed against its alternative both ways."""
    out = []
    for config in configs:
        if not isinstance(config, mm.GemmConfig) or config.BK not in (64, 128) or problem.dtype not in ("bf16", "f16"):
            continue
        if config.BK == 64:
            other = replace(config, BK=128, STAGES=max(2, config.STAGES // 2))
        else:
            other = replace(config, BK=64, STAGES=min(mm.MAX_STAGES, 2 * config.STAGES))
        q = mm.plan(problem, config).padded
        if mm.shared_bytes(other, q) <= mm.SHARED_MEMORY_BUDGET and all(other != c for _, c in out):
            out.append((other.label, other))
    return out


def timed_call(mm, torch, problem, config, a, b, prepared):  # noqa: ANN001, ANN201, PLR0913
    """What one timed call of a contender runs on the GPU: its prepared launches, after the copies `matmul` makes on
    every call where the launches do not (`Launches.copies`: operands copied into zero-padded buffers that TMA can
    address, a GEMV's operand layout). Prepared launches read the copies made when they were prepared: before
    2026-12-02's call 7 of benchmarks/results/2026-12-02-gemm-tiles, padded rows were timed without their copies."""
    if not getattr(prepared, "copies", False):
        return lambda: [p.launch() for p in prepared]
    the_plan = mm.plan(problem, config)

    def host_copies() -> object:
        if the_plan.is_gemv:
            return the_plan.gemv_operands(a, b, torch)
        return the_plan.operands_for_kernel(a, b, torch)

    return lambda: (host_copies(), [p.launch() for p in prepared])


def _operands(torch, m: int, n: int, k: int, layout: str):  # noqa: ANN001, ANN202
    """a (M, K) and b (K, N) in `layout` (N: stored as read; T: a transposed view of a row-major tensor)."""
    g = torch.Generator(device="cuda").manual_seed(m + 3 * n + 7 * k)
    a = torch.randn(m, k, device="cuda", generator=g).to(torch.bfloat16)
    b = torch.randn(k, n, device="cuda", generator=g).to(torch.bfloat16)
    if layout[0] == "T":
        a = a.T.contiguous().T
    if layout[1] == "T":
        b = b.T.contiguous().T
    return a, b


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--suite", default="all", choices=["issue", "table", "heldout", "mid", "layouts", "all"])
    parser.add_argument("--sweep", type=int, default=6, help="configurations timed besides the heuristic's")
    parser.add_argument("--budget", type=float, default=0.6, help="seconds of timed launches per shape (rounds)")
    parser.add_argument("--workers", type=int, default=16)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--shapes", nargs="*", help="M,N,K[,LAYOUT] instead of a suite")
    parser.add_argument(
        "--tuned", action="store_true", help="also time the configuration `argus tune` recorded for this GPU, if any"
    )
    parser.add_argument(
        "--dependent-ab",
        action="store_true",
        help="also time the heuristic's plan launched without programmatic dependent launches (plans of 2+ kernels)",
    )
    parser.add_argument(
        "--gemv-tma",
        action="store_true",
        help="also time `gemv_rows_tma` plans (GEMV_TMA_VARIANTS) where a product has at most GEMV_ROWS rows of A "
        "(or one column of B) and its matrix is stored K-major",
    )
    parser.add_argument(
        "--wide-k",
        action="store_true",
        help="also time each tensor-core contender with the other K-block width (BK = 64 <-> 128, the stages halved or "
        "doubled)",
    )
    parser.add_argument(
        "--swap",
        action="store_true",
        help="also time swap-AB plans (`swap_contenders`) where a product has at most SWAP_MAX_M rows of A",
    )
    parser.add_argument(
        "--swap-narrow",
        action="store_true",
        help="with --swap, also the 64-row swap tiles (one consumer warpgroup)",
    )
    parser.add_argument(
        "--previous-tiles",
        action="store_true",
        help="also time the configuration the heuristic picked before session 43 (`previous_choice`: the tile shapes "
        "before the 192-row, 192-column and narrowed tiles, the efficiencies before their refit)",
    )
    parser.add_argument(
        "--unpitched",
        action="store_true",
        help="also time the configuration the heuristic picks without copies to whole row pitches (`mm.PITCH_COPIES`)",
    )
    parser.add_argument(
        "--unfitted",
        action="store_true",
        help="also time the configuration the heuristic picks without the tiles narrowed to N (`mm.fitted_tiles`)",
    )
    parser.add_argument(
        "--unwaved",
        action="store_true",
        help="also time the heuristic's configuration without the tiles narrowed to fill waves (`mm.wave_tiles`)",
    )
    parser.add_argument(
        "--unclustered",
        action="store_true",
        help="also time the configuration the heuristic picks without 2-block clusters (`mm.CLUSTERS`)",
    )
    parser.add_argument(
        "--split-direct",
        action="store_true",
        help="also time the configuration the heuristic picks with split slices stored directly (`mm.SPLIT_TMA_STORE`)",
    )
    parser.add_argument(
        "--cluster",
        action="store_true",
        help="also time every tensor-core contender in 2-block clusters sharing B (`GemmConfig.CLUSTER` = 2; not a "
        "split tail or a batch)",
    )
    parser.add_argument(
        "--every-tile",
        action="store_true",
        help="also time, for every tile shape of the planner's candidates, its candidate the model ranks first",
    )
    args = parser.parse_args()

    import torch

    from argus.atoms.target import DEFAULT_TARGET
    from argus.kernels import matmul as mm

    for line in environment(torch):
        print(line)
    rows_in: list[tuple[int, int, int, str, str]] = []  # (M, N, K, layout, suite)
    if args.shapes:
        for s in args.shapes:
            parts = s.split(",")
            rows_in.append((int(parts[0]), int(parts[1]), int(parts[2]), parts[3] if len(parts) > 3 else "NT", "cli"))
    else:
        for name, shapes in (("issue", ISSUE), ("table", TABLE), ("heldout", HELDOUT), ("mid", MID)):
            if args.suite in (name, "all"):
                rows_in += [(m, n, k, "NT", name) for m, n, k in shapes]
        if args.suite in ("layouts", "all"):
            rows_in += [(*row, "layouts") for row in LAYOUTS]

    # the plans: the heuristic's configuration and the next `sweep` by estimate, per row
    plans = []
    # "previous", "unpitched", "unfitted" -> problem -> the label of that baseline's configuration
    baseline_of: dict = {"previous": {}, "unpitched": {}, "unfitted": {}, "unwaved": {}, "unclustered": {},
                         "splitdirect": {}}  # fmt: skip
    for m, n, k, layout, suite in rows_in:
        problem = mm.GemmProblem(
            m, n, k, "bf16", "bf16", "K" if layout[0] == "N" else "M", "N" if layout[1] == "N" else "K"
        )
        chosen = mm.plan(problem).config  # the GEMV plan where `gemv_config` takes the product, else `choose`
        if isinstance(chosen, mm.GemvConfig):
            extra = gemv_tma_contenders(mm, problem, chosen) if args.gemv_tma else []
            plans.append((problem, layout, suite, [("heuristic", chosen), *extra]))
            continue
        padded = mm.padded_extent(problem)
        ranked = sorted(mm.candidates(padded), key=lambda c: mm.estimate(problem, c))
        others = [c for c in ranked if c != chosen][: args.sweep]
        if chosen.TAIL > 1 and replace(chosen, TAIL=1) not in others:  # what the split tail gains, at any rank
            others.append(replace(chosen, TAIL=1))
        contenders = [("heuristic", chosen)] + [(c.label, c) for c in others]
        if args.tuned:  # what `argus tune` recorded for this GPU, where it differs from the model's choice
            tuned = mm.tuned_config(problem, "cuda")
            if tuned is not None and tuned != chosen:
                contenders = [(n, c) for n, c in contenders if c != tuned] + [("tuned", tuned)]
        if args.gemv_tma:
            contenders += gemv_tma_contenders(mm, problem, chosen)
        if args.swap:
            swaps = swap_contenders(mm, problem, chosen, args.swap_narrow)
            contenders += [(n, c) for n, c in swaps if all(c != d for _, d in contenders)]
        for key, wanted in (("previous", args.previous_tiles), ("unpitched", args.unpitched),
                            ("unfitted", args.unfitted), ("unwaved", args.unwaved),
                            ("unclustered", args.unclustered), ("splitdirect", args.split_direct)):  # fmt: skip
            if wanted:
                config = baseline_choice(mm, problem, key)
                if all(config != c for _, c in contenders):
                    contenders.append((config.label, config))
                baseline_of[key][problem] = config.label
        if args.every_tile:  # the tile shapes of the planner and those narrowed to N (`mm.fitted_tiles`)
            for tile in dict.fromkeys((c.BM, c.BN, c.CONSUMERS) for c in ranked):
                own = [c for c in ranked if (c.BM, c.BN, c.CONSUMERS) == tile]
                if all(own[0] != c for _, c in contenders):
                    contenders.append((own[0].label, own[0]))
        if args.wide_k:
            contenders += wide_k_contenders(mm, problem, [c for _, c in contenders])
        if args.cluster:  # the same configurations with B shared by a 2-block cluster
            contenders += [
                (f"{n} +cluster" if n == "heuristic" else replace(c, CLUSTER=2).label, replace(c, CLUSTER=2))
                for n, c in list(contenders)
                if isinstance(c, mm.GemmConfig) and c.TAIL == 1 and c.CLUSTER == 1 and problem.batch == 1
            ]
        plans.append((problem, layout, suite, contenders))
    jobs = {(problem, c) for problem, _, _, configs in plans for _, c in configs}
    t0 = time.time()
    failed_compile = {}
    with ProcessPoolExecutor(args.workers) as pool:
        for job, err in pool.map(_compile, sorted(jobs, key=repr)):
            if err:
                failed_compile[job] = err
                print(f"compile failed: {job[1].label} for {job[0]}: {err[:300]}")
    print(f"compiled {len(jobs)} kernels in {time.time() - t0:.0f} s ({len(failed_compile)} failed)")

    scratch = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    out_rows, wrong = [], False
    print(f"{'shape':>20} {'lay':>3} {'cuBLAS ms':>9} {'heur ms':>9} {'x cuBLAS':>8} {'best x':>7}  heuristic / best")
    for problem, layout, suite, configs in plans:
        m, n, k = problem.M, problem.N, problem.K
        a, b = _operands(torch, m, n, k, layout)
        ref = a.float() @ b.float()
        scale = float(ref.abs().max())
        launches = {"cublas": lambda a=a, b=b: torch.matmul(a, b)}
        errs, params_of, prepared_of = {}, {}, {}
        for label, config in configs:
            try:
                c, prepared = mm.prepare(a, b, config=config)
            except Exception as err:  # noqa: BLE001 - reported per contender
                print(f"  {label}: {type(err).__name__}: {str(err)[:300]}")
                errs[label] = float("nan")
                if label == "heuristic":
                    wrong = True
                continue
            for p in prepared:
                p.launch()
            torch.cuda.synchronize()
            err = float((c.float() - ref).abs().max()) / scale
            errs[label] = err
            params_of[label] = config
            if not err <= 1e-2:
                wrong = True
                print(f"  WRONG {label} at {m}x{n}x{k} {layout}: relative error {err}")
                continue
            launches[label] = timed_call(mm, torch, problem, config, a, b, prepared)
            prepared_of[label] = prepared
            if args.dependent_ab and label == "heuristic" and len(prepared) > 1:
                mm.DEPENDENT_LAUNCHES = False
                try:
                    _, plain = mm.prepare(a, b, config=config)
                finally:
                    mm.DEPENDENT_LAUNCHES = True
                launches["heuristic, no PDL"] = lambda plain=plain: [p.launch() for p in plain]
        # rounds: about `budget` seconds of launches
        t = time.time()
        for fn in launches.values():
            fn()
        torch.cuda.synchronize()
        per_round = max(time.time() - t, 1e-5)
        rounds = int(min(200, max(10, args.budget / per_round)))
        times = interleaved_times(torch, launches, rounds, scratch)
        med = {name: statistics.median(v) for name, v in times.items()}
        cublas = med["cublas"]
        timed = {name: t for name, t in med.items() if name not in ("cublas", "heuristic, no PDL")}
        no_pdl = med.get("heuristic, no PDL")
        best = min(timed, key=timed.get) if timed else None
        heur = timed.get("heuristic")
        row = {
            "shape": [m, n, k],
            "layout": layout,
            "suite": suite,
            "cublas_ms": cublas,
            "cublas_tflops": problem.flops / cublas / 1e9,
            "rounds": rounds,
            "heuristic": params_of["heuristic"].label if "heuristic" in params_of else None,
            "tuned": params_of["tuned"].label if "tuned" in params_of else None,
            "tuned_ratio": cublas / timed["tuned"] if "tuned" in timed else None,
            "previous": baseline_of["previous"].get(problem),
            "unfitted": baseline_of["unfitted"].get(problem),
            "unpitched": baseline_of["unpitched"].get(problem),
            "unwaved": baseline_of["unwaved"].get(problem),
            "unclustered": baseline_of["unclustered"].get(problem),
            "splitdirect": baseline_of["splitdirect"].get(problem),
            "heuristic_ms": heur,
            "ratio": cublas / heur if heur else None,
            "best": params_of[best].label if best else None,
            "best_ms": timed.get(best),
            "best_ratio": cublas / timed[best] if best else None,
            "padded": mm.padded_extent(problem) != problem,
            "launches": len(prepared_of.get("heuristic", ())),
            "cluster": params_of["heuristic +cluster"].label if "heuristic +cluster" in params_of else None,
            "cluster_ratio": cublas / timed["heuristic +cluster"] if "heuristic +cluster" in timed else None,
            "no_pdl_ms": no_pdl,
            "no_pdl_ratio": cublas / no_pdl if no_pdl else None,
            "contenders": {
                params_of[name].label if name in params_of else name: {
                    "ms": v,
                    "ratio": cublas / v,
                    "err": errs.get(name),
                    "estimate_ms": mm.estimate(problem, params_of[name]) * 1e3
                    if isinstance(params_of.get(name), mm.GemmConfig)
                    else None,
                }
                for name, v in timed.items()
            },
        }
        out_rows.append(row)
        shape = f"{m}x{n}x{k}"
        ratio = f"{row['ratio']:.3f}" if row["ratio"] else "  -  "
        best_ratio = f"{row['best_ratio']:.3f}" if row["best_ratio"] else "  -  "
        pdl = f" (no PDL {row['no_pdl_ratio']:.3f}, {row['launches']} launches)" if no_pdl else ""
        if row["tuned"]:
            pdl += f" (tuned {row['tuned']}: {row['tuned_ratio']:.3f})"
        if row["cluster_ratio"]:
            pdl += f" (+cluster {row['cluster_ratio']:.3f})"
        print(
            f"{shape:>20} {layout:>3} {cublas:9.4f} {heur or float('nan'):9.4f} {ratio:>8} {best_ratio:>7}  "
            f"{row['heuristic']} / {row['best']}{pdl}",
            flush=True,
        )
        listed = (
            args.gemv_tma
            or args.every_tile
            or args.previous_tiles
            or args.unfitted
            or args.unpitched
            or args.unwaved
            or args.cluster
            or args.unclustered
            or args.split_direct
        )
        if listed and len(row["contenders"]) > 2:
            print("    " + ", ".join(f"{k}: {v['ratio']:.3f}" for k, v in row["contenders"].items()), flush=True)
    for suite_name in ("issue", "table", "heldout", "mid", "layouts", "cli"):
        sel = [r for r in out_rows if r["suite"] == suite_name and r["ratio"]]
        if sel:
            gm = math.exp(statistics.fmean(math.log(r["ratio"]) for r in sel))
            gb = math.exp(statistics.fmean(math.log(r["best_ratio"]) for r in sel))
            gt = math.exp(statistics.fmean(math.log(r["tuned_ratio"] or r["ratio"]) for r in sel))
            worst = min(sel, key=lambda r: r["ratio"])
            for key, what in (
                ("previous", "before session 43"),
                ("unfitted", "without the narrowed tiles"),
                ("unpitched", "without copies to whole row pitches"),
                ("unwaved", "without the tiles narrowed to fill waves"),
                ("unclustered", "without 2-block clusters"),
                ("splitdirect", "with split slices stored directly"),
            ):
                before = [r["contenders"].get(r[key], {}).get("ratio") for r in sel]
                if all(before):
                    gp = math.exp(statistics.fmean(math.log(b) for b in before))
                    print(f"{suite_name}: the heuristic {what}, geometric mean x cuBLAS {gp:.3f}")
            if args.cluster:
                gc = math.exp(statistics.fmean(math.log(r["cluster_ratio"] or r["ratio"]) for r in sel))
                gx = math.exp(statistics.fmean(math.log(max(r["cluster_ratio"] or 0, r["ratio"])) for r in sel))
                print(
                    f"{suite_name}: the heuristic in 2-block clusters where it can be (else as it is), geometric mean "
                    f"x cuBLAS {gc:.3f}; the faster of the two per shape {gx:.3f}"
                )
            print(
                f"{suite_name}: {len(sel)} shapes, geometric mean x cuBLAS: heuristic {gm:.3f}, best of sweep "
                f"{gb:.3f}, with the tuned configurations {gt:.3f}; lowest heuristic {worst['ratio']:.3f} at "
                f"{'x'.join(map(str, worst['shape']))}"
            )
    if args.json:
        args.json.write_text(
            json.dumps({"environment": environment(torch), "target": DEFAULT_TARGET.name, "rows": out_rows}, indent=1)
        )
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
