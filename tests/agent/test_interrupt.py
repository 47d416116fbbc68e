"""Ctrl-C during `argus optimize` leaves a run that `--resume` continues, and says so: the run id and the command."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path


def test_ctrl_c_prints_the_run_id_and_how_to_resume(tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "argus", "optimize", "gemm_naive", "--budget", "500", "--store", str(store),
         "--no-isolate"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        # a test runner's worker may ignore SIGINT (pytest-xdist's do), and an ignored signal stays ignored across
        # exec: give the command the terminal's default, as a shell would
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    seen = ""
    deadline = time.monotonic() + 300
    while "gating the starting kernel" not in seen and time.monotonic() < deadline:  # the run exists, gating
        line = proc.stdout.readline()
        if not line:
            break
        seen += line
    assert "gating the starting kernel" in seen, seen
    assert proc.poll() is None, "the run ended before it could be interrupted"  # 500 gated candidates take minutes
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 130, (seen + out, err)
    assert "Traceback" not in err
    m = re.search(r"interrupted: run (\w+) is saved in (\S+); continue it with\s+argus optimize --resume (\w+)", err)
    assert m and m.group(1) == m.group(3), err
    resumed = subprocess.run(
        [sys.executable, "-m", "argus", "optimize", "--resume", m.group(1), "--store", str(store), "--budget", "2",
         "--no-isolate"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    assert f"run {m.group(1)}: gemm_naive" in resumed.stdout
