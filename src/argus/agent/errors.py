"""The agent's typed error (`AgentError`), below every module of the agent so that none imports another for it."""

from __future__ import annotations

from argus.diagnostics import ArgusError


class AgentError(ArgusError):
    """An error of the agent loop, its planners or coders (code ``AGENT_*``, ``CODER_*``, ``PLANNER_*``)."""
