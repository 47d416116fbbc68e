"""Typed errors of the LLM providers, and the redaction that keeps API keys out of every message.

Every error is a `ProviderError` (an `ArgusError`: stable code, message, hint). `retryable` says whether the
provider retries it (rate limits, 5xx, timeouts, connection errors) or gives up at once (authentication, other
4xx, malformed responses, configuration). Messages pass through `redact` before they are built, and SDK
exceptions are never chained (``raise ... from None``), so a key echoed by a server cannot reach a traceback.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from argus.diagnostics import ArgusError

REDACTED = "[REDACTED]"

# Key-shaped tokens, redacted even when they are not the configured key (a server may echo a masked or another key).
_KEY_PATTERNS = (
    re.compile(r"(?i)\b(bearer\s+)[A-Za-z0-9._~+/=*\-]{8,}"),
    re.compile(r"\b(sk-(?:ant-|proj-)?)[A-Za-z0-9_*\-]{6,}"),
    re.compile(r"(?i)\b((?:api[_-]?key|x-api-key|authorization)[\"']?\s*[:=]\s*[\"']?)[^\s\"',}]{6,}"),
)


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """`text` with every secret in `secrets` (and every key-shaped token) replaced by ``[REDACTED]``."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, REDACTED)
    for pattern in _KEY_PATTERNS:
        text = pattern.sub(lambda m: m.group(1) + REDACTED, text)
    return text


class ProviderError(ArgusError):
    """Base of the providers' errors. `status_code`: the HTTP status when there was one; `attempts`: requests
    sent before giving up; `retry_after`: the server's Retry-After, in seconds, when it sent one;
    `request_hash`: the failed request's cache key (set by `Provider.complete`), for the run store."""

    retryable = False

    def __init__(
        self,
        code: str,
        message: str,
        hint: str | None = None,
        *,
        requirement: str | None = None,
        actual: object = None,
        status_code: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        self.status_code = status_code
        self.retry_after = retry_after
        self.attempts = 1
        self.request_hash: str | None = None
        super().__init__(code, message, hint, requirement=requirement, actual=actual)


class ProviderConfigError(ProviderError):
    """Something needed to reach the model is not configured, or a setting is invalid (``LLM_CONFIG_*``)."""


class ProviderUnavailableError(ProviderError):
    """The provider's SDK is not installed (``LLM_SDK_MISSING``)."""


class ProviderAuthError(ProviderError):
    """401/403: the key is missing, wrong or not allowed (``LLM_AUTH``). Never retried."""


class ProviderRequestError(ProviderError):
    """Another 4xx (bad request, unknown model, …) (``LLM_BAD_REQUEST``). Never retried."""


class ProviderRateLimitError(ProviderError):
    """429 after every retry (``LLM_RATE_LIMITED``)."""

    retryable = True


class ProviderServerError(ProviderError):
    """5xx (or 408/409) after every retry (``LLM_SERVER_ERROR``)."""

    retryable = True


class ProviderTimeoutError(ProviderError):
    """No answer within the request's timeout, after every retry (``LLM_TIMEOUT``)."""

    retryable = True


class ProviderConnectionError(ProviderError):
    """The endpoint could not be reached, after every retry (``LLM_CONNECTION``)."""

    retryable = True


class MalformedResponseError(ProviderError):
    """The endpoint answered 200 with something that is not a completion: not JSON, no choices/content, no text
    (``LLM_MALFORMED_RESPONSE``). Not retried: the caller decides (the loop counts it as a failed step)."""


class CacheMissError(ProviderError):
    """Replay-only mode and the request is not in the response cache (``LLM_CACHE_MISS``)."""
