"""The frontend: from a PyTorch module to verified DSL kernels (`argus solve`), with no LLM.

* `capture` — ``torch.export`` of a KernelBench-style problem with the core ATen decompositions;
* `partition` — operators classified into kernel families; pointwise chains grouped by FX's capability-based
  partitioner, each group with its own FX subgraph as reference;
* `families` — kernel-family templates (pointwise, reduction, softmax-like, scan, pooling, normalization);
* `emit` — the solution file: the generated kernels and a ``ModelNew`` that launches them;
* `solve` — the pipeline: capture, partition, generate, verify, check on the interpreter, judge with the gate.

Layer 9 of docs/architecture.md: it uses the kernels, tasks and the gate; the command line uses it.
"""

from __future__ import annotations

from argus.frontend.capture import Capture, InputSpec, capture
from argus.frontend.errors import FrontendError
from argus.frontend.partition import Family, Group, Partition, Uncovered, classify, partition
from argus.frontend.solve import KernelReport, SolveResult, generate, solve

__all__ = [
    "Capture",
    "Family",
    "FrontendError",
    "Group",
    "InputSpec",
    "KernelReport",
    "Partition",
    "SolveResult",
    "Uncovered",
    "capture",
    "classify",
    "generate",
    "partition",
    "solve",
]
