"""The MoE grouped GEMM (`argus.kernels.grouped`) against ``torch._grouped_mm``, interleaved (issue #23).

Usage (from the repository root on a GPU machine)::

    PYTHONPATH=src python benchmarks/grouped_sweep.py [--rounds 20] [--quick] [--json F]

For each shape (experts E, routed rows R, K, N: the up-projections of Mixtral, Qwen3-30B-A3B and DeepSeek-V3 named
in the issue, and two not named there) and routing (balanced; Zipf-skewed; one expert taking 70 %; group sizes in
multiples of 16 for torch, which requires them), every contender is checked first (relative max error against a
per-expert f32 product <= 1e-2, the output poisoned with NaN before the run: rows left unwritten fail), then each
round flushes L2 and times one launch of each contender back to back with CUDA events, the order rotating every
round. The table: median time per contender, TFLOP/s (2 R K N), and the ratio of medians to ``torch._grouped_mm``
(B given row-major (E, K, N), and B given as the transpose of a contiguous (E, N, K): the layout torch's kernel reads
best). argus configurations: every `CONFIGS` entry with each of ``--epilogues`` (EPILOGUE "direct": every tile
stored from registers; "tma": full tiles through TMA stores), and the one `choose` picks. A last section runs odd
group sizes (not multiples of 16, empty experts) through argus for correctness only.
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

from argus.kernels import moe as grouped  # noqa: E402

SHAPES = (  # (label, E, R, K, N)
    ("Mixtral up", 8, 8192, 4096, 28672),
    ("Qwen3-30B-A3B up", 128, 65536, 2048, 1536),
    ("DeepSeek-V3 up", 256, 32768, 7168, 4096),
    ("Mixtral down (unnamed)", 8, 8192, 14336, 4096),
    ("small experts (unnamed)", 64, 4096, 1024, 512),
)
ROUTINGS = ("balanced", "zipf", "one-hot")


def group_sizes(routing: str, experts: int, rows: int, multiple: int) -> list[int]:
    """Rows per expert summing to `rows`, each a multiple of `multiple`."""
    units = rows // multiple
    if routing == "balanced":
        weights = [1.0] * experts
    elif routing == "zipf":
        weights = [1.0 / (i + 1) ** 1.2 for i in range(experts)]
    else:  # one expert takes 70 %, the rest share the remainder
        weights = [0.7 * (experts - 1) / 0.3] + [1.0] * (experts - 1)
    total = sum(weights)
    sizes = [int(units * w / total) for w in weights]
    sizes[0] += units - sum(sizes)
    return [s * multiple for s in sizes]


def interleaved(torch, launches: dict, rounds: int, scratch) -> dict[str, list[float]]:  # noqa: ANN001
    names = list(launches)
    for fn in launches.values():
        for _ in range(3):
            fn()
    times: dict[str, list[float]] = {n: [] for n in names}
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in names]
    for r in range(rounds):
        order = names[r % len(names) :] + names[: r % len(names)]
        for name in order:
            i = names.index(name)
            scratch.zero_()
            events[i][0].record()
            launches[name]()
            events[i][1].record()
        torch.cuda.synchronize()
        for i, name in enumerate(names):
            times[name].append(events[i][0].elapsed_time(events[i][1]))
    return times


def reference(torch, a, b, offs):  # noqa: ANN001, ANN201
    out = torch.zeros(a.shape[0], b.shape[2], dtype=torch.float32, device=a.device)
    start = 0
    for g, end in enumerate(offs.tolist()):
        if end > start:
            out[start:end] = a[start:end].float() @ b[g].float()
        start = end
    return out


def rel_err(torch, c, ref, rows: int) -> float:  # noqa: ANN001
    c, ref = c[:rows].float(), ref[:rows]
    if not torch.isfinite(c).all():
        return float("inf")
    return float((c - ref).abs().max() / ref.abs().max().clamp_min(1e-30))


def main() -> int:
    import torch

    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--quick", action="store_true", help="the three named shapes, balanced and zipf only")
    p.add_argument("--json")
    p.add_argument("--groups", type=int, nargs="+", default=[8], help="GROUP values timed for every configuration")
    p.add_argument(
        "--epilogues", nargs="+", default=["direct"], choices=["direct", "tma"], help="EPILOGUE values timed for each"
    )
    args = p.parse_args()
    dev = torch.device("cuda")
    scratch = torch.empty(256 << 20, dtype=torch.uint8, device=dev)
    rows_out, failed = [], False
    shapes = SHAPES[:3] if args.quick else SHAPES
    routings = ROUTINGS[:2] if args.quick else ROUTINGS
    print("| shape | routing | contender | ms | TFLOP/s | x torch (row-major B) | x torch (best B) | err |")
    print("|---|---|---|---|---|---|---|---|")
    for label, E, R, K, N in shapes:  # noqa: N806
        torch.manual_seed(0)
        a = torch.randn(R, K, device=dev, dtype=torch.bfloat16)
        b = torch.randn(E, K, N, device=dev, dtype=torch.bfloat16) * K**-0.5
        b_nk = b.transpose(-2, -1).contiguous()  # (E, N, K)
        for routing in routings:
            sizes = group_sizes(routing, E, R, 16)
            offs = torch.tensor(sizes, dtype=torch.int64).cumsum(0).to(dev, torch.int32)
            ref = reference(torch, a, b, offs)
            launches, errs = {}, {}
            c_t = torch._grouped_mm(a, b, offs=offs)
            errs["torch (row-major B)"] = rel_err(torch, c_t, ref, R)
            launches["torch (row-major B)"] = lambda a=a, b=b, offs=offs: torch._grouped_mm(a, b, offs=offs)
            bt = b_nk.transpose(-2, -1)
            c_t2 = torch._grouped_mm(a, bt, offs=offs)
            errs["torch (B transposed)"] = rel_err(torch, c_t2, ref, R)
            launches["torch (B transposed)"] = lambda a=a, bt=bt, offs=offs: torch._grouped_mm(a, bt, offs=offs)
            chosen = grouped.choose(R, N, K, E)
            chosen_name = f"argus {chosen['BM']}x{chosen['BN']}x{chosen['BK']}/{chosen['STAGES']} g{chosen['GROUP']}"
            chosen_name += f" {chosen.get('EPILOGUE', 'direct')}"
            configs = {
                f"argus {bm}x{bn}x{bk}/{st} g{group} {ep}": {
                    "BM": bm,
                    "BN": bn,
                    "BK": bk,
                    "STAGES": st,
                    "GROUP": group,
                    "EPILOGUE": ep,
                }
                for bm, bn, bk, st in grouped.CONFIGS
                for group in args.groups
                for ep in args.epilogues
            }
            keep = []
            for name, cfg in configs.items():
                c = torch.full((R, N), float("nan"), dtype=torch.bfloat16, device=dev)
                c, launch = grouped.prepare(a, b, offs, config=cfg, out=c)
                launch.launch()
                torch.cuda.synchronize()
                errs[name] = rel_err(torch, c, ref, R)
                launches[name] = launch.launch
                keep.append(launch)
            times = interleaved(torch, launches, args.rounds, scratch)
            med = {n: statistics.median(t) for n, t in times.items()}
            flops = 2.0 * R * K * N
            base_row, base_best = (
                med["torch (row-major B)"],
                min(med["torch (row-major B)"], med["torch (B transposed)"]),
            )
            for name in launches:
                ok = errs[name] <= 1e-2
                failed |= not ok and name.startswith("argus")
                pick = " (chosen)" if name == chosen_name else ""
                row = dict(
                    shape=label,
                    E=E,
                    R=R,
                    K=K,
                    N=N,
                    routing=routing,
                    contender=name + pick,
                    ms=med[name],
                    tflops=flops / med[name] / 1e9,
                    x_row=base_row / med[name],
                    x_best=base_best / med[name],
                    err=errs[name],
                    sizes_max=max(sizes),
                    sizes_min=min(sizes),
                )
                rows_out.append(row)
                print(
                    f"| {label} E={E} R={R} K={K} N={N} | {routing} | {row['contender']} | {med[name]:.3f} | "
                    f"{row['tflops']:.0f} | {row['x_row']:.3f} | {row['x_best']:.3f} | {errs[name]:.1e}"
                    f"{'' if ok else ' WRONG'} |",
                    flush=True,
                )
            del keep, launches
            torch.cuda.empty_cache()
        del a, b, b_nk
        torch.cuda.empty_cache()
    # odd group sizes and empty experts: correctness of the argus kernel only (torch needs multiples of 16)
    print("\n| odd groups | sizes | err |\n|---|---|---|")
    g = torch.Generator(device="cpu").manual_seed(1)
    for E, R, K, N in ((7, 1000, 264, 200), (33, 3001, 512, 1032)):  # noqa: N806
        sizes = torch.randint(0, 2 * R // E, (E,), generator=g)
        sizes[1] = 0
        sizes[-1] = 0
        offs = sizes.cumsum(0).to(dev, torch.int32)
        rows = int(offs[-1])
        a = torch.randn(max(R, rows), K, generator=g).to(dev, torch.bfloat16)
        b = (torch.randn(E, K, N, generator=g) * K**-0.5).to(dev, torch.bfloat16)
        ref = reference(torch, a, b, offs)
        for cfg in grouped.CONFIGS:
            bm, bn, bk, st = cfg
            for ep in args.epilogues:
                c = torch.full((a.shape[0], N), float("nan"), dtype=torch.bfloat16, device=dev)
                config = dict(BM=bm, BN=bn, BK=bk, STAGES=st, GROUP=4, EPILOGUE=ep)
                c, launch = grouped.prepare(a, b, offs, config=config, out=c)
                launch.launch()
                torch.cuda.synchronize()
                err = rel_err(torch, c, ref, rows)
                failed |= err > 1e-2
                print(
                    f"| E={E} R={a.shape[0]} K={K} N={N} {bm}x{bn} {ep} | {sizes.tolist()[:8]}... rows {rows} | "
                    f"{err:.1e} |"
                )
                rows_out.append(dict(odd=True, E=E, R=a.shape[0], K=K, N=N, config=cfg, epilogue=ep, err=err))
    if args.json:
        Path(args.json).write_text(json.dumps(rows_out, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
