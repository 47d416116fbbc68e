"""The pooling family (`argus.frontend.families.pooling`): KernelBench's level-1 pooling problems solved end to end
at small sizes (the coverage table pins them), the template on seeded random configurations (1-d, 2-d, 3-d, max and
average, stride, padding, dilation, ceil_mode, count_include_pad, divisor_override, odd sizes, 16-bit dtypes), each
kernel verified and matched against PyTorch on the interpreter, and what the template refuses."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import pytest

from argus.frontend import solve
from argus.frontend.capture import capture
from argus.frontend.families import TEMPLATES
from argus.frontend.families.pooling import read_pool
from argus.frontend.partition import Family, partition

#: Level-1 pooling problems `argus solve` solves, with the small (odd) sizes the test runs them at.
SOLVED: dict[str, dict[str, int]] = {
    "41_Max_Pooling_1D": {"batch_size": 2, "features": 3, "sequence_length": 37},
    "42_Max_Pooling_2D": {"batch_size": 2, "channels": 3, "height": 11, "width": 13},
    "43_Max_Pooling_3D": {"batch_size": 1, "channels": 2, "dim1": 9, "dim2": 8, "dim3": 11},
    "44_Average_Pooling_1D": {"batch_size": 2, "in_channels": 3, "input_length": 37},
    "45_Average_Pooling_2D": {"batch_size": 1, "channels": 2, "height": 23, "width": 25},
    "46_Average_Pooling_3D": {"batch_size": 1, "channels": 2, "depth": 7, "height": 8, "width": 9},
}


@pytest.mark.parametrize("name", sorted(SOLVED))
def test_the_pooling_coverage_table_level1(kernelbench_dir: Path, tmp_path: Path, name: str) -> None:
    result = solve(kernelbench_dir / "level1" / f"{name}.py", sizes=SOLVED[name], out=tmp_path / f"{name}.py")
    assert result.status() == "solved", (result.uncovered, [k.to_json() for k in result.kernels], result.gate)
    assert [g["family"] for g in result.groups] == ["pooling"]
    assert all(k.verdict == "verified" and k.interpreter_ok for k in result.kernels)
    assert result.gate.verdict == "accepted"
    text = Path(result.solution).read_text()
    forward = text[text.index("    def forward(") :]
    # every compute op is a kernel launch; a 1-d pool's unsqueeze and squeeze stay views
    assert "_launch(" in forward and "not covered" not in forward
    assert all("# view: no compute" in line for line in forward.splitlines() if "torch.ops" in line)


def _configurations(count: int, seed: int = 7) -> list[tuple[str, str, str]]:
    """(id, forward body, inputs) of `count` random valid pooling calls at small odd sizes."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        rank = (1, 2, 3)[i % 3]
        kind = ("max", "avg")[(i // 3) % 2]
        sizes = [rng.choice((5, 7, 9, 12)) if rank == 3 else rng.choice((9, 13, 20, 35)) for _ in range(rank)]
        k = [rng.randint(1, 3 if rank == 3 else 4) for _ in range(rank)]
        s = [rng.randint(1, 3) for _ in range(rank)]
        p = [rng.randint(0, kk // 2) for kk in k]
        ceil = rng.random() < 0.5
        dtype = rng.choice(("torch.float32", "torch.float32", "torch.float16"))
        shape = ", ".join(map(str, [2, 3, *sizes]))
        if kind == "max":
            d = [rng.randint(1, 2) for _ in range(rank)]
            body = f"F.max_pool{rank}d(x, {k}, {s}, {p}, {d}, ceil_mode={ceil})"
        else:
            include = rng.random() < 0.5
            override = rng.choice((None, None, 5)) if rank > 1 else None
            extra = f", divisor_override={override}" if rank > 1 else ""
            body = f"F.avg_pool{rank}d(x, {k}, {s}, {p}, ceil_mode={ceil}, count_include_pad={include}{extra})"
        out.append((f"{kind}{rank}d-{i}", body, f"[torch.randn({shape}, dtype={dtype})]"))
    return out


CONFIGURATIONS = _configurations(12)


@pytest.mark.parametrize(("body", "inputs"), [c[1:] for c in CONFIGURATIONS], ids=[c[0] for c in CONFIGURATIONS])
def test_random_configurations_verify_and_match_torch(
    problem: Callable[..., Path], tmp_path: Path, body: str, inputs: str
) -> None:
    result = solve(problem(body, inputs=inputs), out=tmp_path / "s.py", judge=False)
    assert result.covered, result.uncovered
    assert [g["family"] for g in result.groups] == ["pooling"], result.groups
    (kernel,) = result.kernels
    assert kernel.verdict == "verified", kernel.verify_summary
    assert kernel.interpreter_ok, (kernel.interpreter_error, kernel.tolerance)


def test_a_larger_tile_than_the_output_and_a_policy_change_still_match(
    problem: Callable[..., Path], tmp_path: Path
) -> None:
    import torch

    from argus.eval.candidates import import_file
    from argus.verify import verify

    path = problem("F.max_pool2d(x, 3, 2, 1)", inputs="[torch.randn(1, 2, 17, 9)]")
    result = solve(path, out=tmp_path / "s.py", judge=False)
    kernel = import_file(Path(result.solution), "pool_policy").pooling_0
    assert kernel.policy_params == {"tile_shape": ("BH", "BW")}
    assert verify(kernel, BH=8, BW=16).verdict.value == "verified"
    x = torch.randn(1, 2, 17, 9)
    want = torch.nn.functional.max_pool2d(x, 3, 2, 1)
    got = torch.zeros_like(want)
    kernel(x.view(2, 1, 17, 9), got.view(2, 1, *want.shape[2:]), device="cpu", BH=8, BW=16)
    assert torch.equal(got, want)


def test_used_indices_and_adaptive_pooling_are_refused_with_a_reason(
    problem: Callable[..., Path], tmp_path: Path
) -> None:
    both = problem("F.max_pool2d(x, 2, return_indices=True)", inputs="[torch.randn(1, 2, 6, 6)]", name="both")
    result = solve(both, out=tmp_path / "both.py", judge=False)
    (left,) = result.uncovered
    assert left["family"] == "pooling" and "indices output is used" in left["reason"]
    adaptive = problem("F.adaptive_avg_pool2d(x, 3)", inputs="[torch.randn(1, 2, 7, 7)]", name="adaptive")
    cap = capture(adaptive)
    nodes = [n for n in cap.graph_module.graph.nodes if n.op == "call_function"]
    reasons = [TEMPLATES[Family.POOLING].unsupported(n) for n in nodes if "pool" in str(n.target)]
    assert reasons and all(r is not None for r in reasons)


def test_read_pool_fills_the_defaults_as_pytorch_does(problem: Callable[..., Path]) -> None:
    cap = capture(problem("F.avg_pool3d(x, 3)", inputs="[torch.randn(2, 4, 7, 8, 9)]"))
    part = partition(cap)
    (group,) = part.groups
    node = next(n for n in group.subgraph.graph.nodes if n.op == "call_function")
    pool = read_pool(node)
    assert not isinstance(pool, str)
    assert (pool.kernel, pool.stride, pool.padding, pool.dilation) == ((3, 3, 3), (3, 3, 3), (0, 0, 0), (1, 1, 1))
    assert (pool.planes, pool.size, pool.out) == (8, (7, 8, 9), (2, 2, 3))
    assert pool.count_include_pad and not pool.ceil_mode and pool.divisor_override is None
