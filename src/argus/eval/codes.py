"""The catalog of gate outcome codes: each stable ``STAGE_DETAIL`` code with what it means and what to do.

The gate's results carry only the code and a one-line reason; programs (and the agent) look the code up here
for the meaning and the hint. Codes never change meaning; new ones are added at the end of their stage.
"""

from __future__ import annotations

from dataclasses import dataclass

from argus.diagnostics.catalog import fix_for


@dataclass(frozen=True)
class GateCode:
    """One outcome code: its stage, what it means, and how to fix it."""

    code: str
    stage: str
    meaning: str
    own_hint: str = ""  # only for a code the diagnostics catalog does not list

    @property
    def hint(self) -> str:
        """What to do: the code's fix in `argus.diagnostics.Code`, the one catalog of every code."""
        return fix_for(self.code) or self.own_hint


_ENTRIES = [
    # static: policy checks on the candidate's source, before anything runs
    GateCode(
        "STATIC_FORBIDDEN_CALL",
        "static",
        "the candidate calls a library routine that this task forbids (e.g. torch.matmul on a GEMM task)",
    ),
    GateCode(
        "STATIC_PRECISION_TOGGLE",
        "static",
        "the candidate enables TF32 or reduced-precision reductions on an fp32 task",
    ),
    GateCode(
        "STATIC_UNPARSEABLE",
        "static",
        "the candidate's source is not valid Python",
    ),
    GateCode("STATIC_NO_SOURCE", "static", "no source text to check (skipped)"),
    # compile
    GateCode(
        "COMPILE_FAILED",
        "compile",
        "NVRTC rejected the generated CUDA (the message points at the DSL line)",
    ),
    GateCode("COMPILE_TRACE", "compile", "the kernel could not be traced to IR"),
    GateCode(
        "COMPILE_UNSUPPORTED",
        "compile",
        "the CUDA code generator cannot lower a construct of this kernel yet (skipped; correctness still runs on the "
        "interpreter)",
    ),
    GateCode(
        "COMPILE_UNAVAILABLE",
        "compile",
        "the CUDA code generator or toolchain is not installed here (skipped)",
    ),
    GateCode(
        "COMPILE_SIGNATURE",
        "compile",
        "the kernel's tensor parameters are not the task's",
    ),
    GateCode("COMPILE_IMPORT", "compile", "the solution file raised while being imported"),
    GateCode("COMPILE_MISSING", "compile", "the solution file defines no ModelNew"),
    GateCode("COMPILE_INIT", "compile", "constructing the candidate module raised"),
    # verify
    GateCode(
        "VERIFY_VIOLATED",
        "verify",
        "the verifier proved an invariant false; its counterexample is in the details",
    ),
    GateCode(
        "VERIFY_UNKNOWN",
        "verify",
        "the verifier could not decide every check (does not reject)",
    ),
    GateCode("VERIFY_UNAVAILABLE", "verify", "the verifier is not importable here (skipped)"),
    GateCode(
        "VERIFY_NOT_APPLICABLE",
        "verify",
        "the candidate contains no argus DSL kernel to verify (skipped)",
    ),
    GateCode("VERIFY_ERROR", "verify", "the verifier itself failed (harness error)"),
    # correct
    GateCode(
        "CORRECT_MISMATCH",
        "correct",
        "an output element is outside the tolerance of the float64 reference, or the relative norm of the error is "
        "too large",
    ),
    GateCode(
        "CORRECT_NONFINITE",
        "correct",
        "NaN or Inf where the reference has none (or the reverse); a poisoned output element that was never "
        "written reads as NaN",
    ),
    GateCode("CORRECT_SHAPE", "correct", "an output has the wrong shape"),
    GateCode("CORRECT_DTYPE", "correct", "an output has the wrong dtype"),
    GateCode("CORRECT_OUTPUT_COUNT", "correct", "wrong number of outputs"),
    GateCode(
        "CORRECT_INPUT_MODIFIED",
        "correct",
        "the candidate wrote into an input tensor",
    ),
    GateCode("CORRECT_EXCEPTION", "correct", "the candidate raised while running"),
    GateCode(
        "CORRECT_PRECISION_FLAGS",
        "correct",
        "the candidate changed PyTorch's precision settings (TF32, reduced-precision reductions)",
    ),
    GateCode(
        "CORRECT_FORBIDDEN_OP",
        "correct",
        "while running, the candidate dispatched a PyTorch operator that this task forbids",
    ),
    GateCode(
        "CORRECT_NO_VALID_TRIALS",
        "correct",
        "no input distribution on which the task's own reference meets its tolerance (harness error)",
    ),
    GateCode(
        "CORRECT_REFERENCE_FAILED",
        "correct",
        "the reference raised (harness error, not the candidate's fault)",
    ),
    # profile
    GateCode("PROFILE_NO_GPU", "profile", "no CUDA GPU here: timing skipped"),
    GateCode(
        "PROFILE_NOT_COMPILED",
        "profile",
        "the kernel was not compiled, so it cannot be timed (skipped)",
    ),
    GateCode("PROFILE_FAILED", "profile", "the candidate failed while being timed"),
    GateCode(
        "PROFILE_STALE_RESULT",
        "profile",
        "the outputs of the timed calls are wrong: inputs change between repetitions (outside the timed region) and "
        "the candidate returned a cached or stale result",
    ),
    GateCode("PROFILE_ERROR", "profile", "the timing harness failed (harness error)", "report it"),
    # isolation: a pseudo-stage for what happened to the worker process
    GateCode(
        "WORKER_CRASHED",
        "isolation",
        "the worker process died while evaluating the candidate (segfault, illegal memory access, os._exit); one "
        "killed from outside (SIGKILL or SIGTERM the pool did not send) is retried once first, and "
        "details['attempts'] says how many runs it took",
    ),
    GateCode("WORKER_TIMEOUT", "isolation", "the candidate ran past its time limit"),
    GateCode(
        "WORKER_LOST",
        "isolation",
        "the executor lost the job's worker or node (a Ray worker or node that died) on both attempts; an error of "
        "the harness, not a verdict on the candidate",
    ),
    # the sandbox (a candidate file, or a generated kernel's trace, in a process of its own: argus.eval.judge)
    GateCode(
        "SANDBOX_CRASHED",
        "sandbox",
        "the candidate's sandbox process ended while the judge waited for it (a crash, os._exit, a signal); a "
        "SIGKILL the judge did not send is retried once first",
    ),
    GateCode(
        "SANDBOX_TIMEOUT",
        "sandbox",
        "the candidate's sandbox did not answer within GateOptions.sandbox_timeout_s; it was killed",
    ),
    GateCode(
        "SANDBOX_PROTOCOL",
        "sandbox",
        "what the candidate's process sent back is not a well-formed answer (bad frame, a size over the limit, a "
        "dtype not allowed, IR that does not decode): only a process that tampers with the harness sends this",
    ),
    GateCode(
        "SANDBOX_START",
        "sandbox",
        "the sandbox process could not be started (the harness's problem: an error, not a rejection)",
    ),
    GateCode(
        "CANDIDATE_FAILED",
        "sandbox",
        "the candidate's process raised outside the operation's own handling (it broke the runner)",
    ),
    GateCode(
        "CORRECT_OUTPUT_TYPE",
        "correct",
        "an output is not a plain torch.Tensor (a subclass, e.g. one whose __torch_function__ changes comparisons)",
    ),
    GateCode(
        "CORRECT_OUTPUT_DEVICE",
        "correct",
        "an output is on another device than the task's (a meta tensor, or CPU output on a GPU task)",
    ),
    GateCode(
        "PROFILE_TIMING_IMPOSSIBLE",
        "profile",
        "the sandbox reported a repetition longer than the round trip that carried it: its timer was tampered with",
    ),
    GateCode("WORKER_EXCEPTION", "isolation", "the evaluation raised outside any stage"),
    # flags: suspicious measurements
    GateCode(
        "FLAG_SPEEDUP_SUSPICIOUS",
        "profile",
        "faster than a baseline by more than the configured factor",
    ),
    GateCode(
        "FLAG_BEYOND_CEILING",
        "profile",
        "throughput above the GPU's measured ceiling: work was skipped or timed wrongly",
    ),
    GateCode(
        "FLAG_UNSYNCED_WORK",
        "profile",
        "a device-synchronized wall clock saw much more time than the timing events: work runs outside the timed "
        "stream",
    ),
    GateCode("FLAG_TIMING_NOISY", "profile", "the spread of the repetitions is large"),
    GateCode(
        "FLAG_PRECISION_CAST",
        "static",
        "the candidate casts to a half-precision type on an fp32 task",
    ),
]

CODES: dict[str, GateCode] = {e.code: e for e in _ENTRIES}


def describe(code: str) -> GateCode:
    """The catalog entry of `code` (KeyError if unknown)."""
    return CODES[code]
