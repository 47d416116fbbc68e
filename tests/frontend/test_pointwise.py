"""The pointwise family against PyTorch: chains of elementwise operators at odd sizes (a masked last tile, sizes
that are not a multiple of anything), each generated kernel checked on the CPU interpreter against its group's FX
subgraph in float64, and the emitted ModelNew against the problem's own Model on the same inputs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from argus.eval.candidates import import_file
from argus.frontend import capture, generate, solve
from argus.frontend.emit import emit
from argus.frontend.solve import check_kernel
from argus.verify import verify

CASES = {
    "relu": "torch.relu(x)",
    "leaky_relu": "F.leaky_relu(x, 0.2)",
    "elu": "F.elu(x, alpha=0.7)",
    "selu": "torch.selu(x)",
    "gelu": "F.gelu(x)",
    "gelu_tanh": "F.gelu(x, approximate='tanh')",
    "hardtanh": "F.hardtanh(x, -0.5, 2.0)",
    "clamp": "torch.clamp(x, min=-0.25) * torch.clamp(x, max=0.5)",
    "softsign": "x / (1 + torch.abs(x))",
    "silu_softplus": "F.silu(x) + F.softplus(x, beta=2.0, threshold=1.0)",
    "hardswish": "F.hardswish(x) - F.hardsigmoid(x)",
    "exp_log": "torch.log(torch.exp(x) + 1.5) - torch.log1p(torch.abs(x))",
    "erf_tanh": "torch.erf(x) * torch.tanh(x) - torch.sigmoid(-x)",
    "pow": "torch.pow(x, 3.0) + x ** 2 - torch.sqrt(torch.abs(x))",
    "where": "torch.where(x > 0.1, x, -x * 0.5) + (x <= -1.0) * 1.0",
    "two_inputs": "torch.maximum(x, y) * (x - y) / (1.0 + y * y)",
    "scalar_left": "2.0 - x + 3.0 / (x * x + 1.0)",
    "rsqrt_reciprocal": "torch.rsqrt(x * x + 1.0) + torch.reciprocal(x * x + 2.0)",
}

SHAPES = [(1029,), (3, 37)]


def _solution(problem: Callable[..., Path], body: str, shape: tuple[int, ...], name: str) -> tuple[object, object]:
    dims = ", ".join(map(str, shape))
    path = problem(body, inputs=f"[torch.randn({dims}), torch.randn({dims})]", args="x, y", name=name)
    cap = capture(path)
    part, sources = generate(cap)
    assert part.groups and not part.uncovered, [u.line() for u in part.uncovered]
    target = path.with_name(f"{name}_solution.py")
    target.write_text(emit(part, sources))
    return cap, (part, sources, import_file(target, "argus_test_solution"))


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("case", sorted(CASES))
def test_each_kernel_matches_its_subgraph_and_the_solution_matches_the_model(
    problem: Callable[..., Path], case: str, shape: tuple[int, ...]
) -> None:
    cap, (part, sources, module) = _solution(problem, CASES[case], shape, case)
    for g in part.groups:
        error, tolerance = check_kernel(getattr(module, g.kernel), sources[g.kernel], g.subgraph, seed=3)
        assert error <= tolerance, (g.kernel, g.ops, error)
    model = cap.task.build(cap.task.model, 0, "cpu")
    solution = module.ModelNew()
    x, y = torch.randn(*shape, dtype=torch.float64), torch.randn(*shape, dtype=torch.float64)
    want = model.double()(x, y)
    got = solution(x.float(), y.float())
    torch.testing.assert_close(got.double(), want, rtol=1e-4, atol=1e-4)


def test_bf16_inputs_compute_in_f32_and_round_once_per_operator(problem: Callable[..., Path]) -> None:
    path = problem(
        "torch.tanh(x) * y + 1.0", inputs="[torch.randn(5, 33).bfloat16(), torch.randn(5, 33).bfloat16()]", args="x, y"
    )
    part, sources = generate(capture(path))
    target = path.with_name("bf16_solution.py")
    target.write_text(emit(part, sources))
    module = import_file(target, "argus_test_solution")
    (g,) = part.groups
    assert sources[g.kernel].dtypes["x"] == "bf16"
    error, tolerance = check_kernel(getattr(module, g.kernel), sources[g.kernel], g.subgraph)
    assert tolerance == 2e-2 and error <= tolerance


def test_a_generated_kernel_verifies_and_names_its_lines(problem: Callable[..., Path]) -> None:
    cap, (part, sources, module) = _solution(problem, CASES["gelu_tanh"], (3, 37), "verified")
    (g,) = part.groups
    result = verify(getattr(module, g.kernel))
    assert result.verdict.value == "verified", result.render_text()
    text = sources[g.kernel].kernel
    assert "T.tanh(" in text and "BLOCK: int = 1024" in text and '"tile_shape": "BLOCK"' in text


def test_a_wrong_kernel_is_caught_by_the_subgraph_check(problem: Callable[..., Path]) -> None:
    cap, (part, sources, module) = _solution(problem, "torch.sigmoid(x) * y", (3, 37), "wrong")
    (g,) = part.groups
    src = sources[g.kernel]
    broken = src.kernel.replace("T.sigmoid(", "T.tanh(")
    assert broken != src.kernel
    path = Path(module.__file__)
    path.write_text(path.read_text().replace(src.kernel, broken))
    wrong = import_file(path, "argus_test_wrong")
    error, tolerance = check_kernel(getattr(wrong, g.kernel), src, g.subgraph)
    assert error > tolerance


#: A boolean mask the model is given: read as 1.0/0.0 (flat, and broadcast per row in the tiled kernel).
MASKS = {
    "multiply": ("x * mask", "[torch.randn(3, 37), torch.rand(3, 37) < 0.5]"),
    "where": ("torch.where(mask, x, -2.0 * x)", "[torch.randn(3, 37), torch.rand(3, 37) < 0.5]"),
    "per_row": ("x * mask + 1.0", "[torch.randn(3, 37), torch.rand(3, 1) < 0.5]"),
    "bf16": ("x * mask", "[torch.randn(3, 37).bfloat16(), torch.rand(3, 37) < 0.5]"),
}


@pytest.mark.parametrize("case", sorted(MASKS))
def test_a_boolean_input_is_read_as_one_and_zero(problem: Callable[..., Path], case: str) -> None:
    body, inputs = MASKS[case]
    path = problem(body, inputs=inputs, args="x, mask", name=f"mask_{case}")
    cap = capture(path)
    part, sources = generate(cap)
    assert [g.family.value for g in part.groups] == ["pointwise"] and not part.uncovered, part.uncovered
    (g,) = part.groups
    src = sources[g.kernel]
    assert src.dtypes["mask"] == "boolean" and "T.boolean]" in src.kernel
    target = path.with_name(f"mask_{case}_solution.py")
    target.write_text(emit(part, sources))
    module = import_file(target, f"argus_test_mask_{case}")
    kernel = getattr(module, g.kernel)
    assert verify(kernel).verdict.value == "verified"
    error, tolerance = check_kernel(kernel, src, g.subgraph, seed=5)
    assert error <= tolerance
    x, mask = cap.example
    want = cap.task.build(cap.task.model, 0, "cpu")(x.double(), mask)
    got = module.ModelNew()(x, mask)
    assert got.dtype == x.dtype  # bf16 * bool is bf16, as in PyTorch
    torch.testing.assert_close(got.double(), want.double(), rtol=1e-2 if case == "bf16" else 1e-6, atol=1e-5)


def test_a_boolean_input_compiles_for_hopper(problem: Callable[..., Path]) -> None:
    """NVRTC for sm_90a, no GPU needed: the mask is read as bytes and converted."""
    from argus.backend.cuda.codegen import compile_kernel

    path = problem("x * mask", inputs="[torch.randn(3, 37), torch.rand(3, 37) < 0.5]", args="x, mask", name="mask_sass")
    part, sources = generate(capture(path))
    target = path.with_name("mask_sass_solution.py")
    target.write_text(emit(part, sources))
    (g,) = part.groups
    compiled = compile_kernel(getattr(import_file(target, "argus_test_mask_sass"), g.kernel), cache=False)
    mix = compiled.instruction_mix()
    assert mix.get("LDG") and mix.get("STG") and compiled.resources.spill_stores == 0


def test_a_boolean_computed_outside_the_kernel_is_read_as_a_mask(problem: Callable[..., Path], tmp_path: Path) -> None:
    """A boolean computed outside the kernel (here by another kernel, after operators no template takes) is read
    into the kernel as 1.0/0.0, like a mask the model is given (before session 27 it was refused), and the partial
    solution is still correct."""
    path = problem("x * torch.isin(x, y)", inputs="[torch.randn(3, 8), torch.randn(3, 8)]", args="x, y", name="isin")
    result = solve(path, out=tmp_path / "isin_solution.py")
    # isin's decomposition (a sort, a search) stays in PyTorch (its int64 indexing is a row gather since session
    # 76); its last comparison is a kernel that stores a bool tensor, and the product a kernel that reads it
    assert {u["op"] for u in result.uncovered} >= {"aten.sort.default"}, result.uncovered
    assert [g["ops"] for g in result.groups if g["family"] == "pointwise"] == [["eq"], ["mul"]], result.groups
    assert all(k.verdict == "verified" and k.interpreter_ok for k in result.kernels)
    assert result.correct and result.status() == "not covered"


@pytest.mark.parametrize(
    ("body", "inputs", "args"),
    [
        # another kernel's integers (argmax's indices) and the model's own, each converted to float32
        (
            "torch.argmax(x, dim=1).float() * 0.5 + t.float()",
            "[torch.randn(4, 9, 5), torch.randint(0, 7, (4, 5))]",
            "x, t",
        ),
        # int32 promoted by arithmetic with a float32 tensor (torch converts the integers first), broadcast
        ("x * t + 1.0", "[torch.randn(3, 6), torch.randint(-50, 50, (6,), dtype=torch.int32)]", "x, t"),
    ],
)
def test_integer_tensors_from_outside_are_read_as_float32(
    problem: Callable[..., Path], tmp_path: Path, body: str, inputs: str, args: str
) -> None:
    result = solve(problem(body, inputs=inputs, args=args), out=tmp_path / "s.py")
    assert result.status() == "solved", (result.uncovered, result.gate)
    assert all(k.verdict == "verified" and k.interpreter_ok for k in result.kernels), [
        k.to_json() for k in result.kernels
    ]
    assert result.gate.verdict == "accepted", result.gate


def test_integer_tensors_from_outside_are_not_taken_where_they_stay_integers_or_become_16_bit(
    problem: Callable[..., Path],
) -> None:
    # t + 1 stays int64 (no bound is known for t's values), t.half() would round twice through float32
    path = problem(
        "(t + 1).float().sum() + t.half().float().sum()", inputs="[torch.randint(0, 9, (4, 6))]", args="t", name="ints"
    )
    part, _ = generate(capture(path))
    reasons = {u.op: u.reason for u in part.uncovered}
    assert "integer tensor from outside the kernel" in reasons["aten.add.Tensor"], part.uncovered
    assert "integer tensor from outside the kernel" in reasons["aten._to_copy.default"], part.uncovered
