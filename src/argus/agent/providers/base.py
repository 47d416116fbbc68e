"""The provider interface: `Provider.complete(messages, *, max_tokens, temperature, stop, timeout) -> Completion`.

`complete` does everything that is the same for every endpoint — validate the messages, build the request and its
hash, consult the response cache, retry transient failures with exponential backoff and jitter, price the tokens,
keep usage totals, redact the key from every error and log line — and asks the subclass only to send one request
(`Provider._send`) and to turn its SDK's exceptions into `ProviderError`s (`classify_sdk_error` serves both SDKs,
which share their exception hierarchy).

Keys: the provider reads its key when it sends a request (`Provider.api_key_now`) and hands it to the SDK for that
request only (the long-lived SDK client holds a placeholder). Every message is passed through
`argus.agent.providers.secrets.scrub_secrets` before it is hashed, cached or sent, and so is every answer as it
arrives: a key that reached a prompt (e.g. through a rejection reason) never goes to the model, and a key a model
echoes never reaches the cache, the run store or generated code.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from argus.agent.providers.cache import ResponseCache, request_hash
from argus.agent.providers.config import CacheMode, ProviderConfig
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
    redact,
)
from argus.agent.providers.pricing import cost_usd
from argus.agent.providers.secrets import remember_config, scrub_secrets, secret_values

log = logging.getLogger("argus.agent.providers")

ROLES = ("system", "user", "assistant")


@dataclass(frozen=True)
class Completion:
    """One answer. `cost_usd` is None when the model's price is unknown (never a silent 0); `cached` says it came
    from the response cache (its tokens and cost are those of the original exchange, so a replayed run spends its
    budget as the original did; `Usage` counts what was actually paid). `latency_s` is this call's wall time."""

    text: str
    model: str
    input_tokens: int | None
    output_tokens: int | None
    cost_usd: float | None
    cached: bool
    latency_s: float
    request_hash: str = ""
    provider: str = ""
    finish_reason: str | None = None
    attempts: int = 1

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Usage:
    """Totals over a provider's calls. `cost_usd` sums only priced, non-cached exchanges; `unpriced` counts the
    exchanges whose cost is unknown, so a total is never silently low."""

    requests: int = 0
    cache_hits: int = 0
    retries: int = 0
    failures: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    unpriced: int = 0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class RawReply:
    """What `_send` returns: the text and what the endpoint said about it."""

    text: str
    model: str
    input_tokens: int | None
    output_tokens: int | None
    finish_reason: str | None = None


@dataclass(frozen=True)
class Request:
    """A normalized request (what is hashed and cached; no key, no timeout)."""

    provider: str
    base_url: str
    model: str
    messages: tuple[dict[str, str], ...]
    max_tokens: int
    temperature: float | None
    stop: tuple[str, ...] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "provider": self.provider,
            "base_url": self.base_url,
            "model": self.model,
            "messages": [dict(m) for m in self.messages],
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "stop": list(self.stop) if self.stop is not None else None,
        }


def normalize_messages(messages: Sequence[Mapping[str, Any]]) -> tuple[dict[str, str], ...]:
    """``[{"role": "system"|"user"|"assistant", "content": str}, ...]`` checked and copied; raises
    `ProviderRequestError` (``LLM_BAD_MESSAGES``) otherwise."""
    if isinstance(messages, str | bytes) or not messages:
        raise ProviderRequestError(
            "LLM_BAD_MESSAGES",
            "messages must be a non-empty list of {'role': ..., 'content': ...}",
            actual=type(messages).__name__ if not messages else repr(messages)[:80],
        )
    result = []
    for i, m in enumerate(messages):
        role = m.get("role") if isinstance(m, Mapping) else None
        content = m.get("content") if isinstance(m, Mapping) else None
        if role not in ROLES or not isinstance(content, str):
            raise ProviderRequestError(
                "LLM_BAD_MESSAGES",
                f"message {i} must be {{'role': one of {', '.join(ROLES)}, 'content': str}}",
                actual=repr(m)[:120],
            )
        result.append({"role": role, "content": content})
    if all(m["role"] == "system" for m in result):
        raise ProviderRequestError("LLM_BAD_MESSAGES", "messages need at least one user message", actual=len(result))
    return tuple(result)


def _retry_after(exc: BaseException) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    value = headers.get("retry-after-ms")
    try:
        if value is not None:
            return max(0.0, float(value) / 1000.0)
        value = headers.get("retry-after")
        return max(0.0, float(value)) if value is not None else None
    except (TypeError, ValueError):
        return None  # an HTTP date: fall back to our own backoff


def classify_sdk_error(
    exc: BaseException, *, provider: str, where: str, secrets: Sequence[str | None]
) -> ProviderError:
    """The `ProviderError` for an exception raised by the openai or anthropic SDK (same hierarchy): by HTTP status
    (401/403 auth, 429 rate limit, 408/409/5xx server, other 4xx request), else by kind (timeout, connection,
    undecodable body). The message is redacted; the SDK exception is not kept (it may quote the key)."""
    names = {c.__name__ for c in type(exc).__mro__}
    status = getattr(exc, "status_code", None)
    detail = redact(str(exc), secrets)[:500]
    if isinstance(status, int) and status >= 400 and "APIResponseValidationError" not in names:
        retry_after = _retry_after(exc)
        if status in (401, 403):
            return ProviderAuthError(
                "LLM_AUTH",
                f"{provider} at {where} refused the API key (HTTP {status}): {detail}",
                "check the key (ARGUS_LLM_API_KEY, OPENAI_API_KEY or ANTHROPIC_API_KEY) and that it may use this model",
                status_code=status,
            )
        if status == 429:
            return ProviderRateLimitError(
                "LLM_RATE_LIMITED",
                f"{provider} at {where} is rate limiting (HTTP 429): {detail}",
                "lower the request rate or raise the account's limits; retries back off exponentially",
                status_code=status,
                retry_after=retry_after,
            )
        if status in (408, 409) or status >= 500:
            return ProviderServerError(
                "LLM_SERVER_ERROR",
                f"{provider} at {where} failed (HTTP {status}): {detail}",
                "the server failed or is overloaded; it is retried with backoff",
                status_code=status,
                retry_after=retry_after,
            )
        return ProviderRequestError(
            "LLM_BAD_REQUEST",
            f"{provider} at {where} rejected the request (HTTP {status}): {detail}",
            "check the model name, max_tokens and the messages",
            status_code=status,
        )
    if "APITimeoutError" in names or "TimeoutException" in names or isinstance(exc, TimeoutError):
        return ProviderTimeoutError("LLM_TIMEOUT", f"{provider} at {where} did not answer in time: {detail}")
    if "APIConnectionError" in names or isinstance(exc, ConnectionError):
        return ProviderConnectionError(
            "LLM_CONNECTION",
            f"cannot reach {provider} at {where}: {detail}",
            "check ARGUS_LLM_BASE_URL and that the server is running",
        )
    if isinstance(exc, ValueError) or "APIResponseValidationError" in names:  # incl. JSONDecodeError, pydantic's
        body = getattr(exc, "doc", None)  # JSONDecodeError keeps the text it could not decode
        excerpt = f"; the body began {redact(body[:200], secrets)!r}" if isinstance(body, str) and body else ""
        return MalformedResponseError(
            "LLM_MALFORMED_RESPONSE",
            f"{provider} at {where} answered with something that is not a completion: {type(exc).__name__}: "
            f"{detail}{excerpt}",
            "is the base URL an OpenAI-compatible /v1 endpoint (or Anthropic's API)?",
        )
    return ProviderError("LLM_UNEXPECTED", f"{provider} at {where}: {type(exc).__name__}: {detail}")


class Provider:
    """Base class of the providers (module docstring). Construct with a `ProviderConfig` (`load_config`);
    `sleep` and `rng` are injectable so tests observe the backoff without waiting."""

    name = "provider"

    def __init__(
        self,
        config: ProviderConfig,
        *,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
        cache: ResponseCache | None = None,
    ) -> None:
        self.config = config
        remember_config(config)  # scrub_secrets knows its key from now on
        self.usage = Usage()
        self.cache = cache if cache is not None else ResponseCache(config.cache_dir)
        self._sleep = sleep
        self._rng = rng or random.Random()
        self._lock = threading.Lock()
        self._client: Any = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.config.model!r}, base_url={self.config.public_base_url!r})"

    # -- the interface ----------------------------------------------------------------------------------------

    def complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        max_tokens: int,
        temperature: float | None,
        stop: Sequence[str] | None = None,
        timeout: float | None = None,
    ) -> Completion:
        """The model's answer to `messages`. Cache per `config.cache_mode`; on a miss, one request with up to
        `config.max_retries` retries of transient failures (429, 5xx, timeouts, connection errors) after
        exponential backoff with jitter (the server's Retry-After when longer). `timeout` (seconds, default
        `config.timeout_s`) bounds each attempt. Raises a `ProviderError` subclass."""
        request = self.build_request(messages, max_tokens=max_tokens, temperature=temperature, stop=stop)
        payload = request.to_json()
        key = request_hash(payload)
        mode = self.config.cache_mode
        started = time.monotonic()
        if mode in (CacheMode.USE, CacheMode.REPLAY):
            hit = self.cache.get(key, payload)
            if hit is not None:
                completion = self._from_cache(hit, key, time.monotonic() - started)
                with self._lock:
                    self.usage.cache_hits += 1
                return completion
            if mode is CacheMode.REPLAY:
                miss = CacheMissError(
                    "LLM_CACHE_MISS",
                    f"replay-only: no cached response for request {key[:16]} ({self.name}, model "
                    f"{request.model}) in {self.cache.directory}",
                    "the prompt differs from the recorded run, or the cache directory is not the run's; set "
                    "ARGUS_LLM_CACHE=use to call the model",
                )
                miss.request_hash = key
                raise miss
        try:
            self.client()  # the SDK import and client set-up are not the request's latency
            started = time.monotonic()
            reply, attempts = self._send_with_retries(request, self.config.timeout_s if timeout is None else timeout)
        except ProviderError as e:
            e.request_hash = key  # so that a failed exchange can be recorded against its request
            raise
        latency = time.monotonic() - started
        reply = RawReply(scrub_secrets(reply.text), reply.model, reply.input_tokens, reply.output_tokens,
                         reply.finish_reason)  # fmt: skip
        cost = cost_usd(reply.model or request.model, reply.input_tokens, reply.output_tokens, self.config.prices)
        if cost is None and reply.model != request.model:
            cost = cost_usd(request.model, reply.input_tokens, reply.output_tokens, self.config.prices)
        completion = Completion(
            text=reply.text,
            model=reply.model or request.model,
            input_tokens=reply.input_tokens,
            output_tokens=reply.output_tokens,
            cost_usd=cost,
            cached=False,
            latency_s=latency,
            request_hash=key,
            provider=self.name,
            finish_reason=reply.finish_reason,
            attempts=attempts,
        )
        with self._lock:
            self.usage.input_tokens += reply.input_tokens or 0
            self.usage.output_tokens += reply.output_tokens or 0
            if cost is None:
                self.usage.unpriced += 1
            else:
                self.usage.cost_usd += cost
        if mode in (CacheMode.USE, CacheMode.REFRESH):
            try:
                self.cache.put(key, payload, {**completion.to_json(), "cached": False})
            except OSError as e:  # a full or read-only disk costs the replay, not the answer
                log.warning("%s: cannot write the response cache in %s: %s", self.name, self.cache.directory, e)
        return completion

    def build_request(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        max_tokens: int,
        temperature: float | None,
        stop: Sequence[str] | None = None,
    ) -> Request:
        """The normalized request `complete` would send (and hash); every secret in the messages is replaced by
        ``[REDACTED:NAME]`` (`scrub_secrets`)."""
        if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens <= 0:
            raise ProviderRequestError("LLM_BAD_REQUEST", "max_tokens must be a positive int", actual=max_tokens)
        if temperature is not None and not (isinstance(temperature, int | float) and 0 <= temperature <= 2):
            raise ProviderRequestError(
                "LLM_BAD_REQUEST", "temperature must be None or a number in [0, 2]", actual=temperature
            )
        if isinstance(stop, str):
            stop = [stop]
        return Request(
            provider=self.name,
            base_url=self.config.public_base_url,
            model=self.config.model,
            messages=scrub_secrets(normalize_messages(messages)),
            max_tokens=max_tokens,
            temperature=float(temperature) if temperature is not None else None,
            stop=tuple(str(s) for s in stop) if stop else None,
        )

    def describe(self) -> dict[str, Any]:
        """Provider, model, endpoint and settings as JSON (no key): for the run store's config."""
        return self.config.describe()

    def close(self) -> None:
        """Close the SDK client's connections (a later call opens new ones)."""
        client, self._client = self._client, None
        if client is not None and callable(getattr(client, "close", None)):
            client.close()

    def __enter__(self) -> Provider:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- retries ----------------------------------------------------------------------------------------------

    def backoff_delay(self, retry: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number `retry` (0-based): ``d = base * 2**retry`` capped at
        `backoff_max_s`, with jitter drawn uniformly from ``[d/2, d]``; at least the server's Retry-After."""
        d = min(self.config.backoff_max_s, self.config.backoff_base_s * (2**retry))
        delay = d / 2 + self._rng.uniform(0, d / 2)
        if retry_after is not None:
            delay = max(delay, min(retry_after, max(self.config.backoff_max_s, d)))
        return delay

    def _send_with_retries(self, request: Request, timeout: float) -> tuple[RawReply, int]:
        attempts = 0
        while True:
            attempts += 1
            with self._lock:
                self.usage.requests += 1
            try:
                return self._send(request, timeout), attempts
            except ProviderError as e:
                e.attempts = attempts
                if not e.retryable or attempts > self.config.max_retries:
                    with self._lock:
                        self.usage.failures += 1
                    if e.retryable:
                        e.message = f"{e.message} (gave up after {attempts} attempts)"
                        e.args = (e.render(),)
                    raise
                delay = self.backoff_delay(attempts - 1, e.retry_after)
                log.warning(
                    "%s: %s; retry %d of %d in %.2f s", self.name, e.code, attempts, self.config.max_retries, delay
                )
                with self._lock:
                    self.usage.retries += 1
                self._sleep(delay)

    # -- what subclasses provide ------------------------------------------------------------------------------

    def client(self) -> Any:
        """The SDK client, created (and the SDK imported) on first use."""
        return None

    def _send(self, request: Request, timeout: float) -> RawReply:
        """Send `request` once; return the reply or raise a `ProviderError` (redacted)."""
        raise NotImplementedError

    def api_key_now(self) -> str:
        """The key for the request about to be sent, read now (`ProviderConfig.resolve_api_key`); raises
        `ProviderConfigError` (``LLM_CONFIG_MISSING``) when its variable is no longer set."""
        key = self.config.resolve_api_key()
        if key is None:
            raise ProviderConfigError(
                "LLM_CONFIG_MISSING",
                f"the API key variable {self.config.api_key_env} was set when the provider was configured and is not "
                "set now",
                f"set {self.config.api_key_env} again",
            )
        return key

    def _secrets(self) -> tuple[str | None, ...]:
        return (self.config.resolve_api_key(), *secret_values())

    def _error_from(self, exc: BaseException) -> ProviderError:
        return classify_sdk_error(exc, provider=self.name, where=self.config.public_base_url, secrets=self._secrets())

    def _malformed(self, what: str, response: Any = None) -> MalformedResponseError:
        excerpt = ""
        if response is not None:
            dump = getattr(response, "model_dump_json", None)
            text = dump(exclude_none=True) if callable(dump) else repr(response)
            excerpt = f"; it sent {text[:300]}"
        return MalformedResponseError(
            "LLM_MALFORMED_RESPONSE",
            redact(f"{self.name} at {self.config.public_base_url} answered without {what}{excerpt}", self._secrets()),
            "is the base URL an OpenAI-compatible /v1 endpoint (or Anthropic's API), and the model a chat model?",
        )

    def _from_cache(self, hit: dict[str, Any], key: str, latency: float) -> Completion:
        return Completion(
            text=scrub_secrets(str(hit.get("text", ""))),
            model=str(hit.get("model", self.config.model)),
            input_tokens=hit.get("input_tokens"),
            output_tokens=hit.get("output_tokens"),
            cost_usd=hit.get("cost_usd"),
            cached=True,
            latency_s=latency,
            request_hash=key,
            provider=self.name,
            finish_reason=hit.get("finish_reason"),
            attempts=0,
        )


def token_count(value: Any) -> int | None:
    """A token count from a usage object, or None when the endpoint did not report one."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None
