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

Applicable entries come first, best first; inapplicable ones follow (only when asked for), each
with the reason it failed.
"""

from __future__ import annotations

from collections.abc import Iterable
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


def match_entry(entry: Entry, features: Features) -> Match:
    """How `entry` fits the kernel described by `features` (see the module docstring)."""
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
) -> list[Match]:
    """The entries that fit best, best first: `features` from `kernel_features` (or a kernel
    target, whose features are read here); `profile` and `findings` add profile and verifier facts
    (see `kernel_features`). At most `k` matches (all when None); inapplicable entries are left
    out unless `include_inapplicable`, and then rank after every applicable one."""
    from argus.kb.store import entries as shipped

    if not isinstance(features, Features):
        features = kernel_features(features, profile=profile, findings=findings)
    else:
        extra = {**profile_features(profile), **verify_features(findings)}
        if extra:
            features = Features({**features.values, **extra}, features.kernel, features.function, features.params)
    pool = list(entries) if entries is not None else list(shipped())
    matches = [match_entry(e, features) for e in pool]
    if not include_inapplicable:
        matches = [m for m in matches if m.applicable]
    matches.sort(key=lambda m: (not m.applicable, -m.score, m.entry.id))
    return matches if k is None else matches[:k]
