"""The machine a measurement was taken on: whether there is a GPU, what it is, the software versions, and the
GPU's SM clock, power and temperature at the time (telemetry).

Telemetry comes from NVML through ``pynvml`` when it imports, else from ``nvidia-smi --query-gpu``, else it is
recorded as missing with the reason — never guessed.
"""

from __future__ import annotations

import platform
import shutil
import subprocess
import sys
from typing import Any

#: The fields asked of nvidia-smi, in order.
SMI_FIELDS = ("clocks.sm", "clocks.max.sm", "power.draw", "power.limit", "temperature.gpu", "name")


def has_gpu() -> bool:
    """True when PyTorch sees a CUDA device."""
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def default_device() -> str:
    return "cuda" if has_gpu() else "cpu"


def gpu_info(index: int = 0) -> dict[str, Any]:
    """Name, compute capability, SM count, memory, L2 size and UUID of CUDA device `index`."""
    import torch

    p = torch.cuda.get_device_properties(index)
    return {
        "index": index,
        "name": p.name,
        "capability": f"sm_{p.major}{p.minor}",
        "sms": p.multi_processor_count,
        "memory_gib": round(p.total_memory / 2**30, 1),
        "l2_mib": round(getattr(p, "L2_cache_size", 0) / 2**20, 1),
        "uuid": str(getattr(p, "uuid", "")),
    }


def environment(device: Any = None) -> dict[str, Any]:
    """The software and hardware a result was measured with."""
    from argus._version import __version__

    env: dict[str, Any] = {
        "argus": __version__,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
    }
    try:
        import torch

        env["torch"] = torch.__version__
        env["cuda"] = torch.version.cuda
        env["device"] = str(device or default_device())
        if str(env["device"]).startswith("cuda") and torch.cuda.is_available():
            index = torch.device(env["device"]).index or 0
            env["gpu"] = gpu_info(index)
            env["cudnn"] = torch.backends.cudnn.version()
        from argus.eval.guards import PrecisionState

        env["precision"] = PrecisionState.capture().as_dict()
    except ImportError:
        env["torch"] = None
    return env


def parse_nvidia_smi(text: str) -> dict[str, Any]:
    """The first line of ``nvidia-smi --query-gpu=<SMI_FIELDS> --format=csv,noheader,nounits`` as numbers
    (fields reading ``[N/A]`` or ``[Not Supported]`` become None)."""
    line = next((ln for ln in text.splitlines() if ln.strip()), "")
    parts = [p.strip() for p in line.split(",")]
    if len(parts) < len(SMI_FIELDS):
        raise ValueError(f"cannot read nvidia-smi output {line!r}: expected {len(SMI_FIELDS)} fields")

    def num(s: str) -> float | None:
        try:
            return float(s)
        except ValueError:
            return None

    return {
        "sm_clock_mhz": num(parts[0]),
        "max_sm_clock_mhz": num(parts[1]),
        "power_w": num(parts[2]),
        "power_limit_w": num(parts[3]),
        "temperature_c": num(parts[4]),
        "name": ",".join(parts[5:]),
    }


def _nvml(uuid: str | None, index: int) -> dict[str, Any]:
    import pynvml

    pynvml.nvmlInit()
    try:
        handle = None
        if uuid:
            text = uuid if uuid.startswith("GPU-") else f"GPU-{uuid}"
            try:
                handle = pynvml.nvmlDeviceGetHandleByUUID(text)
            except pynvml.NVMLError:
                handle = None
        if handle is None:
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
        return {
            "source": "pynvml",
            "sm_clock_mhz": float(pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM)),
            "max_sm_clock_mhz": float(pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_SM)),
            "power_w": pynvml.nvmlDeviceGetPowerUsage(handle) / 1000.0,
            "power_limit_w": pynvml.nvmlDeviceGetEnforcedPowerLimit(handle) / 1000.0,
            "temperature_c": float(pynvml.nvmlDeviceGetTemperature(handle, pynvml.NVML_TEMPERATURE_GPU)),
        }
    finally:
        pynvml.nvmlShutdown()


def gpu_telemetry(index: int = 0, uuid: str | None = None, *, runner: Any = subprocess.run) -> dict[str, Any]:
    """SM clock (MHz), its maximum, power draw and limit (W) and temperature (°C) of the GPU now, with the
    ``source`` it came from; ``{"source": None, "missing": reason}`` when neither NVML nor nvidia-smi answers."""
    reasons = []
    try:
        return _nvml(uuid, index)
    except ImportError:
        reasons.append("pynvml is not installed")
    except Exception as e:  # noqa: BLE001 - NVML errors of any kind: fall through to nvidia-smi
        reasons.append(f"NVML failed: {e}")
    smi = shutil.which("nvidia-smi")
    if smi is None and runner is subprocess.run:
        reasons.append("nvidia-smi is not on PATH")
        return {"source": None, "missing": "; ".join(reasons)}
    target = uuid if uuid else str(index)
    try:
        proc = runner(
            [smi or "nvidia-smi", f"--query-gpu={','.join(SMI_FIELDS)}", "--format=csv,noheader,nounits", "-i", target],
            capture_output=True,
            text=True,
            timeout=10,
        )
        if proc.returncode != 0:
            raise RuntimeError(proc.stderr.strip() or f"exit status {proc.returncode}")
        return {"source": "nvidia-smi", **parse_nvidia_smi(proc.stdout)}
    except Exception as e:  # noqa: BLE001
        reasons.append(f"nvidia-smi failed: {e}")
        return {"source": None, "missing": "; ".join(reasons)}
