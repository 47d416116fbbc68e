"""Run `argus.agent.loop.optimize` in a subprocess that kills itself (``os._exit``) when the gate of step
`KILL_AT` starts: ``python -m tests.agent.optimize_script STORE TARGET BUDGET KILL_AT``."""

from __future__ import annotations

import os
import sys

from argus.agent.loop import Budget, optimize


def main() -> None:
    store, target, budget, kill_at = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])

    def on_step(event):
        if event.kind == "gating" and event.step == kill_at:
            os._exit(9)  # the gate of this step has started: it is recorded in flight

    optimize(target, budget=Budget(candidates=budget), store=store, isolate=False, on_step=on_step)


if __name__ == "__main__":
    main()
