"""`argus lineage walk`, `argus skills list | show` on a short walk (gemm_mma_sync: two steps to the naive GEMM),
and retrieval of mined skills: applicable where their preconditions hold, refused (with the failed one) where not.
The same walk with ``--parallel 2`` (a local pool of two worker processes) and through a private Ray instance of two
CPUs (``ray.init(address="local", num_cpus=2)``, started in the test that needs it, stopped after it) writes the
serial walk's lineage: its first step has two candidates, the first rejected by the gate, both gated at once."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from argus.cli.main import app
from tests.private_ray import private_ray

runner = CliRunner()
SIZES = {"gemm": {"M": 40, "N": 24, "K": 40}}


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


def _comparable(doc: Any) -> Any:
    """A lineage's JSON without what differs from run to run (when it was made, how long each stage took)."""
    if isinstance(doc, dict):
        return {k: _comparable(v) for k, v in doc.items() if k not in ("created", "seconds")}
    if isinstance(doc, list):
        return [_comparable(v) for v in doc]
    return doc


@pytest.fixture(scope="module")
def serial_walk() -> dict[str, Any]:
    from argus.lineage import walk

    return _comparable(walk("gemm_mma_sync", sizes=SIZES).to_json())


def _walk_through_the_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *flags: str) -> tuple[dict, str]:
    """`argus lineage walk gemm_mma_sync` with `flags`, every gate refused in this process (the driver): the checks
    and gates must run in the executor's workers."""
    import importlib

    walk_module = importlib.import_module("argus.lineage.walk")  # the module (`argus.lineage.walk` is the function)

    def not_here(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a candidate was gated in the driver, not in a worker")

    monkeypatch.setattr(walk_module, "gate_variant", not_here)
    out = tmp_path / "mma.lineage.json"
    args = ["lineage", "walk", "gemm_mma_sync", "--out", str(out), "--no-skills", "--sizes", "gemm:M=40,N=24,K=40"]
    result = runner.invoke(app, [*args, *flags], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    return _comparable(json.loads(out.read_text())), result.output


def test_walk_with_parallel_2_writes_the_serial_lineage(serial_walk, tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("ARGUS_RAY_ADDRESS", raising=False)
    lineage, output = _walk_through_the_command(tmp_path, monkeypatch, "--parallel", "2")
    assert lineage == serial_walk
    assert [r["stage"] for r in lineage["rejections"]] == ["gate.verify"]  # the first of step 1's two candidates
    assert "stopped: naive" in output


@pytest.fixture
def ray_instance(tmp_path: Path) -> Iterator[Any]:
    pytest.importorskip("ray")
    with private_ray(tmp_path / "ray-cache") as ray:
        yield ray


def test_walk_through_ray_writes_the_serial_lineage(serial_walk, ray_instance, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("ARGUS_RAY_ADDRESS", "auto")  # the address from the environment: the running instance
    lineage, _ = _walk_through_the_command(tmp_path, monkeypatch, "--parallel", "2")
    assert lineage == serial_walk
