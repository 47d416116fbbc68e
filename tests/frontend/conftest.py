"""`kernelbench_dir`: the KernelBench problems the tests read (``$ARGUS_KERNELBENCH_DIR``, else
``../shared/kernelbench``; never copied into the repository); `problem`: writes a small problem file of our own;
the argus cache points at a temporary directory (the gate may compile and cache)."""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def kernelbench_dir() -> Path:
    from argus.tasks.kernelbench import ENV_DIR, default_kernelbench_dir

    root = default_kernelbench_dir()
    assert (root / "level1").is_dir(), f"KernelBench problems not found at {root}; set ${ENV_DIR}"
    return root


@pytest.fixture(autouse=True)
def private_cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = tmp_path / "argus-cache"
    monkeypatch.setenv("ARGUS_CACHE_DIR", str(root))
    yield root


@pytest.fixture
def problem(tmp_path: Path) -> Callable[..., Path]:
    """problem(forward_body, inputs="[torch.randn(4, 8)]", init="[]", name="p", extra="") -> a problem file whose
    Model.forward(self, x, ...) is `forward_body` (its arguments: `args`, default "x")."""

    def write(
        body: str, inputs: str = "[torch.randn(4, 8)]", init: str = "[]", args: str = "x", name: str = "p",
        extra: str = "",
    ) -> Path:  # fmt: skip
        path = tmp_path / f"{name}.py"
        path.write_text(
            textwrap.dedent(
                f"""
                import torch
                import torch.nn.functional as F

                {extra}

                class Model(torch.nn.Module):
                    def __init__(self, *args):
                        super().__init__()
                        self.args = args

                    def forward(self, {args}):
                        return {body}

                size = 4

                def get_inputs():
                    return {inputs}

                def get_init_inputs():
                    return {init}
                """
            )
        )
        return path

    return write
