"""The catalog of gate outcome codes: each stable ``STAGE_DETAIL`` code with what it means and what to do.

The gate's results carry only the code and a one-line reason; programs (and the agent) look the code up here
for the meaning and the hint. Codes never change meaning; new ones are added at the end of their stage.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GateCode:
    """One outcome code: its stage, what it means, and how to fix it."""

    code: str
    stage: str
    meaning: str
    hint: str


_ENTRIES = [
    # static: policy checks on the candidate's source, before anything runs
    GateCode(
        "STATIC_FORBIDDEN_CALL",
        "static",
        "the candidate calls a library routine that this task forbids (e.g. torch.matmul on a GEMM task)",
        "implement the computation in the kernel; the task's `forbidden` list names what is not allowed",
    ),
    GateCode(
        "STATIC_PRECISION_TOGGLE",
        "static",
        "the candidate enables TF32 or reduced-precision reductions on an fp32 task",
        "remove the toggle; fp32 tasks are checked at fp32 tolerance and the flags must stay as the harness set them",
    ),
    GateCode(
        "STATIC_UNPARSEABLE",
        "static",
        "the candidate's source is not valid Python",
        "fix the syntax error at the line given",
    ),
    GateCode("STATIC_NO_SOURCE", "static", "no source text to check (skipped)", "pass the source file"),
    # compile
    GateCode(
        "COMPILE_FAILED",
        "compile",
        "NVRTC rejected the generated CUDA (the message points at the DSL line)",
        "fix the kernel at the DSL line given",
    ),
    GateCode("COMPILE_TRACE", "compile", "the kernel could not be traced to IR", "fix the DSL error at its caret"),
    GateCode(
        "COMPILE_UNSUPPORTED",
        "compile",
        "the CUDA code generator cannot lower a construct of this kernel yet (skipped; correctness still runs on the "
        "interpreter)",
        "nothing to fix in the kernel; GPU timing needs the code generator to support the construct",
    ),
    GateCode(
        "COMPILE_UNAVAILABLE",
        "compile",
        "the CUDA code generator or toolchain is not installed here (skipped)",
        "install the `cuda` extra",
    ),
    GateCode(
        "COMPILE_SIGNATURE",
        "compile",
        "the kernel's tensor parameters are not the task's",
        "name the kernel's tensors as the task does (argus bench lists them)",
    ),
    GateCode("COMPILE_IMPORT", "compile", "the solution file raised while being imported", "fix the file"),
    GateCode("COMPILE_MISSING", "compile", "the solution file defines no ModelNew", "define `class ModelNew`"),
    GateCode("COMPILE_INIT", "compile", "constructing the candidate module raised", "fix ModelNew.__init__"),
    # verify
    GateCode(
        "VERIFY_VIOLATED",
        "verify",
        "the verifier proved an invariant false; its counterexample is in the details",
        "read the counterexample: thread, element and program point",
    ),
    GateCode(
        "VERIFY_UNKNOWN",
        "verify",
        "the verifier could not decide every check (does not reject)",
        "pin the parameter the finding names",
    ),
    GateCode("VERIFY_UNAVAILABLE", "verify", "the verifier is not importable here (skipped)", "install argus fully"),
    GateCode(
        "VERIFY_NOT_APPLICABLE",
        "verify",
        "the candidate contains no argus DSL kernel to verify (skipped)",
        "write the kernel in the argus DSL to get proofs",
    ),
    GateCode("VERIFY_ERROR", "verify", "the verifier itself failed (harness error)", "report it with the details"),
    # correct
    GateCode(
        "CORRECT_MISMATCH",
        "correct",
        "an output element is outside the tolerance of the float64 reference, or the relative norm of the error is "
        "too large",
        "the details name the trial's input distribution, the element, the value and the bound",
    ),
    GateCode(
        "CORRECT_NONFINITE",
        "correct",
        "NaN or Inf where the reference has none (or the reverse); a poisoned output element that was never "
        "written reads as NaN",
        "write every output element; check for overflow on the input distribution named",
    ),
    GateCode("CORRECT_SHAPE", "correct", "an output has the wrong shape", "match the reference's output shape"),
    GateCode("CORRECT_DTYPE", "correct", "an output has the wrong dtype", "match the reference's output dtype"),
    GateCode("CORRECT_OUTPUT_COUNT", "correct", "wrong number of outputs", "return what the reference returns"),
    GateCode(
        "CORRECT_INPUT_MODIFIED",
        "correct",
        "the candidate wrote into an input tensor",
        "write results to outputs only",
    ),
    GateCode("CORRECT_EXCEPTION", "correct", "the candidate raised while running", "see the traceback"),
    GateCode(
        "CORRECT_PRECISION_FLAGS",
        "correct",
        "the candidate changed PyTorch's precision settings (TF32, reduced-precision reductions)",
        "leave torch.backends and set_float32_matmul_precision alone",
    ),
    GateCode(
        "CORRECT_FORBIDDEN_OP",
        "correct",
        "while running, the candidate dispatched a PyTorch operator that this task forbids",
        "implement the computation in the kernel",
    ),
    GateCode(
        "CORRECT_NO_VALID_TRIALS",
        "correct",
        "no input distribution on which the task's own reference meets its tolerance (harness error)",
        "the task's inputs or tolerance need attention",
    ),
    GateCode(
        "CORRECT_REFERENCE_FAILED",
        "correct",
        "the reference raised (harness error, not the candidate's fault)",
        "check the task definition",
    ),
    # profile
    GateCode("PROFILE_NO_GPU", "profile", "no CUDA GPU here: timing skipped", "run on an H100/H200"),
    GateCode(
        "PROFILE_NOT_COMPILED",
        "profile",
        "the kernel was not compiled, so it cannot be timed (skipped)",
        "see the compile stage",
    ),
    GateCode("PROFILE_FAILED", "profile", "the candidate failed while being timed", "see the error"),
    GateCode(
        "PROFILE_STALE_RESULT",
        "profile",
        "the outputs of the timed calls are wrong: inputs change between repetitions (outside the timed region) and "
        "the candidate returned a cached or stale result",
        "compute from the inputs on every call",
    ),
    GateCode("PROFILE_ERROR", "profile", "the timing harness failed (harness error)", "report it"),
    # isolation: a pseudo-stage for what happened to the worker process
    GateCode(
        "WORKER_CRASHED",
        "isolation",
        "the worker process died while evaluating the candidate (segfault, illegal memory access, os._exit); one "
        "killed from outside (SIGKILL or SIGTERM the pool did not send) is retried once first, and "
        "details['attempts'] says how many runs it took",
        "the details give the exit status or signal; killed on both attempts points at the OOM killer",
    ),
    GateCode("WORKER_TIMEOUT", "isolation", "the candidate ran past its time limit", "look for a hang"),
    # the sandbox (a candidate file, or a generated kernel's trace, in a process of its own: argus.eval.judge)
    GateCode(
        "SANDBOX_CRASHED",
        "sandbox",
        "the candidate's sandbox process ended while the judge waited for it (a crash, os._exit, a signal); a "
        "SIGKILL the judge did not send is retried once first",
        "run the solution alone; the reason gives the exit status or signal",
    ),
    GateCode(
        "SANDBOX_TIMEOUT",
        "sandbox",
        "the candidate's sandbox did not answer within GateOptions.sandbox_timeout_s; it was killed",
        "look for a hang, or raise the limit for a large problem",
    ),
    GateCode(
        "SANDBOX_PROTOCOL",
        "sandbox",
        "what the candidate's process sent back is not a well-formed answer (bad frame, a size over the limit, a "
        "dtype not allowed, IR that does not decode): only a process that tampers with the harness sends this",
        "return plain tensors from forward; do not touch argus's modules",
    ),
    GateCode(
        "SANDBOX_START",
        "sandbox",
        "the sandbox process could not be started (the harness's problem: an error, not a rejection)",
        "run benchmarks/sandbox_diagnose.py; set ARGUS_SANDBOX_NAMESPACES=none where namespaces are refused",
    ),
    GateCode(
        "CANDIDATE_FAILED",
        "sandbox",
        "the candidate's process raised outside the operation's own handling (it broke the runner)",
        "see the traceback",
    ),
    GateCode(
        "CORRECT_OUTPUT_TYPE",
        "correct",
        "an output is not a plain torch.Tensor (a subclass, e.g. one whose __torch_function__ changes comparisons)",
        "return plain tensors",
    ),
    GateCode(
        "CORRECT_OUTPUT_DEVICE",
        "correct",
        "an output is on another device than the task's (a meta tensor, or CPU output on a GPU task)",
        "return outputs on the device of the inputs",
    ),
    GateCode(
        "PROFILE_TIMING_IMPOSSIBLE",
        "profile",
        "the sandbox reported a repetition longer than the round trip that carried it: its timer was tampered with",
        "do not touch the timing functions",
    ),
    GateCode("WORKER_EXCEPTION", "isolation", "the evaluation raised outside any stage", "see the traceback"),
    # flags: suspicious measurements
    GateCode(
        "FLAG_SPEEDUP_SUSPICIOUS",
        "profile",
        "faster than a baseline by more than the configured factor",
        "check the kernel does all the work, on the timed stream",
    ),
    GateCode(
        "FLAG_BEYOND_CEILING",
        "profile",
        "throughput above the GPU's measured ceiling: work was skipped or timed wrongly",
        "check the declared FLOP/byte counts and that the kernel computes every output",
    ),
    GateCode(
        "FLAG_UNSYNCED_WORK",
        "profile",
        "a device-synchronized wall clock saw much more time than the timing events: work runs outside the timed "
        "stream",
        "launch on the current stream",
    ),
    GateCode("FLAG_TIMING_NOISY", "profile", "the spread of the repetitions is large", "re-run on an idle GPU"),
    GateCode(
        "FLAG_PRECISION_CAST",
        "static",
        "the candidate casts to a half-precision type on an fp32 task",
        "make sure the result still meets fp32 tolerance",
    ),
]

CODES: dict[str, GateCode] = {e.code: e for e in _ENTRIES}


def describe(code: str) -> GateCode:
    """The catalog entry of `code` (KeyError if unknown)."""
    return CODES[code]
