"""Faults of a store's file raise a typed error with a stable code that names the file and says what to do — never a
raw sqlite3 traceback — and a store that cannot be written can still be listed and exported.

Both stores are covered: the run store (`argus.agent.store.RunStore`) and the result store
(`argus.eval.store.ResultStore`). Tests run as root on CI, and root ignores file modes, so read-only handling is
tested where it is meaningful for root too: opened with ``read_only=True``, and on a file system simulated to refuse
every write (``sqlite3.connect`` returning a connection that raises SQLite's own read-only error on writes).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from argus.agent.store import RunStore, StoreError
from argus.cli.main import app
from argus.eval.store import STORE_CODES, ResultStore
from argus.eval.store import StoreError as ResultStoreError

REPO = Path(__file__).resolve().parents[2]
WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE", "CREATE", "DROP", "ALTER", "PRAGMA JOURNAL_MODE=")


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def a_store(path: Path) -> tuple[str, list[str]]:
    """A store with a finished run of two candidates (one accepted, one rejected) and a released running one."""
    with RunStore(path) as store:
        run = store.start_run("gemm", planner="bandit", coder="library", budget={"candidates": 4})
        a = run.add_candidate(0, action="baseline", source="def k0(): ...")
        run.start_gate(a)
        run.record_stage(a, "compile", "passed", {"registers": 96})
        run.finish_candidate(a, "accepted", reward=0.0)
        b = run.add_candidate(1, parent=a, action="swizzle", source="def k1(): ...")
        run.start_gate(b)
        run.finish_candidate(b, "rejected", reward=-1.0)
        run.finish(summary={"best": a})
        other = store.start_run("softmax")
        other.release()
        return run.run_id, [a, b]


def garbage(path: Path, size: int = 16384) -> None:
    path.write_bytes(random.Random(7).randbytes(size))


def patch_connect(monkeypatch: pytest.MonkeyPatch, factory_for: Callable[[str], type[sqlite3.Connection] | None]):
    """Make every ``sqlite3.connect`` use the connection class `factory_for(database)` returns (None: SQLite's own)."""
    real = sqlite3.connect

    def connect(database: Any, *args: Any, **kwargs: Any) -> sqlite3.Connection:
        factory = factory_for(str(database))
        return real(database, *args, **({**kwargs, "factory": factory} if factory else kwargs))

    monkeypatch.setattr(sqlite3, "connect", connect)


class ReadOnlyFileSystem(sqlite3.Connection):
    """A connection on a file system that refuses every write, as SQLite reports it (SQLITE_READONLY)."""

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        if sql.lstrip().upper().startswith(WRITES):
            raise sqlite3.OperationalError("attempt to write a readonly database")
        return super().execute(sql, *args)

    def executescript(self, script: str) -> sqlite3.Cursor:
        if any(w in script.upper() for w in WRITES):
            raise sqlite3.OperationalError("attempt to write a readonly database")
        return super().executescript(script)


class CannotReadInPlace(sqlite3.Connection):
    """A ``mode=ro`` connection to a WAL database in a read-only directory: SQLite cannot make the ``-shm`` file and
    cannot read at all (SQLITE_READONLY_DIRECTORY / SQLITE_CANTOPEN)."""

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        raise sqlite3.OperationalError("unable to open database file")


class DiskFull(sqlite3.Connection):
    """A connection on a full disk: a new run, candidate or result fails as SQLite reports it (SQLITE_FULL)."""

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        if any(f"INTO {table} " in sql for table in ("runs", "candidates", "results")):
            raise sqlite3.OperationalError("database or disk is full")
        return super().execute(sql, *args)


def assert_fault(error: pytest.ExceptionInfo, code: str, path: Path, *words: str) -> None:
    assert error.value.code == code and code in STORE_CODES
    text = str(error.value)
    assert str(path) in text and error.value.hint, text
    for word in words:
        assert word in text, (word, text)
    assert "Traceback" not in text


# -- a corrupted file --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("read_only", [False, True])
def test_a_file_of_garbage_is_store_corrupt_and_left_as_it_was(tmp_path: Path, read_only: bool) -> None:
    path = tmp_path / "runs.db"
    garbage(path)
    before = digest(path)
    with pytest.raises(StoreError) as error:
        RunStore(path, read_only=read_only)
    assert_fault(error, "STORE_CORRUPT", path, "mv ", ".recover")
    with pytest.raises(ResultStoreError) as error:
        ResultStore(path, read_only=read_only)
    assert_fault(error, "STORE_CORRUPT", path)
    assert digest(path) == before  # nothing written over what may still be recovered


def test_damaged_pages_are_store_corrupt_when_read(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    run_id, _ = a_store(path)
    data = bytearray(path.read_bytes())
    page = int.from_bytes(data[16:18], "big")
    data[page:] = random.Random(3).randbytes(len(data) - page)  # every page but the first (header and schema)
    path.write_bytes(bytes(data))
    with pytest.raises(StoreError) as error:
        with RunStore(path, read_only=True) as store:
            store.export(run_id)
    assert_fault(error, "STORE_CORRUPT", path)


# -- a full disk -------------------------------------------------------------------------------------------------


def test_a_full_disk_is_store_disk_full_and_loses_nothing_written_before(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    with RunStore(path) as store:
        run = store.start_run("gemm")
        first = run.add_candidate(0, source="def k0(): ...")
        pages = store._db.execute("PRAGMA page_count").fetchone()[0]
        store._db.execute(f"PRAGMA max_page_count = {pages}")  # SQLite's own SQLITE_FULL: the file cannot grow
        with pytest.raises(StoreError) as error:
            run.add_candidate(1, source="x" * 200_000)
        assert_fault(error, "STORE_DISK_FULL", path, "df -h", "not recorded")
        assert [c.id for c in store.read_run(run.run_id).candidates] == [first]
        assert not store._db.in_transaction


def test_a_full_disk_reported_by_the_connection_is_store_disk_full(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "runs.db"
    run_id, candidates = a_store(path)
    patch_connect(monkeypatch, lambda database: DiskFull)
    with RunStore(path) as store:
        writer = store.open_run(run_id)
        with pytest.raises(StoreError) as error:
            writer.add_candidate(2, source="def k2(): ...")
        assert_fault(error, "STORE_DISK_FULL", path)
        assert [c.id for c in store.read_run(run_id).candidates] == candidates
    with ResultStore(tmp_path / "results.db") as results:
        with pytest.raises(ResultStoreError) as error:
            results.start_run("bench")
        assert_fault(error, "STORE_DISK_FULL", tmp_path / "results.db")


# -- a lock held too long ----------------------------------------------------------------------------------------


def test_a_lock_held_by_another_writer_is_store_locked(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    a_store(path)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process's long write transaction
    try:
        start = time.monotonic()
        with RunStore(path) as store:  # opening a store that is set up writes nothing: it does not wait
            assert time.monotonic() - start < 5
            store._db.execute("PRAGMA busy_timeout = 200")
            start = time.monotonic()
            with pytest.raises(StoreError) as error:
                store.start_run("gemm")
            assert time.monotonic() - start < 10
            assert_fault(error, "STORE_LOCKED", path, "another process")
            assert len(store.runs()) == 2  # readers are not blocked by a writer (WAL)
    finally:
        holder.execute("ROLLBACK")
        holder.close()


# -- read-only stores ----------------------------------------------------------------------------------------------


def test_a_store_opened_read_only_lists_and_exports_and_refuses_writes(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    run_id, candidates = a_store(path)
    with RunStore(path) as store:
        expected = store.export(run_id)
    before = digest(path)
    with RunStore(path, read_only=True) as store:
        assert store.read_only
        assert [r["target"] for r in store.runs()] == ["gemm", "softmax"]
        assert [c.id for c in store.read_run(run_id).candidates] == candidates
        assert store.export(run_id) == expected
        with pytest.raises(StoreError) as error:
            store.start_run("again")
        assert_fault(error, "STORE_READ_ONLY", path, "read_only=True", "list, show, export")
        with pytest.raises(StoreError) as error:
            store.open_run(run_id)
        assert error.value.code == "STORE_READ_ONLY"
    assert digest(path) == before


def test_a_read_only_file_system_opens_read_only_by_itself(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "runs.db"
    run_id, candidates = a_store(path)
    with ResultStore(tmp_path / "results.db") as results:
        results.start_run("kernelbench")
    before = digest(path)
    patch_connect(monkeypatch, lambda database: ReadOnlyFileSystem)
    with RunStore(path) as store:  # no flag: the refused schema write makes it read-only
        assert store.read_only
        assert [c.id for c in store.read_run(run_id).candidates] == candidates
        assert store.export(run_id)["run"]["id"] == run_id
        with pytest.raises(StoreError) as error:
            store.start_run("again")
        assert_fault(error, "STORE_READ_ONLY", path, "the file system refused a write")
    runner = CliRunner(env={"COLUMNS": "250"})
    listed = runner.invoke(app, ["runs", "list", "--store", str(path)])
    assert listed.exit_code == 0 and run_id in listed.output, listed.output
    exported = runner.invoke(app, ["runs", "export", run_id, "--store", str(path)])
    assert exported.exit_code == 0 and json.loads(exported.output)["run"]["id"] == run_id
    with ResultStore(tmp_path / "results.db") as results:
        assert results.read_only and [r["kind"] for r in results.runs()] == ["kernelbench"]
        with pytest.raises(ResultStoreError) as error:
            results.start_run("again")
        assert error.value.code == "STORE_READ_ONLY"
    monkeypatch.undo()
    assert digest(path) == before


def test_a_new_store_on_a_read_only_file_system_cannot_be_created(tmp_path: Path, monkeypatch) -> None:
    patch_connect(monkeypatch, lambda database: ReadOnlyFileSystem)
    with pytest.raises(ResultStoreError) as error:
        ResultStore(tmp_path / "new.db")
    assert_fault(error, "STORE_READ_ONLY", tmp_path / "new.db", "cannot create")
    assert not (tmp_path / "new.db").exists()


def test_a_chmod_read_only_store_in_a_read_only_directory(tmp_path: Path) -> None:
    """File 0444 in a 0555 directory: read-only for a user; root ignores the modes and may still write."""
    directory = tmp_path / "shared"
    directory.mkdir()
    path = directory / "runs.db"
    run_id, candidates = a_store(path)
    path.chmod(0o444)
    directory.chmod(0o555)
    try:
        try:
            with open(path, "r+b"):
                enforced = False
        except PermissionError:
            enforced = True
        with RunStore(path) as store:
            assert [c.id for c in store.read_run(run_id).candidates] == candidates
            assert store.export(run_id)["run"]["id"] == run_id
            assert store.read_only is enforced
            if enforced:
                with pytest.raises(StoreError) as error:
                    store.start_run("again")
                assert_fault(error, "STORE_READ_ONLY", path, "not writable")
    finally:
        directory.chmod(0o755)
        path.chmod(0o644)


def test_a_wal_store_that_cannot_be_read_in_place_is_read_from_a_snapshot(tmp_path: Path, monkeypatch) -> None:
    """A WAL database in a read-only directory without its -shm file: ``mode=ro`` cannot read it. Without a -wal
    file ``immutable=1`` reads it; with one (its writer was killed), a private copy does, so that no committed row
    is missed."""
    clean = tmp_path / "clean.db"
    clean_run, _ = a_store(clean)
    killed = tmp_path / "killed.db"
    script = textwrap.dedent(
        f"""
        import os, signal
        from argus.agent.store import RunStore
        store = RunStore({str(killed)!r})
        for i in range(3):
            writer = store.start_run(f"target{{i}}")
            writer.add_candidate(0, source=f"def k{{i}}(): ...")
        os.kill(os.getpid(), signal.SIGKILL)  # the rows are in killed.db-wal only
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == -9, proc.stderr
    assert Path(f"{killed}-wal").stat().st_size > 0
    patch_connect(
        monkeypatch,
        lambda database: CannotReadInPlace if "mode=ro" in database and "immutable" not in database else None,
    )
    with RunStore(clean, read_only=True) as store:
        assert store._db.mode == "immutable"
        assert store.read_run(clean_run).run["target"] == "gemm"
    with RunStore(killed, read_only=True) as store:
        assert store._db.mode == "snapshot"
        snapshot = store._db._snapshot_dir
        assert sorted(r["target"] for r in store.runs()) == ["target0", "target1", "target2"]
        with pytest.raises(StoreError) as error:
            store.start_run("again")
        assert error.value.code == "STORE_READ_ONLY"
    assert snapshot is not None and not os.path.exists(snapshot)


def test_a_missing_store_opened_read_only_is_not_found_and_not_created(tmp_path: Path) -> None:
    path = tmp_path / "none" / "runs.db"
    with pytest.raises(StoreError) as error:
        RunStore(path, read_only=True)
    assert_fault(error, "STORE_NOT_FOUND", path)
    assert not path.parent.exists()


# -- the result store ----------------------------------------------------------------------------------------------


def test_the_result_store_read_only_and_full(tmp_path: Path) -> None:
    path = tmp_path / "results.db"
    with ResultStore(path) as store:
        run = store.start_run("kernelbench", {"level": 1})
        store.put(run, "p1", "accepted", {"ms": 1.0})
    with ResultStore(path, read_only=True) as store:
        assert store.read_only and [r["kind"] for r in store.runs()] == ["kernelbench"]
        assert [r["key"] for r in store.results(run)] == ["p1"]
        with pytest.raises(ResultStoreError) as error:
            store.put(run, "p2", "accepted", {})
        assert_fault(error, "STORE_READ_ONLY", path)
    with ResultStore(path) as store:
        pages = store._db.execute("PRAGMA page_count").fetchone()[0]
        store._db.execute(f"PRAGMA max_page_count = {pages}")
        with pytest.raises(ResultStoreError) as error:
            store.put(run, "big", "accepted", {"log": "x" * 200_000})
        assert_fault(error, "STORE_DISK_FULL", path)
        assert store.done_keys(run) == {"p1"}


def test_a_directory_in_the_stores_place_is_named(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    path.mkdir()
    with pytest.raises(StoreError) as error:
        RunStore(path)
    assert_fault(error, "STORE_CANNOT_OPEN", path, "directory")


def test_a_read_only_store_at_a_path_with_uri_characters(tmp_path: Path) -> None:
    path = tmp_path / "odd?name#100% done" / "runs.db"
    path.parent.mkdir()
    run_id, candidates = a_store(path)
    with RunStore(path, read_only=True) as store:
        assert [c.id for c in store.read_run(run_id).candidates] == candidates


def test_runs_list_on_a_corrupted_store_says_what_to_do_without_a_traceback(tmp_path: Path) -> None:
    import subprocess
    import sys

    bad = tmp_path / "runs.db"
    bad.write_bytes(b"not a database " * 400)
    proc = subprocess.run([sys.executable, "-m", "argus", "runs", "list", "--store", str(bad)],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 2
    assert "STORE_CORRUPT" in proc.stdout + proc.stderr and "Traceback" not in proc.stdout + proc.stderr
