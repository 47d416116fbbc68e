"""The frontend's error: a problem that cannot be captured or turned into a solution file (code ``SOLVE_*``)."""

from __future__ import annotations

from argus.diagnostics import ArgusError


class FrontendError(ArgusError, ValueError):
    """`argus solve` cannot go on with this problem (code ``SOLVE_<DETAIL>``): its inputs cannot be drawn, it does
    not export, or the solution file cannot be written."""
