"""What the backward walk moves between: a `Variant` is a kernel (an ``@argus.kernel`` function, or a
`DerivedKernel` — one whose traced IR is rewritten), the trace-time parameters it is specialized with, and
the task whose reference it must match. IR rewrites that remove a mechanism the DSL has no policy for
(the register split) live here too, as do fingerprints (a hash of the printed IR) and the task lookup."""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from argus.ir.nodes import For, If, Kernel, Let, Role, Stmt
from argus.lang.decorator import KernelFunction


class DerivedKernel(KernelFunction):
    """An ``@argus.kernel`` whose traced IR goes through `rewrite` (a function `Kernel -> Kernel`): the gate,
    the verifier, the interpreter and the code generator all see the rewritten IR, because they all trace
    through `trace`. `label` says what the rewrite did (it names the kernel in results)."""

    def __init__(self, base: KernelFunction, rewrite: Callable[[Kernel], Kernel], label: str) -> None:
        self.__dict__.update({k: v for k, v in base.__dict__.items() if k != "_cache"})
        self._cache = {}
        self.base = base
        self.rewrite = rewrite
        self.label = label
        self.name = f"{base.name}_{label}"

    def __repr__(self) -> str:
        return f"<argus kernel {self.base.name} rewritten: {self.label}>"

    def _trace(self, values: dict[str, Any]) -> Kernel:
        return self.rewrite(self.base._trace(values))


def map_statements(body: tuple[Stmt, ...], fn: Callable[[Stmt], Stmt | None]) -> tuple[Stmt, ...]:
    """`body` with `fn` applied to every statement, depth first (children before their parent); a statement
    for which `fn` returns None is dropped."""
    out: list[Stmt] = []
    for s in body:
        if isinstance(s, For | Role | Let):
            s = dataclasses.replace(s, body=map_statements(s.body, fn))
        elif isinstance(s, If):
            s = dataclasses.replace(s, then=map_statements(s.then, fn), orelse=map_statements(s.orelse, fn))
        new = fn(s)
        if new is not None:
            out.append(new)
    return tuple(out)


def rewrite_body(kernel: Kernel, fn: Callable[[Stmt], Stmt | None]) -> Kernel:
    """`kernel` with `map_statements(kernel.body, fn)`, its name unchanged."""
    return dataclasses.replace(kernel, body=map_statements(kernel.body, fn))


def without_register_split(kernel: Kernel) -> Kernel:
    """Every warp role keeps the register budget it launched with (no ``setmaxnreg``); the roles stay."""
    kernel = rewrite_body(kernel, lambda s: dataclasses.replace(s, registers=None) if isinstance(s, Role) else s)
    policies = kernel.policies
    if getattr(policies, "register_split", None) is not None:
        kernel = dataclasses.replace(kernel, policies=dataclasses.replace(policies, register_split=None))
    return kernel


def with_blocks_per_sm(blocks: int) -> Callable[[Kernel], Kernel]:
    """The rewrite that launches `kernel` for `blocks` resident blocks per SM (its launch bounds): what removing a
    register split needs where the roles' fragments outgrow the registers every thread gets at entry with the
    kernel's own count (`operators.RegisterSplitOperator`)."""

    def rewrite(kernel: Kernel) -> Kernel:
        return dataclasses.replace(kernel, blocks_per_sm=blocks)

    return rewrite


#: Most resident blocks per SM a rewrite names (`with_blocks_per_sm`; Hopper keeps at most 32, kernels here ask for 3).
MOST_REWRITTEN_BLOCKS = 8

#: The IR rewrites the walk's operators make (`DerivedKernel.label` -> the rewrite): a worker process rebuilds a
#: derived kernel of a walk from its labels (`argus.lineage.walk.variant_from_data`). A probe's rewrites are not
#: here: probes are traced where they are made, never sent.
REWRITES: dict[str, Callable[[Kernel], Kernel]] = {
    "no_register_split": without_register_split,
    **{f"blocks_per_sm_{b}": with_blocks_per_sm(b) for b in range(1, MOST_REWRITTEN_BLOCKS + 1)},
}


def without_statements(kernel: Kernel, kinds: tuple[type, ...]) -> Kernel:
    """`kernel` without any statement of the IR classes `kinds` (used by probes: drop a wait and ask the
    verifier what breaks)."""
    return rewrite_body(kernel, lambda s: None if isinstance(s, kinds) else s)


@dataclass
class Variant:
    """One kernel of a lineage.

    Attributes:
        name: how tables and skills name it, e.g. ``gemm_warp_specialized[STAGES=1]``.
        kernel: an ``@argus.kernel`` function or a `DerivedKernel`.
        params: trace-time parameters (the policies' values among them).
        task: the built-in task (`argus.tasks`) whose reference it must match.
        library: the library kernel (or lineage bridge) its source is, when it is one.
    """

    name: str
    kernel: Any
    params: dict[str, Any] = field(default_factory=dict)
    task: str = ""
    library: str | None = None

    def trace(self) -> Kernel:
        return self.kernel.trace(**self.params)

    def fingerprint(self) -> str:
        """The first 16 hex digits of the SHA-256 of the printed IR (`argus ir`): equal IR, equal fingerprint."""
        from argus.ir.printer import format_kernel

        text = format_kernel(self.trace())
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kernel": getattr(self.kernel, "name", str(self.kernel)),
            "library": self.library,
            "rewrites": _rewrites(self.kernel),
            "params": {k: _plain(v) for k, v in sorted(self.params.items())},
            "task": self.task,
            "fingerprint": self.fingerprint(),
        }


def _rewrites(kernel: Any) -> list[str]:
    out = []
    while isinstance(kernel, DerivedKernel):
        out.append(kernel.label)
        kernel = kernel.base
    return out[::-1]


def _plain(v: Any) -> Any:
    if isinstance(v, tuple | list):
        return [_plain(x) for x in v]
    if isinstance(v, bool | int | float | str) or v is None:
        return v
    return str(v)


def display_name(base: str, params: dict[str, Any], defaults: dict[str, Any], rewrites: list[str]) -> str:
    """``base[P=V,...]{rewrite,...}``: the parameters that differ from what `base` names (a library kernel's own
    parameters over the kernel's defaults: ``grouped_gemm_tma_store[EPILOGUE=direct]`` is that entry with the direct
    store, not the entry itself), and the rewrites."""
    from argus.kernels.registry import KernelLookupError, get_kernel

    try:
        defaults = {**defaults, **get_kernel(base).params}
    except KernelLookupError:  # a bridge, a file kernel or a kernel's own name: its defaults
        pass
    changed = [f"{k}={params[k]}" for k in sorted(params) if k in defaults and params[k] != defaults[k]]
    text = base + (f"[{','.join(changed)}]" if changed else "")
    return text + (f"{{{','.join(rewrites)}}}" if rewrites else "")


def interface(kernel: Any, params: dict[str, Any] | None = None) -> dict[str, tuple[tuple[Any, ...], str]]:
    """The kernel's tensors as the tasks see them: name -> (symbolic shape, dtype name), dtypes resolved with
    `params` (a dtype may name a trace parameter)."""
    traced = kernel.trace(**(params or {}))
    specs = getattr(kernel, "tensor_specs", {})
    values = {**getattr(kernel, "defaults", {}), **(params or {})}
    return {
        t.name: (tuple(specs[t.name].resolve_shape(values)) if t.name in specs else (), t.dtype.name)
        for t in traced.tensors
    }


def task_for(kernel: Any, params: dict[str, Any] | None = None, prefer: str | None = None) -> str:
    """The built-in task whose tensors (names, symbolic shapes and dtypes) are this kernel's (specialized with
    `params`), `prefer` first when it fits; raises `LineageError` ``LINEAGE_NO_TASK`` if none is."""
    from argus.lineage.errors import LineageError
    from argus.tasks import all_tasks

    want = interface(kernel, params)
    fits = []
    for task in all_tasks():
        got = {t.name: (tuple(t.shape), t.dtype) for t in getattr(task, "tensors", ())}
        if got == want:
            fits.append(task.name)
    if prefer in fits:
        return prefer
    if fits:
        return fits[0]
    raise LineageError(
        "LINEAGE_NO_TASK",
        f"no built-in task has the tensors of kernel {getattr(kernel, 'name', kernel)} ({want})",
        "pass task=NAME (argus.tasks) to walk()",
    )
