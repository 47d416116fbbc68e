"""The verifier corpus: every file in corpus/ is one kernel whose docstring states the expected
verdict, the codes it must be reported with, and facts about the counterexample; lines marked
``# <- CODE`` are where that finding must point (its source line, one of its accesses' lines, or the statement
its blame names).

Header lines (inside the module docstring):

* ``expect: verified | violated | unknown``
* ``code: CODE`` — an error or unknown finding that must be reported (all other errors are failures)
* ``warning: CODE`` / ``no-warning: CODE`` — a warning that must / must not be reported
* ``fact: CODE <path> <op> <value>`` — about the first finding with CODE: `path` is dotted into its
  JSON (`Finding.to_json`), `value` a Python literal or another path
"""

from __future__ import annotations

import ast
import importlib
import pathlib
import re
from typing import Any

import pytest

from argus.verify import Severity, Verdict, verify

CORPUS = pathlib.Path(__file__).parent / "corpus"
FILES = sorted(CORPUS.glob("kernels_*.py"))


def _header(path: pathlib.Path) -> dict[str, Any]:
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    out: dict[str, Any] = {"codes": [], "warnings": [], "no_warnings": [], "facts": [], "expect": None}
    for line in doc.splitlines():
        key, _, rest = line.partition(":")
        rest = rest.strip()
        if key == "expect":
            out["expect"] = rest
        elif key == "code":
            out["codes"].append(rest)
        elif key == "warning":
            out["warnings"].append(rest)
        elif key == "no-warning":
            out["no_warnings"].append(rest)
        elif key == "fact":
            out["facts"].append(rest)
    markers: dict[str, list[int]] = {}
    for n, text in enumerate(path.read_text().splitlines(), start=1):
        for code in re.findall(r"# <- ([A-Z_]+)", text):
            markers.setdefault(code, []).append(n)
    out["markers"] = markers
    return out


def _get(obj: Any, path: str) -> Any:
    for part in path.split("."):
        obj = obj[int(part)] if isinstance(obj, list) else obj[part]
    return obj


def _value(text: str, finding: dict) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return _get(finding, text)


_OPS = {"==": lambda a, b: a == b, "!=": lambda a, b: a != b, ">=": lambda a, b: a >= b, ">": lambda a, b: a > b}


def _lines(finding) -> set[int]:
    lines = {finding.loc.line} if finding.loc is not None else set()
    cex = finding.counterexample
    if cex is not None:
        lines |= {a.loc.line for a in cex.accesses if a.loc is not None}
    if finding.blame is not None and finding.blame.loc is not None:  # the statement that made the fact false
        lines.add(finding.blame.loc.line)
    return lines


@pytest.mark.parametrize("path", FILES, ids=[p.stem.removeprefix("kernels_") for p in FILES])
def test_corpus_kernel(path: pathlib.Path) -> None:
    head = _header(path)
    assert head["expect"] in ("verified", "violated", "unknown"), f"{path.name}: no 'expect:' line"
    module = importlib.import_module(f"tests.verify.corpus.{path.stem}")
    result = verify(module.KERNEL, **getattr(module, "PARAMS", {}))
    assert result.verdict.value == head["expect"], result.render_text()
    reported = {f.code for f in result.findings}
    for code in head["codes"] + head["warnings"]:
        assert code in reported, f"{path.name}: {code} not reported\n{result.render_text()}"
    for code in head["no_warnings"]:
        assert code not in reported, f"{path.name}: {code} reported\n{result.render_text()}"
    unexpected = {f.code for f in result.errors} - set(head["codes"])
    assert not unexpected, f"{path.name}: unexpected errors {unexpected}\n{result.render_text()}"
    # every marked line is where a finding of that code points
    for code, lines in head["markers"].items():
        for line in lines:
            assert any(line in _lines(f) for f in result.findings if f.code == code), (
                f"{path.name}:{line}: no {code} finding points here\n{result.render_text()}"
            )
    # every violated error comes with a counterexample in the user's file (budgets and coverage have no thread)
    for f in result.errors:
        assert f.loc is not None and pathlib.Path(f.loc.file).name == path.name
        if not f.code.startswith(("BUDGET", "COVERAGE")):
            cex = f.counterexample
            assert cex is not None and cex.op_loc is not None
            # a tag assertion over a shared tile holds for no thread in particular: its block and the chain of
            # copies that put the value there are the witness
            shared_tag = f.code == "TAG_ASSERT" and cex.element is not None and cex.element.space == "shared"
            named = cex.thread is not None or cex.accesses or (shared_tag and cex.block and cex.chain)
            assert named, f"{f.code}: counterexample names no thread"
            if cex.accesses:
                a, b = cex.accesses
                assert a.element.index == b.element.index  # the same physical element
                if f.code == "RACE_GLOBAL":  # two blocks of the launch
                    writer = cex.variables["writer block"]
                    assert writer != ", ".join(f"{k}={v}" for k, v in cex.block.items()), (writer, cex.block)
                elif f.code.startswith("RACE"):
                    assert a.thread.thread != b.thread.thread  # by two different threads
            assert f.code in cex.render_text() and cex.to_json()["code"] == f.code
    for fact in head["facts"]:
        code, path_text, op, value = fact.split(None, 3)
        finding = next(f for f in result.findings if f.code == code).to_json()
        got = _get(finding, path_text)
        assert _OPS[op](got, _value(value, finding)), f"{path.name}: fact {fact!r} fails: {got!r}"


def test_corpus_is_big_enough() -> None:
    heads = [_header(p) for p in FILES]
    seeded = [h for h in heads if h["expect"] == "violated"]
    assert len(seeded) >= 30
    assert sum(h["expect"] == "verified" for h in heads) >= 10


def test_every_code_the_verifier_produces_has_a_corpus_kernel() -> None:
    """Every error and warning code of the catalog (not the UNKNOWN_* reasons, nor the codes documented as
    never produced) is exercised by at least one corpus kernel, as a required code or warning."""
    from argus.verify import CATALOG
    from argus.verify.catalog import NOT_PRODUCED, SEEDED_OUTSIDE_CORPUS

    heads = [_header(p) for p in FILES]
    covered = {c for h in heads for c in h["codes"] + h["warnings"]}
    elsewhere = set(SEEDED_OUTSIDE_CORPUS)
    wanted = {c for c, e in CATALOG.items() if e.severity != Severity.UNKNOWN and c not in NOT_PRODUCED} - elsewhere
    root = pathlib.Path(__file__).resolve().parents[2]
    assert elsewhere <= set(CATALOG) and all((root / t.split()[0]).is_file() for t in SEEDED_OUTSIDE_CORPUS.values())
    assert wanted - covered == set(), f"no corpus kernel exercises {sorted(wanted - covered)}"
    assert set(NOT_PRODUCED) <= set(CATALOG)
    marked = {c for h in heads for c in h["markers"]}
    assert {c for c in wanted if CATALOG[c].severity == Severity.ERROR} - marked == set()


def test_warnings_never_fail_verification() -> None:
    module = importlib.import_module("tests.verify.corpus.kernels_perf_bank_conflicts")
    result = verify(module.KERNEL)
    assert result.warnings and all(f.severity == Severity.WARNING for f in result.warnings)
    assert result.verdict == Verdict.VERIFIED
