"""`argus calibrate ROWS.jsonl`: the cost model's error and rank correlation per family, and its correction."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

from typer.testing import CliRunner

from argus.cli.main import app
from argus.eval import calibration as C

runner = CliRunner()


def _rows(path: Path, groups: range, seed: int = 0) -> Path:
    """GEMM rows whose measured/estimate ratio grows with the stages (a law the fit can find)."""
    rng = random.Random(seed)
    rows = []
    for g in groups:
        for c in range(5):
            stages = rng.randint(2, 6)
            features = {name: 0.0 for name in C.FEATURES + C.PROBLEM_FEATURES}
            features.update(stages=stages, log_flops=rng.uniform(20, 25))
            est = rng.uniform(0.5, 2.0)
            rows.append(
                C.Row(family="gemm", group=f"g{g}", label=f"c{c}", ms=est * math.exp(0.5 * stages), gpu="H200",
                      source="test", plan={}, features=features, estimate_ms=est, kernels=["k"])
            )  # fmt: skip
    C.write_rows(rows, path)
    return path


def test_the_table_the_json_and_the_fitted_file(tmp_path: Path) -> None:
    train = _rows(tmp_path / "train.jsonl", range(6))
    out = tmp_path / "cal.json"
    result = runner.invoke(app, ["calibrate", str(train), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "gemm" in result.output and "uncalibrated" in result.output and "calibrated" in result.output
    cal = C.Calibration.load(out)
    assert cal.improves("gemm") and cal.families["gemm"].rows == 30
    test = _rows(tmp_path / "test.jsonl", range(6, 9), seed=1)
    result = runner.invoke(app, ["calibrate", str(train), "--test", str(test), "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["test"] == 15 and doc["fit"] == {"rows": 30, "gpu": "H200"}
    gemm = doc["families"]["gemm"]
    assert gemm["calibrated"]["median_error"] < 1.1 < 2.0 < gemm["uncalibrated"]["median_error"]


def test_bad_input_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"family": "gemm"}\n')
    result = runner.invoke(app, ["calibrate", str(bad)])
    assert result.exit_code == 2 and "CALIBRATION_ROW" in result.output and "bad.jsonl:1" in result.output
    bare = tmp_path / "bare.jsonl"
    good = {"family": "gemm", "label": "l", "ms": 1.0, "gpu": "H200", "source": "s", "plan": {}}
    bare.write_text("".join(json.dumps({**good, "group": g}) + "\n" for g in "ab"))
    result = runner.invoke(app, ["calibrate", str(bare)])
    assert result.exit_code == 2 and "without features" in result.output
    rows = _rows(tmp_path / "rows.jsonl", range(3))
    result = runner.invoke(app, ["calibrate", str(rows), "--gpu", "H100-SXM"])
    assert result.exit_code == 2 and "none was measured on H100-SXM" in result.output
    result = runner.invoke(app, ["calibrate", str(tmp_path / "missing.jsonl")])
    assert result.exit_code == 2 and "CALIBRATION_ROW" in result.output and "missing.jsonl" in result.output
