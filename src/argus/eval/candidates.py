"""What the gate evaluates: a kernel (an ``@argus.kernel`` function, or any callable in the kernel-call
convention) or a PyTorch module class (KernelBench's ``ModelNew``), with the source text the static check
reads.

Loading a module candidate from a file is the ``compile`` stage of a PyTorch candidate (import, then
construct); it happens inside the worker process, so a file that crashes the interpreter on import is
contained like any other crash.
"""

from __future__ import annotations

import importlib.util
import inspect
import itertools
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_counter = itertools.count()


@dataclass
class KernelCandidate:
    """A kernel candidate.

    Attributes:
        name: how results name it.
        kernel: an ``@argus.kernel`` function (traced with `params`; compiled and verified), or any callable
            ``kernel(*tensors)`` that writes its outputs in place (run as is; nothing to compile or verify).
        params: trace-time parameters of a DSL kernel.
        source: source text for the static check (default: the source of the kernel's module).
    """

    name: str
    kernel: Any
    params: dict[str, Any] = field(default_factory=dict)
    source: str | None = None

    @property
    def is_dsl(self) -> bool:
        return hasattr(self.kernel, "trace") and hasattr(self.kernel, "tensor_specs")

    def source_text(self) -> str | None:
        if self.source is not None:
            return self.source
        target = getattr(self.kernel, "fn", self.kernel)
        module = inspect.getmodule(target)
        try:
            return inspect.getsource(module) if module is not None else inspect.getsource(target)
        except (OSError, TypeError):
            return None

    def parameter_names(self) -> list[str] | None:
        """The kernel's tensor parameters in order (DSL kernels), else None."""
        if not self.is_dsl:
            return None
        return [t.name for t in self.kernel.trace(**self.params).tensors]


def library_candidate(name: str) -> KernelCandidate:
    """The library kernel `name` (`argus.kernels`) as a candidate."""
    from argus.kernels.registry import get_kernel

    entry = get_kernel(name)
    return KernelCandidate(entry.name, entry.kernel, dict(entry.params))


@dataclass
class ModuleCandidate:
    """A PyTorch module candidate: `module_class`, or the class named `attr` in the file `path` (loaded by the
    compile stage)."""

    name: str
    module_class: type | None = None
    path: Path | None = None
    attr: str = "ModelNew"
    source: str | None = None

    def source_text(self) -> str | None:
        if self.source is not None:
            return self.source
        if self.path is not None:
            try:
                return Path(self.path).read_text()
            except OSError:
                return None
        if self.module_class is not None:
            try:
                return inspect.getsource(inspect.getmodule(self.module_class) or self.module_class)
            except (OSError, TypeError):
                return None
        return None


def import_file(path: Path, name_hint: str = "argus_candidate") -> Any:
    """Import the Python file `path` as a fresh module (a unique name, registered in ``sys.modules`` so that
    pickling and ``inspect`` work) and return it. Raises whatever the file raises."""
    path = Path(path)
    stem = "".join(c if c.isalnum() else "_" for c in path.stem)
    mod_name = f"{name_hint}_{stem}_{next(_counter)}"
    spec = importlib.util.spec_from_file_location(mod_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(mod_name, None)
        raise
    return module
