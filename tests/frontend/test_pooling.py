"""The pooling family (`argus.frontend.families.pooling`): KernelBench's level-1 pooling problems solved end to end
at small sizes (the coverage table pins them), the template on seeded random configurations (1-d, 2-d, 3-d, max and
average, stride, padding, dilation, ceil_mode, count_include_pad, divisor_override, odd sizes, 16-bit dtypes), each
kernel verified and matched against PyTorch on the interpreter, and what the template refuses. Large windows take
the separable shape (`separable`): seeded random configurations of it (windows of 5 to 11, depth folded in for 3-d,
16-bit dtypes), level-1 45's configuration, and its tile policy, each verified and matched the same way."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import pytest

from argus.frontend import solve
from argus.frontend.capture import capture
from argus.frontend.families import TEMPLATES
from argus.frontend.families.pooling import SEPARABLE_WINDOW, read_pool
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
    # the shape rule: only 45's 11 x 11 window is large; the others keep the staged kernel they were tuned with
    assert ("# separable:" in text) == (name == "45_Average_Pooling_2D")


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


def _separable_configurations(count: int, seed: int = 11) -> list[tuple[str, str, str]]:
    """(id, forward body, inputs) of `count` random valid pooling calls whose (height x width) window is larger
    than SEPARABLE_WINDOW (kernels of 5 to 11, 17 to 24 for a 1-d pool), at small odd sizes."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        rank = (2, 2, 3, 1)[i % 4]
        kind = ("max", "avg")[(i // 4 + i) % 2]
        while True:
            k = [rng.randint(17, 24)] if rank == 1 else [rng.randint(5, 11) for _ in range(2)]
            if rank == 3:
                k = [rng.randint(1, 3), *k]
            if k[-1] * (k[-2] if rank > 1 else 1) > SEPARABLE_WINDOW:
                break
        s = [rng.randint(1, kk) for kk in k]
        p = [rng.randint(0, kk // 2) for kk in k]
        d = [rng.randint(1, 2) for _ in k] if kind == "max" else [1] * rank
        # each size covers one window (with its padding) and a few strides more, odd where it can
        sizes = [
            max(1, dd * (kk - 1) + 1 - 2 * pp) + rng.randint(0, 3 * ss)
            for kk, ss, pp, dd in zip(k, s, p, d, strict=True)
        ]
        if rank == 3:
            sizes[0] = min(sizes[0], 7)
        ceil = rng.random() < 0.5
        dtype = ("torch.float32", "torch.float16", "torch.bfloat16")[i % 3]
        shape = ", ".join(map(str, [2, 3, *sizes]))
        if kind == "max":
            body = f"F.max_pool{rank}d(x, {k}, {s}, {p}, {d}, ceil_mode={ceil})"
        else:
            include = rng.random() < 0.5
            override = rng.choice((None, None, 7)) if rank > 1 else None
            extra = f", divisor_override={override}" if rank > 1 else ""
            body = f"F.avg_pool{rank}d(x, {k}, {s}, {p}, ceil_mode={ceil}, count_include_pad={include}{extra})"
        out.append((f"separable-{kind}{rank}d-{i}", body, f"[torch.randn({shape}, dtype={dtype})]"))
    return out


SEPARABLE = _separable_configurations(12)


@pytest.mark.parametrize(("body", "inputs"), [c[1:] for c in SEPARABLE], ids=[c[0] for c in SEPARABLE])
def test_random_large_windows_take_the_separable_shape_verify_and_match_torch(
    problem: Callable[..., Path], tmp_path: Path, body: str, inputs: str
) -> None:
    result = solve(problem(body, inputs=inputs), out=tmp_path / "s.py", judge=False)
    assert result.covered, result.uncovered
    assert [g["family"] for g in result.groups] == ["pooling"], result.groups
    assert "# separable:" in Path(result.solution).read_text()
    (kernel,) = result.kernels
    assert kernel.verdict == "verified", kernel.verify_summary
    assert kernel.interpreter_ok, (kernel.interpreter_error, kernel.tolerance)
    # the solution on the interpreter again, a maximum on negative inputs: padding that entered it as 0 rather
    # than -inf would win there (on the solver's normal inputs some element of a large window nearly always wins)
    import torch
    import torch.nn.functional as F

    from argus.eval.candidates import import_file

    (x,) = eval(inputs, {"torch": torch})
    if body.startswith("F.max"):
        x = -1.0 - x.abs()
    want = eval(body, {"F": F, "x": x})
    got = import_file(Path(result.solution), "pool_solution").ModelNew()(x)
    close = {} if x.dtype == torch.float32 else {"rtol": 1e-2, "atol": 1e-2}
    torch.testing.assert_close(got, want, **close)


def test_level1_45_at_a_small_size_takes_the_separable_shape_and_matches_torch(
    kernelbench_dir: Path, tmp_path: Path
) -> None:
    import torch

    from argus.eval.candidates import import_file

    sizes = {"batch_size": 1, "channels": 2, "height": 67, "width": 67}
    path = kernelbench_dir / "level1" / "45_Average_Pooling_2D.py"
    result = solve(path, sizes=sizes, out=tmp_path / "s.py", judge=False)
    (kernel,) = result.kernels
    assert kernel.verdict == "verified" and kernel.interpreter_ok, (kernel.verify_summary, kernel.interpreter_error)
    text = Path(result.solution).read_text()
    # the window's 11 rows are loaded and combined in registers, its 11 columns read from one combined row
    assert "for kh in T.unroll(11):" in text and "T.copy(row + seg, row)" in text
    assert "sx = T.alloc_shared((1, 1, BH, 11 * QW), T.f32" in text
    pool = import_file(Path(result.solution), "pool45").pooling_0
    x = torch.randn(1, 2, 67, 67)
    want = torch.nn.functional.avg_pool2d(x, 11)
    got = torch.zeros_like(want)
    for tile in ({}, {"BH": 1, "BW": 128}):  # the default (4, 32) for a 6-wide output, and 45's full-size one
        got.zero_()
        pool(x.view(2, 1, 67, 67), got.view(2, 1, 6, 6), device="cpu", **tile)
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)


def test_the_separable_tile_policy_verifies_and_matches_at_other_tiles(
    problem: Callable[..., Path], tmp_path: Path
) -> None:
    """A 3-d max pool with a 5 x 6 window (depth folded into the rows' loads) at tiles other than the default:
    several rows per block, a tile wider than the output, a 16-bit dtype whose row loads take 16-byte runs."""
    import torch

    from argus.eval.candidates import import_file
    from argus.verify import verify

    call = "F.max_pool3d(x, (2, 5, 6), (1, 2, 3), (1, 2, 1), (2, 1, 2), ceil_mode=True)"
    path = problem(call, inputs="[-1.0 - torch.rand(1, 2, 5, 13, 29, dtype=torch.float16)]")
    result = solve(path, out=tmp_path / "s.py", judge=False)
    kernel = import_file(Path(result.solution), "pool_separable").pooling_0
    assert kernel.policy_params == {"tile_shape": ("BH", "BW")}
    assert "# separable:" in Path(result.solution).read_text()
    x = -1.0 - torch.rand(1, 2, 5, 13, 29, dtype=torch.float16)  # negative: a padding read as 0 would win
    want = torch.nn.functional.max_pool3d(x, (2, 5, 6), (1, 2, 3), (1, 2, 1), (2, 1, 2), ceil_mode=True)
    for bh, bw in ((1, 128), (2, 64), (8, 16)):
        assert verify(kernel, BH=bh, BW=bw).verdict.value == "verified", (bh, bw)
        got = torch.zeros_like(want)
        kernel(x.view(2, *x.shape[2:]), got.view(2, *want.shape[2:]), device="cpu", BH=bh, BW=bw)
        assert torch.equal(got, want), (bh, bw)


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
    # (uneven average pooling is products since session 76: the uneven maximum stays the pooling family's refusal)
    adaptive = problem("F.adaptive_max_pool2d(x, 3)", inputs="[torch.randn(1, 2, 7, 7)]", name="adaptive")
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
