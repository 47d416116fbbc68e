"""KLineage's walk of one expert kernel on a GPU, without the CLI's dependencies: what ``argus lineage walk KERNEL``
runs (`argus.lineage.walk`: every step checked to remove exactly one mechanism, then gated — verified, correct,
timed), the lineage's table, and the skills it mines (`argus.lineage.skills.mine_skills`) with their measured
effects.

    python benchmarks/lineage_walk.py KERNEL OUT_DIR [--steps 6] [--sizes "attention:BH=16,S=4096"] [--reps 10]

On a GPU every step is timed at `--sizes` (default: the expert task's first benchmark size) through the gate (the
walk's own gate options, REPS timed rounds); without one the gate runs on the interpreter at the task's CPU sizes
and the timings are the cost model's estimates. OUT_DIR gets ``walk.json`` (the lineage), ``walk.md`` (its table) and
``skills/`` (one file a mined skill).
"""

from __future__ import annotations

import argparse
import pathlib
import sys

try:
    import argus  # noqa: F401
except ImportError:
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "src"))


def parse_sizes(text: str | None) -> dict[str, dict[str, int]] | None:
    """``"attention:BH=16,S=4096;gemm:M=64,N=64,K=64"`` -> {task: {size: value}}."""
    if not text:
        return None
    out: dict[str, dict[str, int]] = {}
    for part in filter(None, (p.strip() for p in text.split(";"))):
        task, _, rest = part.partition(":")
        out[task.strip()] = {k.strip(): int(v) for k, v in (item.split("=") for item in rest.split(",") if item)}
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("kernel", help="the expert: a library kernel's name")
    parser.add_argument("out", type=pathlib.Path)
    parser.add_argument("--steps", type=int, default=16, help="steps at most")
    parser.add_argument("--sizes", default=None, help='gate sizes per task, "task:K=V,...;task2:..."')
    parser.add_argument("--reps", type=int, default=10, help="timed repetitions per step (interleaved)")
    args = parser.parse_args()

    import dataclasses

    from argus.lineage import walk
    from argus.lineage.skills import mine_skills, write_skills
    from argus.lineage.walk import default_gate_options

    args.out.mkdir(parents=True, exist_ok=True)
    lineage = walk(
        args.kernel,
        sizes=parse_sizes(args.sizes),
        max_steps=args.steps,
        gate_options=dataclasses.replace(default_gate_options(), reps=args.reps),
        progress=lambda text: print(text, flush=True),
    )
    table = lineage.table()
    print(table, flush=True)
    (args.out / "walk.md").write_text(table + "\n")
    lineage.write(args.out / "walk.json")
    if lineage.steps:
        paths = write_skills(mine_skills(lineage), args.out / "skills")
        print(f"{len(paths)} skills written to {args.out / 'skills'}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
