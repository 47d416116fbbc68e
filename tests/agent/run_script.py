"""A miniature optimization loop over the run store, run as a subprocess by the resume tests.

    python -m tests.agent.run_script STORE LOG STEPS [--resume RUN] [--crash-at STEP:POINT] [--kill]

Each step "plans" (appends ``plan <step>`` to LOG, as an LLM call would cost), records a candidate, gates it in
three stages (``gate <candidate> attempt <n>`` in LOG) and finishes it with a reward. ``--crash-at 2:gate`` dies in
the middle of step 2's gate (after its first stage); ``2:proposed`` dies after the candidate is recorded and
before its gate starts; ``--kill`` dies by SIGKILL instead of ``os._exit``. A resumed run gates what was in flight
or pending, never what was finished, and plans only the steps that have no candidate. Prints the run id first.
"""

from __future__ import annotations

import argparse
import os
import signal
from pathlib import Path

from argus.agent.store import RunStore, RunWriter

STAGES = ("compile", "verify", "correct")


def die(kill: bool) -> None:
    if kill:
        os.kill(os.getpid(), signal.SIGKILL)
    os._exit(17)


def gate(run: RunWriter, cid: str, step: int, log: Path, crash: tuple[int, str] | None, kill: bool) -> None:
    attempt = run.start_gate(cid)
    with log.open("a") as f:
        f.write(f"gate {cid} attempt {attempt}\n")
    for i, stage in enumerate(STAGES):
        run.record_stage(cid, stage, "passed", {"step": step, "attempt": attempt})
        if i == 0 and crash == (step, "gate"):
            die(kill)
    run.record_timing(cid, "M=64", 1.0 / (step + 1), {"attempt": attempt})
    run.finish_candidate(cid, "accepted", reward=float(step), reward_details={"speedup": step + 1})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("store")
    parser.add_argument("log")
    parser.add_argument("steps", type=int)
    parser.add_argument("--resume")
    parser.add_argument("--crash-at")
    parser.add_argument("--kill", action="store_true")
    args = parser.parse_args()
    crash = None
    if args.crash_at:
        step, point = args.crash_at.split(":")
        crash = (int(step), point)
    log = Path(args.log)
    store = RunStore(args.store)
    if args.resume:
        run = store.open_run(args.resume)
    else:
        run = store.start_run("gemm", planner="bandit", coder="transform", budget={"candidates": args.steps})
    print(run.run_id, flush=True)
    for c in run.state.to_gate:  # in flight or pending when the last writer died
        gate(run, c.id, c.step, log, None, False)
    parent = run.state.candidates[-1].id if run.state.candidates else None
    for step in range(run.state.next_step, args.steps):
        with log.open("a") as f:
            f.write(f"plan {step}\n")
        cid = run.add_candidate(step, parent=parent, action="stages", params={"stages": step + 2}, source=f"k{step}")
        if crash == (step, "proposed"):
            die(args.kill)
        gate(run, cid, step, log, crash, args.kill)
        parent = cid
    run.finish(summary={"steps": args.steps})


if __name__ == "__main__":
    main()
