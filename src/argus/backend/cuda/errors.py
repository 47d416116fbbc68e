"""The CUDA backend's error types.

Owns `BackendError` and its three kinds, each with a stable code:

* `ToolchainError` (``COMPILE_TOOLCHAIN``, ``COMPILE_NVRTC_API``): the environment is broken — NVRTC, the
  CUDA headers, cuobjdump or nvdisasm cannot be found or loaded. Not the candidate kernel's fault.
* `CompileError` (``COMPILE_NVRTC``, ``COMPILE_OPTION``, ``COMPILE_ARCH``, ``COMPILE_NAME_EXPRESSION``): the
  source or the options were rejected. Carries the full NVRTC log and points at the DSL line.
* `InspectError` (``INSPECT_NOT_CUBIN``, ``INSPECT_TOOL``): a cubin could not be inspected.

All of them pickle, so they cross the gate's worker-process boundary intact.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from argus.diagnostics import ArgusError

if TYPE_CHECKING:
    from argus.backend.cuda.diagnostics import Diagnostic


class BackendError(RuntimeError):
    """Something in the CUDA backend failed.

    Attributes:
        code: stable identifier (``COMPILE_<DETAIL>`` or ``INSPECT_<DETAIL>``), for programs and the agent.
        message: what failed, in one line.
        hint: how to fix it, when there is something useful to say.
        details: further context (locations, source excerpts), already formatted.
    """

    def __init__(self, code: str, message: str, *, hint: str | None = None, details: str | None = None) -> None:
        self.code = code
        self.message = message
        self.hint = hint
        self.details = details
        super().__init__(self._render())

    def _render(self) -> str:
        text = f"[{self.code}] {self.message}"
        if self.details:
            text += "\n" + self.details.rstrip("\n")
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text

    def _state(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "hint": self.hint, "details": self.details}

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self._state()))


# Same attributes as every argus error (code, message, hint); one `except ArgusError` catches it.
ArgusError.register(BackendError)


def _rebuild(cls: type[BackendError], state: dict[str, Any]) -> BackendError:
    return cls(**state)


class ToolchainError(BackendError):
    """The CUDA toolchain (NVRTC, headers, cuobjdump, nvdisasm) is missing or cannot be loaded."""


class InspectError(BackendError):
    """A cubin could not be inspected (not a cubin, or cuobjdump/nvdisasm failed on it).

    Attributes:
        output: what the tool printed, when a tool failed.
    """

    def __init__(
        self,
        code: str,
        message: str,
        *,
        hint: str | None = None,
        details: str | None = None,
        output: str = "",
    ) -> None:
        self.output = output
        super().__init__(code, message, hint=hint, details=details)

    def _state(self) -> dict[str, Any]:
        return {**super()._state(), "output": self.output}


class CompileError(BackendError):
    """NVRTC (or ptxas inside it) rejected the source or the options.

    Attributes:
        log: the full NVRTC log, verbatim (also appended to the message).
        location: ``"file.py:LINE"`` of the DSL line nearest above the first error, when the generated
            source carries ``// file.py:LINE`` comments or a line map was given; else None.
        generated_line: the line of the generated CUDA source the first error is on, when known.
        diagnostics: every error and warning parsed from the log, each mapped to the DSL where possible.
        program_name: the translation unit's name as NVRTC saw it (e.g. ``"gemm.cu"``).
        source: the generated CUDA source that failed.
        options: the effective NVRTC options.
    """

    def __init__(
        self,
        code: str,
        message: str,
        *,
        log: str = "",
        location: str | None = None,
        generated_line: int | None = None,
        diagnostics: Sequence[Diagnostic] = (),
        program_name: str = "",
        source: str = "",
        options: Sequence[str] = (),
        hint: str | None = None,
        details: str | None = None,
    ) -> None:
        self.log = log
        self.location = location
        self.generated_line = generated_line
        self.diagnostics = tuple(diagnostics)
        self.program_name = program_name
        self.source = source
        self.options = tuple(options)
        super().__init__(code, message, hint=hint, details=details)

    def _render(self) -> str:
        text = super()._render()
        if self.log.strip():
            body = "\n".join("    " + line if line else "" for line in self.log.rstrip().splitlines())
            text += f"\n  NVRTC log:\n{body}"
        return text

    def _state(self) -> dict[str, Any]:
        return {
            **super()._state(),
            "log": self.log,
            "location": self.location,
            "generated_line": self.generated_line,
            "diagnostics": self.diagnostics,
            "program_name": self.program_name,
            "source": self.source,
            "options": self.options,
        }
