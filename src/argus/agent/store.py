"""The run store: every optimization run, written to SQLite (WAL) as it happens, so a run resumes after a crash.

One file holds many runs. Each write is its own committed transaction (as in `argus.eval.store`), so what was
recorded before a crash is on disk, and a reader (``argus runs show``, a dashboard) may read while a run writes.

Schema (JSON columns hold text; times are Unix seconds):

- ``runs(id, target, planner, coder, model, budget JSON, config JSON, status, started, finished, summary JSON,
  owner JSON, heartbeat)`` — status ``running`` / ``finished`` / ``failed``; a running run whose writer is gone
  reads as ``interrupted``. ``owner`` is the writer's lease (host, pid, token).
- ``candidates(id, run_id, parent_id, step, action, params JSON, source, kernel_params JSON, fingerprint, status,
  attempts, created, started, finished, summary JSON)`` — status ``proposed`` (materialized, not gated yet) →
  ``gating`` → ``accepted`` / ``rejected`` / ``error`` (or ``invalid``: could not be materialized). ``attempts``
  counts gate starts.
- ``gate_results(candidate_id, stage, status, code, payload JSON, created)`` — one row per gate stage.
- ``timings(id, candidate_id, label, median_ms, payload JSON, created)``.
- ``counterexamples(id, candidate_id, check_code, text, payload JSON, created)``.
- ``rewards(candidate_id, run_id, step, reward, payload JSON, created)``.
- ``llm_exchanges(id, run_id, candidate_id, step, purpose, request_hash, provider, model, prompt JSON, response,
  input_tokens, output_tokens, cost_usd, latency_s, cached, error, created)``.

Never a key: every value a `RunWriter` (or `RunStore.start_run`) writes — sources, JSON payloads, summaries, prompts,
responses, errors — passes through `argus.agent.providers.secrets.scrub_secrets` (the value of every configured key
and of every ``*_API_KEY`` / ``*_TOKEN`` / ``*_SECRET`` / ``*_PASSWORD`` variable becomes ``[REDACTED:NAME]``); configs
are also scrubbed of secret-named fields (`scrub`), and LLM exchanges of key-shaped tokens
(`argus.agent.providers.errors.redact`). `RunStore.export` scrubs what it returns again (a store written before a
key was known, or by an older argus).

Resume: `RunStore.open_run(run_id)` takes the run's writer lease (refused while another live process holds it) and
returns a `RunWriter` whose `state` says what is done (finished candidates, their rewards — never gated again),
what was in flight (``gating`` when the writer died: `RunWriter.start_gate` clears its partial stage results and
gates it again), what was proposed but not gated, and the next step. `RunWriter.finish_candidate` refuses a
candidate that is already finished, so a loop cannot count one twice. One writer per run; many runs and many
readers per file.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from argus.agent.providers.errors import REDACTED, redact
from argus.agent.providers.secrets import scrub_secrets
from argus.diagnostics import ArgusError
from argus.eval.results import jsonable
from argus.eval.store import StoreConnection, open_store

SCHEMA_VERSION = 1
TERMINAL = ("accepted", "rejected", "error", "invalid")
CANDIDATE_STATUSES = ("proposed", "gating", *TERMINAL)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS store_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    target TEXT NOT NULL,
    planner TEXT,
    coder TEXT,
    model TEXT,
    budget TEXT NOT NULL DEFAULT '{}',
    config TEXT NOT NULL DEFAULT '{}',
    status TEXT NOT NULL,
    started REAL NOT NULL,
    finished REAL,
    summary TEXT,
    owner TEXT,
    heartbeat REAL
);
CREATE TABLE IF NOT EXISTS candidates (
    id TEXT PRIMARY KEY,
    run_id TEXT NOT NULL REFERENCES runs(id),
    parent_id TEXT,
    step INTEGER NOT NULL,
    action TEXT,
    params TEXT NOT NULL DEFAULT '{}',
    source TEXT,
    kernel_params TEXT,
    fingerprint TEXT,
    status TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    created REAL NOT NULL,
    started REAL,
    finished REAL,
    summary TEXT
);
CREATE INDEX IF NOT EXISTS candidates_by_run ON candidates (run_id, step);
CREATE TABLE IF NOT EXISTS gate_results (
    candidate_id TEXT NOT NULL REFERENCES candidates(id),
    stage TEXT NOT NULL,
    status TEXT NOT NULL,
    code TEXT,
    payload TEXT NOT NULL,
    created REAL NOT NULL,
    PRIMARY KEY (candidate_id, stage)
);
CREATE TABLE IF NOT EXISTS timings (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    candidate_id TEXT NOT NULL REFERENCES candidates(id),
    label TEXT NOT NULL,
    median_ms REAL,
    payload TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS counterexamples (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    candidate_id TEXT NOT NULL REFERENCES candidates(id),
    check_code TEXT,
    text TEXT,
    payload TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS rewards (
    candidate_id TEXT PRIMARY KEY REFERENCES candidates(id),
    run_id TEXT NOT NULL REFERENCES runs(id),
    step INTEGER NOT NULL,
    reward REAL,
    payload TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS llm_exchanges (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL REFERENCES runs(id),
    candidate_id TEXT,
    step INTEGER,
    purpose TEXT,
    request_hash TEXT,
    provider TEXT,
    model TEXT,
    prompt TEXT NOT NULL,
    response TEXT,
    input_tokens INTEGER,
    output_tokens INTEGER,
    cost_usd REAL,
    latency_s REAL,
    cached INTEGER NOT NULL DEFAULT 0,
    error TEXT,
    created REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS exchanges_by_run ON llm_exchanges (run_id, id);
"""


class StoreError(ArgusError):
    """A run-store error: ``RUN_*`` (unknown run or candidate, a run held by another writer, a candidate finished
    twice, an invalid status) or a fault of the store's file, ``STORE_*`` (`argus.eval.store.STORE_CODES`: read-only,
    corrupt, disk full, locked, I/O), whose message names the file and says what to do."""


def default_runs_path(env: Mapping[str, str] | None = None) -> Path:
    """``$ARGUS_RUNS_DB``, else ``$XDG_DATA_HOME/argus/runs.db``, else ``~/.local/share/argus/runs.db``."""
    env = os.environ if env is None else env
    if env.get("ARGUS_RUNS_DB"):
        return Path(env["ARGUS_RUNS_DB"]).expanduser()
    base = Path(env["XDG_DATA_HOME"]) if env.get("XDG_DATA_HOME") else Path.home() / ".local" / "share"
    return base / "argus" / "runs.db"


def candidate_fingerprint(source: str | None = None, kernel_params: Mapping[str, Any] | None = None) -> str:
    """A stable id of a candidate's content (its source and kernel parameters): equal candidates, equal ids."""
    text = json.dumps({"source": source, "params": jsonable(dict(kernel_params or {}))}, sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]


_SECRET_NAMES = ("key", "secret", "token", "password", "authorization", "credential")


def scrub(value: Any) -> Any:
    """JSON-safe `value` with every field whose name says it is a secret (``api_key``, ``token``, ...) replaced
    by ``[REDACTED]`` (booleans and key *sources* stay: they say whether, not what), strings redacted of key-shaped
    tokens, and every known secret value replaced (`scrub_secrets`)."""
    return scrub_secrets(_scrub_named(value))


def _scrub_named(value: Any) -> Any:
    value = jsonable(value)
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            name = k.lower()
            secret = any(s in name for s in _SECRET_NAMES) and not name.startswith("has_") and "source" not in name
            out[k] = REDACTED if secret and v not in (None, "", False) else _scrub_named(v)
        return out
    if isinstance(value, list):
        return [_scrub_named(v) for v in value]
    if isinstance(value, str):
        return redact(value)
    return value


def _dumps(value: Any) -> str:
    return json.dumps(scrub_secrets(jsonable(value)))


class _Scrubbed:
    """A connection whose `execute` passes every string parameter through `scrub_secrets`: what a run writer
    writes (sources, JSON already dumped by `_dumps`, texts) cannot hold a key, whichever column it goes to."""

    def __init__(self, db: Any) -> None:
        self._db = db

    def execute(self, sql: str, parameters: Sequence[Any] | Mapping[str, Any] = ()) -> Any:
        clean = scrub_secrets(dict(parameters) if isinstance(parameters, Mapping) else tuple(parameters))
        return self._db.execute(sql, clean)  # strings scrubbed, other values as they are


def _loads(text: str | None) -> Any:
    return json.loads(text) if text else None


@dataclass(frozen=True)
class CandidateRecord:
    """A candidate as stored (``gate`` maps stage to its stored result)."""

    id: str
    run_id: str
    parent_id: str | None
    step: int
    action: str | None
    params: dict[str, Any]
    source: str | None
    kernel_params: dict[str, Any] | None
    fingerprint: str | None
    status: str
    attempts: int
    created: float
    started: float | None
    finished: float | None
    summary: Any
    reward: float | None = None
    gate: dict[str, Any] = field(default_factory=dict)

    @property
    def done(self) -> bool:
        return self.status in TERMINAL

    def to_json(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass(frozen=True)
class RunState:
    """What a run has done, as read from the store (see the module docstring)."""

    run: dict[str, Any]
    candidates: tuple[CandidateRecord, ...]
    usage: dict[str, Any]

    @property
    def done(self) -> tuple[CandidateRecord, ...]:
        """Finished candidates (accepted, rejected, error, invalid): never gated again."""
        return tuple(c for c in self.candidates if c.done)

    @property
    def in_flight(self) -> tuple[CandidateRecord, ...]:
        """Candidates whose gate started and did not finish (the writer died): to gate again."""
        return tuple(c for c in self.candidates if c.status == "gating")

    @property
    def pending(self) -> tuple[CandidateRecord, ...]:
        """Candidates recorded (materialized) whose gate never started: to gate."""
        return tuple(c for c in self.candidates if c.status == "proposed")

    @property
    def to_gate(self) -> tuple[CandidateRecord, ...]:
        """`in_flight` and `pending`, in step order: what a resumed loop gates before planning anything new."""
        return tuple(c for c in self.candidates if not c.done)

    @property
    def next_step(self) -> int:
        return max((c.step for c in self.candidates), default=-1) + 1

    @property
    def rewards(self) -> dict[str, float | None]:
        return {c.id: c.reward for c in self.done}

    @property
    def fingerprints(self) -> set[str]:
        """Fingerprints of every recorded candidate (a loop skips a candidate it has already seen)."""
        return {c.fingerprint for c in self.candidates if c.fingerprint}

    def history(self) -> list[dict[str, Any]]:
        """The (action, reward) history of the finished candidates in step order, as the planners read it: step,
        candidate, parent, action, params, status, reward, and the code of the first stage that failed."""
        rows = []
        for c in self.done:
            codes = [g["code"] for g in c.gate.values() if g.get("code") and g["status"] in ("failed", "error")]
            failed = codes[0] if codes else None
            rows.append(
                {
                    "step": c.step,
                    "candidate": c.id,
                    "parent": c.parent_id,
                    "action": c.action,
                    "params": c.params,
                    "status": c.status,
                    "reward": c.reward,
                    "code": failed,
                }
            )
        return rows

    def candidate(self, candidate_id: str) -> CandidateRecord:
        for c in self.candidates:
            if c.id == candidate_id:
                return c
        raise StoreError("RUN_CANDIDATE_UNKNOWN", f"run {self.run['id']} has no candidate {candidate_id}")

    def best(self, key: Callable[[CandidateRecord], Any] | None = None) -> CandidateRecord | None:
        """The accepted candidate with the highest reward (or `key`), or None."""
        accepted = [c for c in self.candidates if c.status == "accepted"]
        if not accepted:
            return None
        return max(accepted, key=key or (lambda c: c.reward if c.reward is not None else float("-inf")))


def _setup(db: StoreConnection) -> None:
    """A writable store's pragmas and schema (`RunStore`'s constructor). On a store already set up nothing is
    written, so that opening one never waits for another process's write lock."""
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("PRAGMA foreign_keys=ON")
    db.executescript(_SCHEMA)
    if db.execute("SELECT 1 FROM store_meta WHERE key = 'schema_version'").fetchone() is None:
        db.execute("INSERT OR IGNORE INTO store_meta (key, value) VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))


class RunStore:
    """A SQLite file of optimization runs (module docstring). Reading methods never take a run's lease."""

    def __init__(
        self, path: Path | str | None = None, *, stale_after_s: float = 600.0, read_only: bool = False
    ) -> None:
        """Open (or create) the store at `path` (default `default_runs_path`). With `read_only`, or when the file or
        its directory cannot be written, it is opened read-only (`argus.eval.store.open_store`): `runs`, `read_run`
        and `export` work, and every write raises ``STORE_READ_ONLY`` (`read_only` says which it is). Faults of
        the file raise `StoreError` ``STORE_*`` (a corrupted file: ``STORE_CORRUPT``, at once)."""
        self.path = Path(path) if path is not None else default_runs_path()
        self.stale_after_s = stale_after_s
        self._db: StoreConnection = open_store(
            self.path, _setup, read_only=read_only, timeout_s=30.0, error_type=StoreError, check_same_thread=False
        )
        self.read_only = self._db.read_only
        self._lock = threading.RLock()

    @property
    def journal_mode(self) -> str:
        return str(self._db.execute("PRAGMA journal_mode").fetchone()[0])

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- writing ----------------------------------------------------------------------------------------------

    def start_run(
        self,
        target: str,
        *,
        planner: str | None = None,
        coder: str | None = None,
        model: str | None = None,
        budget: Mapping[str, Any] | None = None,
        config: Mapping[str, Any] | None = None,
        run_id: str | None = None,
    ) -> RunWriter:
        """A new run, with this process as its writer. `config` is scrubbed of secrets before it is stored."""
        run_id = run_id or uuid.uuid4().hex[:12]
        owner = _owner()
        now = time.time()
        with self._lock:
            try:
                _Scrubbed(self._db).execute(
                    "INSERT INTO runs (id, target, planner, coder, model, budget, config, status, started, owner, "
                    "heartbeat) VALUES (?, ?, ?, ?, ?, ?, ?, 'running', ?, ?, ?)",
                    (
                        run_id,
                        target,
                        planner,
                        coder,
                        model,
                        _dumps(budget or {}),
                        _dumps(scrub(config or {})),
                        now,
                        json.dumps(owner),
                        now,
                    ),
                )
            except sqlite3.IntegrityError:
                raise StoreError("RUN_EXISTS", f"a run {run_id} already exists in {self.path}") from None
        return RunWriter(self, run_id, owner["token"], self.read_run(run_id))

    def open_run(self, run_id: str, *, force: bool = False) -> RunWriter:
        """Continue `run_id`: take its writer lease and return a `RunWriter` whose `state` is what the run has
        done and what was in flight. Refused (``RUN_LOCKED``) while another live writer holds the run, unless
        `force`. A finished run is reopened as running (to extend its budget)."""
        owner = _owner()
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                row = self._db.execute("SELECT owner, heartbeat FROM runs WHERE id = ?", (run_id,)).fetchone()
                if row is None:
                    raise self._not_found(run_id)
                holder = _loads(row[0])
                if holder and not force and self._alive(holder, row[1]):
                    raise StoreError(
                        "RUN_LOCKED",
                        f"run {run_id} is being written by process {holder.get('pid')} on {holder.get('host')}",
                        "wait for it to finish or stop it; pass force=True (--force) only if it is really gone",
                    )
                self._db.execute(
                    "UPDATE runs SET owner = ?, heartbeat = ?, status = 'running', finished = NULL WHERE id = ?",
                    (json.dumps(owner), time.time(), run_id),
                )
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        return RunWriter(self, run_id, owner["token"], self.read_run(run_id))

    def _alive(self, holder: Mapping[str, Any], heartbeat: float | None) -> bool:
        if holder.get("host") == socket.gethostname():
            pid = holder.get("pid")
            try:
                os.kill(int(pid), 0)
            except ProcessLookupError:
                return False
            except (PermissionError, TypeError, ValueError):
                return True
            return True
        return heartbeat is not None and time.time() - heartbeat < self.stale_after_s

    # -- reading ----------------------------------------------------------------------------------------------

    def _not_found(self, run_id: str) -> StoreError:
        return StoreError("RUN_NOT_FOUND", f"no run {run_id} in {self.path}", "argus runs list shows the runs")

    def _run_row(self, row: Sequence[Any]) -> dict[str, Any]:
        keys = (
            "id",
            "target",
            "planner",
            "coder",
            "model",
            "budget",
            "config",
            "status",
            "started",
            "finished",
            "summary",
            "owner",
            "heartbeat",
        )
        run = dict(zip(keys, row, strict=True))
        for k in ("budget", "config", "summary", "owner"):
            run[k] = _loads(run[k])
        if run["status"] == "running" and (not run["owner"] or not self._alive(run["owner"], run["heartbeat"])):
            run["status"] = "interrupted"
        return run

    def runs(self) -> list[dict[str, Any]]:
        """Every run, oldest first, with candidate counts, best reward and LLM usage."""
        with self._lock:
            return self._runs()

    def _runs(self) -> list[dict[str, Any]]:
        rows = self._db.execute("SELECT * FROM runs ORDER BY started").fetchall()
        result = []
        for row in rows:
            run = self._run_row(row)
            counts = dict(
                self._db.execute(
                    "SELECT status, COUNT(*) FROM candidates WHERE run_id = ? GROUP BY status", (run["id"],)
                ).fetchall()
            )
            best = self._db.execute("SELECT MAX(reward) FROM rewards WHERE run_id = ?", (run["id"],)).fetchone()[0]
            run["candidates"] = sum(counts.values())
            run["candidate_statuses"] = counts
            run["best_reward"] = best
            run["usage"] = self._usage(run["id"])
            result.append(run)
        return result

    def _usage(self, run_id: str) -> dict[str, Any]:
        row = self._db.execute(
            "SELECT COUNT(*), COALESCE(SUM(cached), 0), COALESCE(SUM(input_tokens), 0), "
            "COALESCE(SUM(output_tokens), 0), COALESCE(SUM(CASE WHEN cached = 0 THEN cost_usd END), 0), "
            "COALESCE(SUM(CASE WHEN cost_usd IS NULL AND error IS NULL THEN 1 ELSE 0 END), 0), "
            "COALESCE(SUM(CASE WHEN error IS NOT NULL THEN 1 ELSE 0 END), 0) FROM llm_exchanges WHERE run_id = ?",
            (run_id,),
        ).fetchone()
        keys = ("exchanges", "cached", "input_tokens", "output_tokens", "cost_usd", "unpriced", "errors")
        return dict(zip(keys, row, strict=True))

    def read_run(self, run_id: str) -> RunState:
        """The run's state, without taking its lease."""
        with self._lock:  # one connection: never read in the middle of another thread's write transaction
            return self._read_run(run_id)

    def _read_run(self, run_id: str) -> RunState:
        row = self._db.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            raise self._not_found(run_id)
        gate: dict[str, dict[str, Any]] = {}
        for cid, stage, status, code, payload in self._db.execute(
            "SELECT g.candidate_id, g.stage, g.status, g.code, g.payload FROM gate_results g "
            "JOIN candidates c ON c.id = g.candidate_id WHERE c.run_id = ? ORDER BY g.created",
            (run_id,),
        ):
            gate.setdefault(cid, {})[stage] = {"status": status, "code": code, "payload": _loads(payload)}
        rewards = dict(self._db.execute("SELECT candidate_id, reward FROM rewards WHERE run_id = ?", (run_id,)))
        candidates = []
        for r in self._db.execute(
            "SELECT id, run_id, parent_id, step, action, params, source, kernel_params, fingerprint, status, "
            "attempts, created, started, finished, summary FROM candidates WHERE run_id = ? ORDER BY step, created",
            (run_id,),
        ):
            candidates.append(
                CandidateRecord(
                    id=r[0], run_id=r[1], parent_id=r[2], step=r[3], action=r[4], params=_loads(r[5]) or {},
                    source=r[6], kernel_params=_loads(r[7]), fingerprint=r[8], status=r[9], attempts=r[10],
                    created=r[11], started=r[12], finished=r[13], summary=_loads(r[14]),
                    reward=rewards.get(r[0]), gate=gate.get(r[0], {}),
                )
            )  # fmt: skip
        return RunState(run=self._run_row(row), candidates=tuple(candidates), usage=self._usage(run_id))

    def _rows(self, sql: str, args: Sequence[Any], keys: Sequence[str], json_keys: Iterable[str] = ()) -> list[dict]:
        out = []
        with self._lock:
            rows = self._db.execute(sql, args).fetchall()
        for row in rows:
            item = dict(zip(keys, row, strict=True))
            for k in json_keys:
                item[k] = _loads(item[k])
            out.append(item)
        return out

    def timings(self, run_id: str) -> list[dict[str, Any]]:
        return self._rows(
            "SELECT t.candidate_id, t.label, t.median_ms, t.payload, t.created FROM timings t "
            "JOIN candidates c ON c.id = t.candidate_id WHERE c.run_id = ? ORDER BY t.id",
            (run_id,), ("candidate_id", "label", "median_ms", "payload", "created"), ("payload",),
        )  # fmt: skip

    def counterexamples(self, run_id: str) -> list[dict[str, Any]]:
        return self._rows(
            "SELECT x.candidate_id, x.check_code, x.text, x.payload, x.created FROM counterexamples x "
            "JOIN candidates c ON c.id = x.candidate_id WHERE c.run_id = ? ORDER BY x.id",
            (run_id,), ("candidate_id", "check_code", "text", "payload", "created"), ("payload",),
        )  # fmt: skip

    def llm_exchanges(self, run_id: str) -> list[dict[str, Any]]:
        keys = (
            "id",
            "candidate_id",
            "step",
            "purpose",
            "request_hash",
            "provider",
            "model",
            "prompt",
            "response",
            "input_tokens",
            "output_tokens",
            "cost_usd",
            "latency_s",
            "cached",
            "error",
            "created",
        )
        rows = self._rows(
            f"SELECT {', '.join(keys)} FROM llm_exchanges WHERE run_id = ? ORDER BY id", (run_id,), keys, ("prompt",)
        )
        for r in rows:
            r["cached"] = bool(r["cached"])
        return rows

    def export(self, run_id: str) -> dict[str, Any]:
        """Everything recorded for `run_id`, as JSON-safe data, scrubbed of every secret known now
        (`scrub_secrets`)."""
        state = self.read_run(run_id)
        run = dict(state.run)
        run.pop("owner", None)
        return scrub_secrets(
            {
                "format": "argus-run",
                "schema_version": SCHEMA_VERSION,
                "run": run,
                "usage": state.usage,
                "candidates": [c.to_json() for c in state.candidates],
                "timings": self.timings(run_id),
                "counterexamples": self.counterexamples(run_id),
                "llm_exchanges": self.llm_exchanges(run_id),
            }
        )


def _owner() -> dict[str, Any]:
    return {"host": socket.gethostname(), "pid": os.getpid(), "token": uuid.uuid4().hex}


class RunWriter:
    """The writing side of one run (from `RunStore.start_run` or `RunStore.open_run`). Every method commits before
    returning, and first checks that this writer still holds the run's lease (``RUN_LOCKED`` if another process
    took it over with ``force``). `state` is the run as it was when this writer was opened."""

    def __init__(self, store: RunStore, run_id: str, token: str, state: RunState) -> None:
        self.store = store
        self.run_id = run_id
        self.state = state
        self._token = token
        self._db = store._db

    def __repr__(self) -> str:
        return f"RunWriter({self.run_id!r}, {self.store.path})"

    def _write(self, fn: Callable[[sqlite3.Connection], Any]) -> Any:
        with self.store._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                row = self._db.execute("SELECT owner FROM runs WHERE id = ?", (self.run_id,)).fetchone()
                holder = _loads(row[0]) if row else None
                if not holder or holder.get("token") != self._token:
                    raise StoreError(
                        "RUN_LOCKED",
                        f"this process no longer holds run {self.run_id}"
                        + (f" (process {holder.get('pid')} on {holder.get('host')} does)" if holder else ""),
                        "one writer per run: open the run again to continue it",
                    )
                result = fn(_Scrubbed(self._db))  # type: ignore[arg-type]  # every write: scrubbed of secrets
                self._db.execute("UPDATE runs SET heartbeat = ? WHERE id = ?", (time.time(), self.run_id))
                self._db.execute("COMMIT")
                return result
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def _candidate(self, db: sqlite3.Connection, candidate_id: str) -> tuple[str, int]:
        row = db.execute("SELECT status, step FROM candidates WHERE id = ? AND run_id = ?",
                         (candidate_id, self.run_id)).fetchone()  # fmt: skip
        if row is None:
            raise StoreError("RUN_CANDIDATE_UNKNOWN", f"run {self.run_id} has no candidate {candidate_id}")
        return row[0], row[1]

    # -- candidates -------------------------------------------------------------------------------------------

    def add_candidate(
        self,
        step: int,
        *,
        parent: str | None = None,
        action: str | None = None,
        params: Mapping[str, Any] | None = None,
        source: str | None = None,
        kernel_params: Mapping[str, Any] | None = None,
        fingerprint: str | None = None,
        status: str = "proposed",
    ) -> str:
        """Record a materialized candidate (status ``proposed``, or ``invalid`` when it could not be built);
        returns its id. The fingerprint defaults to `candidate_fingerprint(source, kernel_params)`."""
        if status not in ("proposed", "invalid"):
            raise StoreError("RUN_BAD_STATUS", "a new candidate is 'proposed' or 'invalid'", actual=status)
        fp = fingerprint or candidate_fingerprint(source, kernel_params)

        def write(db: sqlite3.Connection) -> str:
            if parent is not None:
                self._candidate(db, parent)
            n = db.execute("SELECT COUNT(*) FROM candidates WHERE run_id = ?", (self.run_id,)).fetchone()[0]
            cid = f"{self.run_id}-{n:04d}"
            now = time.time()
            db.execute(
                "INSERT INTO candidates (id, run_id, parent_id, step, action, params, source, kernel_params, "
                "fingerprint, status, created, finished) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (cid, self.run_id, parent, int(step), action, _dumps(params or {}), source,
                 _dumps(kernel_params) if kernel_params is not None else None, fp, status, now,
                 now if status == "invalid" else None),
            )  # fmt: skip
            return cid

        return self._write(write)

    def start_gate(self, candidate_id: str) -> int:
        """The candidate's gate starts (status ``gating``); stage results, timings and counterexamples of an
        earlier, interrupted attempt are removed. Returns the attempt number. Refused for a finished candidate."""

        def write(db: sqlite3.Connection) -> int:
            status, _ = self._candidate(db, candidate_id)
            if status in TERMINAL:
                raise StoreError(
                    "RUN_CANDIDATE_FINISHED",
                    f"candidate {candidate_id} is already {status}; it is not gated again",
                )
            for table in ("gate_results", "timings", "counterexamples"):
                db.execute(f"DELETE FROM {table} WHERE candidate_id = ?", (candidate_id,))
            db.execute(
                "UPDATE candidates SET status = 'gating', attempts = attempts + 1, started = ? WHERE id = ?",
                (time.time(), candidate_id),
            )
            return db.execute("SELECT attempts FROM candidates WHERE id = ?", (candidate_id,)).fetchone()[0]

        return self._write(write)

    def record_stage(
        self, candidate_id: str, stage: str, status: str, payload: Any = None, *, code: str | None = None
    ) -> None:
        """One gate stage's result (a re-run stage replaces its row)."""

        def write(db: sqlite3.Connection) -> None:
            self._candidate(db, candidate_id)
            db.execute(
                "INSERT OR REPLACE INTO gate_results (candidate_id, stage, status, code, payload, created) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (candidate_id, stage, status, code, _dumps(payload), time.time()),
            )

        self._write(write)

    def record_gate_result(self, candidate_id: str, result: Any, *, label: str | None = None) -> int:
        """A whole gate result (an `argus.eval.gate.GateResult` or its ``to_json()``), in one transaction: one row
        per stage (named ``stage@label`` when `label`, e.g. the problem size, is given), a ``gate`` row with the
        verdict, trust, flags and environment, and each violated verifier finding of severity error that carries
        a counterexample as a counterexample row. Returns the number of counterexamples recorded."""
        data = jsonable(result)
        if not isinstance(data, dict):
            raise StoreError("RUN_BAD_GATE_RESULT", "a gate result is a GateResult or its to_json()", actual=data)
        suffix = f"@{label}" if label else ""
        now = time.time()

        def write(db: sqlite3.Connection) -> int:
            self._candidate(db, candidate_id)
            found = 0
            summary = {k: data.get(k) for k in ("candidate", "task", "sizes", "verdict", "trusted", "flags",
                                                "environment")}  # fmt: skip
            rows = [("gate", str(data.get("verdict")), None, summary)]
            for stage in data.get("stages", []):
                rows.append((str(stage.get("stage")), str(stage.get("status")), stage.get("code"), stage))
                details = stage.get("details") if isinstance(stage.get("details"), dict) else {}
                report = details.get("report") if isinstance(details.get("report"), dict) else {}
                for finding in report.get("findings", []) or []:
                    error = finding.get("severity", "error") == "error"  # warnings (bank conflicts, ...) are not
                    if error and finding.get("verdict") == "violated" and finding.get("counterexample"):
                        db.execute(
                            "INSERT INTO counterexamples (candidate_id, check_code, text, payload, created) "
                            "VALUES (?, ?, ?, ?, ?)",
                            (candidate_id, finding.get("code"), finding.get("message"), _dumps(finding), now),
                        )
                        found += 1
            for stage, status, code, payload in rows:
                db.execute(
                    "INSERT OR REPLACE INTO gate_results (candidate_id, stage, status, code, payload, created) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    (candidate_id, stage + suffix, status, code, _dumps(payload), now),
                )
            return found

        return self._write(write)

    def record_timing(self, candidate_id: str, label: str, median_ms: float | None, payload: Any = None) -> None:
        def write(db: sqlite3.Connection) -> None:
            self._candidate(db, candidate_id)
            db.execute(
                "INSERT INTO timings (candidate_id, label, median_ms, payload, created) VALUES (?, ?, ?, ?, ?)",
                (candidate_id, label, median_ms, _dumps(payload or {}), time.time()),
            )

        self._write(write)

    def record_counterexample(
        self, candidate_id: str, check_code: str | None, text: str | None, payload: Any = None
    ) -> None:
        def write(db: sqlite3.Connection) -> None:
            self._candidate(db, candidate_id)
            db.execute(
                "INSERT INTO counterexamples (candidate_id, check_code, text, payload, created) VALUES (?, ?, ?, ?, ?)",
                (candidate_id, check_code, text, _dumps(payload or {}), time.time()),
            )

        self._write(write)

    def finish_candidate(
        self,
        candidate_id: str,
        status: str,
        *,
        reward: float | None = None,
        reward_details: Any = None,
        summary: Any = None,
    ) -> None:
        """The candidate's gate is over: its verdict (``accepted``/``rejected``/``error``), summary and reward,
        in one transaction. Refused (``RUN_CANDIDATE_FINISHED``) for a candidate finished before."""
        if status not in TERMINAL:
            raise StoreError("RUN_BAD_STATUS", f"a finished candidate is one of {', '.join(TERMINAL)}", actual=status)

        def write(db: sqlite3.Connection) -> None:
            current, step = self._candidate(db, candidate_id)
            if current in TERMINAL:
                raise StoreError(
                    "RUN_CANDIDATE_FINISHED", f"candidate {candidate_id} is already {current}; it is not finished twice"
                )
            now = time.time()
            db.execute(
                "UPDATE candidates SET status = ?, finished = ?, summary = ? WHERE id = ?",
                (status, now, _dumps(summary) if summary is not None else None, candidate_id),
            )
            if reward is not None or reward_details is not None:
                db.execute(
                    "INSERT OR REPLACE INTO rewards (candidate_id, run_id, step, reward, payload, created) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    (candidate_id, self.run_id, step, reward, _dumps(reward_details or {}), now),
                )

        self._write(write)

    # -- LLM exchanges ----------------------------------------------------------------------------------------

    def record_llm_exchange(
        self,
        messages: Sequence[Mapping[str, Any]],
        completion: Any = None,
        *,
        error: BaseException | str | None = None,
        purpose: str | None = None,
        candidate_id: str | None = None,
        step: int | None = None,
        request_hash: str | None = None,
        provider: str | None = None,
        model: str | None = None,
        secrets: Iterable[str | None] = (),
    ) -> int:
        """One LLM exchange: the prompt and either the `completion` (an `argus.agent.providers.Completion`) or the
        `error`. Prompt, response and error are redacted and scrubbed of every known secret (`secrets` adds strings
        to remove, e.g. a key held elsewhere)."""
        secrets = tuple(secrets)
        prompt = scrub_secrets(
            [{"role": str(m.get("role")), "content": redact(str(m.get("content")), secrets)} for m in messages],
            extra=secrets,
        )
        c = completion

        def write(db: sqlite3.Connection) -> int:
            cursor = db.execute(
                "INSERT INTO llm_exchanges (run_id, candidate_id, step, purpose, request_hash, provider, model, "
                "prompt, response, input_tokens, output_tokens, cost_usd, latency_s, cached, error, created) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    self.run_id, candidate_id, step, purpose,
                    request_hash or getattr(c, "request_hash", None) or getattr(error, "request_hash", None),
                    provider or getattr(c, "provider", None),
                    model or getattr(c, "model", None),
                    json.dumps(prompt),
                    redact(c.text, secrets) if c is not None else None,
                    getattr(c, "input_tokens", None), getattr(c, "output_tokens", None),
                    getattr(c, "cost_usd", None), getattr(c, "latency_s", None),
                    int(bool(getattr(c, "cached", False))),
                    redact(f"{type(error).__name__}: {error}" if isinstance(error, BaseException) else error, secrets)
                    if error is not None else None,
                    time.time(),
                ),
            )  # fmt: skip
            return int(cursor.lastrowid)

        return self._write(write)

    # -- the run ----------------------------------------------------------------------------------------------

    def read(self) -> RunState:
        """The run's state now (re-read from the store)."""
        return self.store.read_run(self.run_id)

    def heartbeat(self) -> None:
        """Say this writer is alive (every write does; call this during long gates on shared file systems)."""
        self._write(lambda db: None)

    def finish(self, status: str = "finished", summary: Any = None) -> None:
        """The run is over (``finished`` or ``failed``): its summary is stored and the lease released."""
        if status not in ("finished", "failed"):
            raise StoreError("RUN_BAD_STATUS", "a run finishes as 'finished' or 'failed'", actual=status)
        self._write(
            lambda db: db.execute(
                "UPDATE runs SET status = ?, finished = ?, summary = ?, owner = NULL WHERE id = ?",
                (status, time.time(), _dumps(summary or {}), self.run_id),
            )
        )

    def release(self) -> None:
        """Give up the lease without finishing (the run reads as interrupted and may be opened again)."""
        with self.store._lock:
            self._db.execute(
                "UPDATE runs SET owner = NULL WHERE id = ? AND json_extract(owner, '$.token') = ?",
                (self.run_id, self._token),
            )
