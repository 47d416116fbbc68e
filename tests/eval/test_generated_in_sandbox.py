"""Generated DSL kernels (an LLM's rewrite) are traced in a sandbox and judged as IR: the gate worker never
imports them, so a file that tampers with argus at import changes nothing the judge decides."""

from __future__ import annotations

from pathlib import Path

import argus.eval.tolerance
from argus.agent.gatejob import gate_candidate
from argus.eval.gate import GateOptions
from argus.eval.judge import gate_generated_kernel
from argus.eval.results import GateResult
from argus.tasks.builtin import get_task

HONEST = """
import argus
import argus.lang as T


@argus.kernel
def vadd(A: T.Tensor[("N",), T.f32], B: T.Tensor[("N",), T.f32], C: T.Tensor[("N",), T.f32], BLOCK: int = 512):
    with T.grid(T.cdiv(N, BLOCK), threads=128) as (bx,):
        a = T.alloc_fragment((BLOCK,), T.f32)
        b = T.alloc_fragment((BLOCK,), T.f32)
        T.copy(A.tile(bx, BLOCK), a)
        T.copy(B.tile(bx, BLOCK), b)
        T.copy(a + b, C.tile(bx, BLOCK))
"""

# not restricted code: it patches the comparison at import and writes a file, then computes a - b
TAMPERING = """
import argus.eval.tolerance

_ok = argus.eval.tolerance.compare
argus.eval.tolerance.compare = lambda *a, **k: _ok(a[1], a[1], a[2])
try:
    open("@MARKER@", "w").write("escaped")
except OSError:
    pass
""" + HONEST.replace("a + b", "a - b")

OPTIONS = GateOptions(device="cpu", trials=5)


def test_a_generated_kernel_is_traced_in_a_sandbox_and_judged_here(tmp_path: Path) -> None:
    path = tmp_path / "vadd.py"
    path.write_text(HONEST)
    ref = {"library": None, "file": str(path), "function": "vadd", "params": {"BLOCK": 1024}, "generated": True}
    result = GateResult.from_json(gate_candidate(ref, "vector_add", OPTIONS.to_dict(), "g", generated=True))
    assert result.verdict == "accepted", result.summary()
    assert result.environment["sandbox"]["traced_in_sandbox"]
    assert result.stage("verify").status == "passed"
    assert "vadd" not in " ".join(__import__("sys").modules)  # never imported here


def test_a_generated_kernel_that_tampers_at_import_changes_nothing_here(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    path = tmp_path / "evil.py"
    path.write_text(TAMPERING.replace("@MARKER@", str(marker)))
    before = argus.eval.tolerance.compare
    result = gate_generated_kernel(get_task("vector_add"), "evil", path, "vadd", {}, path.read_text(), OPTIONS)
    assert argus.eval.tolerance.compare is before
    assert result.verdict == "rejected" and result.failed_stage.code == "CORRECT_MISMATCH"
    assert not marker.exists()


def test_a_generated_kernel_that_fails_to_trace_is_rejected_with_the_reason(tmp_path: Path) -> None:
    path = tmp_path / "broken.py"
    path.write_text(HONEST.replace("T.copy(a + b", "T.copy(a + undefined_name"))
    result = gate_generated_kernel(get_task("vector_add"), "b", path, "vadd", {}, path.read_text(), OPTIONS)
    assert result.verdict == "rejected"
    assert result.failed_stage.code == "COMPILE_TRACE" and "undefined_name" in result.failed_stage.reason
