"""The atoms' error type.

Every violated hardware constraint raises (or, from a ``diagnose`` method, returns) an `AtomError`
with a stable code (``ATOM_<DETAIL>``), the requirement in the hardware's terms, the value that broke
it, and how to fix it.
"""

from __future__ import annotations

from typing import Any

from argus.diagnostics import ArgusError


class AtomError(ArgusError, ValueError):
    """A hardware atom was asked for, or used with, something the instruction does not allow.

    Attributes (see `argus.diagnostics.ArgusError`): ``code`` (``ATOM_<DETAIL>``), ``message``
    naming the atom, ``requirement`` (the rule the instruction imposes), ``actual`` (the value that
    broke it) and ``hint``.
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
        super().__init__(code, message, hint, requirement=requirement, actual=actual)


def raise_first(problems: tuple[AtomError, ...] | list[AtomError]) -> None:
    """Raise the first of `problems`, if any (the ``check`` methods are ``raise_first(diagnose(...))``)."""
    if problems:
        raise problems[0]
