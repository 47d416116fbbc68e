"""A thin, typed layer over NVRTC through ``cuda.bindings.nvrtc``.

Owns every call into NVRTC: loading the library that `argus.backend.cuda.locate` chose (it is loaded
before ``cuda.bindings`` looks for one, so ``ARGUS_CUDA_HOME`` wins over whatever ``cuda-pathfinder``
would pick), the NVRTC version and supported architectures, and one compilation of one translation unit.
It neither caches nor formats errors: `argus.backend.cuda.toolchain` and `argus.backend.cuda.diagnostics`
do that. ``cuda.bindings`` is imported lazily, so ``import argus`` works without the ``cuda`` extra.
"""

from __future__ import annotations

import ctypes
import functools
import importlib
import os
import sys
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType, ModuleType
from typing import Any

from argus.backend.cuda.errors import ToolchainError
from argus.backend.cuda.locate import find_toolkit


@dataclass(frozen=True)
class NvrtcOutput:
    """The result of one ``nvrtcCompileProgram``.

    Attributes:
        status: NVRTC's result name, e.g. ``"NVRTC_SUCCESS"`` or ``"NVRTC_ERROR_COMPILATION"``.
        log: the program log, verbatim (warnings on success, errors on failure).
        cubin: the cubin, when compilation succeeded for a real architecture.
        ptx: the PTX, when NVRTC produced it (also after ptxas rejected it, which lets errors be mapped).
        lowered_names: name expression -> lowered (mangled) name, for the requested name expressions.
    """

    status: str
    log: str
    cubin: bytes | None
    ptx: str | None
    lowered_names: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def ok(self) -> bool:
        return self.status == "NVRTC_SUCCESS"


def bindings() -> ModuleType:
    """``cuda.bindings.nvrtc``, with the located ``libnvrtc`` loaded first; `ToolchainError` if unavailable."""
    return _bindings(os.environ.get("ARGUS_CUDA_HOME") or None)


@functools.cache
def _bindings(_cuda_home: str | None) -> ModuleType:
    toolkit = find_toolkit()
    library = toolkit.require("nvrtc")
    try:
        # Loaded under its SONAME: cuda-pathfinder (which cuda.bindings uses) takes an already loaded
        # libnvrtc before searching anywhere, so the one we located is the one used.
        ctypes.CDLL(str(library))
    except OSError as exc:
        raise ToolchainError(
            "COMPILE_TOOLCHAIN",
            f"cannot load the NVRTC library {library}: {exc}",
            hint="reinstall nvidia-cuda-nvrtc (its CUDA major must match cuda-bindings'), or fix ARGUS_CUDA_HOME",
        ) from exc
    try:
        module = importlib.import_module("cuda.bindings.nvrtc")
    except ImportError as exc:
        raise ToolchainError(
            "COMPILE_TOOLCHAIN",
            f"cuda-bindings is not importable: {exc}",
            hint="install the compile toolchain with `pip install 'argus-kernels[cuda]'`",
        ) from exc
    _warn_if_other_library_loaded(library)
    return module


def _warn_if_other_library_loaded(expected: Path) -> None:
    if not sys.platform.startswith("linux"):
        return
    try:
        from cuda.pathfinder import load_nvidia_dynamic_lib

        loaded = Path(load_nvidia_dynamic_lib("nvrtc").abs_path)
    except Exception:  # reporting only; the compile itself will surface real problems
        return
    if loaded.resolve() != expected.resolve():
        warnings.warn(
            f"NVRTC in use is {loaded}, not the located {expected} (another libnvrtc was loaded first)",
            RuntimeWarning,
            stacklevel=3,
        )


def _check(result: tuple[Any, ...], call: str) -> tuple[Any, ...]:
    """Split a ``cuda.bindings`` result tuple; raise `ToolchainError` if the NVRTC call itself failed."""
    status, *values = result
    if int(status) != 0:
        raise ToolchainError("COMPILE_NVRTC_API", f"{call} failed with {_status_name(status)}")
    return tuple(values)


def _status_name(status: Any) -> str:
    return getattr(status, "name", None) or str(status)


@functools.cache
def _version(_cuda_home: str | None) -> tuple[int, int]:
    major, minor = _check(bindings().nvrtcVersion(), "nvrtcVersion")
    return int(major), int(minor)


def nvrtc_version() -> tuple[int, int]:
    """NVRTC's ``(major, minor)`` version, e.g. ``(13, 5)``."""
    return _version(os.environ.get("ARGUS_CUDA_HOME") or None)


@functools.cache
def _archs(_cuda_home: str | None) -> tuple[int, ...]:
    (archs,) = _check(bindings().nvrtcGetSupportedArchs(), "nvrtcGetSupportedArchs")
    return tuple(int(a) for a in archs)


def supported_archs() -> tuple[int, ...]:
    """The compute capabilities this NVRTC can compile for, as integers (``90`` for ``sm_90``)."""
    return _archs(os.environ.get("ARGUS_CUDA_HOME") or None)


def compile_program(
    source: str,
    program_name: str,
    options: Sequence[str],
    name_expressions: Sequence[str] = (),
) -> NvrtcOutput:
    """Run NVRTC once on `source` with exactly `options`; return its status, log and outputs.

    A rejected program is not an exception here: its status and log come back in `NvrtcOutput`.
    Only a failing NVRTC API call (not the compilation) raises `ToolchainError`.
    """
    nvrtc = bindings()
    (program,) = _check(
        nvrtc.nvrtcCreateProgram(source.encode(), program_name.encode(), 0, [], []), "nvrtcCreateProgram"
    )
    try:
        for expression in name_expressions:
            _check(nvrtc.nvrtcAddNameExpression(program, expression.encode()), "nvrtcAddNameExpression")
        encoded = [option.encode() for option in options]
        (status,) = nvrtc.nvrtcCompileProgram(program, len(encoded), encoded)
        status_name = _status_name(status)
        log = _read_text(nvrtc, program, "ProgramLog")
        ptx = _read_text(nvrtc, program, "PTX", optional=True)
        if int(status) != 0:
            return NvrtcOutput(status_name, log, None, ptx or None)
        cubin = _read_bytes(nvrtc, program, "CUBIN", optional=True)
        lowered: dict[str, str] = {}
        for expression in name_expressions:
            (name,) = _check(nvrtc.nvrtcGetLoweredName(program, expression.encode()), "nvrtcGetLoweredName")
            lowered[expression] = name.decode() if isinstance(name, bytes) else str(name)
        return NvrtcOutput(status_name, log, cubin or None, ptx or None, MappingProxyType(lowered))
    finally:
        nvrtc.nvrtcDestroyProgram(program)


def _read_bytes(nvrtc: ModuleType, program: Any, what: str, *, optional: bool = False) -> bytes:
    """Fetch one of NVRTC's outputs (``ProgramLog``, ``PTX``, ``CUBIN``) as bytes, without trailing NULs."""
    size_result = getattr(nvrtc, f"nvrtcGet{what}Size")(program)
    if optional and int(size_result[0]) != 0:
        return b""
    (size,) = _check(size_result, f"nvrtcGet{what}Size")
    if size <= 0:
        return b""
    buffer = bytearray(size)  # NVRTC writes into it; never a bytes object, which may be shared
    _check(getattr(nvrtc, f"nvrtcGet{what}")(program, buffer), f"nvrtcGet{what}")
    return bytes(buffer) if what == "CUBIN" else bytes(buffer).rstrip(b"\x00")


def _read_text(nvrtc: ModuleType, program: Any, what: str, *, optional: bool = False) -> str:
    return _read_bytes(nvrtc, program, what, optional=optional).decode(errors="replace")
