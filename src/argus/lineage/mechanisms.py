"""The mechanisms a simplification removes, read off a kernel — never off its name.

Each `Mechanism` has levels (0 = absent; the copy and MMA ladders have two levels above it: plain loads <
``cp.async`` < TMA and FMA < ``mma.sync`` < ``wgmma``), a function from the kernel's features
(`argus.kb.features.kernel_features`) to its level, what it requires of the others at each level (so that a
dependent mechanism is removed before its prerequisite: the register split before the warp roles, the warp
roles before TMA, the pipeline before its asynchronous copies, ``wgmma`` before the swizzle it reads through,
the TMA-store epilogue before the ``wgmma`` accumulator it stores, every shared-memory user before the shared-memory
tiling), and the marks it leaves in the generated code
(CUDA source text, SASS opcodes) where it leaves any.

`state(features)` gives every mechanism's level; `check` in `argus.lineage.operators` compares two states.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Markers:
    """What a mechanism at one level leaves in the generated code: every string of `source` appears in the CUDA
    source, and at least one opcode of `sass_any` in the SASS (empty: nothing to look for)."""

    source: tuple[str, ...] = ()
    sass_any: tuple[str, ...] = ()


@dataclass(frozen=True)
class Mechanism:
    """One optimization mechanism.

    Attributes:
        id: stable id (``pipeline``, ``global_copy``, ...).
        title: what it is, in a few words.
        levels: names of the levels, 0 first (``("absent", "present")`` for on/off mechanisms).
        level: features -> level.
        requires: level -> ((mechanism, minimum level), ...) this level needs.
        markers: level -> `Markers` of that level in generated code (levels without an entry are checked on the
            IR only).
    """

    id: str
    title: str
    levels: tuple[str, ...]
    level: Callable[[Mapping[str, Any]], int]
    requires: dict[int, tuple[tuple[str, int], ...]] = field(default_factory=dict)
    markers: dict[int, Markers] = field(default_factory=dict)

    def level_name(self, level: int) -> str:
        return self.levels[level]


def _copy_level(f: Mapping[str, Any]) -> int:
    loads = f["copy.global_loads"]
    return 2 if "tma" in loads else 1 if "cp.async" in loads else 0


_MMA_LEVELS = {"fma": 0, "mma.sync": 1, "wgmma": 2}

#: Every mechanism, from the ones built on top of others down to the foundations.
MECHANISMS: dict[str, Mechanism] = {
    m.id: m
    for m in (
        Mechanism(
            "output_cast",
            "output converted to a narrower dtype in the epilogue",
            ("accumulator dtype", "cast"),
            lambda f: int(bool(f["dtypes.accumulator"]) and bool(f["dtypes.outputs"] - f["dtypes.accumulator"])),
        ),
        Mechanism(
            "epilogue",
            "output tile stored through shared-memory staging and TMA stores",
            ("direct", "tma store"),
            lambda f: int("tma.store" in f["copy.global_stores"]),
            {1: (("mma", 2),)},  # the staged store takes a wgmma accumulator (each warpgroup 64 whole rows)
            {1: Markers(("cp.async.bulk.tensor.2d.global.shared::cta",), ("UTMASTG",))},
        ),
        Mechanism(
            "register_split",
            "register split between warp roles (setmaxnreg)",
            ("absent", "setmaxnreg"),
            lambda f: int(bool(f["roles.setmaxnreg"])),
            {1: (("warp_specialization", 1),)},
            {1: Markers(("setmaxnreg",), ("USETMAXREG",))},
        ),
        Mechanism(
            "warp_specialization",
            "producer/consumer warp roles",
            ("absent", "roles"),
            lambda f: int(bool(f["roles.warp_specialized"])),
            {1: (("global_copy", 2),)},
        ),
        Mechanism(
            "tile_order",
            "L2-friendly tile order",
            ("default", "reordered"),
            lambda f: int(f["grid.tile_order"] not in ("none", "row_major")),
            {1: (("persistent", 1),)},
        ),
        Mechanism(
            "persistent",
            "persistent grid (one block per SM walking tiles)",
            ("absent", "persistent"),
            lambda f: int(bool(f["grid.persistent"])),
        ),
        Mechanism(
            "pipeline",
            "multi-stage software pipeline",
            ("one stage", "stages"),
            lambda f: int((f["pipeline.stages"] or 1) >= 2),
            {1: (("global_copy", 1),)},
        ),
        Mechanism(
            "global_copy",
            "global-to-shared copies",
            ("plain loads", "cp.async", "tma"),
            _copy_level,
            {1: (("smem_tiling", 1),), 2: (("smem_tiling", 1),)},
            {1: Markers((), ("LDGSTS",)), 2: Markers(("cp.async.bulk.tensor",), ("UTMALDG",))},
        ),
        Mechanism(
            "mma",
            "matrix-multiply instruction",
            ("fma", "mma.sync", "wgmma"),
            lambda f: _MMA_LEVELS.get(f["mma.kind"], 0),
            {1: (("smem_tiling", 1),), 2: (("smem_tiling", 1), ("swizzle", 1))},
            {1: Markers(("mma.sync",), ("HMMA",)), 2: Markers(("wgmma.mma_async",), ("HGMMA",))},
        ),
        Mechanism(
            "swizzle",
            "XOR-swizzled shared memory",
            ("absent", "swizzled"),
            lambda f: int((f["smem.swizzle"] or 0) > 0),
            {1: (("smem_tiling", 1),)},
        ),
        Mechanism(
            "smem_tiling",
            "shared-memory tiling",
            ("absent", "tiled"),
            lambda f: int((f["smem.buffers"] or 0) > 0),
            {},
            {1: Markers((), ("LDS", "STS", "LDSM", "LDGSTS", "UTMALDG"))},
        ),
    )
}


def state(features: Mapping[str, Any]) -> dict[str, int]:
    """Every mechanism's level in a kernel with these features."""
    return {m.id: m.level(features) for m in MECHANISMS.values()}


def blockers(current: Mapping[str, int], mechanism: str, to_level: int) -> list[str]:
    """The mechanisms present in `current` that need `mechanism` above `to_level` (they must go first)."""
    out = []
    for other, level in current.items():
        if other == mechanism or level == 0:
            continue
        for need, minimum in MECHANISMS[other].requires.get(level, ()):
            if need == mechanism and minimum > to_level:
                out.append(f"{other} ({MECHANISMS[other].level_name(level)})")
    return out


def is_naive(current: Mapping[str, int]) -> bool:
    """No mechanism left: plain loads, FMAs, no shared memory, one stage, no roles."""
    return all(level == 0 for level in current.values())


def describe(current: Mapping[str, int]) -> str:
    """``mma=wgmma, global_copy=tma, ...`` for the mechanisms present."""
    parts = [f"{k}={MECHANISMS[k].level_name(v)}" for k, v in current.items() if v]
    return ", ".join(parts) or "naive"
