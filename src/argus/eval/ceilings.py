"""This GPU's measured ceilings: device-to-device copy bandwidth and the cuBLAS bf16 GEMM rate, measured once per
GPU (by UUID, with the driver/CUDA/PyTorch versions in the key) and cached on disk.

Location: ``$ARGUS_CACHE_DIR/ceilings`` when ``ARGUS_CACHE_DIR`` is set (the argus cache root, shared with the
cubin cache), else ``$XDG_CACHE_HOME/argus/ceilings``, else ``~/.cache/argus/ceilings``; one JSON file per key.
The numbers are what `argus.eval.timing.fraction_of_ceilings` divides by: "% of ceiling" means of what this
GPU was measured to do, not of the datasheet.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ENV_CACHE_DIR = "ARGUS_CACHE_DIR"


def default_dir() -> Path:
    from argus.backend.cuda.cache import cache_root

    return cache_root("ceilings")


def device_key(index: int = 0) -> str:
    """A file-name-safe key for CUDA device `index`: name, UUID, CUDA and PyTorch versions."""
    import torch

    p = torch.cuda.get_device_properties(index)
    raw = f"{p.name}-{getattr(p, 'uuid', index)}-cuda{torch.version.cuda}-torch{torch.__version__}"
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", raw)


def measure_ceilings(device: Any = "cuda", *, copy_bytes: int = 1 << 30, gemm_n: int = 8192) -> dict[str, Any]:
    """Measure the copy bandwidth (a `copy_bytes` device-to-device copy; read + write counted) and the bf16 GEMM
    rate (``torch.matmul`` of two `gemm_n`-square bf16 matrices) with `argus.eval.timing.time_cuda`."""
    import torch

    from argus.eval.timing import time_cuda

    def copy_timing() -> Any:
        src = torch.empty(copy_bytes // 4, dtype=torch.float32, device=device).uniform_()
        dst = torch.empty_like(src)
        return time_cuda(lambda: dst.copy_(src), device=device, reps=50, warmup=5, flush_l2=True, graph=False)

    def gemm_timing() -> Any:
        a = torch.randn(gemm_n, gemm_n, device=device, dtype=torch.bfloat16)
        b = torch.randn(gemm_n, gemm_n, device=device, dtype=torch.bfloat16)
        return time_cuda(lambda: torch.matmul(a, b), device=device, reps=30, warmup=5, flush_l2=True, graph=False)

    copy_t = copy_timing()  # the buffers are freed before the GEMM's are allocated
    gemm_t = gemm_timing()
    return {
        "copy_gbps": 2 * copy_bytes / (copy_t.median_ms * 1e-3) / 1e9,
        "bf16_gemm_tflops": 2 * gemm_n**3 / (gemm_t.median_ms * 1e-3) / 1e12,
        "copy_bytes": copy_bytes,
        "gemm_n": gemm_n,
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "method": "median of CUDA-event timings, L2 flushed between repetitions",
    }


def get_ceilings(
    key: str,
    measure: Callable[[], dict[str, Any]],
    *,
    cache_dir: Path | None = None,
    refresh: bool = False,
) -> dict[str, Any]:
    """The ceilings cached under `key`, or `measure()`'s, written to the cache (atomically) first.
    The result carries ``"cached": True`` when it came from disk."""
    directory = cache_dir or default_dir()
    path = directory / f"{key}.json"
    if not refresh and path.is_file():
        try:
            data = json.loads(path.read_text())
            return {**data, "cached": True, "key": key}
        except (OSError, ValueError):
            pass  # unreadable: measure again and overwrite
    data = dict(measure())
    data["key"] = key
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=2)
        os.replace(tmp, path)
    except OSError as e:
        data["cache_error"] = str(e)
    return {**data, "cached": False}


def ceilings_for_device(index: int = 0, *, refresh: bool = False) -> dict[str, Any]:
    """The ceilings of CUDA device `index`, measured on first use and cached."""
    return get_ceilings(device_key(index), lambda: measure_ceilings(f"cuda:{index}"), refresh=refresh)
