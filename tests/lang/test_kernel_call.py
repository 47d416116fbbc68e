"""A kernel call runs through the runner registered for its device (`argus.lang.call`): the DSL imports nothing
above its layer, the CPU's runner is `argus.runtime.cpu` (the interpreter, with the runtime's check of the sizes
against the kernel's assumptions), and ``import argus`` alone is enough to call a kernel on the CPU."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import argus
import argus.lang as T
from argus.lang import DSLError, call


@argus.kernel
def double(X: T.Tensor[("N",), T.f32], Y: T.Tensor[("N",), T.f32]):  # noqa: F821
    with T.grid(T.cdiv(N, 512), threads=128) as (bx,):  # noqa: F821
        x = T.alloc_fragment((512,), T.f32)
        T.copy(X.tile(bx, 512), x)
        T.copy(x * 2.0, Y.tile(bx, 512))


def test_import_argus_alone_runs_a_kernel_on_the_cpu(tmp_path: Path) -> None:
    script = tmp_path / "double.py"
    script.write_text(
        textwrap.dedent(
            """
            import sys

            import numpy as np

            import argus
            import argus.lang as T


            @argus.kernel
            def double(X: T.Tensor[("N",), T.f32], Y: T.Tensor[("N",), T.f32]):
                with T.grid(T.cdiv(N, 512), threads=128) as (bx,):
                    x = T.alloc_fragment((512,), T.f32)
                    T.copy(X.tile(bx, 512), x)
                    T.copy(x * 2.0, Y.tile(bx, 512))


            before = {m for m in ("argus.interp", "argus.runtime") if m in sys.modules}
            x = np.arange(1000, dtype=np.float32)
            y = np.zeros_like(x)
            double(x, y, device="cpu")
            assert np.array_equal(y, 2 * x)
            print("imported before the call:", sorted(before))
            """
        )
    )
    got = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert got.returncode == 0, got.stderr[-3000:]
    assert "imported before the call: []" in got.stdout  # the DSL imported neither; the call did


def test_the_cpu_runner_is_the_runtimes_and_runs_the_interpreter() -> None:
    from argus.runtime.cpu import run_on_cpu

    assert call.runner_for("cpu") is run_on_cpu
    x = np.linspace(-1.0, 1.0, 700, dtype=np.float32)
    y = np.zeros_like(x)
    double(x, y, device="cpu")
    assert np.array_equal(y, 2 * x)


def test_a_call_goes_through_the_registered_runner(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list = []
    monkeypatch.setattr(call, "_RUNNERS", {"cpu": lambda kernel, arrays: seen.append((kernel.name, sorted(arrays)))})
    double(np.zeros(10, np.float32), np.zeros(10, np.float32), device="cpu")
    assert seen == [("double", ["X", "Y"])]


def test_a_device_without_a_runner_is_refused_clearly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(call, "_RUNNERS", {})
    monkeypatch.setattr(call, "DEVICE_PACKAGES", {"cpu": "argus_no_such_package"})
    with pytest.raises(DSLError) as info:
        double(np.zeros(10, np.float32), np.zeros(10, np.float32), device="cpu")
    err = info.value
    assert err.code == "DSL_NO_RUNNER" and "'cpu'" in err.message and "argus_no_such_package" in err.message
    assert err.hint is not None and "import argus_no_such_package" in err.hint
