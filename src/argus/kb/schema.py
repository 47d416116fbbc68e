"""The schema of knowledge-base entries (curated techniques and, later, mined skills), and the
validator that turns a parsed data file into an `Entry` or says exactly what is wrong.

An entry is one TOML file (``entries/<id>.toml``) with these parts (docs/kb.md has the long form):

* ``id`` (the file's stem), ``title``, ``intent``, ``category`` (one of `CATEGORIES`), ``keywords``;
* ``[locus]``: where in a kernel it applies, as a pattern over IR statements (`Locus`);
* ``[[preconditions]]``: hard, machine-checkable predicates over kernel features, each in one of
  five categories (dtypes, layout, storage, pipeline, hardware) with its human reason;
* ``[[signals]]``: soft predicates (typically over profile and verifier facts) that raise the
  entry's rank when they hold, each with a weight and a reason;
* ``[effect]``: what gets better, the rough magnitude, when, and which bound it relieves;
* ``[[risks]]``: what can go wrong, with the verifier codes (from `argus.verify.catalog`) and the
  gate stages that catch it;
* ``[transform]``: ``kind = "policy"`` (a named policy and candidate values, applied by
  `argus.kb.transforms`) or ``kind = "none"`` with the reason;
* ``[example]``: DSL before and after (both must parse as Python);
* ``[provenance]``: ``source = "curated"`` with references by name, or ``"mined"`` with the
  lineage evidence (kernel, step, measured effect).
"""

from __future__ import annotations

import ast
import math
import re
import textwrap
from dataclasses import dataclass, field
from typing import Any

from argus.atoms.swizzle import SWIZZLE_WIDTHS
from argus.kb.errors import SchemaError, SchemaProblem
from argus.kb.features import FEATURES

SCHEMA_VERSION = 1

CATEGORIES = (
    "tiling",
    "global-memory",
    "shared-memory",
    "async-copy",
    "pipelining",
    "tensor-core",
    "warp-specialization",
    "scheduling",
    "epilogue",
    "attention",
    "math",
    "reduction",
    "occupancy",
    "loop",
    "moe",
)

#: The five precondition categories of the design (§8).
PRECONDITION_CATEGORIES = ("dtypes", "layout", "storage", "pipeline", "hardware")

#: Operators of predicates, by the feature types they apply to.
OPERATORS: dict[str, tuple[str, ...]] = {
    "eq": ("bool", "int", "float", "str", "set", "tuple"),
    "ne": ("bool", "int", "float", "str", "set", "tuple"),
    "lt": ("int", "float"),
    "le": ("int", "float"),
    "gt": ("int", "float"),
    "ge": ("int", "float"),
    "in": ("int", "float", "str", "tuple"),
    "not_in": ("int", "float", "str", "tuple"),
    "has": ("set",),
    "lacks": ("set",),
    "subset": ("set",),
    "intersects": ("set",),
    "disjoint": ("set",),
}

LOCUS_OPS = ("kernel", "loop", "gemm", "copy", "reduce", "map", "alloc")
SPACES = ("global", "shared", "fragment", "mbarrier")
LOOP_KINDS = ("serial", "unrolled", "pipelined")
BOUNDS = ("memory", "compute", "latency", "any")
CAUGHT_BY = ("verify", "gate.compile", "gate.correct", "gate.profile")
POLICIES = ("tile_shape", "stages", "swizzle", "warp_roles", "register_split", "tile_order", "persistent", "unroll")
ID_PATTERN = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


# --- the dataclasses --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Predicate:
    """``feature op value``, e.g. ``mma.kind eq "mma.sync"``, with why it matters. Preconditions
    carry a `category`; signals carry a `weight` (and `scale`: multiply the weight by
    ``log2(value) + 1`` for a numeric feature, so an 8-way conflict counts more than a 2-way one)."""

    feature: str
    op: str
    value: Any
    reason: str
    category: str | None = None
    weight: float = 0.0
    scale: bool = False

    def evaluate(self, features: Any) -> bool | None:
        """True or False, or None when the feature is unknown (absent from `features`)."""
        if self.feature not in features:
            return None
        got = features[self.feature]
        want = self.value
        op = self.op
        if isinstance(got, frozenset):
            want_set = frozenset(want) if isinstance(want, list | tuple | frozenset | set) else frozenset([want])
            return {
                "eq": lambda: got == want_set,
                "ne": lambda: got != want_set,
                "has": lambda: want in got,
                "lacks": lambda: want not in got,
                "subset": lambda: got <= want_set,
                "intersects": lambda: bool(got & want_set),
                "disjoint": lambda: not (got & want_set),
            }[op]()
        if isinstance(got, tuple):
            if op in ("in", "not_in"):
                inside = any(got == tuple(w) for w in want)
                return inside if op == "in" else not inside
            return (got == tuple(want)) if op == "eq" else (got != tuple(want))
        return {
            "eq": lambda: got == want,
            "ne": lambda: got != want,
            "lt": lambda: got < want,
            "le": lambda: got <= want,
            "gt": lambda: got > want,
            "ge": lambda: got >= want,
            "in": lambda: got in want,
            "not_in": lambda: got not in want,
        }[op]()

    def boost(self, features: Any) -> float:
        """A signal's contribution when it holds (0 otherwise)."""
        if not self.evaluate(features):
            return 0.0
        got = features[self.feature]
        if self.scale and isinstance(got, int | float) and not isinstance(got, bool) and got >= 1:
            return self.weight * (math.log2(got) + 1.0)
        return self.weight

    def text(self) -> str:
        return f"{self.feature} {self.op} {self.value!r}"


@dataclass(frozen=True)
class Locus:
    """Where an entry applies: statements of kind `op` (``kernel`` matches the kernel itself),
    narrowed by the copy's source/destination spaces, the atom (a prefix, e.g. ``mma`` or
    ``wgmma``), the loop kind, or whether the statement must sit inside a loop."""

    op: str
    description: str
    src: str | None = None
    dst: str | None = None
    atom: str | None = None
    loop: str | None = None
    in_loop: bool | None = None
    space: str | None = None


@dataclass(frozen=True)
class Effect:
    improves: tuple[str, ...]
    magnitude: str
    when: str
    bound: str = "any"


@dataclass(frozen=True)
class Risk:
    risk: str
    codes: tuple[str, ...] = ()
    caught_by: tuple[str, ...] = ()
    invariant: str = ""


@dataclass(frozen=True)
class Transform:
    """``kind == "policy"``: set `policy` to one of `candidates`; ``kind == "none"``: no executable
    transform yet (`reason` says why: usually a structural rewrite the coder cannot do yet)."""

    kind: str
    reason: str = ""
    policy: str | None = None
    candidates: tuple[Any, ...] = ()


@dataclass(frozen=True)
class Example:
    before: str
    after: str
    note: str = ""


@dataclass(frozen=True)
class Provenance:
    source: str  # "curated" or "mined"
    references: tuple[str, ...] = ()
    author: str = ""
    lineage: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Entry:
    id: str
    title: str
    intent: str
    category: str
    locus: Locus
    preconditions: tuple[Predicate, ...]
    effect: Effect
    risks: tuple[Risk, ...]
    transform: Transform
    example: Example
    provenance: Provenance
    signals: tuple[Predicate, ...] = ()
    keywords: tuple[str, ...] = ()
    related: tuple[str, ...] = ()
    file: str = ""

    @property
    def executable(self) -> bool:
        return self.transform.kind == "policy"

    def to_dict(self) -> dict[str, Any]:
        """The entry as plain data (JSON-ready): what a planner's prompt or a run store records."""

        def pred(p: Predicate) -> dict[str, Any]:
            out = {"feature": p.feature, "op": p.op, "value": list(p.value) if isinstance(p.value, tuple) else p.value}
            out["reason"] = p.reason
            if p.category is not None:
                out["category"] = p.category
            else:
                out["weight"] = p.weight
            return out

        t = self.transform
        return {
            "id": self.id,
            "title": self.title,
            "category": self.category,
            "intent": " ".join(self.intent.split()),
            "locus": {k: v for k, v in vars(self.locus).items() if v is not None},
            "preconditions": [pred(p) for p in self.preconditions],
            "signals": [pred(p) for p in self.signals],
            "effect": {
                "improves": list(self.effect.improves),
                "magnitude": self.effect.magnitude,
                "when": self.effect.when,
                "bound": self.effect.bound,
            },
            "risks": [
                {"risk": r.risk, "codes": list(r.codes), "caught_by": list(r.caught_by), "invariant": r.invariant}
                for r in self.risks
            ],
            "transform": {
                "kind": t.kind,
                "reason": t.reason,
                "policy": t.policy,
                "candidates": [list(c) if isinstance(c, tuple) else c for c in t.candidates],
            },
            "example": {"before": self.example.before, "after": self.example.after, "note": self.example.note},
            "provenance": {
                "source": self.provenance.source,
                "references": list(self.provenance.references),
                "lineage": dict(self.provenance.lineage),
            },
        }


# --- the validator ----------------------------------------------------------------------------------

_TOP_FIELDS = {
    "schema",
    "id",
    "title",
    "intent",
    "category",
    "keywords",
    "related",
    "locus",
    "preconditions",
    "signals",
    "effect",
    "risks",
    "transform",
    "example",
    "provenance",
}
_REQUIRED = ("schema", "id", "title", "intent", "category", "locus", "preconditions", "effect", "risks")
_REQUIRED += ("transform", "example", "provenance")


class _Checker:
    def __init__(self, file: str) -> None:
        self.file = file
        self.problems: list[SchemaProblem] = []

    def add(self, where: str, problem: str) -> None:
        self.problems.append(SchemaProblem(self.file, where, problem))

    def table(self, data: Any, where: str, allowed: set[str], required: tuple[str, ...]) -> dict[str, Any] | None:
        if not isinstance(data, dict):
            self.add(where, f"expected a table, found {type(data).__name__}")
            return None
        for key in sorted(set(data) - allowed):
            self.add(f"{where}.{key}" if where else key, f"unknown field (allowed: {', '.join(sorted(allowed))})")
        for key in required:
            if key not in data:
                self.add(f"{where}.{key}" if where else key, "missing required field")
        return data

    def text(self, data: dict[str, Any], key: str, where: str, required: bool = True) -> str:
        path = f"{where}.{key}" if where else key
        if key not in data:
            return ""
        value = data[key]
        if not isinstance(value, str) or (required and not value.strip()):
            self.add(path, f"expected a non-empty string, found {value!r}")
            return ""
        return value

    def strings(self, data: dict[str, Any], key: str, where: str) -> tuple[str, ...]:
        path = f"{where}.{key}" if where else key
        value = data.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
            self.add(path, f"expected a list of non-empty strings, found {value!r}")
            return ()
        return tuple(value)

    def choice(self, data: dict[str, Any], key: str, where: str, allowed: tuple[str, ...]) -> str | None:
        path = f"{where}.{key}" if where else key
        if key not in data:
            return None
        value = data[key]
        if value not in allowed:
            self.add(path, f"unknown value {value!r} (one of: {', '.join(allowed)})")
            return None
        return value


def _value_fits(ftype: str, op: str, value: Any) -> str | None:
    """None when `value` fits feature type `ftype` under `op`, else what is wrong."""
    scalar = {
        "bool": lambda v: isinstance(v, bool),
        "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "float": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
        "str": lambda v: isinstance(v, str),
        "tuple": lambda v: isinstance(v, list) and all(isinstance(x, int) for x in v),
    }
    if ftype == "set":
        if op in ("has", "lacks"):
            return None if isinstance(value, str) else f"{op} takes one string, found {value!r}"
        ok = isinstance(value, list) and all(isinstance(v, str) for v in value)
        return None if ok else f"{op} on a set feature takes a list of strings, found {value!r}"
    if op in ("in", "not_in"):
        if not isinstance(value, list) or not value:
            return f"{op} takes a non-empty list, found {value!r}"
        bad = [v for v in value if not scalar[ftype](v)]
        return f"{op}: {bad[0]!r} is not a {ftype}" if bad else None
    return None if scalar[ftype](value) else f"expected a {ftype} value for this feature, found {value!r}"


def _predicate(c: _Checker, data: Any, where: str, kind: str) -> Predicate | None:
    allowed = {"feature", "op", "value", "reason"} | ({"category"} if kind == "precondition" else {"weight", "scale"})
    required = ("feature", "op", "value", "reason") + (("category",) if kind == "precondition" else ("weight",))
    t = c.table(data, where, allowed, required)
    if t is None:
        return None
    before = len(c.problems)
    feature = t.get("feature")
    spec = FEATURES.get(feature) if isinstance(feature, str) else None
    if "feature" in t and spec is None:
        import difflib

        close = difflib.get_close_matches(str(feature), list(FEATURES), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else " (see argus.kb.features.FEATURES)"
        c.add(f"{where}.feature", f"unknown feature {feature!r}{hint}")
    op = t.get("op")
    if "op" in t and op not in OPERATORS:
        c.add(f"{where}.op", f"unknown operator {op!r} (one of: {', '.join(OPERATORS)})")
    elif spec is not None and op in OPERATORS:
        if spec.type not in OPERATORS[op]:
            c.add(f"{where}.op", f"operator {op!r} does not apply to {feature} (a {spec.type})")
        elif "value" in t:
            wrong = _value_fits(spec.type, op, t["value"])
            if wrong:
                c.add(f"{where}.value", wrong)
    reason = c.text(t, "reason", where)
    category = None
    weight = 0.0
    scale = False
    if kind == "precondition":
        category = c.choice(t, "category", where, PRECONDITION_CATEGORIES)
    else:
        w = t.get("weight")
        if "weight" in t and (not isinstance(w, int | float) or isinstance(w, bool) or not 0 < w <= 10):
            c.add(f"{where}.weight", f"expected a number in (0, 10], found {w!r}")
        else:
            weight = float(w or 0.0)
        scale = t.get("scale", False)
        if not isinstance(scale, bool):
            c.add(f"{where}.scale", f"expected true or false, found {scale!r}")
            scale = False
    if len(c.problems) > before:
        return None
    value = t["value"]
    if isinstance(value, list) and spec is not None and spec.type == "tuple" and op in ("eq", "ne"):
        value = tuple(value)
    return Predicate(feature, op, value, reason, category, weight, scale)


def _locus(c: _Checker, data: Any) -> Locus | None:
    allowed = {"op", "description", "src", "dst", "atom", "loop", "in_loop", "space"}
    t = c.table(data, "locus", allowed, ("op", "description"))
    if t is None:
        return None
    before = len(c.problems)
    op = c.choice(t, "op", "locus", LOCUS_OPS)
    description = c.text(t, "description", "locus")
    for key in ("src", "dst", "space"):
        c.choice(t, key, "locus", SPACES)
    c.choice(t, "loop", "locus", LOOP_KINDS)
    if "atom" in t and not (isinstance(t["atom"], str) and t["atom"]):
        c.add("locus.atom", f"expected an atom name prefix, found {t['atom']!r}")
    if "in_loop" in t and not isinstance(t["in_loop"], bool):
        c.add("locus.in_loop", f"expected true or false, found {t['in_loop']!r}")
    if op is not None and op != "copy" and ("src" in t or "dst" in t):
        c.add("locus", 'src/dst narrow a copy locus only (op = "copy")')
    if op is not None and op != "loop" and "loop" in t:
        c.add("locus.loop", 'a loop kind narrows a loop locus only (op = "loop")')
    if len(c.problems) > before or op is None:
        return None
    return Locus(
        op,
        description,
        t.get("src"),
        t.get("dst"),
        t.get("atom"),
        t.get("loop"),
        t.get("in_loop"),
        t.get("space"),
    )


def _effect(c: _Checker, data: Any) -> Effect | None:
    t = c.table(data, "effect", {"improves", "magnitude", "when", "bound"}, ("improves", "magnitude", "when"))
    if t is None:
        return None
    before = len(c.problems)
    improves = c.strings(t, "improves", "effect")
    if "improves" in t and not improves:
        c.add("effect.improves", "name at least one thing that gets better")
    magnitude = c.text(t, "magnitude", "effect")
    when = c.text(t, "when", "effect")
    bound = c.choice(t, "bound", "effect", BOUNDS) or "any"
    if len(c.problems) > before:
        return None
    return Effect(improves, magnitude, when, bound)


def _risks(c: _Checker, data: Any) -> tuple[Risk, ...]:
    from argus.verify.catalog import CATALOG

    if not isinstance(data, list) or not data:
        c.add("risks", "expected at least one [[risks]] table (what can go wrong and what catches it)")
        return ()
    out = []
    for i, item in enumerate(data):
        where = f"risks[{i}]"
        t = c.table(item, where, {"risk", "codes", "caught_by", "invariant"}, ("risk",))
        if t is None:
            continue
        before = len(c.problems)
        risk = c.text(t, "risk", where)
        codes = c.strings(t, "codes", where)
        for j, code in enumerate(codes):
            if code not in CATALOG:
                import difflib

                close = difflib.get_close_matches(code, list(CATALOG), n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                c.add(
                    f"{where}.codes[{j}]", f"unknown verifier code {code!r}{hint}; codes come from argus.verify.catalog"
                )
        caught = c.strings(t, "caught_by", where)
        for j, stage in enumerate(caught):
            if stage not in CAUGHT_BY:
                c.add(f"{where}.caught_by[{j}]", f"unknown checker {stage!r} (one of: {', '.join(CAUGHT_BY)})")
        if not codes and not caught:
            c.add(where, "say what catches this risk: verifier codes, caught_by, or both")
        invariant = c.text(t, "invariant", where, required=False) if "invariant" in t else ""
        if len(c.problems) == before:
            out.append(Risk(risk, codes, caught, invariant))
    return tuple(out)


def _policy_value_ok(policy: str, value: Any) -> str | None:
    from argus.ir.nodes import TileOrder

    if policy in ("stages", "swizzle", "unroll"):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            return f"{policy} takes positive integers, found {value!r}"
        if policy == "swizzle" and value not in SWIZZLE_WIDTHS:
            *most, last = SWIZZLE_WIDTHS
            return f"swizzle takes {', '.join(map(str, most))} or {last} (bytes), found {value!r}"
        return None
    if policy == "tile_shape":
        ok = isinstance(value, list) and value and all(isinstance(v, int) and v > 0 for v in value)
        return None if ok else f"tile_shape takes lists of positive integers, found {value!r}"
    if policy == "tile_order":
        allowed = [o.value for o in TileOrder]
        return None if value in allowed else f"tile_order takes one of {allowed}, found {value!r}"
    if policy == "persistent":
        return None if isinstance(value, bool) else f"persistent takes true or false, found {value!r}"
    if policy == "register_split":
        ok = isinstance(value, list) and all(isinstance(v, int) and 24 <= v <= 256 and v % 8 == 0 for v in value)
        return None if ok else f"register_split takes lists of budgets (24..256, multiples of 8), found {value!r}"
    return None if isinstance(value, list) and all(isinstance(v, str) for v in value) else f"bad value {value!r}"


def _transform(c: _Checker, data: Any) -> Transform | None:
    t = c.table(data, "transform", {"kind", "reason", "policy", "candidates"}, ("kind", "reason"))
    if t is None:
        return None
    before = len(c.problems)
    kind = c.choice(t, "kind", "transform", ("policy", "none"))
    reason = c.text(t, "reason", "transform")
    policy = None
    candidates: tuple[Any, ...] = ()
    if kind == "policy":
        for key in ("policy", "candidates"):
            if key not in t:
                c.add(f"transform.{key}", "missing required field (a policy transform names its policy and values)")
        policy = c.choice(t, "policy", "transform", POLICIES)
        values = t.get("candidates", [])
        if not isinstance(values, list) or not values:
            c.add("transform.candidates", f"expected a non-empty list of values, found {values!r}")
        elif policy is not None:
            for j, v in enumerate(values):
                wrong = _policy_value_ok(policy, v)
                if wrong:
                    c.add(f"transform.candidates[{j}]", wrong)
            candidates = tuple(tuple(v) if isinstance(v, list) else v for v in values)
    elif kind == "none":
        for key in ("policy", "candidates"):
            if key in t:
                c.add(f"transform.{key}", 'only a policy transform has this field (kind = "none")')
    if len(c.problems) > before or kind is None:
        return None
    return Transform(kind, reason, policy, candidates)


def _example(c: _Checker, data: Any) -> Example | None:
    t = c.table(data, "example", {"before", "after", "note"}, ("before", "after"))
    if t is None:
        return None
    before_count = len(c.problems)
    code = {}
    for key in ("before", "after"):
        text = c.text(t, key, "example")
        if text:
            try:
                ast.parse(textwrap.dedent(text))
            except SyntaxError as err:
                c.add(f"example.{key}", f"does not parse as Python (line {err.lineno}: {err.msg})")
        code[key] = text
    if code.get("before") and code.get("before") == code.get("after"):
        c.add("example", "before and after are identical")
    note = c.text(t, "note", "example") if "note" in t else ""
    if len(c.problems) > before_count:
        return None
    return Example(code["before"], code["after"], note)


#: What a mined skill's admission record (`argus.lineage.skills.admit`) must say: where the forward step was
#: replayed, whether the skill was admitted, and why.
_ADMISSION_REQUIRED = {"admitted": bool, "kernel": str, "kernel_after": str, "reason": str}


def _admission(c: _Checker, data: Any) -> None:
    where = "provenance.lineage.admission"
    if not isinstance(data, dict):
        c.add(where, f"expected a table, found {type(data).__name__}")
        return
    for key, kind in _ADMISSION_REQUIRED.items():
        if key not in data:
            c.add(f"{where}.{key}", "missing: an admission says where the step was replayed, the verdict and why")
        elif not isinstance(data[key], kind) or (kind is str and not data[key].strip()):
            c.add(f"{where}.{key}", f"expected {'true or false' if kind is bool else 'a non-empty string'}, "
                  f"found {data[key]!r}")  # fmt: skip
    if "held_out" in data and not isinstance(data["held_out"], bool):
        c.add(f"{where}.held_out", f"expected true or false, found {data['held_out']!r}")


def _provenance(c: _Checker, data: Any) -> Provenance | None:
    t = c.table(data, "provenance", {"source", "references", "author", "lineage"}, ("source",))
    if t is None:
        return None
    before = len(c.problems)
    source = c.choice(t, "source", "provenance", ("curated", "mined"))
    references = c.strings(t, "references", "provenance")
    author = c.text(t, "author", "provenance") if "author" in t else ""
    lineage = t.get("lineage", {})
    if source == "curated" and not references:
        c.add("provenance.references", "a curated entry names at least one reference")
    if source == "mined":
        if not isinstance(lineage, dict):
            c.add("provenance.lineage", f"expected a table, found {type(lineage).__name__}")
        else:
            for key in ("kernel", "step", "measured"):
                if key not in lineage:
                    c.add(f"provenance.lineage.{key}", "missing: a mined skill records its lineage evidence")
            if "admission" in lineage:
                _admission(c, lineage["admission"])
    elif "lineage" in t:
        c.add("provenance.lineage", "only a mined entry has lineage evidence")
    if len(c.problems) > before or source is None:
        return None
    return Provenance(source, references, author, dict(lineage) if isinstance(lineage, dict) else {})


def parse_entry(data: Any, file: str, expected_id: str | None = None) -> Entry:
    """The `Entry` that `data` (a parsed TOML document) describes, or `SchemaError` listing every
    problem as (file, field, what is wrong). `expected_id`: the id the file name promises."""
    c = _Checker(file)
    t = c.table(data, "", _TOP_FIELDS, _REQUIRED)
    if t is None:
        raise SchemaError(c.problems)
    if "schema" in t and t["schema"] != SCHEMA_VERSION:
        c.add("schema", f"unsupported schema version {t['schema']!r} (this argus reads {SCHEMA_VERSION})")
    entry_id = c.text(t, "id", "")
    if entry_id and not ID_PATTERN.match(entry_id):
        c.add("id", f"{entry_id!r} is not lower-case words joined by hyphens")
    if entry_id and expected_id is not None and entry_id != expected_id:
        c.add("id", f"{entry_id!r} differs from the file name {expected_id!r}")
    title = c.text(t, "title", "")
    intent = c.text(t, "intent", "")
    category = c.choice(t, "category", "", CATEGORIES)
    keywords = c.strings(t, "keywords", "")
    related = c.strings(t, "related", "")
    locus = _locus(c, t["locus"]) if "locus" in t else None
    preconditions: list[Predicate] = []
    if "preconditions" in t:
        items = t["preconditions"]
        if not isinstance(items, list):
            c.add("preconditions", "expected an array of tables ([[preconditions]])")
        else:
            for i, item in enumerate(items):
                p = _predicate(c, item, f"preconditions[{i}]", "precondition")
                if p is not None:
                    preconditions.append(p)
    signals: list[Predicate] = []
    items = t.get("signals", [])
    if not isinstance(items, list):
        c.add("signals", "expected an array of tables ([[signals]])")
    else:
        for i, item in enumerate(items):
            p = _predicate(c, item, f"signals[{i}]", "signal")
            if p is not None:
                signals.append(p)
    effect = _effect(c, t["effect"]) if "effect" in t else None
    risks = _risks(c, t["risks"]) if "risks" in t else ()
    transform = _transform(c, t["transform"]) if "transform" in t else None
    example = _example(c, t["example"]) if "example" in t else None
    provenance = _provenance(c, t["provenance"]) if "provenance" in t else None
    if c.problems:
        raise SchemaError(c.problems)
    assert locus and effect and transform and example and provenance and category  # checked above
    return Entry(
        entry_id,
        title,
        intent,
        category,
        locus,
        tuple(preconditions),
        effect,
        risks,
        transform,
        example,
        provenance,
        tuple(signals),
        keywords,
        related,
        file,
    )
