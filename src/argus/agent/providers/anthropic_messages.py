"""Anthropic's Messages API through the `anthropic` SDK (imported lazily). System messages become the ``system``
parameter; the rest go as they are (user/assistant turns). The SDK's own retries are off: `Provider` retries."""

from __future__ import annotations

import inspect
from typing import Any

from argus.agent.providers.base import Provider, RawReply, Request, token_count
from argus.agent.providers.config import NO_KEY
from argus.agent.providers.errors import ProviderError, ProviderRequestError
from argus.agent.providers.openai_compat import import_sdk


class AnthropicProvider(Provider):
    """`Provider` over ``POST {base_url}/v1/messages``."""

    name = "anthropic"

    def client(self) -> Any:
        if self._client is None:
            anthropic = import_sdk("anthropic")
            self._client = anthropic.Anthropic(
                api_key=NO_KEY,  # a placeholder: the key is given per request (`_send`)
                base_url=self.config.base_url,
                max_retries=0,
                timeout=self.config.timeout_s,
            )
        return self._client

    def _send(self, request: Request, timeout: float) -> RawReply:
        client = self.client().with_options(api_key=self.api_key_now())  # this request's copy holds the key
        system = "\n\n".join(m["content"] for m in request.messages if m["role"] == "system")
        turns = [dict(m) for m in request.messages if m["role"] != "system"]
        if turns[0]["role"] != "user":
            raise ProviderRequestError(
                "LLM_BAD_MESSAGES", "Anthropic's Messages API needs the first non-system message to be the user's"
            )
        kwargs: dict[str, Any] = {
            "model": request.model,
            "messages": turns,
            "max_tokens": request.max_tokens,
            "timeout": timeout,
        }
        if system:
            kwargs["system"] = system
        if request.stop:
            kwargs["stop_sequences"] = list(request.stop)
        if request.temperature is not None:
            # newer SDKs no longer list `temperature` as a parameter; the API still takes it in the body
            if "temperature" in inspect.signature(client.messages.create).parameters:
                kwargs["temperature"] = request.temperature
            else:
                kwargs["extra_body"] = {"temperature": request.temperature}
        try:
            response = client.messages.create(**kwargs)
        except ProviderError:
            raise
        except Exception as e:  # the SDK's errors, and undecodable bodies
            raise self._error_from(e) from None
        content = getattr(response, "content", None)
        if not isinstance(content, list):
            raise self._malformed("content", response)
        texts = [getattr(b, "text", None) for b in content if getattr(b, "type", None) == "text"]
        if not texts or not all(isinstance(t, str) for t in texts):
            raise self._malformed("a text block in content", response)
        usage = getattr(response, "usage", None)
        model = getattr(response, "model", None)
        return RawReply(
            text="".join(texts),
            model=model if isinstance(model, str) and model else request.model,
            input_tokens=token_count(getattr(usage, "input_tokens", None)),
            output_tokens=token_count(getattr(usage, "output_tokens", None)),
            finish_reason=getattr(response, "stop_reason", None),
        )
