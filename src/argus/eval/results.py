"""Gate results as plain data: one `StageResult` per stage, `Flag`s for suspicious measurements, and the
`GateResult` that collects them for one candidate on one task and problem size.

Everything here round-trips through JSON (`to_json` / `from_json`): the SQLite store, the worker processes,
the command line and the agent all read the same objects. Non-finite floats are written as the strings
``"nan"``, ``"inf"`` and ``"-inf"`` so the JSON stays standard.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import PurePath
from typing import Any


class Status(StrEnum):
    """How a stage ended.

    * ``passed`` — the stage ran and the candidate met every check;
    * ``failed`` — the stage ran and the candidate broke a check (the gate rejects it);
    * ``skipped`` — the stage could not run here (no GPU, no code generator for a construct, no argus kernel
      to verify); the reason says which, and nothing is claimed;
    * ``unknown`` — the stage ran and could not decide (the verifier's ``unknown``); it does not reject;
    * ``error`` — the harness itself failed (a bug or a broken environment), not the candidate.
    """

    PASSED = "passed"
    FAILED = "failed"
    SKIPPED = "skipped"
    UNKNOWN = "unknown"
    ERROR = "error"


#: The gate's stages, in the order they run. ``static`` (policy checks on the candidate's source) runs
#: first because it is cheap; then DESIGN §6's four.
STAGES = ("static", "compile", "verify", "correct", "profile")


def jsonable(value: Any) -> Any:
    """`value` as JSON-safe data: dicts, lists, str, int, finite float, bool, None."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return value
    if isinstance(value, StrEnum):
        return str(value)
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [jsonable(v) for v in value]
    if isinstance(value, PurePath):
        return str(value)
    if hasattr(value, "to_json"):
        return jsonable(value.to_json())
    if hasattr(value, "item") and callable(value.item):  # numpy / torch scalars
        try:
            return jsonable(value.item())
        except (TypeError, ValueError, RuntimeError):
            pass
    return repr(value)


@dataclass
class StageResult:
    """What one stage found.

    Attributes:
        stage: one of `STAGES`.
        status: how it ended (`Status`).
        code: stable ``STAGE_DETAIL`` identifier of the outcome (see `argus.eval.codes`), None when passed.
        reason: one line in the user's terms: why it failed or was skipped.
        details: JSON-safe data for the agent (trials, errors, timings, findings ...).
        seconds: wall time the stage took.
    """

    stage: str
    status: Status
    code: str | None = None
    reason: str = ""
    details: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def failed(self) -> bool:
        return self.status == Status.FAILED

    def to_json(self) -> dict[str, Any]:
        return {
            "stage": self.stage,
            "status": str(self.status),
            "code": self.code,
            "reason": self.reason,
            "details": jsonable(self.details),
            "seconds": round(float(self.seconds), 4),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> StageResult:
        return cls(
            data["stage"],
            Status(data["status"]),
            data.get("code"),
            data.get("reason", ""),
            dict(data.get("details", {})),
            float(data.get("seconds", 0.0)),
        )


@dataclass
class Flag:
    """A measurement that looks too good to be true (not a failure by itself; see `GateResult.trusted`).

    Attributes:
        code: stable identifier, e.g. ``FLAG_SPEEDUP_SUSPICIOUS``.
        message: what was seen, with the numbers.
        blocking: True when the number must not be used as a reward until a person has looked.
        details: the numbers, as data.
    """

    code: str
    message: str
    blocking: bool = False
    details: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "message": self.message,
            "blocking": self.blocking,
            "details": jsonable(self.details),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Flag:
        return cls(data["code"], data["message"], bool(data.get("blocking", False)), dict(data.get("details", {})))


@dataclass
class GateResult:
    """The gate's verdict on one candidate for one task at one problem size.

    Attributes:
        candidate: the candidate's name (kernel name, solution file, ...).
        task: the task's name.
        sizes: the problem sizes (shape symbols or the overridden module globals).
        stages: one `StageResult` per stage that ran or was skipped, in `STAGES` order.
        flags: suspicious measurements (`Flag`).
        environment: device, software versions, precision settings (`argus.eval.device.environment`).
    """

    candidate: str
    task: str
    sizes: dict[str, Any] = field(default_factory=dict)
    stages: list[StageResult] = field(default_factory=list)
    flags: list[Flag] = field(default_factory=list)
    environment: dict[str, Any] = field(default_factory=dict)

    def stage(self, name: str) -> StageResult | None:
        return next((s for s in self.stages if s.stage == name), None)

    @property
    def failed_stage(self) -> StageResult | None:
        """The first stage that rejected the candidate, if any."""
        return next((s for s in self.stages if s.status == Status.FAILED), None)

    @property
    def verdict(self) -> str:
        """``rejected`` if a stage failed; ``accepted`` if correctness passed and nothing failed; ``error``
        otherwise (the harness could not decide correctness)."""
        if self.failed_stage is not None:
            return "rejected"
        correct = self.stage("correct")
        if correct is not None and correct.status == Status.PASSED:
            return "accepted"
        return "error"

    @property
    def accepted(self) -> bool:
        return self.verdict == "accepted"

    @property
    def trusted(self) -> bool:
        """Accepted, and no blocking flag on its timing: the only results an agent may learn from."""
        return self.accepted and not any(f.blocking for f in self.flags)

    @property
    def timing(self) -> dict[str, Any] | None:
        """The profile stage's timing of the candidate, when it ran."""
        profile = self.stage("profile")
        if profile is None or profile.status != Status.PASSED:
            return None
        return profile.details.get("timing")

    def summary(self) -> str:
        """One line: verdict, the deciding stage, and whether timing ran."""
        failed = self.failed_stage
        if failed is not None:
            return f"rejected at {failed.stage} [{failed.code}]: {failed.reason}"
        correct = self.stage("correct")
        parts = [self.verdict]
        if correct is not None:
            trials = correct.details.get("trials_passed")
            parts.append(f"correct on {trials} trials" if correct.status == Status.PASSED else correct.reason)
        profile = self.stage("profile")
        if profile is not None and profile.status == Status.SKIPPED:
            parts.append(f"timing skipped: {profile.reason}")
        elif self.timing:
            parts.append(f"median {self.timing['median_ms']:.4g} ms")
        if self.flags:
            parts.append("flags: " + ", ".join(f.code for f in self.flags))
        return "; ".join(parts)

    def to_json(self) -> dict[str, Any]:
        return {
            "candidate": self.candidate,
            "task": self.task,
            "sizes": jsonable(self.sizes),
            "verdict": self.verdict,
            "trusted": self.trusted,
            "stages": [s.to_json() for s in self.stages],
            "flags": [f.to_json() for f in self.flags],
            "environment": jsonable(self.environment),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> GateResult:
        return cls(
            data["candidate"],
            data["task"],
            dict(data.get("sizes", {})),
            [StageResult.from_json(s) for s in data.get("stages", [])],
            [Flag.from_json(f) for f in data.get("flags", [])],
            dict(data.get("environment", {})),
        )
