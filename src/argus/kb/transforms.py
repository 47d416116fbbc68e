"""Executable transforms: the part of an entry the transform coder can apply today.

A *policy transform* names one of the kernel policies of `argus.ir.nodes.Policies` (``stages``,
``tile_shape``, ``tile_order``, ``swizzle``, ``unroll`` ...) and candidate values. Applying it to
a kernel that declares that policy (``@argus.kernel(policies={"stages": "STAGES"})``) sets the
parameter(s) the policy names and traces the kernel again: the result is the new parameter set,
guaranteed to trace, with the policy at the requested value. A kernel that does not declare the
policy, a value of the wrong kind, or a value the tracer rejects (a tile shape the atoms cannot
tile, shared memory over budget) each give a `KBError` with its own code and the reason.

Structural rewrites (introducing TMA, warp roles, a new loop structure) are not executable yet;
their entries say ``transform.kind = "none"`` and why, and `apply` refuses them by name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from argus.atoms.swizzle import SWIZZLE_WIDTHS
from argus.diagnostics import ArgusError
from argus.kb.errors import KBError
from argus.kb.schema import Entry, _policy_value_ok


@dataclass(frozen=True)
class Action:
    """One executable action: set `policy` to `value`, as entry `entry_id` proposes."""

    entry_id: str
    policy: str
    value: Any

    def __str__(self) -> str:
        return f"{self.entry_id}: {self.policy}={self.value!r}"


def _entry(entry_or_action: Any) -> tuple[Entry, Any]:
    from argus.kb.store import get_entry

    if isinstance(entry_or_action, Action):
        return get_entry(entry_or_action.entry_id), entry_or_action.value
    if isinstance(entry_or_action, Entry):
        return entry_or_action, None
    if isinstance(entry_or_action, str):
        return get_entry(entry_or_action), None
    raise KBError("KB_TRANSFORM_TARGET", f"cannot apply {entry_or_action!r}", "pass an Entry, an Action or an entry id")


def _function(kernel_entry: Any, params: dict[str, Any] | None) -> tuple[Any, dict[str, Any]]:
    from argus.kernels.registry import LibraryKernel

    if isinstance(kernel_entry, LibraryKernel):
        return kernel_entry.kernel, dict(kernel_entry.params if params is None else params)
    if hasattr(kernel_entry, "trace") and hasattr(kernel_entry, "policy_params"):
        return kernel_entry, dict(params or {})
    raise KBError(
        "KB_TRANSFORM_TARGET",
        f"cannot transform {kernel_entry!r}",
        "pass a library kernel (argus.kernels.get_kernel) or an @argus.kernel",
    )


def current_value(function: Any, policy: str, params: dict[str, Any]) -> Any:
    """The value `policy` has under `params` (the kernel's defaults for parameters not given)."""
    ref = function.policy_params[policy]
    values = {**function.defaults, **params}
    if isinstance(ref, tuple):
        return tuple(values[r] for r in ref)
    return values[ref]


def apply(
    entry_or_action: Any,
    kernel_entry: Any,
    params: dict[str, Any] | None = None,
    value: Any = None,
    *,
    check_budgets: bool = True,
) -> dict[str, Any]:
    """The parameter set of `kernel_entry` (a `LibraryKernel` or an ``@argus.kernel``) after the
    policy transform of `entry_or_action` (an `Entry`, an entry id, or an `Action`, which carries
    its value) sets its policy to `value`. `params`: the parameters to start from (default: the
    library kernel's). Without a value, the first candidate that differs from the current value and
    traces is taken. The result traces, its traced policy equals the value asked for, and (with
    `check_budgets`) it fits the shared-memory and register budgets the verifier checks."""
    declared = _declared_policy(entry_or_action)
    if declared is not None:
        return _apply_declared(declared, kernel_entry, params, value if value is not None else _value(entry_or_action),
                               check_budgets)  # fmt: skip
    entry, action_value = _entry(entry_or_action)
    if value is None:
        value = action_value
    transform = entry.transform
    if transform.kind != "policy":
        raise KBError(
            "KB_TRANSFORM_NONE",
            f"entry {entry.id!r} has no executable transform",
            transform.reason,
        )
    function, start = _function(kernel_entry, params)
    policy = transform.policy
    assert policy is not None  # a policy transform always names its policy (schema)
    if policy not in function.policy_params:
        declared = ", ".join(sorted(function.policy_params)) or "none"
        raise KBError(
            "KB_TRANSFORM_NO_POLICY",
            f"kernel {function.name} does not declare the policy {policy!r} that entry {entry.id!r} changes",
            f"declare it: @argus.kernel(policies={{{policy!r}: ...}}) naming the parameter(s) that carry it",
            requirement=f"a kernel declaring {policy!r}",
            actual=f"declared policies: {declared}",
        )
    if value is None:
        current = current_value(function, policy, start)
        reasons = []
        for candidate in transform.candidates:
            if candidate == current:
                continue
            try:
                return _apply_value(entry, function, policy, start, candidate, check_budgets)
            except KBError as err:
                reasons.append(f"{candidate!r}: {err.message}")
        raise KBError(
            "KB_TRANSFORM_VALUE",
            f"no candidate of entry {entry.id!r} applies to {function.name} (current {policy} = {current!r})",
            "; ".join(reasons) or "every candidate equals the current value",
        )
    return _apply_value(entry, function, policy, start, value, check_budgets)


def _over_budget(kernel: Any) -> list[Any]:
    """The verifier's budget errors (shared memory, registers) of a traced kernel."""
    from argus.verify import verify_kernel

    return [f for f in verify_kernel(kernel, checks=("budget",)).findings if f.is_error]


def _apply_value(
    entry: Entry | None, function: Any, policy: str, start: dict[str, Any], value: Any, check_budgets: bool = True
) -> dict[str, Any]:
    ref = function.policy_params[policy]
    plain = list(value) if isinstance(value, tuple) else value
    wrong = _policy_value_ok(policy, plain)
    if wrong is None and isinstance(ref, tuple) and len(plain) != len(ref):
        wrong = f"{policy} of {function.name} has {len(ref)} values ({', '.join(ref)}), found {value!r}"
    if wrong is not None:
        raise KBError(
            "KB_TRANSFORM_VALUE",
            f"invalid value for policy {policy!r} of {function.name}: {wrong}",
            f"candidates of entry {entry.id!r}: {list(entry.transform.candidates)}" if entry is not None else None,
            actual=value,
        )
    new = dict(start)
    if isinstance(ref, tuple):
        for name, v in zip(ref, plain, strict=True):
            new[name] = v
    else:
        new[ref] = value
    stages = function.policy_params.get("stages")
    lowerable = policy != "stages" and isinstance(stages, str) and isinstance(new.get(stages), int)
    while True:
        # a tile that does not fit in shared memory at this pipeline depth keeps the deepest pipeline that fits
        # (at least two stages, so that it stays a pipeline); the returned parameters say so
        shallower = lowerable and new[stages] > 2
        try:
            kernel = function.trace(**new)
        except ArgusError as err:
            if shallower and err.code == "DSL_SMEM_BUDGET":
                new[stages] -= 1
                continue
            raise KBError(
                "KB_TRANSFORM_TRACE",
                f"{function.name} with {policy} = {value!r} does not trace: [{err.code}] {err.message}",
                err.hint or "choose another value",
                actual=value,
            ) from None
        over = _over_budget(kernel) if check_budgets else []
        if shallower and over and all(f.code == "BUDGET_SMEM" for f in over):
            new[stages] -= 1
            continue
        break
    got = getattr(kernel.policies, policy)
    got = got.value if hasattr(got, "value") else got
    want = tuple(value) if isinstance(value, list) else value
    if got != want:
        raise KBError(
            "KB_TRANSFORM_TRACE",
            f"{function.name} traced with {policy} = {got!r}, not the {want!r} asked for",
            actual=got,
        )
    if over:
        raise KBError(
            "KB_TRANSFORM_BUDGET",
            f"{function.name} with {policy} = {value!r} is over budget: [{over[0].code}] {over[0].message}",
            over[0].hint,
            actual=value,
        )
    return new


def actions(
    entry: Entry | str, kernel_entry: Any, params: dict[str, Any] | None = None, *, check_budgets: bool = True
) -> list[Action]:
    """Every action of `entry` that applies to `kernel_entry` as it stands: one per candidate
    value that differs from the current value, traces and (with `check_budgets`) fits the budgets;
    empty when the kernel does not declare the policy or the entry has no executable transform."""
    e, _ = _entry(entry)
    if e.transform.kind != "policy":
        return []
    function, start = _function(kernel_entry, params)
    policy = e.transform.policy
    if policy not in function.policy_params:
        return []
    current = current_value(function, policy, start)
    out = []
    for candidate in e.transform.candidates:
        if candidate == current:
            continue
        try:
            _apply_value(e, function, policy, start, candidate, check_budgets)
        except KBError:
            continue
        out.append(Action(e.id, policy, candidate))
    return out


def ranked_actions(
    kernel_entry: Any,
    params: dict[str, Any] | None = None,
    *,
    profile: Any = None,
    findings: Any = None,
    check_budgets: bool = True,
) -> list[tuple[Any, Action]]:
    """The executable arms for a planner: (match, action) for every applicable entry with a policy
    transform this kernel declares, and every candidate value of it that applies, best match first
    (candidates in the entry's order)."""
    from argus.kb.features import kernel_features
    from argus.kb.retrieval import retrieve

    function, start = _function(kernel_entry, params)
    features = kernel_features(function, profile=profile, findings=findings, **start)
    out = []
    for match in retrieve(features, k=None):
        if match.transform_ready:
            out += [(match, a) for a in actions(match.entry, function, start, check_budgets=check_budgets)]
    return out


#: The entry id of an action on a policy the kernel declares, with no knowledge-base entry behind it
#: (``declared:stages``): what `declared_actions` offers for a kernel of your own.
DECLARED = "declared:"


def _declared_policy(entry_or_action: Any) -> str | None:
    ident = entry_or_action.entry_id if isinstance(entry_or_action, Action) else entry_or_action
    return ident[len(DECLARED) :] if isinstance(ident, str) and ident.startswith(DECLARED) else None


def _value(entry_or_action: Any) -> Any:
    return entry_or_action.value if isinstance(entry_or_action, Action) else None


def _apply_declared(
    policy: str, kernel_entry: Any, params: dict[str, Any] | None, value: Any, check_budgets: bool
) -> dict[str, Any]:
    function, start = _function(kernel_entry, params)
    if policy not in function.policy_params:
        raise KBError(
            "KB_TRANSFORM_NO_POLICY",
            f"kernel {function.name} does not declare the policy {policy!r}",
            f"declare it: @argus.kernel(policies={{{policy!r}: ...}}) naming the parameter(s) that carry it",
        )
    if value is None:
        raise KBError("KB_TRANSFORM_VALUE", f"setting the declared policy {policy!r} needs a value")
    return _apply_value(None, function, policy, start, value, check_budgets)


def _neighbours(policy: str, current: Any) -> list[Any]:
    """The values next to `current` a search tries first: halved and doubled sizes (one tile dimension at a
    time), one pipeline stage more or less, the other swizzles, tile orders and persistence."""
    from argus.ir.nodes import TileOrder

    if policy == "tile_shape" and isinstance(current, tuple):
        out = []
        for i, v in enumerate(current):
            for w in (v // 2, v * 2):
                if 1 <= w <= 1024 and w != v:
                    out.append(tuple(w if j == i else x for j, x in enumerate(current)))
        return out
    if policy == "stages" and isinstance(current, int):
        return [v for v in (current - 1, current + 1) if 1 <= v <= 8]
    if policy == "unroll" and isinstance(current, int):
        return [v for v in (current // 2, current * 2) if 1 <= v <= 64 and v != current]
    if policy == "swizzle":
        return [v for v in SWIZZLE_WIDTHS if v != current]
    if policy == "tile_order":
        return [o.value for o in TileOrder if o.value != current]
    if policy == "persistent" and isinstance(current, bool):
        return [not current]
    return []  # register splits and warp roles: a knowledge-base entry says which values make sense


def declared_actions(kernel_entry: Any, params: dict[str, Any] | None = None) -> list[Action]:
    """An action for every value next to the current one (`_neighbours`) of every policy the kernel declares
    (``@argus.kernel(policies=...)``) that traces and fits the budgets: how a kernel of your own is searched
    when no knowledge-base entry applies to it. Their entry ids are ``declared:POLICY``."""
    function, start = _function(kernel_entry, params)
    out = []
    for policy, ref in function.policy_params.items():
        names = ref if isinstance(ref, tuple) else (ref,)
        if not all(isinstance(n, str) and n in function.defaults for n in names):
            continue  # a policy fixed by the kernel (``"persistent": True``), not carried by a parameter
        current = current_value(function, policy, start)
        for value in _neighbours(policy, current):
            try:
                _apply_value(None, function, policy, start, list(value) if isinstance(value, tuple) else value)
            except KBError:
                continue
            out.append(Action(f"{DECLARED}{policy}", policy, value))
    return out


def carried_policies(
    source: Any, source_params: dict[str, Any], target: Any, *, tuned_from: dict[str, Any] | None = None
) -> dict[str, dict[str, Any]]:
    """policy -> {parameter: value}: every policy that `source` and `target` (traceable kernels) both declare by the
    same parameters, with the value it has in `source` under `source_params` (its defaults where they say nothing).
    With `tuned_from` (the parameters `source` started from), only the policies whose value differs from that start:
    what a search tuned, not what `source`'s own defaults happen to be."""
    mine = getattr(source, "policy_params", {})
    theirs = getattr(target, "policy_params", {})
    out: dict[str, dict[str, Any]] = {}
    for policy, ref in mine.items():
        if theirs.get(policy) != ref:
            continue  # not declared by the target, or by other parameters there
        names = ref if isinstance(ref, tuple) else (ref,)
        if not all(isinstance(n, str) and n in source.defaults and n in target.defaults for n in names):
            continue  # a policy fixed by a kernel (``"persistent": True``), not carried by a parameter
        value = current_value(source, policy, source_params)
        if tuned_from is not None and value == current_value(source, policy, tuned_from):
            continue
        values = value if isinstance(ref, tuple) else (value,)
        out[policy] = dict(zip(names, values, strict=True))
    return out


def carry_options(
    source: Any,
    source_params: dict[str, Any],
    target: Any,
    target_params: dict[str, Any],
    *,
    tuned_from: dict[str, Any] | None = None,
) -> list[tuple[dict[str, Any], tuple[str, ...]]]:
    """The parameter sets to try for `target` when a kernel is replaced by another rung of its lineage, most carried
    first, each with the policies it carries (`carried_policies`): every carried policy; every one but the tile shape
    (a tile that suits one mechanism may not suit the next); none (`target_params` alone). Sets equal to an earlier
    one (with the target's defaults) are dropped. Tracing and budgets are the caller's to check."""
    carried = carried_policies(source, source_params, target, tuned_from=tuned_from)
    kept = tuple(p for p in carried if p != "tile_shape")
    out: list[tuple[dict[str, Any], tuple[str, ...]]] = []
    seen: list[dict[str, Any]] = []  # each option's values with the target's defaults: equal sets are one option
    for policies in (tuple(carried), kept, ()):
        params = {**target_params, **{k: v for p in policies for k, v in carried[p].items()}}
        effective = {**target.defaults, **params}
        if effective not in seen:
            seen.append(effective)
            out.append((params, policies))
    return out


def carry_into(
    source: Any,
    source_params: dict[str, Any],
    target: Any,
    target_params: dict[str, Any],
    *,
    tuned_from: dict[str, Any] | None = None,
    check_budgets: bool = True,
) -> tuple[dict[str, Any], tuple[str, ...]]:
    """(parameters, the policies carried): the first of `carry_options` that traces and (with `check_budgets`) fits
    the shared-memory and register budgets; `target_params` alone when none that carries a policy does."""
    for params, policies in carry_options(source, source_params, target, target_params, tuned_from=tuned_from):
        if not policies:
            break
        try:
            kernel = target.trace(**params)
        except Exception:  # noqa: BLE001 - a carried value the target cannot trace: try one that carries less
            continue
        if check_budgets and _over_budget(kernel):
            continue
        return params, policies
    return dict(target_params), ()
