"""The gate and the benchmark harness: every number argus reports, and every reward the agent learns from,
comes from here — so it trusts no candidate.

    from argus.eval import gate_kernel, library_candidate
    from argus.tasks import get_task
    result = gate_kernel(get_task("softmax"), library_candidate("softmax"))
    print(result.summary())          # accepted; correct on 6 trials; timing skipped: no CUDA GPU here ...
    result.to_json()                 # every stage, for the agent

Stages (`argus.eval.gate`): static -> compile -> verify -> correct -> profile, each a `StageResult` with a
stable code (`argus.eval.codes`: its stage and meaning; every code's fix is in `argus.diagnostics.Code`).
Parts: `correctness` (trials, poisoning, float64 reference), `tolerance` (per-dtype element, norm and NaN/Inf
checks), `inputs` (distributions that keep the task's structure),
`guards` (precision switches, static scan, operator recording, memory scrubbing), `timing` (CUDA events, L2
flush, graph replay), `flags` (suspicious timings), `ceilings` (measured copy bandwidth and GEMM rate, cached),
`device` (environment, SM clock and power), `baselines`, `isolation` (worker processes with time limits),
`store` (SQLite, WAL), `bench` (``argus bench``), `kernelbench` (``argus kernelbench``: the runner; the problems
are loaded by `argus.tasks.kernelbench`), `candidates` and `results` (what is gated, and its result as plain data),
`costmodel` (the profile stage's estimate without a GPU), and the sandbox for untrusted code (`sandbox`, `warden`,
`sandbox_runner`) with the judge that decides verdicts outside it (`judge`). See ``docs/eval.md``.
"""

from argus.eval.candidates import KernelCandidate, ModuleCandidate, library_candidate
from argus.eval.codes import CODES, GateCode, describe
from argus.eval.correctness import Reference, check_correctness
from argus.eval.flags import Thresholds, suspicion_flags
from argus.eval.gate import GateOptions, gate_kernel, gate_module
from argus.eval.isolation import Job, Outcome, WorkerPool
from argus.eval.results import STAGES, Flag, GateResult, StageResult, Status
from argus.eval.store import ResultStore
from argus.eval.tolerance import TOLERANCES, Comparison, Tolerance, compare, tolerance_for

__all__ = [
    "CODES",
    "STAGES",
    "TOLERANCES",
    "Comparison",
    "Flag",
    "GateCode",
    "GateOptions",
    "GateResult",
    "Job",
    "KernelCandidate",
    "ModuleCandidate",
    "Outcome",
    "Reference",
    "ResultStore",
    "StageResult",
    "Status",
    "Thresholds",
    "Tolerance",
    "WorkerPool",
    "check_correctness",
    "compare",
    "describe",
    "gate_kernel",
    "gate_module",
    "library_candidate",
    "suspicion_flags",
    "tolerance_for",
]
