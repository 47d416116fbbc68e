"""Provider configuration (arguments over environment over file, clear errors naming what to set) and the on-disk
response cache (hit, refresh, off, replay-only, what the key covers)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from argus.agent.providers import (
    CacheMissError,
    CacheMode,
    ProviderConfigError,
    load_config,
    request_hash,
)
from argus.agent.providers.config import NO_KEY
from tests.agent.conftest import KEY
from tests.agent.llm_server import ScriptedLLMServer, ok

USER = [{"role": "user", "content": "tile the GEMM"}]


def env(tmp_path: Path, **values: str) -> dict[str, str]:
    return {"XDG_CONFIG_HOME": str(tmp_path / "cfg"), **values}


def write_config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "cfg" / "argus" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# -- configuration -----------------------------------------------------------------------------------------------


def test_arguments_override_environment_which_overrides_the_file(tmp_path: Path) -> None:
    path = write_config(
        tmp_path,
        '[llm]\nprovider = "openai"\nmodel = "file-model"\nbase_url = "http://file:1/v1"\ntimeout = 30\n'
        'max_retries = 1\ncache = "off"\n',
    )
    from_file = load_config(env=env(tmp_path))
    assert (from_file.model, from_file.base_url, from_file.timeout_s, from_file.max_retries) == (
        "file-model", "http://file:1/v1", 30.0, 1,
    )  # fmt: skip
    assert from_file.cache_mode is CacheMode.OFF
    assert from_file.sources["model"] == f"file {path} [llm] model"
    e = env(tmp_path, ARGUS_LLM_MODEL="env-model", ARGUS_LLM_TIMEOUT="5", ARGUS_LLM_CACHE="replay-only")
    from_env = load_config(env=e)
    assert from_env.model == "env-model" and from_env.timeout_s == 5.0 and from_env.cache_mode is CacheMode.REPLAY
    assert from_env.base_url == "http://file:1/v1"  # not set in the environment: the file's
    explicit = load_config(model="arg-model", timeout=9, env=e)
    assert explicit.model == "arg-model" and explicit.timeout_s == 9.0 and explicit.sources["model"] == "argument"


def test_a_missing_model_names_what_to_set(tmp_path: Path) -> None:
    with pytest.raises(ProviderConfigError) as info:
        load_config(env=env(tmp_path))
    assert info.value.code == "LLM_CONFIG_MISSING"
    assert "ARGUS_LLM_MODEL" in str(info.value) and "config.toml" in str(info.value)


@pytest.mark.parametrize("provider, variable", [("openai", "OPENAI_API_KEY"), ("anthropic", "ANTHROPIC_API_KEY")])
def test_a_hosted_api_without_a_key_names_the_variables(tmp_path: Path, provider: str, variable: str) -> None:
    with pytest.raises(ProviderConfigError) as info:
        load_config(provider=provider, model="m", env=env(tmp_path))
    assert "ARGUS_LLM_API_KEY" in str(info.value) and variable in str(info.value)


@pytest.mark.parametrize("provider, variable", [("openai", "OPENAI_API_KEY"), ("anthropic", "ANTHROPIC_API_KEY")])
def test_the_key_falls_back_to_the_provider_s_own_variable(tmp_path: Path, provider: str, variable: str) -> None:
    config = load_config(provider=provider, model="m", env=env(tmp_path, **{variable: KEY}))
    assert config.api_key == KEY and config.sources["api_key"] == f"env {variable}"
    own = load_config(provider=provider, model="m", env=env(tmp_path, **{variable: "other", "ARGUS_LLM_API_KEY": KEY}))
    assert own.api_key == KEY  # ARGUS_LLM_API_KEY first


def test_api_key_env_in_the_file_names_the_variable(tmp_path: Path) -> None:
    write_config(tmp_path, '[llm]\nmodel = "m"\napi_key_env = "MY_VLLM_KEY"\n')
    config = load_config(env=env(tmp_path, MY_VLLM_KEY=KEY))
    assert config.api_key == KEY and "MY_VLLM_KEY" in config.sources["api_key"]


def test_a_local_endpoint_needs_no_key(tmp_path: Path) -> None:
    config = load_config(model="qwen2.5-coder", base_url="http://localhost:11434/v1", env=env(tmp_path))
    assert config.api_key == NO_KEY and config.describe()["has_api_key"] is False


def test_the_key_is_not_in_repr_or_describe(tmp_path: Path) -> None:
    config = load_config(model="m", api_key=KEY, base_url="https://user:pw@example.com/v1/", env=env(tmp_path))
    assert KEY not in repr(config) and KEY not in json.dumps(config.describe())
    assert config.describe()["base_url"] == "https://example.com/v1"  # no user:password either


@pytest.mark.parametrize(
    "settings, needle",
    [
        ({"provider": "mistral"}, "ARGUS_LLM_PROVIDER"),
        ({"cache": "sometimes"}, "ARGUS_LLM_CACHE"),
        ({"base_url": "localhost:8000"}, "ARGUS_LLM_BASE_URL"),
        ({"timeout": -1}, "timeout"),
    ],
)
def test_invalid_settings_are_refused_with_what_to_set(tmp_path: Path, settings: dict, needle: str) -> None:
    with pytest.raises(ProviderConfigError) as info:
        load_config(model="m", api_key=KEY, env=env(tmp_path), **settings)
    assert info.value.code == "LLM_CONFIG_INVALID" and needle in str(info.value)


def test_argus_config_must_exist_and_be_valid(tmp_path: Path) -> None:
    with pytest.raises(ProviderConfigError) as info:
        load_config(env=env(tmp_path, ARGUS_CONFIG=str(tmp_path / "missing.toml")))
    assert "missing.toml" in str(info.value)
    bad = tmp_path / "bad.toml"
    bad.write_text("[llm\nmodel=")
    with pytest.raises(ProviderConfigError):
        load_config(config_file=bad, env=env(tmp_path))
    prices = tmp_path / "prices.toml"
    prices.write_text('[llm]\nmodel = "m"\n[llm.prices."m"]\ninput_per_mtok = 1\n')
    with pytest.raises(ProviderConfigError) as info:
        load_config(config_file=prices, base_url="http://127.0.0.1:1/v1", env=env(tmp_path))
    assert "output_per_mtok" in str(info.value)


def test_cache_dir_defaults_under_argus_cache_dir(tmp_path: Path) -> None:
    config = load_config(model="m", base_url="http://127.0.0.1:1/v1", env=env(tmp_path, ARGUS_CACHE_DIR="/x/cache"))
    assert config.cache_dir == Path("/x/cache/llm")


# -- the response cache ------------------------------------------------------------------------------------------


def test_a_cache_hit_replays_without_a_request(make, server: ScriptedLLMServer, tmp_path: Path) -> None:
    server.script = [ok("the answer", input_tokens=100, output_tokens=50)]
    provider = make(cache="use")
    first = provider.complete(USER, max_tokens=10, temperature=0)
    second = provider.complete(USER, max_tokens=10, temperature=0)
    assert len(server.requests) == 1
    assert second.cached and not first.cached
    assert (second.text, second.input_tokens, second.output_tokens, second.cost_usd, second.request_hash) == (
        first.text, first.input_tokens, first.output_tokens, first.cost_usd, first.request_hash,
    )  # fmt: skip
    assert provider.usage.cache_hits == 1 and provider.usage.cost_usd == pytest.approx(first.cost_usd)
    (entry,) = (tmp_path / "llm-cache").rglob("*.json")
    stored = json.loads(entry.read_text())
    assert stored["request"]["messages"] == USER and stored["response"]["text"] == "the answer"


def test_a_new_provider_replays_a_recorded_run_exactly(make, server: ScriptedLLMServer) -> None:
    server.script = [ok("step 1"), ok("step 2")]
    recorder = make(cache="use")
    recorded = [recorder.complete([{"role": "user", "content": f"step {i}"}], max_tokens=10, temperature=0).text
                for i in (1, 2)]  # fmt: skip
    replayer = make(cache="replay")
    replayed = [replayer.complete([{"role": "user", "content": f"step {i}"}], max_tokens=10, temperature=0).text
                for i in (1, 2)]  # fmt: skip
    assert replayed == recorded and len(server.requests) == 2


def test_replay_only_miss_is_an_error_and_sends_nothing(make, server: ScriptedLLMServer) -> None:
    with pytest.raises(CacheMissError) as info:
        make(cache="replay").complete(USER, max_tokens=10, temperature=0)
    assert info.value.code == "LLM_CACHE_MISS" and "ARGUS_LLM_CACHE=use" in str(info.value)
    assert server.requests == []


def test_refresh_calls_again_and_overwrites(make, server: ScriptedLLMServer) -> None:
    server.script = [ok("old"), ok("new")]
    make(cache="use").complete(USER, max_tokens=10, temperature=0)
    assert make(cache="refresh").complete(USER, max_tokens=10, temperature=0).text == "new"
    assert make(cache="use").complete(USER, max_tokens=10, temperature=0).text == "new"
    assert len(server.requests) == 2


def test_off_neither_reads_nor_writes(make, server: ScriptedLLMServer, tmp_path: Path) -> None:
    server.script = [ok("a"), ok("b")]
    provider = make(cache="off")
    assert [provider.complete(USER, max_tokens=10, temperature=0).text for _ in range(2)] == ["a", "b"]
    assert not (tmp_path / "llm-cache").exists()


def test_the_hash_covers_the_request_but_not_the_key_or_timeout(make) -> None:
    base = make().build_request(USER, max_tokens=10, temperature=0)
    key = request_hash(base.to_json())
    variants = [
        make(model="gpt-4.1").build_request(USER, max_tokens=10, temperature=0),
        make(base_url="http://127.0.0.1:1/v1").build_request(USER, max_tokens=10, temperature=0),
        make().build_request([{"role": "user", "content": "tile the GEMM!"}], max_tokens=10, temperature=0),
        make().build_request(USER, max_tokens=11, temperature=0),
        make().build_request(USER, max_tokens=10, temperature=0.1),
        make().build_request(USER, max_tokens=10, temperature=0, stop=["x"]),
        make(provider="anthropic", model="gpt-4o").build_request(USER, max_tokens=10, temperature=0),
    ]
    assert len({request_hash(v.to_json()) for v in variants} | {key}) == len(variants) + 1
    same = make(api_key="sk-another-key-000000", timeout=3).build_request(USER, max_tokens=10, temperature=0)
    assert request_hash(same.to_json()) == key
    assert "api_key" not in json.dumps(base.to_json())


def test_a_cache_entry_for_another_request_is_not_used(make, server: ScriptedLLMServer, tmp_path: Path) -> None:
    server.script = [ok("genuine"), ok("fresh")]
    make(cache="use").complete(USER, max_tokens=10, temperature=0)
    (entry,) = (tmp_path / "llm-cache").rglob("*.json")
    stored = json.loads(entry.read_text())
    stored["request"]["messages"][0]["content"] = "something else"
    entry.write_text(json.dumps(stored))
    assert make(cache="use").complete(USER, max_tokens=10, temperature=0).text == "fresh"
    entry.write_text("{ truncated")  # an unreadable entry is a miss, not a crash
    with pytest.raises(CacheMissError):
        make(cache="replay").complete(USER, max_tokens=10, temperature=0)


def test_replay_only_needs_no_key(make, server: ScriptedLLMServer, tmp_path: Path) -> None:
    server.script = [ok("recorded")]
    make(cache="use").complete(USER, max_tokens=10, temperature=0)
    cache_dir = tmp_path / "llm-cache"
    hosted = load_config(provider="openai", model="gpt-4o", cache="replay", cache_dir=cache_dir, env=env(tmp_path))
    assert hosted.api_key == NO_KEY
    with pytest.raises(ProviderConfigError):
        load_config(provider="openai", model="gpt-4o", cache="use", env=env(tmp_path))


def test_an_unwritable_cache_costs_the_replay_not_the_answer(make, server: ScriptedLLMServer, tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the cache directory should be")
    server.script = [ok("still answered")]
    assert make(cache="use", cache_dir=blocker).complete(USER, max_tokens=10, temperature=0).text == "still answered"
