"""Locating the toolchain: the NVIDIA wheels by default, ARGUS_CUDA_HOME when set, and a clear
ToolchainError when a piece is missing."""

from __future__ import annotations

from pathlib import Path

import pytest

from argus.backend.cuda import ToolchainError, compile_cuda, find_toolkit
from tests.backend.cuda_kernels import VECTOR_ADD


def _wheel_root(monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("ARGUS_CUDA_HOME", raising=False)
    toolkit = find_toolkit()
    assert toolkit.nvrtc_library is not None
    return toolkit.nvrtc_library.parent.parent


def test_the_wheels_provide_every_piece(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ARGUS_CUDA_HOME", raising=False)
    toolkit = find_toolkit()
    assert toolkit.origin.startswith("wheels (") and "nvidia" in toolkit.origin
    headers = {
        name: any((d / name).is_file() for d in toolkit.include_dirs)
        for name in ("cuda_runtime.h", "cuda_bf16.h", "cuda_fp16.h", "cuda/barrier")
    }
    assert all(headers.values()), headers
    assert toolkit.nvrtc_library is not None and toolkit.nvrtc_library.name.startswith("libnvrtc.so.")
    assert toolkit.cuobjdump is not None and toolkit.cuobjdump.name == "cuobjdump"
    assert toolkit.nvdisasm is not None and toolkit.nvdisasm.name == "nvdisasm"
    assert not any("/usr/local/cuda" in str(p) for p in (*toolkit.include_dirs, toolkit.nvrtc_library))


def test_argus_cuda_home_overrides_the_wheel_search(monkeypatch: pytest.MonkeyPatch) -> None:
    root = _wheel_root(monkeypatch)  # a wheel root has the layout of a toolkit root
    monkeypatch.setenv("ARGUS_CUDA_HOME", str(root))
    toolkit = find_toolkit()
    assert toolkit.origin == f"ARGUS_CUDA_HOME={root}"
    assert toolkit.searched == (root,)
    assert toolkit.include_dirs[0] == root / "include"
    assert toolkit.nvrtc_library is not None and toolkit.nvrtc_library.parent == root / "lib"
    assert toolkit.cuobjdump == root / "bin" / "cuobjdump"
    module = compile_cuda(VECTOR_ADD, "vector_add", cache=False)
    assert f"-I{root / 'include'}" in module.options


def test_an_empty_argus_cuda_home_is_authoritative_and_reported(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("ARGUS_CUDA_HOME", str(tmp_path))
    toolkit = find_toolkit()
    assert (toolkit.include_dirs, toolkit.nvrtc_library, toolkit.cuobjdump, toolkit.nvdisasm) == ((), None, None, None)
    with pytest.raises(ToolchainError) as caught:
        toolkit.require("cuobjdump")
    error = caught.value
    assert error.code == "COMPILE_TOOLCHAIN"
    assert str(tmp_path) in str(error) and "argus-kernels[cuda]" in str(error)
    with pytest.raises(ToolchainError, match="NVRTC library"):
        compile_cuda(VECTOR_ADD, "vector_add", cache=False)
