"""The gate's side of a sandboxed candidate: the verdict is computed here, in a process where no candidate code ever
ran; the candidate runs in a `argus.eval.sandbox.Sandbox` and sends back only plain data.

`gate_module_sandboxed` is `argus.eval.gate.gate_module` for a PyTorch candidate given as a file (a KernelBench
``ModelNew``, a user's module): the same stages, with the candidate's part of each in the sandbox:

* **static** — here, on the source text (nothing runs);
* **compile** — the sandbox imports the file and constructs the class from the task's init inputs, drawn here,
  with PyTorch's generator state sent along (so the weights are the reference's);
* **verify** — the sandbox verifies the argus kernels the file uses and sends the report. That report is the
  candidate process's account (a file that tampers with argus inside its own process can make it say
  ``verified``); it can only reject, never make a wrong candidate pass, because correctness is decided here;
* **correct** — `argus.eval.correctness.check_correctness` runs here, unchanged, with `RemoteModule` as the
  candidate: each call sends the trial's inputs, the sandbox runs the module and returns its outputs as bytes,
  which become fresh base tensors here; the reference runs here;
* **profile** (GPU) — interleaved timing across the two processes: in every round the candidate's repetition runs
  in the sandbox on a fresh draw whose seed is chosen here at that moment (`secrets`), and each baseline's here.
  The outputs of the last timed call and of randomly chosen earlier rounds (chosen here, never announced) come
  back whole and are compared with this process's reference for that round's draw: a candidate that caches
  results or skips work fails ``PROFILE_STALE_RESULT``. A reported time longer than the round trip that carried
  it is impossible and rejects the candidate (``PROFILE_TIMING_IMPOSSIBLE``).

Rejections stay rejections: whatever the candidate raises or does to its process (``SystemExit``, an exception
whose ``__str__`` raises, ``os._exit``, a crash, a hang) is that candidate's failure with a code. A sandbox killed by
SIGKILL that the judge did not send (the OOM killer, an operator) is retried once before it counts.
"""

from __future__ import annotations

import dataclasses
import gc
import os
import secrets
import time
from typing import Any

from argus.eval.candidates import ModuleCandidate
from argus.eval.correctness import CandidateFailure, module_reference, task_precision
from argus.eval.results import GateResult, StageResult, Status
from argus.eval.sandbox import Sandbox, SandboxError, tensors_nbytes
from argus.tasks.base import ModuleTask

#: Spot checks of timed rounds besides the last (rounds chosen at random by the judge).
SPOT_CHECKS = 2


def _stage(stage: str, status: Status, code: str | None, reason: str, start: float, **details: Any) -> StageResult:
    return StageResult(stage, status, code, reason, details, time.perf_counter() - start)


#: Bytes of outputs a candidate's reply may carry beyond twice its inputs' (a reply past `reply_limit` is a protocol
#: violation, not a transfer the judge makes). It was 1 GiB, which rejected a correct solution of KernelBench level 1's
#: 59 (a 3-d convolution from 3 to 64 channels: 126 MB of input, 2.6 GB of output; H200, 2026-11-29).
OUTPUT_ALLOWANCE = 2**34


def reply_limit(inputs: list[Any]) -> int:
    """The most bytes of tensors a candidate's reply to `inputs` may carry: twice the inputs (they may come back
    modified) plus `OUTPUT_ALLOWANCE`."""
    return 2 * tensors_nbytes(inputs) + OUTPUT_ALLOWANCE


class RemoteModule:
    """A candidate callable for `check_correctness` whose calls run in `sandbox`: inputs go out as bytes, outputs
    come back as fresh tensors; inputs the sandbox reports modified are copied back into the caller's tensors (so the
    correctness check sees them); every failure there raises `CandidateFailure` with its code."""

    def __init__(
        self, sandbox: Sandbox, timeout_s: float, forbidden_ops: tuple[str, ...] = (), draws: bool = False
    ) -> None:
        self.sandbox = sandbox
        self.timeout_s = timeout_s
        self.forbidden_ops = forbidden_ops
        self.draws = draws  # the sandbox has the task's input generator (`load_task`)
        self.scrub: list[int] = []
        self.calls = 0
        self.drawn_there = 0
        self.transfer_s = 0.0
        self.trial: tuple[int, str] | None = None

    def prepare_trial(self, seed: int, distribution: str) -> None:
        """The next call's inputs are the task's draw at `seed`, redrawn from `distribution`."""
        self.trial = (seed, distribution)

    def __call__(self, inputs: list[Any]) -> list[Any]:
        import torch

        from argus.eval.guards import checksums

        sizes = [x.numel() * x.element_size() for x in inputs if isinstance(x, torch.Tensor)]
        sums = checksums(inputs) if self.draws and self.trial is not None else None
        if any(isinstance(x, torch.Tensor) and x.is_cuda for x in inputs):
            gc.collect()  # tensors of earlier work held only by reference cycles
            torch.cuda.empty_cache()  # what this process keeps cached, the candidate's process cannot have
        t0 = time.perf_counter()
        common = {
            "seed": int(torch.initial_seed()),
            "forbidden_ops": list(self.forbidden_ops),
            "scrub": sorted(set(self.scrub + sizes)),
        }
        limit = reply_limit(inputs)
        try:
            reply = None
            if self.draws and self.trial is not None:  # the sandbox draws the same inputs from the same seed
                seed, distribution = self.trial
                reply = self.sandbox.call(
                    "run", timeout_s=self.timeout_s, max_bytes=limit, draw={"seed": seed, "distribution": distribution},
                    checksums=sums, **common,
                )  # fmt: skip
                if reply.get("draw_differs"):  # not the same bits there (a generator that is not reproducible)
                    reply = None
                else:
                    self.drawn_there += 1
            if reply is None:
                reply = self.sandbox.call(
                    "run", timeout_s=self.timeout_s, max_bytes=limit, inputs=list(inputs), **common
                )
        except SandboxError as e:
            raise CandidateFailure(e.code, e.message, {"exitcode": e.exitcode}) from None
        self.trial = None
        self.calls += 1
        error = reply.get("error")
        if error is not None:
            raise CandidateFailure(
                str(error.get("code", "CORRECT_EXCEPTION")),
                f"the candidate failed: {error.get('reason', '')}",
                {"traceback": str(error.get("traceback", ""))[-4000:]},
            )
        outputs = reply.get("outputs")
        if not isinstance(outputs, list) or not all(isinstance(o, torch.Tensor) for o in outputs):
            raise CandidateFailure("SANDBOX_PROTOCOL", "the sandbox's answer carries no list of output tensors")
        hits = reply.get("forbidden") or []
        if hits:
            raise CandidateFailure(
                "CORRECT_FORBIDDEN_OP",
                f"the candidate dispatched {', '.join(map(str, hits))}, which this task forbids",
                {"operators": hits, "patterns": list(self.forbidden_ops)},
            )
        for key, value in (reply.get("modified") or {}).items():
            i = int(key) if str(key).isdigit() else -1
            if 0 <= i < len(inputs) and isinstance(inputs[i], torch.Tensor) and isinstance(value, torch.Tensor):
                if value.shape == inputs[i].shape and value.dtype == inputs[i].dtype:
                    inputs[i].copy_(value.to(inputs[i].device))
                else:  # a changed shape or dtype: make it unlike its pristine copy, whatever its dtype
                    from argus.eval.guards import poison_

                    poison_(inputs[i])
        self.scrub = sorted(set(self.scrub) | {o.numel() * o.element_size() for o in outputs})
        self.transfer_s += time.perf_counter() - t0 - float(reply.get("seconds", 0.0))
        return outputs


def gate_module_sandboxed(
    task: ModuleTask,
    candidate: ModuleCandidate,
    options: Any,
    *,
    baselines: dict[str, Any] | None = None,
) -> GateResult:
    """`argus.eval.gate.gate_module` for a candidate file, in a sandbox (see the module docstring); retried once
    when the sandbox is killed from outside."""
    result = _gate_once(task, candidate, options, baselines)
    if result.environment.get("sandbox", {}).get("external_kill"):
        first = result
        result = _gate_once(task, candidate, options, baselines)
        result.environment.setdefault("sandbox", {})["retried_after"] = (
            first.failed_stage.to_json() if (first.failed_stage is not None) else None
        )
    return result


def _init_state(task: ModuleTask, seed: int) -> tuple[list[Any], Any]:
    """The reference's constructor arguments, drawn as `ModuleTask.build` draws them, and PyTorch's generator state
    right after (the candidate is constructed from that state)."""
    import torch

    torch.manual_seed(seed)
    init = list(task.get_init_inputs())
    return init, torch.get_rng_state()


def _gate_once(
    task: ModuleTask, candidate: ModuleCandidate, options: Any, baselines: dict[str, Any] | None
) -> GateResult:
    import torch

    from argus.eval.device import environment
    from argus.eval.gate import static_prelude
    from argus.eval.guards import strict_precision
    from argus.eval.tolerance import lowest_precision

    device = options.resolved_device()
    gpu = device.startswith("cuda")
    result = GateResult(candidate.name, task.name, dict(task.sizes), environment=environment(device))
    precision = lowest_precision(task.input_dtypes())
    fp32 = precision in (None, torch.float32)
    forbidden = (*task.forbidden, *options.forbidden)
    timeout = float(options.sandbox_timeout_s)
    with strict_precision(fp32):
        if static_prelude(result, candidate.source_text(), forbidden, fp32):
            return result
        start = time.perf_counter()
        try:
            sandbox = Sandbox(gpu=gpu, device=device if gpu else None, start_timeout_s=timeout)
            sandbox.start()
        except SandboxError as e:
            result.stages.append(_stage("compile", Status.ERROR, e.code, e.message, start))
            return result
        try:
            info = dict(sandbox.protections)
            info["start_s"] = round(sandbox.started_s, 4)
            result.environment["sandbox"] = info
            try:
                _stages(result, task, candidate, options, sandbox, device, gpu, fp32, timeout, baselines)
            except CandidateFailure as e:  # a sandbox failure outside a stage's own handling
                stage = "profile" if result.stage("correct") is not None else "compile"
                result.stages.append(StageResult(stage, Status.FAILED, e.code, e.reason, e.details))
                if e.details.get("exitcode") == -9:
                    info["external_kill"] = True
            failed = result.failed_stage
            if failed is not None and failed.code == "SANDBOX_CRASHED" and failed.details.get("exitcode") == -9:
                info["external_kill"] = True
            info["ipc"] = sandbox.ipc_status  # how large outputs came back: by CUDA IPC, or in memory files
            result.environment["sandbox"]["transfer_s"] = info.get("transfer_s")
        finally:
            sandbox.close()
    return result


def _call(sandbox: Sandbox, op: str, timeout: float, **payload: Any) -> dict[str, Any]:
    """`Sandbox.call`, with the sandbox's failures and error answers as `CandidateFailure`."""
    try:
        reply = sandbox.call(op, timeout_s=timeout, **payload)
    except SandboxError as e:
        raise CandidateFailure(e.code, e.message, {"exitcode": e.exitcode}) from None
    error = reply.get("error")
    if error is not None:
        raise CandidateFailure(
            str(error.get("code", "CANDIDATE_FAILED")),
            str(error.get("reason", "")),
            {"traceback": str(error.get("traceback", ""))[-4000:]},
        )
    return reply


def _stages(
    result: GateResult,
    task: ModuleTask,
    candidate: ModuleCandidate,
    options: Any,
    sandbox: Sandbox,
    device: str,
    gpu: bool,
    fp32: bool,
    timeout: float,
    baselines: dict[str, Any] | None,
) -> None:
    from argus.eval.correctness import check_correctness

    # compile: import and construct in the sandbox
    start = time.perf_counter()
    if candidate.path is None:
        result.stages.append(_stage("compile", Status.FAILED, "COMPILE_MISSING", "no candidate file", start))
        return
    init, rng = _init_state(task, options.seed)
    try:
        loaded = _call(
            sandbox,
            "load_module",
            timeout,
            path=sandbox.share_file(candidate.path),
            attr=candidate.attr,
            init_inputs=init,
            rng_state=rng,
            problem_sizes=dict(task.sizes) if _same_file(candidate.path, task.path) else None,
            problem=sandbox.share_file(task.path) if task.path is not None else None,
            device=device,
            fp32=fp32,
        )
    except CandidateFailure as e:
        result.stages.append(_stage("compile", Status.FAILED, e.code, e.reason, start, **e.details))
        return
    result.stages.append(
        _stage("compile", Status.PASSED, None, f"{loaded.get('class')} constructed in the sandbox", start)
    )

    # verify: the sandbox's report (it can only reject)
    if options.verify:
        start = time.perf_counter()
        try:
            report = _call(sandbox, "verify_module", timeout)
            verified = StageResult.from_json(report["stage"])
            verified.details["reported_by"] = "the candidate's sandbox process"
        except CandidateFailure as e:
            verified = _stage("verify", Status.FAILED, e.code, e.reason, start, **e.details)
        except (KeyError, TypeError, ValueError) as e:
            verified = _stage("verify", Status.FAILED, "SANDBOX_PROTOCOL", f"a malformed verify report: {e}", start)
        result.stages.append(verified)
        if verified.failed:
            return

    # correct: here, with the candidate called through the wire
    try:
        reference = module_reference(task, device, options.seed)
    except Exception as e:  # noqa: BLE001
        result.stages.append(
            StageResult("correct", Status.ERROR, "CORRECT_REFERENCE_FAILED", f"building the reference: {e}")
        )
        return
    reference.forbidden_ops = (*reference.forbidden_ops, *options.forbidden_ops)
    draws = False
    if task.path is not None:
        try:
            _call(sandbox, "load_task", timeout, problem=sandbox.share_file(task.path), sizes=dict(task.sizes))
            draws = True
        except CandidateFailure:
            draws = False  # the inputs then travel
    remote = RemoteModule(sandbox, timeout, tuple(reference.forbidden_ops), draws=draws)
    correct = check_correctness(reference, remote, trials=options.trials, seed=options.seed, device=device)
    correct.details["sandbox"] = {
        "calls": remote.calls,
        "inputs_drawn_in_sandbox": remote.drawn_there,
        "transfer_s": round(remote.transfer_s, 4),
    }
    result.environment["sandbox"]["transfer_s"] = round(remote.transfer_s, 4)
    result.stages.append(correct)
    if correct.status != Status.PASSED:
        return
    if not gpu:
        result.stages.append(StageResult("profile", Status.SKIPPED, "PROFILE_NO_GPU", "no CUDA GPU here"))
        return
    _profile(result, task, options, sandbox, device, timeout, reference, baselines)


class RemoteTiming:
    """The candidate's contender in an interleaved timing: each round's repetition runs in the sandbox on a fresh
    draw seeded here at that moment; some rounds (chosen here, never announced) and the last are checked whole."""

    def __init__(self, sandbox: Sandbox, timeout: float, rounds: int, check: Any) -> None:
        self.sandbox, self.timeout, self.check = sandbox, timeout, check
        picks = set()
        while rounds > 1 and len(picks) < min(SPOT_CHECKS, rounds - 1):
            picks.add(secrets.randbelow(rounds - 1))
        self.spot = picks
        self.seeds: dict[int, int] = {}
        self.failure: str | None = None
        self.last_seed: int | None = None

    def timed(self, r: int) -> float:
        seed = secrets.randbits(31)
        t0 = time.perf_counter()
        reply = _call(self.sandbox, "rep", self.timeout, seed=seed, flush=True)
        wall_ms = (time.perf_counter() - t0) * 1e3
        ms = float(reply["ms"])
        if not ms >= 0.0 or ms > wall_ms:
            raise CandidateFailure(
                "PROFILE_TIMING_IMPOSSIBLE",
                f"round {r}: the sandbox reported {ms:.4g} ms for a repetition whose round trip took {wall_ms:.4g} ms",
            )
        self.last_seed = seed
        if r in self.spot and self.failure is None:
            self.failure = self.check(seed, f"timed round {r}")
        return ms

    def wall(self, n: int) -> float:
        return float(_call(self.sandbox, "wall", self.timeout, n=n)["ms"])


def stale_check(sandbox: Sandbox, task: ModuleTask, reference: Any, device: str, timeout: float) -> Any:
    """``check(seed, what)``: fetch the outputs of the sandbox's last timed call, whole, and compare them with this
    process's reference on the draw `seed` (drawn here again); None when they match, else the reason."""
    import torch

    from argus.eval.correctness import to_device
    from argus.eval.gate import reference_outputs
    from argus.eval.tolerance import compare_any, input_scale, lowest_precision, tolerance_for

    def check(seed: int, what: str) -> str | None:
        draw = to_device(task.sample(seed, device), device)
        precision = lowest_precision([x.dtype for x in draw if isinstance(x, torch.Tensor)]) or torch.float32
        tol = tolerance_for(precision)
        expected, noise = reference_outputs(
            reference.run_high, reference.run_native, [draw], tol, [seed], keep_on_device=True
        )
        got = _call(sandbox, "last_outputs", timeout, max_bytes=2**34)["outputs"]
        want = expected[0]
        if len(got) != len(want):
            return f"{what}: {len(got)} output(s), expected {len(want)}"
        scale = input_scale(draw)
        for i, (g, w, z) in enumerate(zip(got, want, noise[0], strict=True)):
            where = (w[0] if isinstance(w, tuple) else w).device
            c = compare_any(g.to(where), w, tol, name=f"output {i}", input_scale=scale, noise=z)
            if not c.ok:
                return f"{what}: {c.reason}"
        return None

    return check


def _profile(
    result: GateResult,
    task: ModuleTask,
    options: Any,
    sandbox: Sandbox,
    device: str,
    timeout: float,
    reference: Any,
    baselines: dict[str, Any] | None,
) -> None:
    from argus.eval.baselines import module_baseline_functions
    from argus.eval.correctness import to_device
    from argus.eval.gate import _bound_call, profile_stage
    from argus.eval.timing import Contender

    start = time.perf_counter()
    if task.path is None:
        result.stages.append(
            _stage(
                "profile",
                Status.SKIPPED,
                "PROFILE_NO_GENERATOR",
                "the task has no file the sandbox can draw timed inputs from",
                start,
            )  # fmt: skip
        )
        return
    _call(
        sandbox, "prepare_timing", timeout, problem=sandbox.share_file(task.path), sizes=dict(task.sizes), clock="cuda"
    )
    if str(device).startswith("cuda"):  # the correct stage's cache here, as the sandbox drops its own
        import gc

        import torch

        gc.collect()
        torch.cuda.empty_cache()

    check = stale_check(sandbox, task, reference, device, timeout)

    rounds = options.reps
    remote = RemoteTiming(sandbox, timeout, rounds, check)
    names = options.baselines if options.baselines is not None else ("eager", "compile")
    pool = to_device(task.sample(options.seed + 101, device), device)
    interleave = baselines is None and bool(names)  # baseline timings handed in are used as given
    calls = (
        {
            n: f if isinstance(f, str) else _bound_call(f, pool)
            for n, f in module_baseline_functions(task, names, device, options.seed).items()
        }
        if interleave
        else {}
    )
    interleaved_options = dataclasses.replace(options, timing="interleaved")  # across processes: always interleaved

    def validate() -> str | None:
        if remote.failure is not None:
            return remote.failure
        return check(remote.last_seed, "last timed call") if remote.last_seed is not None else None

    profile, flags = profile_stage(
        lambda: None,
        before_rep=lambda i: None,
        validate=validate,
        flops=task.flops,
        moved_bytes=task.moved_bytes,
        baselines=baselines or {},
        options=interleaved_options,
        device=device,
        baseline_calls=calls,
        remote=Contender(lambda: None, timed=remote.timed, wall=remote.wall),
        extra={"timed_in": "sandbox", "spot_checked_rounds": sorted(remote.spot)},
    )
    result.stages.append(profile)
    result.flags += flags


def _same_file(a: Any, b: Any) -> bool:
    try:
        return a is not None and b is not None and os.path.samefile(a, b)
    except OSError:
        return False


# ---------------------------------------------------------------------------------------------------------------
# generated DSL kernels: traced in a sandbox, judged here as IR


def gate_generated_kernel(
    task: Any,
    name: str,
    path: str | os.PathLike[str],
    function: str,
    params: dict[str, Any],
    source: str,
    options: Any,
    *,
    sizes: dict[str, int] | None = None,
    baselines: dict[str, Any] | None = None,
) -> GateResult:
    """Gate a kernel file nobody vouches for (an LLM's rewrite, a kernel of your own): its ``@argus.kernel``
    `function` is imported and traced with `params` in a sandbox, which sends back the IR as plain data
    (`argus.ir.serialize`); every stage (compile, verify, correct on the interpreter or the GPU, profile or cost
    model) then runs here on that IR, with no line of the file's Python in this process. The program verified is
    the program compiled and run. `sizes` and `baselines` as for `argus.eval.gate.gate_kernel`."""
    import torch

    from argus.eval.candidates import KernelCandidate
    from argus.eval.device import environment
    from argus.eval.gate import gate_kernel, static_stage
    from argus.ir.serialize import IRSerializeError, kernel_from_data
    from argus.lang.decorator import TracedKernel

    device = options.resolved_device()
    fail = GateResult(name, task.name, {}, environment=environment(device))
    fp32 = task_precision(task) == torch.float32
    static, flags = static_stage(source, (*task.forbidden, *options.forbidden), fp32)
    if static.failed:
        fail.stages.append(static)
        fail.flags += flags
        return fail
    start = time.perf_counter()
    try:
        with Sandbox(start_timeout_s=float(options.sandbox_timeout_s)) as sandbox:
            protections = {**sandbox.protections, "start_s": round(sandbox.started_s, 4), "traced_here": False}
            reply = _call(sandbox, "trace_kernel", float(options.sandbox_timeout_s),
                          path=sandbox.share_file(path), function=function, params=dict(params))  # fmt: skip
    except SandboxError as e:  # the sandbox could not start: the harness's problem
        fail.stages += [static, _stage("compile", Status.ERROR, e.code, e.message, start)]
        return fail
    except CandidateFailure as e:
        fail.stages += [static, _stage("compile", Status.FAILED, e.code, e.reason, start, **e.details)]
        fail.environment["sandbox"] = protections
        return fail
    try:
        kernel = kernel_from_data(reply.get("ir"))
    except IRSerializeError as e:
        fail.stages += [static, _stage("compile", Status.FAILED, "SANDBOX_PROTOCOL", f"the traced IR: {e}", start)]
        fail.environment["sandbox"] = protections
        return fail
    candidate = KernelCandidate(name, TracedKernel(kernel, dict(params)), {}, source=source)
    result = gate_kernel(task, candidate, sizes, options=options, baselines=baselines)
    result.environment["sandbox"] = {
        **protections,
        "traced_in_sandbox": True,
        "trace_s": round(time.perf_counter() - start, 4),
    }
    return result


def sandboxed_call(target: str, kwargs: dict[str, Any], timeout_s: float = 600.0) -> Any:
    """``target(**kwargs)`` (one of `argus.eval.sandbox_runner.CALLABLE`) run in a fresh sandbox; its result, as
    plain data. For argus's own helpers that must import a file nobody vouches for (the agent's arms and transforms
    of a generated kernel): a file path in ``kwargs["ref"]["file"]`` is shared into the sandbox first. Raises
    `CandidateFailure` when the call fails there."""
    import pickle

    import torch

    with Sandbox(start_timeout_s=timeout_s) as sandbox:
        ref = kwargs.get("ref")
        if isinstance(ref, dict) and ref.get("file"):
            kwargs = {**kwargs, "ref": {**ref, "file": sandbox.share_file(ref["file"])}}
        blob = torch.frombuffer(bytearray(pickle.dumps(kwargs)), dtype=torch.uint8)
        return _call(sandbox, "call", timeout_s, target=target, kwargs=blob).get("result")
