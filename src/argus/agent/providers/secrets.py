"""The secrets this process can see, and `scrub_secrets`: the one function that removes them from everything argus
writes to disk, prints, or sends to a model.

A secret is the current value (read at each call, so a key set or changed later is known too) of

* each variable argus takes a key from: ``ARGUS_LLM_API_KEY``, ``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``
  (`argus.agent.providers.config.KEY_VARIABLES`), and the variable the config file's ``[llm] api_key_env`` names
  (the file ``$ARGUS_CONFIG``, else the default one; a provider configured from another file registers its
  variable, `remember_config`);
* any environment variable whose name ends in ``_API_KEY``, ``_TOKEN``, ``_SECRET`` or ``_PASSWORD``;
* a key held in memory: the config file's ``[llm] api_key``, a key given in code (``make_provider(api_key=...)``,
  or read from an ``env=`` mapping given in code), registered by the provider that holds it (`remember_config`).

A value shorter than `MIN_SECRET_LENGTH` (8) characters is not treated as a secret: it would match ordinary text
(and the placeholder ``EMPTY`` sent to servers that need no key is not a key). Use longer keys.

`scrub_secrets(value)` replaces every occurrence of a secret — also inside a longer string — in a string, or in the
strings of nested dicts (keys and values), lists and tuples, by ``[REDACTED:NAME]``, where NAME says where the secret
came from (the variable's name, ``llm.api_key`` or ``api_key``; names are not secret). The registry of held keys is
the one piece of process-wide state here: it holds values that are already in this process's memory, and it is never
written anywhere.
"""

from __future__ import annotations

import functools
import os
import re
import threading
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from argus.agent.providers.config import API_KEY_VARIABLE, KEY_VARIABLES, NO_KEY, ProviderConfig, default_config_path
from argus.eval.sandbox import is_secret_name

#: Shorter values are not scrubbed (they would match ordinary text).
MIN_SECRET_LENGTH = 8
MARKER = "[REDACTED:{name}]"

T = TypeVar("T")

_lock = threading.Lock()
_held: dict[str, str] = {}  # value -> name: keys held in memory by a provider's configuration (never written)
_variables: dict[str, None] = {}  # names of key variables named by config files other than the default one
_file_cache: dict[Path, tuple[tuple[int, int], tuple[str | None, str | None]]] = {}


def _usable(value: str | None) -> bool:
    return isinstance(value, str) and len(value) >= MIN_SECRET_LENGTH and value != NO_KEY


def remember_config(config: ProviderConfig) -> None:
    """Make `config`'s key known to `scrub_secrets`: the variable it reads (its name) and a key it holds (its
    value, in memory only). Providers call this when they are built."""
    with _lock:
        if config.api_key_env:
            _variables.setdefault(config.api_key_env, None)
        held = config.held_api_key
        if _usable(held):
            _held.setdefault(str(held), config.api_key_name)


def _config_file(env: Mapping[str, str]) -> tuple[str | None, str | None]:
    """(``[llm] api_key_env``, ``[llm] api_key``) of the config file `env` selects; (None, None) when there is none
    or it cannot be read (`load_config` reports that)."""
    path = Path(env.get("ARGUS_CONFIG") or default_config_path(env)).expanduser()
    try:
        stat = path.stat()
    except OSError:
        return None, None
    stamp = (stat.st_mtime_ns, stat.st_size)
    with _lock:
        cached = _file_cache.get(path)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    try:
        llm = tomllib.loads(path.read_text()).get("llm", {})
    except (OSError, ValueError):  # tomllib.TOMLDecodeError is a ValueError
        llm = {}
    llm = llm if isinstance(llm, dict) else {}
    variable = llm.get("api_key_env")
    key = llm.get("api_key")
    found = (str(variable) if variable else None, str(key) if key is not None else None)
    with _lock:
        _file_cache[path] = (stamp, found)
    return found


def secret_variables(env: Mapping[str, str] | None = None) -> list[str]:
    """The names of the environment variables in `env` (default: ``os.environ``) that hold secrets now (set and
    non-empty, whatever their length): the key variables argus reads, the config file's ``api_key_env``, those
    registered by providers, and every ``*_API_KEY`` / ``*_TOKEN`` / ``*_SECRET`` / ``*_PASSWORD``."""
    env = os.environ if env is None else env
    file_variable, _ = _config_file(env)
    with _lock:
        registered = list(_variables)
    named = [API_KEY_VARIABLE, *KEY_VARIABLES.values(), *([file_variable] if file_variable else []), *registered]
    names = dict.fromkeys(n for n in named if env.get(n))
    names.update(dict.fromkeys(sorted(n for n, v in env.items() if v and is_secret_name(n))))
    return list(names)


def secret_values(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """Every secret known now, as ``{value: name}`` (module docstring); values shorter than `MIN_SECRET_LENGTH`
    are left out. When a value is in several places, the first name in the order above is kept."""
    env = os.environ if env is None else env
    _, file_key = _config_file(env)
    found: dict[str, str] = {}
    for name in secret_variables(env):
        value = env.get(name)
        if _usable(value):
            found.setdefault(str(value), name)
    if _usable(file_key):
        found.setdefault(str(file_key), "llm.api_key")
    with _lock:
        held = dict(_held)
    for value, name in held.items():
        found.setdefault(value, name)
    return found


@functools.lru_cache(maxsize=16)
def _pattern(values: tuple[str, ...]) -> re.Pattern[str]:
    # longest first: a secret that contains another is replaced whole
    return re.compile("|".join(re.escape(v) for v in sorted(values, key=len, reverse=True)))


def _scrub(value: Any, pattern: re.Pattern[str], names: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        return pattern.sub(lambda m: MARKER.format(name=names[m.group(0)]), value)
    if isinstance(value, Mapping):
        return {_scrub(k, pattern, names): _scrub(v, pattern, names) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub(v, pattern, names) for v in value]
    if isinstance(value, tuple):
        return tuple(_scrub(v, pattern, names) for v in value)
    return value


def scrub_secrets(value: T, *, extra: Iterable[str | None] = (), env: Mapping[str, str] | None = None) -> T:
    """`value` with every occurrence of every known secret (`secret_values(env)`, and the strings in `extra`) replaced
    by ``[REDACTED:NAME]``. Strings are scrubbed, dicts (keys and values; a mapping becomes a dict), lists and
    tuples recursively; anything else (numbers, None, bytes, objects) is returned as it is — turn objects into JSON
    first. Idempotent; a value with no secret in it comes back equal."""
    names = secret_values(env)
    for secret in extra:
        if _usable(secret):
            names.setdefault(str(secret), "api_key")
    if not names:
        return value
    return _scrub(value, _pattern(tuple(names)), names)


def worker_environment(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """Environment overrides for a process that must not see any secret (the gate's workers, which import
    generated code): every variable of `secret_variables` set to the empty string."""
    return dict.fromkeys(secret_variables(env), "")
