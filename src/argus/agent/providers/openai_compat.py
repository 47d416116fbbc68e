"""Any OpenAI-compatible chat-completions endpoint — OpenAI, vLLM, SGLang, Ollama, llama.cpp server — through the
`openai` SDK (imported lazily) with a configurable base URL. The SDK's own retries are off: `Provider` retries.
The client holds a placeholder key; each request goes through a copy of it (`with_options`) that holds the key read
at that moment."""

from __future__ import annotations

from typing import Any

from argus.agent.providers.base import Provider, RawReply, Request, token_count
from argus.agent.providers.config import NO_KEY
from argus.agent.providers.errors import ProviderError, ProviderUnavailableError


def import_sdk(module: str) -> Any:
    """`module` (``openai`` or ``anthropic``), or `ProviderUnavailableError` telling how to install it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise ProviderUnavailableError(
            "LLM_SDK_MISSING",
            f"the {module!r} package is not installed; the {module} provider needs it",
            'pip install "argus-kernels[llm]"',
        ) from None


class OpenAICompatibleProvider(Provider):
    """`Provider` over ``POST {base_url}/chat/completions`` (non-streaming)."""

    name = "openai"

    def client(self) -> Any:
        if self._client is None:
            openai = import_sdk("openai")
            self._client = openai.OpenAI(
                api_key=NO_KEY,  # a placeholder: the key is given per request (`_send`)
                base_url=self.config.base_url,
                max_retries=0,
                timeout=self.config.timeout_s,
            )
        return self._client

    def _send(self, request: Request, timeout: float) -> RawReply:
        client = self.client().with_options(api_key=self.api_key_now())  # this request's copy holds the key
        kwargs: dict[str, Any] = {
            "model": request.model,
            "messages": [dict(m) for m in request.messages],
            self.config.max_tokens_field: request.max_tokens,
            "timeout": timeout,
        }
        if request.temperature is not None:
            kwargs["temperature"] = request.temperature
        if request.stop:
            kwargs["stop"] = list(request.stop)
        try:
            response = client.chat.completions.create(**kwargs)
        except ProviderError:
            raise
        except Exception as e:  # the SDK's errors, and undecodable bodies (JSONDecodeError, validation errors)
            raise self._error_from(e) from None
        choices = getattr(response, "choices", None)
        if not isinstance(choices, list) or not choices:
            raise self._malformed("choices", response)
        message = getattr(choices[0], "message", None)
        text = getattr(message, "content", None)
        if not isinstance(text, str):
            raise self._malformed("message text in choices[0]", response)
        usage = getattr(response, "usage", None)
        model = getattr(response, "model", None)
        return RawReply(
            text=text,
            model=model if isinstance(model, str) and model else request.model,
            input_tokens=token_count(getattr(usage, "prompt_tokens", None)),
            output_tokens=token_count(getattr(usage, "completion_tokens", None)),
            finish_reason=getattr(choices[0], "finish_reason", None),
        )
