"""The result store: WAL mode, one committed row per result, nothing lost when the writing process dies."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from argus.eval.store import ResultStore


def test_results_round_trip_in_wal_mode(tmp_path: Path) -> None:
    with ResultStore(tmp_path / "runs.db") as store:
        assert store.journal_mode == "wal"
        run = store.start_run("bench", {"task": "gemm"})
        store.put(run, "a", "accepted", {"time_ms": 1.5, "bad": float("nan")})
        store.put(run, "b", "rejected", {"code": "CORRECT_MISMATCH"})
        store.put(run, "a", "rejected", {"again": True})  # a re-evaluated key replaces its row
        store.finish_run(run, {"correct": 1})
        rows = store.results(run)
        assert [(r["key"], r["status"]) for r in rows] == [("b", "rejected"), ("a", "rejected")]
        assert store.done_keys(run) == {"a", "b"}
        (meta,) = store.runs()
        assert meta["meta"] == {"task": "gemm"} and meta["summary"] == {"correct": 1}


def test_results_survive_the_writer_being_killed(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    script = textwrap.dedent(
        f"""
        import os, signal
        from argus.eval.store import ResultStore
        store = ResultStore({str(path)!r})
        run = store.start_run("kernelbench")
        for i in range(3):
            store.put(run, f"problem{{i}}", "accepted", {{"i": i}})
        print(run, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)  # no close, no cleanup
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == -9
    run = proc.stdout.strip()
    with ResultStore(path) as store:
        assert [r["payload"]["i"] for r in store.results(run)] == [0, 1, 2]
        assert store.runs()[0]["finished"] is None
