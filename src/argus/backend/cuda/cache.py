"""The on-disk cache of compiled modules.

Owns the cache directory, the entry file format, and its integrity rules. Keys are computed by
`argus.backend.cuda.toolchain` (a SHA-256 over source, options, architecture, NVRTC version and header
directories); this module stores and returns entries by key and never calls NVRTC.

* Location: ``$ARGUS_CACHE_DIR/cubin`` when ``ARGUS_CACHE_DIR`` is set (it names the argus cache root,
  shared with other parts), else ``$XDG_CACHE_HOME/argus/cubin``, else ``~/.cache/argus/cubin``.
* Layout: ``<dir>/<key[:2]>/<key>.entry``, one file per entry.
* Format: ``MAGIC``, a little-endian u32 header length, a JSON header (key, metadata, log, lowered names,
  blob lengths), the blobs (cubin, then PTX), and a SHA-256 of everything before it.
* Writes are atomic (temporary file in the same directory, fsync, ``os.replace``), so a reader sees a
  whole entry or none, and concurrent writers of one key both succeed. A corrupted entry (bad magic,
  truncation, digest or key mismatch) is logged, deleted and reported as a miss, so it gets rebuilt. A cache
  directory that cannot be written degrades to no caching with a warning; it never fails a compilation.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import struct
import tempfile
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

ENV_CACHE_DIR = "ARGUS_CACHE_DIR"
"""Environment variable naming the argus cache root; cubins live in its ``cubin/`` subdirectory."""

MAGIC = b"ARGUS-CUBIN\x01"
"""The first bytes of every entry file; the last byte is the format version."""

_SUFFIX = ".entry"
_DIGEST_SIZE = hashlib.sha256().digest_size
_logger = logging.getLogger(__name__)


def cache_root(part: str) -> Path:
    """The directory of one part of the argus cache: ``$ARGUS_CACHE_DIR/<part>`` when that is set, else
    ``$XDG_CACHE_HOME/argus/<part>``, else ``~/.cache/argus/<part>`` (the cubins, the measured ceilings, the tuned
    policies all live under the same root)."""
    root = os.environ.get(ENV_CACHE_DIR)
    if root:
        return Path(root).expanduser() / part
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "argus" / part


def default_cache_dir() -> Path:
    """The cubin cache directory the environment selects (see the module docstring)."""
    return cache_root("cubin")


@dataclass(frozen=True)
class CacheEntry:
    """One cached compilation.

    Attributes:
        key: the cache key (hex SHA-256) it is stored under.
        cubin: the cubin.
        ptx: the PTX NVRTC produced on the way.
        log: NVRTC's log of the successful compile (warnings), verbatim.
        lowered_names: name expression -> lowered name.
        meta: descriptive fields (program name, arch, options, NVRTC version); not part of the key.
    """

    key: str
    cubin: bytes
    ptx: str
    log: str = ""
    lowered_names: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    meta: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))


class CorruptEntry(Exception):
    """An entry file failed an integrity check (internal: `CubinCache.load` turns it into a miss)."""


class CubinCache:
    """Compiled modules on disk, by key. Holds only its directory; every operation goes to the disk."""

    def __init__(self, directory: str | os.PathLike[str] | None = None) -> None:
        self.directory = Path(directory).expanduser() if directory is not None else default_cache_dir()

    def __repr__(self) -> str:
        return f"CubinCache({str(self.directory)!r})"

    def path_for(self, key: str) -> Path:
        """Where the entry for `key` lives (whether or not it exists)."""
        if len(key) < 3 or not all(c in "0123456789abcdef" for c in key):
            raise ValueError(f"a cache key is a lowercase hex digest, got {key!r}")
        return self.directory / key[:2] / f"{key}{_SUFFIX}"

    def load(self, key: str) -> CacheEntry | None:
        """The entry for `key`, or None on a miss. A corrupted entry is deleted and counts as a miss."""
        path = self.path_for(key)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            _logger.warning("argus cubin cache: cannot read %s (%s); compiling instead", path, exc)
            return None
        try:
            return decode_entry(data, key)
        except CorruptEntry as exc:
            _logger.warning("argus cubin cache: corrupted entry %s (%s); removing it and recompiling", path, exc)
            with contextlib.suppress(OSError):
                path.unlink()
            return None

    def store(self, entry: CacheEntry) -> Path | None:
        """Write `entry` atomically; return its path, or None (with a warning) if the directory is unwritable."""
        path = self.path_for(entry.key)
        data = encode_entry(entry)
        temporary: str | None = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            descriptor, temporary = tempfile.mkstemp(prefix=f".{entry.key}.", suffix=".tmp", dir=path.parent)
            with os.fdopen(descriptor, "wb") as stream:
                stream.write(data)
                stream.flush()
                os.fsync(stream.fileno())
            os.replace(temporary, path)
            temporary = None
            return path
        except OSError as exc:
            warnings.warn(f"argus cubin cache: cannot write {path} ({exc}); not caching", RuntimeWarning, stacklevel=2)
            return None
        finally:
            if temporary is not None:
                with contextlib.suppress(OSError):
                    os.unlink(temporary)

    def entries(self) -> list[Path]:
        """The entry files currently in the cache."""
        if not self.directory.is_dir():
            return []
        return sorted(self.directory.glob(f"??/*{_SUFFIX}"))

    def clear(self) -> int:
        """Delete every entry (and any temporary file a crashed writer left); return how many entries went."""
        removed = 0
        if not self.directory.is_dir():
            return 0
        for path in self.directory.glob("??/*"):
            if path.name.endswith(_SUFFIX) or path.name.endswith(".tmp"):
                with contextlib.suppress(OSError):
                    path.unlink()
                    removed += path.name.endswith(_SUFFIX)
        return removed


def encode_entry(entry: CacheEntry) -> bytes:
    """Serialize `entry` in the format the module docstring describes."""
    ptx = entry.ptx.encode()
    header = json.dumps(
        {
            "key": entry.key,
            "log": entry.log,
            "lowered_names": dict(entry.lowered_names),
            "meta": dict(entry.meta),
            "blobs": {"cubin": len(entry.cubin), "ptx": len(ptx)},
        },
        sort_keys=True,
    ).encode()
    body = MAGIC + struct.pack("<I", len(header)) + header + entry.cubin + ptx
    return body + hashlib.sha256(body).digest()


def decode_entry(data: bytes, key: str) -> CacheEntry:
    """Parse and verify an entry file's bytes; raise `CorruptEntry` on any inconsistency."""
    if not data.startswith(MAGIC):
        raise CorruptEntry("bad magic (not an argus cache entry, or another format version)")
    if len(data) < len(MAGIC) + 4 + _DIGEST_SIZE:
        raise CorruptEntry("truncated")
    body, digest = data[:-_DIGEST_SIZE], data[-_DIGEST_SIZE:]
    if hashlib.sha256(body).digest() != digest:
        raise CorruptEntry("checksum mismatch")
    (header_size,) = struct.unpack_from("<I", body, len(MAGIC))
    start = len(MAGIC) + 4
    try:
        header = json.loads(body[start : start + header_size])
        sizes = header["blobs"]
        cubin_size, ptx_size = int(sizes["cubin"]), int(sizes["ptx"])
    except (ValueError, KeyError, TypeError) as exc:
        raise CorruptEntry(f"unreadable header ({exc})") from exc
    if header.get("key") != key:
        raise CorruptEntry(f"holds key {header.get('key')!r}, expected {key!r}")
    blobs = body[start + header_size :]
    if len(blobs) != cubin_size + ptx_size:
        raise CorruptEntry("blob sizes do not match the header")
    return CacheEntry(
        key=key,
        cubin=blobs[:cubin_size],
        ptx=blobs[cubin_size:].decode(errors="replace"),
        log=str(header.get("log", "")),
        lowered_names=MappingProxyType({str(k): str(v) for k, v in dict(header.get("lowered_names", {})).items()}),
        meta=MappingProxyType(dict(header.get("meta", {}))),
    )
