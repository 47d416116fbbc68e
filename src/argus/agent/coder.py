"""Coders: turn the planner's arm into a candidate kernel (`Materialized`).

* `TransformCoder` (``transform``, the default): a ``policy`` arm goes through the entry's executable transform
  (`argus.kb.transforms.apply`: new parameters that trace and fit the budgets); a ``lineage`` arm switches to the
  next rung of the kernel's lineage (`argus.kernels.registry.lineage`) at that kernel's own parameters, except
  the policies the run tuned on the rung it leaves, which the next rung keeps where it declares them by the same
  parameters and traces and fits its budgets with them (`carry_tuned`; the candidate's notes name them). A
  ``rewrite`` arm has no executable transform: `CoderError` ``CODER_NO_TRANSFORM``.
* `LLMCoder` (``llm``): the model rewrites the DSL source, given the action, the entry (intent, risks, example),
  and the verifier's counterexamples and the gate's failure of the last rejected candidate. The answer's
  ```` ```python ```` block is checked by `argus.agent.restricted` (imports of argus / argus.lang / argus.layout /
  math only, no os/subprocess/socket/open/eval/exec/__import__/underscore attributes) and written to a file in the
  run's directory; only the gate's worker processes import it. An answer without a usable code block gets one
  retry; then the arm is materialized by the transform coder when it can be, else the candidate is invalid.
  Tag assertions the model adds (``T.assert_tag``) count only when the gate's verify stage verifies them.
  Secrets (`argus.agent.providers.secrets.scrub_secrets`) are scrubbed from the prompt (the source, the entry and
  the gate's feedback), from the answer before its code is extracted, and from every file written: a key a model
  echoes becomes ``[REDACTED:NAME]`` in the candidate, never the key.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from argus.agent.arms import AgentError, Arm, KernelRef, kernel_source
from argus.agent.providers.secrets import scrub_secrets


class CoderError(AgentError):
    """The arm could not be materialized (code ``CODER_*``): the candidate is recorded as invalid."""


@dataclass
class Materialized:
    """A candidate: the kernel to gate, its source (generated code, or the kernel function's source), whether it
    was generated (then it only runs in a worker), and notes (fallbacks, tag assertions added)."""

    ref: KernelRef
    source: str
    generated: bool = False
    notes: dict[str, Any] = field(default_factory=dict)


class TransformCoder:
    """Executable transforms and lineage moves (see the module docstring)."""

    name = "transform"

    def __init__(self, entries: Any = None, *, remote: Any = None, allow_generated: bool = False) -> None:
        #: entries by id that are not (or not only) the shipped ones: mined skills, a selection
        self.entries = {e.id: e for e in entries} if entries is not None else {}
        #: for a generated base kernel: ``remote(arm, base) -> params`` applies the transform in a worker process
        self.remote = remote
        self.allow_generated = allow_generated

    def materialize(self, arm: Arm, base: KernelRef, **_: Any) -> Materialized:
        from argus.kb import KBError, apply
        from argus.kernels.registry import get_kernel

        if arm.kind == "policy":
            if base.generated and not self.allow_generated:
                if self.remote is None:
                    raise CoderError(
                        "CODER_GENERATED_BASE", "a generated kernel is transformed only in a worker process"
                    )
                params = self.remote(arm, base)
            else:
                try:
                    entry = self.entries.get(arm.entry_id, arm.entry_id)
                    fn = base.load(allow_generated=self.allow_generated)
                    params = apply(entry, fn, base.params, value=arm.value)
                except KBError as e:
                    raise CoderError(f"CODER_{e.code}", e.message, e.hint) from None
            ref = base.with_params(params)
            return Materialized(ref, kernel_source(ref) if base.file is None else _file_source(base), base.generated)
        if arm.kind == "lineage":
            entry = get_kernel(str(arm.kernel))
            params, carried = carry_tuned(base, entry)
            ref = KernelRef(library=entry.name, params=params)
            return Materialized(ref, kernel_source(ref), notes={"carried": list(carried)} if carried else {})
        raise CoderError(
            "CODER_NO_TRANSFORM",
            f"{arm.entry_id} has no executable transform",
            "the llm coder can rewrite the kernel for it (--coder llm)",
        )


def carry_tuned(base: KernelRef, entry: Any) -> tuple[dict[str, Any], tuple[str, ...]]:
    """(parameters, policies carried) of the next rung `entry` (a library kernel) when the run moves there from
    `base`: every policy the run tuned on `base` (its value differs from `base`'s library parameters) that the next
    rung declares by the same parameters keeps its tuned value, where the rung traces and fits the budgets with it
    (else the tile shape goes back to the rung's own, then everything: `argus.kb.transforms.carry_into`)."""
    from argus.kb.transforms import carry_into
    from argus.kernels.registry import canonical_name, get_kernel

    if base.library is None:
        return dict(entry.params), ()
    try:
        source = get_kernel(canonical_name(base.library))
    except Exception:  # noqa: BLE001 - a base no longer in the library: nothing to carry
        return dict(entry.params), ()
    return carry_into(source.kernel, base.params, entry.kernel, dict(entry.params), tuned_from=dict(source.params))


def _file_source(ref: KernelRef) -> str:
    try:
        return Path(str(ref.file)).read_text()
    except OSError:
        return kernel_source(ref)


CODER_SYSTEM = (
    "You are the coder of argus, an agent that optimizes GPU kernels for NVIDIA Hopper written in argus's tile "
    "DSL (`import argus`, `import argus.lang as T`). You rewrite the kernel to apply one optimization. Rules: the "
    "module may import only argus, argus.lang (as T), argus.layout and math; no files, processes, sockets, "
    "eval/exec or names starting with an underscore; no classes, generator expressions (use a list), yield, "
    "async, global, del, assignments to attributes, or built-ins beyond plain ones such as range, len, min, max, "
    "abs, int, float, tuple, list, zip, enumerate. Keep the kernel's tensor parameters (names, shapes, dtypes) "
    "and its semantics; put the tile sizes you choose into the defaults of its integer parameters. You may add "
    "tag assertions (T.assert_tag) stating invariants; they count only if the verifier proves them. Answer with "
    "one ```python code block holding the whole module, then at most two sentences."
)


def coder_prompt(arm: Arm, base: KernelRef, source: str, entry: dict[str, Any] | None, feedback: list[str]) -> list:
    """The messages the LLM coder sends, scrubbed of secrets (a key that reached a rejection reason does not go
    back to the model)."""
    parts = [
        f"Action: {arm.describe()}",
        f"Current kernel ({base.name}, traced with {json.dumps(base.params, sort_keys=True)}):\n```python\n"
        f"{source.rstrip()}\n```",
    ]
    if entry is not None:
        keep = {k: entry.get(k) for k in ("id", "title", "intent", "risks", "example", "effect") if k in entry}
        parts.append("Knowledge-base entry:\n" + json.dumps(keep, indent=1, default=str)[:6000])
    if feedback:
        parts.append(
            "The previous candidate was rejected by the gate; fix what it says (counterexamples from the verifier):\n"
            + "\n".join(f"- {f}" for f in feedback)
        )
    parts.append("Write the whole rewritten module in one ```python block.")
    return [{"role": "system", "content": CODER_SYSTEM}, {"role": "user", "content": scrub_secrets("\n\n".join(parts))}]


def extract_code(text: str) -> str:
    """The first ```python (or bare ```) block of `text`; `CoderError` ``CODER_MALFORMED`` when there is none."""
    m = re.search(r"```(?:python|py)?[ \t]*\n(.*?)```", text, flags=re.S)
    if m is None or not m.group(1).strip():
        raise CoderError("CODER_MALFORMED", "the answer holds no ```python code block")
    return m.group(1)


class LLMCoder:
    """LLM rewrites of the DSL source (see the module docstring). Generated modules are written under
    `directory` (the run's directory), named by their content's hash."""

    name = "llm"

    def __init__(self, provider: Any, directory: Path | str, *, fallback: TransformCoder | None = None) -> None:
        self.provider = provider
        self.directory = Path(directory)
        self.fallback = fallback or TransformCoder()

    def write(self, source: str) -> Path:
        """Write generated `source`, scrubbed of secrets, to the run's directory (idempotent: the name is the
        scrubbed content's hash)."""
        source = scrub_secrets(source)
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / f"candidate_{hashlib.sha256(source.encode()).hexdigest()[:16]}.py"
        if not path.exists():
            path.write_text(source)
        return path

    def materialize(
        self,
        arm: Arm,
        base: KernelRef,
        *,
        base_source: str | None = None,
        feedback: list[str] | None = None,
        record: Any = None,
    ) -> Materialized:
        from argus.agent.planner import ask
        from argus.agent.providers.errors import ProviderError
        from argus.agent.restricted import check_source, kernel_functions, tag_assertions

        source = base_source if base_source is not None else kernel_source(base)
        entry = None
        try:
            from argus.kb import get_entry

            known = self.fallback.entries.get(arm.entry_id) if isinstance(self.fallback, TransformCoder) else None
            entry = (known or get_entry(arm.entry_id)).to_dict()
        except Exception:  # noqa: BLE001 - a lineage mechanism without an entry: the prompt goes without
            entry = None
        messages = coder_prompt(arm, base, source, entry, list(feedback or []))
        reason = None
        for attempt in range(2):
            try:
                completion = ask(self.provider, messages, record, "coder", max_tokens=4096)
            except ProviderError as e:
                reason = f"provider failed: [{e.code}] {e.message}"
                break
            text = scrub_secrets(completion.text)  # a key the model echoes goes no further
            try:
                code = extract_code(text)
                names = kernel_functions(code)
                if not names:
                    raise CoderError("CODER_MALFORMED", "the code defines no @argus.kernel function")
            except (CoderError, SyntaxError) as e:
                reason = scrub_secrets(f"malformed answer ({getattr(e, 'message', e)})")
                if attempt == 0:
                    messages = [
                        *messages,
                        {"role": "assistant", "content": text},
                        {"role": "user", "content": f"That answer could not be used: {reason}. Reply with the whole "
                         "module in one ```python block defining an @argus.kernel function."},
                    ]  # fmt: skip
                continue
            violations = check_source(code)
            if violations:
                from argus.agent.restricted import RestrictedCodeError

                raise RestrictedCodeError(violations)
            base_name = base.function or (base.library and base.load().name)
            function = base_name if base_name in names else names[0]
            path = self.write(code)
            ref = KernelRef(file=str(path), function=function, params={}, generated=True)
            added = tag_assertions(code) - tag_assertions(source)
            return Materialized(ref, code, generated=True, notes={"tag_assertions_added": max(0, added)})
        try:
            done = self.fallback.materialize(arm, base)
        except CoderError as e:
            raise CoderError("CODER_LLM_FAILED", f"the LLM coder gave no usable code: {reason}", e.message) from None
        done.notes["fallback"] = f"transform coder: {reason}"
        return done


def make_coder(kind: str, *, provider: Any = None, directory: Path | str | None = None, entries: Any = None) -> Any:
    """``transform`` or ``llm`` (which needs `provider` and a directory for generated modules); `entries`: the
    knowledge-base entries in use when they are not the shipped ones."""
    if kind == "transform":
        return TransformCoder(entries)
    if kind == "llm":
        if provider is None:
            raise CoderError("CODER_NO_PROVIDER", "the llm coder needs an LLM provider", "configure ARGUS_LLM_*")
        return LLMCoder(provider, directory or Path.cwd() / "argus-candidates", fallback=TransformCoder(entries))
    raise CoderError("CODER_UNKNOWN", f"no coder named {kind!r}", "transform or llm")
