"""The schema check over every shipped entry (runs in CI), and malformed entries rejected with the
file, the field and what is wrong."""

from __future__ import annotations

import fnmatch
import pathlib
import textwrap
import tomllib

import pytest

from argus.kb import CATEGORIES, PRECONDITION_CATEGORIES, SchemaError, entries, load_entries, load_file
from argus.kb.features import FEATURES
from argus.kb.schema import parse_entry
from argus.kb.store import ENTRIES_DIR
from argus.verify.catalog import CATALOG

ROOT = pathlib.Path(__file__).resolve().parents[2]

#: The techniques issue 8 asks the curated set to cover, each by the entry that covers it.
REQUIRED = {
    "tiling and tile shape": "tile-shape",
    "vectorized/coalesced global access": "vectorized-global-access",
    "shared-memory staging": "shared-memory-staging",
    "swizzle for bank conflicts": "swizzle-shared-128b",
    "padding for bank conflicts": "pad-shared-rows",
    "cp.async pipelining": "cp-async-pipeline",
    "TMA": "tma-loads",
    "mbarrier pipelines": "mbarrier-pipeline",
    "ldmatrix": "ldmatrix-fragments",
    "mma.sync vs wgmma": "wgmma-instead-of-mma-sync",
    "warp specialization": "warp-specialization",
    "register split": "register-split-setmaxnreg",
    "ping-pong consumers": "pingpong-consumers",
    "softmax/MMA overlap": "softmax-mma-overlap",
    "persistent grids": "persistent-grid",
    "tile order": "tile-order-grouped",
    "split-K": "split-k",
    "stream-K": "stream-k",
    "epilogue fusion": "epilogue-fusion",
    "TMA store": "tma-store-epilogue",
    "online softmax": "online-softmax",
    "causal block skipping": "causal-block-skipping",
    "exp2 with folded scale": "exp2-folded-scale",
    "warp-shuffle reductions": "warp-shuffle-reduction",
    "occupancy": "occupancy-tuning",
    "loop unrolling": "loop-unrolling",
    "grouped-GEMM scheduling": "grouped-gemm-scheduling",
    "MoE token permutation": "moe-token-permutation",
}


def test_every_shipped_entry_follows_the_schema() -> None:
    shipped = load_entries()  # raises SchemaError naming every bad file and field
    files = sorted(ENTRIES_DIR.glob("*.toml"))
    assert len(shipped) == len(files) >= 30
    assert [e.id for e in shipped] == sorted(p.stem for p in files)  # one file per entry, named by its id


def test_the_required_techniques_are_covered() -> None:
    ids = {e.id for e in entries()}
    missing = {topic: eid for topic, eid in REQUIRED.items() if eid not in ids}
    assert not missing


def test_entries_are_complete_and_consistent() -> None:
    for e in entries():
        assert e.category in CATEGORIES
        assert e.preconditions, f"{e.id}: no preconditions"
        for p in e.preconditions:
            assert p.category in PRECONDITION_CATEGORIES and p.feature in FEATURES and p.reason.strip()
        for s in e.signals:
            assert s.feature in FEATURES and s.weight > 0
        for r in e.risks:
            assert all(code in CATALOG for code in r.codes)
            assert r.codes or r.caught_by
        if e.transform.kind == "none":
            assert len(e.transform.reason) > 20, f"{e.id}: say why there is no transform"
        else:
            assert e.transform.policy and e.transform.candidates
        assert e.provenance.source == "curated" and e.provenance.references
        assert e.example.before.strip() != e.example.after.strip()


def test_entries_ship_as_package_data() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["package-data"]["argus.kb"]
    package = ROOT / "src" / "argus" / "kb"
    for path in ENTRIES_DIR.glob("*.toml"):
        relative = path.relative_to(package).as_posix()
        assert any(fnmatch.fnmatch(relative, p) for p in patterns), relative


# --- malformed entries ---------------------------------------------------------------------------------

GOOD = textwrap.dedent(
    """
    schema = 1
    id = "my-entry"
    title = "A test entry"
    category = "pipelining"
    intent = "Say what it does."

    [locus]
    op = "gemm"
    description = "the MMA"

    [[preconditions]]
    category = "pipeline"
    feature = "pipeline.stages"
    op = "le"
    value = 1
    reason = "not pipelined yet"

    [effect]
    improves = ["latency"]
    magnitude = "some"
    when = "always"

    [[risks]]
    risk = "a stale read"
    codes = ["PIPELINE_STALE_READ"]

    [transform]
    kind = "none"
    reason = "structural"

    [example]
    before = "x = 1"
    after = "x = 2"

    [provenance]
    source = "curated"
    references = ["a paper"]
    """
)


def _write(directory: pathlib.Path, name: str, text: str) -> pathlib.Path:
    path = directory / f"{name}.toml"
    path.write_text(text)
    return path


def _problems(text: str, name: str = "my-entry") -> list[tuple[str, str]]:
    with pytest.raises(SchemaError) as info:
        parse_entry(tomllib.loads(text), f"{name}.toml", expected_id=name)
    assert all(p.file == f"{name}.toml" for p in info.value.problems)
    return [(p.field, p.problem) for p in info.value.problems]


def test_the_good_entry_parses(tmp_path: pathlib.Path) -> None:
    entry = load_file(_write(tmp_path, "my-entry", GOOD))
    assert entry.id == "my-entry" and entry.preconditions[0].feature == "pipeline.stages"


def test_missing_field() -> None:
    problems = _problems(GOOD.replace('title = "A test entry"\n', ""))
    assert problems == [("title", "missing required field")]


def test_unknown_category() -> None:
    [(field, problem)] = _problems(GOOD.replace('category = "pipelining"', 'category = "magic"'))
    assert field == "category" and "unknown value 'magic'" in problem and "pipelining" in problem


def test_unknown_verifier_code() -> None:
    [(field, problem)] = _problems(GOOD.replace("PIPELINE_STALE_READ", "PIPELINE_STALE_REED"))
    assert field == "risks[0].codes[0]"
    assert "unknown verifier code 'PIPELINE_STALE_REED'" in problem and "did you mean 'PIPELINE_STALE_READ'" in problem


def test_precondition_on_an_unknown_feature() -> None:
    [(field, problem)] = _problems(GOOD.replace('feature = "pipeline.stages"', 'feature = "pipeline.stage"'))
    assert field == "preconditions[0].feature"
    assert "unknown feature 'pipeline.stage'" in problem and "pipeline.stages" in problem


def test_precondition_operator_and_value_must_fit_the_feature() -> None:
    [(field, problem)] = _problems(GOOD.replace('op = "le"', 'op = "has"'))
    assert field == "preconditions[0].op" and "does not apply to pipeline.stages (a int)" in problem
    [(field, problem)] = _problems(GOOD.replace("value = 1\n", 'value = "one"\n'))
    assert field == "preconditions[0].value" and "expected a int" in problem


def test_precondition_needs_one_of_the_five_categories() -> None:
    [(field, problem)] = _problems(GOOD.replace('category = "pipeline"', 'category = "timing"'))
    assert field == "preconditions[0].category" and "dtypes, layout, storage, pipeline, hardware" in problem


def test_duplicate_id(tmp_path: pathlib.Path) -> None:
    _write(tmp_path, "my-entry", GOOD)
    _write(tmp_path, "my-entry-copy", GOOD.replace('title = "A test entry"', 'title = "Another"'))
    with pytest.raises(SchemaError) as info:
        load_entries(tmp_path)
    assert info.value.code == "KB_DUPLICATE_ID"
    assert [(p.file, p.field, p.problem) for p in info.value.problems] == [
        ("my-entry.toml", "id", "duplicate id 'my-entry' (also declared in my-entry-copy.toml)")
    ]


def test_id_must_match_the_file_name(tmp_path: pathlib.Path) -> None:
    _write(tmp_path, "other-name", GOOD)
    with pytest.raises(SchemaError) as info:
        load_entries(tmp_path)
    assert [(p.file, p.field, p.problem) for p in info.value.problems] == [
        ("other-name.toml", "id", "'my-entry' differs from the file name 'other-name'")
    ]


def test_unknown_related_id(tmp_path: pathlib.Path) -> None:
    _write(tmp_path, "my-entry", GOOD.replace('intent = "Say what it does."', 'intent = "x"\nrelated = ["nope"]'))
    with pytest.raises(SchemaError) as info:
        load_entries(tmp_path)
    assert [(p.field, p.problem) for p in info.value.problems] == [("related[0]", "no entry with id 'nope'")]


def test_policy_transform_is_checked() -> None:
    policy = GOOD.replace('kind = "none"\nreason = "structural"', 'kind = "policy"\nreason = "r"\npolicy = "stages"')
    assert ("transform.candidates", "missing required field (a policy transform names its policy and values)") in (
        _problems(policy)
    )
    bad_value = policy + ""
    bad_value = bad_value.replace('policy = "stages"', 'policy = "stages"\ncandidates = [2, 0]')
    assert _problems(bad_value) == [("transform.candidates[1]", "stages takes positive integers, found 0")]
    unknown = policy.replace('policy = "stages"', 'policy = "warp_count"\ncandidates = [2]')
    [(field, problem)] = _problems(unknown)
    assert field == "transform.policy" and "unknown value 'warp_count'" in problem


def test_example_must_parse() -> None:
    [(field, problem)] = _problems(GOOD.replace('after = "x = 2"', 'after = "x = = 2"'))
    assert field == "example.after" and problem.startswith("does not parse as Python")


def test_mined_entries_need_lineage_evidence() -> None:
    mined = GOOD.replace('source = "curated"', 'source = "mined"')
    fields = [f for f, _ in _problems(mined)]
    assert fields == ["provenance.lineage.kernel", "provenance.lineage.step", "provenance.lineage.measured"]
    with_lineage = mined + '\n[provenance.lineage]\nkernel = "gemm_warp_specialized"\nstep = 3\nmeasured = "1.4x"\n'
    entry = parse_entry(tomllib.loads(with_lineage), "my-entry.toml")
    assert entry.provenance.lineage["kernel"] == "gemm_warp_specialized"


def test_every_problem_is_reported_at_once_with_its_file(tmp_path: pathlib.Path) -> None:
    bad = GOOD.replace('category = "pipelining"', 'category = "magic"').replace("PIPELINE_STALE_READ", "NOPE")
    _write(tmp_path, "my-entry", bad)
    _write(tmp_path, "broken", "this is = not toml [")
    with pytest.raises(SchemaError) as info:
        load_entries(tmp_path)
    text = str(info.value)
    assert "my-entry.toml: category: unknown value 'magic'" in text
    assert "my-entry.toml: risks[0].codes[0]: unknown verifier code 'NOPE'" in text
    assert "broken.toml: <file>: not valid TOML" in text
    assert info.value.code == "KB_SCHEMA"


def test_unknown_field_is_rejected() -> None:
    [(field, problem)] = _problems(GOOD.replace('title = "A test entry"', 'title = "A test entry"\ntitel = "typo"'))
    assert field == "titel" and problem.startswith("unknown field")


def test_docs_list_every_entry_and_feature_group() -> None:
    text = (ROOT / "docs" / "kb.md").read_text()
    for e in entries():
        assert f"`{e.id}`" in text, f"docs/kb.md does not list {e.id}"
    for group in {name.split(".")[0] for name in FEATURES}:
        assert f"`{group}.`" in text, f"docs/kb.md does not list the {group} features"


def test_entries_serialize_to_plain_data() -> None:
    import json

    for e in entries():
        data = json.loads(json.dumps(e.to_dict()))
        assert data["id"] == e.id and len(data["preconditions"]) == len(e.preconditions)
        assert all("category" in p for p in data["preconditions"]) and all("weight" in s for s in data["signals"])
    tile = next(e for e in entries() if e.id == "tile-shape").to_dict()
    assert tile["transform"]["policy"] == "tile_shape" and [128, 256, 64] in tile["transform"]["candidates"]
