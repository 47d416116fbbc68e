"""`argus explain CODE`: one entry of the diagnostics catalog, or the codes of a category or prefix."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from argus.cli.main import app
from argus.diagnostics import Category, Code
from argus.verify.catalog import CATALOG

runner = CliRunner()


def test_explain_prints_the_entry() -> None:
    result = runner.invoke(app, ["explain", "DSL_UNKNOWN_PARAM"])
    assert result.exit_code == 0, result.output
    code = Code.DSL_UNKNOWN_PARAM
    assert result.output.splitlines()[0] == "DSL_UNKNOWN_PARAM"
    assert f"category: DSL — {Category.DSL.description}" in result.output
    assert f"message:  {code.message}" in result.output and f"fix:      {code.fix}" in result.output


def test_explain_takes_any_case_and_every_code() -> None:
    assert runner.invoke(app, ["explain", "runtime_arg_dtype"]).output.startswith("RUNTIME_ARG_DTYPE\n")
    for code in Code:
        result = runner.invoke(app, ["explain", code.value])
        assert result.exit_code == 0 and code.fix in result.output, code


def test_a_verifier_finding_shows_its_severity_and_description() -> None:
    result = runner.invoke(app, ["explain", "ALIGN_ASSUMPTION"])
    assert result.exit_code == 0
    assert "severity: warning" in result.output and CATALOG["ALIGN_ASSUMPTION"].title in result.output


def test_a_gate_outcome_shows_its_stage() -> None:
    result = runner.invoke(app, ["explain", "CORRECT_MISMATCH", "--json"])
    assert result.exit_code == 0
    doc = json.loads(result.output)
    assert doc["code"] == "CORRECT_MISMATCH" and doc["category"] == "GATE" and doc["stage"] == "correct"
    assert doc["fix"] == Code.CORRECT_MISMATCH.fix and doc["message"] == Code.CORRECT_MISMATCH.message


def test_a_category_or_a_prefix_lists_its_codes() -> None:
    result = runner.invoke(app, ["explain", "layout", "--json"])
    assert [d["code"] for d in json.loads(result.output)] == [c.value for c in Code if c.category is Category.LAYOUT]
    result = runner.invoke(app, ["explain", "RUNTIME_CUDA"])
    assert result.exit_code == 0
    listed = [line.split("\t")[0] for line in result.output.splitlines()[1:]]
    assert listed == [c.value for c in Code if c.value.startswith("RUNTIME_CUDA_")] and len(listed) == 14


def test_a_code_nothing_reports_is_explained_from_its_own_catalog() -> None:
    result = runner.invoke(app, ["explain", "OOB_GLOBAL"])
    assert result.exit_code == 0
    assert "nothing in this version reports it" in result.output and CATALOG["OOB_GLOBAL"].hint in result.output


def test_an_unknown_code_is_a_user_error_with_the_closest_codes() -> None:
    result = runner.invoke(app, ["explain", "DSL_UNKNOW_PARAM"])
    assert result.exit_code == 2
    assert "[CLI_UNKNOWN_CODE] no diagnostic code 'DSL_UNKNOW_PARAM'" in result.output
    assert "did you mean DSL_UNKNOWN_PARAM" in result.output
    result = runner.invoke(app, ["explain", "ZZZ"])
    assert result.exit_code == 2 and f"hint: {Code.CLI_UNKNOWN_CODE.fix}" in result.output
