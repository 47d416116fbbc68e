"""Template kernels whose natural grid order puts more than 65535 blocks on y or z (CUDA's limits) launch with the
largest extent on x instead (`argus.frontend.families.base.grid_axes`): level 2's 3_ConvTranspose3d_..._LayerNorm
(4M rows of 64: a million row tiles on y) and 11_..._MaxPool (65536 pooling planes on z) failed their launches at
their own sizes with `RUNTIME_LAUNCH_CONFIG`. Here at sizes the interpreter takes."""

from __future__ import annotations

from pathlib import Path

from argus.atoms.common import MAX_GRID
from argus.frontend.families.base import grid_axes
from argus.frontend.solve import solve


def test_the_natural_order_stays_where_it_fits() -> None:
    assert grid_axes([("T.cdiv(OW, BW)", "bw", 16), ("T.cdiv(OH, BH)", "bh", 64), ("P", "p", 4096)]) == (
        "T.cdiv(OW, BW), T.cdiv(OH, BH), P",
        "bw, bh, p",
    )
    assert grid_axes([("M", "m", 3)]) == ("M", "m,")


def test_the_largest_extent_moves_to_x_where_the_natural_order_does_not_fit() -> None:
    assert grid_axes([("T.cdiv(OW, BW)", "bw", 1), ("T.cdiv(OH, BH)", "bh", 1), ("P", "p", 65536)]) == (
        "P, T.cdiv(OW, BW), T.cdiv(OH, BH)",
        "p, bw, bh",
    )
    assert grid_axes([("A", "ba", 1), ("T.cdiv(R, BR)", "br", 1 << 20)])[1] == "br, ba"


def test_no_order_fits_is_said() -> None:
    found = grid_axes([("A", "a", 70000), ("B", "b", 70000)])
    assert isinstance(found, str) and str(MAX_GRID) in found


def test_a_pool_of_more_than_65535_planes_runs(problem, tmp_path: Path) -> None:
    path = problem("F.max_pool2d(x, 2)", inputs="[torch.randn(66000, 1, 4, 4)]", name="planes")
    result = solve(path, out=tmp_path / "planes.py", judge=False)
    (report,) = result.kernels
    assert report.verdict == "verified" and report.interpreter_ok, report
    assert "with T.grid(P, " in Path(result.solution).read_text()


def test_a_layer_norm_of_more_than_65535_row_tiles_verifies(problem, tmp_path: Path) -> None:
    # 270000 rows of 64: 67500 row tiles of 4, over 65535 (17.3M elements: past the interpreter's limit, so the
    # kernel is verified and its check left to a GPU; the reordered grid's result is checked in the pool test)
    path = problem("F.layer_norm(x, (64,))", inputs="[torch.randn(270000, 64)]", name="rows")
    result = solve(path, out=tmp_path / "rows.py", judge=False)
    (report,) = result.kernels
    assert report.verdict == "verified" and report.skipped, report
    assert "with T.grid(T.cdiv(R, BR), A" in Path(result.solution).read_text()
