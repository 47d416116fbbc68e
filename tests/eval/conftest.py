"""The gate's tests compile kernels and may measure ceilings: point the argus cache at a temporary directory, so
no test reads or writes the user's ~/.cache (worker processes inherit the variable). `kernelbench_dir` is the
KernelBench problems directory the tests read (never copied into the repository)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def private_cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = tmp_path / "argus-cache"
    monkeypatch.setenv("ARGUS_CACHE_DIR", str(root))
    yield root


@pytest.fixture(scope="session")
def kernelbench_dir() -> Path:
    from argus.tasks.kernelbench import ENV_DIR, default_kernelbench_dir

    root = default_kernelbench_dir()
    assert (root / "level1").is_dir(), f"KernelBench problems not found at {root}; set ${ENV_DIR}"
    return root
