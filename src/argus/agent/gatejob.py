"""The gate job the loop sends to a worker process (`argus.eval.isolation.WorkerPool`): rebuild the candidate from
plain data, gate it on its task, return the gate result as JSON.

A generated candidate (a file the LLM coder wrote) is checked against the restriction here (its syntax tree only),
then imported and traced only in a sandbox (`argus.eval.judge.gate_generated_kernel`): the worker judges the IR
the sandbox sends back and never imports generated code, so one candidate cannot change the verdict on the next.
A kernel of your own (``FILE.py:function``) is traced in a sandbox the same way (without the restriction check).
The arms and transforms of a generated kernel (which trace it) run in a sandbox too (`arms_for`,
`transform_params`). ``GateOptions(sandbox=False)`` restores the old in-worker import (for debugging only).
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
    gate_options = GateOptions.from_dict(options)
    source = None
    if generated or kref.generated or kref.file is not None:  # an LLM's rewrite or a kernel of your own
        source = Path(str(kref.file)).read_text()
        if generated or kref.generated:
            from argus.agent.restricted import require_restricted

            require_restricted(source)
        if gate_options.sandbox:
            from argus.eval.judge import gate_generated_kernel

            result = gate_generated_kernel(get_task(task), name, str(kref.file), str(kref.function),
                                           dict(kref.params), source, gate_options)  # fmt: skip
            return result.to_json()
    fn = kref.load(allow_generated=True)
    candidate = KernelCandidate(name, fn, dict(kref.params), source=source)
    # on a GPU the gate times at options.cost_sizes (the loop sets the start task's first benchmark size), so that
    # rewards compare like with like when a lineage move changes the task (e.g. gemm -> gemm_nt)
    result = gate_kernel(get_task(task), candidate, options=gate_options)
    return result.to_json()


def _sandboxed(ref: dict[str, Any]) -> bool:
    from argus.agent.arms import KernelRef

    kref = KernelRef.from_json(ref)
    return kref.generated or kref.file is not None  # code argus did not write is imported only in a sandbox


def arms_for(ref: dict[str, Any], profile: Any, findings: Any, rewrites: bool, entries: Any = None) -> list[dict]:
    """`arms_for_here`, in a sandbox for a generated kernel (it imports the kernel's file)."""
    kwargs = {"ref": ref, "profile": profile, "findings": findings, "rewrites": rewrites, "entries": entries}
    if _sandboxed(ref):
        from argus.eval.judge import sandboxed_call

        return sandboxed_call("argus.agent.gatejob:arms_for_here", kwargs)
    return arms_for_here(**kwargs)


def transform_params(ref: dict[str, Any], arm: dict[str, Any], entries: Any = None) -> dict[str, Any]:
    """`transform_params_here`, in a sandbox for a generated kernel (it imports the kernel's file)."""
    kwargs = {"ref": ref, "arm": arm, "entries": entries}
    if _sandboxed(ref):
        from argus.eval.judge import sandboxed_call

        return sandboxed_call("argus.agent.gatejob:transform_params_here", kwargs)
    return transform_params_here(**kwargs)


def arms_for_here(ref: dict[str, Any], profile: Any, findings: Any, rewrites: bool, entries: Any = None) -> list[dict]:
    """`argus.agent.arms.available_arms` of a generated kernel, computed here in the worker (its code is imported
    only here): the arms as JSON."""
    from argus.agent.arms import KernelRef, available_arms

    arms = available_arms(KernelRef.from_json(ref), profile=profile, findings=findings, rewrites=rewrites,
                          entries=entries, allow_generated=True)  # fmt: skip
    return [a.to_json() for a in arms]


def transform_params_here(ref: dict[str, Any], arm: dict[str, Any], entries: Any = None) -> dict[str, Any]:
    """The transform coder's parameters for `arm` on a generated kernel, computed here in the worker; a failure
    returns ``{"error": {code, message, hint}}``."""
    from argus.agent.arms import Arm, KernelRef
    from argus.agent.coder import CoderError, TransformCoder

    try:
        done = TransformCoder(entries, allow_generated=True).materialize(Arm.from_json(arm), KernelRef.from_json(ref))
    except CoderError as e:
        return {"error": {"code": e.code, "message": e.message, "hint": e.hint}}
    return {"params": done.ref.params}
