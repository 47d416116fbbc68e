"""`argus lineage walk`, `argus skills list | show` on a short walk (gemm_mma_sync: two steps to the naive GEMM),
and retrieval of mined skills: applicable where their preconditions hold, refused (with the failed one) where not."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from argus.cli.main import app

runner = CliRunner()


def test_walk_writes_the_lineage_and_skills_that_the_skills_commands_read(tmp_path) -> None:
    out, skills = tmp_path / "mma.lineage.json", tmp_path / "skills"
    result = runner.invoke(
        app,
        [
            "lineage",
            "walk",
            "gemm_mma_sync",
            "--out",
            str(out),
            "--skills",
            str(skills),
            "--sizes",
            "gemm:M=40,N=24,K=40",
        ],
        env={"COLUMNS": "200"},
    )
    assert result.exit_code == 0, result.output
    assert "mma-sync-to-fma (mma)" in result.output and "remove-smem-tiling (smem_tiling)" in result.output
    assert "stopped: naive" in result.output and "2 skills written" in result.output
    data = json.loads(out.read_text())
    assert [s["after"]["library"] for s in data["steps"]] == ["gemm_smem_tiled", "gemm_naive"]
    assert data["steps"][0]["gate"]["sizes"] == {"M": 40, "N": 24, "K": 40}

    listed = runner.invoke(app, ["skills", "list", "--dir", str(skills)], env={"COLUMNS": "200"})
    assert listed.exit_code == 0 and "mined-mma-sync-gemm-mma-sync" in listed.output
    assert "mined-smem-tiling-gemm-smem-tiled" in listed.output
    shown = runner.invoke(app, ["skills", "show", "mined-mma-sync-gemm-mma-sync", "--dir", str(skills)])
    assert shown.exit_code == 0, shown.output
    for text in ("[hardware] hardware.arch in", "failures avoided", "compile for sm_75", "COMPILE_NVRTC"):
        assert text in shown.output, text
    as_json = runner.invoke(app, ["skills", "show", "mined-mma-sync-gemm-mma-sync", "--dir", str(skills), "--json"])
    assert json.loads(as_json.output)["provenance"]["source"] == "mined"
    missing = runner.invoke(app, ["skills", "show", "mined-nothing", "--dir", str(skills)])
    assert missing.exit_code == 1

    # a mined skill does not apply where its hardware precondition fails, and retrieval says why
    from argus.kb import kernel_features, load_entries, match_entry
    from argus.lineage import library_variant

    skill = next(e for e in load_entries(skills) if e.id == "mined-mma-sync-gemm-mma-sync")
    tiled = library_variant("gemm_smem_tiled").trace()
    assert match_entry(skill, kernel_features(tiled)).applicable
    assert match_entry(skill, kernel_features(tiled, arch="sm_80")).applicable  # sm_80 has bf16 mma.sync
    assert not match_entry(skill, kernel_features(library_variant("gemm_mma_sync").trace())).applicable  # has it
    tiling = next(e for e in load_entries(skills) if e.id == "mined-smem-tiling-gemm-smem-tiled")
    assert match_entry(tiling, kernel_features(library_variant("gemm_naive").trace())).applicable
    refused = match_entry(tiling, kernel_features(tiled))
    assert not refused.applicable  # the tiles are already there: its storage precondition says why
    assert any(p.category == "storage" for p in refused.failed)
