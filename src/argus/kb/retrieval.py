"""Retrieval: rank entries by how well they fit a kernel.

For each entry, in order:

1. **Locus** — the entry's pattern is matched against the kernel's IR statements; no matching
   statement means the technique has nowhere to go (the entry is inapplicable, with that reason).
2. **Preconditions** — every hard predicate is evaluated over the features: one that fails makes
   the entry inapplicable (its reason is reported); one over an unknown feature (no profile given,
   say) lowers the score but does not exclude.
3. **Score** — applicable entries score ``1 + 0.5 * (fraction of preconditions known to hold)``,
   plus the weights of the signals that hold (profile and verifier facts such as a bank-conflict
   degree, scaled by the degree where the signal says so), plus ``BOUND_MATCH`` when the profile
   says the kernel is bound by what the entry relieves (``BOUND_MISMATCH`` when it is bound by
   something else), plus ``TRANSFORM_READY`` when the entry's policy transform can be applied to
   this kernel as it stands, minus ``UNKNOWN_PENALTY`` per unknown precondition.
4. **Mined skills only** (``provenance.source = "mined"``; curated entries score as above and nothing more):
   plus the *measured gain* — ``GAIN_WEIGHT`` per doubling of the speedup the skill's lineage step recorded
   (``log2`` of the effect ratio, clamped to ``±GAIN_CAP``), counted fully when that effect is a GPU measurement
   and at ``ESTIMATE_TRUST`` when it is the cost model's estimate; nothing when the skill's admission on a
   held-out kernel failed — and the *shape proximity* — ``SHAPE_WEIGHT × 2^(−mean |log2(skill size / task
   size)|)`` over the problem sizes both name (the skill's effect context vs the kernel's task's benchmark shape,
   `retrieve(..., shape=...)`, else the ``shape.values`` feature; nothing when either is unknown).

Applicable entries come first, best first; inapplicable ones follow (only when asked for), each
with the reason it failed.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from argus.ir.expr import SourceLoc
from argus.ir.nodes import Alloc, Copy, For, Gemm, Kernel, Map, Reduce
from argus.kb.features import Features, kernel_features, profile_features, verify_features, walk_with_loops
from argus.kb.schema import Entry, Locus, Predicate

BOUND_MATCH = 1.5
BOUND_MISMATCH = -1.0
TRANSFORM_READY = 0.25
UNKNOWN_PENALTY = 0.3
GAIN_WEIGHT = 1.0  # per doubling of a mined skill's recorded speedup
GAIN_CAP = 2.0  # the gain term's bound either way: one skill cannot outweigh everything else
ESTIMATE_TRUST = 0.5  # a cost-model estimate counts half as much as a GPU measurement
SHAPE_WEIGHT = 0.5  # a mined skill measured at the task's own shape


@dataclass(frozen=True)
class Match:
    """One entry's fit to one kernel."""

    entry: Entry
    score: float
    applicable: bool
    sites: tuple[SourceLoc, ...]
    held: tuple[Predicate, ...]
    failed: tuple[Predicate, ...]
    unknown: tuple[Predicate, ...]
    boosts: tuple[tuple[Predicate, float], ...]
    notes: tuple[str, ...]  # locus and bound reasons, in words
    transform_ready: bool
    observed: tuple[tuple[str, Any], ...] = ()  # the values the failed preconditions found

    def _found(self, feature: str) -> str:
        value = dict(self.observed).get(feature)
        if isinstance(value, frozenset):
            return "{" + ", ".join(sorted(value)) + "}"
        return repr(value)

    @property
    def reasons(self) -> list[str]:
        """Why the entry ranks where it does, one line each, most decisive first."""
        out = list(self.notes)
        out += [f"fails: {p.text()} (found {self._found(p.feature)}) -- {p.reason}" for p in self.failed]
        out += [f"signal (+{amount:.2f}): {p.text()} -- {p.reason}" for p, amount in self.boosts]
        out += [f"unknown: {p.feature} (not given) -- {p.reason}" for p in self.unknown]
        out += [f"holds: {p.text()}" for p in self.held]
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.entry.id,
            "title": self.entry.title,
            "score": round(self.score, 4),
            "applicable": self.applicable,
            "transform_ready": self.transform_ready,
            "sites": [f"{s}" for s in self.sites],
            "reasons": self.reasons,
        }


def locus_sites(locus: Locus, kernel: Kernel) -> tuple[SourceLoc, ...]:
    """The source lines of the statements of `kernel` that `locus` matches (the kernel's own line
    for ``op = "kernel"``)."""
    if locus.op == "kernel":
        return (kernel.loc,) if kernel.loc is not None else (SourceLoc(kernel.name, 0),)
    kinds = {"loop": For, "gemm": Gemm, "copy": Copy, "reduce": Reduce, "map": Map, "alloc": Alloc}
    out: list[SourceLoc] = []
    for s, loops in walk_with_loops(kernel.body):
        if not isinstance(s, kinds[locus.op]):
            continue
        if locus.in_loop is not None and bool(loops) != locus.in_loop:
            continue
        if isinstance(s, For) and locus.loop is not None and s.kind.value != locus.loop:
            continue
        if isinstance(s, Copy):
            if locus.src is not None and s.src.buffer.space.value != locus.src:
                continue
            if locus.dst is not None and s.dst.buffer.space.value != locus.dst:
                continue
        if isinstance(s, Alloc) and locus.space is not None and s.buffer.space.value != locus.space:
            continue
        if locus.atom is not None:
            name = s.atom if isinstance(s, Copy | Gemm) else s.op.value if isinstance(s, Map | Reduce) else ""
            if not name.startswith(locus.atom):
                continue
        if s.loc is not None and s.loc not in out:
            out.append(s.loc)
    return tuple(out)


def _describe_locus(locus: Locus) -> str:
    parts = [locus.op]
    if locus.src or locus.dst:
        parts.append(f"{locus.src or '*'}->{locus.dst or '*'}")
    if locus.atom:
        parts.append(f"atom {locus.atom}*")
    if locus.loop:
        parts.append(f"{locus.loop} loop")
    if locus.space:
        parts.append(f"in {locus.space}")
    if locus.in_loop is not None:
        parts.append("inside a loop" if locus.in_loop else "outside loops")
    return " ".join(parts)


def skill_gain(entry: Entry) -> tuple[float, float, str] | None:
    """A mined skill's recorded effect as (speedup of its forward step, trust, the context in words): trust 1 for a
    GPU measurement, `ESTIMATE_TRUST` for the cost model's estimate. None for a curated entry or a skill without
    profile numbers."""
    if entry.provenance.source != "mined":
        return None
    effect = entry.provenance.lineage.get("effect")
    if not isinstance(effect, dict):
        return None
    ratio = effect.get("slowdown")  # of the backward step: simpler / expert time = the forward step's speedup
    before, after = effect.get("before_ms"), effect.get("after_ms")
    if not isinstance(ratio, int | float) and isinstance(before, int | float) and isinstance(after, int | float):
        ratio = after / before if before > 0 else None
    if not isinstance(ratio, int | float) or isinstance(ratio, bool) or not ratio > 0 or ratio != ratio:
        return None
    measured = effect.get("source") == "gpu" and not effect.get("estimate")
    where = f"{effect.get('source')} on {effect.get('gpu')}"
    return float(ratio), 1.0 if measured else ESTIMATE_TRUST, where + ("" if measured else ", an estimate")


def skill_sizes(entry: Entry) -> dict[str, int]:
    """The problem sizes a mined skill's effect was measured (or estimated) at; empty when not recorded."""
    effect = entry.provenance.lineage.get("effect") if entry.provenance.source == "mined" else None
    sizes = effect.get("sizes") if isinstance(effect, dict) else None
    if not isinstance(sizes, dict):
        return {}
    return {str(k): int(v) for k, v in sizes.items() if isinstance(v, int) and not isinstance(v, bool) and v > 0}


def shape_proximity(a: Mapping[str, int], b: Mapping[str, int]) -> float | None:
    """``2^(−mean |log2(a[n] / b[n])|)`` over the sizes `n` both name (and that are positive): 1 for the same shape,
    1/2 when every size is off by a factor of two; None when they share no size."""
    common = [n for n in a if n in b and a[n] > 0 and b[n] > 0]
    if not common:
        return None
    distance = sum(abs(math.log2(a[n] / b[n])) for n in common) / len(common)
    return 2.0**-distance


def _shape_of(features: Features) -> dict[str, int]:
    """The problem sizes in the ``shape.values`` feature (``NAME=VALUE`` strings), when given."""
    out: dict[str, int] = {}
    for item in features.get("shape.values", ()) or ():
        name, _, value = str(item).partition("=")
        if value.strip().isdigit():
            out[name.strip()] = int(value)
    return out


def _skill_terms(entry: Entry, features: Features, shape: Mapping[str, int] | None) -> tuple[float, list[str]]:
    """The mined-skill score terms (measured gain, shape proximity) and a note for each (module docstring, 4)."""
    score, notes = 0.0, []
    gain = skill_gain(entry)
    admission = entry.provenance.lineage.get("admission")
    refused = isinstance(admission, dict) and admission.get("admitted") is False
    if gain is not None:
        ratio, trust, where = gain
        term = 0.0 if refused else trust * GAIN_WEIGHT * max(-GAIN_CAP, min(GAIN_CAP, math.log2(ratio)))
        score += term
        why = "its admission on a held-out kernel failed" if refused else f"counted at {trust:g}"
        notes.append(f"measured gain ({term:+.2f}): {ratio:.2f}x faster in its lineage ({where}); {why}")
    sizes = skill_sizes(entry)
    target = dict(shape) if shape else _shape_of(features)
    proximity = shape_proximity(sizes, target) if sizes and target else None
    if proximity is not None:
        score += SHAPE_WEIGHT * proximity
        at = ",".join(f"{k}={v}" for k, v in sizes.items())
        to = ",".join(f"{k}={target[k]}" for k in sizes if k in target)
        notes.append(f"shape proximity (+{SHAPE_WEIGHT * proximity:.2f}): measured at {at}, the task runs at {to}")
    return score, notes


def match_entry(entry: Entry, features: Features, *, shape: Mapping[str, int] | None = None) -> Match:
    """How `entry` fits the kernel described by `features` (see the module docstring). `shape`: the problem sizes
    the kernel is to run at (its task's benchmark shape), for a mined skill's shape proximity."""
    notes: list[str] = []
    sites: tuple[SourceLoc, ...] = ()
    locus_ok = True
    if features.kernel is not None:
        sites = locus_sites(entry.locus, features.kernel)
        if not sites:
            locus_ok = False
            notes.append(f"no place to apply it: the kernel has no {_describe_locus(entry.locus)}")
        else:
            where = ", ".join(str(s) for s in sites[:3]) + (" ..." if len(sites) > 3 else "")
            notes.append(f"applies at {entry.locus.description} ({where})")
    held, failed, unknown = [], [], []
    for p in entry.preconditions:
        verdict = p.evaluate(features)
        (unknown if verdict is None else held if verdict else failed).append(p)
    boosts = [(s, s.boost(features)) for s in entry.signals]
    boosts = [(s, b) for s, b in boosts if b > 0]
    score = 1.0 + (0.5 * len(held) / len(entry.preconditions) if entry.preconditions else 0.5)
    score += sum(b for _, b in boosts)
    bound = features.get("profile.bound")
    if bound is not None and entry.effect.bound != "any":
        if entry.effect.bound == bound:
            score += BOUND_MATCH
            notes.append(f"the kernel is {bound}-bound and this relieves the {bound} bound")
        else:
            score += BOUND_MISMATCH
            notes.append(f"the kernel is {bound}-bound; this relieves the {entry.effect.bound} bound")
    score -= UNKNOWN_PENALTY * len(unknown)
    if entry.provenance.source == "mined":
        extra, skill_notes = _skill_terms(entry, features, shape)
        score += extra
        notes += skill_notes
    ready = entry.transform.kind == "policy" and entry.transform.policy in features.get("policies.declared", ())
    if ready:
        score += TRANSFORM_READY
    applicable = locus_ok and not failed
    return Match(
        entry,
        score,
        applicable,
        sites,
        tuple(held),
        tuple(failed),
        tuple(unknown),
        tuple(boosts),
        tuple(notes),
        ready,
        tuple((p.feature, features[p.feature]) for p in failed),
    )


def retrieve(
    features: Any,
    profile: Any = None,
    findings: Any = None,
    k: int | None = 10,
    *,
    include_inapplicable: bool = False,
    entries: Iterable[Entry] | None = None,
    shape: Mapping[str, int] | None = None,
) -> list[Match]:
    """The entries that fit best, best first: `features` from `kernel_features` (or a kernel
    target, whose features are read here); `profile` and `findings` add profile and verifier facts
    (see `kernel_features`). At most `k` matches (all when None); inapplicable entries are left
    out unless `include_inapplicable`, and then rank after every applicable one. `shape`: the problem sizes the
    kernel is to run at (its task's benchmark shape), for the shape proximity of mined skills."""
    from argus.kb.store import entries as shipped

    if not isinstance(features, Features):
        features = kernel_features(features, profile=profile, findings=findings)
    else:
        extra = {**profile_features(profile), **verify_features(findings)}
        if extra:
            features = Features({**features.values, **extra}, features.kernel, features.function, features.params)
    pool = list(entries) if entries is not None else list(shipped())
    matches = [match_entry(e, features, shape=shape) for e in pool]
    if not include_inapplicable:
        matches = [m for m in matches if m.applicable]
    matches.sort(key=lambda m: (not m.applicable, -m.score, m.entry.id))
    return matches if k is None else matches[:k]
