"""Provider configuration: explicit arguments, then environment variables, then a TOML file, then defaults.

Environment (all optional; docs/agent.md has examples for each endpoint):

==========================  ==================================================================================
``ARGUS_LLM_PROVIDER``      ``openai`` (any OpenAI-compatible endpoint; the default) or ``anthropic``
``ARGUS_LLM_MODEL``         the model name the endpoint expects (required: there is no default model)
``ARGUS_LLM_BASE_URL``      the endpoint (default: OpenAI's / Anthropic's API); e.g. ``http://localhost:8000/v1``
``ARGUS_LLM_API_KEY``       the key; falls back to ``OPENAI_API_KEY`` / ``ANTHROPIC_API_KEY`` by provider
``ARGUS_LLM_TIMEOUT``       seconds per request (default 120)
``ARGUS_LLM_MAX_RETRIES``   retries after the first attempt (default 5)
``ARGUS_LLM_CACHE``         response cache mode: ``use`` (default), ``refresh``, ``off``, ``replay``
``ARGUS_LLM_CACHE_DIR``     cache directory (default ``$ARGUS_CACHE_DIR/llm``, else ``~/.cache/argus/llm``)
``ARGUS_CONFIG``            the TOML file (default ``$XDG_CONFIG_HOME/argus/config.toml``, else
                            ``~/.config/argus/config.toml``); a file named here must exist
==========================  ==================================================================================

The file's ``[llm]`` table takes the same settings (``provider``, ``model``, ``base_url``, ``api_key_env`` — the
name of a variable holding the key —, ``api_key``, ``timeout``, ``max_retries``, ``backoff_base``,
``backoff_max``, ``cache``, ``cache_dir``, ``max_tokens_field``) and ``[llm.prices."MODEL"]`` tables with
``input_per_mtok`` and ``output_per_mtok``, which override or extend the built-in price table.

A missing required setting raises `ProviderConfigError` naming the variable and the file key to set.

The key: a `ProviderConfig` keeps the *name* of the variable the key was found in (`ProviderConfig.api_key_env`)
and reads its value only when a request is sent (`ProviderConfig.resolve_api_key`), so no long-lived object holds
it. A key given in code (``api_key=``, or found in an ``env=`` mapping given in code) or in the file (``api_key``)
is held (`ProviderConfig.held_api_key`), out of ``repr`` and `ProviderConfig.describe`; it is never written
anywhere (`argus.agent.providers.secrets.scrub_secrets` knows it).
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from argus.agent.providers.errors import ProviderConfigError
from argus.agent.providers.pricing import DEFAULT_PRICES, Price


class CacheMode(StrEnum):
    """How `Provider.complete` uses the on-disk response cache."""

    USE = "use"  # answer from the cache when the request is there; else call and store
    REFRESH = "refresh"  # always call, and overwrite the stored answer
    OFF = "off"  # neither read nor write
    REPLAY = "replay"  # only the cache: a miss is an error (`CacheMissError`), nothing is sent


PROVIDERS = ("openai", "anthropic")
DEFAULT_BASE_URLS = {"openai": "https://api.openai.com/v1", "anthropic": "https://api.anthropic.com"}
#: The variable argus reads the key from first, and the providers' own key variables (the fallbacks).
API_KEY_VARIABLE = "ARGUS_LLM_API_KEY"
KEY_VARIABLES = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
# a placeholder sent to OpenAI-compatible servers that need no key (vLLM, SGLang, Ollama, llama.cpp)
NO_KEY = "EMPTY"


def default_config_path(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    base = env.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "argus" / "config.toml"


def default_cache_dir(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    if env.get("ARGUS_CACHE_DIR"):
        return Path(env["ARGUS_CACHE_DIR"]) / "llm"
    return Path.home() / ".cache" / "argus" / "llm"


def public_url(url: str) -> str:
    """`url` without user:password and without a trailing slash (what goes into hashes, logs and the store)."""
    parts = urlsplit(url.strip())
    netloc = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), parts.query, parts.fragment))


@dataclass(frozen=True)
class ProviderConfig:
    """Everything a provider needs. The key is not a field: `api_key_env` names the variable it is read from when a
    request is sent, or `held_api_key` holds a key given in code or in the config file (never in ``repr`` or
    `describe`). `sources` says where each setting came from (``"argument"``, ``"env ARGUS_LLM_MODEL"``,
    ``"file /path [llm] model"``, ``"default"``)."""

    provider: str
    model: str
    base_url: str
    api_key_env: str | None = None
    held_api_key: str | None = field(default=None, repr=False)
    timeout_s: float = 120.0
    max_retries: int = 5
    backoff_base_s: float = 1.0
    backoff_max_s: float = 60.0
    cache_mode: CacheMode = CacheMode.USE
    cache_dir: Path = field(default_factory=default_cache_dir)
    prices: dict[str, Price] = field(default_factory=lambda: dict(DEFAULT_PRICES))
    max_tokens_field: str = "max_tokens"
    sources: dict[str, str] = field(default_factory=dict)

    @property
    def public_base_url(self) -> str:
        return public_url(self.base_url)

    @property
    def api_key_name(self) -> str:
        """Where the key comes from, as a name that is not secret: the variable, ``llm.api_key`` (the config
        file's) or ``api_key`` (given in code)."""
        if self.api_key_env:
            return self.api_key_env
        return "llm.api_key" if "[llm] api_key" in self.sources.get("api_key", "") else "api_key"

    def resolve_api_key(self, env: Mapping[str, str] | None = None) -> str | None:
        """The key to send now: the held key, else the current value of `api_key_env` in `env` (default:
        ``os.environ``), else `NO_KEY` when none is configured. None when `api_key_env` is no longer set."""
        if self.held_api_key:
            return self.held_api_key
        if self.api_key_env:
            return (os.environ if env is None else env).get(self.api_key_env) or None
        return NO_KEY

    @property
    def api_key(self) -> str | None:
        """`resolve_api_key` now (read at each access: do not keep it)."""
        return self.resolve_api_key()

    def describe(self) -> dict[str, Any]:
        """The configuration as JSON for logs and the run store: no key, only whether there is one and where it
        came from."""
        key = self.resolve_api_key()
        return {
            "provider": self.provider,
            "model": self.model,
            "base_url": self.public_base_url,
            "has_api_key": bool(key) and key != NO_KEY,
            "api_key_source": self.sources.get("api_key"),
            "timeout_s": self.timeout_s,
            "max_retries": self.max_retries,
            "cache_mode": str(self.cache_mode),
            "cache_dir": str(self.cache_dir),
            "max_tokens_field": self.max_tokens_field,
        }


def _read_file(path: Path, explicit: bool) -> tuple[dict[str, Any], Path | None]:
    if not path.exists():
        if explicit:
            raise ProviderConfigError(
                "LLM_CONFIG_INVALID",
                f"the config file {path} does not exist",
                "create it, or unset ARGUS_CONFIG to use ~/.config/argus/config.toml",
            )
        return {}, None
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise ProviderConfigError("LLM_CONFIG_INVALID", f"cannot read the config file {path}: {e}") from None
    llm = data.get("llm", {})
    if not isinstance(llm, dict):
        raise ProviderConfigError("LLM_CONFIG_INVALID", f"{path}: [llm] must be a table")
    return llm, path


def _number(value: Any, name: str, where: str, kind: type) -> Any:
    try:
        result = kind(value)
    except (TypeError, ValueError):
        raise ProviderConfigError(
            "LLM_CONFIG_INVALID", f"{name} from {where} must be a number", actual=repr(value)
        ) from None
    if result < 0:
        raise ProviderConfigError("LLM_CONFIG_INVALID", f"{name} from {where} must not be negative", actual=result)
    return result


def load_config(
    *,
    provider: str | None = None,
    model: str | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    timeout: float | None = None,
    max_retries: int | None = None,
    cache: CacheMode | str | None = None,
    cache_dir: Path | str | None = None,
    config_file: Path | str | None = None,
    prices: Mapping[str, Price] | None = None,
    env: Mapping[str, str] | None = None,
) -> ProviderConfig:
    """The provider configuration: each explicit argument, else its environment variable, else the config
    file's ``[llm]`` key, else the default (module docstring). Raises `ProviderConfigError` naming what to set."""
    env = os.environ if env is None else env
    explicit_file = config_file is not None or bool(env.get("ARGUS_CONFIG"))
    path = Path(config_file or env.get("ARGUS_CONFIG") or default_config_path(env)).expanduser()
    file, file_path = _read_file(path, explicit_file)
    sources: dict[str, str] = {}

    def pick(name: str, argument: Any, variable: str | None, key: str | None, default: Any = None) -> Any:
        if argument is not None:
            sources[name] = "argument"
            return argument
        if variable and env.get(variable):
            sources[name] = f"env {variable}"
            return env[variable]
        if key and file.get(key) is not None:
            sources[name] = f"file {file_path} [llm] {key}"
            return file[key]
        sources[name] = "default"
        return default

    where = f"{file_path}" if file_path else "~/.config/argus/config.toml"
    chosen = str(pick("provider", provider, "ARGUS_LLM_PROVIDER", "provider", "openai")).strip().lower()
    if chosen not in PROVIDERS:
        raise ProviderConfigError(
            "LLM_CONFIG_INVALID",
            f"unknown LLM provider {chosen!r} (from {sources['provider']})",
            "set ARGUS_LLM_PROVIDER to 'openai' (any OpenAI-compatible endpoint: OpenAI, vLLM, SGLang, Ollama, "
            "llama.cpp server) or 'anthropic'",
            requirement=" or ".join(PROVIDERS),
            actual=chosen,
        )
    chosen_model = pick("model", model, "ARGUS_LLM_MODEL", "model")
    if not chosen_model:
        raise ProviderConfigError(
            "LLM_CONFIG_MISSING",
            f"no LLM model is configured for provider {chosen!r}",
            f'set ARGUS_LLM_MODEL (e.g. ARGUS_LLM_MODEL=gpt-4.1), or model = "..." under [llm] in {where}, '
            "or pass model=",
        )
    url = str(pick("base_url", base_url, "ARGUS_LLM_BASE_URL", "base_url", DEFAULT_BASE_URLS[chosen])).strip()
    if urlsplit(url).scheme not in ("http", "https"):
        raise ProviderConfigError(
            "LLM_CONFIG_INVALID",
            f"the base URL from {sources['base_url']} is not an http(s) URL",
            "e.g. ARGUS_LLM_BASE_URL=http://localhost:8000/v1",
            actual=public_url(url),
        )

    # the key: its variable's name is kept (the value is read when a request is sent); a key given in code, read
    # from an `env` mapping given in code, or written in the file is held
    in_code_env = env is not os.environ
    key: str | None = None
    key_variable: str | None = None
    candidates = [(API_KEY_VARIABLE, f"env {API_KEY_VARIABLE}")]
    if file.get("api_key_env"):
        named = str(file["api_key_env"])
        candidates.append((named, f"env {named} (file {file_path} [llm] api_key_env)"))
    candidates.append((KEY_VARIABLES[chosen], f"env {KEY_VARIABLES[chosen]}"))
    if api_key is not None:
        key, sources["api_key"] = api_key, "argument"
    else:
        for variable, source in candidates:
            if env.get(variable):
                key_variable, sources["api_key"] = variable, source
                key = env[variable] if in_code_env else None
                break
        if key_variable is None and file.get("api_key"):
            key, sources["api_key"] = str(file["api_key"]), f"file {file_path} [llm] api_key"
    hosted = public_url(url) == DEFAULT_BASE_URLS[chosen] or chosen == "anthropic"
    mode_text = str(pick("cache", cache, "ARGUS_LLM_CACHE", "cache", CacheMode.USE)).strip().lower()
    if not key and key_variable is None:
        if hosted and mode_text not in ("replay", "replay-only", "replay_only"):  # replaying sends nothing
            raise ProviderConfigError(
                "LLM_CONFIG_MISSING",
                f"no API key for {chosen} at {public_url(url)}",
                f'set ARGUS_LLM_API_KEY or {KEY_VARIABLES[chosen]}, or api_key_env = "VARIABLE" under [llm] in {where}',
            )
        key, sources["api_key"] = None, "none (a local endpoint, or replay-only: no key is sent)"

    if mode_text in ("replay-only", "replay_only"):
        mode_text = "replay"
    try:
        mode = CacheMode(mode_text)
    except ValueError:
        raise ProviderConfigError(
            "LLM_CONFIG_INVALID",
            f"unknown cache mode {mode_text!r} (from {sources['cache']})",
            "set ARGUS_LLM_CACHE to use, refresh, off or replay",
            actual=mode_text,
        ) from None
    directory = pick("cache_dir", cache_dir, "ARGUS_LLM_CACHE_DIR", "cache_dir", None)
    directory = Path(directory).expanduser() if directory else default_cache_dir(env)

    table = dict(DEFAULT_PRICES)
    file_prices = file.get("prices", {})
    if not isinstance(file_prices, dict):
        raise ProviderConfigError("LLM_CONFIG_INVALID", f"{file_path}: [llm.prices] must be a table")
    for name, entry in file_prices.items():
        if not isinstance(entry, dict) or not {"input_per_mtok", "output_per_mtok"} <= set(entry):
            raise ProviderConfigError(
                "LLM_CONFIG_INVALID",
                f"{file_path}: [llm.prices.{name!r}] needs input_per_mtok and output_per_mtok",
                actual=entry,
            )
        table[name] = Price(
            _number(entry["input_per_mtok"], "input_per_mtok", str(file_path), float),
            _number(entry["output_per_mtok"], "output_per_mtok", str(file_path), float),
        )
    table.update(prices or {})

    field_name = str(
        pick(
            "max_tokens_field",
            None,
            None,
            "max_tokens_field",
            # OpenAI's reasoning models take only max_completion_tokens; other servers know max_tokens
            "max_completion_tokens" if chosen == "openai" and hosted else "max_tokens",
        )
    )
    if field_name not in ("max_tokens", "max_completion_tokens"):
        raise ProviderConfigError(
            "LLM_CONFIG_INVALID", "max_tokens_field must be max_tokens or max_completion_tokens", actual=field_name
        )
    return ProviderConfig(
        provider=chosen,
        model=str(chosen_model),
        base_url=url,
        api_key_env=key_variable,
        held_api_key=key,
        timeout_s=_number(pick("timeout", timeout, "ARGUS_LLM_TIMEOUT", "timeout", 120.0), "timeout", "config", float),
        max_retries=_number(
            pick("max_retries", max_retries, "ARGUS_LLM_MAX_RETRIES", "max_retries", 5), "max_retries", "config", int
        ),
        backoff_base_s=_number(file.get("backoff_base", 1.0), "backoff_base", where, float),
        backoff_max_s=_number(file.get("backoff_max", 60.0), "backoff_max", where, float),
        cache_mode=mode,
        cache_dir=directory,
        prices=table,
        max_tokens_field=field_name,
        sources=sources,
    )
