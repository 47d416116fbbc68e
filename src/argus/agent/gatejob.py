"""The gate job the loop sends to a worker process (`argus.eval.isolation.WorkerPool`): rebuild the candidate from
plain data, gate it on its task, return the gate result as JSON.

A generated candidate (a file the LLM coder wrote) is checked against the restriction again here, in the worker,
before it is imported: the agent's own process never imports generated code.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def gate_candidate(
    ref: dict[str, Any], task: str, options: dict[str, Any], name: str, generated: bool = False
) -> dict[str, Any]:
    """Gate the kernel `ref` (`KernelRef.to_json()`) on the built-in `task` with `options`
    (`GateOptions.to_dict()`); returns `GateResult.to_json()`."""
    from argus.agent.arms import KernelRef
    from argus.eval.candidates import KernelCandidate
    from argus.eval.gate import GateOptions, gate_kernel
    from argus.tasks.builtin import get_task

    kref = KernelRef.from_json(ref)
    source = None
    if generated:
        from argus.agent.restricted import require_restricted

        source = Path(str(kref.file)).read_text()
        require_restricted(source)
    fn = kref.load()
    candidate = KernelCandidate(name, fn, dict(kref.params), source=source)
    result = gate_kernel(get_task(task), candidate, options=GateOptions.from_dict(options))
    return result.to_json()
