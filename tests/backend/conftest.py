"""Shared fixtures: every fixture kernel compiled once per session, and a private cache directory per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from argus.backend.cuda import CompiledModule, compile_cuda
from tests.backend.cuda_kernels import ALL_VALID


@pytest.fixture(autouse=True)
def private_cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Point the default cache at a temporary directory, so no test reads or writes ~/.cache."""
    root = tmp_path / "argus-cache"
    monkeypatch.setenv("ARGUS_CACHE_DIR", str(root))
    yield root


@pytest.fixture(scope="session")
def compiled() -> dict[str, CompiledModule]:
    """Each valid fixture kernel, compiled without the cache and with ``ptxas -v`` (the inspection oracle)."""
    return {
        name: compile_cuda(
            source,
            name,
            options=["-Xptxas=-v"],
            name_expressions=["scale<4>"] if name == "template_and_cluster" else (),
            cache=False,
        )
        for name, source in ALL_VALID.items()
    }
