"""What the planner chooses among and what the coder materializes: *arms* (actions with their parameters) and the
kernels they act on.

An `Arm` is one of

* ``policy`` — a knowledge-base entry's executable policy transform at one value (`argus.kb.ranked_actions`:
  ``pipeline-stages: stages=3``); the transform coder applies it with `argus.kb.transforms.apply`;
* ``lineage`` — a structural move: switch to the next rung of the kernel's lineage
  (`argus.kernels.registry.lineage`: each rung adds one mechanism, e.g. ``gemm_mma_sync -> gemm_cp_async``), named
  by the best-scoring applicable entry that describes that mechanism: the curated one (`Rung.entry`) or a mined
  skill whose forward step is part of the rung (`Rung.steps`), one arm per move — rungs and steps in the vocabulary
  of `argus.lineage.mechanisms`;
* ``rewrite`` — an applicable entry with no executable transform (``tma-loads``, ``epilogue-fusion``): only the
  LLM coder can materialize it, by rewriting the DSL source.

Each arm carries a *prior*: the retrieval score of its entry for the kernel as it stands (features from the IR, the
cost model's or the GPU's profile, the verifier's findings), which the bandit starts from.

A `KernelRef` names a kernel the loop can rebuild in any process: a library kernel (``gemm_cp_async``), a file
(``path/to/k.py:function``), or a generated source stored in the run (written to a file before it is loaded).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from argus.agent.errors import AgentError  # noqa: F401 - the agent modules import it from here too
from argus.lineage.mechanisms import RUNGS


def skill_step(entry: Any) -> str | None:
    """The ``mechanism@level`` a mined skill's forward step adds (None for a curated entry)."""
    provenance = getattr(entry, "provenance", None)
    if provenance is None or provenance.source != "mined":
        return None
    step = provenance.lineage.get("mechanism")
    return step if isinstance(step, str) else None


def rung_entries(mechanism: str, pool: Iterable[Any] | None) -> list[str]:
    """The ids of the entries that describe what a rung adds (`mechanism`: a `LineageStep.mechanism`, a rung of
    `argus.lineage.mechanisms.RUNGS`), curated first: the curated entry (`Rung.entry`) and the mined skills whose
    forward step is one of the rung's (`Rung.steps`). `pool` None stands for the shipped entries: the curated id only
    (as named, present or not). A rung the vocabulary does not know has no entries."""
    rung = RUNGS.get(mechanism)
    if rung is None:
        return []
    curated = [rung.entry] if rung.entry is not None else []
    if pool is None:
        return curated
    pool = list(pool)
    ids = [c for c in curated if any(getattr(e, "id", None) == c for e in pool)]
    return ids + sorted(e.id for e in pool if skill_step(e) is not None and skill_step(e) in rung.steps)


@dataclass(frozen=True)
class Arm:
    """One action the planner may choose: see the module docstring."""

    kind: str  # "policy" | "lineage" | "rewrite"
    entry_id: str
    policy: str | None = None
    value: Any = None
    kernel: str | None = None  # lineage: the library kernel of the next rung
    prior: float = 0.0
    title: str = ""

    @property
    def id(self) -> str:
        """A stable name, the same in every process and run: the bandit's key and the LLM's vocabulary."""
        if self.kind == "policy":
            value = list(self.value) if isinstance(self.value, tuple) else self.value
            return f"{self.entry_id}:{self.policy}={json.dumps(value, separators=(',', ':'))}"
        if self.kind == "lineage":
            return f"lineage:{self.kernel}"
        if self.kind == "start":
            return "start"
        return f"rewrite:{self.entry_id}"

    def describe(self) -> str:
        if self.kind == "policy":
            return f"set {self.policy} = {self.value!r} ({self.entry_id})"
        if self.kind == "lineage":
            return f"switch to {self.kernel}: {self.title} ({self.entry_id})"
        return f"rewrite the kernel to apply {self.entry_id}: {self.title}"

    def to_json(self) -> dict[str, Any]:
        value = list(self.value) if isinstance(self.value, tuple) else self.value
        return {
            "id": self.id,
            "kind": self.kind,
            "entry_id": self.entry_id,
            "policy": self.policy,
            "value": value,
            "kernel": self.kernel,
            "prior": round(float(self.prior), 4),
            "title": self.title,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Arm:
        value = data.get("value")
        return cls(
            data["kind"],
            data["entry_id"],
            data.get("policy"),
            tuple(value) if isinstance(value, list) else value,
            data.get("kernel"),
            float(data.get("prior") or 0.0),
            data.get("title") or "",
        )


START = Arm("start", "start", title="the starting kernel")


@dataclass(frozen=True)
class KernelRef:
    """A kernel the loop can rebuild anywhere: `library` (a library kernel's name), or `file` + `function`
    (a DSL file; a generated candidate's source is written to `file` first, and `generated` is set), traced with
    `params`."""

    library: str | None = None
    file: str | None = None
    function: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    generated: bool = False

    @property
    def name(self) -> str:
        return self.library or f"{self.file}:{self.function}"

    def with_params(self, params: Mapping[str, Any]) -> KernelRef:
        return KernelRef(self.library, self.file, self.function, dict(params), self.generated)

    def load(self, *, allow_generated: bool = False) -> Any:
        """The ``@argus.kernel`` function (imports the file for a file reference). Generated code is imported only
        where `allow_generated` says so — the gate's worker processes, after the restriction check; anywhere else
        it is `AgentError` ``AGENT_GENERATED_IN_PROCESS``."""
        from argus.kernels.registry import get_kernel, load

        if self.library is not None:
            return get_kernel(self.library).kernel
        if self.generated:
            if not allow_generated:
                raise AgentError(
                    "AGENT_GENERATED_IN_PROCESS",
                    f"refusing to import generated code ({self.file}) in the agent's own process",
                    "generated kernels are loaded only by the gate's worker processes",
                )
            from argus.agent.restricted import require_restricted

            require_restricted(Path(str(self.file)).read_text())
        target = load(f"{self.file}:{self.function}")
        return getattr(target, "kernel", target)

    def to_json(self) -> dict[str, Any]:
        return {
            "library": self.library,
            "file": self.file,
            "function": self.function,
            "params": self.params,
            "generated": self.generated,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> KernelRef:
        return cls(
            data.get("library"),
            data.get("file"),
            data.get("function"),
            dict(data.get("params") or {}),
            bool(data.get("generated", False)),
        )


def parse_target(target: str) -> KernelRef:
    """``NAME`` (a library kernel) or ``FILE.py:function`` -> a `KernelRef` at the kernel's own parameters."""
    from argus.kernels.registry import get_kernel

    if ":" in target and target.split(":", 1)[0].endswith(".py"):
        path, function = target.rsplit(":", 1)
        ref = KernelRef(file=path, function=function)
        fn = ref.load()
        if not (hasattr(fn, "trace") and hasattr(fn, "tensor_specs")):
            raise AgentError("AGENT_TARGET", f"{target} is not an @argus.kernel", "name an @argus.kernel function")
        return ref
    entry = get_kernel(target)
    return KernelRef(library=entry.name, params=dict(entry.params))


def kernel_source(ref: KernelRef, generated: str | None = None) -> str:
    """The DSL source the LLM coder is shown and the run store keeps: a generated module as is; else the kernel as
    a self-contained module (`argus.kernels.source.module_source`: with the constants, helpers and macros it
    uses)."""
    if generated is not None:
        return generated
    from argus.kernels.source import module_source

    return module_source(ref.load())


def task_for(
    fn: Any, params: Mapping[str, Any], *, sizes: Mapping[str, int] | None = None, reference: str | None = None
) -> Any:
    """The kernel's own task when it has a reference (``@argus.kernel(reference=...)`` or `reference`, a
    ``FILE.py:function``; at `sizes` or the decorator's: `argus.tasks.user`), else the built-in task whose tensors
    (names, extents, dtypes) are this kernel's parameters."""
    from argus.tasks.builtin import all_tasks, get_task
    from argus.tasks.user import user_task_name

    if reference or getattr(fn, "reference", None) is not None:
        spec = f"{fn.fn.__code__.co_filename}:{fn.name}"
        return get_task(user_task_name(spec, reference=reference, sizes=sizes))
    kernel = fn.trace(**params)
    mine = sorted((t.name, tuple(str(s) for s in t.shape), t.dtype.name) for t in kernel.tensors)
    for task in all_tasks():
        theirs = sorted((t.name, tuple(str(s) for s in t.shape), t.dtype) for t in task.tensors)
        if theirs == mine:
            return task
    raise AgentError(
        "AGENT_NO_TASK",
        f"no built-in task has the tensors of {kernel.name} ({', '.join(f'{n}{list(s)}:{d}' for n, s, d in mine)})",
        "give the kernel a reference (@argus.kernel(reference=fn, sizes={...}) or --reference FILE.py:fn), or "
        "optimize a kernel whose parameters match a built-in task (argus bench lists them)",
    )


def next_rung(ref: KernelRef) -> tuple[str, Any] | None:
    """(next kernel, its `LineageStep`) when `ref` is a library kernel with a later rung in a lineage."""
    if ref.library is None:
        return None
    from argus.kernels.registry import canonical_name, lineage, lineages

    library = canonical_name(ref.library)  # a run stored before a rename names the kernel by its old name
    for family in lineages():
        steps = lineage(family)
        names = [s.kernel for s in steps]
        if library in names:
            i = names.index(library)
            if i + 1 < len(steps):
                return steps[i + 1].kernel, steps[i + 1]
    return None


#: The retrieval prior of an arm that only the kernel's declared policies propose (no entry scored it): below
#: every applicable entry's score, so knowledge goes first and the neighbourhood search fills in.
DECLARED_PRIOR = 0.5


def available_arms(
    ref: KernelRef,
    *,
    profile: Mapping[str, Any] | None = None,
    findings: Any = None,
    rewrites: bool = False,
    rewrite_limit: int = 6,
    entries: Iterable[Any] | None = None,
    allow_generated: bool = False,
) -> list[Arm]:
    """The arms for `ref` as it stands, best prior first: every executable policy action (as
    `argus.kb.ranked_actions`), the next lineage rung when there is one, and with `rewrites` the best applicable
    entries without an executable transform (for the LLM coder).

    `entries`: the knowledge-base entries to plan from (`argus.kb.Entry` objects: curated, mined, or a selection),
    replacing the shipped ones in retrieval. A lineage move is offered when an entry describing its mechanism is
    among them (`rung_entries`: the curated one, or a mined skill of one of the rung's steps; an empty selection
    offers nothing), once, named by the best-scoring applicable one (a tie goes to the curated entry) with its
    score as the prior; when none of them applies to the kernel as it stands, by the curated entry (else the first
    skill) with prior 1.0. A policy action that two entries propose (the same policy and value: a mined pipelining
    skill beside ``pipeline-stages``) is one arm, named by the better-scoring entry. For a kernel that is not a
    library kernel, a policy it declares that no applicable entry searches is searched one step around its value
    (`argus.kb.declared_actions`, entry ids ``declared:POLICY``, prior `DECLARED_PRIOR`). Mined skills are ranked with
    the problem sizes of the kernel's task's first benchmark shape (`argus.kb.retrieve(shape=...)`)."""
    from argus.kb import actions, declared_actions, kernel_features, retrieve

    fn = ref.load(allow_generated=allow_generated)
    pool = list(entries) if entries is not None else None
    features = kernel_features(fn, profile=profile, findings=findings, **ref.params)
    shape = _bench_shape(fn, ref.params) if pool is not None and any(skill_step(e) for e in pool) else None
    matches = {m.entry.id: m for m in retrieve(features, k=None, entries=pool, shape=shape)}
    arms: list[Arm] = []
    proposed: dict[tuple[str, str], int] = {}  # (policy, value) -> index in arms
    proposers: set[str] = set()
    for match in matches.values():
        if match.transform_ready:
            for action in actions(match.entry, fn, ref.params):
                arm = Arm("policy", action.entry_id, action.policy, action.value, prior=match.score,
                          title=match.entry.title)  # fmt: skip
                key = (str(action.policy), json.dumps(arm.to_json()["value"], sort_keys=True))
                proposers.add(action.entry_id)
                if key not in proposed:
                    proposed[key] = len(arms)
                    arms.append(arm)
                elif arm.prior > arms[proposed[key]].prior:
                    arms[proposed[key]] = arm
    # a kernel of your own: every policy it declares that no applicable entry searches, one step from where it
    # stands (the library's kernels are searched by the curated entries written for them)
    searched = {policy for policy, _ in proposed}
    for action in declared_actions(fn, ref.params) if ref.library is None else ():
        if action.policy not in searched:
            arms.append(Arm("policy", action.entry_id, action.policy, action.value, prior=DECLARED_PRIOR,
                            title=f"the kernel's declared policy {action.policy}"))  # fmt: skip
    rung = next_rung(ref)
    moved: set[str] = set()
    if rung is not None:
        kernel, step = rung
        ids = rung_entries(step.mechanism, pool)
        if ids:
            fitting = [matches[i] for i in ids if i in matches]
            if fitting:
                best = max(fitting, key=lambda m: (m.score, m.entry.provenance.source == "curated"))
                entry_id, prior = best.entry.id, best.score
            else:
                entry_id, prior = ids[0], 1.0
            arms.append(Arm("lineage", entry_id, kernel=kernel, prior=prior, title=step.adds))
            moved = set(ids)
    if rewrites and matches:
        ready = {a.entry_id for a in arms} | proposers | moved  # transform-coder actions, the lineage move's entries
        extra = [m for m in matches.values() if m.entry.id not in ready]
        for m in extra[:rewrite_limit]:
            arms.append(Arm("rewrite", m.entry.id, prior=m.score, title=m.entry.title))
    return sorted(arms, key=lambda a: -a.prior)


def _bench_shape(fn: Any, params: Mapping[str, Any]) -> dict[str, int] | None:
    """The first benchmark shape of the kernel's task (None when no task matches or it has none)."""
    try:
        task = task_for(fn, params)
    except AgentError:
        return None
    sizes = task.bench_sizes[0] if task.bench_sizes else None
    return {str(k): int(v) for k, v in sizes.items()} if sizes else None
