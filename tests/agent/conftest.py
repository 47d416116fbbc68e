"""Fixtures for the agent tests: a scripted LLM server on 127.0.0.1, providers whose backoff sleeps are recorded
instead of slept, and an environment with no LLM settings of the machine running the tests."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from argus.agent.providers import Provider, make_provider
from tests.agent.llm_server import ScriptedLLMServer

KEY = "sk-test-9f8e7d6c5b4a3210fedcba"


@pytest.fixture(autouse=True)
def _no_llm_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The machine's own keys, endpoints and config file must not leak into (or be used by) a test."""
    for name in (
        "ARGUS_LLM_PROVIDER",
        "ARGUS_LLM_MODEL",
        "ARGUS_LLM_BASE_URL",
        "ARGUS_LLM_API_KEY",
        "ARGUS_LLM_TIMEOUT",
        "ARGUS_LLM_MAX_RETRIES",
        "ARGUS_LLM_CACHE",
        "ARGUS_LLM_CACHE_DIR",
        "ARGUS_CONFIG",
        "ARGUS_RUNS_DB",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.setenv("ARGUS_CACHE_DIR", str(tmp_path / "argus-cache"))


@pytest.fixture
def server() -> Iterator[ScriptedLLMServer]:
    with ScriptedLLMServer() as s:
        yield s


@pytest.fixture
def sleeps() -> list[float]:
    return []


@pytest.fixture
def make(server: ScriptedLLMServer, sleeps: list[float], tmp_path: Path) -> Callable[..., Provider]:
    """A provider for the scripted server (OpenAI-compatible unless provider='anthropic'); settings override."""

    def build(**settings: Any) -> Provider:
        provider = settings.get("provider", "openai")
        defaults: dict[str, Any] = {
            "provider": provider,
            "model": "gpt-4o" if provider == "openai" else "claude-opus-4-5",
            "base_url": server.openai_base_url if provider == "openai" else server.url,
            "api_key": KEY,
            "cache": "off",
            "cache_dir": tmp_path / "llm-cache",
            "max_retries": 3,
            "env": {"XDG_CONFIG_HOME": str(tmp_path / "no-config")},
        }
        defaults.update(settings)
        return make_provider(sleep=sleeps.append, rng=random.Random(0), **defaults)

    return build
