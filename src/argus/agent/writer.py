"""The LLM path of `argus solve`: a DSL kernel written by an LLM for an operator no template covers, gated like
any untrusted kernel and repaired over several turns.

`KernelWriter.write(request)` sends one conversation to the provider. The first message holds what a kernel
engineer would need: the operator's PyTorch reference (its source), every tensor's shape and dtype in the kernel's
parameter order, the rules of threads and warpgroups, a compact reference sheet of the DSL (`reference_sheet`: each
``T.*`` call with its signature and the first line of its contract, read from `argus.lang` itself so that it never
drifts from the code), two complete library kernels as self-contained modules (`EXAMPLES`,
`argus.kernels.source.module_source`), and the kernel to start from when there is one: the library kernel closest
to the reference (`argus.frontend.written.closest_kernel`, by the family of its operators), whole, or named when it
is one of the examples already. The answer's code is checked by `argus.agent.restricted`, written to the writer's
directory (named by its hash) and gated by `argus.eval.judge.gate_generated_kernel`: traced in a sandbox (its
Python never runs in this process), verified, and checked against the reference on the interpreter (or the GPU).
A rejection goes back as the next turn: the failing stage and its reason — a correctness failure says how many
elements are outside the tolerance and where the worst one is, with its value and the reference's — and every
violated verifier check with its counterexample (`argus.agent.loop.failure_feedback`). After `turns` answers
without an accepted kernel the request fails with the last reason.
"""

from __future__ import annotations

import hashlib
import inspect
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: Library kernels shown whole as examples: an elementwise kernel and a row reduction with statistics.
EXAMPLES = ("vector_add", "softmax")

RULES = """\
Rules of the DSL (argus, for NVIDIA Hopper):
- A module imports only argus, argus.lang (as T), argus.layout and math. No classes, no names starting with an
  underscore, no files, processes or eval. The kernel is one function decorated with @argus.kernel.
- Parameters: the tensors, in the order given, annotated T.Tensor[(extents...), T.<dtype>] (dtype names: f32, f16,
  bf16, i32, i64), then integer tile sizes with defaults (e.g. BLOCK: int = 1024).
- `with T.grid(n0[, n1[, n2]], threads=128) as (b0, ...)`: one block per grid point; threads a multiple of 32
  (a warpgroup is 128 threads). Everything inside runs on every thread of the block; work is expressed on tiles.
- Tiles: T.alloc_fragment((shape), dtype) is a register tile spread over the block's threads (its element count a
  multiple of threads x the vector width); X.tile(index, shape) is tile number `index` of a global tensor (parts past
  the tensor's end are masked: loads read 0 or `pad=`, stores are dropped); T.copy(src, dst) moves a tile.
- Arithmetic on fragments is elementwise (+ - * /, T.exp, T.maximum, T.where, ...); T.reduce_sum/T.reduce_max
  reduce a 2-D fragment along an axis; T.index(x, axis) gives each element's coordinate for masks.
- `for i in T.serial(n)` is a run-time loop (its body traced once); a Python `for` over range() unrolls.
- Every element of every output must be written exactly once; the verifier proves it and finds races.
"""


def reference_sheet() -> str:
    """One line per public DSL call of `argus.lang` (``T.name(signature)``: the first line of its docstring), and
    the global tensor's tile and window methods."""
    import argus.lang as T
    from argus.lang.tiles import GlobalTensor

    lines = []
    for name in sorted(n for n in dir(T) if not n.startswith("_")):
        value = getattr(T, name)
        if not inspect.isfunction(value):
            continue
        lines.append(f"T.{name}{_signature(value)}: {_first_line(value)}".rstrip(": "))
    for name in ("tile", "window"):
        method = getattr(GlobalTensor, name)
        lines.append(f"X.{name}{_signature(method, skip_self=True)}: {_first_line(method)}")
    return "\n".join(lines)


def _signature(fn: Any, skip_self: bool = False) -> str:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return "(...)"
    params = list(sig.parameters.values())[1 if skip_self else 0 :]
    return "(" + ", ".join(_param(p) for p in params) + ")"


def _param(p: inspect.Parameter) -> str:
    prefix = "*" if p.kind is p.VAR_POSITIONAL else "**" if p.kind is p.VAR_KEYWORD else ""
    default = "" if p.default is inspect.Parameter.empty else f"={p.default!r}"
    return f"{prefix}{p.name}{default}"


def _first_line(fn: Any) -> str:
    doc = inspect.getdoc(fn) or ""
    return doc.split("\n\n", 1)[0].replace("\n", " ")[:200]


@dataclass(frozen=True)
class TensorArg:
    """One tensor of the kernel to write: its parameter name, shape, argus dtype name (``f32``) and whether the
    kernel writes it."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    output: bool = False


@dataclass
class WriteRequest:
    """What to write: the kernel's name, the reference's source (a Python function of the inputs, shown to the
    model) and the reference itself (called by the gate, trusted: it is the user's problem), the tensors in
    parameter order, and optionally a kernel to start from: a module's source (`start_from`), and the library
    kernel it is (`start_from_kernel`; with no source, a kernel the prompt shows as an example already)."""

    name: str
    reference_source: str
    reference: Callable[..., Any]
    tensors: list[TensorArg]
    start_from: str | None = None
    what: str = ""
    start_from_kernel: str = ""


@dataclass
class Written:
    """The outcome: the accepted module (its source, the file, the kernel function's name) or why not; each turn's
    feedback, and the gate's JSON of the last candidate."""

    ok: bool
    turns: int
    source: str | None = None
    path: str | None = None
    function: str | None = None
    reason: str = ""
    feedback: list[list[str]] = field(default_factory=list)
    gate: dict[str, Any] | None = None


class KernelWriter:
    """Write kernels with `provider` (see the module docstring); generated modules go to `directory`."""

    def __init__(
        self,
        provider: Any,
        directory: Path | str,
        *,
        turns: int = 3,
        options: Any = None,
        record: Any = None,
        examples: Sequence[str] = EXAMPLES,
    ) -> None:
        if turns < 1:
            raise ValueError(f"turns={turns}: a writer answers at least once")
        self.provider = provider
        self.directory = Path(directory)
        self.turns = turns
        self.options = options
        self.record = record
        self.examples = tuple(examples)

    def prompt(self, request: WriteRequest) -> list[dict[str, str]]:
        """The conversation's first messages (system, user)."""
        from argus.agent.coder import CODER_SYSTEM
        from argus.kernels.registry import get_kernel
        from argus.kernels.source import module_source

        tensors = "\n".join(
            f"- {t.name}: {t.dtype} {tuple(t.shape)}, {'output (the kernel writes it)' if t.output else 'input'}"
            for t in request.tensors
        )
        examples = "\n\n".join(
            f"Example ({name}):\n```python\n{module_source(get_kernel(name).kernel).rstrip()}\n```"
            for name in self.examples
        )
        parts = [
            f"Write an argus DSL kernel named {request.name} that computes this PyTorch reference"
            + (f" ({request.what})" if request.what else "")
            + f":\n```python\n{request.reference_source.rstrip()}\n```",
            "Its tensor parameters, in this order, with these exact extents (int literals in the annotations):\n"
            + tensors,
            RULES,
            "The DSL, one line per call:\n" + reference_sheet(),
            examples,
        ]
        if request.start_from:
            which = f" (the library's {request.start_from_kernel}, the closest to the reference)"
            parts.append(
                f"Start from this kernel{which if request.start_from_kernel else ''}:\n"
                f"```python\n{request.start_from.rstrip()}\n```"
            )
        elif request.start_from_kernel:
            if request.start_from_kernel not in self.examples:
                raise ValueError(
                    f"start_from_kernel={request.start_from_kernel!r} without its source: only an example "
                    f"({', '.join(self.examples)}) is named without it"
                )
            parts.append(
                f"Start from the example {request.start_from_kernel} above: it is the library kernel closest to "
                "the reference."
            )
        parts.append("Write the whole module in one ```python block.")
        system = CODER_SYSTEM.replace("You rewrite the kernel to apply one optimization.", "You write a kernel.")
        return [{"role": "system", "content": system}, {"role": "user", "content": "\n\n".join(parts)}]

    def write(self, request: WriteRequest) -> Written:
        """Ask, gate, and repair over up to `turns` answers (see the module docstring)."""
        from argus.agent.coder import CoderError, extract_code
        from argus.agent.loop import failure_feedback
        from argus.agent.planner import ask
        from argus.agent.providers.errors import ProviderError
        from argus.agent.providers.secrets import scrub_secrets
        from argus.agent.restricted import check_source, kernel_functions

        messages = self.prompt(request)
        task = _task(request)
        out = Written(False, 0)
        for turn in range(1, self.turns + 1):
            out.turns = turn
            try:
                completion = ask(self.provider, messages, self.record, "writer", max_tokens=8192)
            except ProviderError as e:
                out.reason = f"the provider failed: [{e.code}] {e.message}"
                return out
            text = scrub_secrets(completion.text)
            messages = [*messages, {"role": "assistant", "content": text}]
            try:
                code = extract_code(text)
                names = kernel_functions(code)
                if not names:
                    raise CoderError("CODER_MALFORMED", "the code defines no @argus.kernel function")
            except (CoderError, SyntaxError) as e:
                lines = [f"the answer could not be used: {getattr(e, 'message', e)}"]
            else:
                violations = check_source(code)
                if violations:
                    lines = [f"the module breaks the DSL's rules: {v}" for v in violations[:6]]
                else:
                    function = request.name if request.name in names else names[0]
                    path = self._file(code)
                    gate = _gate(task, request.name, path, function, code, self.options)
                    out.gate = gate.to_json()
                    if gate.accepted:
                        out.ok, out.source, out.path, out.function = True, code, str(path), function
                        out.reason = ""
                        return out
                    lines = failure_feedback(out.gate, limit=6) or [f"rejected: {gate.summary()}"]
            out.feedback.append(lines)
            out.reason = lines[0]
            messages.append(
                {
                    "role": "user",
                    "content": "The gate rejected that kernel:\n"
                    + "\n".join(f"- {line}" for line in lines)
                    + "\nFix it, and answer with the whole module in one ```python block.",
                }
            )
        return out

    def _file(self, source: str) -> Path:
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / f"written_{hashlib.sha256(source.encode()).hexdigest()[:16]}.py"
        if not path.exists():
            path.write_text(source)
        return path


def _task(request: WriteRequest) -> Any:
    """The gate's task of a request: its tensors at their fixed extents, its reference, no symbolic sizes."""
    from argus.ir.types import dtype_from_name
    from argus.tasks.base import Task, TensorSpec

    moved = float(sum(math.prod(t.shape) * dtype_from_name(t.dtype).itemsize for t in request.tensors))
    return Task(
        name=f"solve:{request.name}",
        description=request.what or f"{request.name}: an operator no template covers",
        tensors=tuple(TensorSpec(t.name, tuple(t.shape), t.dtype, output=t.output) for t in request.tensors),
        reference=request.reference,
        small_sizes={},
        bench_sizes=({},),
        flops=lambda sizes: 0.0,
        moved_bytes=lambda sizes: moved,
    )


def _gate(task: Any, name: str, path: Path, function: str, source: str, options: Any) -> Any:
    from argus.eval.gate import GateOptions
    from argus.eval.judge import gate_generated_kernel

    options = options or GateOptions(trials=2, baselines=())
    return gate_generated_kernel(task, name, path, function, {}, source, options)


def solve_writer(
    provider: Any, directory: Path | str, *, turns: int = 3, options: Any = None, record: Any = None
) -> Callable[[Any], Any]:
    """The ``writer`` hook of `argus.frontend.solve.solve` (``argus solve --llm``): each
    `argus.frontend.written.KernelRequest` written by a `KernelWriter`, starting from the library kernel closest to
    the request's family (`argus.frontend.written.closest_kernel`; named only, when it is one of the examples),
    returned as the `WrittenKernel` its gate accepted, or the reason there is none."""
    from argus.frontend.written import WrittenKernel, closest_kernel
    from argus.kernels.registry import get_kernel
    from argus.kernels.source import module_source

    writer = KernelWriter(provider, directory, turns=turns, options=options, record=record)

    def write(request: Any) -> Any:
        tensors = [TensorArg(n, tuple(s), d, o) for n, s, d, o in request.tensors]
        closest = closest_kernel(request.family, writer.examples)
        start = None if closest in writer.examples else module_source(get_kernel(closest).kernel)
        out = writer.write(
            WriteRequest(request.name, request.reference_source, request.reference, tensors, start, request.op,
                         start_from_kernel=closest)
        )  # fmt: skip
        if not out.ok:
            return f"no accepted kernel in {out.turns} answer(s): {out.reason}"
        stages = {s.get("stage"): s for s in (out.gate or {}).get("stages", [])}
        verify = stages.get("verify") or {}
        status = verify.get("status")
        verdict = (verify.get("details") or {}).get("report", {}).get("verdict") or {
            "passed": "verified", "unknown": "unknown"
        }.get(status, f"not verified ({status})")  # fmt: skip
        correct = stages.get("correct") or {}
        where = (out.gate or {}).get("environment", {}).get("device") or "cpu"
        summary = f"gated after {out.turns} answer(s): verify {verify.get('status')}, correct {correct.get('status')}"
        return WrittenKernel(out.source or "", out.function or request.name, verdict, summary, str(where))

    return write
