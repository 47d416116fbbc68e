"""Results on disk as they arrive: a small SQLite store (WAL mode), one row per evaluated candidate.

Each `ResultStore.put` is its own committed transaction, so a result is on disk before the next candidate
starts, and whatever the parent process was doing when it died, the results already reported survive (WAL mode
also lets a reader — a dashboard, another process — read while a run writes).

Schema: ``runs(id, kind, created, finished, meta, summary)`` and ``results(run_id, key, status, created,
payload)`` with ``(run_id, key)`` unique (a re-evaluated key replaces its row). ``meta``, ``summary`` and
``payload`` are JSON text.

Faults of the file (this module's `open_store` and `StoreConnection`, shared with `argus.agent.store`): a read-only
file or directory, a corrupted file, a full disk, a lock held too long and an I/O error are raised as `StoreError`
(or the caller's error type) with a stable code (`STORE_CODES`) naming the file and what to do, never as a raw
``sqlite3`` traceback. A store that cannot be written is opened read-only (``mode=ro``; where SQLite cannot even
read that way — a WAL database in a read-only directory, whose ``-shm`` file cannot be made — a snapshot:
``immutable=1``, or a private copy when a ``-wal`` file holds writes not yet in the main file), so it can still be
listed and exported; writing to it raises ``STORE_READ_ONLY``.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from argus.diagnostics import ArgusError
from argus.eval.results import jsonable

#: Stable codes of the store's file faults, and what each means (the error's message names the file, its hint what
#: to do).
STORE_CODES: dict[str, str] = {
    "STORE_READ_ONLY": "the file or its directory cannot be written, or the store was opened read-only: reading "
    "(list, show, export) works, writing does not",
    "STORE_CORRUPT": "the file is not a SQLite database, or its pages are damaged",
    "STORE_DISK_FULL": "the file system that holds the store is full",
    "STORE_LOCKED": "another process held the store's write lock for longer than the busy timeout",
    "STORE_IO": "the operating system reported an I/O error reading or writing the file",
    "STORE_NOT_FOUND": "there is no store at the path (opening read-only creates nothing)",
    "STORE_CANNOT_OPEN": "SQLite cannot open the file (a missing or inaccessible directory, a directory in its place)",
}

# SQLite's primary result codes (the low byte of an extended code).
_SQLITE_BUSY, _SQLITE_LOCKED, _SQLITE_READONLY, _SQLITE_IOERR, _SQLITE_CORRUPT = 5, 6, 8, 10, 11
_SQLITE_FULL, _SQLITE_CANTOPEN, _SQLITE_PERM, _SQLITE_NOTADB = 13, 14, 3, 26

# The same faults by message, for errors that carry no code (raised by a wrapper, or an older Python).
_MESSAGES = (
    ("readonly database", "STORE_READ_ONLY"),
    ("read-only", "STORE_READ_ONLY"),
    ("access permission denied", "STORE_READ_ONLY"),
    ("database or disk is full", "STORE_DISK_FULL"),
    ("disk is full", "STORE_DISK_FULL"),
    ("file is not a database", "STORE_CORRUPT"),
    ("malformed", "STORE_CORRUPT"),
    ("database is locked", "STORE_LOCKED"),
    ("table is locked", "STORE_LOCKED"),
    ("disk i/o error", "STORE_IO"),
    ("unable to open database file", "STORE_CANNOT_OPEN"),
)


class StoreError(ArgusError):
    """The result store's file cannot be opened, read or written; `code` is one of `STORE_CODES`."""


def store_fault(error: BaseException) -> str | None:
    """The `STORE_CODES` code of a ``sqlite3`` error about the file itself (read-only, corrupt, full, locked, I/O,
    cannot open), or None for anything else (a mistake in SQL, a constraint: the caller's to handle)."""
    if not isinstance(error, sqlite3.Error) or isinstance(
        error, (sqlite3.IntegrityError, sqlite3.ProgrammingError, sqlite3.InterfaceError)
    ):
        return None
    code = getattr(error, "sqlite_errorcode", None)
    if isinstance(code, int):
        by_code = {
            _SQLITE_READONLY: "STORE_READ_ONLY",
            _SQLITE_PERM: "STORE_READ_ONLY",
            _SQLITE_FULL: "STORE_DISK_FULL",
            _SQLITE_CORRUPT: "STORE_CORRUPT",
            _SQLITE_NOTADB: "STORE_CORRUPT",
            _SQLITE_BUSY: "STORE_LOCKED",
            _SQLITE_LOCKED: "STORE_LOCKED",
            _SQLITE_IOERR: "STORE_IO",
            _SQLITE_CANTOPEN: "STORE_CANNOT_OPEN",
        }.get(code & 0xFF)
        if by_code is not None:
            return by_code
    text = str(error).lower()
    return next((fault for words, fault in _MESSAGES if words in text), None)


def describe_fault(
    fault: str, path: Path, detail: str = "", *, read_only_reason: str | None = None, timeout_s: float | None = None
) -> tuple[str, str]:
    """(message, hint) of a `STORE_CODES` fault of the store at `path`: what happened to which file, what to do."""
    said = f" ({detail})" if detail else ""
    if fault == "STORE_READ_ONLY":
        why = f"it was opened read-only because {read_only_reason}" if read_only_reason else "it cannot be written"
        return (
            f"cannot write to the store {path}: {why}{said}",
            f"reading it (list, show, export) works; to write, make {path} and its directory writable by this user "
            f"(SQLite also writes {path.name}-wal and {path.name}-shm beside it), or use a writable copy or another "
            "path (--store, ARGUS_RUNS_DB)",
        )
    if fault == "STORE_CORRUPT":
        return (
            f"the store {path} is not a readable SQLite database: it is corrupted or not a store at all{said}",
            f"move it aside (mv {path} {path}.corrupt) and let argus start a new store there; `sqlite3 {path}.corrupt "
            f"'.recover' | sqlite3 {path}` may save what is left of its rows",
        )
    if fault == "STORE_DISK_FULL":
        return (
            f"the disk that holds the store {path} is full: this write was not recorded (everything written before "
            f"it was committed and is kept){said}",
            f"free space on that file system (df -h {path.parent}) or point the store elsewhere (--store, "
            "ARGUS_RUNS_DB), then run again (runs resume where they stopped)",
        )
    if fault == "STORE_LOCKED":
        waited = f" for more than {timeout_s:g} s" if timeout_s is not None else ""
        return (
            f"the store {path} is locked by another process{waited}{said}",
            "another argus process (or a sqlite3 shell) holds a write transaction on it: let it finish or stop it, "
            "then retry; a store on a network file system may not support SQLite's locks (use a local disk)",
        )
    if fault == "STORE_IO":
        return (
            f"the operating system reported an I/O error on the store {path}{said}",
            "check the disk and the file system (dmesg, df -h); a store on a network file system may not support "
            "SQLite (use a local disk)",
        )
    if fault == "STORE_NOT_FOUND":
        return (f"there is no store at {path}{said}", "check the path (--store, ARGUS_RUNS_DB)")
    return (
        f"SQLite cannot open the store {path}{said}",
        f"check that {path.parent} exists and is a directory this user can read and write, and that {path} is a file",
    )


class StoreCursor:
    """A ``sqlite3.Cursor`` whose file faults are raised as the store's typed error (see `StoreConnection`)."""

    def __init__(self, cursor: sqlite3.Cursor, connection: StoreConnection) -> None:
        self._cursor = cursor
        self._connection = connection

    @property
    def lastrowid(self) -> int | None:
        return self._cursor.lastrowid

    @property
    def rowcount(self) -> int:
        return self._cursor.rowcount

    def fetchone(self) -> Any:
        with self._connection.faults():
            return self._cursor.fetchone()

    def fetchall(self) -> list[Any]:
        with self._connection.faults():
            return self._cursor.fetchall()

    def __iter__(self) -> Iterator[Any]:
        while True:
            with self._connection.faults():
                row = self._cursor.fetchone()
            if row is None:
                return
            yield row


class StoreConnection:
    """A ``sqlite3.Connection`` (from `open_store`) that raises the faults of the store's file (`store_fault`) as
    `error_type` with a `STORE_CODES` code, the file's path and what to do; every other error passes unchanged.

    Attributes:
        path: the store's file.
        read_only: True when the store was opened read-only (asked for, or the file could not be written).
        read_only_reason: why, in words (None when writable).
        mode: how it was opened: ``"rw"``, ``"ro"`` (``mode=ro``), ``"immutable"`` or ``"snapshot"`` (a private
            copy of the file and its ``-wal``, read-only).
    """

    def __init__(
        self,
        connection: sqlite3.Connection,
        path: Path,
        error_type: Callable[..., Exception],
        *,
        timeout_s: float,
        mode: str = "rw",
        read_only_reason: str | None = None,
        snapshot_dir: str | None = None,
    ) -> None:
        self._connection = connection
        self.path = path
        self.error_type = error_type
        self.timeout_s = timeout_s
        self.mode = mode
        self.read_only = mode != "rw"
        self.read_only_reason = read_only_reason
        self._snapshot_dir = snapshot_dir

    def error(self, fault: str, cause: BaseException | None = None, detail: str | None = None) -> Exception:
        """The typed error of `fault` for this store."""
        message, hint = describe_fault(
            fault,
            self.path,
            detail if detail is not None else (str(cause) if cause is not None else ""),
            read_only_reason=self.read_only_reason,
            timeout_s=self.timeout_s,
        )
        return self.error_type(fault, message, hint)

    @contextlib.contextmanager
    def faults(self) -> Iterator[None]:
        """Raise the file faults of the block as the store's typed error (chained to the sqlite3 error)."""
        try:
            yield
        except sqlite3.Error as e:
            fault = store_fault(e)
            if fault is None:
                raise
            raise self.error(fault, e) from e

    @property
    def in_transaction(self) -> bool:
        return self._connection.in_transaction

    def execute(self, sql: str, parameters: Sequence[Any] | dict[str, Any] = ()) -> StoreCursor:
        if sql.strip().upper() == "ROLLBACK" and not self._connection.in_transaction:
            # SQLite already rolled back (it does after some faults, e.g. a full disk): the fault is what counts
            return StoreCursor(self._connection.cursor(), self)
        with self.faults():
            return StoreCursor(self._connection.execute(sql, parameters), self)

    def executescript(self, script: str) -> None:
        with self.faults():
            self._connection.executescript(script)

    def close(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            self._connection.close()
        if self._snapshot_dir is not None:
            shutil.rmtree(self._snapshot_dir, ignore_errors=True)
            self._snapshot_dir = None


def _uri(path: Path, **query: str) -> str:
    return f"file:{quote(str(path.resolve()))}?" + "&".join(f"{k}={v}" for k, v in query.items())


def _wal_pending(path: Path) -> bool:
    wal = Path(f"{path}-wal")
    return wal.exists() and wal.stat().st_size > 0


def _probe(db: sqlite3.Connection) -> None:
    """Read the schema: makes SQLite read the file's header (and so find a corrupted file) at open time."""
    db.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()


def open_store(
    path: Path,
    setup: Callable[[StoreConnection], None],
    *,
    read_only: bool = False,
    timeout_s: float = 30.0,
    error_type: Callable[..., Exception] = StoreError,
    check_same_thread: bool = True,
) -> StoreConnection:
    """Open the SQLite store at `path` (autocommit: the caller issues ``BEGIN``), its file faults raised as
    `error_type` (see `StoreConnection`).

    Writable (the default): the directory is created, the file opened and `setup` run on it (pragmas, schema).
    The store is opened read-only instead — and `setup` not run — when `read_only` is asked, when the existing file
    or its directory is not writable, or when `setup` fails because the file system refuses writes: first with
    ``mode=ro``; when SQLite cannot read that way (a WAL file in a read-only directory cannot get its ``-shm``),
    ``immutable=1``, or, when a ``-wal`` file holds writes the main file does not have yet, a private read-only copy
    of both (so no committed row is missed). Raises ``STORE_NOT_FOUND`` for a missing file opened read-only,
    ``STORE_READ_ONLY`` when the file does not exist and cannot be created, ``STORE_CORRUPT`` for a file that is not
    a SQLite database, and the other `STORE_CODES` as they occur.
    """
    path = Path(path)

    def fail(fault: str, detail: str = "", reason: str | None = None) -> Exception:
        message, hint = describe_fault(fault, path, detail, read_only_reason=reason, timeout_s=timeout_s)
        return error_type(fault, message, hint)

    if path.is_dir():
        raise fail("STORE_CANNOT_OPEN", "a directory is in its place")
    reason = "that was asked for (read_only=True)" if read_only else _unwritable(path)
    if reason is None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except PermissionError as e:
            raise fail("STORE_READ_ONLY", f"cannot create its directory: {e.strerror}") from e
        except OSError as e:
            raise fail("STORE_CANNOT_OPEN", f"cannot create its directory: {e.strerror}") from e
        existed = path.exists()
        db = None
        try:
            db = sqlite3.connect(
                str(path), timeout=timeout_s, isolation_level=None, check_same_thread=check_same_thread
            )
            store = StoreConnection(db, path, error_type, timeout_s=timeout_s)
            with store.faults():
                _probe(db)
            setup(store)
            return store
        except Exception as e:  # noqa: BLE001 - a write refused by the file system: read-only below
            if db is not None:
                db.close()
            cause = e.__cause__ if isinstance(e.__cause__, sqlite3.Error) else e
            if store_fault(cause) not in ("STORE_READ_ONLY", "STORE_CANNOT_OPEN"):
                raise
            if not existed:
                with contextlib.suppress(OSError):
                    if path.exists() and path.stat().st_size == 0:
                        path.unlink()  # nothing was written: leave no empty file behind
                if store_fault(cause) == "STORE_READ_ONLY" or not os.access(path.parent, os.W_OK | os.X_OK):
                    raise error_type(
                        "STORE_READ_ONLY",
                        f"cannot create the store {path}: its directory is not writable ({cause})",
                        f"make {path.parent} writable by this user, or choose another path (--store, ARGUS_RUNS_DB)",
                    ) from cause
                raise fail("STORE_CANNOT_OPEN", str(cause)) from cause
            reason = f"the file system refused a write: {cause}"
    return _open_read_only(path, reason, timeout_s, error_type, check_same_thread, fail)


def _unwritable(path: Path) -> str | None:
    """Why an existing store at `path` cannot be written (by the file's and the directory's modes; root passes
    both checks, as it can write), or None."""
    if not path.exists():
        return None
    if not os.access(path, os.W_OK):
        return "the file is not writable"
    if not os.access(path.parent, os.W_OK | os.X_OK):
        return "its directory is not writable"
    return None


def _open_read_only(
    path: Path,
    reason: str,
    timeout_s: float,
    error_type: Callable[..., Exception],
    check_same_thread: bool,
    fail: Callable[..., Exception],
) -> StoreConnection:
    if not path.exists():
        raise fail("STORE_NOT_FOUND", "opened read-only, which creates nothing")

    def connect(uri: str) -> sqlite3.Connection:
        return sqlite3.connect(
            uri, uri=True, timeout=timeout_s, isolation_level=None, check_same_thread=check_same_thread
        )

    db = None
    try:
        db = connect(_uri(path, mode="ro"))
        _probe(db)
        db.execute("PRAGMA query_only = ON")
        return StoreConnection(db, path, error_type, timeout_s=timeout_s, mode="ro", read_only_reason=reason)
    except sqlite3.Error as e:
        if db is not None:
            db.close()
        fault = store_fault(e)
        if fault is None:
            raise
        if fault not in ("STORE_READ_ONLY", "STORE_CANNOT_OPEN"):
            raise fail(fault, str(e), reason) from e
        first = e
    # SQLite cannot read it in place (a WAL file without its -shm in a read-only directory): a snapshot
    snapshot_dir = None
    try:
        if _wal_pending(path):  # committed rows may be in the -wal only: read a private copy of both
            snapshot_dir = tempfile.mkdtemp(prefix="argus-store-")
            copy = Path(snapshot_dir) / path.name
            shutil.copyfile(path, copy)
            shutil.copyfile(f"{path}-wal", f"{copy}-wal")
            db = connect(_uri(copy))
            mode = "snapshot"
        else:
            db = connect(_uri(path, mode="ro", immutable="1"))
            mode = "immutable"
        _probe(db)
        db.execute("PRAGMA query_only = ON")
    except (sqlite3.Error, OSError) as e:
        if snapshot_dir is not None:
            shutil.rmtree(snapshot_dir, ignore_errors=True)
        fault = store_fault(e) if isinstance(e, sqlite3.Error) else None
        raise fail(fault or "STORE_CANNOT_OPEN", f"{first}; then {e}", reason) from e
    return StoreConnection(
        db, path, error_type, timeout_s=timeout_s, mode=mode, read_only_reason=reason, snapshot_dir=snapshot_dir
    )


_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    created REAL NOT NULL,
    finished REAL,
    meta TEXT NOT NULL DEFAULT '{}',
    summary TEXT
);
CREATE TABLE IF NOT EXISTS results (
    run_id TEXT NOT NULL REFERENCES runs(id),
    key TEXT NOT NULL,
    status TEXT NOT NULL,
    created REAL NOT NULL,
    payload TEXT NOT NULL,
    PRIMARY KEY (run_id, key)
);
"""


def _setup(db: StoreConnection) -> None:
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.executescript(_SCHEMA)


class ResultStore:
    """A SQLite file of runs and their results (see the module docstring).

    With `read_only` (or when the file cannot be written) the store is opened read-only: `runs` and `results`
    work, and every write raises `StoreError` ``STORE_READ_ONLY``. The file's faults raise `StoreError` with a
    code of `STORE_CODES`."""

    def __init__(self, path: Path | str, *, read_only: bool = False) -> None:
        self.path = Path(path)
        self._db = open_store(self.path, _setup, read_only=read_only)

    @property
    def read_only(self) -> bool:
        return self._db.read_only

    @property
    def journal_mode(self) -> str:
        return str(self._db.execute("PRAGMA journal_mode").fetchone()[0])

    def start_run(self, kind: str, meta: dict[str, Any] | None = None) -> str:
        """A new run; returns its id."""
        run_id = uuid.uuid4().hex[:12]
        self._db.execute(
            "INSERT INTO runs (id, kind, created, meta) VALUES (?, ?, ?, ?)",
            (run_id, kind, time.time(), json.dumps(jsonable(meta or {}))),
        )
        return run_id

    def put(self, run_id: str, key: str, status: str, payload: dict[str, Any]) -> None:
        """Record one result, committed before returning."""
        self._db.execute(
            "INSERT OR REPLACE INTO results (run_id, key, status, created, payload) VALUES (?, ?, ?, ?, ?)",
            (run_id, key, status, time.time(), json.dumps(jsonable(payload))),
        )

    def finish_run(self, run_id: str, summary: dict[str, Any] | None = None) -> None:
        self._db.execute(
            "UPDATE runs SET finished = ?, summary = ? WHERE id = ?",
            (time.time(), json.dumps(jsonable(summary or {})), run_id),
        )

    def runs(self) -> list[dict[str, Any]]:
        rows = self._db.execute("SELECT id, kind, created, finished, meta, summary FROM runs ORDER BY created")
        return [
            {
                "id": r[0],
                "kind": r[1],
                "created": r[2],
                "finished": r[3],
                "meta": json.loads(r[4]),
                "summary": json.loads(r[5]) if r[5] else None,
            }
            for r in rows
        ]

    def results(self, run_id: str) -> list[dict[str, Any]]:
        """The results of `run_id`, in the order they arrived."""
        rows = self._db.execute(
            "SELECT key, status, created, payload FROM results WHERE run_id = ? ORDER BY created", (run_id,)
        )
        return [{"key": r[0], "status": r[1], "created": r[2], "payload": json.loads(r[3])} for r in rows]

    def done_keys(self, run_id: str) -> set[str]:
        """Keys already recorded for `run_id` (to resume a run)."""
        return {r[0] for r in self._db.execute("SELECT key FROM results WHERE run_id = ?", (run_id,))}

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> ResultStore:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
