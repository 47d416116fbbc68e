"""LLM providers for the planner and the coder: one small interface over any OpenAI-compatible endpoint (OpenAI,
vLLM, SGLang, Ollama, llama.cpp server) and Anthropic.

    from argus.agent.providers import make_provider

    llm = make_provider()                       # configured by ARGUS_LLM_* or ~/.config/argus/config.toml
    answer = llm.complete([{"role": "user", "content": "..."}], max_tokens=512, temperature=0)
    answer.text, answer.input_tokens, answer.cost_usd, answer.cached, answer.request_hash
    llm.usage                                   # totals: requests, retries, tokens, cost, cache hits

Configuration (`config`), the response cache (`cache`), prices (`pricing`), errors (`errors`) and the secret
scrubber (`secrets`: `scrub_secrets`, applied wherever text leaves the process) are documented in their modules and
in docs/agent.md. The SDKs are imported only when a request is sent.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from argus.agent.providers.anthropic_messages import AnthropicProvider
from argus.agent.providers.base import Completion, Provider, Request, Usage, classify_sdk_error
from argus.agent.providers.cache import ResponseCache, request_hash
from argus.agent.providers.config import CacheMode, ProviderConfig, load_config
from argus.agent.providers.errors import (
    CacheMissError,
    MalformedResponseError,
    ProviderAuthError,
    ProviderConfigError,
    ProviderConnectionError,
    ProviderError,
    ProviderRateLimitError,
    ProviderRequestError,
    ProviderServerError,
    ProviderTimeoutError,
    ProviderUnavailableError,
    redact,
)
from argus.agent.providers.openai_compat import OpenAICompatibleProvider
from argus.agent.providers.pricing import DEFAULT_PRICES, Price, cost_usd, price_for
from argus.agent.providers.secrets import scrub_secrets, secret_values

PROVIDER_CLASSES: dict[str, type[Provider]] = {"openai": OpenAICompatibleProvider, "anthropic": AnthropicProvider}


def make_provider(
    config: ProviderConfig | None = None,
    *,
    sleep: Callable[[float], None] | None = None,
    rng: random.Random | None = None,
    **settings: Any,
) -> Provider:
    """The provider `config` names (default: `load_config(**settings)`: explicit settings, then the environment,
    then the config file)."""
    if config is None:
        config = load_config(**settings)
    elif settings:
        raise TypeError("pass either a ProviderConfig or settings for load_config, not both")
    extra: dict[str, Any] = {"rng": rng}
    if sleep is not None:
        extra["sleep"] = sleep
    return PROVIDER_CLASSES[config.provider](config, **extra)


__all__ = [
    "DEFAULT_PRICES",
    "AnthropicProvider",
    "CacheMissError",
    "CacheMode",
    "Completion",
    "MalformedResponseError",
    "OpenAICompatibleProvider",
    "Price",
    "Provider",
    "ProviderAuthError",
    "ProviderConfig",
    "ProviderConfigError",
    "ProviderConnectionError",
    "ProviderError",
    "ProviderRateLimitError",
    "ProviderRequestError",
    "ProviderServerError",
    "ProviderTimeoutError",
    "ProviderUnavailableError",
    "Request",
    "ResponseCache",
    "Usage",
    "classify_sdk_error",
    "cost_usd",
    "load_config",
    "make_provider",
    "price_for",
    "redact",
    "request_hash",
    "scrub_secrets",
    "secret_values",
]
