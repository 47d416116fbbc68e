"""Prices per model, in US dollars per million tokens, and the cost of one exchange.

The table holds list prices of common hosted models (standard tier, no batch or cached-input discounts), as
published by OpenAI and Anthropic in 2025; they change, so a config file may override or extend them
(``[llm.prices."MODEL"]``, docs/agent.md). A model that is not in the table costs ``None`` — unknown, not free:
a self-hosted model (vLLM, SGLang, Ollama, llama.cpp) is priced only if the config says so (e.g. 0).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Price:
    """US dollars per million input and output tokens."""

    input_per_mtok: float
    output_per_mtok: float

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        return (input_tokens * self.input_per_mtok + output_tokens * self.output_per_mtok) / 1e6


DEFAULT_PRICES: dict[str, Price] = {
    # OpenAI
    "gpt-5": Price(1.25, 10.0),
    "gpt-5-mini": Price(0.25, 2.0),
    "gpt-5-nano": Price(0.05, 0.40),
    "gpt-4.1": Price(2.0, 8.0),
    "gpt-4.1-mini": Price(0.40, 1.60),
    "gpt-4.1-nano": Price(0.10, 0.40),
    "gpt-4o": Price(2.50, 10.0),
    "gpt-4o-mini": Price(0.15, 0.60),
    "o3": Price(2.0, 8.0),
    "o4-mini": Price(1.10, 4.40),
    # Anthropic
    "claude-opus-4-5": Price(5.0, 25.0),
    "claude-opus-4-1": Price(15.0, 75.0),
    "claude-opus-4": Price(15.0, 75.0),
    "claude-sonnet-4-5": Price(3.0, 15.0),
    "claude-sonnet-4": Price(3.0, 15.0),
    "claude-haiku-4-5": Price(1.0, 5.0),
    "claude-3-7-sonnet": Price(3.0, 15.0),
    "claude-3-5-haiku": Price(0.80, 4.0),
}

# a dated or versioned snapshot of a listed model: "gpt-4o-2024-08-06", "claude-sonnet-4-5-20250929", "...-latest"
_SNAPSHOT = re.compile(r"^-(\d[\d-]*|latest)$")


def price_for(model: str, prices: Mapping[str, Price] | None = None) -> Price | None:
    """The price of `model`: an exact entry of `prices` (default: `DEFAULT_PRICES`), else the longest entry of
    which `model` is a dated snapshot (``NAME-2024-08-06``, ``NAME-20250929``, ``NAME-latest``); else None."""
    table = DEFAULT_PRICES if prices is None else prices
    if model in table:
        return table[model]
    best = None
    for name in table:
        if model.startswith(name) and _SNAPSHOT.match(model[len(name) :]) and (best is None or len(name) > len(best)):
            best = name
    return table[best] if best is not None else None


def cost_usd(
    model: str, input_tokens: int | None, output_tokens: int | None, prices: Mapping[str, Price] | None = None
) -> float | None:
    """Cost of one exchange in US dollars, or None when the model's price or the token counts are unknown."""
    price = price_for(model, prices)
    if price is None or input_tokens is None or output_tokens is None:
        return None
    return price.cost(input_tokens, output_tokens)
