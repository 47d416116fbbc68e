"""The one vocabulary of optimization mechanisms: what a simplification removes, what a skill adds, what a lineage
rung is made of, and what the agent's lineage moves are named by. Everything that names a mechanism — the lineage
operators (`argus.lineage.operators`), the skill specs (`argus.lineage.skills`), the agent's arms
(`argus.agent.arms`), the library's ladders (`argus.kernels.registry.LineageStep.mechanism`, a rung id here) —
names it from this module; `tests/lineage/test_vocabulary.py` checks that every name used anywhere resolves here.

* `MECHANISMS` — each `Mechanism` has levels (0 = absent; the copy and MMA ladders have two levels above it: plain
  loads < ``cp.async`` < TMA and FMA < ``mma.sync`` < ``wgmma``) and a function from the kernel's features
  (`argus.kb.features.kernel_features`) to its level — read off the kernel, never off its name. Each level above 0
  (a `Level`) says what it means in one line, the kernel change that makes it (a declared policy, a trace
  parameter, an IR rewrite — `Change` — or a lineage rung, `RUNGS`), the curated knowledge-base entry that
  describes it, what it requires of the other mechanisms (so that a dependent mechanism is removed before its
  prerequisite: the register split before the warp roles, the warp roles before TMA, the pipeline before its
  asynchronous copies, ``wgmma`` before the swizzle it reads through, the TMA-store epilogue before the ``wgmma``
  accumulator it stores, every shared-memory user before the shared-memory tiling), and the marks it leaves in the
  generated code (CUDA source text, SASS opcodes) where it leaves any.
* `STEPS` — every mechanism at every level above 0 by its name, ``mechanism@level`` (``global_copy@2``: TMA loads):
  the unit a simplification removes and a mined skill adds.
* `RUNGS` — the rungs of the library's lineages (`argus.kernels.registry.lineage`) by id: the steps each adds to
  the rung before it (one or two) and the step whose curated entry names a move to it. A family's first rung adds
  none (`BASE_RUNGS`): ``naive_fma`` (a ladder from the naive kernel) or ``expert_grid`` (the grouped GEMM's, which
  stands on the GEMM ladder: its first rung is already the warp-specialized tile, once per expert).

`state(features)` gives every mechanism's level; `check` in `argus.lineage.operators` compares two states.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from argus.atoms.swizzle import SWIZZLE_WIDTHS
from argus.lineage.errors import LineageError


@dataclass(frozen=True)
class Markers:
    """What a mechanism at one level leaves in the generated code: every string of `source` appears in the CUDA
    source, and at least one opcode of `sass_any` in the SASS (empty: nothing to look for)."""

    source: tuple[str, ...] = ()
    sass_any: tuple[str, ...] = ()


@dataclass(frozen=True)
class Change:
    """A change to a kernel, other than moving to another library kernel, that adds a step.

    Attributes:
        kind: ``"policy"`` (a policy the kernel declares, `argus.ir.nodes.Policies`), ``"param"`` (a trace
            parameter no declared policy names) or ``"ir"`` (a rewrite of the traced IR).
        name: the policy, the parameter, or the IR field the rewrite sets.
        on: values that add the step (the forward direction); empty where it depends on the kernel.
        off: the value that removes it (what a simplification sets); None where it depends on the kernel.
    """

    kind: str
    name: str
    on: tuple[Any, ...] = ()
    off: Any = None

    def describe(self) -> str:
        """``policy stages = 2/3/4 (removed: 1)``."""
        values = f" = {'/'.join(map(str, self.on))}" if self.on else ""
        return f"{self.kind} {self.name}{values}" + (f" (removed: {self.off})" if self.off is not None else "")


@dataclass(frozen=True)
class Level:
    """One level of a mechanism.

    Attributes:
        name: how the level is called (``"cp.async"``); level 0 names the mechanism's absence.
        meaning: what the kernel does at this level, in one line (levels above 0).
        changes: the policy, parameter or IR changes that add it (a lineage rung may add it too: `RUNGS`).
        entry: the curated knowledge-base entry (`argus.kb`) that describes adding it, if any.
        requires: ((mechanism, minimum level), ...) that this level needs.
        markers: its marks in generated code (None: checked on the IR only).
        interface: the kernel's tensors whose layout or dtype the step itself changes (``wgmma`` reads B K-major).
    """

    name: str
    meaning: str = ""
    changes: tuple[Change, ...] = ()
    entry: str | None = None
    requires: tuple[tuple[str, int], ...] = ()
    markers: Markers | None = None
    interface: tuple[str, ...] = ()


@dataclass(frozen=True)
class Mechanism:
    """One optimization mechanism: `id` (stable: ``pipeline``, ``global_copy``, ...), `title` (what it is, in a few
    words), `levels` (0 first) and `level` (features -> level)."""

    id: str
    title: str
    levels: tuple[Level, ...]
    level: Callable[[Mapping[str, Any]], int]

    def level_name(self, level: int) -> str:
        return self.levels[level].name

    @property
    def requires(self) -> dict[int, tuple[tuple[str, int], ...]]:
        """level -> ((mechanism, minimum level), ...) that level needs."""
        return {i: lv.requires for i, lv in enumerate(self.levels) if lv.requires}

    @property
    def markers(self) -> dict[int, Markers]:
        """level -> its `Markers` (levels without marks are checked on the IR only)."""
        return {i: lv.markers for i, lv in enumerate(self.levels) if lv.markers is not None}


def _copy_level(f: Mapping[str, Any]) -> int:
    loads = f["copy.global_loads"]
    return 2 if "tma" in loads else 1 if "cp.async" in loads else 0


_MMA_LEVELS = {"fma": 0, "mma.sync": 1, "wgmma": 2}

#: Every mechanism, from the ones built on top of others down to the foundations.
MECHANISMS: dict[str, Mechanism] = {
    m.id: m
    for m in (
        Mechanism(
            id="output_cast",
            title="output converted to a narrower dtype in the epilogue",
            levels=(
                Level("accumulator dtype"),
                Level(
                    "cast",
                    meaning="the accumulators are rounded to the output's narrower dtype (bf16) as they are stored",
                    changes=(Change("param", "OUT", on=("bf16",)),),  # the parameter the output's dtype names
                    entry="epilogue-fusion",
                ),
            ),
            level=lambda f: int(bool(f["dtypes.accumulator"]) and bool(f["dtypes.outputs"] - f["dtypes.accumulator"])),
        ),
        Mechanism(
            id="epilogue",
            title="output tile stored through shared-memory staging and TMA stores",
            levels=(
                Level("direct"),
                Level(
                    "tma store",
                    meaning="C is staged in swizzled shared memory and stored by TMA, draining under the next tile",
                    changes=(Change("param", "EPILOGUE", on=("tma",), off="direct"),),
                    entry="tma-store-epilogue",
                    requires=(("mma", 2),),  # the staged store takes a wgmma accumulator (each warpgroup 64 rows)
                    markers=Markers(("cp.async.bulk.tensor.2d.global.shared::cta",), ("UTMASTG",)),
                ),
            ),
            level=lambda f: int("tma.store" in f["copy.global_stores"]),
        ),
        Mechanism(
            id="intra_overlap",
            title="a warpgroup's MMA in flight while it computes (FlashAttention-3's intra-warpgroup overlap)",
            levels=(
                Level("in order"),
                Level(
                    "overlapped",
                    meaning="O += P V of key tile j - 1 runs while the same warpgroup computes tile j's softmax; "
                    "S of tile 0 and the last P V are peeled",
                    changes=(Change("param", "OVERLAP", on=(True,), off=False),),
                    entry="softmax-mma-overlap",
                    requires=(("register_operand", 1),),  # the previous tile's P stays in registers
                ),
            ),
            level=lambda f: int(bool(f["mma.overlapped"])),
        ),
        Mechanism(
            id="pingpong",
            title="consumer warpgroups taking turns at the tensor cores (ping-pong)",
            levels=(
                Level("free-running"),
                Level(
                    "turns",
                    meaning="the consumer warpgroups issue their MMAs in turns (named barriers in a ring), so that "
                    "one's softmax runs while another's MMAs do",
                    changes=(Change("param", "PINGPONG", on=(True,), off=False),),
                    entry="pingpong-consumers",
                    requires=(("warp_specialization", 1),),
                ),
            ),
            level=lambda f: int(bool(f["roles.turns"])),
        ),
        Mechanism(
            id="register_operand",
            title="an MMA's A operand kept in registers (wgmma's register-A form)",
            levels=(
                Level("shared"),
                Level(
                    "registers",
                    meaning="a chained MMA's A operand (attention's P) stays in registers and feeds wgmma directly: "
                    "no shared-memory round trip, no barrier between the warpgroups",
                    entry="wgmma-register-a",
                    requires=(("mma", 2),),
                ),
            ),
            level=lambda f: int(bool(f["mma.register_operand"])),
        ),
        Mechanism(
            id="register_split",
            title="register split between warp roles (setmaxnreg)",
            levels=(
                Level("absent"),
                Level(
                    "setmaxnreg",
                    meaning="setmaxnreg gives the consumer warpgroups more registers and the producer fewer",
                    changes=(Change("ir", "Role.registers"), Change("policy", "register_split")),
                    entry="register-split-setmaxnreg",
                    requires=(("warp_specialization", 1),),
                    markers=Markers(("setmaxnreg",), ("USETMAXREG",)),
                ),
            ),
            level=lambda f: int(bool(f["roles.setmaxnreg"])),
        ),
        Mechanism(
            id="warp_specialization",
            title="producer/consumer warp roles",
            levels=(
                Level("absent"),
                Level(
                    "roles",
                    meaning="a producer warpgroup issues the TMA loads, consumer warpgroups run the MMAs",
                    entry="warp-specialization",
                    requires=(("global_copy", 2),),
                ),
            ),
            level=lambda f: int(bool(f["roles.warp_specialized"])),
        ),
        Mechanism(
            id="tile_order",
            title="L2-friendly tile order",
            levels=(
                Level("default"),
                Level(
                    "reordered",
                    meaning="a persistent grid walks its output tiles in grouped order, for L2 reuse of A and B",
                    changes=(Change("policy", "tile_order", on=("grouped",), off="row_major"),),
                    entry="tile-order-grouped",
                    requires=(("persistent", 1),),
                ),
            ),
            level=lambda f: int(f["grid.tile_order"] not in ("none", "row_major")),
        ),
        Mechanism(
            id="persistent",
            title="persistent grid (one block per SM walking tiles)",
            levels=(
                Level("absent"),
                Level(
                    "persistent",
                    meaning="one block per SM loops over the output tiles, its pipeline running on across them",
                    entry="persistent-grid",
                ),
            ),
            level=lambda f: int(bool(f["grid.persistent"])),
        ),
        Mechanism(
            id="grouped_units",
            title="one launch walks every group's tiles (MoE experts) from device-side tile counts",
            levels=(
                Level("a grid per group"),
                Level(
                    "units",
                    meaning="every group's row tiles are numbered together from device-side cumulative tile counts, "
                    "each unit's group found by a binary search: no block without work",
                    entry="grouped-gemm-scheduling",
                ),
            ),
            level=lambda f: int(bool(f["grid.work_search"])),
        ),
        Mechanism(
            id="pipeline",
            title="multi-stage software pipeline",
            levels=(
                Level("one stage"),
                Level(
                    "stages",
                    meaning="several shared-memory stages keep the next K tiles' copies in flight during the MMA",
                    changes=(Change("policy", "stages", on=(2, 3, 4), off=1),),
                    entry="pipeline-stages",
                    requires=(("global_copy", 1),),
                ),
            ),
            level=lambda f: int((f["pipeline.stages"] or 1) >= 2),
        ),
        Mechanism(
            id="global_copy",
            title="global-to-shared copies",
            levels=(
                Level("plain loads"),
                Level(
                    "cp.async",
                    meaning="operand tiles are copied into shared memory by cp.async, without staging in registers",
                    entry="cp-async-pipeline",
                    requires=(("smem_tiling", 1),),
                    markers=Markers((), ("LDGSTS",)),
                ),
                Level(
                    "tma",
                    meaning="one thread loads whole tiles with TMA, completing on an mbarrier",
                    entry="tma-loads",
                    requires=(("smem_tiling", 1),),
                    markers=Markers(("cp.async.bulk.tensor",), ("UTMALDG",)),
                ),
            ),
            level=_copy_level,
        ),
        Mechanism(
            id="mma",
            title="matrix-multiply instruction",
            levels=(
                Level("fma"),
                Level(
                    "mma.sync",
                    meaning="tensor cores: ldmatrix into operand fragments and warp-level mma.sync",
                    entry="tensor-cores-instead-of-fma",
                    requires=(("smem_tiling", 1),),
                    markers=Markers(("mma.sync",), ("HMMA",)),
                ),
                Level(
                    "wgmma",
                    meaning="warpgroup MMAs (wgmma) reading both operands from swizzled shared memory",
                    entry="wgmma-instead-of-mma-sync",
                    requires=(("smem_tiling", 1), ("swizzle", 1)),
                    markers=Markers(("wgmma.mma_async",), ("HGMMA",)),
                    interface=("B",),  # wgmma reads B K-major: (N, K)
                ),
            ),
            level=lambda f: _MMA_LEVELS.get(f["mma.kind"], 0),
        ),
        Mechanism(
            id="swizzle",
            title="XOR-swizzled shared memory",
            levels=(
                Level("absent"),
                Level(
                    "swizzled",
                    meaning="shared-memory tiles are XOR-swizzled, so that ldmatrix reads are free of bank conflicts",
                    changes=(Change("policy", "swizzle", on=SWIZZLE_WIDTHS, off=0),),
                    entry="swizzle-shared-128b",
                    requires=(("smem_tiling", 1),),
                ),
            ),
            level=lambda f: int((f["smem.swizzle"] or 0) > 0),
        ),
        Mechanism(
            id="smem_tiling",
            title="shared-memory tiling",
            levels=(
                Level("absent"),
                Level(
                    "tiled",
                    meaning="block tiles of A and B are staged in shared memory and reused by the block's threads",
                    entry="shared-memory-staging",
                    markers=Markers((), ("LDS", "STS", "LDSM", "LDGSTS", "UTMALDG")),
                ),
            ),
            level=lambda f: int((f["smem.buffers"] or 0) > 0),
        ),
    )
}


@dataclass(frozen=True)
class MechanismStep:
    """A mechanism at one level above 0, by its name ``mechanism@level``: what one simplification removes and one
    skill adds. `rungs`: the lineage rungs (`RUNGS`) that add it."""

    mechanism: str
    level: int
    rungs: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return f"{self.mechanism}@{self.level}"

    @property
    def definition(self) -> Level:
        return MECHANISMS[self.mechanism].levels[self.level]

    @property
    def meaning(self) -> str:
        return self.definition.meaning

    @property
    def changes(self) -> tuple[Change, ...]:
        return self.definition.changes

    @property
    def entry(self) -> str | None:
        return self.definition.entry

    def realised_by(self) -> str:
        """The kernel changes that add this step, in words (``policy stages = 2/3/4 (removed: 1); rung
        cp_async_pipeline``)."""
        parts = [c.describe() for c in self.changes] + [f"rung {r}" for r in self.rungs]
        return "; ".join(parts)


@dataclass(frozen=True)
class Rung:
    """A rung of a library lineage (`argus.kernels.registry.LineageStep.mechanism`): the steps it adds to the rung
    before it, in the order a backward walk removes them, and the step whose curated entry names a move to it."""

    id: str
    steps: tuple[str, ...]
    named_by: str | None = None

    @property
    def entry(self) -> str | None:
        """The curated entry that names a move to this rung (the entry of its `named_by` step)."""
        return step(self.named_by).entry if self.named_by is not None else None


#: Every rung of the library's lineages. A rung whose two steps no kernel separates is split for the walk by a
#: bridge kernel (``tma_wgmma``: `argus.lineage.bridges`) or by a policy, parameter or IR operator (the pipeline's
#: stages, the register split, the tile order).
RUNGS: dict[str, Rung] = {
    r.id: r
    for r in (
        Rung("naive_fma", ()),
        # the grouped GEMM's first rung: every group's dense GEMM (the GEMM ladder's warp-specialized tile) in one grid
        Rung("expert_grid", ()),
        Rung("grouped_units", ("grouped_units@1",), named_by="grouped_units@1"),
        Rung("smem_tiling", ("smem_tiling@1",), named_by="smem_tiling@1"),
        Rung("mma_sync", ("mma@1",), named_by="mma@1"),
        Rung("cp_async_pipeline", ("global_copy@1", "pipeline@1"), named_by="global_copy@1"),
        Rung("smem_swizzle", ("swizzle@1",), named_by="swizzle@1"),
        Rung("tma_wgmma", ("global_copy@2", "mma@2"), named_by="mma@2"),
        Rung("warp_specialization", ("warp_specialization@1", "register_split@1"), named_by="warp_specialization@1"),
        Rung("persistent_grid", ("persistent@1", "tile_order@1"), named_by="persistent@1"),
        Rung("tma_store", ("epilogue@1",), named_by="epilogue@1"),
        # the attention lineage above its warp-specialized rung: FlashAttention-3's mechanisms, one a rung
        Rung("register_operand", ("register_operand@1",), named_by="register_operand@1"),
        Rung("pingpong", ("pingpong@1",), named_by="pingpong@1"),
        Rung("intra_overlap", ("intra_overlap@1",), named_by="intra_overlap@1"),
    )
}

#: The rungs a family's lineage starts at: they add no step (a rung's steps are what it adds to the rung before it).
BASE_RUNGS = tuple(r.id for r in RUNGS.values() if not r.steps)

#: Every step, by name, in `MECHANISMS` order (built on top first, foundations last).
STEPS: dict[str, MechanismStep] = {
    f"{m.id}@{level}": MechanismStep(m.id, level, tuple(r.id for r in RUNGS.values() if f"{m.id}@{level}" in r.steps))
    for m in MECHANISMS.values()
    for level in range(1, len(m.levels))
}


def step(name: str) -> MechanismStep:
    """The step called `name` (``"pipeline@1"``); `LineageError` ``LINEAGE_UNKNOWN_STEP`` for a name that is not in
    the vocabulary."""
    if name not in STEPS:
        raise LineageError(
            "LINEAGE_UNKNOWN_STEP",
            f"no mechanism step {name!r} in the vocabulary (argus.lineage.mechanisms)",
            f"one of: {', '.join(STEPS)}",
        )
    return STEPS[name]


def step_name(mechanism: str, level: int) -> str:
    """``mechanism@level``, checked against the vocabulary (`step`)."""
    return step(f"{mechanism}@{level}").name


def rung(rung_id: str) -> Rung:
    """The rung `rung_id` (a `LineageStep.mechanism`); `LineageError` ``LINEAGE_UNKNOWN_STEP`` for an unknown one."""
    if rung_id not in RUNGS:
        raise LineageError(
            "LINEAGE_UNKNOWN_STEP", f"no lineage rung {rung_id!r} in the vocabulary", f"one of: {', '.join(RUNGS)}"
        )
    return RUNGS[rung_id]


def rung_of_step(name: str) -> str | None:
    """The rung that adds the step `name`, if any (every step belongs to at most one rung)."""
    return next((r.id for r in RUNGS.values() if name in r.steps), None)


def _validate() -> None:
    """The table's own consistency, at import: requirements and rungs name known steps, changes are of a known kind,
    each rung's steps belong to no other rung."""
    for m in MECHANISMS.values():
        for level in m.levels[1:]:
            for need, minimum in level.requires:
                if need not in MECHANISMS or not 1 <= minimum < len(MECHANISMS[need].levels):
                    raise ValueError(f"{m.id} ({level.name}) requires an unknown step {need}@{minimum}")
            for change in level.changes:
                if change.kind not in ("policy", "param", "ir"):
                    raise ValueError(f"{m.id} ({level.name}): unknown change kind {change.kind!r}")
    seen: dict[str, str] = {}
    for r in RUNGS.values():
        for name in r.steps:
            if name not in STEPS:
                raise ValueError(f"rung {r.id} adds an unknown step {name!r}")
            if name in seen:
                raise ValueError(f"step {name} belongs to rungs {seen[name]} and {r.id}")
            seen[name] = r.id
        if r.named_by is not None and r.named_by not in r.steps:
            raise ValueError(f"rung {r.id} is named by {r.named_by!r}, which it does not add")


_validate()


def vocabulary_table() -> str:
    """The vocabulary as a Markdown table: one row per step (name, meaning, what adds it, curated entry)."""
    rows = ["| step | meaning | added by | curated entry |", "|---|---|---|---|"]
    for s in STEPS.values():
        rows.append(f"| `{s.name}` | {s.meaning} | {s.realised_by()} | {f'`{s.entry}`' if s.entry else '—'} |")
    return "\n".join(rows)


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
