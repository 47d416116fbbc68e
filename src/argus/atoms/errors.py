"""The atoms' error type.

Every violated hardware constraint raises (or, from a ``diagnose`` method, returns) an `AtomError`
with a stable code (``ATOM_<DETAIL>``), the requirement in the hardware's terms, the value that broke
it, and how to fix it.
"""

from __future__ import annotations

from typing import Any


class AtomError(ValueError):
    """A hardware atom was asked for, or used with, something the instruction does not allow.

    Attributes:
        code: stable identifier (``ATOM_<DETAIL>``), for programs and the agent.
        message: what is wrong, naming the atom.
        requirement: the rule the instruction imposes.
        actual: the value that broke it.
        hint: how to fix it.
    """

    def __init__(
        self,
        code: str,
        message: str,
        *,
        requirement: str | None = None,
        actual: Any = None,
        hint: str | None = None,
    ) -> None:
        self.code = code
        self.message = message
        self.requirement = requirement
        self.actual = actual
        self.hint = hint
        text = f"[{code}] {message}"
        if requirement:
            text += f"\n  requires: {requirement}"
        if actual is not None:
            text += f"\n  actual: {actual}"
        if hint:
            text += f"\n  hint: {hint}"
        super().__init__(text)

    def __reduce__(self) -> tuple:
        return (_rebuild, (self.code, self.message, self.requirement, self.actual, self.hint))


def _rebuild(code: str, message: str, requirement: str | None, actual: Any, hint: str | None) -> AtomError:
    return AtomError(code, message, requirement=requirement, actual=actual, hint=hint)


def raise_first(problems: tuple[AtomError, ...] | list[AtomError]) -> None:
    """Raise the first of `problems`, if any (the ``check`` methods are ``raise_first(diagnose(...))``)."""
    if problems:
        raise problems[0]
