"""The runtime's errors: bad arguments (caught before launch) and failures the CUDA driver reports.

Codes:

* `ArgumentError` — ``RUNTIME_ARG_COUNT``, ``RUNTIME_ARG_TYPE`` (not a CUDA tensor), ``RUNTIME_ARG_DEVICE``,
  ``RUNTIME_ARG_DTYPE``, ``RUNTIME_ARG_RANK``, ``RUNTIME_ARG_SHAPE`` (a static extent or a shape symbol
  that disagrees between tensors), ``RUNTIME_ARG_STRIDES`` (not row-major contiguous),
  ``RUNTIME_ARG_ALIGNMENT``, ``RUNTIME_ARG_ALIAS`` (an output overlaps another argument),
  ``RUNTIME_ARG_READONLY``, ``RUNTIME_ASSUMPTION`` (a shape violates the kernel's declared assumptions),
  ``RUNTIME_ARG_RANGE`` (a shape too large for the kernel's 32-bit index arithmetic),
  ``RUNTIME_LAUNCH_CONFIG`` (a grid the hardware cannot launch);
* `LaunchError` — ``RUNTIME_NO_CUDA`` (no driver, no GPU, or no ``cuda.bindings``) and
  ``RUNTIME_CUDA_<CALL>`` for a failing driver call, with the kernel's name and CUDA's error name and
  string.
"""

from __future__ import annotations

from typing import Any

from argus.diagnostics import ArgusError


class ArgumentError(ArgusError, ValueError):
    """An argument does not fit the kernel (code ``RUNTIME_ARG_<DETAIL>``); raised before any launch.

    Attributes (besides `ArgusError`'s): `kernel` (its name) and `argument` (the parameter's name, or None
    for errors about the whole call)."""

    def __init__(
        self,
        code: str,
        message: str,
        hint: str | None = None,
        *,
        kernel: str = "",
        argument: str | None = None,
        requirement: str | None = None,
        actual: Any = None,
    ) -> None:
        self.kernel = kernel
        self.argument = argument
        super().__init__(code, message, hint, requirement=requirement, actual=actual)

    def __reduce__(self) -> tuple:
        return (
            _rebuild_argument,
            (self.code, self.message, self.hint, self.kernel, self.argument, self.requirement, self.actual),
        )


def _rebuild_argument(code, message, hint, kernel, argument, requirement, actual) -> ArgumentError:  # noqa: ANN001
    return ArgumentError(code, message, hint, kernel=kernel, argument=argument, requirement=requirement, actual=actual)


class LaunchError(ArgusError, RuntimeError):
    """The CUDA driver refused or failed (code ``RUNTIME_CUDA_<CALL>`` or ``RUNTIME_NO_CUDA``).

    Attributes: `kernel`, `call` (the driver function), `cuda_error` (CUDA's error name, e.g.
    ``"CUDA_ERROR_INVALID_VALUE"``) and `cuda_message` (its description)."""

    def __init__(
        self,
        code: str,
        message: str,
        hint: str | None = None,
        *,
        kernel: str = "",
        call: str | None = None,
        cuda_error: str | None = None,
        cuda_message: str | None = None,
    ) -> None:
        self.kernel = kernel
        self.call = call
        self.cuda_error = cuda_error
        self.cuda_message = cuda_message
        super().__init__(code, message, hint)

    def __reduce__(self) -> tuple:
        return (
            _rebuild_launch,
            (self.code, self.message, self.hint, self.kernel, self.call, self.cuda_error, self.cuda_message),
        )


def _rebuild_launch(code, message, hint, kernel, call, cuda_error, cuda_message) -> LaunchError:  # noqa: ANN001
    return LaunchError(code, message, hint, kernel=kernel, call=call, cuda_error=cuda_error, cuda_message=cuda_message)
