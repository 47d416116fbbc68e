"""Output that fits anywhere (`argus.cli.output`): at 80 columns and through a pipe no identifier (kernel name, kb id,
run or candidate id, shape) is cut and no line ends in an ellipsis; ``--json`` alone prints a document with fixed keys
to stdout and ``--json FILE`` writes the same document; ``runs show`` prints counterexamples as the verifier does."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from argus.cli.main import app
from argus.cli.output import Column, OptionalValueCommand, emit_json, markdown_table, print_table

REPO = Path(__file__).resolve().parents[2]
ELLIPSIS = "…"
TERMINAL_80 = {"COLUMNS": "80", "TTY_COMPATIBLE": "1", "NO_COLOR": "1"}  # rich takes stdout for an 80-column terminal
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `argus ARGS` in this process, escape sequences removed."""
    result = CliRunner().invoke(app, list(args), env=env)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, ANSI.sub("", result.stdout), ANSI.sub("", result.stderr)


def whole(name: str, text: str) -> bool:
    """`name` appears in `text` as a whole word (not as a prefix of a longer name, not cut)."""
    return re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", text) is not None


def assert_fits(text: str, names: list[str], width: int | None = 80) -> None:
    assert ELLIPSIS not in text, text
    missing = [n for n in names if not whole(n, text)]
    assert not missing, f"cut or missing: {missing}\n{text}"
    if width is not None:
        assert max(len(line) for line in text.splitlines()) <= width, text


def tsv(text: str) -> list[list[str]]:
    return [line.split("\t") for line in text.splitlines()]


@pytest.fixture(autouse=True)
def private_cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARGUS_CACHE_DIR", str(tmp_path / "argus-cache"))  # bench compiles: not the user's cache


# -- the module ------------------------------------------------------------------------------------------------


def test_print_table_never_cuts_an_identifier_at_any_width(capsys: pytest.CaptureFixture[str]) -> None:
    from rich.console import Console

    names = [f"gemm_residual_wgmma_tma_persistent_v{i}" for i in range(3)]
    columns = [Column("name", identifier=True), Column("description"), Column("shape", identifier=True),
               Column("note", optional=True)]  # fmt: skip
    rows = [(n, "a long description " * 4, "M=4096,N=4096,K=4096", "x") for n in names]
    forms = set()
    for width in (200, 100, 80, 60, 40, 20):
        console = Console(width=width, force_terminal=True, color_system=None, soft_wrap=True)
        forms.add(print_table(columns, rows, console=console))
        text = capsys.readouterr().out
        assert ELLIPSIS not in text and all(whole(n, text) for n in names) and "M=4096,N=4096,K=4096" in text
    assert forms == {"table", "records"}
    piped = Console(force_terminal=False, width=30)
    assert print_table(columns, rows, console=piped) == "tsv"
    lines = tsv(capsys.readouterr().out)
    assert lines[0] == ["name", "description", "shape", "note"] and [row[0] for row in lines[1:]] == names


def test_markdown_table_and_emit_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = markdown_table([Column("kernel"), Column("ms", justify="right")], [("a|b", "1.5"), ("c\nd", "2")])
    assert text == "| kernel | ms |\n|---|---:|\n| a\\|b | 1.5 |\n| c<br>d | 2 |\n"
    assert emit_json({"a": [1]}, "-") is None and json.loads(capsys.readouterr().out) == {"a": [1]}
    path = emit_json({"a": [1]}, str(tmp_path / "x.json"))
    assert path == tmp_path / "x.json" and json.loads(path.read_text()) == {"a": [1]}


def test_json_takes_an_optional_file() -> None:
    cli = typer.Typer()

    @cli.command(cls=OptionalValueCommand)
    def cmd(name: str, json_file: str | None = typer.Option(None, "--json"), k: int = typer.Option(1, "--k")) -> None:
        typer.echo(f"{name} {json_file} {k}")

    said = lambda *args: CliRunner().invoke(cli, list(args)).output.strip()  # noqa: E731
    assert said("x") == "x None 1"
    assert said("x", "--json") == "x - 1"  # alone: stdout
    assert said("x", "--json", "out.json") == "x out.json 1"  # with a word: the file
    assert said("--json", "x") == "x - 1"  # the word is the argument the command needs
    assert said("--json", "out.json", "x") == "x out.json 1"
    assert said("x", "--json", "--k", "3") == "x - 3"  # followed by an option
    assert said("x", "--json=-") == "x - 1" and said("x", "--json=f") == "x f 1" and said("x", "--json", "-") == "x - 1"


# -- listings at 80 columns and through a pipe -------------------------------------------------------------------


def test_kernels_list_fits_80_columns_and_pipes_as_tsv(tmp_path: Path) -> None:
    from argus.kernels import all_kernels

    names = [k.name for k in all_kernels()]
    code, out, _ = run("kernels", "list", env=TERMINAL_80)
    assert code == 0
    assert_fits(out, names)
    code, out, _ = run("kernels", "list")
    rows = tsv(out)
    assert code == 0 and ELLIPSIS not in out
    assert rows[0] == ["name", "description", "default shape", "partial-tile shape"]
    assert [r[0] for r in rows[1:]] == names and all(len(r) == 4 for r in rows)
    assert rows[1 + names.index("gemm_naive")][3] == "M=100,N=72,K=80"  # as --shape takes it
    # a real pipe, as a user's shell makes it
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE", "COLUMNS")}
    proc = subprocess.run([sys.executable, "-m", "argus", "kernels", "list"], capture_output=True, text=True,
                          timeout=120, env=env)  # fmt: skip
    assert proc.returncode == 0 and proc.stdout == out


def test_kernels_list_json() -> None:
    code, out, _ = run("kernels", "list", "--json")
    doc = json.loads(out)
    assert code == 0 and all(set(k) == {"name", "description", "default_shape", "partial_shape"} for k in doc)
    assert next(k for k in doc if k["name"] == "gemm_naive")["partial_shape"] == {"M": 100, "N": 72, "K": 80}


def test_kb_list_fits_80_columns_pipes_as_tsv_and_json(tmp_path: Path) -> None:
    from argus.kb import entries

    ids = [e.id for e in entries()]
    code, out, _ = run("kb", "list", env=TERMINAL_80)
    assert code == 0 and f"{len(ids)} entries" in out
    assert_fits(out, ids)
    code, out, err = run("kb", "list")
    assert code == 0 and ELLIPSIS not in out and [r[0] for r in tsv(out)] == ["id", *ids]
    assert f"{len(ids)} entries" in err  # the count is not a row
    code, out, _ = run("kb", "list", "--json")
    doc = json.loads(out)
    assert code == 0 and [e["id"] for e in doc] == ids
    assert all(list(e) == ["id", "category", "title", "transform"] for e in doc)
    assert next(e for e in doc if e["id"] == "pipeline-stages")["transform"] == "stages"
    code, out, err = run("kb", "list", "--json", str(tmp_path / "kb.json"))
    assert code == 0 and json.loads((tmp_path / "kb.json").read_text()) == doc and "wrote" in err
    assert [r[0] for r in tsv(out)] == ["id", *ids]  # and the usual listing
    code, out, _ = run("kb", "search", "--json", "bank")  # the word is what search needs
    assert code == 0 and {e["id"] for e in json.loads(out)} >= {"pad-shared-rows", "swizzle-shared-128b"}


# -- the run store ---------------------------------------------------------------------------------------------


def make_runs(db: Path) -> tuple[list[str], list[str], list[dict]]:
    """Two runs: one whose second candidate the verifier rejected with a race (its counterexamples kept as the gate
    records them), one with a long target name. Returns (run ids, candidate ids, the stored counterexamples)."""
    from argus.agent.store import RunStore
    from argus.eval.results import GateResult, StageResult, Status
    from argus.kernels.registry import load
    from argus.verify import verify

    report = verify(load(str(REPO / "tests/verify/corpus/kernels_race_missing_barrier.py") + ":KERNEL"))
    gate = GateResult("race", "gemm", {"M": 64, "N": 64, "K": 64}, [
        StageResult("compile", Status.PASSED, None, "compiled", {"registers": 40}),
        StageResult("verify", Status.FAILED, "VERIFY_VIOLATED", "a race", {"report": report.to_json()}),
    ])  # fmt: skip
    with RunStore(db) as store:
        run = store.start_run("gemm_cp_async", planner="bandit", coder="transform", budget={"candidates": 2})
        start = run.add_candidate(0, action="start", source="s0", params={"ref": {"library": "gemm_cp_async"}})
        run.start_gate(start)
        run.record_stage(start, "compile", "passed", {"reason": "compiled"})
        run.record_stage(start, "profile", "skipped", {"reason": "no CUDA GPU"}, code="PROFILE_NO_GPU")
        run.finish_candidate(start, "accepted", reward=0.0)
        arm = {"id": "policy:stages=3", "kind": "policy", "policy": "stages", "value": 3, "title": "3 stages"}
        choice = {"rationale": "UCB 1.2: prior 2.5", "source": "bandit"}
        racy = run.add_candidate(1, parent=start, action="policy:stages=3", source="racy",
                                 params={"arm": arm, "choice": choice})  # fmt: skip
        run.start_gate(racy)
        run.record_gate_result(racy, gate, label="M=64")
        run.finish_candidate(racy, "rejected", reward=-1.0)
        run.finish()
        other = store.start_run("gemm_residual_warp_specialized_persistent", planner="llm", coder="llm", model="gpt-4o")
        other.add_candidate(0, action="start", source="s")
        other.release()
        return [run.run_id, other.run_id], [start, racy], store.counterexamples(run.run_id)


def test_runs_list_fits_80_columns_pipes_as_tsv_and_json(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    run_ids, _, _ = make_runs(db)
    code, out, _ = run("runs", "list", "--store", str(db), env=TERMINAL_80)
    assert code == 0 and out.startswith(f"runs in {db}")
    body = out.split("\n", 1)[1]  # the first line names the store, a temporary path of any length
    assert_fits(body, [*run_ids, "gemm_cp_async", "gemm_residual_warp_specialized_persistent"])
    code, out, _ = run("runs", "list", "--store", str(db))
    rows = tsv(out)
    assert code == 0 and ELLIPSIS not in out and rows[0][:3] == ["run", "target", "status"]
    assert [r[:2] for r in rows[1:]] == [
        [run_ids[0], "gemm_cp_async"],
        [run_ids[1], "gemm_residual_warp_specialized_persistent"],
    ]
    code, out, _ = run("runs", "list", "--store", str(db), "--json")
    doc = json.loads(out)
    keys = ["id", "target", "status", "planner", "coder", "model", "candidates", "candidate_statuses", "best_reward",
            "usage", "started", "finished"]  # fmt: skip
    assert code == 0 and [r["id"] for r in doc] == run_ids and all(list(r) == keys for r in doc)
    assert doc[0]["candidate_statuses"] == {"accepted": 1, "rejected": 1} and doc[0]["usage"]["exchanges"] == 0
    code, _, _ = run("runs", "list", "--store", str(db), "--json", str(tmp_path / "runs.json"))
    assert code == 0 and json.loads((tmp_path / "runs.json").read_text()) == doc


def test_runs_show_renders_gate_stages_and_counterexamples_as_the_verifier_does(tmp_path: Path) -> None:
    from argus.verify.report import Finding

    db = tmp_path / "runs.db"
    (run_id, _), (start, racy), stored = make_runs(db)
    code, out, _ = run("runs", "show", run_id, "--store", str(db))
    assert code == 0, out
    assert ELLIPSIS not in out and whole(start, out) and whole(racy, out)
    assert "{'" not in out and "': " not in out  # no Python dict reprs
    assert "verify@M=64 failed [VERIFY_VIOLATED]: a race" in out and "compile@M=64 passed" in out
    assert "profile skipped [PROFILE_NO_GPU]: no CUDA GPU" in out
    assert "params: stages=3" in out and "why [bandit]: UCB 1.2: prior 2.5" in out
    race = next(x for x in stored if x["check_code"] == "RACE_READ_WRITE")
    rendered = Finding.from_json(race["payload"]).render_text()
    for line in rendered.splitlines():  # the verifier's text, line by line: thread, element, source line
        assert line.strip() in out, line
    assert "possible read-write race on sA[" in rendered and "by thread" in rendered and "element sA[" in rendered
    assert 'T.copy(sA, rA, atom="ldmatrix")' in out
    code, out80, _ = run("runs", "show", run_id, "--store", str(db), env=TERMINAL_80)
    assert code == 0 and ELLIPSIS not in out80 and whole(racy, out80) and 'T.copy(sA, rA, atom="ldmatrix")' in out80
    code, out, _ = run("runs", "show", run_id, "--store", str(db), "--json")
    doc = json.loads(out)
    assert code == 0 and list(doc) == ["run", "usage", "best", "candidates"] and doc["best"] == start
    keys = ["id", "step", "parent", "action", "params", "status", "attempts", "reward", "median_ms", "gate",
            "counterexamples"]  # fmt: skip
    assert all(list(c) == keys for c in doc["candidates"])
    cex = doc["candidates"][1]["counterexamples"]
    assert [x["check_code"] for x in cex] == [x["check_code"] for x in stored]
    assert next(x for x in cex if x["check_code"] == "RACE_READ_WRITE")["rendered"] == rendered
    assert doc["candidates"][1]["gate"]["verify@M=64"] == {"status": "failed", "code": "VERIFY_VIOLATED",
                                                             "reason": "a race"}  # fmt: skip
    code, _, _ = run("runs", "show", run_id, "--store", str(db), "--json", str(tmp_path / "show.json"))
    assert code == 0 and json.loads((tmp_path / "show.json").read_text()) == doc


def test_runs_show_of_a_counterexample_kept_as_text(tmp_path: Path) -> None:
    from argus.agent.store import RunStore

    with RunStore(tmp_path / "runs.db") as store:
        run_ = store.start_run("gemm")
        cid = run_.add_candidate(0, source="s")
        run_.start_gate(cid)
        run_.record_counterexample(cid, "RACE_SHARED", "write-write race on sA[4092]", {"thread": 17})
        run_.finish_candidate(cid, "rejected", reward=-1.0)
    code, out, _ = run("runs", "show", run_.run_id, "--store", str(tmp_path / "runs.db"))
    assert code == 0 and "[RACE_SHARED] write-write race on sA[4092]" in out and "thread=17" in out


# -- bench and kernelbench -------------------------------------------------------------------------------------


def gpu_report():
    """A bench report as a GPU machine makes it (long kernel names, interleaved ratios), for the layout only."""
    from argus.eval.bench import BenchReport, BenchRow

    names = ["gemm_residual_warp_specialized_persistent", "gemm_hopper_persistent_nn", "gemm_tma_store_epilogue"]
    rows = [
        BenchRow(n, "gemm_nt", {"M": 8192, "N": 8192, "K": 8192}, "accepted", "", True, max_rel_norm=1e-3,
                 time_ms=1.5, tflops=700.0, gbps=250.0, fraction_of_ceiling=0.71,
                 ratios={"cublas": 0.98, "compile": 1.2}, timing_method="interleaved",
                 round_ratios={"cublas": {"q1": 0.97, "q3": 0.99}, "compile": {"q1": 1.1, "q3": 1.3}})
        for n in names
    ]  # fmt: skip
    env = {"gpu": {"name": "NVIDIA H100 80GB HBM3"}, "torch": "2.5.0"}
    return BenchReport("gemm_nt", "gemm_nt", True, rows, {}, [], env, {"method": "interleaved", "rounds": 50}), names


def test_bench_table_of_a_gpu_run_fits_80_columns_and_pipes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import argus.eval.bench

    report, names = gpu_report()
    monkeypatch.setattr(argus.eval.bench, "run_bench", lambda *args, **kwargs: report)
    code, out, _ = run("bench", "gemm_nt", env=TERMINAL_80)
    assert code == 0
    assert_fits(out, [*names, "M=8192,N=8192,K=8192"], width=None)  # too wide for a table: one record per row
    assert "gemm_hopper_persistent_nn\n  shape: M=8192,N=8192,K=8192\n" in out
    code, out, _ = run("bench", "gemm_nt")
    rows = [r for r in tsv(out) if len(r) > 1]
    assert code == 0 and ELLIPSIS not in out and rows[0][:2] == ["kernel", "shape"]
    assert [r[:2] for r in rows[1:]] == [[n, "M=8192,N=8192,K=8192"] for n in names]
    assert "x cublas [q1, q3]" in rows[0] and "0.980x [0.970, 0.990]" in rows[1]
    code, out, err = run("bench", "gemm_nt", "--markdown")  # alone: stdout holds the markdown, the report stderr
    assert code == 0 and out.startswith("### argus bench gemm_nt") and "| gemm_tma_store_epilogue |" in out
    assert "kernel\tshape" in err


def test_bench_on_the_cpu_piped_and_json(tmp_path: Path) -> None:
    target = tmp_path / "bench.json"
    code, out, err = run("bench", "vector_add", "--shapes", "N=777", "--no-isolate", "--trials", "1",
                         "--json", str(target))  # fmt: skip
    assert code == 0, out + err
    rows = [r for r in tsv(out) if len(r) > 1]
    assert ELLIPSIS not in out and rows[0] == ["kernel", "shape", "verdict", "rel. error", "timing"]
    assert rows[1][:3] == ["vector_add", "N=777", "accepted"] and rows[1][4].startswith("skipped: no CUDA GPU")
    doc = json.loads(target.read_text())
    assert list(doc) == ["target", "task", "gpu", "timing", "rows", "baselines", "gates", "environment"]
    assert doc["rows"][0]["kernel"] == "vector_add" and doc["rows"][0]["sizes"] == {"N": 777}
    code, out, err = run("bench", "vector_add", "--shapes", "N=777", "--no-isolate", "--trials", "1", "--json",
                         env=TERMINAL_80)  # fmt: skip
    assert code == 0 and list(json.loads(out)) == list(doc)  # stdout: the document alone
    assert_fits(err, ["vector_add", "N=777"], width=None)  # the report went to stderr, still whole


def test_kernelbench_piped_json_and_markdown(tmp_path: Path) -> None:
    from argus.tasks.kernelbench import default_kernelbench_dir

    problems = default_kernelbench_dir()
    assert (problems / "level1").is_dir(), f"KernelBench problems not found at {problems}"
    csv, md = tmp_path / "kb.csv", tmp_path / "kb.md"
    code, out, err = run("kernelbench", "--problems", str(problems), "--level", "1", "--small", "--only", "19",
                         "--csv", str(csv), "--json", "--markdown", str(md))  # fmt: skip
    assert code == 0, out + err
    doc = json.loads(out)
    assert list(doc) == ["level", "solutions", "summary", "rows", "csv", "store", "run_id"]
    assert doc["rows"][0]["problem_id"] == 19 and doc["rows"][0]["correct"] and doc["csv"] == str(csv)
    rows = [r for r in tsv(err) if len(r) > 1]  # the report, on stderr, piped: tab-separated
    assert rows[0] == ["baseline", "fast_0", "fast_1", "fast_1.5", "fast_2", "geomean", "median", "timed"]
    assert [r[0] for r in rows[1:]] == ["eager", "compile"] and ELLIPSIS not in err
    text = md.read_text()
    assert text.startswith("### KernelBench level 1: identity") and f"| 19_{doc['rows'][0]['name']} |" in text


# -- every listing and report command takes --json [FILE] ----------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [["kernels", "list"], ["kb", "list"], ["kb", "show"], ["kb", "search"], ["kb", "features"], ["kb", "match"],
     ["runs", "list"], ["runs", "show"], ["runs", "export"], ["skills", "list"], ["skills", "show"],
     ["skills", "admit"], ["lineage", "curriculum"], ["verify"], ["bench"], ["kernelbench"], ["optimize"]],
)  # fmt: skip
def test_json_option_in_help(command: list[str]) -> None:
    result = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0 and "--json" in result.output and "[FILE]" in result.output
