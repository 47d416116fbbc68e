"""Broadcasting and type promotion in the pointwise family: operands of shapes that broadcast to the output (a
per-row or per-column vector, a channel vector of an N-d tensor, a vector on the left of a non-commutative operator,
two vectors that make the output together) and of mixed float dtypes, at odd sizes and with tile sizes smaller than
the problem so that blocks tile both axes. Every generated kernel verifies, matches its group's FX subgraph on the
interpreter (float64 reference), and the emitted ModelNew matches the problem's own Model. What the template refuses
is reported as not covered with its reason; the level-1 problems whose broadcasts it now takes are pinned with the
operators that remain to other families."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from argus.eval.candidates import import_file
from argus.frontend import capture, generate, solve
from argus.frontend.emit import emit
from argus.frontend.families.pointwise import plan
from argus.frontend.solve import TOLERANCE, check_kernel
from argus.verify import verify

#: name -> (forward body of x, y (, z), the inputs' shapes, dtypes) — each a broadcast the template takes.
CASES: dict[str, tuple[str, list[tuple[int, ...]], list[str]]] = {
    "row": ("x / y - y", [(5, 37), (5, 1)], ["float32", "float32"]),
    "column": ("torch.sigmoid(x * y + y)", [(5, 37), (37,)], ["float32", "float32"]),
    "vector_on_the_left": ("(y - x) / (y * y + 1.0 + x * x) + torch.maximum(y, x)", [(3, 40), (40,)], ["float32"] * 2),
    "row_times_column": ("x * y + torch.sin(x)", [(6, 1), (1, 35)], ["float32", "float32"]),
    "channel_nd": ("torch.relu(x + y) * y", [(2, 3, 5, 7), (1, 3, 1, 1)], ["float32", "float32"]),
    "batch_column_nd": ("x - y * 2.0", [(3, 4, 9), (3, 1, 9)], ["float32", "float32"]),
    "batch_scalar_nd": ("torch.where(x > y, x, y) * z", [(3, 4, 9), (3, 1, 1), (3, 1, 9)], ["float32"] * 3),
    "hinge": ("torch.clamp(1 - x * y, min=0)", [(7, 7), (7,)], ["float32", "float32"]),
    "intermediate_vector": ("x * torch.tanh(y * 0.5) + torch.abs(y)", [(4, 33), (4, 1)], ["float32", "float32"]),
    "promote_bf16_f32": ("x * y + x", [(5, 37), (37,)], ["bfloat16", "float32"]),
    "promote_f16_bf16": ("x - y", [(6, 19), (6, 19)], ["float16", "bfloat16"]),
    "bf16_row": ("x / y", [(5, 40), (5, 1)], ["bfloat16", "bfloat16"]),
    "one_element": ("x * y - y", [(5, 37), (1,)], ["float32", "float32"]),
    "zero_dim_and_row": ("(x - y) * z", [(5, 37), (), (5, 1)], ["float32"] * 3),
    # more than three canonical dimensions: the ones beside the tile's walked by one grid dimension, its index split
    # (Swin V2's windowed attention mask: (B, nW, nH, N, N) + (1, nW, 1, N, N))
    "four_dims": ("torch.tanh(x) * y - y", [(2, 3, 4, 5), (1, 3, 1, 5)], ["float32", "float32"]),
    "window_mask_5d": ("x + y", [(2, 4, 3, 7, 7), (1, 4, 1, 7, 7)], ["bfloat16", "bfloat16"]),
    "three_grid_dims": ("x * y + z", [(2, 3, 2, 3, 5, 9), (2, 1, 2, 1, 5, 1), (1, 3, 1, 3, 1, 9)], ["float32"] * 3),
}


def _inputs(shapes: list[tuple[int, ...]], dtypes: list[str]) -> str:
    return "[" + ", ".join(f"torch.randn({s!r}).to(torch.{d})" for s, d in zip(shapes, dtypes, strict=True)) + "]"


def _solution(problem: Callable[..., Path], name: str) -> tuple[object, object, dict, object]:
    body, shapes, dtypes = CASES[name]
    path = problem(body, inputs=_inputs(shapes, dtypes), args=", ".join("xyz"[: len(shapes)]), name=name)
    cap = capture(path)
    part, sources = generate(cap)
    assert part.groups and not part.uncovered, [u.line() for u in part.uncovered]
    target = path.with_name(f"{name}_solution.py")
    target.write_text(emit(part, sources))
    return cap, part, sources, import_file(target, f"argus_test_broadcast_{name}")


def _run_at(kernel: object, source: object, subgraph: object, seed: int, **params: int) -> float:
    """Largest error (relative to the reference's scale) of `kernel` with tile `params` against `subgraph`."""
    generator = torch.Generator().manual_seed(seed)
    placeholders = [n for n in subgraph.graph.nodes if n.op == "placeholder"]
    inputs = [
        torch.randn(tuple(n.meta["val"].shape), generator=generator, dtype=torch.float64).to(n.meta["val"].dtype)
        for n in placeholders
    ]
    want = subgraph(*[x.double() for x in inputs])
    out = torch.empty(
        want.shape, dtype=next(n for n in subgraph.graph.nodes if n.op == "output").args[0].meta["val"].dtype
    )
    names = [n.name for n in placeholders] + list(source.outputs)
    views = [t.contiguous().view(source.shape_of(n, t.numel())) for n, t in zip(names, [*inputs, out], strict=True)]
    kernel(*views, device="cpu", **params)
    return float((out.double() - want).abs().max()) / max(1.0, float(want.abs().max()))


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_broadcast_kernel_verifies_matches_its_subgraph_and_the_model(
    problem: Callable[..., Path], name: str
) -> None:
    cap, part, sources, module = _solution(problem, name)
    for g in part.groups:
        kernel, src = getattr(module, g.kernel), sources[g.kernel]
        result = verify(kernel)
        assert result.verdict.value == "verified" and not result.unknowns, result.render_text()
        error, tolerance = check_kernel(kernel, src, g.subgraph, seed=5)
        assert error <= tolerance, (g.kernel, g.ops, error)
    _, shapes, dtypes = CASES[name]
    if len(set(shapes)) > 1:
        (g,) = part.groups
        assert '"tile_shape": ("BM", "BN")' in sources[g.kernel].kernel  # the tiled kernel, not the flat one
    model = cap.task.build(cap.task.model, 0, "cpu")
    generator = torch.Generator().manual_seed(11)
    args = [torch.randn(s, generator=generator).to(getattr(torch, d)) for s, d in zip(shapes, dtypes, strict=True)]
    want = model(*args)
    got = module.ModelNew()(*args)
    assert got.dtype == want.dtype and got.shape == want.shape
    tolerance = max(TOLERANCE["bf16" if "bfloat16" in dtypes else "f16" if "float16" in dtypes else "f32"], 1e-5)
    torch.testing.assert_close(got.double(), want.double(), rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("name", ["row", "column", "channel_nd", "batch_scalar_nd", "promote_bf16_f32", "one_element"])
def test_small_tiles_cover_both_axes_with_masked_edges(problem: Callable[..., Path], name: str) -> None:
    """BM, BN below the problem's rows and columns: many blocks along both axes, the last ones masked."""
    _, part, sources, module = _solution(problem, name)
    (g,) = part.groups
    kernel, src = getattr(module, g.kernel), sources[g.kernel]
    tolerance = max(TOLERANCE[d] for d in set(src.dtypes.values()))
    for bm, bn in [(4, 128), (64, 8), (16, 32)]:
        result = verify(kernel.trace(BM=bm, BN=bn))
        assert result.verdict.value == "verified" and not result.unknowns, (bm, bn, result.render_text())
        assert _run_at(kernel, src, g.subgraph, seed=bm, BM=bm, BN=bn) <= tolerance, (bm, bn)


@pytest.mark.parametrize(
    "name", ["vector_on_the_left", "batch_scalar_nd", "promote_bf16_f32", "zero_dim_and_row", "window_mask_5d"]
)
def test_the_tiled_kernels_compile_for_hopper_with_vector_copies_and_no_spills(
    problem: Callable[..., Path], name: str
) -> None:
    """NVRTC for sm_90a, no GPU needed: the tiled kernel loads and stores global memory (LDG/STG) in 16-byte vectors
    and keeps everything in registers."""
    from argus.backend.cuda.codegen import compile_kernel

    _, part, _, module = _solution(problem, name)
    (g,) = part.groups
    compiled = compile_kernel(getattr(module, g.kernel), cache=False)
    mix = compiled.instruction_mix()
    assert mix.get("LDG") and mix.get("STG") and compiled.resources.spill_stores == 0
    assert "LDG.E.128" in compiled.module.sass  # whole vectors where the rows are aligned (checked at run time)


def test_mixed_dtypes_compute_in_the_promoted_dtype(problem: Callable[..., Path]) -> None:
    """bf16 * f32 is computed in f32 as torch does: the bf16 operand converted first, never the product rounded to
    bf16 (which the f32 tolerance would catch)."""
    _, part, sources, module = _solution(problem, "promote_bf16_f32")
    (g,) = part.groups
    text = sources[g.kernel].kernel
    assert "T.cast(x, T.f32)" in text and "vector_bytes=8" in text
    error, tolerance = check_kernel(getattr(module, g.kernel), sources[g.kernel], g.subgraph)
    assert tolerance == TOLERANCE["bf16"] and error <= TOLERANCE["f32"]


def test_a_wrong_broadcast_axis_is_caught(problem: Callable[..., Path]) -> None:
    """The per-row values read from the next block's rows (a wrong tile index) give other numbers, which the
    subgraph check sees."""
    _, part, sources, module = _solution(problem, "intermediate_vector")
    (g,) = part.groups
    src = sources[g.kernel]
    assert "Y.tile(bm, BM)" in src.kernel
    path = Path(module.__file__)
    path.write_text(path.read_text().replace("Y.tile(bm, BM)", "Y.tile(bm + 1, BM)"))
    wrong = import_file(path, "argus_test_broadcast_wrong")
    error, tolerance = check_kernel(getattr(wrong, g.kernel), src, g.subgraph)
    assert error > tolerance


@pytest.mark.parametrize(
    ("body", "shapes", "reason"),
    [
        # no choice of the tile's rows holds both y's and z's axes (each varies along one grid dimension only)
        ("torch.where(x > 0.0, y, z)", [(2, 3, 4, 5), (2, 1, 1, 1), (1, 1, 4, 1)], "repeats along both dimensions"),
        ("torch.where(x > 0.0, y, z)", [(3, 4, 9), (3, 1, 1), (1, 4, 1)], "y repeats along both dimensions of every"),
    ],
)
def test_what_the_template_refuses_is_reported_with_its_reason(
    problem: Callable[..., Path], body: str, shapes: list[tuple[int, ...]], reason: str
) -> None:
    path = problem(body, inputs=_inputs(shapes, ["float32"] * len(shapes)), args=", ".join("xyz"[: len(shapes)]))
    part, _ = generate(capture(path))
    # a comparison alone is a kernel of its own (its boolean stored): only the operator whose operands broadcast
    # beyond what the template plans is left
    assert [g.ops for g in part.groups] in ([], [["gt"]]) and part.uncovered
    assert all(u.family == "pointwise" for u in part.uncovered)
    assert reason in part.uncovered[-1].reason, part.uncovered  # the last operator, whose operands broadcast


def test_a_group_whose_nodes_do_not_make_one_kernel_becomes_one_kernel_per_node(problem: Callable[..., Path]) -> None:
    """x * a and (x * a) * b each broadcast in two or three dimensions, together in four where a and b vary along
    different dimensions beside the columns (no tile's rows hold both): the partitioner's proposed group is refused
    as a whole (not a crash), and each operator is a kernel of its own, all correct."""
    path = problem(
        "x * a * b",
        inputs=_inputs([(2, 3, 4, 5), (2, 1, 1, 1), (1, 1, 4, 1)], ["float32"] * 3),
        args="x, a, b",
    )
    cap = capture(path)
    part, sources = generate(cap)
    assert not part.uncovered and [g.ops for g in part.groups] == [["mul"], ["mul"]]
    target = path.with_name("split_solution.py")
    target.write_text(emit(part, sources))
    module = import_file(target, "argus_test_broadcast_split")
    for g in part.groups:
        error, tolerance = check_kernel(getattr(module, g.kernel), sources[g.kernel], g.subgraph)
        assert error <= tolerance


def test_a_comparison_split_from_its_consumer_passes_a_boolean_tensor(problem: Callable[..., Path]) -> None:
    """A group refused as a whole (four broadcast dimensions, a and b along different ones beside the columns) whose
    comparison feeds a select: each operator is a kernel of its own, the comparison's kernel stores a bool tensor and
    the select's reads it as 1.0/0.0 (before session 27 both stayed in PyTorch); every kernel matches its
    reference."""
    path = problem(
        "torch.where(x * a > 0.0, x, -x) * b",
        inputs=_inputs([(2, 3, 4, 5), (2, 1, 1, 1), (1, 1, 4, 1)], ["float32"] * 3),
        args="x, a, b",
    )
    part, sources = generate(capture(path))
    assert not part.uncovered, part.uncovered
    assert sorted(op for g in part.groups for op in g.ops) == ["gt", "mul", "mul", "neg", "where"]
    target = path.with_name("split_bool_solution.py")
    target.write_text(emit(part, sources))
    module = import_file(target, "argus_test_broadcast_split_bool")
    for g in part.groups:
        error, tolerance = check_kernel(getattr(module, g.kernel), sources[g.kernel], g.subgraph)
        assert error <= tolerance, g.ops
    (gt,) = [g for g in part.groups if g.ops == ["gt"]]
    assert "T.boolean" in sources[gt.kernel].kernel


def test_the_plan_collapses_to_the_canonical_form() -> None:
    channel = plan((8, 3, 5, 7), {"x": (8, 3, 5, 7), "b": (3, 1, 1)}, [4, 4])
    assert not isinstance(channel, str) and channel.dims == (8, 3, 35) and channel.bits["b"] == (0, 1, 0)
    assert channel.roles == ("G", "M", "N")
    per_batch = plan((3, 4, 9), {"x": (3, 4, 9), "s": (3, 1, 1), "u": (3, 1, 9)}, [4, 4, 4])
    assert not isinstance(per_batch, str) and per_batch.roles == ("M", "G", "N") and per_batch.tile_bits("s") == (1, 0)
    rows = plan((3, 4, 9), {"x": (3, 4, 9), "s": (3, 1, 1)}, [4, 4])
    assert not isinstance(rows, str) and rows.dims == (3, 36) and rows.roles == ("M", "N")
    per_block = plan((3, 4, 9), {"x": (3, 4, 9), "s": (3, 1, 1), "t": (1, 4, 1)}, [4, 4, 4])
    assert isinstance(per_block, str) and "one value per block" in per_block
    same = plan((4, 1, 6), {"x": (4, 1, 6), "y": (1, 4, 1, 6)}, [2, 2])
    assert not isinstance(same, str) and same.flat and same.dims == (24,) and same.vector == 8
    assert plan((4, 6), {"x": (4, 6), "y": (5,)}, [4]) == "y of shape (5,) does not broadcast to (4, 6)"
    scalar = plan((5, 37), {"x": (5, 37), "s": (), "r": (5, 1)}, [4, 4, 4])
    assert not isinstance(scalar, str) and scalar.dims == (5, 1, 37) and scalar.roles == ("G", "M", "N")
    assert scalar.tile_bits("s") == (1, 0) and scalar.tile_bits("r") == (1, 0) and scalar.tile == (1, 1024)
    huge = plan((4096, 393216), {"x": (4096, 393216), "s": ()}, [4, 4])  # KernelBench's size: 1.6e9 elements
    assert not isinstance(huge, str) and huge.dims == (4096, 1, 393216) and huge.roles == ("G", "M", "N")
    long_rows = plan((2, 2**30 + 2, 2), {"x": (2, 2**30 + 2, 2), "r": (2, 2**30 + 2, 1)}, [4, 4])
    assert isinstance(long_rows, str) and "longer than a kernel's largest extent" in long_rows
    wide = plan((2**20, 2), {"x": (2**20, 2), "y": (2**20, 1)}, [4])
    assert not isinstance(wide, str) and wide.tile == (2048, 4)  # one vector of columns, 8192 elements


def test_the_default_tile_grows_with_the_rows_and_shrinks_to_fill_the_gpu() -> None:
    """`_default_tile`: BN the columns up to 1024, BM * BN 8192 for a kernel moving two whole tiles (fewer when
    it moves more), halved while the grid would launch fewer than two waves of blocks."""
    from argus.frontend.families.base import min_blocks

    l2 = plan((32768, 65535), {"x": (32768, 65535), "n": (32768, 1)}, [4, 4], ["x", "n"])
    assert not isinstance(l2, str) and l2.tile == (8, 1024)  # 39_L2Norm_'s division
    three = plan((4096, 4096), {"a": (4096, 4096), "b": (4096, 4096), "c": (4096, 4096), "r": (4096, 1)}, [4] * 4)
    assert not isinstance(three, str) and math.prod(three.tile) == 8192  # io not given: one whole input
    three = plan(
        (4096, 4096), {"a": (4096, 4096), "b": (4096, 4096), "c": (4096, 4096), "r": (4096, 1)}, [4] * 4, "abcr"
    )
    assert not isinstance(three, str) and three.tile == (4, 1024)  # four whole tiles: 4096 elements
    small = plan((64, 2000), {"x": (64, 2000), "r": (64, 1)}, [4, 4], ["x", "r"])
    assert not isinstance(small, str) and small.tile[1] == 1024
    blocks = -(-64 // small.tile[0]) * -(-2000 // 1024)
    assert small.tile == (1, 1024) and blocks < min_blocks()  # as small as a tile gets, still under two waves
    short_rows = plan((4, 40), {"x": (4, 40), "c": (40,)}, [4, 4], ["x", "c"])
    assert not isinstance(short_rows, str) and short_rows.tile == (16, 64)  # rows rounded up, at least 1024


#: Level-1 problems whose broadcasts the pointwise template takes, at small sizes: the broadcasting pointwise group,
#: and the reduction that runs in the reduction family's kernel beside it (`tests/frontend/test_reduction.py` pins
#: the problems as solved through the gate).
LEVEL1_BROADCASTS: dict[str, tuple[dict[str, object], list[str], list[list[str]]]] = {
    "38_L1Norm_": ({"batch_size": 4, "dim": 33}, ["div"], [["abs", "mean"]]),  # abs fused into the mean
    "39_L2Norm_": ({"batch_size": 4, "dim": 33}, ["div"], [["linalg_vector_norm"]]),
    "98_KLDivLoss": (
        {"batch_size": 4, "input_shape": (33,)},
        ["div"],  # the batch mean; the elementwise terms are fused into the sum, which reads both inputs
        [["log", "mul", "eq", "log", "mul", "scalar_tensor", "where", "isnan", "scalar_tensor", "where", "sub", "sum"]],
    ),
    "100_HingeLoss": ({"batch_size": 6, "input_shape": (6,)}, ["mul"], [["sub", "clamp", "mean"]]),
}


@pytest.mark.parametrize("name", sorted(LEVEL1_BROADCASTS))
def test_level1_broadcasts_are_covered_beside_their_reductions(
    kernelbench_dir: Path, tmp_path: Path, name: str
) -> None:
    sizes, ops, reductions = LEVEL1_BROADCASTS[name]
    result = solve(kernelbench_dir / "level1" / f"{name}.py", sizes=sizes, out=tmp_path / "s.py", judge=False)
    assert not result.uncovered, result.uncovered
    assert any(g["ops"] == ops for g in result.groups), result.groups
    assert [g["ops"] for g in result.groups if g["family"] == "reduction"] == reductions
    assert all(k.verdict == "verified" and k.interpreter_ok for k in result.kernels), [
        k.to_json() for k in result.kernels
    ]


def test_on_a_partitioner_without_vertical_only_groups_a_refused_group_falls_back_to_single_nodes(
    problem: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """torch 2.11 (the H200 machine's) has no ``skip_horizontal_fusion``: `propose` says so (None) and the
    partition does without the chains, one kernel per operator, all covered (a TypeError there before)."""
    import torch.fx.passes.infra.partitioner as fx_partitioner

    from argus.frontend.partition import propose

    original = fx_partitioner.CapabilityBasedPartitioner

    class Older(original):  # type: ignore[misc, valid-type]
        def __init__(self, graph_module, operator_support, allows_single_node_partition=False) -> None:  # noqa: ANN001
            super().__init__(graph_module, operator_support, allows_single_node_partition=allows_single_node_partition)

    monkeypatch.setattr(fx_partitioner, "CapabilityBasedPartitioner", Older)
    path = problem(
        "torch.where(x * a > 0.0, x, -x) * b",
        inputs=_inputs([(2, 3, 4, 5), (1, 3, 1, 1), (1, 1, 1, 5)], ["float32"] * 3),
        args="x, a, b",
    )
    cap = capture(path)
    assert propose(cap.graph_module, lambda n: n.op == "call_function", vertical_only=True) is None
    part, _ = generate(cap)
    assert not part.uncovered and sorted(op for g in part.groups for op in g.ops) == [
        "gt",
        "mul",
        "mul",
        "neg",
        "where",
    ]
