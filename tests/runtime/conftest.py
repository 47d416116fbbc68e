"""Runtime tests compile kernels: point the cubin cache at a temporary directory, so no test reads or writes
the user's ~/.cache."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def private_cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = tmp_path / "argus-cache"
    monkeypatch.setenv("ARGUS_CACHE_DIR", str(root))
    yield root
