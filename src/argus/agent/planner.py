"""Planners: pick the next arm (`argus.agent.arms.Arm`) from the state of the run.

* `BanditPlanner` (``bandit``, the embedded default, no LLM): UCB1 over the arms applicable to the current kernel,
  with the retrieval score of each arm's knowledge-base entry as a prior. Each arm's value is
  ``(sum of its advantages + w * prior') / (pulls + 1)`` — the prior (rescaled to [0, 1] over the arms on offer)
  counts as one virtual pull of weight `prior_weight`; `learned` shifts it by what earlier problems of the same
  class taught, `argus.agent.priors`) — plus the exploration bonus
  ``c * sqrt(2 ln(N + 2) / (pulls + 1))``. Ties break by a generator seeded with the run's seed, so a run is
  deterministic given its seed. The profile (bound, occupancy) and the verifier's findings enter through the
  priors: retrieval scores entries by them. ``thompson`` (``method="thompson"``) draws each arm's value from a
  normal around the same mean instead (deviation ``noise / sqrt(pulls + 1)``, the seeded generator).
* `LLMPlanner` (``llm``): the paper's in-context RL planner. The prompt holds the history table (step, action,
  reward, verdict, failing check), the arms on offer with their entries and priors, the current profile and
  findings, and the counterexamples of the last rejected candidate; the model answers with a JSON object
  ``{"action": ARM_ID, "rationale": "..."}``. A malformed or unknown answer gets one retry with the reason; after
  that, or when the provider fails (timeout after its retries), the bandit's choice is taken and the fallback
  recorded in the choice.

Prompts and answers are scrubbed of secrets (`argus.agent.providers.secrets.scrub_secrets`): `planner_prompt` and
`ask` scrub what is sent (a key quoted by a rejection reason or a counterexample does not go back to the model), and
the planner scrubs the answer before it reads the rationale from it.
"""

from __future__ import annotations

import json
import math
import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from argus.agent.arms import AgentError, Arm
from argus.agent.providers.secrets import scrub_secrets

Recorder = Callable[..., Any]  # record(messages, completion=None, error=None, purpose=...)


@dataclass
class PlanContext:
    """What a planner sees at one step."""

    step: int
    arms: list[Arm]
    kernel: str
    params: dict[str, Any]
    history: list[dict[str, Any]] = field(default_factory=list)  # step, action, reward, status, code
    profile: dict[str, Any] | None = None  # the best kernel's profile (measured or estimated)
    findings: list[str] = field(default_factory=list)  # the verifier's warnings on the current kernel
    feedback: list[str] = field(default_factory=list)  # the last rejected candidate's failure and counterexamples
    record: Recorder | None = None
    #: what earlier problems of this family and shape class learned of the arms on offer (`argus.agent.priors`)
    learned: dict[str, Any] = field(default_factory=dict)


@dataclass
class Choice:
    """A planner's decision: the arm, a short rationale, who decided (``bandit``, ``llm``, ``bandit-fallback``)
    and, for a fallback, why."""

    arm: Arm
    rationale: str
    source: str
    fallback_reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "arm": self.arm.id,
            "rationale": self.rationale,
            "source": self.source,
            "fallback_reason": self.fallback_reason,
        }


class BanditPlanner:
    """UCB1 with retrieval priors (see the module docstring)."""

    name = "bandit"

    def __init__(
        self,
        seed: int = 0,
        *,
        exploration: float = 0.5,
        prior_weight: float = 1.0,
        method: str = "ucb1",
        noise: float = 1.0,
    ) -> None:
        if method not in ("ucb1", "thompson"):
            raise AgentError("PLANNER_UNKNOWN", f"no bandit method {method!r}", "ucb1 or thompson")
        self.seed = seed
        self.exploration = exploration
        self.prior_weight = prior_weight
        self.method = method
        self.noise = noise
        self.pulls: dict[str, int] = {}
        self.totals: dict[str, float] = {}
        #: each arm's prior shift from earlier problems (`argus.agent.priors.warm_start`), added to its rescaled prior
        self.learned: dict[str, float] = {}
        self._rng = random.Random(seed)

    def update(self, arm_id: str, reward: float) -> None:
        self.pulls[arm_id] = self.pulls.get(arm_id, 0) + 1
        self.totals[arm_id] = self.totals.get(arm_id, 0.0) + float(reward)

    def values(self, arms: Sequence[Arm]) -> dict[str, float]:
        """Each arm's value now: its UCB (``ucb1``), or a draw from its posterior (``thompson``: a normal around
        the same prior-smoothed mean with deviation ``noise / sqrt(pulls + 1)``, from the seeded generator)."""
        if not arms:
            return {}
        lo, hi = min(a.prior for a in arms), max(a.prior for a in arms)
        total = sum(self.pulls.values())
        out = {}
        for a in arms:
            prior = ((a.prior - lo) / (hi - lo) if hi > lo else 1.0) + self.learned.get(a.id, 0.0)
            n = self.pulls.get(a.id, 0)
            mean = (self.totals.get(a.id, 0.0) + self.prior_weight * prior) / (n + 1)
            if self.method == "thompson":
                out[a.id] = self._rng.gauss(mean, self.noise / math.sqrt(n + 1))
            else:
                out[a.id] = mean + self.exploration * math.sqrt(2 * math.log(total + 2) / (n + 1))
        return out

    def choose(self, ctx: PlanContext) -> Choice:
        if not ctx.arms:
            raise AgentError("PLANNER_NO_ARMS", f"no applicable action for {ctx.kernel}")
        values = self.values(ctx.arms)
        jitter = {a.id: self._rng.random() * 1e-9 for a in ctx.arms}
        best = max(ctx.arms, key=lambda a: values[a.id] + jitter[a.id])
        n = self.pulls.get(best.id, 0)
        mean = self.totals.get(best.id, 0.0) / n if n else None
        shown = f"mean reward {mean:+.3f} over {n} pulls" if mean is not None else "not tried yet"
        label = "UCB" if self.method == "ucb1" else "posterior draw"
        learned = f", learned on earlier problems {self.learned[best.id]:+.2f}" if best.id in self.learned else ""
        return Choice(best, f"{label} {values[best.id]:.3f}: prior {best.prior:.2f}{learned}, {shown}", "bandit")


# ---------------------------------------------------------------------------------------------------------------
# the LLM planner

PLANNER_SYSTEM = (
    "You are the planner of argus, an agent that optimizes GPU kernels for NVIDIA Hopper (H100). You act as an "
    "in-context reinforcement learner: each step you choose one action from the list offered, the action is "
    "applied and gated (compile, verify, correct, profile), and you receive its reward: the natural log of the "
    "speedup over the starting kernel (positive is faster), or a penalty when the gate rejected the candidate. "
    "Learn from the history: exploit actions that paid, explore untried ones with good priors, avoid repeating "
    "failures. Answer with one JSON object and nothing else: "
    '{"action": "<one action id from the list>", "rationale": "<one or two sentences>"}'
)


def _table(history: Sequence[Mapping[str, Any]], limit: int = 40) -> str:
    if not history:
        return "(no steps yet)"
    lines = ["step | action | reward | verdict | failing check", "---|---|---|---|---"]
    for h in history[-limit:]:
        reward = h.get("reward")
        shown = f"{reward:+.3f}" if isinstance(reward, int | float) else "-"
        lines.append(f"{h.get('step')} | {h.get('action')} | {shown} | {h.get('status')} | {h.get('code') or ''}")
    return "\n".join(lines)


def planner_prompt(ctx: PlanContext) -> list[dict[str, str]]:
    """The messages the LLM planner sends (the history table, the arms, the findings, the counterexamples),
    scrubbed of secrets."""
    arms = "\n".join(f"- {a.id} (prior {a.prior:.2f}): {a.describe()}" for a in ctx.arms)
    parts = [
        f"Kernel now (the best so far): {ctx.kernel} with parameters {json.dumps(ctx.params, sort_keys=True)}",
        f"Step {ctx.step}. History of (action, reward):\n{_table(ctx.history)}",
        f"Actions you may choose (id, prior from the knowledge base's retrieval):\n{arms}",
    ]
    if ctx.profile:
        parts.append("Profile of the current kernel:\n" + json.dumps(ctx.profile, sort_keys=True))
    if ctx.learned:
        rows = "\n".join(
            f"- {arm}: mean reward {got.mean:+.3f} over {got.weight:g} observations in {got.runs} run(s)"
            for arm, got in sorted(ctx.learned.items())
        )
        parts.append("What these actions did on earlier problems of the same family and shape class:\n" + rows)
    if ctx.findings:
        parts.append("Verifier findings on the current kernel:\n" + "\n".join(f"- {f}" for f in ctx.findings))
    if ctx.feedback:
        parts.append(
            "The last candidate was rejected; the gate said (counterexamples included):\n"
            + "\n".join(f"- {f}" for f in ctx.feedback)
        )
    parts.append('Answer with {"action": ..., "rationale": ...} only.')
    return [
        {"role": "system", "content": PLANNER_SYSTEM},
        {"role": "user", "content": scrub_secrets("\n\n".join(parts))},
    ]


def parse_choice(text: str, arms: Sequence[Arm]) -> tuple[Arm, str]:
    """The arm and rationale an answer names. Accepts a JSON object (bare, fenced, or inside prose) with an
    ``action`` field, or a line ``action: ID``. Raises `AgentError` ``PLANNER_MALFORMED`` with the reason."""
    by_id = {a.id: a for a in arms}
    data: Any = None
    for candidate in re.findall(r"\{.*?\}", text, flags=re.S) + re.findall(r"\{.*\}", text, flags=re.S):
        try:
            data = json.loads(candidate)
            break
        except ValueError:
            continue
    if isinstance(data, dict) and "action" in data:
        action, rationale = str(data.get("action", "")).strip(), str(data.get("rationale", "")).strip()
    else:
        m = re.search(r"^\s*action\s*[:=]\s*`?([^`\n]+?)`?\s*$", text, flags=re.I | re.M)
        if m is None:
            raise AgentError("PLANNER_MALFORMED", "the answer holds no JSON object with an 'action' field")
        action = m.group(1).strip()
        r = re.search(r"^\s*rationale\s*[:=]\s*(.+)$", text, flags=re.I | re.M)
        rationale = r.group(1).strip() if r else ""
    if action not in by_id:
        raise AgentError("PLANNER_MALFORMED", f"the action {action!r} is not one of the ids offered")
    return by_id[action], rationale[:500]


def ask(provider: Any, messages: list[dict[str, str]], record: Recorder | None, purpose: str, **kw: Any) -> Any:
    """`provider.complete(messages)`, the exchange (or the error) recorded; re-raises provider errors. The messages
    are scrubbed of secrets first (`scrub_secrets`), whatever built them."""
    from argus.agent.providers.errors import ProviderError

    messages = scrub_secrets(messages)
    try:
        completion = provider.complete(
            messages, max_tokens=kw.get("max_tokens", 1024), temperature=kw.get("temperature", 0.2)
        )
    except ProviderError as e:
        if record is not None:
            record(messages, error=e, purpose=purpose)
        raise
    if record is not None:
        record(messages, completion, purpose=purpose)
    return completion


class LLMPlanner:
    """The in-context RL planner (see the module docstring); `fallback` decides when the model cannot."""

    name = "llm"

    def __init__(self, provider: Any, *, fallback: BanditPlanner | None = None, seed: int = 0) -> None:
        self.provider = provider
        self.fallback = fallback or BanditPlanner(seed)

    def update(self, arm_id: str, reward: float) -> None:
        self.fallback.update(arm_id, reward)

    def choose(self, ctx: PlanContext) -> Choice:
        from argus.agent.providers.errors import ProviderError

        if not ctx.arms:
            raise AgentError("PLANNER_NO_ARMS", f"no applicable action for {ctx.kernel}")
        messages = planner_prompt(ctx)
        reason = None
        for attempt in range(2):
            try:
                completion = ask(self.provider, messages, ctx.record, "planner")
            except ProviderError as e:
                reason = f"provider failed: [{e.code}] {e.message}"
                break
            text = scrub_secrets(completion.text)  # a key the model echoes goes no further
            try:
                arm, rationale = parse_choice(text, ctx.arms)
                return Choice(arm, rationale or "(no rationale given)", "llm")
            except AgentError as e:
                reason = f"malformed answer ({e.message})"
                if attempt == 0:
                    messages = [
                        *messages,
                        {"role": "assistant", "content": text},
                        {"role": "user", "content": f"That answer could not be used: {e.message}. Reply with only "
                         '{"action": "<an id from the list>", "rationale": "..."}.'},
                    ]  # fmt: skip
        choice = self.fallback.choose(ctx)
        return Choice(choice.arm, choice.rationale, "bandit-fallback", reason)


def make_planner(kind: str, *, provider: Any = None, seed: int = 0) -> BanditPlanner | LLMPlanner:
    """``bandit`` (UCB1), ``thompson`` (the bandit with Thompson sampling) or ``llm`` (which needs `provider`)."""
    if kind == "bandit":
        return BanditPlanner(seed)
    if kind == "thompson":
        return BanditPlanner(seed, method="thompson")
    if kind == "llm":
        if provider is None:
            raise AgentError("PLANNER_NO_PROVIDER", "the llm planner needs an LLM provider", "configure ARGUS_LLM_*")
        return LLMPlanner(provider, seed=seed)
    raise AgentError("PLANNER_UNKNOWN", f"no planner named {kind!r}", "bandit, thompson or llm")
