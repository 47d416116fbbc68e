"""Results on disk as they arrive: a small SQLite store (WAL mode), one row per evaluated candidate.

Each `ResultStore.put` is its own committed transaction, so a result is on disk before the next candidate
starts, and whatever the parent process was doing when it died, the results already reported survive (WAL mode
also lets a reader — a dashboard, another process — read while a run writes).

Schema: ``runs(id, kind, created, finished, meta, summary)`` and ``results(run_id, key, status, created,
payload)`` with ``(run_id, key)`` unique (a re-evaluated key replaces its row). ``meta``, ``summary`` and
``payload`` are JSON text.
"""

from __future__ import annotations

import json
import sqlite3
import time
import uuid
from pathlib import Path
from typing import Any

from argus.eval.results import jsonable

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


class ResultStore:
    """A SQLite file of runs and their results (see the module docstring)."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(self.path), timeout=30, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)

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
