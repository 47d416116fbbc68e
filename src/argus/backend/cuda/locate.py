"""Where the CUDA compile toolchain lives: the NVRTC library, the CUDA headers, cuobjdump and nvdisasm.

Owns the search for these pieces. It never looks for a system ``nvcc`` or ``/usr/local/cuda`` on its own;
the pieces come from Python wheels, so compiling and inspecting work on machines without a GPU.

Search order:

1. ``ARGUS_CUDA_HOME``, when set, is authoritative: a CUDA toolkit root, or a wheel root such as
   ``site-packages/nvidia/cu13``. Used from it: ``include/`` and ``include/cccl/`` (headers), ``lib64/`` or
   ``lib/`` (``libnvrtc.so.N``), ``bin/`` (``cuobjdump``, ``nvdisasm``). A piece it lacks is reported
   missing, never silently taken from elsewhere.
2. The NVIDIA wheels, found through the ``nvidia`` namespace package (or, failing that, an ``nvidia/``
   directory on ``sys.path``): the CUDA 13 layout ``nvidia/cu13/{include,include/cccl,lib,bin}`` first
   (``nvidia-cuda-nvrtc``, ``-runtime``, ``-cccl``, ``-cuobjdump``, ``-nvdisasm`` 13.x), then the CUDA 12
   layout (``nvidia/cuda_nvrtc/lib``, ``nvidia/cuda_runtime/include``, ``nvidia/cuda_cccl/include``,
   ``nvidia/cuda_cuobjdump/bin``, ``nvidia/cuda_nvdisasm/bin``).

`find_toolkit` reports what was found; `CudaToolkit.require` turns a missing piece into a
`ToolchainError` that says where it looked and how to fix it.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from argus.backend.cuda.errors import ToolchainError

ENV_CUDA_HOME = "ARGUS_CUDA_HOME"
"""Environment variable naming a CUDA toolkit (or wheel) root that overrides the wheel search."""

Piece = Literal["nvrtc", "headers", "cuobjdump", "nvdisasm"]

_INSTALL_HINT = (
    "install the compile toolchain with `pip install 'argus-kernels[cuda]'`, "
    f"or set {ENV_CUDA_HOME} to a CUDA toolkit root (with include/, lib64/ and bin/)"
)
_CUDA12_WHEEL_DIRS = ("cuda_nvrtc", "cuda_runtime", "cuda_cccl", "cuda_cuobjdump", "cuda_nvdisasm")
_EXE = ".exe" if sys.platform == "win32" else ""


@dataclass(frozen=True)
class CudaToolkit:
    """The located pieces of the compile toolchain; a piece that was not found is None (or empty).

    Attributes:
        origin: where the pieces came from, e.g. ``"wheels (/…/site-packages/nvidia)"`` or
            ``"ARGUS_CUDA_HOME=/opt/cuda"``.
        include_dirs: directories to pass to NVRTC as ``-I`` (the CUDA headers, then CCCL's).
        nvrtc_library: the ``libnvrtc`` shared library to load.
        cuobjdump: the ``cuobjdump`` executable.
        nvdisasm: the ``nvdisasm`` executable.
        searched: the directories that were looked in, for error messages.
    """

    origin: str
    include_dirs: tuple[Path, ...]
    nvrtc_library: Path | None
    cuobjdump: Path | None
    nvdisasm: Path | None
    searched: tuple[Path, ...]

    def require(self, piece: Piece) -> Path:
        """Return the path of `piece` (for ``"headers"``: the first include dir), or raise `ToolchainError`."""
        found: Path | None
        if piece == "headers":
            found = self.include_dirs[0] if self.include_dirs else None
        else:
            found = getattr(self, "nvrtc_library" if piece == "nvrtc" else piece)
        if found is None:
            where = "\n".join(f"    {path}" for path in self.searched) or "    (nothing to search)"
            raise ToolchainError(
                "COMPILE_TOOLCHAIN",
                f"the CUDA toolchain has no {_PIECE_NAMES[piece]} (searched {self.origin})",
                details=f"  searched:\n{where}",
                hint=_INSTALL_HINT,
            )
        return found


_PIECE_NAMES: dict[Piece, str] = {
    "nvrtc": "NVRTC library (libnvrtc)",
    "headers": "CUDA headers (cuda_fp16.h, cuda_bf16.h, …)",
    "cuobjdump": "cuobjdump executable",
    "nvdisasm": "nvdisasm executable",
}


def find_toolkit() -> CudaToolkit:
    """Locate the toolchain as the module docstring describes (``ARGUS_CUDA_HOME`` first, then wheels).

    The result is memoized per value of ``ARGUS_CUDA_HOME``; pieces that are missing are None, so callers
    that need only some pieces (e.g. inspection needs no NVRTC) still work.
    """
    return _find_toolkit(os.environ.get(ENV_CUDA_HOME) or None)


@functools.cache
def _find_toolkit(cuda_home: str | None) -> CudaToolkit:
    if cuda_home is not None:
        root = Path(cuda_home).expanduser()
        return _from_roots(f"{ENV_CUDA_HOME}={root}", [root])
    namespace_dirs = _nvidia_namespace_dirs()
    roots: list[Path] = []
    for base in namespace_dirs:
        roots.append(base / "cu13")
    for base in namespace_dirs:  # the CUDA 12 wheels: one directory per component
        roots += [base / name for name in _CUDA12_WHEEL_DIRS]
    origin = "wheels (" + ", ".join(str(d) for d in namespace_dirs) + ")" if namespace_dirs else "wheels (none found)"
    return _from_roots(origin, roots)


def _nvidia_namespace_dirs() -> list[Path]:
    """The directories of the ``nvidia`` namespace package that the NVIDIA wheels install into."""
    dirs: list[Path] = []
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.submodule_search_locations:
        dirs += [Path(location) for location in spec.submodule_search_locations]
    for entry in sys.path:  # fallback when the namespace is shadowed or not importable
        candidate = Path(entry or ".") / "nvidia"
        if candidate.is_dir():
            dirs.append(candidate)
    return _unique(path.resolve() for path in dirs)


def _from_roots(origin: str, roots: list[Path]) -> CudaToolkit:
    include_dirs: list[Path] = []
    for root in roots:
        include = root / "include"
        if (include / "cuda_fp16.h").is_file() or (include / "cuda_runtime.h").is_file():
            include_dirs.append(include)
    for root in roots:  # CCCL (cuda/barrier, cuda/std/...): include/cccl in CUDA 13, include/ in CUDA 12
        for candidate in (root / "include" / "cccl", root / "include"):
            if (candidate / "cuda" / "barrier").is_file():
                include_dirs.append(candidate)
                break
    return CudaToolkit(
        origin=origin,
        include_dirs=tuple(_unique(include_dirs)),
        nvrtc_library=_first_nvrtc_library(roots),
        cuobjdump=_first_executable(roots, "cuobjdump"),
        nvdisasm=_first_executable(roots, "nvdisasm"),
        searched=tuple(roots),
    )


def _first_nvrtc_library(roots: Iterable[Path]) -> Path | None:
    for root in roots:
        for lib_dir in (root / "lib64", root / "lib", root / "bin"):
            if not lib_dir.is_dir():
                continue
            if sys.platform == "win32":
                matches = sorted(lib_dir.glob("nvrtc64_*.dll"), reverse=True)
            else:
                # the SONAME file (libnvrtc.so.13), newest major first; never libnvrtc-builtins
                matches = sorted(
                    (p for p in lib_dir.glob("libnvrtc.so.*") if p.name.removeprefix("libnvrtc.so.").isdigit()),
                    key=lambda p: int(p.name.removeprefix("libnvrtc.so.")),
                    reverse=True,
                )
                if not matches and (lib_dir / "libnvrtc.so").exists():
                    matches = [lib_dir / "libnvrtc.so"]
            if matches:
                return matches[0]
    return None


def _first_executable(roots: Iterable[Path], name: str) -> Path | None:
    for root in roots:
        candidate = root / "bin" / (name + _EXE)
        if candidate.is_file():
            return candidate
    return None


def _unique(paths: Iterable[Path]) -> list[Path]:
    seen: dict[Path, None] = {}
    for path in paths:
        seen.setdefault(path, None)
    return list(seen)
