"""Tests of `argus layout show` (through `typer.testing.CliRunner` on `argus.cli.layout_cmd.app`)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from argus.cli.layout_cmd import app
from argus.layout import Layout
from argus.layout.render import format_layout, format_tv_layout

runner = CliRunner()

MMA = "((4,8),(2,2)):((32,1),(16,8))"


def test_show_prints_the_grid() -> None:
    result = runner.invoke(app, ["show", "(4,8):(8,1)"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "(4,8):(8,1)"
    assert lines[1] == "       0    1    2    3    4    5    6    7"
    assert lines[3] == " 0  |  0 |  1 |  2 |  3 |  4 |  5 |  6 |  7 |"
    assert lines[9] == " 3  | 24 | 25 | 26 | 27 | 28 | 29 | 30 | 31 |"
    assert result.stdout == format_layout(Layout((4, 8), (8, 1))) + "\n"
    assert result.stderr == ""


def test_show_accepts_cute_static_ints_and_swizzles() -> None:
    result = runner.invoke(app, ["show", "(_4,_8):(_8,_1)"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0] == "(4,8):(8,1)"
    result = runner.invoke(app, ["show", "Sw<3,0,3> o (8,8):(8,1)"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "Sw<3,0,3> o 0 o (8,8):(8,1)"
    assert lines[5] == " 1  |  9 |  8 | 11 | 10 | 13 | 12 | 15 | 14 |"


@pytest.mark.parametrize("tile", ["16,8", "(16,8)", " 16 , 8 "])
def test_show_tv(tile: str) -> None:
    result = runner.invoke(app, ["show", MMA, "--tv", tile])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == f"{MMA} on tile (16,8)"
    assert lines[3] == " 0  |  T0V0 |  T0V1 |  T1V0 |  T1V1 |  T2V0 |  T2V1 |  T3V0 |  T3V1 |"
    assert lines[19] == " 8  |  T0V2 |  T0V3 |  T1V2 |  T1V3 |  T2V2 |  T2V3 |  T3V2 |  T3V3 |"
    assert result.stdout == format_tv_layout(MMA, (16, 8)) + "\n"


def test_show_png(tmp_path: Path) -> None:
    pytest.importorskip("PIL")
    from PIL import Image

    path = tmp_path / "layout.png"
    result = runner.invoke(app, ["show", "(4,8):(8,1)", "--png", str(path)])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("(4,8):(8,1)\n")
    assert result.stdout.rstrip().endswith(f"wrote {path}")
    with Image.open(path) as image:
        assert image.format == "PNG"
        assert image.size[0] > image.size[1] > 0


def test_show_tv_png(tmp_path: Path) -> None:
    pytest.importorskip("PIL")
    path = tmp_path / "tv.png"
    result = runner.invoke(app, ["show", MMA, "--tv", "16,8", "--png", str(path)])
    assert result.exit_code == 0, result.output
    assert f"wrote {path}" in result.stdout
    assert path.read_bytes()[:4] == b"\x89PNG"


def test_malformed_layout_exits_2_with_a_caret() -> None:
    result = runner.invoke(app, ["show", "(4,8:(8,1)"])
    assert result.exit_code == 2
    assert result.stdout == ""
    err = result.stderr
    assert "LAYOUT_PARSE" in err
    assert "expected ',' or ')' at position 4" in err
    assert "Traceback" not in err
    lines = err.splitlines()
    shown = next(i for i, line in enumerate(lines) if line.strip() == "(4,8:(8,1)")
    column = lines[shown].index("(4,8:(8,1)") + 4
    assert lines[shown + 1].index("^") == column
    assert lines[shown + 1].strip() == "^"


def test_malformed_tile_exits_2() -> None:
    result = runner.invoke(app, ["show", MMA, "--tv", "16x8"])
    assert result.exit_code == 2
    assert "LAYOUT_PARSE" in result.stderr
    result = runner.invoke(app, ["show", MMA, "--tv", "16"])
    assert result.exit_code == 2
    assert "LAYOUT_BAD_SHAPE" in result.stderr


def test_layout_errors_exit_2() -> None:
    result = runner.invoke(app, ["show", "(2,2,2)"])
    assert result.exit_code == 2
    assert "LAYOUT_RENDER_RANK" in result.stderr
    assert "hint:" in result.stderr
    result = runner.invoke(app, ["show", MMA, "--tv", "8,8"])
    assert result.exit_code == 2
    assert "LAYOUT_TV_OUT_OF_TILE" in result.stderr
    result = runner.invoke(app, ["show", "(4,8):(8,(1,1))"])
    assert result.exit_code == 2
    assert "LAYOUT_INCONGRUENT" in result.stderr


def test_long_error_lines_are_not_wrapped() -> None:
    text = "(" + ",".join(["2"] * 60) + "):(" + ",".join(["1"] * 60) + ",)"
    result = runner.invoke(app, ["show", text])
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    shown = next(i for i, line in enumerate(lines) if line.strip() == text)
    assert lines[shown + 1].index("^") == lines[shown].index(text) + len(text) - 1


def test_png_without_pillow_exits_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [m for m in sys.modules if m == "PIL" or m.startswith("PIL.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "PIL", None)
    result = runner.invoke(app, ["show", "8:1", "--png", str(tmp_path / "x.png")])
    assert result.exit_code == 2
    assert "pip install 'argus-kernels[viz]'" in result.stderr


def test_help() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    assert "Inspect CuTe layouts." in result.stdout
    assert "show" in result.stdout
    result = runner.invoke(app, ["show", "--help"])
    assert result.exit_code == 0
    assert "--tv" in result.stdout and "--png" in result.stdout
