"""`argus solve` on a GPU: every kernel family's solution checked compiled on the device (through the solution's
own `_launch`), then judged there with timing against eager and `torch.compile` — the path a user with a GPU takes
by default. Sizes a little larger than the CPU tests' (grids of many blocks, rows past one tile) and small enough to
run in seconds; KernelBench's own sizes are measured in `benchmarks/results/2026-11-29-solve-families/`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from argus.eval.gate import GateOptions
from argus.frontend import solve

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU visible to torch"),
]

#: One or two problems per family, at sizes of many blocks.
PROBLEMS: dict[str, dict[str, Any]] = {
    "21_Sigmoid": {"batch_size": 64, "dim": 4099},
    "23_Softmax": {"batch_size": 64, "dim": 4099},
    "89_cumsum": {"batch_size": 64, "input_shape": (4099,)},
    "47_Sum_reduction_over_a_dimension": {"batch_size": 16, "dim1": 257, "dim2": 255},
    "51_Argmax_over_a_dimension": {"batch_size": 16, "dim1": 257, "dim2": 255},
    "98_KLDivLoss": {"batch_size": 4096, "input_shape": (4096,)},  # a whole-tensor sum of 2^24: two stages
    "42_Max_Pooling_2D": {"batch_size": 4, "channels": 8, "height": 67, "width": 65},
    "46_Average_Pooling_3D": {"batch_size": 2, "channels": 4, "depth": 17, "height": 18, "width": 19},
    "34_InstanceNorm": {"batch_size": 4, "features": 8, "dim1": 67, "dim2": 65},
    # its parameters from the problem; 2.1e6 elements, in three stages (partial sums, totals, normalizing pass)
    "33_BatchNorm": {"batch_size": 8, "features": 8, "dim1": 181, "dim2": 183},
    "35_GroupNorm_": {"batch_size": 4, "features": 16, "num_groups": 4, "dim1": 181, "dim2": 183},
}

#: Problems whose sizes take a multi-kernel `argus.kernels.stages.Stages`.
STAGED = {"98_KLDivLoss", "33_BatchNorm", "35_GroupNorm_"}


@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_solve_checks_and_judges_on_the_gpu(kernelbench_dir: Path, tmp_path: Path, name: str) -> None:
    options = GateOptions(device="cuda", trials=2, reps=5, baselines=("eager",))
    result = solve(kernelbench_dir / "level1" / f"{name}.py", sizes=PROBLEMS[name], out=tmp_path / "s.py",
                   options=options)  # fmt: skip
    assert result.status() == "solved", (result.uncovered, [k.to_json() for k in result.kernels], result.gate)
    for k in result.kernels:
        assert k.checked_on == "cuda" and k.interpreter_ok and not k.skipped, k.to_json()
    profile = result.gate.stage("profile")
    assert profile is not None and profile.details.get("speedup", {}).get("eager") is not None
    assert ("Stages(" in (tmp_path / "s.py").read_text()) == (name in STAGED)


def test_a_partial_solution_runs_its_aten_calls_on_the_gpu(kernelbench_dir: Path, tmp_path: Path) -> None:
    """14_Matmul_for_upper_triangular_matrices keeps ATen calls with a device argument (its mask's ``arange``s,
    captured on the CPU): on the GPU they must make their tensors there (RUNTIME_ARG_DEVICE before the fix)."""
    options = GateOptions(device="cuda", trials=2, reps=5, baselines=("eager",))
    problem = kernelbench_dir / "level1" / "14_Matmul_for_upper_triangular_matrices.py"
    result = solve(problem, sizes={"N": 512}, out=tmp_path / "s.py", options=options)
    assert result.correct and result.status() == "not covered", result.gate


def test_cross_entropy_at_its_own_batch_and_classes_on_the_gpu(kernelbench_dir: Path, tmp_path: Path) -> None:
    """95_CrossEntropyLoss at a real size: the rows kernel (one pass over the logits) and the sums after it,
    compiled and checked against PyTorch on the GPU, the solution judged."""
    options = GateOptions(device="cuda", trials=2, reps=5, baselines=("eager",))
    sizes = {"batch_size": 4096, "num_classes": 1000}
    result = solve(kernelbench_dir / "level1" / "95_CrossEntropyLoss.py", sizes=sizes, out=tmp_path / "s.py",
                   options=options)  # fmt: skip
    assert result.status() == "solved", (result.uncovered, result.gate)


def test_tuning_times_the_candidates_on_the_gpu_and_caches_them(
    kernelbench_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from argus.agent.tune import Tuner

    monkeypatch.setenv("ARGUS_CACHE_DIR", str(tmp_path / "cache"))
    options = GateOptions(device="cuda", trials=2, reps=5, baselines=("eager",))
    sizes = {"batch_size": 64, "dim": 4099}
    tuner = Tuner(3, store=tmp_path / "runs.db")
    result = solve(kernelbench_dir / "level1" / "21_Sigmoid.py", sizes=sizes, out=tmp_path / "s.py", options=options,
                   tune=tuner)  # fmt: skip
    assert result.status() == "solved", result.gate
    (outcome,) = tuner.outcomes
    assert outcome.metric == "gpu" and outcome.start_ms is not None, outcome
    assert list((tmp_path / "cache" / "tuned").glob("*.json"))
    again = Tuner(3, store=tmp_path / "runs.db")
    solve(kernelbench_dir / "level1" / "21_Sigmoid.py", sizes=sizes, out=tmp_path / "s2.py", options=options,
          judge=False, tune=again)  # fmt: skip
    assert again.outcomes[0].cached
