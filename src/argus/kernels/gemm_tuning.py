"""Measured GEMM configurations: the persistent cache of issue #20's autotuning.

`argus.kernels.matmul.choose` picks a configuration by a model, without measuring. Tuning (`argus tune`, and `argus
solve --tune` for a solution's GEMMs: both `argus.agent.tune.tune_gemm`, one mechanism) times the configurations the
model ranks first on the GPU and writes the fastest here; `matmul.prepare` (every call on CUDA tensors) and
`LibraryGemm.plan` then take it for any problem of the same **key**: GPU, input and output dtypes, layout, batched
or not, and **shape bucket** (each of M, N and K by quarter octaves: ``floor(4 * log2(x))``, so a bucket spans a
factor of 2^(1/4) = 1.19). A configuration measured on one problem of a bucket is used for another only where it is
one of that problem's own candidates (`matmul.candidates`: it fits, its splits leave every split its K-blocks, a
split tail has a tail to split); otherwise the model's choice stands, so a cache entry can make a call faster or
leave it as it was, never make it fail.

The cache is one JSON file, ``$ARGUS_CACHE_DIR/tuned/gemm.json`` (else ``~/.cache/argus/tuned/gemm.json``, beside
the solve tuner's per-kernel files): ``{gpu: {key: entry}}``, an entry holding the configuration, the shape it was
measured at, its time and the model's choice's, and every configuration timed. Writes replace the file atomically;
a cache that cannot be read is treated as empty.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import threading
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

#: Buckets per octave of each extent.
BUCKETS_PER_OCTAVE = 4
FILE = "gemm.json"

_LOCK = threading.Lock()
_READ: dict[Path, tuple[float, dict[str, Any]]] = {}  # path -> (mtime, contents): one read per change of the file
_GPU_NAMES: dict[int, str] = {}
_DEFAULT_PATHS: dict[tuple, Path] = {}  # the environment's cache variables -> the default file


def default_cache_dir() -> Path:
    from argus.backend.cuda.cache import cache_root

    return cache_root("tuned")


def bucket(extent: int) -> int:
    """The quarter octave `extent` (>= 1) falls in."""
    return math.floor(BUCKETS_PER_OCTAVE * math.log2(extent))


def key(problem: Any) -> str:
    """The cache key of a `matmul.GemmProblem` (the GPU is the file's outer key)."""
    p = problem
    batched = "bmm " if p.batch > 1 else ""
    return f"{p.dtype}->{p.out} {p.layout} {batched}M{bucket(p.M)} N{bucket(p.N)} K{bucket(p.K)}"


def gpu_name(device: Any = None) -> str:
    """The GPU a tuned configuration is for: torch's device name and compute capability (``NVIDIA H200 (sm_90)``)."""
    import torch

    index = torch.device(device if device is not None else "cuda").index
    index = torch.cuda.current_device() if index is None else index
    if index not in _GPU_NAMES:
        major, minor = torch.cuda.get_device_capability(index)
        _GPU_NAMES[index] = f"{torch.cuda.get_device_name(index)} (sm_{major}{minor})"
    return _GPU_NAMES[index]


def _path(cache_dir: str | Path | None) -> Path:
    if cache_dir is not None:
        return Path(cache_dir) / FILE
    # the default file, built once per environment (building it took a third of a GEMM call's host time, which every
    # `matmul` and library convolution call pays for its lookup)
    from argus.backend.cuda.cache import ENV_CACHE_DIR

    env = tuple(os.environ.get(name) for name in (ENV_CACHE_DIR, "XDG_CACHE_HOME", "HOME"))
    found = _DEFAULT_PATHS.get(env)
    if found is None:
        found = _DEFAULT_PATHS[env] = default_cache_dir() / FILE
    return found


def read(cache_dir: str | Path | None = None) -> dict[str, Any]:
    """The whole cache (``{gpu: {key: entry}}``), empty when there is none or it cannot be read."""
    path = _path(cache_dir)
    try:
        mtime = path.stat().st_mtime
    except OSError:
        return {}
    with _LOCK:
        hit = _READ.get(path)
        if hit is not None and hit[0] == mtime:
            return hit[1]
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        data = {}
    data = data if isinstance(data, dict) else {}
    with _LOCK:
        _READ[path] = (mtime, data)
    return data


def record(problem: Any, gpu: str, entry: dict[str, Any], cache_dir: str | Path | None = None) -> Path:
    """Write `entry` (with ``"config"``: a `GemmConfig` or its fields) for `problem`'s key on `gpu`; returns the file.
    The file is replaced atomically (a concurrent reader sees the old or the new one)."""
    path = _path(cache_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    entry = dict(entry)
    config = entry["config"]
    entry["config"] = config if isinstance(config, dict) else asdict(config)
    with _LOCK:
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            data = {}
        data = data if isinstance(data, dict) else {}
        data.setdefault(gpu, {})[key(problem)] = entry
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".gemm-", suffix=".json")
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=1, sort_keys=True)
        os.replace(tmp, path)
        _READ.pop(path, None)
    return path


def lookup(
    problem: Any, gpu: str, cache_dir: str | Path | None = None, tiles: tuple | None = None, swap: bool = True
) -> Any:
    """The tuned `GemmConfig` for `problem` on `gpu`, or None: none recorded for its key, or the one recorded is not
    among `problem`'s own candidates (among `tiles`, default all: a fused epilogue that holds a second tile allows
    fewer; with `swap`, its swap-AB configurations too: a fused epilogue's plan has none)."""
    from argus.kernels import matmul

    entry = read(cache_dir).get(gpu, {}).get(key(problem))
    if not isinstance(entry, dict) or not isinstance(entry.get("config"), dict):
        return None
    try:
        config = matmul.GemmConfig(**entry["config"])
    except TypeError:  # written by a version with other fields
        return None
    config = replace(config, FUSE=None)  # whether its split is summed in the GEMM kernel is the plan's to decide
    found = matmul.candidates_for(problem, tiles=tiles or matmul.TILES, swap=swap)
    if config.CLUSTER > 1:  # a candidate in 2-block clusters (`matmul.cluster_choice`): its plain twin is a candidate
        plain = replace(config, CLUSTER=1)
        allowed = matmul.cluster_refusal(matmul.kernel_problem(problem), config) is None
        return config if allowed and plain in found else None
    return config if config in found else None


__all__ = ["BUCKETS_PER_OCTAVE", "bucket", "default_cache_dir", "gpu_name", "key", "lookup", "read", "record"]
