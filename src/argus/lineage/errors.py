"""`LineageError`: the typed error of `argus.lineage` (code, message, hint)."""

from __future__ import annotations

from argus.diagnostics import ArgusError


class LineageError(ArgusError):
    """Codes: ``LINEAGE_NO_TASK`` (no task matches the kernel), ``LINEAGE_OPERATOR`` (an operator cannot
    produce its candidate), ``LINEAGE_UNKNOWN_OPERATOR``, ``LINEAGE_FILE`` (a lineage or skill file that cannot
    be read)."""
