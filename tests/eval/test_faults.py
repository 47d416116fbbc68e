"""Faults that are not the candidate's: a worker killed from outside (the OOM killer, an operator's ``kill -9``) runs
its job again before anything is reported, and nothing a worker started outlives the pool, even when the pool's
parent is killed.

The functions without a ``test_`` prefix are jobs: the workers import them from this module by name.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from argus.eval.isolation import Job, WorkerPool, failure_status
from argus.eval.results import Status

HERE = "tests.eval.test_faults"
REPO = Path(__file__).resolve().parents[2]


# -- jobs (run in the workers) -----------------------------------------------------------------------------------


def killed_once(marker: str, sig: int) -> int:
    """The first attempt kills its own worker with `sig` (as the OOM killer or an operator would); a second
    attempt returns its worker's pid."""
    path = Path(marker)
    if not path.exists():
        path.write_text(str(os.getpid()))
        os.kill(os.getpid(), sig)
        time.sleep(60)
    return os.getpid()


def killed_always(sig: int) -> None:
    os.kill(os.getpid(), sig)
    time.sleep(60)


def hang_until_killed_once(marker: str) -> str:
    """The first attempt writes its pid and hangs (to be killed from outside); a second returns at once."""
    path = Path(marker)
    if path.exists():
        return "second attempt"
    path.write_text(str(os.getpid()))
    time.sleep(600)
    return "first attempt"


def start_grandchild(pid_file: str, hang_s: float = 0.0) -> int:
    """Start ``sleep 1000`` in the worker's own process group (no new session), record its pid and the worker's,
    then return at once (leaving it running) or hang."""
    child = subprocess.Popen(["sleep", "1000"], start_new_session=False)
    Path(pid_file).write_text(f"{os.getpid()} {child.pid}")
    time.sleep(hang_s)
    return child.pid


def containment() -> dict[str, int]:
    """The worker's process group, session and parent-death signal (``PR_GET_PDEATHSIG``)."""
    deathsig = ctypes.c_int(-1)
    ctypes.CDLL(None, use_errno=True).prctl(2, ctypes.byref(deathsig), 0, 0, 0)
    return {"pid": os.getpid(), "pgid": os.getpgrp(), "sid": os.getsid(0), "deathsig": deathsig.value}


# -- helpers ------------------------------------------------------------------------------------------------------


def job(key: str, fn: str, **kwargs: object) -> Job:
    return Job(key, f"{HERE}:{fn}", kwargs)


def running(pid: int) -> bool:
    """True while `pid` exists and is not a zombie (a killed process waits as a zombie until its new parent, init,
    reaps it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def group_members(pgid: int, timeout_s: float = 10.0) -> list[str]:
    """Live (not zombie) processes in process group `pgid` (state and command line) once it has emptied, or
    after `timeout_s` (a killed process takes a moment to exit)."""
    deadline = time.monotonic() + timeout_s
    while True:
        members = []
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
                    command = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode()
                except OSError:
                    continue
                if int(fields[2]) == pgid and fields[0] != "Z":
                    members.append(f"{entry} {fields[0]} {command[:120]}")
        if not members or time.monotonic() > deadline:
            return members
        time.sleep(0.05)


def wait_gone(pids: list[int], timeout_s: float = 10.0) -> list[int]:
    """Poll /proc until none of `pids` runs; returns those still running after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        alive = [p for p in pids if running(p)]
        if not alive:
            return []
        time.sleep(0.05)
    return [p for p in pids if running(p)]


def read_pids(path: Path, timeout_s: float = 30.0) -> list[int]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        text = path.read_text() if path.exists() else ""
        if text.strip():
            return [int(x) for x in text.split()]
        time.sleep(0.05)
    raise AssertionError(f"{path} was never written")


# -- a worker killed from outside ---------------------------------------------------------------------------------


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_a_job_killed_from_outside_runs_again_on_a_fresh_worker(tmp_path: Path, sig: signal.Signals) -> None:
    marker = tmp_path / "killed"
    with WorkerPool(workers=2, timeout_s=30.0, preload=()) as pool:
        started = {w.process.pid for w in pool._workers}
        outcomes = {o.key: o for o in pool.run([job("victim", "killed_once", marker=str(marker), sig=int(sig)),
                                                job("bystander", "containment")])}  # fmt: skip
        assert pool.retried == 1 and pool.replaced == 1
    victim = outcomes["victim"]
    first_pid = int(marker.read_text())
    assert victim.ok, victim.reason
    assert victim.details["attempts"] == 2
    assert victim.details["first_attempt"]["exitcode"] == -sig and sig.name in victim.details["first_attempt"]["reason"]
    assert victim.value != first_pid and victim.value not in started  # the replacement, not the other old worker
    assert outcomes["bystander"].ok and outcomes["bystander"].details["attempts"] == 1


def test_a_job_killed_on_both_attempts_is_a_crash_that_names_the_likely_cause() -> None:
    with WorkerPool(workers=1, timeout_s=30.0, preload=()) as pool:
        (outcome,) = list(pool.run([job("oom", "killed_always", sig=int(signal.SIGKILL))]))
        assert pool.retried == 1 and pool.replaced == 2
    assert outcome.code == "WORKER_CRASHED" and not outcome.ok
    assert outcome.details["attempts"] == 2 and outcome.details["exitcode"] == -9
    assert "both attempts" in outcome.reason and "OOM killer" in outcome.reason and "SIGKILL" in outcome.reason
    assert failure_status(outcome) is Status.FAILED


def test_an_operators_kill_of_a_busy_worker_is_absorbed(tmp_path: Path) -> None:
    marker = tmp_path / "pid"

    def operator() -> None:
        (pid,) = read_pids(marker)
        os.kill(pid, signal.SIGKILL)

    killer = threading.Thread(target=operator)
    killer.start()
    with WorkerPool(workers=1, timeout_s=60.0, preload=()) as pool:
        (outcome,) = list(pool.run([job("busy", "hang_until_killed_once", marker=str(marker))]))
    killer.join()
    assert outcome.ok and outcome.value == "second attempt"
    assert outcome.details["attempts"] == 2 and outcome.details["first_attempt"]["exitcode"] == -9


def test_the_candidates_own_faults_are_reported_at_once() -> None:
    jobs = [
        Job("segv", "tests.eval.workers:segfault"),
        Job("abort", "os:abort"),
        Job("exit", "tests.eval.workers:crash", {"status": 3}),
        Job("hang", "tests.eval.workers:hang", {"seconds": 600}),
    ]
    with WorkerPool(workers=2, timeout_s=2.0, preload=()) as pool:
        outcomes = {o.key: o for o in pool.run(jobs)}
        assert pool.retried == 0
    assert outcomes["segv"].code == "WORKER_CRASHED" and "SIGSEGV" in outcomes["segv"].reason
    assert outcomes["abort"].code == "WORKER_CRASHED" and "SIGABRT" in outcomes["abort"].reason
    assert outcomes["exit"].code == "WORKER_CRASHED" and "status 3" in outcomes["exit"].reason
    assert outcomes["hang"].code == "WORKER_TIMEOUT"  # killed by the pool itself: never retried
    assert all(o.details["attempts"] == 1 for o in outcomes.values())
    assert all(failure_status(o) is Status.FAILED for o in outcomes.values())


# -- nothing outlives the pool ------------------------------------------------------------------------------------


def test_each_worker_leads_its_own_group_and_dies_with_its_parent() -> None:
    with WorkerPool(workers=1, timeout_s=30.0, preload=()) as pool:
        (outcome,) = list(pool.run([job("c", "containment")]))
    facts = outcome.value
    assert facts["pgid"] == facts["pid"] == facts["sid"] != os.getpgrp()
    assert facts["deathsig"] == signal.SIGKILL


def test_closing_the_pool_kills_what_a_job_left_running(tmp_path: Path) -> None:
    pid_file = tmp_path / "pids"
    with WorkerPool(workers=1, timeout_s=30.0, preload=()) as pool:
        (outcome,) = list(pool.run([job("leak", "start_grandchild", pid_file=str(pid_file))]))
        worker, grandchild = read_pids(pid_file)
        assert outcome.ok and running(grandchild)
    assert wait_gone([worker, grandchild]) == []
    assert group_members(worker) == []


def test_a_hung_worker_is_killed_with_its_group_when_replaced(tmp_path: Path) -> None:
    pid_file = tmp_path / "pids"
    with WorkerPool(workers=1, timeout_s=2.0, preload=()) as pool:
        (outcome,) = list(pool.run([job("hung", "start_grandchild", pid_file=str(pid_file), hang_s=600)]))
        worker, grandchild = read_pids(pid_file)
        assert outcome.code == "WORKER_TIMEOUT"
        assert wait_gone([worker, grandchild]) == []  # while the pool lives on
        assert group_members(worker) == []


def test_a_killed_parent_leaves_no_worker_behind(tmp_path: Path) -> None:
    pid_file = tmp_path / "pids"
    script = textwrap.dedent(
        f"""
        from argus.eval.isolation import Job, WorkerPool
        pool = WorkerPool(workers=1, timeout_s=600, preload=())
        job = Job("hang", "{HERE}:start_grandchild", {{"pid_file": {str(pid_file)!r}, "hang_s": 1000}})
        for outcome in pool.run([job]):
            print(outcome, flush=True)
        """
    )
    parent = subprocess.Popen([sys.executable, "-c", script], cwd=REPO)
    try:
        worker, grandchild = read_pids(pid_file)
        assert running(worker) and running(grandchild)
        os.kill(parent.pid, signal.SIGKILL)  # no close, no cleanup: as `kill -9` of `argus kernelbench`
        assert parent.wait(timeout=30) == -signal.SIGKILL
        assert wait_gone([worker], timeout_s=5.0) == [], "the worker outlived its parent"
        assert wait_gone([grandchild], timeout_s=5.0) == [], "what the job started outlived the pool's parent"
        assert group_members(worker) == []
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
