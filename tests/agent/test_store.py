"""The run store: what is written as it happens, resume after a killed writer (nothing lost, nothing repeated), one
writer per run, concurrent runs in one file, no keys in the file, and `argus runs list|show|export`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from argus.agent.providers import Completion
from argus.agent.store import RunStore, StoreError, candidate_fingerprint, scrub
from argus.cli.main import app
from tests.agent.conftest import KEY

REPO = Path(__file__).resolve().parents[2]


def fill(store: RunStore) -> tuple[str, list[str]]:
    """A run with an accepted candidate (counterexample-free), a rejected one with a counterexample, a gating one
    and a proposed one, plus two LLM exchanges."""
    run = store.start_run(
        "gemm",
        planner="llm",
        coder="llm",
        model="gpt-4o",
        budget={"candidates": 10, "cost_usd": 1.0},
        config={"llm": {"provider": "openai", "api_key": KEY, "has_api_key": True}, "seed": 3},
    )
    a = run.add_candidate(0, action="baseline", source="def k0(): ...", kernel_params={"BM": 128})
    run.start_gate(a)
    run.record_stage(a, "compile", "passed", {"registers": 96})
    run.record_stage(a, "correct", "passed", {"trials": 6})
    run.record_timing(a, "M=4096", 2.5, {"tflops": 55.0})
    run.finish_candidate(a, "accepted", reward=0.0, reward_details={"speedup": 1.0}, summary="accepted")
    b = run.add_candidate(1, parent=a, action="swizzle", params={"bytes": 128}, source="def k1(): ...")
    run.start_gate(b)
    run.record_stage(b, "verify", "failed", {"check": "RACE_SHARED"}, code="VERIFY_VIOLATED")
    run.record_counterexample(b, "RACE_SHARED", "write-write race on sA[4092]", {"thread": 17})
    run.finish_candidate(b, "rejected", reward=-1.0)
    c = run.add_candidate(2, parent=a, action="stages", params={"stages": 4}, source="def k2(): ...")
    run.start_gate(c)
    run.record_stage(c, "compile", "passed", {})
    d = run.add_candidate(3, parent=a, action="tile", params={"BN": 256}, source="def k3(): ...")
    messages = [{"role": "system", "content": "plan"}, {"role": "user", "content": "race on sA[4092]; fix it"}]
    completion = Completion("use 4 stages", "gpt-4o", 100, 20, 0.00045, False, 1.5, "h" * 64, "openai", "stop")
    run.record_llm_exchange(messages, completion, purpose="planner", step=2, candidate_id=c)
    cached = Completion("use 4 stages", "gpt-4o", 100, 20, 0.00045, True, 0.001, "h" * 64, "openai", "stop")
    run.record_llm_exchange(messages, cached, purpose="planner", step=3)
    run.record_llm_exchange(
        [{"role": "user", "content": "x"}], error=RuntimeError(f"401 bad key {KEY}"), purpose="coder", secrets=[KEY]
    )
    run.release()
    return run.run_id, [a, b, c, d]


def test_everything_is_recorded_and_read_back(tmp_path: Path) -> None:
    with RunStore(tmp_path / "runs.db") as store:
        assert store.journal_mode == "wal"
        run_id, (a, b, c, d) = fill(store)
        state = store.read_run(run_id)
        assert state.run["target"] == "gemm" and state.run["planner"] == "llm" and state.run["model"] == "gpt-4o"
        assert state.run["budget"] == {"candidates": 10, "cost_usd": 1.0}
        assert state.run["config"]["llm"]["api_key"] == "[REDACTED]" and state.run["config"]["seed"] == 3
        assert state.run["config"]["llm"]["has_api_key"] is True
        assert state.run["status"] == "interrupted"  # running, but nobody holds it
        assert [x.id for x in state.done] == [a, b]
        assert [x.id for x in state.in_flight] == [c] and [x.id for x in state.pending] == [d]
        assert [x.id for x in state.to_gate] == [c, d] and state.next_step == 4
        assert state.rewards == {a: 0.0, b: -1.0}
        assert state.best().id == a
        assert [(h["step"], h["action"], h["status"], h["reward"], h["code"]) for h in state.history()] == [
            (0, "baseline", "accepted", 0.0, None),
            (1, "swizzle", "rejected", -1.0, "VERIFY_VIOLATED"),
        ]
        cb = state.candidate(b)
        assert cb.parent_id == a and cb.params == {"bytes": 128} and cb.source == "def k1(): ..."
        assert cb.gate["verify"] == {"status": "failed", "code": "VERIFY_VIOLATED", "payload": {"check": "RACE_SHARED"}}
        assert state.candidate(a).kernel_params == {"BM": 128}
        assert state.candidate(a).fingerprint == candidate_fingerprint("def k0(): ...", {"BM": 128})
        assert len(state.fingerprints) == 4
        assert state.usage["exchanges"] == 3 and state.usage["cached"] == 1 and state.usage["errors"] == 1
        assert state.usage["cost_usd"] == pytest.approx(0.00045)  # the cached replay is not paid twice
        (cex,) = store.counterexamples(run_id)
        assert cex["candidate_id"] == b and cex["text"] == "write-write race on sA[4092]"
        (timing,) = store.timings(run_id)
        assert timing["median_ms"] == 2.5 and timing["payload"] == {"tflops": 55.0}
        exchanges = store.llm_exchanges(run_id)
        assert exchanges[0]["prompt"][1]["content"] == "race on sA[4092]; fix it"
        assert exchanges[0]["response"] == "use 4 stages" and exchanges[0]["request_hash"] == "h" * 64
        assert exchanges[1]["cached"] is True and exchanges[2]["response"] is None
        assert "RuntimeError" in exchanges[2]["error"]
        exported = store.export(run_id)
        assert exported["run"]["id"] == run_id and len(exported["candidates"]) == 4
        assert len(exported["llm_exchanges"]) == 3 and "owner" not in exported["run"]
        json.dumps(exported)
    assert KEY not in (tmp_path / "runs.db").read_bytes().decode("latin-1")
    assert all(KEY not in p.read_bytes().decode("latin-1") for p in tmp_path.glob("runs.db*"))


def test_a_finished_candidate_is_never_gated_or_finished_again(tmp_path: Path) -> None:
    with RunStore(tmp_path / "runs.db") as store:
        run = store.start_run("softmax")
        cid = run.add_candidate(0, source="s")
        run.start_gate(cid)
        run.finish_candidate(cid, "accepted", reward=1.0)
        for action in (lambda: run.start_gate(cid), lambda: run.finish_candidate(cid, "rejected")):
            with pytest.raises(StoreError) as info:
                action()
            assert info.value.code == "RUN_CANDIDATE_FINISHED"
        with pytest.raises(StoreError) as info:
            run.record_stage("nope", "compile", "passed")
        assert info.value.code == "RUN_CANDIDATE_UNKNOWN"
        with pytest.raises(StoreError):
            run.finish_candidate(cid, "great")
        assert store.read_run(run.run_id).candidate(cid).reward == 1.0


def test_regating_clears_the_interrupted_attempt(tmp_path: Path) -> None:
    with RunStore(tmp_path / "runs.db") as store:
        run = store.start_run("gemm")
        cid = run.add_candidate(0, source="s")
        run.start_gate(cid)
        run.record_stage(cid, "compile", "passed", {"attempt": 1})
        run.record_counterexample(cid, "RACE_SHARED", "stale")
        run.release()
        resumed = store.open_run(run.run_id)
        assert [c.id for c in resumed.state.in_flight] == [cid]
        assert resumed.start_gate(cid) == 2
        after = resumed.read().candidate(cid)
        assert after.gate == {} and after.status == "gating" and after.attempts == 2
        assert store.counterexamples(run.run_id) == []


def test_one_writer_per_run(tmp_path: Path) -> None:
    with RunStore(tmp_path / "runs.db") as store, RunStore(tmp_path / "runs.db") as other:
        run = store.start_run("gemm")
        with pytest.raises(StoreError) as info:
            other.open_run(run.run_id)  # this process is alive and holds it
        assert info.value.code == "RUN_LOCKED"
        taken = other.open_run(run.run_id, force=True)
        with pytest.raises(StoreError) as info:
            run.add_candidate(0, source="s")  # the old writer lost the run
        assert info.value.code == "RUN_LOCKED"
        taken.add_candidate(0, source="s")
        taken.finish(summary={"best": None})
        assert store.read_run(run.run_id).run["status"] == "finished"
        with pytest.raises(StoreError) as info:
            store.open_run("no-such-run")
        assert info.value.code == "RUN_NOT_FOUND"
        reopened = store.open_run(run.run_id)  # a finished run may be continued (a larger budget)
        assert reopened.state.next_step == 1 and store.read_run(run.run_id).run["status"] == "running"


def run_script(store: Path, log: Path, steps: int, *extra: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "tests.agent.run_script", str(store), str(log), str(steps), *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=REPO)


@pytest.mark.parametrize("kill", [False, True], ids=["os._exit", "SIGKILL"])
def test_a_killed_run_resumes_without_losing_or_repeating_work(tmp_path: Path, kill: bool) -> None:
    db, log = tmp_path / "runs.db", tmp_path / "log.txt"
    first = run_script(db, log, 5, "--crash-at", "2:gate", *(["--kill"] if kill else []))
    assert first.returncode == (-9 if kill else 17), first.stderr
    run_id = first.stdout.split()[0]
    with RunStore(db) as store:
        state = store.read_run(run_id)
        assert state.run["status"] == "interrupted"
        assert [c.step for c in state.done] == [0, 1]
        (in_flight,) = state.in_flight
        assert in_flight.step == 2 and list(in_flight.gate) == ["compile"]  # died mid-gate
    second = run_script(db, log, 5, "--resume", run_id)
    assert second.returncode == 0, second.stderr
    with RunStore(db) as store:
        state = store.read_run(run_id)
        assert state.run["status"] == "finished"
        assert [c.step for c in state.candidates] == [0, 1, 2, 3, 4]  # one candidate per step: none lost or added
        assert all(c.status == "accepted" for c in state.candidates)
        assert [state.candidate(c.id).reward for c in state.candidates] == [0.0, 1.0, 2.0, 3.0, 4.0]
        redone = state.candidates[2]
        assert redone.attempts == 2 and redone.gate["compile"]["payload"]["attempt"] == 2
        assert {s: g["payload"]["attempt"] for s, g in redone.gate.items()} == {"compile": 2, "verify": 2, "correct": 2}
        assert len(store.timings(run_id)) == 5  # the interrupted attempt left nothing behind
        parents = [c.parent_id for c in state.candidates]
        assert parents == [None] + [c.id for c in state.candidates[:-1]]
    lines = log.read_text().splitlines()
    assert [line for line in lines if line.startswith("plan")] == [f"plan {i}" for i in range(5)]  # never replanned
    gates = [line for line in lines if line.startswith("gate")]
    assert [g.split()[1][-4:] for g in gates] == ["0000", "0001", "0002", "0002", "0003", "0004"]
    assert gates[3].endswith("attempt 2")


def test_a_candidate_recorded_but_not_gated_is_gated_on_resume_not_replanned(tmp_path: Path) -> None:
    db, log = tmp_path / "runs.db", tmp_path / "log.txt"
    first = run_script(db, log, 3, "--crash-at", "1:proposed", "--kill")
    assert first.returncode == -9, first.stderr
    run_id = first.stdout.split()[0]
    with RunStore(db) as store:
        assert [c.step for c in store.read_run(run_id).pending] == [1]
    assert run_script(db, log, 3, "--resume", run_id).returncode == 0
    lines = log.read_text().splitlines()
    assert lines == [
        "plan 0",
        f"gate {run_id}-0000 attempt 1",
        "plan 1",
        f"gate {run_id}-0001 attempt 1",
        "plan 2",
        f"gate {run_id}-0002 attempt 1",
    ]


def test_a_live_writer_in_another_process_keeps_its_run(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    code = (
        "import sys\nfrom argus.agent.store import RunStore\n"
        f"run = RunStore({str(db)!r}).start_run('gemm')\nprint(run.run_id, flush=True)\nsys.stdin.readline()\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        run_id = proc.stdout.readline().strip()
        with RunStore(db) as store:
            assert store.read_run(run_id).run["status"] == "running"
            with pytest.raises(StoreError) as info:
                store.open_run(run_id)
            assert info.value.code == "RUN_LOCKED" and str(proc.pid) in str(info.value)
    finally:
        proc.kill()
        proc.wait(timeout=30)
    with RunStore(db) as store:
        assert store.read_run(run_id).run["status"] == "interrupted"
        store.open_run(run_id).finish()


def test_concurrent_runs_in_one_file(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    code = (
        "import sys\nfrom argus.agent.store import RunStore\n"
        f"run = RunStore({str(db)!r}).start_run(sys.argv[1])\n"
        "for i in range(40):\n"
        "    c = run.add_candidate(i, source=f'{sys.argv[1]}{i}')\n"
        "    run.start_gate(c)\n"
        "    run.record_stage(c, 'compile', 'passed', {'i': i})\n"
        "    run.finish_candidate(c, 'accepted', reward=float(i))\n"
        "run.finish()\nprint(run.run_id)\n"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code, f"t{n}"], stdout=subprocess.PIPE, text=True) for n in range(3)
    ]
    ids = []
    for p in procs:
        out, _ = p.communicate(timeout=120)
        assert p.returncode == 0
        ids.append(out.strip())
    with RunStore(db) as store:
        for run_id in ids:
            state = store.read_run(run_id)
            assert len(state.done) == 40 and state.run["status"] == "finished"
            assert [c.step for c in state.candidates] == list(range(40))


def test_scrub_removes_secret_fields_and_key_shaped_strings() -> None:
    cleaned = scrub({"api_key": KEY, "nested": {"auth_token": "t0k3n-value", "api_key_source": "env X"},
                     "note": f"header Bearer {KEY}", "has_api_key": True, "keys": None})  # fmt: skip
    text = json.dumps(cleaned)
    assert KEY not in text and "t0k3n-value" not in text
    assert cleaned["nested"]["api_key_source"] == "env X" and cleaned["has_api_key"] is True


# -- the command line --------------------------------------------------------------------------------------------

runner = CliRunner(env={"COLUMNS": "250"})


def test_runs_list_show_and_export(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    with RunStore(db) as store:
        run_id, (a, b, c, d) = fill(store)
    listed = runner.invoke(app, ["runs", "list", "--store", str(db)])
    assert listed.exit_code == 0, listed.output
    assert run_id in listed.output and "gemm" in listed.output and "interrupted" in listed.output
    shown = runner.invoke(app, ["runs", "show", run_id, "--store", str(db)])
    assert shown.exit_code == 0, shown.output
    for text in ("swizzle", "rejected", "VERIFY_VIOLATED", "best:", "gated again", "3 exchanges"):
        assert text in shown.output, text
    target = tmp_path / "run.json"
    exported = runner.invoke(app, ["runs", "export", run_id, "--store", str(db), "--json", str(target)])
    assert exported.exit_code == 0, exported.output
    data = json.loads(target.read_text())
    assert [x["id"] for x in data["candidates"]] == [a, b, c, d] and KEY not in target.read_text()
    to_stdout = runner.invoke(app, ["runs", "export", run_id, "--store", str(db)])
    assert json.loads(to_stdout.output)["run"]["id"] == run_id


def test_runs_commands_on_a_missing_run_or_store(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    empty = runner.invoke(app, ["runs", "list", "--store", str(db)])
    assert empty.exit_code == 0 and "no runs yet" in empty.output and not db.exists()
    RunStore(db).close()
    missing = runner.invoke(app, ["runs", "show", "nope", "--store", str(db)])
    assert missing.exit_code == 2 and "RUN_NOT_FOUND" in missing.output
    assert runner.invoke(app, ["runs", "export", "nope", "--store", str(db)]).exit_code == 2
    assert runner.invoke(app, ["runs", "show", "x", "--store", str(tmp_path / "none.db")]).exit_code == 2


def test_a_gate_result_is_recorded_with_its_counterexamples(tmp_path: Path) -> None:
    from argus.eval.results import GateResult, StageResult, Status
    from argus.kernels.registry import load
    from argus.verify import verify

    report = verify(load(str(REPO / "tests/verify/corpus/kernels_race_missing_barrier.py") + ":KERNEL"))
    result = GateResult(
        "race",
        "gemm",
        {"M": 64, "N": 64, "K": 64},
        [
            StageResult("compile", Status.PASSED, None, "compiled", {"registers": 40}),
            StageResult("verify", Status.FAILED, "VERIFY_VIOLATED", "race", {"report": report.to_json()}),
        ],
    )
    with RunStore(tmp_path / "runs.db") as store:
        run = store.start_run("gemm")
        cid = run.add_candidate(0, source="racy")
        run.start_gate(cid)
        findings = report.to_json()["findings"]
        # errors with a counterexample are recorded; warnings (bank conflicts, alignment assumptions) are not
        errors = [f for f in findings if f["severity"] == "error" and f["verdict"] == "violated"]
        errors = [f for f in errors if f["counterexample"]]
        assert run.record_gate_result(cid, result, label="M=64") == len(errors)
        run.finish_candidate(cid, "rejected", reward=-1.0)
        gate = store.read_run(run.run_id).candidate(cid).gate
        assert set(gate) == {"gate@M=64", "compile@M=64", "verify@M=64"}
        assert gate["gate@M=64"]["status"] == "rejected" and gate["verify@M=64"]["code"] == "VERIFY_VIOLATED"
        stored = store.counterexamples(run.run_id)
        assert [x["check_code"] for x in stored] == [f["code"] for f in errors]
        assert store.read_run(run.run_id).history()[0]["code"] == "VERIFY_VIOLATED"
        race = next(x for x in stored if x["check_code"] == "RACE_READ_WRITE")  # the seeded bug
        assert race["payload"]["counterexample"]["accesses"] and race["text"]


def test_a_failed_exchange_is_recorded_with_its_request_and_without_the_key(make, server, tmp_path: Path) -> None:
    from argus.agent.providers import ProviderAuthError, request_hash
    from tests.agent.llm_server import status

    server.script = [status(401, f"Incorrect API key provided: {KEY}")]
    provider = make()
    messages = [{"role": "user", "content": "fix the race on sA"}]
    with pytest.raises(ProviderAuthError) as info:
        provider.complete(messages, max_tokens=16, temperature=0)
    expected = request_hash(provider.build_request(messages, max_tokens=16, temperature=0).to_json())
    assert info.value.request_hash == expected
    with RunStore(tmp_path / "runs.db") as store:
        run = store.start_run("gemm", model="gpt-4o", config={"llm": provider.describe()})
        run.record_llm_exchange(messages, error=info.value, purpose="coder", provider="openai", model="gpt-4o")
        (exchange,) = store.llm_exchanges(run.run_id)
        assert exchange["request_hash"] == expected and "LLM_AUTH" in exchange["error"]
        assert exchange["response"] is None and exchange["prompt"] == messages
        run.finish()
    assert all(KEY not in p.read_bytes().decode("latin-1") for p in tmp_path.glob("runs.db*"))


def test_threads_share_a_store(tmp_path: Path) -> None:
    import threading

    with RunStore(tmp_path / "runs.db") as store:
        writers = [store.start_run(f"t{i}") for i in range(4)]
        errors: list[BaseException] = []

        def work(run) -> None:
            try:
                for step in range(25):
                    cid = run.add_candidate(step, source=f"{run.run_id}{step}")
                    run.start_gate(cid)
                    run.finish_candidate(cid, "accepted", reward=1.0)
                    store.read_run(run.run_id)  # a reader between the writes
            except BaseException as e:  # noqa: BLE001 - reported below
                errors.append(e)

        threads = [threading.Thread(target=work, args=(w,)) for w in writers]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        assert errors == []
        assert [len(store.read_run(w.run_id).done) for w in writers] == [25] * 4
