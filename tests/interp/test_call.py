"""Calling a kernel: device="cpu" or ARGUS_INTERPRET=1 runs it on the interpreter."""

from __future__ import annotations

import numpy as np
import pytest

from argus.kernels.elementwise import vector_add
from argus.lang import DSLError


def test_device_cpu_with_numpy() -> None:
    a, b, c = np.arange(300.0), np.ones(300), np.zeros(300)
    vector_add(a, b, c, device="cpu")
    assert np.array_equal(c, a + 1)


def test_argus_interpret_environment(monkeypatch) -> None:
    monkeypatch.setenv("ARGUS_INTERPRET", "1")
    a, b, c = np.arange(10.0), np.arange(10.0), np.zeros(10)
    vector_add(a, b, c, BLOCK=512)
    assert np.array_equal(c, 2 * a)


def test_torch_cpu_tensors_are_written_back() -> None:
    torch = pytest.importorskip("torch")
    a = torch.arange(100, dtype=torch.float32)
    b = torch.full((100,), 2.0)
    c = torch.zeros(100)
    vector_add(a, b, c, device="cpu")
    assert torch.equal(c, a + 2)


def test_without_a_gpu_path_the_error_says_what_to_do(monkeypatch) -> None:
    monkeypatch.delenv("ARGUS_INTERPRET", raising=False)
    with pytest.raises(DSLError) as e:
        vector_add(np.zeros(4), np.zeros(4), np.zeros(4))
    assert e.value.code == "DSL_NO_GPU_PATH" and "device='cpu'" in str(e.value)
    with pytest.raises(DSLError, match="takes 3 tensors"):
        vector_add(np.zeros(4), device="cpu")
    with pytest.raises(DSLError, match="numpy array or a CPU torch tensor"):
        vector_add([1.0], [2.0], [0.0], device="cpu")
