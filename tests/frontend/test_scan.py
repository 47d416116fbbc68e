"""The scan family against PyTorch: cumsum along the last and along other dimensions, at sizes that leave a masked
last tile and stream the scanned axis in several tiles, in float32, float16 and bfloat16; each generated kernel
verified and checked on the CPU interpreter against its group's FX subgraph in float64, and the emitted ModelNew
against the problem's own Model. The level-1 problems are pinned: `SOLVED` end to end through `solve` (the gate
included), among them the reverse, exclusive and masked scans."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from argus.eval.candidates import import_file
from argus.frontend import capture, generate, solve
from argus.frontend.emit import emit
from argus.frontend.families import scan
from argus.frontend.partition import Family
from argus.frontend.solve import check_kernel
from argus.verify import verify

#: Level-1 problems the scan family solves, at small sizes (rows longer than one tile, not a multiple of it).
SOLVED: dict[str, dict[str, Any]] = {
    "89_cumsum": {"batch_size": 3, "input_shape": (301,)},
    "91_cumsum_reverse": {"batch_size": 3, "input_shape": (301,)},  # flip, cumsum, flip: one reverse scan
    "92_cumsum_exclusive": {"batch_size": 3, "input_shape": (301,)},  # narrow, cumsum, cat with zeros: one kernel
    "93_masked_cumsum": {"batch_size": 3, "input_shape": (301,)},  # x * mask (a boolean input), then the scan
}

#: Reverse and exclusive scans (the layout operators around the cumsum absorbed), on both kernels.
PATTERNS: dict[str, tuple[str, tuple[int, ...]]] = {
    "reverse_last": ("torch.cumsum(x.flip(1), dim=1).flip(1)", (5, 301)),
    "reverse_last_negative": ("torch.cumsum(x.flip(-1), dim=-1).flip(-1)", (2, 3, 133)),
    "reverse_middle": ("torch.cumsum(x.flip(1), dim=1).flip(1)", (2, 19, 5)),
    "reverse_first": ("torch.cumsum(x.flip(0), dim=0).flip(0)", (13, 40)),
    "exclusive_last": (
        "torch.cat((torch.zeros_like(x.select(1, 0).unsqueeze(1)), torch.cumsum(x.narrow(1, 0, x.size(1) - 1), 1)), 1)",
        (5, 300),
    ),
    "exclusive_middle": (
        "torch.cat((torch.zeros_like(x.select(1, 0).unsqueeze(1)), torch.cumsum(x.narrow(1, 0, x.size(1) - 1), 1)), 1)",
        (2, 19, 5),
    ),
}

CASES: dict[str, tuple[str, tuple[int, ...]]] = {
    "last": ("torch.cumsum(x, dim=-1)", (5, 301)),
    "last_short": ("torch.cumsum(x, dim=2)", (2, 3, 7)),
    "middle": ("torch.cumsum(x, dim=1)", (2, 19, 5)),
    "middle_wide": ("torch.cumsum(x, dim=1)", (2, 6, 150)),
    "first": ("torch.cumsum(x, dim=0) * 0.5", (13, 3, 4)),
    "vector": ("torch.cumsum(x, dim=0)", (333,)),
}


def _random_shapes(count: int, seed: int) -> list[tuple[tuple[int, ...], int]]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        rank = rng.randint(1, 3)
        shape = tuple(rng.randint(1, 9) for _ in range(rank))
        dim = rng.randrange(rank)
        shape = shape[:dim] + (rng.randint(2, 200),) + shape[dim + 1 :]
        out.append((shape, dim - rank if rng.random() < 0.3 else dim))
    return out


RANDOM = _random_shapes(5, seed=7)


def _check(problem: Callable[..., Path], body: str, x: torch.Tensor, name: str, tolerance: float) -> list[Any]:
    dims = ", ".join(map(str, x.shape))
    cast = "" if x.dtype == torch.float32 else f".to({x.dtype})"
    path = problem(body, inputs=f"[torch.randn({dims}){cast}]", name=name)
    cap = capture(path)
    part, sources = generate(cap)
    assert not part.uncovered, [u.line() for u in part.uncovered]
    target = path.with_name(f"{name}_solution.py")
    target.write_text(emit(part, sources))
    module = import_file(target, f"argus_test_{name}")
    groups = [g for g in part.groups if g.family is Family.SCAN]
    assert groups
    for g in groups:
        kernel = getattr(module, g.kernel)
        result = verify(kernel)
        assert result.verdict.value == "verified" and not result.unknowns, result.render_text()
        error, tol = check_kernel(kernel, sources[g.kernel], g.subgraph, seed=2)
        assert error <= tol, (g.kernel, error)
    model = cap.task.build(cap.task.model, 0, "cpu")
    want = model.double()(x.double())
    got = module.ModelNew()(x)
    scale = max(1.0, float(want.abs().max()))
    torch.testing.assert_close(got.double() / scale, want / scale, rtol=0, atol=tolerance)
    return [sources[g.kernel] for g in groups]


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_kernel_verifies_and_matches_torch(problem: Callable[..., Path], case: str) -> None:
    body, shape = CASES[case]
    _check(problem, body, torch.randn(*shape), case, 1e-5)


@pytest.mark.parametrize("shape_dim", RANDOM, ids=lambda s: f"{'x'.join(map(str, s[0]))}_dim{s[1]}")
def test_random_shapes_and_dimensions(problem: Callable[..., Path], shape_dim: tuple[tuple[int, ...], int]) -> None:
    shape, dim = shape_dim
    name = f"random_{'x'.join(map(str, shape))}_{dim + 10}"
    _check(problem, f"torch.cumsum(x, dim={dim})", torch.randn(*shape), name, 1e-5)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16_bit_inputs_sum_in_f32(problem: Callable[..., Path], dtype: str) -> None:
    x = torch.randn(6, 140).to(getattr(torch, dtype))
    (src,) = _check(problem, "torch.cumsum(x, dim=1)", x, dtype, 2e-2)
    assert src.dtypes[src.inputs[0]] == scan.DTYPES[dtype] and "T.alloc_fragment((BM, BN), T.f32)" in src.kernel


def test_the_tiles_are_declared_policies(problem: Callable[..., Path]) -> None:
    path = problem("torch.cumsum(x, dim=1)", inputs="[torch.randn(3, 500)]")
    part, sources = generate(capture(path))
    (g,) = part.groups
    src = sources[g.kernel]
    assert '"tile_shape": ("BM", "BN")' in src.kernel and "T.serial(T.cdiv(N, BN))" in src.kernel
    target = path.with_name("policy_solution.py")
    target.write_text(emit(part, sources))
    kernel = getattr(import_file(target, "argus_test_scan_policy"), g.kernel)
    assert kernel.trace(BM=8, BN=64).policies.tile_shape == (8, 64)
    assert verify(kernel, BM=8, BN=64).verdict.value == "verified"
    x = torch.randn(3, 500)
    y = torch.empty_like(x)
    kernel(x, y, device="cpu", BM=8, BN=64)
    torch.testing.assert_close(y, torch.cumsum(x, 1), rtol=1e-5, atol=1e-5)


def test_what_the_template_refuses_says_why(problem: Callable[..., Path]) -> None:
    path = problem("torch.cumprod(x.long(), dim=1) + torch.cumsum(x.long(), dim=1)", inputs="[torch.randn(3, 8)]")
    part, _ = generate(capture(path))
    reasons = {u.op: u.reason for u in part.uncovered if u.family is Family.SCAN}
    assert "cumsum only" in reasons["aten.cumprod.default"]  # an integer one: float ones are decomposed
    assert "torch.int64" in reasons["aten.cumsum.default"]


@pytest.mark.parametrize("name", sorted(SOLVED))
def test_the_coverage_table_level1(kernelbench_dir: Path, tmp_path: Path, name: str) -> None:
    result = solve(kernelbench_dir / "level1" / f"{name}.py", sizes=SOLVED[name], out=tmp_path / f"{name}.py")
    assert result.status() == "solved", (result.uncovered, [k.to_json() for k in result.kernels], result.gate)
    assert [g["family"] for g in result.groups][-1] == "scan"  # 93: the mask's multiply first
    assert all(k.verdict == "verified" and k.interpreter_ok for k in result.kernels)
    text = Path(result.solution).read_text()
    forward = text[text.index("    def forward(") :]
    assert "torch.ops" not in forward and "_launch(" in forward


@pytest.mark.parametrize("case", sorted(PATTERNS))
def test_reverse_and_exclusive_scans_are_one_kernel(problem: Callable[..., Path], case: str) -> None:
    body, shape = PATTERNS[case]
    (src,) = _check(problem, body, torch.randn(*shape), case, 1e-5)
    assert ("reverse" if case.startswith("reverse") else "exclusive") in src.kernel


def test_flips_and_slices_that_do_not_make_the_pattern_stay_with_pytorch(problem: Callable[..., Path]) -> None:
    """A flip on another axis than the scan's, one flip only, and a narrow that drops more than the last element:
    the cumsum is a plain scan kernel and the layout operators are left to the layout family or PyTorch (never a
    wrong absorption)."""
    bodies = {
        "other_axis": "torch.cumsum(x.flip(0), dim=1).flip(0)",
        "one_flip": "torch.cumsum(x.flip(1), dim=1)",
        "short_narrow": "torch.cat((torch.zeros_like(x.narrow(1, 0, 2)), "
        "torch.cumsum(x.narrow(1, 0, x.size(1) - 2), 1)), 1)",
    }
    for name, body in bodies.items():
        path = problem(body, inputs="[torch.randn(3, 8)]", name=name)
        part, sources = generate(capture(path))
        (g,) = [g for g in part.groups if g.family is Family.SCAN]
        assert g.ops == ["cumsum"], (name, g.ops)
        assert "reverse" not in sources[g.kernel].kernel and "exclusive" not in sources[g.kernel].kernel
        # the layout operators are the layout family's kernels (a flip of the rows, since session 75) or PyTorch's (a
        # flip of the innermost axis: a reversed run), never absorbed into the scan
        assert all(u.family is not Family.SCAN for u in part.uncovered), name
        assert part.uncovered or any(g.family is Family.LAYOUT for g in part.groups), name
