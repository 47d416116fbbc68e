"""The on-disk response cache: one JSON file per request, named by the hash of the full request.

The request that is hashed (`request_hash`) is everything that decides the answer: provider, public base URL
(without user:password), model, messages, max_tokens, temperature and stop sequences — never the API key, and
not the timeout (it does not change the answer). A file holds the request and the response, so a cache directory
can be read, diffed and shipped with a run to replay it exactly. Files are written to a temporary name and renamed,
so a reader never sees half an entry and concurrent writers of one entry are safe. Both the request and the
response pass through `argus.agent.providers.secrets.scrub_secrets` before they are written: no key (configured,
or echoed by a model) is ever in a cache file.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from argus.agent.providers.secrets import scrub_secrets

CACHE_FORMAT = 1


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no whitespace: equal requests give equal text, hence equal hashes."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def request_hash(request: dict[str, Any]) -> str:
    """SHA-256 of the canonical JSON of `request` (hex)."""
    return hashlib.sha256(canonical_json(request).encode("utf-8")).hexdigest()


class ResponseCache:
    """A directory of ``<hash[:2]>/<hash>.json`` entries (module docstring)."""

    def __init__(self, directory: Path | str) -> None:
        self.directory = Path(directory).expanduser()

    def path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str, request: dict[str, Any]) -> dict[str, Any] | None:
        """The stored response for `key`, or None when there is none, it is unreadable, or it was stored for a
        different request (a hash collision or an edited file: never answer a request with another's response).
        `request` is compared as `put` stores it: scrubbed of secrets."""
        try:
            entry = json.loads(self.path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(entry, dict) or entry.get("format") != CACHE_FORMAT:
            return None
        if canonical_json(entry.get("request")) != canonical_json(scrub_secrets(request)):
            return None
        response = entry.get("response")
        return response if isinstance(response, dict) else None

    def put(self, key: str, request: dict[str, Any], response: dict[str, Any]) -> Path:
        """Store `response` for `request` (atomically), both scrubbed of secrets (`scrub_secrets`); returns the
        file."""
        path = self.path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        entry = {"format": CACHE_FORMAT, "hash": key, "created": time.time(), "request": scrub_secrets(request),
                 "response": scrub_secrets(response)}  # fmt: skip
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{key[:8]}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(entry, f, indent=1, ensure_ascii=False)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return path

    def __len__(self) -> int:
        return sum(1 for _ in self.directory.glob("*/*.json")) if self.directory.exists() else 0
