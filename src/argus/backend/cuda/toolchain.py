"""Compile CUDA C++ to a cubin for Hopper with NVRTC, through the on-disk cache.

Owns `compile_cuda` and `CompiledModule`: the default NVRTC options, the cache key, and the glue between
`argus.backend.cuda.nvrtc` (the compiler call), `argus.backend.cuda.cache` (the disk),
`argus.backend.cuda.diagnostics` (errors pointing at the DSL) and `argus.backend.cuda.inspection`
(resources and SASS). No GPU is needed for any of it.

Default options, and why:

* ``--gpu-architecture=sm_90a`` (from ``arch=``): a real architecture, so NVRTC runs ptxas and returns a
  cubin; the ``a`` suffix enables Hopper's arch-specific instructions (``wgmma``, ``setmaxnreg``, TMA
  multicast). The architecture always comes from ``arch=``; ``-arch`` in ``options`` is rejected.
* ``-std=c++17``: pinned rather than left to the NVRTC default, so cache keys and behaviour do not move
  with NVRTC upgrades.
* ``-lineinfo``: SASS-to-source line tables (for profilers and ``sass(line_info=True)``) and PTX ``.loc``
  directives, through which ptxas errors are mapped back to the DSL. It does not change the code.
* ``-I`` the CUDA headers and CCCL from the wheels (after the caller's ``include_dirs``).
* Not ``--use_fast_math``: it changes numerics (flush-to-zero, approximate division and sqrt); that is a
  kernel policy the caller passes explicitly, never a silent default.
* Not ``-default-device``: generated code annotates every function (``__device__``/``__global__``);
  making unannotated functions device functions would hide a missing annotation.

A caller's option that sets the same thing as a default (e.g. ``-std=c++20``) replaces the default.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from argus.backend.cuda import inspection
from argus.backend.cuda import nvrtc as nvrtc_api
from argus.backend.cuda.cache import CacheEntry, CubinCache
from argus.backend.cuda.diagnostics import Diagnostic, LineMap, compile_error, derive_line_map, parse_log
from argus.backend.cuda.errors import CompileError
from argus.backend.cuda.locate import CudaToolkit, find_toolkit

DEFAULT_ARCH = "sm_90a"
DEFAULT_OPTIONS: tuple[str, ...] = ("-std=c++17", "-lineinfo")
CACHE_FORMAT = 1
"""Bumped whenever what goes into a cache entry, or how the key is computed, changes."""

_ARCH = re.compile(r"^sm_(?P<number>\d+)(?P<suffix>[af]?)$")
_ARCH_OPTIONS = ("-arch", "--gpu-architecture")
# options that set one thing, under each of their spellings -> that thing; used to let a caller's option
# replace the default that sets the same thing
_OPTION_SETTING = {
    "-std": "std",
    "--std": "std",
    "-lineinfo": "lineinfo",
    "--generate-line-info": "lineinfo",
}


@dataclass(frozen=True, eq=False)
class CompiledModule:
    """One compiled translation unit.

    Attributes:
        name: the program name NVRTC saw (``"gemm.cu"``), which logs and line tables refer to.
        arch: the target, e.g. ``"sm_90a"``.
        cubin: the cubin, ready for ``cuModuleLoadData``.
        ptx: the PTX NVRTC produced on the way (always kept: it costs nothing extra to get).
        log: NVRTC's log of this successful compile: warnings, or ``""``.
        options: the effective NVRTC options.
        source: the CUDA source that was compiled.
        line_map: generated line -> ``"file.py:LINE"`` (given, or derived from ``// file.py:LINE`` comments).
        lowered_names: name expression -> lowered (mangled) kernel name, for the requested name expressions.
        nvrtc_version: ``(major, minor)`` of the NVRTC that built the cubin.
        key: the cache key (hex SHA-256).
        from_cache: True when the cubin came from the on-disk cache and NVRTC did not run.
        seconds: wall time of the `compile_cuda` call that produced this object.
    """

    name: str
    arch: str
    cubin: bytes
    ptx: str
    log: str
    options: tuple[str, ...]
    source: str
    line_map: Mapping[int, str]
    lowered_names: Mapping[str, str]
    nvrtc_version: tuple[int, int]
    key: str
    from_cache: bool
    seconds: float = field(default=0.0)

    @functools.cached_property
    def warnings(self) -> tuple[Diagnostic, ...]:
        """The warnings in `log`, each mapped to its DSL line where the line map allows."""
        return parse_log(self.log, program_name=self.name, line_map=self.line_map, ptx=self.ptx)

    @functools.cached_property
    def sass(self) -> str:
        """The SASS of every kernel (``nvdisasm``; computed once, about half a second)."""
        return inspection.sass(self.cubin)

    @functools.cached_property
    def resources(self) -> Mapping[str, inspection.KernelResources]:
        """`KernelResources` per kernel name (cheap unless a kernel spills, which needs the SASS)."""
        sass_text = self.__dict__.get("sass")
        return MappingProxyType(inspection.inspect_cubin(self.cubin, sass_text=sass_text))

    @property
    def kernel_names(self) -> tuple[str, ...]:
        """The kernels (``__global__`` entries) in the cubin, by symbol name."""
        return tuple(self.resources)

    def instruction_mix(self, kernel: str | None = None, *, modifiers: bool = False) -> Counter[str]:
        """Opcode counts of the SASS of `kernel` (a symbol name), or of the whole module."""
        text = self.sass
        if kernel is not None:
            per_kernel = inspection.split_sass(text)
            if kernel not in per_kernel:
                raise KeyError(f"no kernel {kernel!r} in {self.name}; kernels: {', '.join(per_kernel)}")
            text = per_kernel[kernel]
        return inspection.instruction_mix(text, modifiers=modifiers)


def compile_cuda(
    source: str,
    name: str,
    *,
    arch: str = DEFAULT_ARCH,
    options: Sequence[str] = (),
    include_dirs: Sequence[str | os.PathLike[str]] = (),
    line_map: LineMap | None = None,
    name_expressions: Sequence[str] = (),
    cache: CubinCache | bool = True,
) -> CompiledModule:
    """Compile the CUDA C++ `source` to a cubin for `arch` with NVRTC, or fetch it from the cache.

    Args:
        source: one translation unit of CUDA C++ (kernels usually ``extern "C" __global__``).
        name: the program name, e.g. the kernel's name; ``".cu"`` is appended if missing.
        arch: a real architecture NVRTC supports, ``"sm_90a"`` by default.
        options: further NVRTC options, after the defaults (see the module docstring).
        include_dirs: extra ``-I`` directories, searched before the CUDA headers. Their contents are not
            hashed into the cache key (only their paths and modification times are).
        line_map: generated line -> ``"file.py:LINE"``; when None, it is derived from ``// file.py:LINE``
            comments in `source`. Errors name the DSL line nearest above the failing generated line.
        name_expressions: C++ name expressions (e.g. ``"gemm<128, 256>"``) whose lowered names to record.
        cache: True for the default cache directory, False for none, or a `CubinCache`.

    Returns:
        The `CompiledModule`; ``from_cache`` says whether NVRTC ran.

    Raises:
        CompileError: NVRTC rejected the source (``COMPILE_NVRTC``), an option (``COMPILE_OPTION``), the
            architecture (``COMPILE_ARCH``) or a name expression (``COMPILE_NAME_EXPRESSION``).
        ToolchainError: NVRTC or the CUDA headers cannot be found or loaded.
    """
    started = time.perf_counter()
    if not isinstance(source, str):
        raise TypeError(f"source must be str, got {type(source).__name__}")
    program_name = name if name.endswith((".cu", ".cuh", ".cpp")) else f"{name}.cu"
    _check_arch(arch, program_name)
    toolkit = find_toolkit()
    toolkit.require("headers")
    effective = effective_options(arch, options, include_dirs, toolkit=toolkit)
    version = nvrtc_api.nvrtc_version()
    resolved_map = {int(k): str(v) for k, v in line_map.items()} if line_map is not None else derive_line_map(source)
    key = cache_key(
        source=source,
        program_name=program_name,
        arch=arch,
        options=effective,
        name_expressions=name_expressions,
        nvrtc_version=version,
        include_dirs=[*include_dirs, *toolkit.include_dirs],
    )
    store: CubinCache | None
    if isinstance(cache, CubinCache):
        store = cache
    else:
        store = CubinCache() if cache else None

    def module(cubin: bytes, ptx: str, log: str, lowered: Mapping[str, str], from_cache: bool) -> CompiledModule:
        return CompiledModule(
            name=program_name,
            arch=arch,
            cubin=cubin,
            ptx=ptx,
            log=log,
            options=effective,
            source=source,
            line_map=MappingProxyType(resolved_map),
            lowered_names=MappingProxyType(dict(lowered)),
            nvrtc_version=version,
            key=key,
            from_cache=from_cache,
            seconds=time.perf_counter() - started,
        )

    if store is not None and (entry := store.load(key)) is not None:
        return module(entry.cubin, entry.ptx, entry.log, entry.lowered_names, from_cache=True)

    output = nvrtc_api.compile_program(source, program_name, effective, name_expressions)
    if not output.ok or output.cubin is None:
        raise compile_error(
            status=output.status,
            log=output.log,
            source=source,
            program_name=program_name,
            arch=arch,
            options=effective,
            line_map=resolved_map,
            ptx=output.ptx,
        )
    missing = [e for e in name_expressions if e not in output.lowered_names]
    if missing:
        raise CompileError(
            "COMPILE_NAME_EXPRESSION",
            f"NVRTC returned no lowered name for {', '.join(missing)} in {program_name}",
            log=output.log,
            program_name=program_name,
            source=source,
            options=effective,
            hint="a name expression must name a __global__ function or __device__/__constant__ variable",
        )
    ptx = output.ptx or ""
    if store is not None:
        store.store(
            CacheEntry(
                key=key,
                cubin=output.cubin,
                ptx=ptx,
                log=output.log,
                lowered_names=output.lowered_names,
                meta={"name": program_name, "arch": arch, "options": list(effective), "nvrtc": list(version)},
            )
        )
    return module(output.cubin, ptx, output.log, output.lowered_names, from_cache=False)


def effective_options(
    arch: str,
    options: Sequence[str],
    include_dirs: Sequence[str | os.PathLike[str]] = (),
    *,
    toolkit: CudaToolkit | None = None,
) -> tuple[str, ...]:
    """The exact NVRTC options `compile_cuda` uses: architecture, defaults (less those the caller's options
    replace), the caller's include dirs, the toolkit's include dirs, then the caller's options."""
    options = tuple(options)
    for option in options:
        if not isinstance(option, str) or "\x00" in option:
            raise TypeError(f"NVRTC options are strings without NUL bytes, got {option!r}")
        if option.split("=", 1)[0] in _ARCH_OPTIONS:
            raise CompileError(
                "COMPILE_OPTION",
                f"the architecture is set by arch=, not by the option {option!r}",
                options=options,
                hint=f"call compile_cuda(..., arch={option.split('=', 1)[-1]!r}) and drop {option!r}",
            )
    toolkit = toolkit or find_toolkit()
    overridden = {_OPTION_SETTING.get(option.split("=", 1)[0]) for option in options} - {None}
    defaults = [d for d in DEFAULT_OPTIONS if _OPTION_SETTING.get(d.split("=", 1)[0]) not in overridden]
    includes = [f"-I{Path(d)}" for d in include_dirs] + [f"-I{d}" for d in toolkit.include_dirs]
    return (f"--gpu-architecture={arch}", *defaults, *includes, *options)


def cache_key(
    *,
    source: str,
    program_name: str,
    arch: str,
    options: Sequence[str],
    name_expressions: Sequence[str],
    nvrtc_version: tuple[int, int],
    include_dirs: Iterable[str | os.PathLike[str]],
) -> str:
    """The hex SHA-256 that identifies a compilation: everything that can change the cubin, the log or
    the line tables — source, program name, architecture, options, name expressions, NVRTC version, and
    each include directory with its modification time (which changes when headers are added or replaced)."""
    material: dict[str, Any] = {
        "format": CACHE_FORMAT,
        "source": hashlib.sha256(source.encode()).hexdigest(),
        "name": program_name,
        "arch": arch,
        "options": list(options),
        "name_expressions": list(name_expressions),
        "nvrtc": list(nvrtc_version),
        "include_dirs": [[str(d), _mtime_ns(Path(d))] for d in include_dirs],
    }
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()


def _mtime_ns(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return -1


def _check_arch(arch: str, program_name: str) -> None:
    match = _ARCH.match(arch) if isinstance(arch, str) else None
    supported = nvrtc_api.supported_archs()
    if match is None or int(match["number"]) not in supported:
        listed = ", ".join(f"sm_{a}" for a in supported)
        raise CompileError(
            "COMPILE_ARCH",
            f"NVRTC {'.'.join(map(str, nvrtc_api.nvrtc_version()))} cannot compile {program_name} for {arch!r}",
            program_name=program_name,
            details=f"  requires a real architecture sm_<N>[a|f] with N one of: {listed}",
            hint=f"Hopper (H100, H200) is {DEFAULT_ARCH}; the 'a' suffix enables wgmma, setmaxnreg and TMA multicast",
        )


@dataclass(frozen=True)
class ToolchainInfo:
    """What `compile_cuda` and inspection will use, for reports and ``argus doctor``-style checks."""

    origin: str
    nvrtc_version: tuple[int, int]
    nvrtc_library: Path | None
    supported_archs: tuple[int, ...]
    include_dirs: tuple[Path, ...]
    cuobjdump: Path | None
    nvdisasm: Path | None
    default_options: tuple[str, ...]


def toolchain_info() -> ToolchainInfo:
    """Locate the toolchain, load NVRTC, and describe both; raises `ToolchainError` if NVRTC is unusable."""
    toolkit = find_toolkit()
    return ToolchainInfo(
        origin=toolkit.origin,
        nvrtc_version=nvrtc_api.nvrtc_version(),
        nvrtc_library=toolkit.nvrtc_library,
        supported_archs=nvrtc_api.supported_archs(),
        include_dirs=toolkit.include_dirs,
        cuobjdump=toolkit.cuobjdump,
        nvdisasm=toolkit.nvdisasm,
        default_options=effective_options(DEFAULT_ARCH, (), toolkit=toolkit),
    )
