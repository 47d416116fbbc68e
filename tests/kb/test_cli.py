"""`argus kb list | show | search | match`."""

from __future__ import annotations

from typer.testing import CliRunner

from argus.cli.main import app
from argus.kb import entries

runner = CliRunner()


def test_kb_list_shows_every_entry() -> None:
    result = runner.invoke(app, ["kb", "list"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    for e in entries():
        assert e.id in result.output
    assert f"{len(entries())} entries" in result.output


def test_kb_list_by_category() -> None:
    result = runner.invoke(app, ["kb", "list", "--category", "attention"], env={"COLUMNS": "200"})
    assert result.exit_code == 0 and "online-softmax" in result.output and "tile-shape" not in result.output
    assert runner.invoke(app, ["kb", "list", "--category", "magic"]).exit_code == 2


def test_kb_show() -> None:
    result = runner.invoke(app, ["kb", "show", "pipeline-stages"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    for text in ("Tune the number of pipeline stages", "preconditions", "pipeline.kind ne 'none'", "BUDGET_SMEM"):
        assert text in result.output
    assert "transform: policy stages, candidates [2, 3, 4, 5, 6]" in result.output
    assert "STAGES=4" in result.output  # the example's after side


def test_kb_show_unknown_id_suggests_the_closest() -> None:
    result = runner.invoke(app, ["kb", "show", "pipeline-stage"])
    assert result.exit_code == 2
    assert "KB_UNKNOWN_ENTRY" in result.output and "did you mean 'pipeline-stages'" in result.output


def test_kb_search() -> None:
    result = runner.invoke(app, ["kb", "search", "bank", "conflict"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert "swizzle-shared-128b" in result.output and "pad-shared-rows" in result.output
    assert "split-k" not in result.output
    assert runner.invoke(app, ["kb", "search", "quantum"]).exit_code == 1


def test_kb_match_ranks_for_a_library_kernel() -> None:
    result = runner.invoke(app, ["kb", "match", "gemm_mma_sync", "--k", "3"], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if line.startswith("1\t")]  # piped: tab-separated
    assert lines and "swizzle-shared-128b" in lines[0]  # the verifier's bank-conflict warning leads
    every = runner.invoke(app, ["kb", "match", "vector_add", "--all", "--no-verify"], env={"COLUMNS": "250"})
    assert every.exit_code == 0 and "no place to apply it" in every.output


def test_kb_show_json_and_features() -> None:
    import json

    shown = runner.invoke(app, ["kb", "show", "tile-shape", "--json"])
    assert shown.exit_code == 0 and json.loads(shown.output)["transform"]["policy"] == "tile_shape"
    result = runner.invoke(app, ["kb", "features", "gemm_warp_specialized", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["mma.kind"] == "wgmma" and data["pipeline.stages"] == 3 and data["roles.register_split"] == [40, 232]
    table = runner.invoke(app, ["kb", "features", "vector_add"], env={"COLUMNS": "200"})
    assert table.exit_code == 0 and "ops.elementwise_only" in table.output
    assert runner.invoke(app, ["kb", "features", "no_such_kernel"]).exit_code == 2
