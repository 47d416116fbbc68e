"""The layout algebra's error type.

`argus.layout` imports nothing from the rest of argus, so its error lives here; the rest of argus
re-exports it in its diagnostics catalog. Every failure of a layout operation raises `LayoutError`
with a stable code, the operation with its operands, and the condition that failed.
"""

from __future__ import annotations


class LayoutError(ValueError):
    """A layout operation was given operands it is not defined for.

    Attributes:
        code: stable identifier (``LAYOUT_<DETAIL>``), for programs and the agent.
        message: what failed, in CuTe's terms, naming the operands.
        hint: how to fix it, when there is something useful to say.
    """

    def __init__(self, code: str, message: str, hint: str | None = None) -> None:
        self.code = code
        self.message = message
        self.hint = hint
        text = f"[{code}] {message}"
        if hint:
            text += f"\n  hint: {hint}"
        super().__init__(text)
