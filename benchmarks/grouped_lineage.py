"""The MoE grouped GEMM's lineages on a GPU (docs/moe.md, "The lineage"), without the CLI's dependencies:

* ``--tasks``: every rung of the task's lineage (or the library kernels named) through the gate at the task's
  benchmark sizes (the issue's three up-projections), interleaved with its baselines (`torch._grouped_mm`, the
  eager per-expert loop): what ``argus bench TASK --shapes ...`` runs (`argus.eval.bench.run_bench`);
* ``--walk N``: KLineage's walk of the grouped expert (`grouped_gemm_tma_store`), N steps, each gated and timed at
  the task's first benchmark size (what ``argus lineage walk`` runs), and the skills it mines;
* ``--admit DIR``: each skill of DIR (a walk's, mined here or in an earlier run) replayed on the held-out SwiGLU
  lineage (`argus.lineage.skills.admit`, what ``argus skills admit`` runs) at the `grouped_swiglu` task's first
  benchmark size (on a GPU; at its CPU sizes without one).

    python benchmarks/grouped_lineage.py OUT_DIR [--tasks grouped_gemm grouped_swiglu] [--rounds 10] [--walk 4]
        [--admit SKILLS_DIR]
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys


def bench(out: pathlib.Path, task_name: str, rounds: int) -> None:
    """`task_name`: a task (all its library kernels) or one library kernel (its task's sizes)."""
    from argus.eval.bench import run_bench
    from argus.eval.gate import GateOptions
    from argus.tasks import TaskError, get_task, task_of_kernel

    try:
        task = get_task(task_name)
    except TaskError:  # a library kernel's name: its task
        task = task_of_kernel(task_name)
    report = run_bench(
        task_name,
        shapes=[dict(s) for s in task.bench_sizes],
        options=GateOptions(trials=1, reps=rounds, timing="interleaved"),
        on_progress=lambda done, total, what: print(f"[{done}/{total}] {what}", flush=True),
    )
    (out / f"bench-{task_name}.md").write_text(report.to_markdown())
    (out / f"bench-{task_name}.json").write_text(json.dumps(report.to_json(), indent=1, default=str))
    print(report.to_markdown(), flush=True)


def walk(out: pathlib.Path, steps: int) -> None:
    from argus.lineage import walk as walk_lineage
    from argus.lineage.skills import mine_skills, write_skills

    lineage = walk_lineage("grouped_gemm_tma_store", max_steps=steps, progress=lambda t: print(t, flush=True))
    print(lineage.table(), flush=True)
    lineage.write(out / "walk.json")
    if lineage.steps:
        paths = write_skills(mine_skills(lineage), out / "skills")
        print(f"{len(paths)} skills written to {out / 'skills'}", flush=True)


def admit_on_swiglu(out: pathlib.Path, directory: pathlib.Path) -> None:
    import torch

    from argus.lineage.skills import admit, held_out_moves, load_skills
    from argus.tasks import get_task

    # on a GPU at the task's first benchmark size (timed); without one at its CPU sizes (the cost model's estimates)
    sizes = {"grouped_swiglu": dict(get_task("grouped_swiglu").bench_sizes[0])} if torch.cuda.is_available() else None
    records = []
    for entry in load_skills(directory):
        for move in [m for m in held_out_moves(entry) if m["family"] == "grouped_swiglu"]:
            record = admit(entry, move["kernel"], sizes=sizes)
            records.append({"skill": entry.id, "kernel": move["kernel"], **record})
            print(f"{entry.id} on {move['kernel']}: {json.dumps(record, default=str)[:600]}", flush=True)
    (out / "admissions.json").write_text(json.dumps(records, indent=1, default=str))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=pathlib.Path)
    parser.add_argument("--tasks", nargs="*", default=["grouped_gemm"], help="tasks or library kernels to bench")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--walk", type=int, default=0, help="walk the expert this many steps (0: no walk)")
    parser.add_argument("--admit", type=pathlib.Path, help="admit the skills of this directory on the SwiGLU lineage")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for task_name in args.tasks:
        bench(args.out, task_name, args.rounds)
    if args.walk:
        walk(args.out, args.walk)
    if args.admit:
        admit_on_swiglu(args.out, args.admit)
    return 0


if __name__ == "__main__":
    sys.exit(main())
