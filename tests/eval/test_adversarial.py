"""The adversarial corpus (`tests/eval/adversarial/`): every attack on the gate, run through the gate on the CPU.

Each file states what it tries and the verdict the gate must give; this test also checks that nothing escaped:
no marker file outside the sandbox, no connection to the judge's loopback, no process left behind, argus's own
source unchanged, and no configured key anywhere in the result."""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import socket
import threading
import time
from pathlib import Path

import pytest

from argus.eval.candidates import ModuleCandidate
from argus.eval.gate import GateOptions, gate_module
from argus.eval.sandbox import ENV_ALLOWLIST, Sandbox
from argus.tasks.kernelbench import load_problem

CORPUS = Path(__file__).parent / "adversarial"
PROBLEM = CORPUS / "problem_matmul.py"
ATTACKS = sorted(p for p in CORPUS.glob("*.py") if p.name != PROBLEM.name)
ARGUS_EVAL = Path(__file__).resolve().parents[2] / "src" / "argus" / "eval"


def header(path: Path) -> tuple[str, str, list[str]]:
    """(category, verdict, allowed codes) from the file's ``# attack:`` and ``# expect:`` lines."""
    text = path.read_text()
    attack = re.search(r"^# attack: (\w+):", text, re.M)
    expect = re.search(r"^# expect: (\w+)(?: (\S+))?", text, re.M)
    assert attack and expect, f"{path.name} has no '# attack:' / '# expect:' header"
    return attack.group(1), expect.group(1), (expect.group(2) or "").split("|") if expect.group(2) else []


def test_corpus_is_large_and_covers_every_category() -> None:
    categories = [header(p)[0] for p in ATTACKS]
    assert len(ATTACKS) >= 30
    assert {"escape", "tamper", "cache", "secret", "fault", "honest"} <= set(categories)


def test_every_code_the_corpus_expects_is_in_the_catalog() -> None:
    from argus.eval.codes import CODES

    for path in ATTACKS:
        for code in header(path)[2]:
            assert code.endswith("_") or code in CODES, f"{path.name}: {code} is not in argus.eval.codes"


def source_digest() -> str:
    """The digest of the argus module the corpus tries to rewrite on disk."""
    return hashlib.sha256((ARGUS_EVAL / "tolerance.py").read_bytes()).hexdigest()


def processes_with(text: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if text in cmdline:
                found.append(int(entry))
    return found


class Listener:
    """A TCP server on the judge's loopback that records every connection."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self.stop = False
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self) -> None:
        while not self.stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self.stop = True
        self.thread.join(timeout=2)
        self.sock.close()


@pytest.fixture(scope="module")
def protections() -> dict:
    with Sandbox() as sandbox:
        return dict(sandbox.protections)


def test_sandbox_protections_hold_on_this_machine(protections: dict) -> None:
    # CI's Linux allows all of them; a machine where one does not hold must fail here, not pass the escapes by luck
    assert protections["net_namespace"] and protections["pid_namespace"] and protections["mnt_namespace"]
    assert protections["filesystem_read_only"]
    assert protections["capabilities"] == {"effective": 0, "bounding": 0}
    allowed = set(ENV_ALLOWLIST) | {"HOME", "TMPDIR", "XDG_CACHE_HOME", "TORCH_EXTENSIONS_DIR", "TRITON_CACHE_DIR",
                                    "PYTHONDONTWRITEBYTECODE", "PYTHONHASHSEED"}  # fmt: skip
    assert set(protections["environment"]) <= allowed
    assert not any(k.endswith(("_KEY", "_TOKEN", "_SECRET")) for k in protections["environment"])


@pytest.mark.parametrize("path", ATTACKS, ids=[p.stem for p in ATTACKS])
def test_attack_is_rejected_or_contained(
    path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, protections: dict
) -> None:
    category, verdict, codes = header(path)
    key = "sk-test-LEAK-" + secrets.token_hex(12)
    home = tmp_path / "home"
    (home / ".config" / "argus").mkdir(parents=True)
    (home / ".config" / "argus" / "config.toml").write_text(f'[llm]\napi_key = "{key}"\n')
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "ARGUS_LLM_API_KEY", "HF_TOKEN"):
        monkeypatch.setenv(name, key)
    monkeypatch.setenv("HOME", str(home))
    marker = tmp_path / "escaped-marker"
    sleep = f"{secrets.randbelow(10**6) + 10**6}.25"
    listener = Listener()
    source = path.read_text()
    for name, value in {"@MARKER@": str(marker), "@PORT@": str(listener.port), "@SLEEP@": sleep,
                        "@JUDGE_HOME@": str(home), "@KEY@": key}.items():  # fmt: skip
        source = source.replace(name, value)
    solution = tmp_path / path.name
    solution.write_text(source)
    before = source_digest()
    options = GateOptions(device="cpu", trials=5, sandbox_timeout_s=25.0)
    task = load_problem(PROBLEM)
    try:
        result = gate_module(task, ModuleCandidate(path.stem, path=solution), options)
    finally:
        time.sleep(0.2)
        listener.close()
    text = json.dumps(result.to_json())

    assert result.verdict == verdict, f"{path.name}: {result.summary()} {[s.reason for s in result.stages]}"
    if verdict == "rejected":
        code = result.failed_stage.code
        assert any(code == c or (c.endswith("_") and code.startswith(c)) for c in codes), (path.name, code)
    assert not marker.exists(), f"{path.name} wrote outside its sandbox"
    assert listener.connections == 0, f"{path.name} reached the judge's network"
    assert processes_with(sleep) == [], f"{path.name} left a process behind"
    assert source_digest() == before, f"{path.name} changed argus's source"
    assert key not in text, f"{path.name} got a key into the result"
    assert result.environment["sandbox"]["net_namespace"]


def test_a_tampering_candidate_does_not_change_the_next_verdict(tmp_path: Path) -> None:
    task = load_problem(PROBLEM)
    options = GateOptions(device="cpu", trials=5)
    first = gate_module(task, ModuleCandidate("t", path=CORPUS / "tamper_persist_across_candidates.py"), options)
    second = gate_module(task, ModuleCandidate("w", path=CORPUS / "fault_wrong_answer.py"), options)
    honest = gate_module(task, ModuleCandidate("h", path=CORPUS / "honest_matmul.py"), options)
    assert (first.verdict, second.verdict, honest.verdict) == ("rejected", "rejected", "accepted")
    assert first.environment["sandbox"]["pid"] != second.environment["sandbox"]["pid"]  # a fresh process each


def test_without_the_sandbox_the_tampering_works(tmp_path: Path) -> None:
    """The attack is real: gated in the judge's own process (``sandbox=False``, the old design), patching the
    comparison makes a wrong answer pass. (The patch is undone afterwards.)"""
    import argus.eval.correctness
    import argus.eval.tolerance

    saved = argus.eval.tolerance.compare, argus.eval.correctness.compare
    try:
        task = load_problem(PROBLEM)
        options = GateOptions(device="cpu", trials=5, sandbox=False)
        result = gate_module(task, ModuleCandidate("t", path=CORPUS / "tamper_patch_compare.py"), options)
        assert result.verdict == "accepted"
    finally:
        argus.eval.tolerance.compare, argus.eval.correctness.compare = saved


# --------------------------------------------------------------------------------------------------------------
# the timed phase, across two processes, on host clocks (the protocol is the GPU's; the clock is the CPU's)


def timed_run(path: Path, rounds: int = 12) -> tuple[str | None, object]:
    """Load `path` in a sandbox and time it interleaved with a baseline here, as the profile stage does, on the
    CPU clock; returns (the stale-result failure or None, the timing)."""
    import torch

    from argus.eval.correctness import as_outputs, module_reference
    from argus.eval.judge import RemoteTiming, _call, stale_check
    from argus.eval.timing import Contender, CpuClock, measure_interleaved

    task = load_problem(PROBLEM)
    reference = module_reference(task, "cpu", 0)
    with Sandbox() as sandbox:
        _call(sandbox, "load_module", 30, path=str(path), attr="ModelNew", init_inputs=[], seed=0, device="cpu")
        _call(sandbox, "prepare_timing", 30, problem=str(PROBLEM), sizes={}, clock="cpu")
        check = stale_check(sandbox, task, reference, "cpu", 30)
        remote = RemoteTiming(sandbox, 30, rounds, check)
        draw = task.sample(1, "cpu")
        result = measure_interleaved(
            {
                "candidate": Contender(lambda: None, timed=remote.timed, wall=remote.wall),
                "eager": Contender(lambda: as_outputs(reference.run_native(draw))),
            },
            CpuClock(),
            rounds=rounds,
            warmup=2,
            reference="candidate",
            last="candidate",
        )
        failure = remote.failure or check(remote.last_seed, "last timed call")
        assert torch.is_tensor(draw[0])
    return failure, result


def test_timed_rounds_of_an_honest_candidate_check_out() -> None:
    failure, result = timed_run(CORPUS / "honest_matmul.py")
    assert failure is None
    assert result.timings["candidate"].reps == 12 and result.timings["candidate"].median_ms > 0
    assert "eager" in result.ratios


@pytest.mark.parametrize("name", ["cache_stop_after_warmup.py", "cache_by_shape.py"])
def test_timed_rounds_catch_a_candidate_that_stops_computing(name: str) -> None:
    # each timed round draws fresh inputs from a seed chosen at that moment; the last round and randomly chosen
    # earlier ones come back whole and are compared with the judge's reference for that round's draw
    failure, _ = timed_run(CORPUS / name)
    assert failure is not None and ("timed round" in failure or "last timed call" in failure), failure


def test_a_reported_time_longer_than_its_round_trip_rejects(monkeypatch: pytest.MonkeyPatch) -> None:
    from argus.eval.correctness import CandidateFailure
    from argus.eval.judge import RemoteTiming

    with Sandbox() as sandbox:
        remote = RemoteTiming(sandbox, 30, 4, lambda seed, what: None)
        monkeypatch.setattr("argus.eval.judge._call", lambda *a, **k: {"ms": 1e6})
        with pytest.raises(CandidateFailure) as caught:
            remote.timed(0)
    assert caught.value.code == "PROFILE_TIMING_IMPOSSIBLE"


def test_the_wire_carries_tensors_tuples_and_memory_files_exactly() -> None:
    import threading

    import torch

    from argus.eval.sandbox import SHARED_MEMORY_BYTES, SandboxError, recv_frame, send_frame

    a, b = socket.socketpair()
    big = torch.randn(SHARED_MEMORY_BYTES // 4 + 7)  # through a sealed memory file
    sent = {"t": (1, (2, 3)), "x": [torch.arange(5), {"b": torch.tensor([True, False])}], "big": big,
            "h": torch.randn(3, 3).to(torch.bfloat16)}  # fmt: skip
    thread = threading.Thread(target=send_frame, args=(a, sent))
    thread.start()
    got = recv_frame(b, 10)
    thread.join()
    assert got["t"] == (1, (2, 3)) and isinstance(got["t"], tuple)
    assert torch.equal(got["x"][0], sent["x"][0]) and torch.equal(got["x"][1]["b"], sent["x"][1]["b"])
    assert torch.equal(got["big"], big) and torch.equal(got["h"], sent["h"])
    # a frame claiming more than the limit is refused before anything is allocated
    thread = threading.Thread(target=send_frame, args=(a, {"o": torch.zeros(1000)}))
    thread.start()
    with pytest.raises(SandboxError) as refused:
        recv_frame(b, 10, max_bytes=100)
    thread.join()
    assert refused.value.code == "SANDBOX_PROTOCOL"
    a.close()
    b.close()


def test_a_sandbox_whose_judge_died_leaves_nothing_behind(tmp_path: Path) -> None:
    import subprocess
    import sys

    from argus.eval.sandbox import remove_stale_workdirs

    script = "from argus.eval.sandbox import Sandbox\nimport os\ns = Sandbox()\ns.start()\nprint(s.workdir, s.protections['runner'], flush=True)\nos._exit(0)\n"  # noqa: E501
    env = {**os.environ, "TMPDIR": str(tmp_path)}  # its sandbox's directory here, so the sweep below sees no other
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env
    ).stdout.split()
    workdir, runner = out[0], int(out[1])
    deadline = time.time() + 10
    while time.time() < deadline and Path(f"/proc/{runner}").exists():
        time.sleep(0.1)
    assert not Path(f"/proc/{runner}").exists(), "the runner outlived its judge"
    time.sleep(0.5)
    assert not Path(workdir).exists() or not any(Path(workdir).iterdir())  # emptied by the warden
    # the empty directory (a mount point in the sandbox's namespace) goes with the next judge's sweep
    assert Path(workdir).parent == tmp_path
    alive = tmp_path / "argus-sandbox-alive"
    (alive / "home").mkdir(parents=True)
    (alive / "judge.pid").write_text(str(os.getpid()))
    assert remove_stale_workdirs(str(tmp_path), min_age_s=0) == 1
    assert not Path(workdir).exists() and alive.exists()


def test_a_reply_may_carry_outputs_much_larger_than_its_inputs() -> None:
    """KernelBench level 1's 59 (a 3-d convolution from 3 to 64 channels) answers 126 MB of input with 2.6 GB of
    output: its reply is within the limit, while one past twice the inputs plus the allowance is not."""
    import torch

    from argus.eval.judge import OUTPUT_ALLOWANCE, reply_limit

    x = torch.empty((16, 3, 256, 256, 10), device="meta")  # 126 MB, never allocated
    inputs_bytes = x.numel() * x.element_size()
    assert reply_limit([x]) >= 16 * 64 * 254 * 254 * 10 * 4  # 59's output
    assert reply_limit([x]) == 2 * inputs_bytes + OUTPUT_ALLOWANCE
