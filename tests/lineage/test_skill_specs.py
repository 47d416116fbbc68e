"""The skill specs as data (`src/argus/lineage/skill_specs.toml`, loaded by `argus.lineage.skills.load_specs`): the
same specs the skills were mined with when they were a table of positional tuples, and a malformed spec refused with
the field it gets wrong.

`data/skill_specs_20421f9.json` is the serialisation below, produced from `SPECS` at commit 20421f9 (before the specs
became data) with tuples and the order of a dict's keys kept: every field a mined skill takes from its spec."""

from __future__ import annotations

import json
import pathlib

import pytest

from argus.lineage.skills import SPECS, SPECS_FILE, load_specs

GOLDEN = pathlib.Path(__file__).parent / "data" / "skill_specs_20421f9.json"


def tagged(value):
    """JSON that keeps what JSON would lose: tuples and the order of a dict's keys."""
    if isinstance(value, tuple):
        return {"tuple": [tagged(x) for x in value]}
    if isinstance(value, list):
        return [tagged(x) for x in value]
    if isinstance(value, dict):
        return {"dict": [[k, tagged(x)] for k, x in value.items()]}
    return value


def serialise(specs) -> list[dict]:
    return [
        {
            "step": name,
            "slug": s.slug,
            "title": s.title,
            "category": s.category,
            "locus": tagged(s.locus),
            "intent": s.intent,
            "improves": tagged(s.improves),
            "bound": s.bound,
            "preconditions": [
                {"feature": p.feature, "op": p.op, "value": tagged(p.value), "category": p.category, "reason": p.reason}
                for p in s.preconditions
            ],
            "risks": [{"risk": r.risk, "codes": tagged(r.codes), "caught_by": tagged(r.caught_by)} for r in s.risks],
            "probes": [
                {
                    "category": p.category,
                    "kind": p.kind,
                    "arg": tagged(p.arg),
                    "what": p.what,
                    "match": p.match,
                    "attribute": p.attribute,
                }
                for p in s.probes
            ],
            "example": None if s.example is None else {"before": s.example.before, "after": s.example.after},
            "policy": None
            if s.policy is None
            else {"policy": s.policy.policy, "candidates": tagged(s.policy.candidates)},
            "keywords": tagged(s.keywords),
        }
        for name, s in specs.items()
    ]


#: Steps whose specs were first written as data, after the golden file (the grouped GEMM's units, session 46; the
#: attention lineage's rungs 8-10, session 73).
WRITTEN_AS_DATA = ("grouped_units@1", "intra_overlap@1", "pingpong@1", "register_operand@1")


def test_the_specs_are_the_ones_the_skills_were_mined_with_before_they_became_data() -> None:
    before = json.loads(GOLDEN.read_text())
    assert set(WRITTEN_AS_DATA) <= set(SPECS) and not set(WRITTEN_AS_DATA) & {s["step"] for s in before}
    after = [s for s in serialise(SPECS) if s["step"] not in WRITTEN_AS_DATA]
    assert [s["step"] for s in after] == [s["step"] for s in before]
    for old, new in zip(before, after, strict=True):
        for key in old:
            assert new[key] == old[key], (old["step"], key)
    assert after == before


def test_each_spec_is_keyed_by_its_step() -> None:
    assert all(name == spec.step for name, spec in SPECS.items())


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda t: t.replace('step = "pipeline@1"', 'step = "pipelined@1"'), "'pipelined@1' is not in the vocabulary"),
        (lambda t: t.replace('bound = "latency"', 'bound = "fast"', 1), "bound: 'fast' not in"),
        (lambda t: t.replace('category = "hardware"', 'category = "layout"', 1), "preconditions: one per category"),
        (lambda t: t.replace('slug = "output-cast"', 'slug = "output-cast"\nspeedup = 2'), "unknown ['speedup']"),
        (lambda t: t.replace('caught_by = ["gate.correct"]', 'caught_by = ["review"]', 1), "caught by ('review',)"),
        (lambda t: t.replace('kind = "arch"', 'kind = "guess"', 1), "probes:"),
        (lambda t: t.replace('codes = ["BUDGET_REGISTERS"]', 'codes = ["DSL_TURN"]', 1), "are not verifier codes"),
        (lambda t: t + '\n[[skill]]\nstep = "mma@1"\n', "fields: slug, title"),
    ],
)
def test_a_malformed_spec_is_refused_with_the_field(tmp_path, edit, message) -> None:
    path = tmp_path / "specs.toml"
    path.write_text(edit(SPECS_FILE.read_text()))
    with pytest.raises(ValueError) as e:
        load_specs(path)
    assert message in str(e.value)
