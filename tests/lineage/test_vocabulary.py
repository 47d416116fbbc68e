"""One vocabulary of optimization mechanisms (`argus.lineage.mechanisms`): every name of a mechanism step or lineage
rung used anywhere — the library's ladders, the lineage operators, the skill specs, the agent's arms, the curated
knowledge-base entries, the source, the docs and the tests — resolves in its table, and the places that say how a step
is made (the operators' policy and parameter values, the skill specs' and the curated entries' transforms) agree
with it."""

from __future__ import annotations

import pathlib
import re

import pytest

from argus.kb import get_entry
from argus.kb.schema import POLICIES
from argus.kernels.registry import lineage, lineages
from argus.lineage.errors import LineageError
from argus.lineage.mechanisms import BASE_RUNGS, MECHANISMS, RUNGS, STEPS, rung, step, step_name, vocabulary_table
from argus.lineage.operators import Operator, OutputCastOperator, edges, operators, structural_steps
from argus.lineage.skills import SPECS

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_every_rung_of_the_library_is_a_rung_of_the_vocabulary() -> None:
    used = {r.mechanism for family in lineages() for r in lineage(family)}
    assert used == set(RUNGS)
    for family in lineages():
        assert lineage(family)[0].mechanism in BASE_RUNGS  # a family starts at a rung adding no step
    assert set(BASE_RUNGS) == {"naive_fma", "expert_grid"} and all(RUNGS[r].steps == () for r in BASE_RUNGS)


def test_every_step_is_made_by_a_change_or_a_rung_and_removed_by_an_operator() -> None:
    removed = {step_name(op.mechanism, op.level) for op in operators()}
    for s in STEPS.values():
        assert s.meaning and (s.changes or s.rungs), s.name
        assert s.name in removed, f"no operator removes {s.name}"
    assert [s.rungs for s in STEPS.values() if len(s.rungs) > 1] == []  # a step belongs to at most one rung


def test_each_operator_sets_what_the_vocabulary_says_removes_its_step() -> None:
    for op in operators():
        s = step(step_name(op.mechanism, op.level))
        kinds = {c.kind: c for c in s.changes}
        if op.kind == "policy":
            assert kinds["policy"].name == op.policy and kinds["policy"].off == op.value, op.id
        elif isinstance(op, OutputCastOperator):
            assert "param" in kinds, op.id
        elif op.kind == "param":
            change = kinds["param"]
            assert (change.name, change.off) == (op.param, op.value) and op.before in change.on, op.id
        elif op.kind == "ir":
            assert "ir" in kinds, op.id
        else:
            assert op.kind == "structural" and s.rungs, op.id
    # the edges the structural operators walk are the rungs' structural steps
    for e in edges():
        name = step_name(e.mechanism, e.level)
        assert e.source.startswith("library") or name in structural_steps(STEPS[name].rungs[0]), e


def test_every_policy_the_vocabulary_names_is_a_kernel_policy() -> None:
    named = {c.name for s in STEPS.values() for c in s.changes if c.kind == "policy"}
    assert named and named <= set(POLICIES)


def test_every_step_has_a_skill_spec_whose_transform_is_the_vocabularys() -> None:
    assert set(SPECS) == set(STEPS)
    for name, spec in SPECS.items():
        if spec.policy is not None:
            (change,) = [c for c in STEPS[name].changes if c.kind == "policy"]
            assert spec.policy.policy == change.name and spec.policy.candidates == change.on, name


def test_the_entries_the_vocabulary_names_are_curated_and_agree_on_the_policy() -> None:
    for s in STEPS.values():
        entry = get_entry(s.entry)  # raises for an id the knowledge base does not have
        assert entry.provenance.source == "curated", s.name
        if entry.transform.kind == "policy":
            (change,) = [c for c in s.changes if c.kind == "policy" and c.name == entry.transform.policy]
            assert set(change.on) <= set(entry.transform.candidates), (s.name, change.on)
    for r in RUNGS.values():
        assert (r.entry is None) == (r.id in BASE_RUNGS) and (r.entry is None or get_entry(r.entry)), r.id


def test_every_mechanism_requirement_and_marker_names_a_known_step() -> None:
    for m in MECHANISMS.values():
        for needs in m.requires.values():
            for need, minimum in needs:
                step_name(need, minimum)
        assert set(m.markers) <= set(range(1, len(m.levels))), m.id


#: Files that write an unknown step on purpose (to show it refused).
_REFUSALS = {"tests/lineage/test_skill_specs.py", "tests/lineage/test_vocabulary.py"}


def test_every_step_name_written_anywhere_resolves() -> None:
    """``mechanism@level`` in the source, the skill specs, the docs, the tests and the benchmarks."""
    found: dict[str, list[str]] = {}
    for base in ("src", "docs", "tests", "benchmarks"):
        for path in (ROOT / base).rglob("*"):
            if path.suffix not in (".py", ".md", ".toml") or str(path.relative_to(ROOT)) in _REFUSALS:
                continue
            for name in re.findall(r"\b([a-z_]+@\d+)\b", path.read_text(encoding="utf-8")):
                found.setdefault(name, []).append(str(path.relative_to(ROOT)))
    unknown = {name: where for name, where in found.items() if name not in STEPS}
    assert not unknown, f"step names that are not in argus.lineage.mechanisms.STEPS: {unknown}"
    assert len(found) >= len(STEPS) - 1  # the scan sees the names (the docs name every step)


def test_an_unknown_step_or_rung_is_refused() -> None:
    with pytest.raises(LineageError) as e:
        step("pipelined@1")
    assert e.value.code == "LINEAGE_UNKNOWN_STEP" and "pipeline@1" in e.value.hint
    with pytest.raises(LineageError):
        rung("tma_everything")
    with pytest.raises(LineageError):
        Operator("x", "pipeline", 2, "policy", "no second level")


def test_the_docs_show_the_vocabulary() -> None:
    assert vocabulary_table() in (ROOT / "docs" / "lineage.md").read_text()
