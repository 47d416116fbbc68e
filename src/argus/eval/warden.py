"""The first process of a sandbox (`argus.eval.sandbox`), run as a script (``python -I warden.py PATHS FD``) so that
nothing but the standard library is imported before it forks: after ``unshare(CLONE_NEWPID)`` a process may not
create threads until its first child exists, and NumPy starts threads on import.

It makes itself a subreaper and forks the runner (`argus.eval.sandbox_runner.runner_main`: the only process where
candidate code runs, and the first process of the sandbox's PID namespace when one could be made). The runner drops
every capability before it imports anything. The warden waits for it, kills every process the runner left behind, and
exits with the runner's status (128 + n when signal n killed it). On SIGTERM from the judge it kills the runner
first.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import socket
import sys
import time

PR_SET_PDEATHSIG = 1
PR_CAPBSET_DROP = 24
PR_SET_CHILD_SUBREAPER = 36
PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
CAPABILITY_VERSION_3 = 0x20080522


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def drop_capabilities(libc: ctypes.CDLL) -> None:
    """Empty the bounding, ambient, effective, permitted and inheritable sets: even a root process can then not
    remount, unshare, trace or signal outside its user, and ``exec`` gives nothing back."""
    for cap in range(64):
        libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header = _CapHeader(CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    libc.capset(ctypes.byref(header), data)


def children(pid: int) -> list[int]:
    """The children of `pid` (``/proc/PID/task/*/children``, else a scan of ``/proc/*/stat``)."""
    out: list[int] = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out += [int(c) for c in f.read().split()]
        return out
    except OSError:
        pass
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError, ValueError, IndexError):
                with open(f"/proc/{entry}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        out.append(int(entry))
    return out


def sweep_descendants(timeout_s: float = 5.0) -> int:
    """SIGKILL every child of this process until none is left (as a subreaper, the runner's orphans are our
    children); returns how many signals were sent."""
    me, killed = os.getpid(), 0
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        kids = children(me)
        if not kids:
            break
        for k in kids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(k, signal.SIGKILL)
                killed += 1
        time.sleep(0.01)
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
    return killed


def remove_workdir(workdir: str) -> None:
    """Empty the sandbox's directory (the judge removes it; this covers a judge that died first: the directory
    itself, a mount point in this namespace, is left empty for the next judge to remove)."""
    import shutil

    workdir = os.path.normpath(workdir)
    if not os.path.basename(workdir).startswith("argus-sandbox-") or not os.path.isdir(os.path.join(workdir, "home")):
        return
    for entry in os.listdir(workdir):
        path = os.path.join(workdir, entry)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                os.unlink(path)


def main(paths: list[str], fd: int, workdir: str | None = None) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    me, judge = os.getpid(), os.getppid()
    runner = os.fork()
    if runner == 0:
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() not in (me, 0):  # the warden died first (0: the warden is outside our PID namespace)
            os._exit(1)
        drop_capabilities(libc)
        code = 0
        try:
            sys.path[:] = paths
            from argus.eval.sandbox_runner import runner_main

            runner_main(socket.socket(fileno=fd))
        except BaseException:  # noqa: BLE001 - the runner's own end, whatever the candidate did
            code = 1
        os._exit(code)
    os.close(fd)

    def stop(signum: int, frame: object) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(runner, signal.SIGKILL)

    signal.signal(signal.SIGTERM, stop)
    status = 0
    while True:
        try:
            pid, raw = os.waitpid(-1, 0)
        except ChildProcessError:
            break
        except InterruptedError:
            continue
        if pid == runner:
            status = 128 + os.WTERMSIG(raw) if os.WIFSIGNALED(raw) else os.WEXITSTATUS(raw)
            break
    sweep_descendants()
    if workdir and os.getppid() != judge:  # the judge is gone and cannot remove it
        remove_workdir(workdir)
    os._exit(status)


if __name__ == "__main__":
    main(json.loads(sys.argv[1]), int(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3 else None)
