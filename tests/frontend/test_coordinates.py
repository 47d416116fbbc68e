"""Aranges as coordinates in the pointwise template (`argus.frontend.families.coordinates`): an ``arange`` of
constants, seen through views, is computed in the kernel that reads it from each element's own coordinates (never
read from memory), and the integer arithmetic on it (a triangular mask: a difference and a comparison of int64
values) runs in the kernel as 32-bit integers within the bounds its constants give. Each problem of our own is
solved through the gate (the interpreter in the sandbox) with every kernel verified; what the template does not take
(integers past 32 bits, an integer value that leaves its kernel, a view torch would copy) is left to PyTorch with the
reason, and the partial solution is still correct."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from argus.eval.gate import GateOptions
from argus.frontend import solve
from argus.frontend.families import coordinates, pointwise

#: name -> (forward body of ``x``, inputs, a line the kernel must hold): one pointwise kernel computing the arange
SOLVED: dict[str, tuple[str, str, str]] = {
    # an int64 arange compared with a constant, one value per column of a broadcast (4, 37)
    "columns": (
        "x * (torch.arange(37) < 5)",
        "[torch.randn(4, 37)]",
        "col = T.cast(T.index(cols, 0), T.i32) + bn * BN",
    ),
    # a float arange with a fractional step: start + step * index in float32
    "float_step": (
        "x + torch.arange(0.5, 0.5 + 0.25 * 37, 0.25)",
        "[torch.randn(4, 37)]",
        "T.cast(col, T.f32) * 0.25 + 0.5",
    ),
    # an arange along the rows, through an unsqueeze, times floats (int64 promoted to float32)
    "rows": (
        "x * torch.arange(5).unsqueeze(1)",
        "[torch.randn(5, 37)]",
        "row = T.cast(T.index(rows, 0), T.i32) + bm * BM",
    ),
    # the whole output: the flat kernel's element index
    "flat": ("x * torch.arange(300)", "[torch.randn(300)]", "element = T.cast(T.index(lanes, 0), T.i32) + bx * BLOCK"),
    # a permuted view: its index does not step through the output's last two dimensions as through one, so they stay
    # apart and the flat index is split by their extents
    "permuted": (
        "x + torch.arange(24).view(2, 3, 4).permute(2, 0, 1)",
        "[torch.randn(4, 2, 3)]",
        "index1 = element % 6",
    ),
    # a slice (an offset and a step) expanded over the rows
    "sliced": (
        "x * torch.arange(40)[3:40:2].unsqueeze(0).expand(5, 19)",
        "[torch.randn(5, 19)]",
        "col * 2 + 3",
    ),
    # three aranges on three dimensions: the first one varies along the grid's own dimension alone (the block index)
    "grid": (
        "x * (torch.arange(6).view(6, 1, 1) - torch.arange(7).view(1, 7, 1) + torch.arange(9))",
        "[torch.randn(6, 7, 9)]",
        "= row * 0 + bg",
    ),
    # a bfloat16 arange: computed in float32, rounded to its dtype
    "bfloat16": (
        "x * torch.arange(0.0, 3.7, 0.1, dtype=torch.bfloat16)",
        "[torch.randn(3, 37).bfloat16()]",
        "T.cast(T.cast(col, T.f32) * 0.1 + 0.0, T.bf16)",
    ),
    # integer arithmetic on an arange: abs, products, a clamp, and a true division by another arange
    "integer_ops": (
        "x * torch.clamp(torch.abs(torch.arange(37) - 18) * 3 - 4, min=0, max=30) / torch.arange(1, 38)",
        "[torch.randn(4, 37)]",
        "T.abs(",
    ),
    # a select between two constants on an integer comparison
    "select_constants": ("x + torch.where(torch.arange(37) > 10, 0.5, -1.5)", "[torch.randn(4, 37)]", "T.where("),
    # two triangular masks with diagonal offsets, one kernel
    "two_masks": (
        "torch.tril(x, diagonal=-2) + torch.triu(x, 3)",
        "[torch.randn(33, 45)]",
        "row = T.cast(T.index(rows, 0), T.i32) + bm * BM",
    ),
}

OPTIONS = GateOptions(trials=2, device="cpu")

#: name -> (forward body of ``x``, inputs, the group's operators): constant tensors (``full``; ``full_like``,
#: ``zeros_like`` and ``ones_like`` arrive as it) computed in the pointwise kernel that reads them
CONSTANTS: dict[str, tuple[str, str, list[str]]] = {
    "full_like_and_zeros_like": (
        "x * torch.full_like(x, 2.5) + torch.zeros_like(x)",
        "[torch.randn(3, 5, 7)]",
        ["full", "mul", "full", "add"],
    ),
    "full_broadcast_bf16": (
        "x - torch.full((5, 7), 0.25, dtype=torch.bfloat16)",
        "[torch.randn(3, 5, 7).bfloat16()]",
        ["full", "sub"],
    ),
    "integer_ones_like": ("x * torch.ones_like(x, dtype=torch.int64)", "[torch.randn(4, 9)]", ["full", "mul"]),
    # a constant another family reads (Swin V2's qkv bias: a cat of a parameter, zeros and a parameter) is stored
    "stored_for_a_cat": (
        "torch.cat([torch.tanh(x), torch.zeros_like(x)], dim=1)",
        "[torch.randn(3, 5)]",
        ["tanh", "full"],
    ),
}


@pytest.mark.parametrize("name", sorted(CONSTANTS))
def test_a_constant_tensor_is_computed_in_the_kernel_that_reads_it(
    problem: Callable[..., Path], tmp_path: Path, name: str
) -> None:
    body, inputs, ops = CONSTANTS[name]
    result = solve(problem(body, inputs=inputs, name=name), out=tmp_path / "s.py", options=OPTIONS)
    assert result.status() == "solved", (result.uncovered, [k.to_json() for k in result.kernels], result.gate)
    assert [(g["family"], g["ops"]) for g in result.groups][0] == ("pointwise", ops), result.groups
    assert all(k.verdict == "verified" and k.interpreter_ok for k in result.kernels)
    text = Path(result.solution).read_text()
    signature = text[text.index("def pointwise_0(") :].split("):", 1)[0]
    assert "FULL" not in signature.upper()  # no tensor parameter holds the constant: it is computed


@pytest.mark.parametrize("name", sorted(SOLVED))
def test_an_arange_read_by_a_pointwise_group_is_computed_in_its_kernel(
    problem: Callable[..., Path], tmp_path: Path, name: str
) -> None:
    body, inputs, line = SOLVED[name]
    result = solve(problem(body, inputs=inputs, name=name), out=tmp_path / "s.py", options=OPTIONS)
    assert result.status() == "solved", (result.uncovered, [k.to_json() for k in result.kernels], result.gate)
    (group,) = result.groups
    assert group["family"] == "pointwise" and group["ops"][0] == "arange"
    (report,) = result.kernels
    assert report.verdict == "verified" and " 0 unknown" in report.verify_summary and report.interpreter_ok
    text = Path(result.solution).read_text()
    kernel = text[text.index("def pointwise_0(") : text.index("class ModelNew")]
    assert line in kernel, kernel
    assert "arange" not in kernel.split("):", 1)[0]  # no tensor parameter holds the arange: it is computed
    forward = text[text.index("    def forward(") :]
    assert "torch.ops" not in forward and forward.count("_launch(") == 1


def test_a_triangular_mask_reads_its_product_once(kernelbench_dir: Path, tmp_path: Path) -> None:
    """Level 1's 14 at an odd size: the mask's two aranges, their int64 difference and the comparison are computed
    from each element's row and column in the kernel of the select, which reads the GEMM's result once."""
    problem = kernelbench_dir / "level1" / "14_Matmul_for_upper_triangular_matrices.py"
    result = solve(problem, sizes={"N": 37}, out=tmp_path / "s.py", judge=False)
    assert result.covered and [g["family"] for g in result.groups] == ["matmul-like", "pointwise"]
    ops = ["arange", "arange", "ge", "scalar_tensor", "sub", "unsqueeze", "unsqueeze", "where"]
    assert sorted(result.groups[1]["ops"]) == ops  # in graph order, which torch's versions differ on
    text = Path(result.solution).read_text()
    kernel = text[text.index("def pointwise_1(") : text.index("class ModelNew")]
    assert kernel.count("T.copy(") == 2  # one load (the product), one store
    assert "sub = col_tile - row_tile" in kernel and "ge = (sub >= 0)" in kernel
    forward = text[text.index("    def forward(") :]
    assert "_launch(pointwise_1, [mm, where], [(37, 37), (37, 37)])" in forward
    assert "_expect_shape(mm, (37, 37)" in forward  # written for the captured shape: the aranges' lengths


def test_a_float_arange_is_stored_by_a_kernel_of_no_input(problem: Callable[..., Path], tmp_path: Path) -> None:
    """A float arange read by an operator of another family (a GEMM) is stored: a kernel that reads no tensor, whose
    output is allocated where the forward's inputs are."""
    path = problem("torch.arange(12.0).view(3, 4).to(x.dtype) @ x", inputs="[torch.randn(4, 5)]", name="stored")
    result = solve(path, out=tmp_path / "s.py", options=OPTIONS)
    assert result.status() == "solved", (result.uncovered, result.gate)
    assert [(g["family"], g["ops"]) for g in result.groups][0] == ("pointwise", ["arange"])
    forward = Path(result.solution).read_text().split("    def forward(", 1)[1]
    assert "arange = torch.empty((12,), dtype=torch.float32, device=_device)" in forward
    assert "_device = x.device" in forward


def test_a_mask_of_coordinates_alone_is_stored_as_booleans(problem: Callable[..., Path], tmp_path: Path) -> None:
    path = problem("torch.arange(37) >= torch.arange(37).unsqueeze(1)", inputs="[torch.randn(4, 37)]", name="mask")
    result = solve(path, out=tmp_path / "s.py", options=OPTIONS)
    assert result.status() == "solved", (result.uncovered, result.gate)
    text = Path(result.solution).read_text()
    assert 'OUT: T.Tensor[("M", "N"), T.boolean]' in text
    assert "dtype=torch.bool" in text.split("    def forward(", 1)[1]


def test_a_mask_read_by_a_reduction_is_a_kernel_before_it(problem: Callable[..., Path], tmp_path: Path) -> None:
    path = problem("(x * (torch.arange(37) < 5)).sum(1)", inputs="[torch.randn(4, 37)]", name="masked_sum")
    result = solve(path, out=tmp_path / "s.py", options=OPTIONS)
    assert result.status() == "solved", (result.uncovered, result.gate)
    assert [(g["family"], g["ops"]) for g in result.groups] == [
        ("pointwise", ["arange", "lt", "mul"]),
        ("reduction", ["sum"]),
    ]


#: name -> (forward body, inputs, {operator: a part of the reason it is not covered})
REFUSED: dict[str, tuple[str, str, dict[str, str]]] = {
    # int64 values past 32 bits would wrap in the kernel: left to PyTorch with their bounds
    "wide": (
        "x * ((torch.arange(9) * 2**31) > 5)",
        "[torch.randn(4, 9)]",
        {
            "aten.mul.Tensor": "reach [0, 17179869184], beyond the 32-bit integers",
            "aten.gt.Scalar": "beyond the 32-bit integers",
            "aten.arange.start_step": "beyond the 32-bit integers",
        },
    ),
    # an integer value the model returns would have to be stored
    "returned": (
        "(x + 1, torch.arange(9) * 2)",
        "[torch.randn(4, 9)]",
        {"aten.mul.Tensor": "returned by the model", "aten.arange.start_step": "never stored"},
    ),
    # a reshape of a transposed arange is a copy in torch (a clone and a view): the view is not a coordinate; since
    # session 76 the clone moves the int64 values (the layout family) and the add reads them as float32, so only the
    # arange, which would have to be stored for the clone, is left
    "copied": (
        "x + torch.arange(12).view(3, 4).t().reshape(12)",
        "[torch.randn(12)]",
        {"aten.arange.start_step": "never stored"},
    ),
    # an integer tensor given to the model has no bounds: integer inputs are not built
    "integer_input": (
        "x * (y - torch.arange(9))",
        "[torch.randn(4, 9), torch.randint(0, 5, (4, 9))]",
        {"aten.sub.Tensor": "integer inputs are not built"},
    ),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_what_the_template_does_not_take_is_left_to_pytorch_with_the_reason(
    problem: Callable[..., Path], tmp_path: Path, name: str
) -> None:
    body, inputs, reasons = REFUSED[name]
    path = problem(body, inputs=inputs, args="x, y" if "y" in body else "x", name=name)
    result = solve(path, out=tmp_path / "s.py", options=OPTIONS)
    found = {u["op"]: u["reason"] for u in result.uncovered}
    for op, part in reasons.items():
        assert part in found.get(op, ""), (op, found)
    assert all(u["family"] in ("pointwise", "layout") for u in result.uncovered), result.uncovered
    assert result.correct and not result.covered, result.gate


# ---------------------------------------------------------------------------------------------------------------
# the coordinate of a view, integer bounds and the plan, on the captured graph


def _graph(body: str, *inputs: torch.Tensor) -> dict[str, torch.fx.Node]:
    """The core-ATen graph of ``lambda x: body`` (as `argus solve` captures it), its nodes by name."""

    class Model(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return eval(body, {"torch": torch, "x": x})  # noqa: S307 - the test's own expression

    program = torch.export.export(Model(), inputs).run_decompositions()
    return {n.name: n for n in program.graph_module.graph.nodes}


def test_a_view_of_an_arange_is_its_strides_and_offset_over_the_arange() -> None:
    nodes = _graph("x * torch.arange(40)[3:40:2].unsqueeze(0).expand(5, 19)", torch.randn(5, 19))
    c = coordinates.coordinate(nodes["expand"])
    assert c == coordinates.Coordinate(0, 1, 40, "int64", (5, 19), (0, 2), 3)
    assert c.varying_shape == (1, 19) and c.varying_strides == (0, 2) and c.value_range() == (3, 39)
    assert coordinates.coordinate(nodes["mul"]) is None  # not an arange nor a view of one


def test_the_bounds_of_integer_values_come_from_the_aranges_constants() -> None:
    nodes = _graph("x * ((torch.arange(2, 9) - torch.arange(7).unsqueeze(1)) * -3 >= 0)", torch.randn(7, 7))
    assert coordinates.integer_range(nodes["sub"]) == (-4, 8)
    assert coordinates.integer_range(nodes["mul"]) == (-24, 12)
    assert pointwise.unsupported(nodes["ge"]) is None


def test_an_arange_of_a_value_known_only_at_run_time_is_refused() -> None:
    graph = torch.fx.Graph()
    n = graph.placeholder("n")
    node = graph.call_function(torch.ops.aten.arange.start_step, (0, n))
    node.meta["val"] = torch.empty(8, dtype=torch.int64)
    assert "its end n is not a constant number" in str(coordinates.arange_of(node))
    assert "not a constant number" in str(pointwise.unsupported(node))
    node.args = (0, 8, 0.5)
    assert "integer arange with a float start or step" in str(coordinates.arange_of(node))


def test_the_plan_keeps_a_coordinate_s_dimensions_apart_where_its_index_does_not_step_through_them_as_one() -> None:
    shapes = {"x": (4, 3), "c": (4, 3)}
    merged = pointwise.plan((4, 3), shapes, [4, 4], strides={"c": (3, 1)})  # row-major: one dimension
    assert not isinstance(merged, str) and merged.dims == (12,) and merged.strides == {"c": (1,)}
    apart = pointwise.plan((4, 3), shapes, [4, 4], strides={"c": (1, 4)})  # transposed: two
    assert not isinstance(apart, str) and apart.dims == (4, 3) and apart.strides == {"c": (1, 4)}


def test_a_coordinate_that_does_not_broadcast_to_the_output_is_refused() -> None:
    found = pointwise.plan((4, 8), {"x": (4, 8), "c": (5,)}, [4, 4], strides={"c": (1,)})
    assert found == "c of shape (5,) does not broadcast to (4, 8)"


def test_zeros_shaped_like_a_parameter_read_nothing(tmp_path: Path) -> None:
    """Swin V2's qkv bias, ``cat((q_bias, zeros_like(v_bias), v_bias))``: the zeros are ``full`` of the parameter's
    shape (`argus.frontend.decompositions.full_like`), so the kernel computing them takes no tensor (it crashed
    with the parameter as an input of no value before)."""
    path = tmp_path / "qkv_bias.py"
    path.write_text(
        "import torch\n\n\n"
        "class Model(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.q = torch.nn.Parameter(torch.randn(5))\n"
        "        self.v = torch.nn.Parameter(torch.randn(5))\n\n"
        "    def forward(self, x):\n"
        "        return x * torch.cat((self.q, torch.zeros_like(self.v, requires_grad=False), self.v))\n\n\n"
        "def get_inputs():\n"
        "    return [torch.randn(3, 15)]\n\n\n"
        "def get_init_inputs():\n"
        "    return []\n"
    )
    result = solve(path, out=tmp_path / "s.py", options=OPTIONS)
    assert result.status() == "solved", (result.uncovered, [k.to_json() for k in result.kernels], result.gate)
    assert ("pointwise", ["full"]) in [(g["family"], g["ops"]) for g in result.groups], result.groups
