"""Skills: every accepted step of a lineage, reversed, as a knowledge-base entry (`argus.kb.schema`, ``source =
"mined"``) — the forward step "add this mechanism", where it applies (locus), the conditions under which it was
valid (preconditions in the five categories, each with its reason, each checked to hold on the kernel the step
starts from), its measured effect with the context (shape, GPU or cost model), before/after DSL, and evidence
(fingerprints, gate records, the mechanism check).

Preconditions are probed: the forward step is applied where a condition fails (an older architecture, a wait
or fence or barrier left out, a tile the atom cannot tile, a size the copies cannot take, a stage count over
the shared-memory budget) and the result goes through the verifier or the gate. A failure that the kernel
before the step does not have under the same perturbation is the step's own: it becomes a "failure avoided"
(a `[[risks]]` row, and `provenance.lineage.failures_avoided` with the code and counterexample); one that the
kernel before the step shares is recorded as inherited, not as the step's.

Skills are TOML files (one per skill, named by id) in a directory: `skills_dir()` (``$ARGUS_SKILLS_DIR``, else
``$ARGUS_CACHE_DIR/skills``, else ``~/.cache/argus/skills``) or one given. `argus.kb.with_skills` loads them
beside the curated entries for retrieval.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import os
import pathlib
import textwrap
from dataclasses import dataclass
from typing import Any

from argus.lineage.variants import DerivedKernel, Variant, rewrite_body


@dataclass(frozen=True)
class Precondition:
    """A condition under which the forward step was valid: `feature` `op` `value` (`argus.kb.schema.Predicate`), in
    one of the five `category`s, with its `reason`. Checked to hold on the kernel the forward step starts from."""

    category: str
    feature: str
    op: str
    value: Any
    reason: str


@dataclass(frozen=True)
class Risk:
    """What can go wrong when the step is applied, the check codes that name it and the stages that catch it."""

    risk: str
    codes: tuple[str, ...] = ()
    caught_by: tuple[str, ...] = ()


@dataclass(frozen=True)
class Probe:
    """Apply the forward step where a precondition fails. `kind`: ``arch`` (compile the generated code for
    `arg`), ``registers`` (set the named warp roles' register budgets to `arg`; then verify), ``drop`` (remove IR
    statements of the classes named in `arg`, optionally only those whose text holds `match`; then verify),
    ``params`` (trace and gate with `arg` overriding parameters), ``sizes`` (gate at `arg`). `attribute`: also
    run it on the kernel before the step, to tell the step's failures from inherited ones."""

    category: str
    kind: str
    arg: Any
    what: str
    match: str = ""
    attribute: bool = True


@dataclass(frozen=True)
class Example:
    """A sketch of the change (DSL before and after), for a step whose two kernels share their source."""

    before: str
    after: str


@dataclass(frozen=True)
class PolicyTransform:
    """The executable transform of a step a declared policy makes: set `policy` to one of `candidates`."""

    policy: str
    candidates: tuple[Any, ...]


@dataclass(frozen=True)
class SkillSpec:
    """What a forward step is, as a skill: the step (``mechanism@level``, `argus.lineage.mechanisms.STEPS`), the
    mined skill's id stem (`slug`), title, kb category, locus, intent, what improves and which bound, the five
    preconditions, the risks, the probes, an example (for steps whose kernels share a source), the policy transform
    if any, and keywords. The specs are data: `skill_specs.toml` beside this module (`load_specs`)."""

    step: str
    slug: str
    title: str
    category: str
    locus: dict[str, Any]
    intent: str
    improves: tuple[str, ...]
    bound: str
    preconditions: tuple[Precondition, ...]
    risks: tuple[Risk, ...]
    probes: tuple[Probe, ...] = ()
    example: Example | None = None
    policy: PolicyTransform | None = None
    keywords: tuple[str, ...] = ()


#: The spec file: one ``[[skill]]`` per step.
SPECS_FILE = pathlib.Path(__file__).with_name("skill_specs.toml")

_PROBE_KINDS = ("arch", "registers", "drop", "params", "sizes")
_REQUIRED = ("step", "slug", "title", "category", "locus", "intent", "improves", "bound", "preconditions", "risks")


def _spec(data: dict[str, Any], where: str) -> SkillSpec:
    """One ``[[skill]]`` table as a `SkillSpec`, checked: known fields only, the step in the vocabulary, the kb
    schema's categories, operators, bounds and stages, one precondition per category, known probe kinds and
    policies. A `ValueError` names the spec and the field."""
    from argus.kb.schema import BOUNDS, CATEGORIES, CAUGHT_BY, ID_PATTERN, OPERATORS, POLICIES, PRECONDITION_CATEGORIES
    from argus.lineage.mechanisms import STEPS

    def need(ok: bool, field_name: str, what: str) -> None:
        if not ok:
            raise ValueError(f"{where} ({data.get('step', '?')}): {field_name}: {what}")

    fields = {f.name for f in dataclasses.fields(SkillSpec)}
    need(not set(data) - fields, "fields", f"unknown {sorted(set(data) - fields)}")
    missing = [f for f in _REQUIRED if f not in data]
    need(not missing, "fields", f"{', '.join(missing)} missing")
    need(data["step"] in STEPS, "step", f"{data['step']!r} is not in the vocabulary (argus.lineage.mechanisms)")
    need(bool(ID_PATTERN.match(data["slug"])), "slug", f"{data['slug']!r} is not an entry id stem")
    need(data["category"] in CATEGORIES, "category", f"{data['category']!r} not in {CATEGORIES}")
    need(data["bound"] in BOUNDS, "bound", f"{data['bound']!r} not in {BOUNDS}")
    preconditions = tuple(Precondition(**p) for p in data.get("preconditions", ()))
    categories = sorted(p.category for p in preconditions)
    need(categories == sorted(PRECONDITION_CATEGORIES), "preconditions", f"one per category, not {categories}")
    for p in preconditions:
        need(p.op in OPERATORS, "preconditions", f"unknown operator {p.op!r}")
    risks = tuple(Risk(r["risk"], tuple(r.get("codes", ())), tuple(r.get("caught_by", ()))) for r in data["risks"])
    from argus.verify.catalog import CATALOG

    for r in risks:
        need(bool(r.caught_by) and set(r.caught_by) <= set(CAUGHT_BY), "risks", f"{r.risk!r} caught by {r.caught_by}")
        unknown = [c for c in r.codes if c not in CATALOG]  # a mined skill's entry names verifier codes only
        need(not unknown, "risks", f"{r.risk!r}: {unknown} are not verifier codes (argus.verify.catalog)")
    probes = []
    for p in data.get("probes", ()):
        need(p.get("kind") in _PROBE_KINDS and p.get("category") in PRECONDITION_CATEGORIES, "probes", repr(p))
        arg = tuple(p["arg"]) if p["kind"] == "drop" else p["arg"]  # IR statement classes
        probes.append(Probe(**{**p, "arg": arg}))
    policy = data.get("policy")
    if policy is not None:
        need(policy.get("policy") in POLICIES, "policy", f"{policy.get('policy')!r} not in {POLICIES}")
    example = data.get("example")
    return SkillSpec(
        step=data["step"],
        slug=data["slug"],
        title=data["title"],
        category=data["category"],
        locus=dict(data["locus"]),
        intent=data["intent"],
        improves=tuple(data["improves"]),
        bound=data["bound"],
        preconditions=preconditions,
        risks=risks,
        probes=tuple(probes),
        example=Example(**example) if example is not None else None,
        policy=PolicyTransform(policy["policy"], tuple(policy["candidates"])) if policy is not None else None,
        keywords=tuple(data.get("keywords", ())),
    )


def load_specs(path: str | pathlib.Path = SPECS_FILE) -> dict[str, SkillSpec]:
    """The skill specs of `path` by step name (``"pipeline@1"``), each checked (`ValueError` naming the spec and the
    field), at most one per step."""
    import tomllib

    path = pathlib.Path(path)
    out: dict[str, SkillSpec] = {}
    for data in tomllib.loads(path.read_text(encoding="utf-8")).get("skill", []):
        spec = _spec(data, path.name)
        if spec.step in out:
            raise ValueError(f"{path.name}: two specs for {spec.step}")
        out[spec.step] = spec
    return out


#: What each forward step is (`SkillSpec`), by step name: a step without a spec cannot be mined.
SPECS: dict[str, SkillSpec] = load_specs()


# --- probes ------------------------------------------------------------------------------------------------


def _ir_classes(names: tuple[str, ...]) -> tuple[type, ...]:
    import argus.ir.nodes as nodes

    return tuple(getattr(nodes, n) for n in names)


def run_probe(variant: Variant, probe: Probe, sizes: dict[str, dict[str, int]] | None = None) -> dict[str, Any]:
    """Apply `probe` to `variant`: {outcome: failed | passed | not_applicable, stage, code, detail}."""
    from argus.verify import verify

    if probe.kind == "arch":
        from argus.backend.cuda.codegen import generate
        from argus.backend.cuda.toolchain import compile_cuda

        try:
            gen = generate(variant.trace())
            compile_cuda(gen.source, gen.program_name, arch=probe.arg)
        except ImportError as e:
            return {"outcome": "not_applicable", "detail": f"no toolchain: {e}"}
        except Exception as e:  # noqa: BLE001 - the compiler's refusal is the probe's result
            return _failed("gate.compile", getattr(e, "code", "COMPILE_FAILED"), str(e))
        return {"outcome": "passed", "stage": "gate.compile", "detail": f"compiles for {probe.arg}"}
    if probe.kind == "drop":
        classes = _ir_classes(tuple(probe.arg))
        dropped: list[int] = []

        def rewrite(kernel: Any) -> Any:
            def keep(s: Any) -> Any:
                if isinstance(s, classes) and (not probe.match or probe.match in repr(s)):
                    dropped.append(1)
                    return None
                return s

            return rewrite_body(kernel, keep)

        derived = DerivedKernel(variant.kernel, rewrite, "probe_drop_" + "_".join(probe.arg))
        try:
            derived.trace(**variant.params)
        except Exception as e:  # noqa: BLE001
            return _failed("gate.compile", getattr(e, "code", "COMPILE_TRACE"), str(e))
        if not dropped:
            return {"outcome": "not_applicable", "detail": f"no {'/'.join(probe.arg)} statement to leave out"}
        result = verify(derived, **variant.params)
        verdict = str(getattr(result.verdict, "value", result.verdict))
        if verdict == "violated":
            first = result.errors[0]
            return _failed("verify", first.code, first.render_text())
        return {"outcome": "passed", "stage": "verify", "detail": f"verifier: {verdict}"}
    if probe.kind == "registers":
        import dataclasses

        from argus.ir.nodes import Role

        budgets = dict(probe.arg)

        def resplit(kernel: Any) -> Any:
            return rewrite_body(
                kernel,
                lambda s: (
                    dataclasses.replace(s, registers=budgets[s.name])
                    if isinstance(s, Role) and s.name in budgets
                    else s
                ),
            )

        derived = DerivedKernel(variant.kernel, resplit, "probe_registers")
        if not any(isinstance(s, Role) for s in _walk(derived.trace(**variant.params).body)):
            return {"outcome": "not_applicable", "detail": "no warp roles"}
        result = verify(derived, **variant.params)
        verdict = str(getattr(result.verdict, "value", result.verdict))
        if verdict == "violated":
            first = result.errors[0]
            return _failed("verify", first.code, first.render_text())
        return {"outcome": "passed", "stage": "verify", "detail": f"verifier: {verdict}"}
    if probe.kind in ("params", "sizes"):
        from argus.eval import KernelCandidate, gate_kernel
        from argus.lineage.walk import default_gate_options
        from argus.tasks import get_task

        params = {**variant.params, **(probe.arg if probe.kind == "params" else {})}
        if probe.kind == "params" and not set(probe.arg) <= set(variant.kernel.defaults):
            return {"outcome": "not_applicable", "detail": f"the kernel has no parameter {sorted(probe.arg)}"}
        task = get_task(variant.task)
        gate_sizes = dict((sizes or {}).get(variant.task) or task.small_sizes)
        if probe.kind == "sizes":
            gate_sizes.update(probe.arg)
        result = gate_kernel(
            task,
            KernelCandidate(variant.name, variant.kernel, params),
            sizes=gate_sizes,
            options=default_gate_options(),
        )
        failed = next(
            (s for s in result.stages if str(getattr(s.status, "value", s.status)) in ("failed", "error")), None
        )
        if failed is None:
            return {"outcome": "passed", "stage": "gate", "detail": result.summary()}
        report = (failed.details or {}).get("report") or {}
        errors = (
            [f for f in report.get("findings", []) if f.get("severity") == "error"] if isinstance(report, dict) else []
        )
        code = errors[0].get("code") if errors else failed.code
        return _failed(f"gate.{failed.stage}", code, failed.reason)
    raise ValueError(f"unknown probe kind {probe.kind!r}")


def _walk(body: Any) -> Any:
    from argus.ir.nodes import walk

    return walk(body)


def _failed(stage: str, code: Any, text: str) -> dict[str, Any]:
    lines = [ln for ln in str(text).splitlines() if ln.strip()]
    return {"outcome": "failed", "stage": stage, "code": str(code), "detail": " | ".join(lines[:6])[:600]}


# --- skills ------------------------------------------------------------------------------------------------


def _slug(text: str) -> str:
    return "-".join(p for p in "".join(c if c.isalnum() else "-" for c in text.lower()).split("-") if p)


def _source(variant: Variant) -> str | None:
    kernel = variant.kernel
    if isinstance(kernel, DerivedKernel):
        return None  # a rewritten IR has no source of its own
    try:
        return textwrap.dedent(inspect.getsource(kernel.fn))
    except (OSError, TypeError, AttributeError):
        return None


def skill_from_step(
    lineage: Any, index: int, *, probe: bool = True, sizes: dict[str, dict[str, int]] | None = None
) -> dict[str, Any]:
    """The kb entry (as TOML-ready data) of step `index` (1-based) of `lineage`, reversed. Raises `LineageError`
    ``LINEAGE_SKILL`` when a declared precondition does not hold on the kernel the forward step starts from."""
    from argus.kb.schema import Predicate
    from argus.lineage.errors import LineageError
    from argus.lineage.mechanisms import step_name
    from argus.lineage.operators import features_of

    step = lineage.steps[index - 1]
    expert_side: Variant = lineage.variants[index - 1]  # the step's `before`: the forward step's result
    simple_side: Variant = lineage.variants[index]  # the step's `after`: where the forward step starts
    mech, level = step.operator["mechanism"], step.operator["level"]
    spec = SPECS[step_name(mech, level)]
    feats = features_of(simple_side)
    preconditions = []
    for p in spec.preconditions:
        pred = Predicate(p.feature, p.op, p.value, p.reason, p.category)
        if pred.evaluate(feats) is not True:
            raise LineageError(
                "LINEAGE_SKILL",
                f"precondition {p.feature} {p.op} {p.value!r} of skill {spec.slug} does not hold on "
                f"{simple_side.name} (it has {feats.get(p.feature)!r})",
            )
        preconditions.append(
            {"category": p.category, "feature": p.feature, "op": p.op, "value": p.value, "reason": p.reason}
        )
    failures, inherited, probes_run = [], [], []
    for p in spec.probes if probe else ():
        after = run_probe(expert_side, p, sizes)
        before = run_probe(simple_side, p, sizes) if p.attribute else {"outcome": "not_run"}
        record = {"category": p.category, "probe": p.what, "kind": p.kind, "forward": after, "without_step": before}
        probes_run.append(record)
        if after["outcome"] != "failed":
            continue
        row = {
            "category": p.category,
            "probe": p.what,
            "stage": after["stage"],
            "code": after["code"],
            "counterexample": after["detail"],
        }
        (failures if before["outcome"] != "failed" else inherited).append(row)
    risks = [
        {"risk": r.risk, **({"codes": list(r.codes)} if r.codes else {}), "caught_by": list(r.caught_by)}
        for r in spec.risks
    ]
    from argus.verify.catalog import CATALOG

    for f in failures:
        codes = [f["code"]] if f["code"] in CATALOG else []
        stage = (
            f["stage"] if f["stage"] in ("verify", "gate.compile", "gate.correct", "gate.profile") else "gate.compile"
        )
        risks.append(
            {
                "risk": f"failure avoided ({f['category']}): {f['probe']} -> {f['stage']} {f['code']}",
                **({"codes": codes} if codes else {}),
                "caught_by": [stage],
            }
        )
    before_warn = step.gate.get("verifier_warnings", {})  # the simpler kernel's (the forward step's start)
    after_warn = (lineage.steps[index - 2].gate if index > 1 else lineage.expert_gate).get("verifier_warnings", {})
    signals = []
    removed_warnings = {c: n for c, n in before_warn.items() if n > after_warn.get(c, 0)}
    if "PERF_BANK_CONFLICT" in removed_warnings:
        signals.append(
            {
                "feature": "verify.bank_conflict_degree",
                "op": "gt",
                "value": 1.0,
                "weight": 3.0,
                "scale": True,
                "reason": f"the verifier's bank-conflict warnings ({removed_warnings['PERF_BANK_CONFLICT']} on "
                f"{simple_side.name}) are what this step removed",
            }
        )
    if "PERF_UNCOALESCED" in removed_warnings:
        signals.append(
            {
                "feature": "verify.uncoalesced_degree",
                "op": "gt",
                "value": 1.0,
                "weight": 2.0,
                "scale": True,
                "reason": "the verifier's uncoalesced-access warnings are what this step removed",
            }
        )
    eff = step.effect
    speedup = (1.0 / (eff["after_ms"] / eff["before_ms"])) if eff.get("slowdown") else None
    context = (
        f"{eff.get('source')} on {eff.get('gpu')} at "
        + ",".join(f"{k}={v}" for k, v in (eff.get("sizes") or {}).items())
        if eff.get("source") not in (None, "none")
        else "not profiled"
    )
    if speedup is not None:
        magnitude = f"{eff['slowdown']:.2f}x faster ({eff['after_ms']:.4g} -> {eff['before_ms']:.4g} ms; {context}" + (
            "; an estimate, not a GPU measurement)" if eff.get("estimate") else ")"
        )
    else:
        magnitude = f"not measured ({eff.get('why', 'no profile')})"
    before_src, after_src = _source(simple_side), _source(expert_side)
    if spec.example is not None and (before_src is None or after_src is None or before_src == after_src):
        example = {
            "before": spec.example.before,
            "after": spec.example.after,
            "note": "sketch of the change: both kernels of the step share their source",
        }
    elif before_src and after_src and before_src != after_src:
        example = {
            "before": before_src,
            "after": after_src,
            "note": f"the two lineage kernels of the step: {simple_side.name} -> {expert_side.name}",
        }
    else:
        example = {"before": "pass  # not available\n", "after": "pass  # not available (rewritten IR)\n"}
    transform = (
        {
            "kind": "policy",
            "policy": spec.policy.policy,
            "candidates": list(spec.policy.candidates),
            "reason": f"the step set the declared policy {spec.policy.policy}; the forward step sets it back",
        }
        if spec.policy is not None and step.operator["kind"] == "policy"
        else {
            "kind": "none",
            "reason": f"a {step.operator['kind']} step ({step.operator['id']} reversed): materialized by the lineage "
            f"edge {simple_side.name} -> {expert_side.name}, not by an executable rewrite",
        }
    )
    skill_id = f"mined-{spec.slug}-{_slug(expert_side.library or expert_side.name)}"
    return {
        "schema": 1,
        "id": skill_id,
        "title": f"{spec.title} (mined from {lineage.expert})",
        "intent": spec.intent
        + f" Mined from step {index} of the {lineage.expert} lineage ({step.operator['id']}, reversed).",
        "category": spec.category,
        "keywords": list(spec.keywords) + ["mined", "klineage"],
        "locus": dict(spec.locus),
        "preconditions": preconditions,
        **({"signals": signals} if signals else {}),
        "effect": {
            "improves": list(spec.improves),
            "magnitude": magnitude,
            "when": f"{simple_side.name} -> {expert_side.name} on task {lineage.task}; gate at "
            + ",".join(f"{k}={v}" for k, v in (step.gate.get("sizes") or {}).items()),
            "bound": spec.bound,
        },
        "risks": risks,
        "transform": transform,
        "example": example,
        "provenance": {
            "source": "mined",
            "author": "argus.lineage",
            "lineage": {
                "kernel": lineage.expert,
                "task": lineage.task,
                "step": index,
                "operator": step.operator["id"],
                "mechanism": f"{mech}@{level}",
                "measured": magnitude,
                "effect": {k: v for k, v in eff.items() if v is not None},
                "kernel_before": simple_side.name,
                "kernel_after": expert_side.name,
                "fingerprint_before": step.after["fingerprint"],
                "fingerprint_after": step.before["fingerprint"],
                "mechanism_check": step.check["reason"],
                "verifier_warnings_before": before_warn,
                "verifier_warnings_after": after_warn,
                "gate_before": step.gate["summary"],
                "gate_after": (lineage.steps[index - 2].gate if index > 1 else lineage.expert_gate)["summary"],
                "failures_avoided": failures,
                "inherited_failures": inherited,
                "probes": [
                    {
                        "category": r["category"],
                        "probe": r["probe"],
                        "forward": r["forward"]["outcome"],
                        "without_step": r["without_step"]["outcome"],
                    }
                    for r in probes_run
                ],
            },
        },
    }


def mine_skills(
    lineage: Any, *, probe: bool = True, sizes: dict[str, dict[str, int]] | None = None
) -> list[dict[str, Any]]:
    """One skill per accepted step of `lineage` (which must carry its live variants: a `Lineage` from `walk`)."""
    return [skill_from_step(lineage, i, probe=probe, sizes=sizes) for i in range(1, len(lineage.steps) + 1)]


# --- files -------------------------------------------------------------------------------------------------


def skills_dir() -> pathlib.Path:
    """``$ARGUS_SKILLS_DIR``, else ``$ARGUS_CACHE_DIR/skills``, else ``~/.cache/argus/skills``."""
    if os.environ.get("ARGUS_SKILLS_DIR"):
        return pathlib.Path(os.environ["ARGUS_SKILLS_DIR"])
    base = os.environ.get("ARGUS_CACHE_DIR")
    return (pathlib.Path(base) if base else pathlib.Path.home() / ".cache" / "argus") / "skills"


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return repr(v) if not isinstance(v, float) or v == v else '"nan"'
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=True)
    if isinstance(v, list | tuple):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_toml_value(x)}" for k, x in v.items() if x is not None) + " }"
    return json.dumps(str(v))


def _key(k: str) -> str:
    return k if k.replace("_", "").replace("-", "").isalnum() else json.dumps(k)


def to_toml(data: dict[str, Any]) -> str:
    """`data` (scalars, lists, tables, arrays of tables, as a skill has) as TOML text."""
    lines: list[str] = []

    def table(prefix: str, t: dict[str, Any]) -> None:
        scalars = {k: v for k, v in t.items() if not isinstance(v, dict) and not _is_table_array(v)}
        for k, v in scalars.items():
            if v is not None:
                lines.append(f"{_key(k)} = {_toml_value(v)}")
        for k, v in t.items():
            if isinstance(v, dict):
                lines.append("")
                lines.append(f"[{prefix}{_key(k)}]")
                table(f"{prefix}{_key(k)}.", v)
        for k, v in t.items():
            if _is_table_array(v):
                for item in v:
                    lines.append("")
                    lines.append(f"[[{prefix}{_key(k)}]]")
                    table(f"{prefix}{_key(k)}.", item)

    table("", data)
    return "\n".join(lines) + "\n"


def _is_table_array(v: Any) -> bool:
    return isinstance(v, list) and bool(v) and all(isinstance(x, dict) for x in v)


def write_skills(skills: list[dict[str, Any]], directory: str | pathlib.Path | None = None) -> list[pathlib.Path]:
    """Write each skill as ``<id>.toml`` in `directory` (default `skills_dir()`), after checking it against the kb
    schema (`argus.kb.parse_entry`: a `SchemaError` names the field). Returns the paths."""
    import tomllib

    from argus.kb.schema import parse_entry

    directory = pathlib.Path(directory) if directory is not None else skills_dir()
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for skill in skills:
        text = to_toml(skill)
        parse_entry(tomllib.loads(text), f"{skill['id']}.toml", expected_id=skill["id"])
        path = directory / f"{skill['id']}.toml"
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths


def load_skills(directory: str | pathlib.Path | None = None) -> tuple[Any, ...]:
    """The mined skills of `directory` (default `skills_dir()`) as kb `Entry` objects (schema-checked); empty when
    the directory does not exist."""
    from argus.kb.store import load_entries

    directory = pathlib.Path(directory) if directory is not None else skills_dir()
    if not directory.is_dir():
        return ()
    return load_entries(directory)


# --- admission on a held-out kernel ------------------------------------------------------------------------

#: A speedup counts as one (the same sign as the mined one) only above 1 + this: the cost model's 1.00x is no gain.
SPEEDUP_TOLERANCE = 0.01


def _lineage_record(skill: Any) -> dict[str, Any]:
    """A skill's ``provenance.lineage`` (an `Entry` or the TOML-ready dict `skill_from_step` makes)."""
    if isinstance(skill, dict):
        return dict(skill.get("provenance", {}).get("lineage", {}))
    return dict(skill.provenance.lineage)


def _library_of(name: str) -> str:
    """``gemm_hopper[BN=256,STAGES=4]{no_register_split}`` -> ``gemm_hopper``."""
    return name.split("[", 1)[0].split("{", 1)[0]


def _kernel_names(names: list[str]) -> set[str]:
    """The `@argus.kernel` function names behind library kernels (``gemm_hopper`` is ``gemm_warp_specialized``)."""
    from argus.kernels.registry import get_kernel

    out = set()
    for name in names:
        try:
            out.add(getattr(get_kernel(name).kernel, "name", name))
        except Exception:  # noqa: BLE001 - a bridge or a file kernel: its own name
            out.add(name)
    return out


def held_out_moves(skill: Any) -> list[dict[str, Any]]:
    """Every lineage move (`argus.kernels.registry.lineages()`: a rung and the next one) whose rung adds the skill's
    mechanism (`argus.lineage.mechanisms.RUNGS`), as {family, kernel (where the move starts), kernel_after, held_out,
    steps (all that the rung adds)}; ``held_out`` is False for the family the skill was mined from (its kernels are
    among the family's rungs). Held-out moves first."""
    from argus.kernels.registry import lineage, lineages
    from argus.lineage.mechanisms import RUNGS

    record = _lineage_record(skill)
    step = record.get("mechanism")
    own = _kernel_names([_library_of(str(record.get(k, ""))) for k in ("kernel", "kernel_before", "kernel_after")])
    moves = []
    for family in lineages():
        ladder = lineage(family)
        held_out = not (own & _kernel_names([r.kernel for r in ladder]))
        for start, rung in zip(ladder, ladder[1:], strict=False):
            steps = RUNGS[rung.mechanism].steps if rung.mechanism in RUNGS else ()
            if step in steps:
                moves.append({"family": family, "kernel": start.kernel, "kernel_after": rung.kernel,
                              "held_out": held_out, "steps": steps})  # fmt: skip
    return sorted(moves, key=lambda m: not m["held_out"])


def admit(
    skill: Any,
    held_out_kernel: str,
    *,
    sizes: dict[str, dict[str, int]] | None = None,
    gate_options: Any = None,
) -> dict[str, Any]:
    """Replay the skill's forward move on `held_out_kernel` (a library rung whose next rung adds the skill's
    mechanism, ideally of another lineage family: `held_out_moves`) and judge it: both kernels are gated (compile,
    verify, correct at `sizes` per task, default the tasks' CPU sizes; profile: GPU timing or the cost model's
    estimate); the mechanism levels before and after are read off their features. The skill is **admitted** when
    both pass the gate, the next rung adds exactly the skill's mechanism level, and the move is faster there as it was
    where it was mined (both speedups above 1 + `SPEEDUP_TOLERANCE`). Returns the admission record (the
    ``provenance.lineage.admission`` table; `write_admission` stores it in the skill). Raises `LineageError`
    ``LINEAGE_ADMIT`` when no move of `held_out_kernel` adds the skill's mechanism."""
    from argus.eval import KernelCandidate, gate_kernel
    from argus.kb.retrieval import match_entry, skill_gain
    from argus.lineage.errors import LineageError
    from argus.lineage.mechanisms import state
    from argus.lineage.operators import features_of, library_variant
    from argus.lineage.walk import default_gate_options, gate_record
    from argus.tasks import get_task

    if isinstance(skill, dict):  # as `mine_skills` makes it: the entry it is once written
        import tomllib

        from argus.kb.schema import parse_entry

        skill = parse_entry(tomllib.loads(to_toml(skill)), f"{skill['id']}.toml")
    record = _lineage_record(skill)
    step = str(record.get("mechanism", ""))
    moves = held_out_moves(skill)
    move = next((m for m in moves if m["kernel"] == held_out_kernel), None)
    if move is None:
        starts = ", ".join(f"{m['kernel']} ({m['family']})" for m in moves) or "none in the registry's lineages"
        raise LineageError(
            "LINEAGE_ADMIT",
            f"no lineage move from {held_out_kernel} adds {step} (the step of skill {_skill_id(skill)}); moves that "
            f"do start at: {starts}",
            "replay it from one of those rungs (argus.lineage.skills.held_out_moves lists them)",
        )
    before, after = library_variant(move["kernel"]), library_variant(move["kernel_after"])
    mechanism, _, level_text = step.partition("@")
    level = int(level_text or 0)
    levels = (state(features_of(before)).get(mechanism), state(features_of(after)).get(mechanism))
    adds = levels == (level - 1, level)
    check = f"{mechanism} {levels[0]} -> {levels[1]}: " + (
        "the move adds the skill's mechanism" if adds else f"not the skill's step ({level - 1} -> {level})"
    )
    options = gate_options if gate_options is not None else default_gate_options()
    gates = {}
    for side, variant in (("before", before), ("after", after)):
        result = gate_kernel(
            get_task(variant.task),
            KernelCandidate(variant.name, variant.kernel, dict(variant.params)),
            sizes=(sizes or {}).get(variant.task),
            options=options,
        )
        gates[side] = gate_record(result)
    accepted = all(g["verdict"] == "accepted" for g in gates.values())
    b, a = gates["before"]["profile"], gates["after"]["profile"]
    speedup = b["ms"] / a["ms"] if isinstance(b.get("ms"), int | float) and a.get("ms") else None
    fit = match_entry(skill, features_of(before))
    gain = skill_gain(skill)
    mined = gain[0] if gain is not None else None
    faster = 1.0 + SPEEDUP_TOLERANCE
    if not accepted:
        side = next(s for s, g in gates.items() if g["verdict"] != "accepted")
        reason = f"{(before if side == 'before' else after).name} failed the gate: {gates[side]['summary']}"
    elif not adds:
        reason = f"the move does not add {step}: {check}"
    elif not isinstance(mined, int | float) or mined <= faster:
        reason = f"the mined effect is no speedup ({_ratio(mined)}): nothing to reproduce"
    elif speedup is None or speedup <= faster:
        reason = f"not faster here ({_ratio(speedup)}; mined {_ratio(mined)})"
    else:
        reason = f"passed the gate and faster here too ({_ratio(speedup)}; mined {_ratio(mined)})"
    admitted = accepted and adds and reason.startswith("passed")
    others = [s for s in move["steps"] if s != step]
    if others:  # a rung of two steps (cp.async + pipelining, TMA + wgmma): the replay times them together
        reason += f"; the rung also adds {', '.join(others)}, timed together with it"
    return {
        "admitted": admitted,
        "kernel": before.name,
        "kernel_after": after.name,
        "family": move["family"],
        "held_out": move["held_out"],
        "rung_steps": list(move["steps"]),
        "reason": reason,
        "mechanism_check": check,
        "applies": fit.applicable,
        "failed_preconditions": [p.text() for p in fit.failed],
        "gate_before": gates["before"]["summary"],
        "gate_after": gates["after"]["summary"],
        "effect": {
            "speedup": speedup,
            "mined_speedup": mined,
            "before_ms": b.get("ms"),
            "after_ms": a.get("ms"),
            "source": a.get("source") or b.get("source"),
            "estimate": bool(a.get("estimate") or b.get("estimate")),
            "gpu": a.get("gpu") or b.get("gpu"),
            "sizes": a.get("sizes") or b.get("sizes"),
        },
    }


def _ratio(value: Any) -> str:
    return f"{value:.2f}x" if isinstance(value, int | float) else "not measured"


def _skill_id(skill: Any) -> str:
    return str(skill["id"] if isinstance(skill, dict) else skill.id)


def write_admission(skill_id: str, admission: dict[str, Any], directory: str | pathlib.Path | None = None) -> Any:
    """Store `admission` (from `admit`) as the skill's ``provenance.lineage.admission`` in its TOML file in
    `directory` (default `skills_dir()`), schema-checked (`argus.kb.parse_entry`); returns the updated `Entry`.
    `LineageError` ``LINEAGE_ADMIT`` when the directory has no such skill."""
    import tomllib

    from argus.kb.schema import parse_entry
    from argus.lineage.errors import LineageError

    directory = pathlib.Path(directory) if directory is not None else skills_dir()
    path = directory / f"{skill_id}.toml"
    if not path.is_file():
        raise LineageError("LINEAGE_ADMIT", f"no skill {skill_id!r} in {directory}", "`argus skills list` shows them")
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    data["provenance"]["lineage"]["admission"] = admission
    text = to_toml(data)
    entry = parse_entry(tomllib.loads(text), path.name, expected_id=skill_id)
    path.write_text(text, encoding="utf-8")
    return entry
