"""Counterexamples render three ways: GPUVerify-style text, Faial-style tables, JSON."""

from __future__ import annotations

import importlib
import io
import json

from rich.console import Console

from argus.ir.expr import SourceLoc
from argus.verify import Access, Counterexample, Element, Finding, Result, TagValue, ThreadPoint, Verdict, verify


def _race():
    module = importlib.import_module("tests.verify.corpus.kernels_race_replicated_store")
    result = verify(module.KERNEL)
    return result, next(f for f in result.errors if f.code == "RACE_WRITE_WRITE")


def test_race_reads_like_gpuverify() -> None:
    _, finding = _race()
    text = finding.render_text()
    first = text.splitlines()[0]
    assert "error[RACE_WRITE_WRITE]: possible write-write race on sA[" in first
    assert first.startswith("kernels_race_replicated_store.py:")
    assert text.count("write by thread") == 2
    assert "T.copy(rA, sA)" in text


def test_race_table_lists_both_threads() -> None:
    _, finding = _race()
    table = finding.counterexample.render_table()
    assert "~~~~ launch ~~~~" in table and "~~~~ threads ~~~~" in table
    row = next(line for line in table.splitlines() if line.startswith("| threadIdx.x"))
    threads = [c.strip() for c in row.strip("|").split("|")][1:]
    assert len(threads) == 2 and threads[0] != threads[1]
    buf = io.StringIO()
    Console(file=buf, width=200).print(finding.counterexample.render_table(rich=True))
    assert "threadIdx.x" in buf.getvalue()


def test_json_is_plain_data_and_complete() -> None:
    result, finding = _race()
    data = json.loads(json.dumps(result.to_json()))
    assert data["verdict"] == "violated"
    f = next(x for x in data["findings"] if x["code"] == "RACE_WRITE_WRITE")
    cex = f["counterexample"]
    assert len(cex["accesses"]) == 2 and {a["kind"] for a in cex["accesses"]} == {"write"}
    assert cex["accesses"][0]["element"]["index"] == cex["accesses"][1]["element"]["index"]
    assert cex["op_loc"]["line"] == finding.loc.line and f["severity"] == "error" and f["hint"]


def test_tag_counterexample_fields() -> None:
    loc = SourceLoc("k.py", 7, 4, "    T.gemm(rA, rB, acc)")
    cex = Counterexample(
        code="MMA_K_MISMATCH",
        message="A and B disagree",
        op_loc=loc,
        block={"bm": 1},
        shapes={"K": 64},
        thread=ThreadPoint(133, "consumer"),
        loops={"k": 2},
        element=Element("acc", "fragment", None, (8, 3), 5),
        expected=TagValue("B", (64, 3)),
        actual=TagValue("A", (8, 96), masked=True),
        chain=(),
    )
    text = cex.render_text()
    assert text.startswith("k.py:7: error[MMA_K_MISMATCH]: A and B disagree")
    assert "thread 133 (warpgroup 1, warp 4, lane 5, role consumer), iteration k=2" in text
    assert "expected tag B(64, 3), actual tag A(8, 96) [masked]" in text
    table = cex.render_table()
    assert "| bm" in table and "| K" in table and "133" in table
    js = cex.to_json()
    assert js["thread"]["warp"] == 4 and js["actual"]["masked"] is True and js["element"]["value"] == 5
    result = Result("k", {}, (Finding("MMA_K_MISMATCH", Verdict.VIOLATED, "x", loc=loc, counterexample=cex),))
    assert result.verdict == Verdict.VIOLATED and "k(): violated" in result.render_text()


def test_unknown_and_warning_verdicts() -> None:
    w = Finding("PERF_UNCOALESCED", Verdict.VIOLATED, "w")
    u = Finding("UNKNOWN_SOLVER", Verdict.UNKNOWN, "u", reason="timeout", pin="pin K")
    assert Result("k", {}, (w,)).verdict == Verdict.VERIFIED
    assert Result("k", {}, (w, u)).verdict == Verdict.UNKNOWN
    assert "reason: timeout" in u.render_text() and "to decide it: pin K" in u.render_text()
    access = Access("read", "copy", None, ThreadPoint(3))
    assert access.to_json()["thread"]["lane"] == 3
