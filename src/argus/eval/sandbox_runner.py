"""What runs inside a sandbox (`argus.eval.sandbox`) after the warden (`argus/eval/warden.py`) forked it: the runner,
the only process where candidate code runs.

* `runner_main` — a loop over frames from the judge: each is one operation (`OPERATIONS`), answered with one
  frame of plain data. Any exception in an operation, including ``SystemExit`` and ``KeyboardInterrupt`` raised by
  candidate code, is answered as ``{"error": {"code", "reason", "traceback"}}``: it is the candidate's failure.
  Where the judge offered CUDA IPC (``wire``), large outputs on its GPU go by handle (`argus.eval.sandbox.IpcExporter`)
  and stay alive until the judge's next request; ``resend`` sends the last reply again in memory files, when the
  judge could not map what it shared.

Everything the runner reports besides the outputs (inputs it found modified, precision switches, operators
dispatched) is the candidate process's own account: a candidate that tampers with this module can make it lie,
and the only effect is to hide its own misbehaviour. The verdict rests on the outputs, compared by the judge.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import time
import traceback
from typing import Any

from argus.eval.sandbox import IpcExporter, ipc_driver, recv_frame, send_frame
from argus.tasks.kernelbench import PROBLEM_ENV

# ---------------------------------------------------------------------------------------------------------------
# the runner


def _safe_text(e: BaseException) -> str:
    """``Type: message`` of an exception whose ``__str__`` may itself raise or lie about its size."""
    try:
        name = type(e).__name__
    except BaseException:  # noqa: BLE001
        name = "Exception"
    try:
        text = str(e)
    except BaseException:  # noqa: BLE001
        text = "<the exception's message could not be formed>"
    if not isinstance(text, str):
        text = "<not a string>"
    return f"{str(name)[:100]}: {text[:2000]}"


def _safe_traceback(e: BaseException) -> str:
    try:
        return "".join(traceback.format_exception(type(e), e, e.__traceback__))[-4000:]
    except BaseException:  # noqa: BLE001
        return ""


class _State:
    def __init__(self) -> None:
        self.model: Any = None
        self.device = "cpu"
        self.task: Any = None
        self.buffers: list[Any] | None = None
        self.last: list[Any] = []
        self.clock: Any = None
        self.ipc: IpcExporter | None = None


def _op_hello(state: _State, msg: dict[str, Any]) -> dict[str, Any]:
    return {"pid": os.getpid()}


def _op_wire(state: _State, msg: dict[str, Any]) -> dict[str, Any]:
    """The judge's offer of CUDA IPC for tensors on its GPU (``ipc_device``, a device UUID), taken where this
    process has a CUDA driver; the answer says whether it was."""
    accepts = msg.get("ipc_device")
    driver = ipc_driver() if isinstance(accepts, str) else None
    state.ipc = IpcExporter(accepts, driver) if driver is not None else None
    return {"ipc": state.ipc is not None}


def _op_load_module(state: _State, msg: dict[str, Any]) -> dict[str, Any]:
    """Import the candidate's file and construct its module class as the reference is constructed."""
    import torch

    from argus.eval.candidates import import_file
    from argus.eval.guards import PrecisionState

    state.device = msg.get("device", "cpu")
    if isinstance(msg.get("problem"), str):  # the problem file it is judged against (`PROBLEM_ENV`)
        os.environ[PROBLEM_ENV] = msg["problem"]
    if msg.get("fp32"):
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    before = PrecisionState.capture()
    try:
        if msg.get("problem_sizes") is not None:  # the problem file itself (the identity solution), sizes as the task's
            from argus.tasks.kernelbench import load_problem

            module: Any = load_problem(msg["path"], msg["problem_sizes"], strict=False)
        else:
            module = import_file(msg["path"], "argus_solution")
    except BaseException as e:  # noqa: BLE001
        return {"error": {"code": "COMPILE_IMPORT", "reason": _safe_text(e), "traceback": _safe_traceback(e)}}
    cls = getattr(module, str(msg.get("attr", "ModelNew")), None) if msg.get("problem_sizes") is None else module.model
    if cls is None:
        return {"error": {"code": "COMPILE_MISSING", "reason": f"{msg['path']} defines no {msg.get('attr')}"}}
    try:
        rng = msg.get("rng_state")
        if isinstance(rng, torch.Tensor):  # the reference's generator state after drawing its init inputs
            torch.set_rng_state(rng)
        else:
            torch.manual_seed(int(msg.get("seed", 0)))
        model = cls(*msg.get("init_inputs", []))
        model = model.to(state.device) if hasattr(model, "to") else model
    except BaseException as e:  # noqa: BLE001
        return {"error": {"code": "COMPILE_INIT", "reason": _safe_text(e), "traceback": _safe_traceback(e)}}
    changed = before.diff(PrecisionState.capture())
    if changed:
        shown = ", ".join(f"{k}: {a!r} -> {b!r}" for k, (a, b) in changed.items())
        return {
            "error": {
                "code": "CORRECT_PRECISION_FLAGS",
                "reason": f"importing or constructing the candidate changed PyTorch's precision settings ({shown})",
            }
        }
    state.model = model
    return {"class": type(model).__name__}


def _op_verify_module(state: _State, msg: dict[str, Any]) -> dict[str, Any]:
    """The verify stage on the argus kernels the candidate's module uses (`argus.eval.gate.module_verify_stage`)."""
    from argus.eval.gate import module_verify_stage

    if state.model is None:
        return {"error": {"code": "SANDBOX_PROTOCOL", "reason": "verify before load"}}
    return {"stage": module_verify_stage(state.model).to_json()}


def _check_outputs(outputs: list[Any], device: str) -> dict[str, Any] | None:
    """None when every output is a plain tensor on the expected device type, else the error."""
    import torch

    for i, o in enumerate(outputs):
        if type(o) is not torch.Tensor:
            return {
                "code": "CORRECT_OUTPUT_TYPE",
                "reason": f"output {i} is a {type(o).__module__}.{type(o).__qualname__}, not a plain torch.Tensor",
            }
        if o.device.type != torch.device(device).type:
            return {
                "code": "CORRECT_OUTPUT_DEVICE",
                "reason": f"output {i} is on {o.device.type}, expected {torch.device(device).type}",
            }
    return None


def _as_plain(outputs: Any) -> list[Any]:
    import torch

    from argus.eval.correctness import as_outputs

    flat = as_outputs(outputs)
    return [o.detach() if isinstance(o, torch.nn.Parameter) else o for o in flat]


def _call(state: _State, inputs: list[Any]) -> Any:
    import torch

    with torch.no_grad():
        return state.model(*inputs)


def _op_run(state: _State, msg: dict[str, Any]) -> dict[str, Any]:
    """One correctness call: the candidate on the judge's inputs, on scrubbed memory, with its outputs copied out
    and the originals poisoned."""
    import torch

    from argus.eval.guards import OpRecorder, PrecisionState, changed_inputs, clone_all, poison_, scrub_memory

    if state.model is None:
        return {"error": {"code": "SANDBOX_PROTOCOL", "reason": "run before load"}}
    device = state.device
    if msg.get("draw") is not None:  # the judge's trial inputs, drawn here from the same seed
        from argus.eval.correctness import to_device
        from argus.eval.guards import checksums
        from argus.eval.inputs import redistribute

        if state.task is None:
            return {"error": {"code": "SANDBOX_PROTOCOL", "reason": "a draw before load_task"}}
        seed, distribution = int(msg["draw"]["seed"]), str(msg["draw"]["distribution"])
        inputs = redistribute(to_device(state.task.sample(seed, device), device), distribution, seed)
        if checksums(inputs) != msg.get("checksums"):
            return {"draw_differs": True}
        if device.startswith("cuda"):
            torch.cuda.empty_cache()
    else:
        inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in msg.get("inputs", [])]
    pristine = clone_all(inputs)
    scrub_memory([int(n) for n in msg.get("scrub", [])], device)
    before = PrecisionState.capture()
    forbidden = tuple(msg.get("forbidden_ops", ()))
    torch.manual_seed(int(msg.get("seed", 0)))
    t0 = time.perf_counter()
    try:
        if forbidden:
            recorder = OpRecorder()
            with recorder:
                raw = _call(state, inputs)
        else:
            recorder = None
            raw = _call(state, inputs)
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        outputs = _as_plain(raw)
    except BaseException as e:  # noqa: BLE001 - SystemExit and KeyboardInterrupt from a candidate included
        return {"error": {"code": "CORRECT_EXCEPTION", "reason": _safe_text(e), "traceback": _safe_traceback(e)}}
    seconds = time.perf_counter() - t0
    bad = _check_outputs(outputs, device)
    if bad is not None:
        return {"error": bad}
    changed = before.diff(PrecisionState.capture())
    if changed:
        before.restore()
        shown = ", ".join(f"{k}: {a!r} -> {b!r}" for k, (a, b) in changed.items())
        return {
            "error": {
                "code": "CORRECT_PRECISION_FLAGS",
                "reason": f"the candidate changed PyTorch's precision settings ({shown})",
            }
        }
    hits = recorder.matching(forbidden) if recorder is not None else []
    modified = changed_inputs(pristine, inputs)
    # contiguous: the wire sends these themselves (by IPC handle, or copied into a memory file), no second copy
    copies = [o.detach().clone(memory_format=torch.contiguous_format) for o in outputs]
    for o in outputs:
        if not any(o is x for x in inputs):
            poison_(o)
    del outputs, raw, pristine
    if device.startswith("cuda"):
        torch.cuda.empty_cache()  # the judge computes its reference next, on the same GPU
    return {
        "outputs": copies,
        "modified": {str(i): inputs[i] for i in modified if isinstance(inputs[i], torch.Tensor)},
        "forbidden": hits,
        "seconds": seconds,
    }


def _op_load_task(state: _State, msg: dict[str, Any]) -> dict[str, Any]:
    """Load the task's input generator (the problem file, trusted like the reference), so that correctness trials
    and timed rounds draw their inputs here from the judge's seeds instead of receiving them."""
    from argus.tasks.kernelbench import load_problem

    state.task = load_problem(msg["problem"], msg.get("sizes") or {}, strict=False)
    return {}


def _op_prepare_timing(state: _State, msg: dict[str, Any]) -> dict[str, Any]:
    """Load the task's input generator (the problem file, trusted like the reference) for the timed draws, and the
    clock: ``cuda`` (events, L2 flush) or ``cpu`` (host timestamps: for tests of the protocol)."""
    from argus.eval.timing import CpuClock, CudaClock
    from argus.tasks.kernelbench import load_problem

    if state.task is None:  # not loaded yet by `load_task`
        state.task = load_problem(msg["problem"], msg.get("sizes") or {}, strict=False)
    state.clock = CudaClock(state.device) if msg.get("clock", "cuda") == "cuda" else CpuClock()
    state.buffers = None
    state.last = []
    if str(state.device).startswith("cuda"):
        import gc

        import torch

        # what the correctness trials left cached here, the judge's process (on the same GPU: the baselines, the
        # spot checks' references) cannot have: at KernelBench's sizes two trials' cache starved it (8 GB short)
        gc.collect()
        torch.cuda.empty_cache()
    return {}


def _draw_into_buffers(state: _State, seed: int) -> None:
    import torch

    from argus.eval.guards import poison_

    draw = state.task.sample(seed, state.device)
    draw = [x.to(state.device) if isinstance(x, torch.Tensor) else x for x in draw]
    if state.buffers is None:
        state.buffers = draw
    else:
        for b, x in zip(state.buffers, draw, strict=True):
            if isinstance(b, torch.Tensor):
                b.copy_(x)
    for o in state.last:
        if isinstance(o, torch.Tensor) and not any(o is b for b in state.buffers):
            with contextlib.suppress(Exception):
                poison_(o)


def _op_rep(state: _State, msg: dict[str, Any]) -> dict[str, Any]:
    """One timed repetition on a fresh draw (seeded by the judge, who sends the seed only now): draw, poison the
    previous outputs, flush L2, time one call between events, synchronize."""
    import torch

    seed = int(msg["seed"])
    _draw_into_buffers(state, seed)
    torch.manual_seed(seed)
    clock = state.clock
    clock.sync()
    if msg.get("flush", True):
        clock.flush()
    start, end = clock.event(), clock.event()
    try:
        start.record()
        raw = _call(state, state.buffers or [])
        end.record()
        clock.sync()
        state.last = _as_plain(raw)
    except BaseException as e:  # noqa: BLE001
        return {"error": {"code": "PROFILE_FAILED", "reason": _safe_text(e), "traceback": _safe_traceback(e)}}
    return {"ms": float(start.elapsed_ms(end))}


def _op_wall(state: _State, msg: dict[str, Any]) -> dict[str, Any]:
    """Back-to-back calls on the current buffers, device-synchronized wall clock (the side-stream cross-check)."""
    n = max(1, int(msg.get("n", 1)))
    clock = state.clock
    try:
        clock.sync()
        t0 = clock.now()
        for _ in range(n):
            _call(state, state.buffers or [])
        clock.sync()
    except BaseException as e:  # noqa: BLE001
        return {"error": {"code": "PROFILE_FAILED", "reason": _safe_text(e), "traceback": _safe_traceback(e)}}
    return {"ms": (clock.now() - t0) * 1e3 / n}


def _op_last_outputs(state: _State, msg: dict[str, Any]) -> dict[str, Any]:
    """The outputs of the last timed call, every element, for the judge to check against its own reference. Not
    copied: nothing runs between here and the reply going out, and the judge has its copy before it asks for the
    next repetition (which poisons them)."""
    bad = _check_outputs(state.last, state.device)
    if bad is not None:
        return {"error": bad}
    return {"outputs": [o.detach() for o in state.last]}


def _op_diagnose(state: _State, msg: dict[str, Any]) -> dict[str, Any]:
    """What this process is and can see of `path` (for reports when the sandbox cannot read what it was given)."""
    path = str(msg.get("path", "/"))
    out: dict[str, Any] = {"uid": os.getuid(), "euid": os.geteuid(), "gid": os.getgid(), "groups": os.getgroups()}
    chain = []
    while True:
        try:
            st = os.stat(path)
            chain.append([path, oct(st.st_mode), st.st_uid, st.st_gid, os.access(path, os.R_OK)])
        except OSError as e:
            chain.append([path, str(e)])
        if path in ("/", ""):
            break
        path = os.path.dirname(path)
    out["chain"] = chain
    with contextlib.suppress(OSError):
        with open("/proc/self/status") as f:
            out["status"] = [line.strip() for line in f if line.startswith(("Uid", "Gid", "Cap", "NoNewPrivs"))]
    return out


def _op_trace_kernel(state: _State, msg: dict[str, Any]) -> dict[str, Any]:
    """Import a kernel file, trace its ``@argus.kernel`` `function` with `params`, and send the IR back as plain
    data (`argus.ir.serialize`): the judge verifies, compiles and runs that IR without running the file's Python."""
    from argus.eval.candidates import import_file
    from argus.ir.serialize import kernel_to_data

    try:
        module = import_file(msg["path"], "argus_generated")
        target = getattr(module, str(msg["function"]))
        fn = getattr(target, "kernel", target)
        kernel = fn.trace(**dict(msg.get("params") or {}))
    except BaseException as e:  # noqa: BLE001 - the candidate's failure, whatever it raised
        return {"error": {"code": "COMPILE_TRACE", "reason": _safe_text(e), "traceback": _safe_traceback(e)}}
    return {"ir": kernel_to_data(kernel), "name": str(getattr(fn, "name", msg["function"]))}


#: Functions a judge may run in a sandbox with `_op_call` (argus's own code that imports candidate code).
CALLABLE = ("argus.agent.gatejob:arms_for_here", "argus.agent.gatejob:transform_params_here")


def _op_call(state: _State, msg: dict[str, Any]) -> dict[str, Any]:
    """Run one of `CALLABLE` with keyword arguments the judge pickled (the judge's own data: only this process
    unpickles, never the judge); the result must be plain data."""
    import importlib
    import pickle

    target = str(msg.get("target"))
    if target not in CALLABLE:
        return {"error": {"code": "SANDBOX_PROTOCOL", "reason": f"{target} may not be called in a sandbox"}}
    module, _, name = target.partition(":")
    kwargs = pickle.loads(msg["kwargs"].numpy().tobytes())  # noqa: S301 - the judge's data, unpickled here only
    try:
        return {"result": getattr(importlib.import_module(module), name)(**kwargs)}
    except BaseException as e:  # noqa: BLE001
        return {"error": {"code": "CANDIDATE_FAILED", "reason": _safe_text(e), "traceback": _safe_traceback(e)}}


OPERATIONS = {
    "trace_kernel": _op_trace_kernel,
    "call": _op_call,
    "diagnose": _op_diagnose,
    "hello": _op_hello,
    "wire": _op_wire,
    "load_module": _op_load_module,
    "verify_module": _op_verify_module,
    "run": _op_run,
    "load_task": _op_load_task,
    "prepare_timing": _op_prepare_timing,
    "rep": _op_rep,
    "wall": _op_wall,
    "last_outputs": _op_last_outputs,
}


def _answer(state: _State, msg: dict[str, Any]) -> dict[str, Any]:
    """The reply to one request: its operation's, or the error it raised (the candidate's failure, whatever it
    was)."""
    handler = OPERATIONS.get(str(msg.get("op")))
    if handler is None:
        return {"error": {"code": "SANDBOX_PROTOCOL", "reason": f"unknown operation {msg.get('op')!r}"}}
    try:
        return handler(state, msg)
    except BaseException as e:  # noqa: BLE001 - the candidate's failure, whatever it raised
        return {"error": {"code": "CANDIDATE_FAILED", "reason": _safe_text(e), "traceback": _safe_traceback(e)}}


def runner_main(sock: socket.socket) -> None:
    """Serve the judge's operations until ``exit`` or the connection closes. The last reply (and what it shared by
    CUDA IPC) is kept until the next request, no longer: the judge has copied it by then, or asks for it again
    (``resend``)."""
    state = _State()
    last: dict[str, Any] = {"pid": os.getpid(), "python": sys.version.split()[0]}
    send_frame(sock, last)
    while True:
        try:
            msg = recv_frame(sock, timeout_s=1e9)
        except Exception:  # noqa: BLE001 - the judge is gone
            return
        op = msg.get("op")
        if op == "exit":
            return
        if op == "resend":  # the judge could not map what the last reply shared: it again, without IPC from now on
            state.ipc = None
            send_frame(sock, last)
            continue
        last = {}
        if state.ipc is not None:
            state.ipc.release()
        reply = _answer(state, msg)
        try:
            send_frame(sock, reply, state.ipc)
            last = reply
        except TypeError as e:  # an answer that cannot go on the wire
            last = {"error": {"code": "SANDBOX_PROTOCOL", "reason": str(e)}}
            send_frame(sock, last)
        del reply  # `last` alone holds it now, until the next request
