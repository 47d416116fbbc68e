"""Providers against a scripted OpenAI-compatible server and a fake of Anthropic's Messages API: responses, retries
with backoff (recorded, never slept), timeouts, malformed output, authentication errors, cost, and key redaction."""

from __future__ import annotations

import logging
import socket
import subprocess
import sys
import traceback
from pathlib import Path

import pytest

from argus.agent.providers import (
    MalformedResponseError,
    Provider,
    ProviderAuthError,
    ProviderConnectionError,
    ProviderError,
    ProviderRateLimitError,
    ProviderRequestError,
    ProviderServerError,
    ProviderTimeoutError,
    ProviderUnavailableError,
    redact,
)
from tests.agent.conftest import KEY
from tests.agent.llm_server import Reply, ScriptedLLMServer, missing_choices, not_json, ok, slow, status

USER = [{"role": "user", "content": "write the kernel"}]


def ask(provider: Provider, messages: list[dict[str, str]] | None = None, **kw: object):
    kw.setdefault("max_tokens", 64)
    kw.setdefault("temperature", 0.0)
    return provider.complete(messages or USER, **kw)


# -- correct responses -------------------------------------------------------------------------------------------


def test_openai_compatible_completion_text_tokens_cost_and_request(make, server: ScriptedLLMServer) -> None:
    server.script = [ok("def kernel(): ...", input_tokens=1000, output_tokens=500)]
    provider = make()
    messages = [{"role": "system", "content": "you write DSL kernels"}, *USER]
    c = ask(provider, messages, max_tokens=77, temperature=0.3, stop=["```"])
    assert c.text == "def kernel(): ..."
    assert (c.input_tokens, c.output_tokens) == (1000, 500)
    assert c.cost_usd == pytest.approx((1000 * 2.50 + 500 * 10.0) / 1e6)  # gpt-4o's list price
    assert not c.cached and c.attempts == 1 and c.latency_s >= 0 and c.finish_reason == "stop"
    assert c.provider == "openai" and len(c.request_hash) == 64
    (req,) = server.requests
    assert req.path == "/v1/chat/completions"
    assert req.body["model"] == "gpt-4o"
    assert req.body["messages"] == messages
    assert req.body["max_tokens"] == 77 and req.body["temperature"] == 0.3 and req.body["stop"] == ["```"]
    assert req.headers["authorization"] == f"Bearer {KEY}"
    assert provider.usage.requests == 1 and provider.usage.cost_usd == pytest.approx(c.cost_usd)


def test_counterexample_text_reaches_the_prompt(make, server: ScriptedLLMServer) -> None:
    counterexample = "violated MMA_OPERAND_ALIGN at gemm.py:42: thread 17 reads sA[3, 64] tagged (A, 3, 128)"
    server.script = [ok("fixed")]
    ask(make(), [{"role": "user", "content": f"The verifier said:\n{counterexample}\nFix the kernel."}])
    assert counterexample in server.requests[0].prompt_text()


def test_temperature_none_is_left_out(make, server: ScriptedLLMServer) -> None:
    server.script = [ok("a")]
    ask(make(), temperature=None)
    assert "temperature" not in server.requests[0].body


def test_hosted_openai_gets_max_completion_tokens(make, server: ScriptedLLMServer) -> None:
    from argus.agent.providers import load_config

    config = load_config(provider="openai", model="gpt-5", api_key=KEY, env={"XDG_CONFIG_HOME": "/nonexistent"})
    assert config.max_tokens_field == "max_completion_tokens"  # OpenAI's reasoning models refuse max_tokens
    local = load_config(model="llama", base_url=server.openai_base_url, env={"XDG_CONFIG_HOME": "/nonexistent"})
    assert local.max_tokens_field == "max_tokens"


# -- retries and backoff -----------------------------------------------------------------------------------------


def test_rate_limit_then_success_is_retried_with_exponential_backoff(make, server, sleeps) -> None:
    server.script = [status(429), status(429), status(429), ok("after three 429s")]
    provider = make(max_retries=5)
    c = ask(provider)
    assert c.text == "after three 429s" and c.attempts == 4
    assert len(server.requests) == 4 and len(sleeps) == 3
    base = provider.config.backoff_base_s
    for k, delay in enumerate(sleeps):  # jittered within [d/2, d], d = base * 2**k
        assert base * 2**k / 2 <= delay <= base * 2**k
    assert provider.usage.retries == 3 and provider.usage.requests == 4 and provider.usage.failures == 0


def test_server_error_then_success_is_retried(make, server, sleeps) -> None:
    server.script = [status(500), status(503), ok("ok now")]
    assert ask(make()).text == "ok now"
    assert len(sleeps) == 2 and len(server.requests) == 3


def test_retry_after_header_is_honoured(make, server, sleeps) -> None:
    server.script = [status(429, retry_after=7), ok("x")]
    ask(make())
    assert sleeps[0] >= 7


def test_backoff_is_capped() -> None:
    import random

    from argus.agent.providers import load_config
    from argus.agent.providers.base import Provider as Base

    config = load_config(model="m", base_url="http://127.0.0.1:1/v1", env={"XDG_CONFIG_HOME": "/nonexistent"})
    p = Base(config, rng=random.Random(1))
    delays = [p.backoff_delay(k) for k in range(12)]
    assert all(d <= config.backoff_max_s for d in delays)
    assert delays[-1] >= config.backoff_max_s / 2  # capped, still jittered in [max/2, max]


def test_retries_exhausted_raise_the_typed_error(make, server, sleeps) -> None:
    server.script = [status(500), status(500), status(500)]
    with pytest.raises(ProviderServerError) as info:
        ask(make(max_retries=2))
    assert info.value.status_code == 500 and info.value.attempts == 3
    assert "gave up after 3 attempts" in str(info.value)
    assert len(sleeps) == 2 and len(server.requests) == 3


def test_rate_limit_exhausted_is_a_rate_limit_error(make, server) -> None:
    server.script = [status(429), status(429)]
    with pytest.raises(ProviderRateLimitError):
        ask(make(max_retries=1))


def test_401_is_not_retried_and_says_what_to_check(make, server, sleeps) -> None:
    server.script = [status(401, f"Incorrect API key provided: {KEY}. Find your key at ..."), ok("never sent")]
    with pytest.raises(ProviderAuthError) as info:
        ask(make())
    e = info.value
    assert e.code == "LLM_AUTH" and e.status_code == 401 and not e.retryable
    assert "ARGUS_LLM_API_KEY" in str(e)
    assert len(server.requests) == 1 and sleeps == []


def test_other_4xx_is_not_retried(make, server, sleeps) -> None:
    server.script = [status(404, "model 'nope' not found")]
    with pytest.raises(ProviderRequestError) as info:
        ask(make())
    assert info.value.code == "LLM_BAD_REQUEST" and "not found" in str(info.value) and sleeps == []


def test_timeout_raises_a_timeout_error(make, server) -> None:
    server.script = [slow(5.0)]
    with pytest.raises(ProviderTimeoutError) as info:
        ask(make(max_retries=0), timeout=0.2)
    assert info.value.code == "LLM_TIMEOUT" and info.value.retryable


def test_timeout_is_retried(make, server, sleeps) -> None:
    server.script = [slow(5.0), ok("second try")]
    c = ask(make(max_retries=2), timeout=0.2)
    assert c.text == "second try" and c.attempts == 2 and len(sleeps) == 1


def test_configured_timeout_applies_when_none_is_passed(make, server) -> None:
    server.script = [slow(5.0)]
    with pytest.raises(ProviderTimeoutError):
        ask(make(max_retries=0, timeout=0.2))


def test_connection_error_is_retried_then_raised(make, sleeps) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again when the block ends: nothing listens there
    provider = make(base_url=f"http://127.0.0.1:{port}/v1", max_retries=2)
    with pytest.raises(ProviderConnectionError) as info:
        ask(provider)
    assert info.value.code == "LLM_CONNECTION" and info.value.attempts == 3 and len(sleeps) == 2


# -- malformed output --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "reply, what",
    [
        (not_json(), "not a completion"),
        (missing_choices(), "without choices"),
        (Reply(payload={"choices": [], "model": "m"}), "without choices"),
        (Reply(payload={"choices": [{"index": 0, "message": {"role": "assistant", "content": None}}]}), "text"),
    ],
    ids=["not-json", "no-choices", "empty-choices", "null-content"],
)
def test_malformed_responses_raise_a_clear_error_without_retrying(make, server, sleeps, reply, what) -> None:
    server.script = [reply, ok("never reached")]
    with pytest.raises(MalformedResponseError) as info:
        ask(make())
    assert info.value.code == "LLM_MALFORMED_RESPONSE" and what in str(info.value)
    assert isinstance(info.value, ProviderError) and len(server.requests) == 1 and sleeps == []


def test_bad_messages_are_refused_before_anything_is_sent(make, server) -> None:
    provider = make()
    for messages in ([], [{"role": "robot", "content": "x"}], [{"role": "user", "content": 3}], "hello"):
        with pytest.raises(ProviderRequestError) as info:
            provider.complete(messages, max_tokens=5, temperature=0)
        assert info.value.code == "LLM_BAD_MESSAGES"
    with pytest.raises(ProviderRequestError):
        provider.complete(USER, max_tokens=0, temperature=0)
    assert server.requests == []


# -- cost --------------------------------------------------------------------------------------------------------


def test_unknown_model_costs_none_not_zero(make, server) -> None:
    server.script = [ok("a", model="my-local-llama")]
    provider = make(model="my-local-llama")
    c = ask(provider)
    assert c.cost_usd is None
    assert provider.usage.unpriced == 1 and provider.usage.cost_usd == 0.0


def test_dated_snapshots_take_their_model_s_price() -> None:
    from argus.agent.providers import price_for

    assert price_for("gpt-4o-2024-08-06") == price_for("gpt-4o")
    assert price_for("claude-sonnet-4-5-20250929") == price_for("claude-sonnet-4-5")
    assert price_for("gpt-4o-mini") != price_for("gpt-4o")
    assert price_for("gpt-4o-mini-2024-07-18") == price_for("gpt-4o-mini")
    assert price_for("gpt-4omega") is None and price_for("llama3.1:70b") is None


def test_config_file_prices_override_and_extend_the_table(make, server, tmp_path: Path) -> None:
    config = tmp_path / "argus.toml"
    config.write_text(
        '[llm.prices."my-local-llama"]\ninput_per_mtok = 0.5\noutput_per_mtok = 1.5\n'
        '[llm.prices."gpt-4o"]\ninput_per_mtok = 1.0\noutput_per_mtok = 2.0\n'
    )
    server.script = [ok("a", input_tokens=2000, output_tokens=1000), ok("b", input_tokens=2000, output_tokens=1000)]
    assert ask(make(model="my-local-llama", config_file=config)).cost_usd == pytest.approx((1000 + 1500) / 1e6)
    assert ask(make(model="gpt-4o", config_file=config)).cost_usd == pytest.approx((2000 + 2000) / 1e6)


# -- keys never leak ---------------------------------------------------------------------------------------------


def test_the_key_never_reaches_errors_logs_or_the_cache(make, server, tmp_path: Path, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    server.script = [
        status(500, f"upstream said: invalid key {KEY}"),
        ok("cached answer"),
        status(401, f"Incorrect API key provided: {KEY}"),
    ]
    provider = make(cache="use", max_retries=1)
    ask(provider)  # one retry logged, then an answer written to the cache
    with pytest.raises(ProviderAuthError) as info:
        ask(provider, [{"role": "user", "content": "another prompt"}])
    e = info.value
    shown = "".join(traceback.format_exception(e))
    for text in (str(e), repr(e), e.message, shown, caplog.text, repr(provider), repr(provider.config),
                 str(provider.describe())):  # fmt: skip
        assert KEY not in text
    assert e.__cause__ is None and e.__suppress_context__  # the SDK's exception (which quotes the key) is not shown
    assert "[REDACTED]" in str(e)
    files = list((tmp_path / "llm-cache").rglob("*.json"))
    assert files and all(KEY not in f.read_text() for f in files)
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"  # it was sent, to the server only
    assert provider.describe()["has_api_key"] is True


def test_redact_removes_the_secret_and_key_shaped_tokens() -> None:
    text = f"key={KEY}; Authorization: Bearer abcdefghijkl; sk-ant-api03-XYZxyz123; masked sk-proj-abc****wxyz"
    cleaned = redact(text, [KEY])
    assert KEY not in cleaned and "abcdefghijkl" not in cleaned and "XYZxyz123" not in cleaned
    assert "abc****wxyz" not in cleaned
    assert redact("nothing secret here: 128x256 tile, 4 stages") == "nothing secret here: 128x256 tile, 4 stages"


# -- the SDKs are optional ---------------------------------------------------------------------------------------


def test_importing_the_providers_does_not_import_the_sdks() -> None:
    code = (
        "import sys, argus.agent.providers, argus.agent.store, argus.cli.runs_cmd\n"
        "print('openai' in sys.modules, 'anthropic' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split() == ["False", "False"]


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_missing_sdk_says_how_to_install_it(make, server, monkeypatch, provider) -> None:
    monkeypatch.setitem(sys.modules, provider, None)  # import fails as if not installed
    with pytest.raises(ProviderUnavailableError) as info:
        ask(make(provider=provider))
    assert info.value.code == "LLM_SDK_MISSING" and 'pip install "argus-kernels[llm]"' in str(info.value)
    assert server.requests == []


# -- Anthropic ---------------------------------------------------------------------------------------------------


def test_anthropic_messages_request_and_response(make, server: ScriptedLLMServer) -> None:
    server.script = [ok("fixed kernel", input_tokens=1000, output_tokens=100, model="claude-opus-4-5-20251101")]
    provider = make(provider="anthropic")
    messages = [{"role": "system", "content": "you write DSL kernels"}, *USER]
    c = ask(provider, messages, max_tokens=99, temperature=0.5, stop=["END"])
    assert c.text == "fixed kernel" and c.provider == "anthropic" and c.finish_reason == "end_turn"
    assert c.model == "claude-opus-4-5-20251101"
    assert c.cost_usd == pytest.approx((1000 * 5.0 + 100 * 25.0) / 1e6)
    (req,) = server.requests
    assert req.path == "/v1/messages"
    assert req.body["system"] == "you write DSL kernels"
    assert req.body["messages"] == USER
    assert req.body["max_tokens"] == 99 and req.body["temperature"] == 0.5 and req.body["stop_sequences"] == ["END"]
    assert KEY in (req.headers.get("x-api-key", "") + req.headers.get("authorization", ""))


def test_anthropic_overload_is_retried_and_auth_is_not(make, server, sleeps) -> None:
    server.script = [status(529), status(429), ok("fine")]
    provider = make(provider="anthropic")
    assert ask(provider).text == "fine" and len(sleeps) == 2
    server.script = [status(401, f"invalid x-api-key {KEY}")]
    with pytest.raises(ProviderAuthError) as info:
        ask(provider, [{"role": "user", "content": "other"}])
    assert KEY not in str(info.value) and len(sleeps) == 2


@pytest.mark.parametrize("reply", [missing_choices(), not_json(), Reply(payload={"content": [], "model": "m"})])
def test_anthropic_malformed_responses(make, server, reply) -> None:
    server.script = [reply]
    with pytest.raises(MalformedResponseError):
        ask(make(provider="anthropic"))


def test_anthropic_timeout(make, server) -> None:
    server.script = [slow(5.0)]
    with pytest.raises(ProviderTimeoutError):
        ask(make(provider="anthropic", max_retries=0), timeout=0.2)


def test_anthropic_needs_a_user_turn_first(make, server) -> None:
    with pytest.raises(ProviderRequestError):
        ask(make(provider="anthropic"), [{"role": "assistant", "content": "hi"}, *USER])
    assert server.requests == []


def test_a_malformed_response_shows_what_was_sent(make, server) -> None:
    server.script = [not_json(), missing_choices()]
    provider = make()
    with pytest.raises(MalformedResponseError) as info:
        ask(provider)
    assert "upstream proxy error" in str(info.value)
    with pytest.raises(MalformedResponseError) as info:
        ask(provider, [{"role": "user", "content": "again"}])
    assert "chat.completion" in str(info.value)


def test_classification_of_sdk_exceptions() -> None:
    from argus.agent.providers import classify_sdk_error

    class APIResponseValidationError(Exception):  # the SDKs' name; carries the 200 of the response it could not read
        status_code = 200

    class APITimeoutError(Exception):
        pass

    def kind(exc: BaseException) -> str:
        return type(classify_sdk_error(exc, provider="openai", where="http://x", secrets=[KEY])).__name__

    assert kind(APIResponseValidationError("bad")) == "MalformedResponseError"
    assert kind(APITimeoutError()) == "ProviderTimeoutError"
    assert kind(ConnectionRefusedError()) == "ProviderConnectionError"
    assert kind(RuntimeError(f"odd {KEY}")) == "ProviderError"
    assert KEY not in str(classify_sdk_error(RuntimeError(f"odd {KEY}"), provider="p", where="w", secrets=[KEY]))
