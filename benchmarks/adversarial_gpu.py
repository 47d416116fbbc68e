"""The adversarial corpus's attacks on the timed phase, through the gate on a GPU (the profile stage runs only
there): each file gated with ``device="cuda"``; prints verdict, code and the sandbox's protections.

    python benchmarks/adversarial_gpu.py [NAME ...]     # default: the cache attacks and the honest solutions
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
CORPUS = ROOT / "tests" / "eval" / "adversarial"
DEFAULT = ["honest_matmul", "honest_noncontiguous", "cache_stop_after_warmup", "cache_address_and_samples",
           "cache_by_shape", "tamper_patch_torch_matmul", "tamper_gc_reference", "fault_segfault", "fault_os_exit",
           "tamper_forge_runner_reply", "escape_kill_everything"]  # fmt: skip


def main() -> None:
    from argus.eval.candidates import ModuleCandidate
    from argus.eval.gate import GateOptions, gate_module
    from argus.eval.sandbox import Sandbox
    from argus.tasks.kernelbench import load_problem

    with Sandbox(gpu=True, device="cuda") as probe:
        held = dict(probe.protections)
    print("protections of a GPU sandbox here:", held)
    task = load_problem(CORPUS / "problem_matmul.py")
    options = GateOptions(device="cuda", reps=30, baselines=("eager",), sandbox_timeout_s=60)
    print("| attack | verdict | code | profile | spot-checked rounds |\n|---|---|---|---|---|")
    for name in sys.argv[1:] or DEFAULT:
        if name == "escape_kill_everything" and held.get("uid") == 0 and not held.get("pid_namespace"):
            print(f"| {name} | not run | | neither a PID namespace nor another user here: it would kill us | |")
            continue
        result = gate_module(task, ModuleCandidate(name, path=CORPUS / f"{name}.py"), options)
        profile = result.stage("profile")
        code = result.failed_stage.code if result.failed_stage is not None else ""
        spot = profile.details.get("spot_checked_rounds") if profile is not None else None
        shown = f"{profile.status}: {profile.reason[:90]}" if profile is not None else ""
        why = result.failed_stage.reason[:200] if result.failed_stage is not None else ""
        print(f"| {name} | {result.verdict} | {code} {why} | {shown} | {spot} |", flush=True)
        if result.failed_stage is not None and result.failed_stage.details.get("traceback"):
            print("    " + result.failed_stage.details["traceback"][-600:].replace("\n", "\n    "))
    print("protections:", result.environment.get("sandbox"))


if __name__ == "__main__":
    main()
