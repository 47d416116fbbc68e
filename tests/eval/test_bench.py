"""`argus bench` and `argus kernelbench` as library calls and as commands (registered on a local Typer app, as
`argus.cli.main` registers them): tables, JSON, the plot, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from PIL import Image
from typer.testing import CliRunner

from argus.cli import eval_cmd
from argus.eval.bench import BenchReport, BenchRow, parse_shapes, plot_ratios, resolve_target, run_bench

app = typer.Typer()
app.command("bench")(eval_cmd.bench)
app.command("kernelbench")(eval_cmd.kernelbench)
runner = CliRunner()


def test_targets_and_shapes() -> None:
    task, kernels = resolve_target("gemm")
    assert task.name == "gemm" and kernels[:3] == ["gemm_naive", "gemm_smem_tiled", "gemm_mma_sync"]
    assert "gemm_persistent" in kernels and "gemm_warp_specialized" not in kernels
    task, kernels = resolve_target("gemm_warp_specialized")
    assert task.name == "gemm_nt" and kernels == ["gemm_warp_specialized"]
    task, kernels = resolve_target("gemm_hopper")
    assert task.name == "gemm_nt_bf16" and kernels == ["gemm_hopper"]
    assert parse_shapes("M=64,N=32,K=16; M=8,N=8,K=8") == [{"M": 64, "N": 32, "K": 16}, {"M": 8, "N": 8, "K": 8}]
    from argus.tasks.base import TaskError

    with pytest.raises(TaskError, match="did you mean 'softmax'"):
        resolve_target("softmx")


def test_run_bench_on_the_cpu_reports_correctness_and_skipped_timing() -> None:
    seen = []
    report = run_bench(
        "layer_norm", shapes=[{"M": 5}, {"M": 7, "N": 40}], isolate=False, on_progress=lambda d, t, w: seen.append(d)
    )
    assert not report.gpu and report.task == "layer_norm"
    assert [r.sizes for r in report.rows] == [{"M": 5, "N": 100}, {"M": 7, "N": 40}]
    assert all(r.correct and r.time_ms is None and r.timing_skipped.startswith("no CUDA GPU here") for r in report.rows)
    assert seen[-1] == 4
    checks = report.baselines["M=5,N=100"]["checks"]
    assert checks["eager"]["correct"] is True and "skipped" in checks["compile"]
    json.dumps(report.to_json())


def test_plot_of_ratios(tmp_path: Path) -> None:
    rows = [
        BenchRow("gemm_a", "gemm", {"M": 4096}, "accepted", "", True, ratios={"eager": 1.3, "cublas": 0.8}),
        BenchRow("gemm_b", "gemm", {"M": 4096}, "accepted", "", True, ratios={"eager": 2.1, "cublas": None}),
    ]
    report = BenchReport("gemm", "gemm", True, rows, {}, [], {})
    path = tmp_path / "ratios.png"
    assert plot_ratios(report, path)
    with Image.open(path) as img:
        assert img.format == "PNG" and img.size[0] == 900 and img.size[1] > 3 * 22
    timing_skipped = BenchReport("gemm", "gemm", False, [BenchRow("k", "gemm", {}, "accepted", "", True)], {}, [], {})
    assert not plot_ratios(timing_skipped, tmp_path / "none.png")
    assert not (tmp_path / "none.png").exists()


def test_bench_command_isolated_with_json_and_plot(tmp_path: Path) -> None:
    out_json, out_png = tmp_path / "bench.json", tmp_path / "bench.png"
    store = tmp_path / "bench.db"
    result = runner.invoke(
        app,
        ["bench", "vector_add", "--shapes", "N=777", "--json", str(out_json), "--plot", str(out_png)]
        + ["--store", str(store)],
    )
    assert result.exit_code == 0, result.output
    assert "accepted" in result.output and "timing skipped: no CUDA GPU here" in result.output
    assert "not written" in result.output and not out_png.exists()
    data = json.loads(out_json.read_text())
    assert data["rows"][0]["sizes"] == {"N": 777} and data["gates"][0]["verdict"] == "accepted"
    assert [s["stage"] for s in data["gates"][0]["stages"]][-1] == "profile"
    from argus.eval.store import ResultStore

    with ResultStore(store) as db:
        (run,) = db.runs()
        assert [r["key"] for r in db.results(run["id"])] == ["vector_add:N=777", "baselines"]


def test_bench_command_errors() -> None:
    result = runner.invoke(app, ["bench", "no_such_task", "--no-isolate"])
    assert result.exit_code == 2 and "TASK_UNKNOWN" in result.output
    bad = runner.invoke(app, ["bench", "gemm", "--shapes", "M=x", "--no-isolate"])
    assert bad.exit_code == 2


def test_kernelbench_command_on_the_cpu_sample(tmp_path: Path, kernelbench_dir: Path) -> None:
    csv = tmp_path / "kb.csv"
    store = tmp_path / "kb.db"
    result = runner.invoke(
        app,
        [
            "kernelbench",
            "--problems",
            str(kernelbench_dir),
            "--level",
            "1",
            "--small",
            "--only",
            "19,23",
            "--csv",
            str(csv),
            "--store",
            str(store),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "2/2 correct" in result.output and "timing skipped" in result.output
    lines = csv.read_text().splitlines()
    assert len(lines) == 3 and lines[0].startswith("level,problem_id,name,solution,verdict,correct")
    assert store.is_file()


def test_kernelbench_command_rejects_unknown_baselines(kernelbench_dir: Path) -> None:
    result = runner.invoke(
        app, ["kernelbench", "--problems", str(kernelbench_dir), "--small", "--baselines", "eager,cublas"]
    )
    assert result.exit_code == 2 and "cublas" in result.output


def test_sizes_option_reads_python_literals() -> None:
    assert eval_cmd.parse_assignments("batch_size=2, input_shape=(256,), eps=1e-5") == {
        "batch_size": 2,
        "input_shape": (256,),
        "eps": 1e-05,
    }
    with pytest.raises(typer.BadParameter):
        eval_cmd.parse_assignments("batch_size=two")
