"""Simplification operators: each removes exactly one mechanism from a kernel (lowers it one level), and
`check` proves it did — from the IR (every mechanism's level before and after, `argus.lineage.mechanisms`)
and from the generated code (the mechanism's marks gone from the CUDA source and SASS, every other present
mechanism's marks still there).

Three kinds, by what the DSL allows:

* **policy** operators set a policy the kernel declares (``@argus.kernel(policies=...)``) to the value that
  turns the mechanism off: ``stages -> 1`` (remove pipelining), ``tile_order -> row_major``, ``swizzle -> 0``;
* **param** operators set a trace parameter that switches a mechanism no declared policy names: the output dtype
  (``OUT`` -> the accumulator's) and the epilogue (``EPILOGUE`` ``"tma"`` -> ``"direct"``: C stored from registers
  instead of through shared memory and TMA stores);
* **IR** operators rewrite the traced IR where no policy names the mechanism: the register split
  (``setmaxnreg`` budgets of the warp roles) is dropped, the roles stay (`variants.without_register_split`);
* **structural** operators map a kernel to its predecessor in a lineage (`argus.kernels.registry.lineage`,
  with the bridges of `argus.lineage.bridges` splitting a rung that adds two mechanisms) along an edge that
  names the mechanism; they propose the predecessor with the policies carried over first and with its own
  defaults second, and the check rejects an edge that removes anything but that one mechanism.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from argus.kb.transforms import carry_options
from argus.lineage.mechanisms import MECHANISMS, Change, blockers, rung, state, step, step_name
from argus.lineage.variants import DerivedKernel, Variant, display_name, interface, task_for, without_register_split


@dataclass(frozen=True)
class Edge:
    """``kernel`` minus `mechanism` (from level `level` to `level - 1`) is ``predecessor``."""

    kernel: str
    predecessor: str
    mechanism: str
    level: int
    source: str  # where the edge comes from: "lineage gemm rung N" or "bridge"
    interface: tuple[str, ...] = ()  # tensors whose layout or dtype the mechanism itself changes


def _splits(rung_kernel: str) -> tuple[str, ...]:
    """The bridges (`argus.lineage.bridges.BRIDGES`) that split the library rung `rung_kernel`, in their order."""
    from argus.lineage.bridges import BRIDGES

    return tuple(name for name, (_, rung_name, _) in BRIDGES.items() if rung_name == rung_kernel)


def structural_steps(rung_id: str) -> tuple[str, ...]:
    """The steps of a lineage rung (`argus.lineage.mechanisms.RUNGS`) that only moving to another kernel removes (a
    structural operator's), in the order the walk removes them; the rung's other steps have a policy, parameter or
    IR operator that removes them first (the pipeline's stages, the register split, the tile order, the epilogue)."""
    structural = {step_name(op.mechanism, op.level) for op in operators() if op.kind == "structural"}
    return tuple(name for name in rung(rung_id).steps if name in structural)


def edges() -> tuple[Edge, ...]:
    """The lineage edges: every library lineage rung to the rung before it (through its bridges), one edge per
    structural step of the rung (`structural_steps`; a rung whose steps a policy or parameter removes has none), plus
    `gemm_persistent` -> `gemm_mma_sync` (the persistent grid)."""
    from argus.kernels.registry import lineage, lineages

    out: list[Edge] = []
    for family in lineages():
        rungs = lineage(family)
        for i in range(1, len(rungs)):
            prev, cur = rungs[i - 1], rungs[i]
            steps = [step(name) for name in structural_steps(cur.mechanism)]
            if not steps:
                continue
            chain = [cur.kernel, *_splits(cur.kernel), prev.kernel]
            if len(chain) - 1 != len(steps):
                continue  # a rung adding several mechanisms without a bridge: no single-mechanism edge
            for j, s in enumerate(steps):
                source = f"lineage {family} rung {i + 1} ({cur.mechanism})" + (" via bridge" if len(steps) > 1 else "")
                out.append(Edge(chain[j], chain[j + 1], s.mechanism, s.level, source, s.definition.interface))
    out.append(Edge("gemm_persistent", "gemm_mma_sync", "persistent", 1, "library: gemm_persistent is gemm_mma_sync"))
    return tuple(out)


def library_variant(name: str, params: dict[str, Any] | None = None) -> Variant:
    """The library kernel or bridge `name` as a `Variant` (its library params, then `params`)."""
    from argus.kernels.registry import get_kernel
    from argus.lineage.bridges import BRIDGES
    from argus.lineage.variants import task_for

    if name in BRIDGES:
        kernel, base = BRIDGES[name][0], {}
    else:
        entry = get_kernel(name)
        kernel, base = entry.kernel, dict(entry.params)
    merged = {**base, **(params or {})}
    try:
        from argus.tasks import task_of_kernel

        own = task_of_kernel(name).name
    except Exception:  # noqa: BLE001 - a bridge or a kernel no task names
        own = None
    shown = display_name(name, merged, kernel.defaults, [])
    return Variant(shown, kernel, merged, task_for(kernel, merged, prefer=own), name)


# --- operators ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Operator:
    """A simplification: removes `mechanism` from level `level` (to `level - 1`): the step ``mechanism@level`` of
    the vocabulary (`argus.lineage.mechanisms.STEPS`; an unknown one is refused when the operator is made)."""

    id: str
    mechanism: str
    level: int
    kind: str  # "policy", "param", "ir" or "structural"
    description: str

    def __post_init__(self) -> None:
        step_name(self.mechanism, self.level)

    def applies(self, variant: Variant, current: dict[str, int]) -> bool:
        return current.get(self.mechanism) == self.level

    def interface(self, variant: Variant) -> tuple[str, ...]:
        """The tensors whose shape or dtype this operator may change (the mechanism check rejects any other)."""
        return ()

    def candidates(self, variant: Variant) -> list[tuple[Variant, str]]:
        """Candidate kernels (with a note each), best first; empty when the operator cannot act here."""
        raise NotImplementedError

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "mechanism": self.mechanism,
            "level": self.level,
            "kind": self.kind,
            "description": self.description,
        }


@dataclass(frozen=True)
class PolicyOperator(Operator):
    """Set the declared policy `policy` to `value`."""

    policy: str = ""
    value: Any = None

    def applies(self, variant: Variant, current: dict[str, int]) -> bool:
        return super().applies(variant, current) and self.policy in getattr(variant.kernel, "policy_params", {})

    def candidates(self, variant: Variant) -> list[tuple[Variant, str]]:
        ref = variant.kernel.policy_params[self.policy]
        names = ref if isinstance(ref, tuple) else (ref,)
        values = self.value if isinstance(self.value, tuple) else (self.value,)
        params = {**variant.params, **dict(zip(names, values, strict=True))}
        base = variant.library or variant.kernel.name
        name = display_name(base, params, variant.kernel.defaults, _labels(variant.kernel))
        task = task_for(variant.kernel, params, prefer=variant.task)
        pairs = zip(names, values, strict=True)
        changes = [f"{n}={variant.params.get(n, variant.kernel.defaults.get(n))}->{v}" for n, v in pairs]
        note = f"policy {self.policy}: {', '.join(changes)}"
        return [(Variant(name, variant.kernel, params, task, variant.library), note)]


@dataclass(frozen=True)
class OutputCastOperator(Operator):
    """Write the outputs in the accumulator's dtype: set the trace parameter an output tensor's dtype names
    (``T.Tensor[("M", "N"), "OUT"]``) to the accumulator dtype; the task becomes the one with that output."""

    def _targets(self, variant: Variant) -> dict[str, str]:
        from argus.ir.nodes import Copy, Fill, Space, walk
        from argus.lineage.operators import features_of

        acc = sorted(features_of(variant)["dtypes.accumulator"])
        specs = getattr(variant.kernel, "tensor_specs", {})
        kernel = variant.trace()
        traced = {t.name: t for t in kernel.tensors}
        # outputs only: an operand whose dtype is also a parameter (IN) is not the output's cast
        stores = [s for s in walk(kernel.body) if isinstance(s, Copy | Fill) and s.dst.space == Space.GLOBAL]
        written = {s.dst.buffer.name for s in stores}
        out = {}
        for name, spec in specs.items():
            if isinstance(spec.dtype, str) and name in written and acc and traced[name].dtype.name != acc[0]:
                out[name] = spec.dtype
        return {"dtype": acc[0], **{f"tensor:{k}": v for k, v in out.items()}} if out and acc else {}

    def applies(self, variant: Variant, current: dict[str, int]) -> bool:
        return super().applies(variant, current) and bool(self._targets(variant))

    def interface(self, variant: Variant) -> tuple[str, ...]:
        return tuple(k.split(":", 1)[1] for k in self._targets(variant) if k.startswith("tensor:"))

    def candidates(self, variant: Variant) -> list[tuple[Variant, str]]:
        targets = self._targets(variant)
        if not targets:
            return []
        dtype = targets.pop("dtype")
        params = {**variant.params, **{param: dtype for param in targets.values()}}
        try:
            task = task_for(variant.kernel, params, prefer=None)
        except Exception:  # noqa: BLE001 - no task takes that output: nothing to propose
            return []
        base = variant.library or variant.kernel.name
        name = display_name(base, params, variant.kernel.defaults, _labels(variant.kernel))
        note = f"output dtype {', '.join(f'{p}={dtype}' for p in targets.values())}; task {variant.task} -> {task}"
        return [(Variant(name, variant.kernel, params, task, variant.library), note)]


@dataclass(frozen=True)
class ParamOperator(Operator):
    """Set the trace parameter `param` from `before` to `value` where the kernel takes it and is traced with `before`
    (a mechanism a parameter switches that no declared policy names; the task stays, the check still reads the
    levels off the IR)."""

    param: str = ""
    before: Any = None
    value: Any = None

    def _current(self, variant: Variant) -> Any:
        return variant.params.get(self.param, getattr(variant.kernel, "defaults", {}).get(self.param))

    def applies(self, variant: Variant, current: dict[str, int]) -> bool:
        has = self.param in getattr(variant.kernel, "defaults", {})
        return super().applies(variant, current) and has and self._current(variant) == self.before

    def candidates(self, variant: Variant) -> list[tuple[Variant, str]]:
        if self.param not in getattr(variant.kernel, "defaults", {}) or self._current(variant) != self.before:
            return []
        params = {**variant.params, self.param: self.value}
        base = variant.library or variant.kernel.name
        name = display_name(base, params, variant.kernel.defaults, _labels(variant.kernel))
        task = task_for(variant.kernel, params, prefer=variant.task)
        note = f"parameter {self.param}={self.before!r}->{self.value!r}"
        return [(Variant(name, variant.kernel, params, task, variant.library), note)]


@dataclass(frozen=True)
class RegisterSplitOperator(Operator):
    """Drop the ``setmaxnreg`` budgets of the warp roles (an IR rewrite; the roles stay). Without them every thread
    keeps the registers it gets at entry, which the kernel's resident blocks per SM (its launch bounds) fix: for a
    kernel launched for several, the same rewrite follows with fewer blocks, down to one (each a candidate the gate
    judges in turn: the first whose roles' fragments fit is taken). The blocks per SM are occupancy, not a
    mechanism of the vocabulary; the step's note says when they changed."""

    def candidates(self, variant: Variant) -> list[tuple[Variant, str]]:
        from argus.lineage.variants import MOST_REWRITTEN_BLOCKS, with_blocks_per_sm

        kernel = DerivedKernel(variant.kernel, without_register_split, "no_register_split")
        base = variant.library or variant.kernel.name
        name = display_name(base, variant.params, variant.kernel.defaults, _labels(kernel))
        note = "IR: Role.registers -> None"
        out = [(Variant(name, kernel, dict(variant.params), variant.task, variant.library), note)]
        blocks = min(getattr(variant.trace(), "blocks_per_sm", 1), MOST_REWRITTEN_BLOCKS + 1)
        for fewer in range(blocks - 1, 0, -1):
            label = f"blocks_per_sm_{fewer}"
            narrowed = DerivedKernel(kernel, with_blocks_per_sm(fewer), label)
            name = display_name(base, variant.params, variant.kernel.defaults, _labels(narrowed))
            note = f"IR: Role.registers -> None; blocks per SM {blocks} -> {fewer} (the registers at entry)"
            out.append((Variant(name, narrowed, dict(variant.params), variant.task, variant.library), note))
        return out


@dataclass(frozen=True)
class PredecessorOperator(Operator):
    """Map a lineage kernel to its predecessor along an edge labelled with this mechanism and level."""

    edge_list: tuple[Edge, ...] | None = field(default=None, compare=False)

    def _edge(self, variant: Variant) -> Edge | None:
        if variant.library is None:
            return None  # not a lineage kernel (a rewritten one keeps its library name; the check compares IR)
        names = {variant.library, _base(variant.kernel).name}  # a library entry may name another rung's kernel
        for e in self.edge_list if self.edge_list is not None else edges():
            if e.kernel in names and e.mechanism == self.mechanism and e.level == self.level:
                return e
        return None

    def interface(self, variant: Variant) -> tuple[str, ...]:
        edge = self._edge(variant)
        return edge.interface if edge is not None else ()

    def applies(self, variant: Variant, current: dict[str, int]) -> bool:
        return super().applies(variant, current) and self._edge(variant) is not None

    def candidates(self, variant: Variant) -> list[tuple[Variant, str]]:
        edge = self._edge(variant)
        if edge is None:
            return []
        pred = library_variant(edge.predecessor)
        out = []
        options = carry_options(variant.kernel, variant.params, pred.kernel, pred.params)
        everything = options[0][1]
        for params, policies in options:
            if policies == everything:
                note = f"policies carried over ({', '.join(policies) or 'none shared'})"
            elif policies:
                note = f"{', '.join(policies)} carried over, {edge.predecessor}'s own tile shape"
            else:
                note = f"{edge.predecessor}'s own policy values"
            try:
                pred.kernel.trace(**params)
            except Exception:  # noqa: BLE001 - a carried value the predecessor cannot trace: try its own
                continue
            name = display_name(edge.predecessor, params, pred.kernel.defaults, [])
            out.append((Variant(name, pred.kernel, params, pred.task, edge.predecessor), f"{edge.source}; {note}"))
        return out


def _base(kernel: Any) -> Any:
    while isinstance(kernel, DerivedKernel):
        kernel = kernel.base
    return kernel


def _labels(kernel: Any) -> list[str]:
    out = []
    while isinstance(kernel, DerivedKernel):
        out.append(kernel.label)
        kernel = kernel.base
    return out[::-1]


def _change(name: str, kind: str) -> Change:
    """The vocabulary's `kind` change of step `name` (the policy or parameter an operator sets back)."""
    (change,) = [c for c in step(name).changes if c.kind == kind]
    return change


def _policy(operator_id: str, name: str, description: str) -> PolicyOperator:
    """The operator that sets the policy adding step `name` to the value that removes it (the vocabulary's)."""
    s, change = step(name), _change(name, "policy")
    return PolicyOperator(operator_id, s.mechanism, s.level, "policy", description, change.name, change.off)


def _param(operator_id: str, name: str, description: str) -> ParamOperator:
    """The operator that sets the parameter adding step `name` from its value to the one that removes it."""
    s, change = step(name), _change(name, "param")
    return ParamOperator(operator_id, s.mechanism, s.level, "param", description, change.name, change.on[0], change.off)


def _structural(operator_id: str, name: str, description: str) -> PredecessorOperator:
    s = step(name)
    return PredecessorOperator(operator_id, s.mechanism, s.level, "structural", description)


def operators() -> tuple[Operator, ...]:
    """Every operator, in the order the walk tries them: the output cast (no rung adds it), then the lineage's
    mechanisms from its last rung down (the TMA-store epilogue, the persistent grid's tile order and grid, the
    grouped GEMM's units, the register split and warp roles, ...), so that the walk from the persistent expert
    peels the rungs in reverse. Each removes one step of the vocabulary (`argus.lineage.mechanisms`), and a policy
    or parameter operator sets the value the vocabulary says removes it."""
    return (
        OutputCastOperator("f32-output", "output_cast", 1, "param", "write the output in the accumulator's dtype"),
        _param(
            "tma-store-to-direct",
            "epilogue@1",
            "store C from registers instead of through shared memory and TMA stores",
        ),
        _policy("default-tile-order", "tile_order@1", "tile order -> row major"),
        _structural("plain-grid", "persistent@1", "persistent grid -> one block per tile"),
        _structural("grid-per-group", "grouped_units@1", "units over device-side tile counts -> a grid per group"),
        _param("overlap-to-in-order", "intra_overlap@1", "P V of the previous tile waited for before the softmax"),
        _param("free-running-consumers", "pingpong@1", "consumer warpgroups issue their MMAs without turns"),
        _structural("p-through-shared", "register_operand@1", "P through shared memory as the MMA's A operand"),
        RegisterSplitOperator(
            "remove-register-split", "register_split", 1, "ir", "drop the setmaxnreg budgets of the warp roles"
        ),
        _structural("merge-warp-roles", "warp_specialization@1", "merge producer and consumer roles"),
        _policy("remove-pipelining", "pipeline@1", "stages -> 1"),
        _structural("tma-to-cp-async", "global_copy@2", "TMA loads -> cp.async"),
        _structural("wgmma-to-mma-sync", "mma@2", "wgmma -> ldmatrix + mma.sync"),
        _policy("remove-swizzle-policy", "swizzle@1", "swizzle -> none"),
        _structural("remove-swizzle", "swizzle@1", "swizzled shared memory -> plain"),
        _structural("cp-async-to-plain-loads", "global_copy@1", "cp.async -> plain loads"),
        _structural("mma-sync-to-fma", "mma@1", "mma.sync -> per-thread FMA"),
        _structural("remove-smem-tiling", "smem_tiling@1", "shared-memory tiles -> operands from global"),
    )


def get_operator(operator_id: str) -> Operator:
    from argus.lineage.errors import LineageError

    for op in operators():
        if op.id == operator_id:
            return op
    raise LineageError("LINEAGE_UNKNOWN_OPERATOR", f"no operator {operator_id!r}", ", ".join(o.id for o in operators()))


# --- the mechanism check -------------------------------------------------------------------------------------


@dataclass
class Check:
    """The mechanism check of one candidate: `ok` when exactly `mechanism` went down one level (IR) and the
    generated code agrees; `reason` says what failed. `ir_before`/`ir_after`: every mechanism's level;
    `code`: the markers looked for and found (or why the code was not checked)."""

    ok: bool
    reason: str
    mechanism: str
    ir_before: dict[str, int]
    ir_after: dict[str, int]
    removed: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    code: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "reason": self.reason,
            "mechanism": self.mechanism,
            "ir_before": self.ir_before,
            "ir_after": self.ir_after,
            "removed": self.removed,
            "added": self.added,
            "code": self.code,
        }


def features_of(variant: Variant) -> Any:
    from argus.kb.features import kernel_features

    return kernel_features(variant.trace())


def generated(variant: Variant) -> tuple[str, dict[str, int]] | str:
    """(CUDA source, SASS opcode counts) of the variant, or why there are none."""
    try:
        from argus.backend.cuda.codegen import compile_kernel

        compiled = compile_kernel(variant.trace())
        return compiled.generated.source if hasattr(compiled, "generated") else compiled.source, dict(
            compiled.instruction_mix()
        )
    except Exception as e:  # noqa: BLE001 - no toolchain or a construct not lowered: stated, IR check stands
        return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"


def check(
    before: Variant, after: Variant, mechanism: str, level: int, *, code: bool = True, allowed: tuple[str, ...] = ()
) -> Check:
    """Does `after` differ from `before` by exactly `mechanism` lowered from `level` to `level - 1`?

    IR: every mechanism's level from the features; the one named must drop by one, no other may change.
    Code (when `code`): the markers of `mechanism` at `level` must be in `before`'s generated code and gone from
    `after`'s; the markers of every mechanism still present in `after` must still be there. Interface: the tensors'
    shapes and dtypes must be equal, except those in `allowed` (the operator's `interface`: B's layout for
    wgmma -> mma.sync, the output's dtype for the output cast)."""
    s0, s1 = state(features_of(before)), state(features_of(after))
    changed = {m: (s0[m], s1[m]) for m in s0 if s0[m] != s1[m]}
    removed = [
        f"{m} ({MECHANISMS[m].level_name(a)} -> {MECHANISMS[m].level_name(b)})"
        for m, (a, b) in changed.items()
        if b < a
    ]
    added = [
        f"{m} ({MECHANISMS[m].level_name(a)} -> {MECHANISMS[m].level_name(b)})"
        for m, (a, b) in changed.items()
        if b > a
    ]
    result = Check(False, "", mechanism, s0, s1, removed, added)
    if s0.get(mechanism) != level:
        result.reason = f"the kernel has {mechanism} at level {s0.get(mechanism)}, not {level}"
        return result
    if not changed:
        result.reason = "removes no mechanism (the IR's mechanisms are unchanged)"
        return result
    if added:
        result.reason = f"adds {', '.join(added)}: a simplification only removes"
        return result
    if set(changed) != {mechanism} or changed[mechanism] != (level, level - 1):
        what = ", ".join(removed)
        result.reason = (
            f"removes {len(changed)} mechanisms ({what}), not exactly {mechanism}"
            if len(changed) > 1
            else (f"removes {what}, not {mechanism} from level {level} to {level - 1}")
        )
        return result
    t0, t1 = interface(before.kernel, before.params), interface(after.kernel, after.params)
    moved = sorted(n for n in set(t0) | set(t1) if t0.get(n) != t1.get(n) and n not in allowed)
    if moved:
        what = ", ".join(f"{n} {t0.get(n)} -> {t1.get(n)}" for n in moved)
        result.reason = f"changes the kernel's interface beyond the mechanism ({what})"
        return result
    if code:
        g0, g1 = generated(before), generated(after)
        if isinstance(g0, str) or isinstance(g1, str):
            result.code = {"checked": False, "why": g0 if isinstance(g0, str) else g1}
        else:
            problems, looked = _code_problems(g0, g1, mechanism, level, s1)
            result.code = {"checked": True, "looked_for": looked, "problems": problems}
            if problems:
                result.reason = "generated code: " + "; ".join(problems)
                return result
    blocked = blockers(s0, mechanism, level - 1)
    if blocked:
        result.reason = f"removes {mechanism} while {', '.join(blocked)} still needs it"
        return result
    result.ok = True
    result.reason = f"exactly {mechanism} removed ({MECHANISMS[mechanism].level_name(level)} -> " + (
        f"{MECHANISMS[mechanism].level_name(level - 1)})"
    )
    return result


def _present(gen: tuple[str, dict[str, int]], markers: Any) -> tuple[bool, list[str]]:
    source, mix = gen
    missing = [s for s in markers.source if s not in source]
    if markers.sass_any and not any(mix.get(op, 0) for op in markers.sass_any):
        missing.append("SASS " + "|".join(markers.sass_any))
    return not missing, missing


def _code_problems(g0, g1, mechanism: str, level: int, after_state: dict[str, int]) -> tuple[list[str], list[str]]:
    problems: list[str] = []
    looked: list[str] = []
    markers = MECHANISMS[mechanism].markers.get(level)
    if markers is not None:
        looked.append(f"{mechanism}@{level}: source {list(markers.source)}, SASS any of {list(markers.sass_any)}")
        ok, missing = _present(g0, markers)
        if not ok:
            problems.append(f"{mechanism} not visible in the code before ({', '.join(missing)})")
        source1, mix1 = g1
        still = [s for s in markers.source if s in source1]
        still += [f"SASS {op} x{mix1[op]}" for op in markers.sass_any if mix1.get(op, 0)]
        if mechanism == "smem_tiling" or not markers.source:
            still = [s for s in still if s.startswith("SASS")] if markers.sass_any else still
        if markers.source or markers.sass_any:
            if markers.source and any(s in source1 for s in markers.source):
                problems.append(f"{mechanism} still in the generated source after ({', '.join(still)})")
            elif not markers.source and any(mix1.get(op, 0) for op in markers.sass_any):
                problems.append(f"{mechanism} still in the SASS after ({', '.join(still)})")
    for other, lvl in after_state.items():
        if other == mechanism or lvl == 0:
            continue
        m = MECHANISMS[other].markers.get(lvl)
        if m is None:
            continue
        looked.append(f"{other}@{lvl} kept: source {list(m.source)}, SASS any of {list(m.sass_any)}")
        ok, missing = _present(g1, m)
        if not ok:
            problems.append(f"{other} gone from the generated code too ({', '.join(missing)})")
    return problems, looked
