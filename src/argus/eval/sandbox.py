"""Untrusted code (a KernelBench solution, an LLM's rewrite, a user's kernel file) runs here: in a fresh process per
candidate that shares nothing with the process that judges it, and that can send back only plain data.

The judge (the gate, in a process where no candidate code ever runs) starts a `Sandbox` per candidate. What the
process is started with, in order (`_prepare_child`, between ``fork`` and ``exec``; `docs/eval.md` has the threat
model):

* **its own session and process group** (``start_new_session``), killed whole when the sandbox closes;
* **a parent-death signal** (``PR_SET_PDEATHSIG``: SIGKILL when the judge dies, so an interrupted ``argus
  kernelbench`` leaves nothing running) and ``PR_SET_NO_NEW_PRIVS``;
* **resource limits**: CPU seconds, file size, open files, no core dumps, processes (``RLIMIT_NPROC``, which the
  kernel does not apply to root outside a user namespace), and address space where no GPU is used (the CUDA
  driver reserves far more virtual memory than any limit that would mean something);
* **new namespaces** where Linux lets this process create them: network (no interface but a downed loopback: no
  network at all) and PID (every process the candidate starts dies with it, ``setsid`` and double forks included),
  with a user namespace when not root. Which of these held is read from ``/proc`` by the judge, not taken from the
  child (`Sandbox.protections`);
* **a scrubbed environment**: an explicit allowlist (`ENV_ALLOWLIST`) of variables a GPU program needs; ``HOME``,
  ``TMPDIR`` and the caches point into the sandbox's own directory, removed afterwards. No credential reaches it:
  nothing outside the allowlist is passed, whatever its name;
* ``python -I`` (no user site, no ``PYTHON*`` variables), with the judge's ``sys.path`` so that argus and torch
  import as they do in the judge.

Inside, a small *warden* (``argus/eval/warden.py``, standard library only) forks the *runner*, the only process
where candidate code runs; the warden is a subreaper, and when the runner ends it kills whatever the runner left
behind (the fallback where no PID namespace could be made).

The wire (`send_frame`, `recv_frame`): a length-prefixed JSON header, then raw tensor bytes. Tensors travel as
``{"dtype", "shape"}`` plus exactly ``numel * itemsize`` bytes and are rebuilt by the judge as fresh, contiguous,
base ``torch.Tensor`` objects from bytes; nothing is ever unpickled, and every size is checked against limits
before memory is allocated. A tensor of `SHARED_MEMORY_BYTES` or more travels in a sealed memory file instead of
the socket or, when it lies on the judge's own GPU and the judge offered it at the start (`Sandbox.start`), by
CUDA IPC: the sandbox sends a handle to its allocation and the judge copies the bytes device to device
(`IpcExporter`, `IpcReceiver`: a 6.4 GB output no longer goes through host memory twice). What comes back from
the runner is data about the candidate, never a verdict: the judge compares outputs with a reference it computes
itself.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import json
import os
import resource
import select
import shutil
import signal
import socket
import stat
import struct
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from argus.diagnostics import ArgusError
from argus.eval.warden import children
from argus.runtime.driver import cuda_driver
from argus.runtime.errors import LaunchError

#: Environment variables a sandboxed process may inherit. Everything else (API keys, tokens, cloud credentials,
#: ``SSH_AUTH_SOCK``, proxies ...) is dropped, whatever its name.
ENV_ALLOWLIST = (
    "PATH",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "TERM",
    "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
    "CUDA_HOME",
    "CUDA_PATH",
    "NVIDIA_VISIBLE_DEVICES",
    "NVIDIA_DRIVER_CAPABILITIES",
    "LD_LIBRARY_PATH",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "NCCL_NVLS_ENABLE",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST",
    "NVSHMEM_DISABLE_NVLS",
    "ARGUS_INTERPRET",
    "ARGUS_INTERP_MAX_BYTES",
)

#: Largest JSON header a frame may carry (bytes).
MAX_HEADER_BYTES = 16 * 2**20
#: Tensors this large or larger travel in a memory file, not through the socket (bytes).
SHARED_MEMORY_BYTES = 2**20
#: Most memory files one frame may carry.
MAX_SHARED_TENSORS = 64
#: ``ARGUS_SANDBOX_IPC=0`` keeps CUDA IPC off the wire (large CUDA tensors then travel in memory files).
IPC_ENV = "ARGUS_SANDBOX_IPC"
#: Bytes of a CUDA IPC memory handle (``CU_IPC_HANDLE_SIZE``).
IPC_HANDLE_BYTES = 64
#: Dtypes a tensor may have on the wire (names as ``str(torch.dtype)`` without ``torch.``).
WIRE_DTYPES = (
    "float64",
    "float32",
    "float16",
    "bfloat16",
    "float8_e4m3fn",
    "float8_e5m2",
    "int64",
    "int32",
    "int16",
    "int8",
    "uint8",
    "bool",
    "complex64",
    "complex128",
)

#: The sandbox's first process, run as a script (it must fork before anything starts a thread).
WARDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "warden.py")

_CLONE_NEWNS = 0x00020000
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWPID = 0x20000000
_CLONE_NEWNET = 0x40000000
_PR_SET_PDEATHSIG = 1
_PR_SET_NO_NEW_PRIVS = 38


class SandboxError(ArgusError):
    """The sandboxed candidate broke the protocol, died, or ran out of time. `code`:

    * ``SANDBOX_CRASHED`` — the candidate's process ended while the judge waited for it (`exitcode` says how);
    * ``SANDBOX_TIMEOUT`` — it did not answer within the time limit (it was killed);
    * ``SANDBOX_PROTOCOL`` — what it sent is not a well-formed answer (bad frame, size over a limit, bad dtype);
    * ``SANDBOX_START`` — the process could not be started (a harness problem, not the candidate's).
    """

    def __init__(self, code: str, message: str, hint: str = "", *, exitcode: int | None = None) -> None:
        super().__init__(code, message, hint)
        self.exitcode = exitcode

    @property
    def external_kill(self) -> bool:
        """Killed by SIGKILL that the judge did not send (the OOM killer, an operator): worth one retry."""
        return self.code == "SANDBOX_CRASHED" and self.exitcode == -signal.SIGKILL


@dataclass(frozen=True)
class Limits:
    """Resource limits of a sandboxed process (None: not limited).

    Attributes:
        cpu_s: CPU seconds (``RLIMIT_CPU``; the judge's wall-clock limit is separate).
        address_space_bytes: ``RLIMIT_AS``; applied only when the process uses no GPU.
        file_size_bytes: largest file it may write (``RLIMIT_FSIZE``; the memory files that carry its outputs count:
            KernelBench's largest outputs are 6.4 GB).
        open_files: ``RLIMIT_NOFILE``.
        processes: ``RLIMIT_NPROC``, applied only when the sandbox runs as a user of its own (`sandbox_user`): the
            kernel counts every task (threads too) of the user, in every container and PID namespace, so for a
            shared user no number means anything (one computed from ``/proc`` stopped NumPy's threads on a shared
            machine), and root is exempt.
    """

    cpu_s: int | None = 3600
    address_space_bytes: int | None = None
    file_size_bytes: int | None = 64 * 2**30
    open_files: int | None = 1024
    processes: int | None = 1024

    @staticmethod
    def default(gpu: bool) -> Limits:
        """The defaults: on a CPU, the address space limited to 3/4 of this machine's memory."""
        if gpu:
            return Limits()
        try:
            total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError):
            total = 16 * 2**30
        return Limits(address_space_bytes=max(4 * 2**30, total * 3 // 4))


#: Environment variables whose names end like this hold secrets (API keys, tokens, passwords).
SECRET_SUFFIXES = ("_API_KEY", "_TOKEN", "_SECRET", "_PASSWORD")


def is_secret_name(name: str) -> bool:
    """Whether an environment variable's name says it holds a secret (``*_API_KEY``, ``*_TOKEN``, ...)."""
    return name.upper().endswith(SECRET_SUFFIXES)


def secretless_overrides(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """Environment overrides that empty every variable of `env` (default ``os.environ``) whose name says it holds a
    secret (`is_secret_name`): what an executor's job processes (the judges) get when their caller passes none. The
    agent's `worker_environment` empties more (the variables its LLM configuration names); a sandbox keeps only
    `ENV_ALLOWLIST`, whatever the names."""
    env = os.environ if env is None else env
    return dict.fromkeys(sorted(n for n, v in env.items() if v and is_secret_name(n)), "")


def scrubbed_environment(workdir: str, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The sandbox's environment: `ENV_ALLOWLIST` from `env` (default ``os.environ``), and the home, temporary and
    cache directories inside `workdir`."""
    env = os.environ if env is None else env
    out = {k: env[k] for k in ENV_ALLOWLIST if k in env}
    out.setdefault("PATH", "/usr/bin:/bin")
    home = os.path.join(workdir, "home")
    out.update(
        {
            "HOME": home,
            "TMPDIR": os.path.join(workdir, "tmp"),
            "XDG_CACHE_HOME": os.path.join(home, ".cache"),
            "TORCH_EXTENSIONS_DIR": os.path.join(home, ".cache", "torch_extensions"),
            "TRITON_CACHE_DIR": os.path.join(home, ".cache", "triton"),
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONHASHSEED": "0",
        }
    )
    return out


def _libc() -> Any:
    return ctypes.CDLL(None, use_errno=True)


#: Paths (relative to the judge's home, where not absolute) that hold credentials or other runs' data; in the
#: sandbox's mount namespace each is covered by an empty, read-only file system (a directory) or ``/dev/null``.
HIDDEN_PATHS = (
    ".ssh",
    ".aws",
    ".azure",
    ".gnupg",
    ".netrc",
    ".git-credentials",
    ".pypirc",
    ".docker",
    ".kube",
    ".config",
    ".cache/argus",
    ".local/share/argus",
)

_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 1, 2, 4, 8
_MS_REMOUNT, _MS_BIND, _MS_REC, _MS_PRIVATE = 32, 4096, 16384, 1 << 18
_KEEP_WRITABLE = ("/proc", "/sys", "/dev")


def hidden_paths(env: Mapping[str, str] | None = None) -> list[str]:
    """The absolute paths `HIDDEN_PATHS` names for this user, plus the argus configuration file and caches that the
    environment names (``ARGUS_CONFIG``, ``ARGUS_LLM_CACHE_DIR``, ``ARGUS_CACHE_DIR``, ``ARGUS_RUNS``)."""
    env = os.environ if env is None else env
    home = env.get("HOME") or os.path.expanduser("~")
    out = [p if os.path.isabs(p) else os.path.join(home, p) for p in HIDDEN_PATHS]
    out += [env[k] for k in ("ARGUS_CONFIG", "ARGUS_LLM_CACHE_DIR", "ARGUS_CACHE_DIR", "ARGUS_RUNS") if env.get(k)]
    return [os.path.abspath(p) for p in out if os.path.lexists(p)]


def _mount(libc: Any, source: str | None, target: str, fstype: str | None, flags: int, data: str | None) -> bool:
    enc = lambda v: v.encode() if v is not None else None  # noqa: E731
    return libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)) == 0


def _read_only_filesystem(libc: Any, workdir: str, hidden: Sequence[str]) -> None:
    """In a fresh mount namespace: every mount read-only but ``/proc``, ``/sys``, ``/dev`` and `workdir`; each of
    `hidden` covered (directories by an empty tmpfs, files by ``/dev/null``)."""
    if not _mount(libc, None, "/", None, _MS_REC | _MS_PRIVATE, None):
        return
    _mount(libc, workdir, workdir, None, _MS_BIND | _MS_REC, None)
    for path in hidden:
        if os.path.isdir(path):
            _mount(libc, "tmpfs", path, "tmpfs", _MS_NOSUID | _MS_NODEV | _MS_RDONLY, "size=4k,mode=0555")
        else:
            _mount(libc, "/dev/null", path, None, _MS_BIND, None)
    try:
        with open("/proc/self/mountinfo") as f:
            mounts = [line.split() for line in f]
    except OSError:
        return
    for fields in mounts:
        point, options = fields[4].replace("\\040", " "), fields[5].split(",")
        if point == workdir or point.startswith(workdir.rstrip("/") + "/"):
            continue
        if any(point == k or point.startswith(k + "/") for k in _KEEP_WRITABLE):
            continue
        keep = sum(flag for name, flag in (("nosuid", _MS_NOSUID), ("nodev", _MS_NODEV), ("noexec", _MS_NOEXEC))
                   if name in options)  # fmt: skip
        _mount(libc, None, point, None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY | keep, None)


def _prepare_child(
    limits: Limits,
    gpu: bool,
    namespaces: int,
    workdir: str,
    hidden: Sequence[str],
    user: int | None = None,
) -> None:
    """Runs in the forked child before ``exec`` (see the module docstring). Must not raise for a missing
    feature: each protection is tried, and the judge reads from ``/proc`` which ones held. Capabilities are dropped
    later, by the warden's child before it becomes the runner (it first mounts its PID namespace's /proc)."""
    libc = _libc()
    # SIGTERM: the warden kills the runner, sweeps, removes the sandbox's directory and exits
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)

    def setlimit(which: int, value: int | None) -> None:
        if value is None:
            return
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(which, (value, value))

    setlimit(resource.RLIMIT_CORE, 0)
    setlimit(resource.RLIMIT_CPU, limits.cpu_s)
    setlimit(resource.RLIMIT_FSIZE, limits.file_size_bytes)
    setlimit(resource.RLIMIT_NOFILE, limits.open_files)
    if limits.processes is not None and user is not None:
        setlimit(resource.RLIMIT_NPROC, limits.processes)
    if not gpu:
        setlimit(resource.RLIMIT_AS, limits.address_space_bytes)
    if namespaces:
        userns = 0 if os.geteuid() == 0 else _CLONE_NEWUSER
        wanted = namespaces
        if userns:  # unprivileged: map ourselves, so that mounts in our namespaces are allowed
            uid, gid = os.getuid(), os.getgid()
        unshared = 0
        # all that were asked for, else fewer, the most valuable first
        for flags in (
            userns | _CLONE_NEWNET | _CLONE_NEWPID | _CLONE_NEWNS,
            userns | _CLONE_NEWNET | _CLONE_NEWNS,
            userns | _CLONE_NEWPID | _CLONE_NEWNS,
            userns | _CLONE_NEWNET,
            userns | _CLONE_NEWNS,
        ):
            flags &= wanted | _CLONE_NEWUSER
            if flags & ~_CLONE_NEWUSER and libc.unshare(flags) == 0:
                unshared = flags
                break
        if unshared and userns:
            with contextlib.suppress(OSError):
                with open("/proc/self/setgroups", "w") as f:
                    f.write("deny")
                with open("/proc/self/uid_map", "w") as f:
                    f.write(f"{uid} {uid} 1")
                with open("/proc/self/gid_map", "w") as f:
                    f.write(f"{gid} {gid} 1")
        if unshared & _CLONE_NEWNS:
            _read_only_filesystem(libc, workdir, hidden)
    if user is not None:  # root: become an unprivileged user (which also empties every capability set but the
        # bounding set, emptied first while we may)
        for cap in range(64):
            libc.prctl(24, cap, 0, 0, 0)  # PR_CAPBSET_DROP
        os.setgroups([])
        os.setgid(user)
        os.setuid(user)
    libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)


#: The namespaces a sandbox asks for, by name (``ARGUS_SANDBOX_NAMESPACES``: a comma-separated subset, ``none``, or
#: ``all``, the default).
NAMESPACES = {"net": _CLONE_NEWNET, "pid": _CLONE_NEWPID, "mnt": _CLONE_NEWNS}


def namespaces_enabled() -> int:
    """The namespaces to ask for, as ``clone`` flags, from ``ARGUS_SANDBOX_NAMESPACES`` (default: all of
    `NAMESPACES`; ``none`` or ``0``: none, e.g. in a container whose seccomp profile logs every refused
    ``unshare``)."""
    value = os.environ.get("ARGUS_SANDBOX_NAMESPACES", "all").strip().lower()
    if value in ("", "all", "1"):
        return sum(NAMESPACES.values())
    if value in ("none", "0"):
        return 0
    flags = 0
    for name in value.split(","):
        if name.strip() not in NAMESPACES:
            raise SandboxError(
                "SANDBOX_CONFIG",
                f"ARGUS_SANDBOX_NAMESPACES names {name.strip()!r}",
                f"a comma-separated subset of {', '.join(NAMESPACES)}, or all, or none",
            )
        flags |= NAMESPACES[name.strip()]
    return flags


# ---------------------------------------------------------------------------------------------------------------
# the wire


def _encode(value: Any, blobs: list[Any]) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        t = value.detach()
        if t.device.type != "cpu" and t.numel() * t.element_size() < SHARED_MEMORY_BYTES:
            t = t.to("cpu")
        t = t.contiguous()
        blobs.append(t)
        return {"__tensor__": len(blobs) - 1, "dtype": str(t.dtype).removeprefix("torch."), "shape": list(t.shape)}
    if isinstance(value, dict):
        return {str(k): _encode(v, blobs) for k, v in value.items()}
    if isinstance(value, tuple):  # kept apart from lists: kernel parameters such as tile shapes are tuples
        return {"__tuple__": [_encode(v, blobs) for v in value]}
    if isinstance(value, list):
        return [_encode(v, blobs) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    raise TypeError(f"cannot send a {type(value).__name__} through the sandbox wire")


def send_frame(sock: socket.socket, message: Mapping[str, Any], ipc: IpcExporter | None = None) -> None:
    """Send `message` (JSON data with tensors anywhere inside) as one frame. Tensors of `SHARED_MEMORY_BYTES` or
    more go by CUDA IPC handle where `ipc` (the sandbox's side, once the judge offered it) can share them, else in a
    sealed memory file whose descriptor goes with the frame (copied there straight from the GPU); smaller ones
    follow the header on the socket."""
    import torch

    blobs: list[Any] = []
    body = _encode(dict(message), blobs)
    sizes = [t.numel() * t.element_size() for t in blobs]
    shared: list[int] = []
    handles: list[dict[str, Any]] = []
    for i, n in enumerate(sizes):
        if n >= SHARED_MEMORY_BYTES:
            entry = ipc.export(blobs[i]) if ipc is not None and blobs[i].is_cuda else None
            if entry is None:
                shared.append(i)
            else:
                handles.append({"tensor": i, **entry})
    for device in {blobs[h["tensor"]].device for h in handles}:
        torch.cuda.synchronize(device)  # the judge reads them from its own process, once the frame arrives
    fds = [_memory_file(blobs[i]) for i in shared]
    try:
        head: dict[str, Any] = {"body": body, "sizes": sizes, "shared": shared}
        if handles:
            head["ipc"] = handles
        header = json.dumps(head).encode()
        data = struct.pack("<Q", len(header)) + header
        if fds:
            sent = socket.send_fds(sock, [data], fds)
            if sent < len(data):
                sock.sendall(data[sent:])
        else:
            sock.sendall(data)
    finally:
        for fd in fds:
            os.close(fd)
    for t, n in zip(blobs, sizes, strict=True):
        if 0 < n < SHARED_MEMORY_BYTES:
            sock.sendall(memoryview(t.reshape(-1).view(torch.uint8).numpy()))


def _memory_file(t: Any) -> int:
    """A sealed (no more writes, no resizing) memory file holding the bytes of the contiguous tensor `t`."""
    import mmap

    import torch

    n = t.numel() * t.element_size()
    fd = os.memfd_create("argus-tensor", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        os.ftruncate(fd, n)
        with mmap.mmap(fd, n) as mm:
            torch.frombuffer(mm, dtype=torch.uint8).copy_(t.reshape(-1).view(torch.uint8))
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _from_memory_file(fd: int, size: int, dtype: str, shape: list[int], device: Any) -> Any:
    """A fresh tensor (on `device`, else the CPU) with the bytes of the memory file `fd`, which must be at least
    `size` bytes long."""
    import mmap
    import warnings

    import torch

    if os.fstat(fd).st_size < size or not stat.S_ISREG(os.fstat(fd).st_mode):
        raise SandboxError("SANDBOX_PROTOCOL", f"a shared tensor of {size} bytes in a file that does not hold them")
    with mmap.mmap(fd, size, prot=mmap.PROT_READ) as mm, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a read-only buffer: it is copied at once
        view = torch.frombuffer(mm, dtype=torch.uint8)
        target = device if device is not None and str(device) != "cpu" else "cpu"
        copy = torch.empty(size, dtype=torch.uint8, device=target)
        copy.copy_(view)
        del view
    return copy.view(getattr(torch, dtype)).reshape(shape)


class IpcUnavailable(Exception):
    """The judge could not map or copy a tensor the sandbox shared by CUDA IPC (the handle did not open, or the
    driver could not measure or copy the mapping). Not a protocol violation: the driver, the container or the two
    processes' users may rule IPC out. `Sandbox.call` then asks for the same reply again in memory files."""


def ipc_driver() -> Any:
    """``cuda.bindings.driver``, initialised, or None where there is none here (no bindings, no driver, no GPU)."""
    try:
        return cuda_driver("the sandbox wire")
    except LaunchError:
        return None


def _succeeded(driver: Any, status: Any) -> bool:
    return status == driver.CUresult.CUDA_SUCCESS


def _status_name(status: Any) -> str:
    return str(getattr(status, "name", status))


def device_uuid(driver: Any, index: int) -> str | None:
    """The UUID (hex) of the CUDA device `index` as this process numbers its devices, or None where the driver
    cannot say: what the judge and the sandbox compare to know that they share a GPU (a MIG instance has its
    own)."""
    status, device = driver.cuDeviceGet(index)
    if not _succeeded(driver, status):
        return None
    status, uuid = driver.cuDeviceGetUuid(device)
    return bytes(uuid.bytes).hex() if _succeeded(driver, status) else None


class IpcExporter:
    """The sandbox's side of CUDA IPC. `send_frame` asks it to share each CUDA tensor of `SHARED_MEMORY_BYTES` or
    more: one on the GPU the judge named (`accepts`, a `device_uuid`) goes as a handle to its allocation instead of
    through host memory. Each tensor shared is kept alive in `held` until `release`, which the runner calls when the
    judge's next request arrives: the judge copies what a reply shared before it asks anything else, so that
    memory is not reused under its copy."""

    def __init__(self, accepts: str, driver: Any) -> None:
        self.accepts = accepts
        self.driver = driver
        self.held: list[Any] = []
        self._uuids: dict[int, str | None] = {}

    def export(self, t: Any) -> dict[str, Any] | None:
        """``{"handle", "offset", "device"}`` for the contiguous CUDA tensor `t` (its allocation's IPC handle in hex,
        the byte offset of `t` in that allocation, its device's UUID), with `t` held; None when `t` must travel in a
        memory file: it lies on another GPU than the judge's, or in memory that CUDA IPC cannot share (PyTorch's
        expandable segments, for one)."""
        import torch

        index = t.device.index
        if index not in self._uuids:
            self._uuids[index] = device_uuid(self.driver, index)
        if self._uuids[index] != self.accepts:
            return None
        pointer = t.data_ptr()
        with torch.cuda.device(index):  # the driver calls below act on the current context: t's device's
            status, base, _ = self.driver.cuMemGetAddressRange(pointer)
            if not _succeeded(self.driver, status):
                return None
            status, handle = self.driver.cuIpcGetMemHandle(base)
            if not _succeeded(self.driver, status):
                return None
        self.held.append(t)
        raw = ctypes.string_at(handle.getPtr(), IPC_HANDLE_BYTES)
        return {"handle": raw.hex(), "offset": pointer - int(base), "device": self.accepts}

    def release(self) -> None:
        """Drop the tensors shared so far (the judge has copied them)."""
        self.held = []


class IpcReceiver:
    """The judge's side of CUDA IPC: `recv_frame` has it copy each tensor the sandbox shared by handle, device to
    device, into a fresh tensor on `device` (the GPU whose UUID is `identity`). Every field of a descriptor is the
    sandbox's word and is checked before use: the device must be the judge's own, the handle 64 bytes, the offset
    a non-negative int; once the handle is open, the tensor's bytes must lie inside the allocation it maps, as the
    driver (not the sandbox) measures it. The tensor's dtype, shape and size were checked with every other
    tensor's, and the handle is closed before `tensor` returns or raises. A violation is ``SANDBOX_PROTOCOL``; a
    handle that does not open, or a mapping that cannot be measured or copied, is `IpcUnavailable`."""

    def __init__(self, driver: Any, device: Any, identity: str) -> None:
        self.driver = driver
        self.device = device
        self.identity = identity

    @staticmethod
    def create(device: Any) -> IpcReceiver | None:
        """The receiver for the judge's `device`, or None where IPC is not offered: not a CUDA device,
        ``ARGUS_SANDBOX_IPC=0``, no cuda.bindings or CUDA driver here."""
        import torch

        if device is None or os.environ.get(IPC_ENV, "1").strip() == "0":
            return None
        target = torch.device(device)
        if target.type != "cuda":
            return None
        driver = ipc_driver()
        if driver is None:
            return None
        index = target.index if target.index is not None else torch.cuda.current_device()
        identity = device_uuid(driver, index)
        return IpcReceiver(driver, torch.device("cuda", index), identity) if identity is not None else None

    def tensor(self, entry: dict[str, Any], size: int, dtype: str, shape: list[int]) -> Any:
        """A fresh tensor of `dtype` and `shape` on `device` with the `size` bytes that `entry` (a descriptor from
        the frame) shares."""
        import torch

        copy = torch.empty(size, dtype=torch.uint8, device=self.device)
        with torch.cuda.device(self.device):  # the mapping is opened in (and copied on) this device's context
            self.copy(entry, size, copy.data_ptr(), torch.cuda.current_stream(self.device).cuda_stream)
        return copy.view(getattr(torch, dtype)).reshape(shape)

    def copy(self, entry: dict[str, Any], size: int, destination: int, stream: int) -> None:
        """Copy the `size` bytes `entry` describes to the device pointer `destination` on `stream`, and wait for
        the copy (the checks are the class docstring's)."""
        driver = self.driver
        device, offset, handle = entry.get("device"), entry.get("offset"), entry.get("handle")
        if device != self.identity:
            raise SandboxError(
                "SANDBOX_PROTOCOL", f"a tensor shared from device {str(device)[:64]!r}, not the judge's {self.identity}"
            )
        if type(offset) is not int or offset < 0:
            raise SandboxError("SANDBOX_PROTOCOL", f"a tensor shared at offset {str(offset)[:64]!r}")
        try:
            raw = bytes.fromhex(handle) if isinstance(handle, str) else b""
        except ValueError:
            raw = b""
        if len(raw) != IPC_HANDLE_BYTES:
            raise SandboxError("SANDBOX_PROTOCOL", f"a CUDA IPC handle that is not {IPC_HANDLE_BYTES} bytes in hex")
        ipc_handle = driver.CUipcMemHandle()
        ctypes.memmove(ipc_handle.getPtr(), raw, IPC_HANDLE_BYTES)
        status, base = driver.cuIpcOpenMemHandle(ipc_handle, driver.CUipcMem_flags.CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS)
        if not _succeeded(driver, status):
            raise IpcUnavailable(f"cuIpcOpenMemHandle: {_status_name(status)}")
        base = int(base)
        try:
            status, start, length = driver.cuMemGetAddressRange(base)
            if not _succeeded(driver, status):
                raise IpcUnavailable(f"cuMemGetAddressRange: {_status_name(status)}")
            mapped = int(start) + int(length) - base
            if offset + size > mapped:
                raise SandboxError(
                    "SANDBOX_PROTOCOL",
                    f"a tensor of {size} bytes at offset {offset} of a shared allocation of {mapped} bytes",
                )
            (status,) = driver.cuMemcpyDtoDAsync(destination, base + offset, size, stream)
            if not _succeeded(driver, status):
                raise IpcUnavailable(f"cuMemcpyDtoDAsync: {_status_name(status)}")
            (status,) = driver.cuStreamSynchronize(stream)
            if not _succeeded(driver, status):
                raise IpcUnavailable(f"cuStreamSynchronize: {_status_name(status)}")
        finally:
            driver.cuIpcCloseMemHandle(base)


def _recv_exact(sock: socket.socket, n: int, deadline: float) -> bytearray:
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        ready, _, _ = select.select([sock], [], [], left)
        if not ready:
            raise TimeoutError
        k = sock.recv_into(view[got:], n - got)
        if k == 0:
            raise EOFError
        got += k
    return buf


def _itemsize(dtype: str) -> int:
    import torch

    return torch.empty((), dtype=getattr(torch, dtype)).element_size()


def _decode(value: Any, tensors: list[Any]) -> Any:
    if isinstance(value, dict):
        if "__tensor__" in value:
            index = value["__tensor__"]
            if not isinstance(index, int) or not 0 <= index < len(tensors):
                raise SandboxError("SANDBOX_PROTOCOL", f"a tensor reference {index!r} that the frame does not carry")
            return tensors[index]
        if set(value) == {"__tuple__"} and isinstance(value["__tuple__"], list):
            return tuple(_decode(v, tensors) for v in value["__tuple__"])
        return {k: _decode(v, tensors) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode(v, tensors) for v in value]
    return value


def _tensor_specs(value: Any, out: dict[int, tuple[str, list[int]]]) -> None:
    if isinstance(value, dict):
        if "__tensor__" in value:
            out[value["__tensor__"]] = (value.get("dtype"), value.get("shape"))
            return
        for v in value.values():
            _tensor_specs(v, out)
    elif isinstance(value, list):
        for v in value:
            _tensor_specs(v, out)


def recv_frame(
    sock: socket.socket,
    timeout_s: float,
    *,
    max_bytes: int = 2**36,
    device: Any = None,
    ipc: IpcReceiver | None = None,
) -> dict[str, Any]:
    """Receive one frame within `timeout_s`; tensors are rebuilt from bytes as fresh base tensors (on `device` when
    given), those shared by CUDA IPC copied by `ipc` (None: the frame may carry no IPC handle). Raises
    `SandboxError`: ``SANDBOX_TIMEOUT``, ``SANDBOX_CRASHED`` (the peer closed), ``SANDBOX_PROTOCOL`` (malformed, a
    dtype not in `WIRE_DTYPES`, sizes that disagree with shapes, more than `max_bytes` of tensors, an IPC handle
    not offered or that fails `IpcReceiver`'s checks); `IpcUnavailable` once the whole frame is read, when a tensor
    shared by IPC could not be mapped here."""
    import torch

    deadline = time.monotonic() + timeout_s
    fds: list[int] = []
    try:
        first = _recv_first(sock, deadline, fds)
        (length,) = struct.unpack("<Q", bytes(first + _recv_exact(sock, 8 - len(first), deadline)))
        if length > MAX_HEADER_BYTES:
            raise SandboxError("SANDBOX_PROTOCOL", f"a frame header of {length} bytes (limit {MAX_HEADER_BYTES})")
        try:
            header = json.loads(bytes(_recv_exact(sock, length, deadline)))
        except (ValueError, RecursionError) as e:
            raise SandboxError("SANDBOX_PROTOCOL", f"a frame header that is not JSON: {e}") from None
        if not isinstance(header, dict) or not isinstance(header.get("body"), dict):
            raise SandboxError("SANDBOX_PROTOCOL", "a frame without a body")
        sizes = header.get("sizes", [])
        specs: dict[int, tuple[str, list[int]]] = {}
        _tensor_specs(header["body"], specs)
        if not isinstance(sizes, list) or sorted(specs) != list(range(len(sizes))):
            raise SandboxError("SANDBOX_PROTOCOL", "tensor references that do not match the frame's tensors")
        if not all(isinstance(n, int) and n >= 0 for n in sizes) or sum(sizes) > max_bytes:
            raise SandboxError("SANDBOX_PROTOCOL", f"tensors of {sizes} bytes (limit {max_bytes} in all)")
        shared = header.get("shared", [])
        if (
            not isinstance(shared, list)
            or len(shared) != len(fds)
            or not all(isinstance(i, int) and 0 <= i < len(sizes) for i in shared)
        ):
            raise SandboxError("SANDBOX_PROTOCOL", "shared tensors that do not match the descriptors sent")
        shared_fd = dict(zip(shared, fds, strict=True))
        handles = header.get("ipc", [])
        if not isinstance(handles, list) or not all(
            isinstance(h, dict) and type(h.get("tensor")) is int and 0 <= h["tensor"] < len(sizes) for h in handles
        ):
            raise SandboxError("SANDBOX_PROTOCOL", "IPC handles that do not match the frame's tensors")
        by_ipc = {h["tensor"]: h for h in handles}
        if len(by_ipc) != len(handles) or not by_ipc.keys().isdisjoint(shared_fd):
            raise SandboxError("SANDBOX_PROTOCOL", "a tensor that the frame carries twice")
        if handles and ipc is None:
            raise SandboxError("SANDBOX_PROTOCOL", "a tensor shared by CUDA IPC, which the judge did not offer")
        unavailable: IpcUnavailable | None = None
        tensors = []
        for i, size in enumerate(sizes):
            dtype, shape = specs[i]
            if dtype not in WIRE_DTYPES:
                raise SandboxError("SANDBOX_PROTOCOL", f"a tensor of dtype {dtype!r}")
            if not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape):
                raise SandboxError("SANDBOX_PROTOCOL", f"a tensor of shape {shape!r}")
            numel = 1
            for d in shape:
                numel *= d
            if not isinstance(size, int) or size != numel * _itemsize(dtype):
                raise SandboxError("SANDBOX_PROTOCOL", f"a {dtype} tensor of shape {shape} sent as {size} bytes")
            if i in shared_fd:
                tensors.append(_from_memory_file(shared_fd[i], size, dtype, shape, device))
                continue
            if i in by_ipc:  # after one could not be mapped, the rest are not tried: the frame is asked for again
                if unavailable is None:
                    try:
                        tensors.append(ipc.tensor(by_ipc[i], size, dtype, shape))  # type: ignore[union-attr]
                        continue
                    except IpcUnavailable as e:
                        unavailable = e
                tensors.append(None)
                continue
            raw = _recv_exact(sock, size, deadline) if size else bytearray()
            t = (
                torch.frombuffer(raw, dtype=getattr(torch, dtype)).reshape(shape)
                if size
                else torch.empty(shape, dtype=getattr(torch, dtype))
            )
            tensors.append(t.to(device) if device is not None and str(device) != "cpu" else t)
        if unavailable is not None:
            raise unavailable
        return _decode(header["body"], tensors)
    except TimeoutError:
        raise SandboxError("SANDBOX_TIMEOUT", f"no answer within {timeout_s:g} s") from None
    except (EOFError, ConnectionError, OSError) as e:
        raise SandboxError("SANDBOX_CRASHED", f"the candidate's process closed the connection ({e or 'EOF'})") from None
    except struct.error as e:
        raise SandboxError("SANDBOX_PROTOCOL", f"a malformed frame: {e}") from None
    finally:
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)


def _recv_first(sock: socket.socket, deadline: float, fds: list[int]) -> bytes:
    """The first bytes of a frame (at most 8), with the descriptors sent along with them appended to `fds`."""
    left = deadline - time.monotonic()
    if left <= 0 or not select.select([sock], [], [], left)[0]:
        raise TimeoutError
    data, received, _, _ = socket.recv_fds(sock, 8, MAX_SHARED_TENSORS)
    fds.extend(received)
    if not data:
        raise EOFError
    return data


# ---------------------------------------------------------------------------------------------------------------
# the judge's side


@dataclass
class Sandbox:
    """One sandboxed process for one candidate (see the module docstring). Use as a context manager; `call` sends
    an operation to the runner and returns its answer (plain data, tensors rebuilt on `device`).

    Attributes:
        gpu: whether the candidate will use a GPU (no address-space limit then).
        device: where received tensors are placed (None: the CPU).
        limits: resource limits (default `Limits.default`).
        start_timeout_s: how long the runner may take to start (import PyTorch).

    After `start`, `ipc` is the `IpcReceiver` for large outputs on `device`'s GPU when the sandbox took the offer
    (None: memory files), and `ipc_status` says why in words (recorded with each gate's sandbox environment).
    """

    gpu: bool = False
    device: Any = None
    limits: Limits | None = None
    start_timeout_s: float = 120.0
    namespaces: int = field(default_factory=namespaces_enabled)
    drop_user: bool = True

    def __post_init__(self) -> None:
        self.process: Any = None
        self.sock: socket.socket | None = None
        self.workdir: str | None = None
        self.protections: dict[str, Any] = {}
        self.started_s = 0.0
        self.ipc: IpcReceiver | None = None
        self.ipc_status = "not offered"
        self._killed = False

    def __enter__(self) -> Sandbox:
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def start(self) -> None:
        """Start the process and wait for the runner's greeting."""
        import subprocess

        t0 = time.perf_counter()
        limits = self.limits or Limits.default(self.gpu)
        remove_stale_workdirs()
        try:
            self.workdir = tempfile.mkdtemp(prefix="argus-sandbox-")
            with open(os.path.join(self.workdir, "judge.pid"), "w") as f:
                f.write(str(os.getpid()))
            for sub in ("home", "tmp", "files"):
                os.makedirs(os.path.join(self.workdir, sub), exist_ok=True)
                os.chmod(os.path.join(self.workdir, sub), 0o700 if sub != "files" else 0o755)
        except OSError as e:  # a full or read-only temporary directory: the harness's problem, said as such
            raise SandboxError("SANDBOX_START", f"cannot make the sandbox's directory: {e}") from None
        parent, child = socket.socketpair()
        hidden = hidden_paths()
        paths = [p for p in sys.path if p and os.path.isdir(p)]
        # a GPU sandbox gets no PID namespace: CUDA's driver does not start in one here (Error 304 on an H100), and
        # a fresh /proc cannot be mounted in it; a different user then keeps the candidate from signalling ours
        namespaces = self.namespaces & ~_CLONE_NEWPID if self.gpu else self.namespaces
        user = None
        if (
            os.geteuid() == 0
            and self.drop_user
            and all(_accessible_to_others(p) for p in (*paths, os.path.realpath(sys.executable), WARDEN))
        ):
            user = sandbox_user()
            for root, dirs, files in os.walk(self.workdir):
                for name in (root, *(os.path.join(root, f) for f in dirs + files)):
                    os.chown(name, user, user)
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-I", WARDEN, json.dumps(paths), str(child.fileno()), self.workdir],
                env=scrubbed_environment(self.workdir),
                cwd=self.workdir,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                pass_fds=(child.fileno(),),
                start_new_session=True,
                preexec_fn=lambda: _prepare_child(limits, self.gpu, namespaces, self.workdir, hidden, user),
            )
        except OSError as e:
            parent.close()
            raise SandboxError("SANDBOX_START", f"cannot start the sandbox process: {e}") from None
        finally:
            child.close()
        self.sock = parent
        try:
            hello = recv_frame(parent, self.start_timeout_s)
            self._offer_ipc()
        except SandboxError as e:
            stderr = self._stderr_tail()
            self.close()
            raise SandboxError("SANDBOX_START", f"the sandbox did not start: {e.message}; {stderr}") from None
        self.protections = self._read_protections(hello)
        self.started_s = time.perf_counter() - t0

    def _offer_ipc(self) -> None:
        """Offer the runner CUDA IPC for what it sends back (``wire``) where this process can take it
        (`IpcReceiver.create`): from then on it shares tensors on this GPU by handle, if it has a CUDA driver."""
        receiver = IpcReceiver.create(self.device) if self.gpu else None
        if receiver is None:
            return
        reply = self.call("wire", timeout_s=self.start_timeout_s, ipc_device=receiver.identity)
        if reply.get("ipc") is True:
            self.ipc, self.ipc_status = receiver, "on"
        else:
            self.ipc_status = "declined by the sandbox (no CUDA driver there)"

    def share_file(self, path: str | os.PathLike[str]) -> str:
        """Copy the file `path` into the sandbox's directory (readable there whatever user it runs as, and not
        changed under it by anyone outside) and return the path the sandbox sees it at."""
        if self.workdir is None:
            raise SandboxError("SANDBOX_CRASHED", "the sandbox is not running")
        source = os.path.abspath(path)
        files = os.path.join(self.workdir, "files")
        folder = os.path.join(files, str(len(os.listdir(files))))
        os.mkdir(folder)
        target = os.path.join(folder, os.path.basename(source))
        shutil.copyfile(source, target)
        os.chmod(folder, 0o555)
        os.chmod(target, 0o444)
        return target

    def _read_protections(self, hello: dict[str, Any]) -> dict[str, Any]:
        """What held, read from ``/proc`` by the judge (not the child's word) for the runner (the warden's child),
        plus the pids."""
        warden = self.process.pid
        pid = next(iter(children(warden)), warden)
        out: dict[str, Any] = {"pid": warden, "runner": pid}
        for ns in ("net", "pid", "user", "mnt"):
            try:
                mine = os.readlink(f"/proc/self/ns/{ns}")
                theirs = os.readlink(f"/proc/{pid}/ns/{ns}")
                out[f"{ns}_namespace"] = mine != theirs
            except OSError:
                out[f"{ns}_namespace"] = None
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                out["environment"] = sorted(k.split(b"=", 1)[0].decode() for k in f.read().split(b"\0") if k)
        except OSError:
            out["environment"] = None
        out["process_group"] = True
        out["uid"] = _real_uid(pid)
        out["filesystem_read_only"] = _root_read_only(pid)
        out["capabilities"] = _capabilities(pid)
        out["runner_pid"] = hello.get("pid")
        return out

    def call(self, op: str, *, timeout_s: float, max_bytes: int = 2**36, **payload: Any) -> dict[str, Any]:
        """Send ``{"op": op, **payload}`` and return the answer. Raises `SandboxError` (the candidate's failure)."""
        if self.sock is None:
            raise SandboxError("SANDBOX_CRASHED", "the sandbox is not running")
        self._send({"op": op, **payload})
        try:
            try:
                return recv_frame(self.sock, timeout_s, max_bytes=max_bytes, device=self.device, ipc=self.ipc)
            except IpcUnavailable as e:
                # what it shared cannot be mapped here: no IPC from now on, and the same reply again in memory files
                # (the runner still holds it)
                self.ipc, self.ipc_status = None, f"off after a failure ({e}); memory files since"
                self._send({"op": "resend"})
                return recv_frame(self.sock, timeout_s, max_bytes=max_bytes, device=self.device)
        except SandboxError as e:
            if e.code == "SANDBOX_TIMEOUT":
                self.kill()
                raise
            if e.code == "SANDBOX_CRASHED":
                code = self._wait_exit()
                raise SandboxError(
                    "SANDBOX_CRASHED", f"the candidate's process {_describe(code)}", exitcode=code
                ) from None
            raise

    def _send(self, message: dict[str, Any]) -> None:
        try:
            send_frame(self.sock, message)
        except OSError as e:
            raise SandboxError("SANDBOX_CRASHED", f"the candidate's process is gone ({e})") from None

    def _wait_exit(self, timeout_s: float = 5.0) -> int | None:
        """The runner's exit status as the warden relays it (negative: killed by that signal)."""
        if self.process is None:
            return None
        try:
            status = self.process.wait(timeout=timeout_s)
        except Exception:  # noqa: BLE001 - still running: it is killed
            self.kill()
            return None
        # the warden exits 128 + n when the runner was killed by signal n (a shell's convention)
        if status is not None and 128 < status < 128 + 65:
            return -(status - 128)
        return status

    def _stderr_tail(self) -> str:
        if self.process is None or self.process.stderr is None:
            return ""
        with contextlib.suppress(Exception):
            if self.process.poll() is not None:
                return self.process.stderr.read()[-2000:].decode(errors="replace")
        return ""

    def kill(self) -> None:
        """Kill the whole process group now (the PID namespace takes everything the runner started with it)."""
        self._killed = True
        if self.process is not None and self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, signal.SIGKILL)
        if self.process is not None:
            with contextlib.suppress(Exception):
                self.process.wait(timeout=10)

    def close(self) -> None:
        """Ask the runner to stop, then kill the process group, and remove the sandbox's directory."""
        if self.sock is not None:
            with contextlib.suppress(OSError):
                send_frame(self.sock, {"op": "exit"})
            if self.process is not None:
                with contextlib.suppress(Exception):
                    self.process.wait(timeout=2)
            self.sock.close()
            self.sock = None
        if self.process is not None:
            if self.process.poll() is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(self.process.pid, signal.SIGTERM)  # the warden sweeps what the runner left
                with contextlib.suppress(Exception):
                    self.process.wait(timeout=3)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, signal.SIGKILL)
            with contextlib.suppress(Exception):
                self.process.wait(timeout=10)
            if self.process.stderr is not None:
                self.process.stderr.close()
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None


#: A sandbox started by root runs as a user of its own, ``UNPRIVILEGED_USERS + (judge pid % 100000)``, when
#: everything it must read is readable by others: it can then signal no process but its own (not another worker's
#: sandbox either), and read only what any user may.
UNPRIVILEGED_USERS = 200_000


def sandbox_user() -> int:
    """The user id this judge's sandboxes run as (see `UNPRIVILEGED_USERS`)."""
    return UNPRIVILEGED_USERS + os.getpid() % 100_000


def _accessible_to_others(path: str) -> bool:
    """Whether a user with no relation to the owner can reach `path` (every ancestor searchable by others) and
    read it (and list it, for a directory)."""
    path = os.path.realpath(path)
    try:
        st = os.stat(path)
        if not st.st_mode & 0o004 or (os.path.isdir(path) and not st.st_mode & 0o001):
            return False
        parent = os.path.dirname(path)
        while parent and parent != path:
            if not os.stat(parent).st_mode & 0o001:
                return False
            path, parent = parent, os.path.dirname(parent)
    except OSError:
        return False
    return True


def remove_stale_workdirs(root: str | None = None, min_age_s: float = 60.0) -> int:
    """Remove sandbox directories (``argus-sandbox-*`` in `root`, default the temporary directory) whose judge
    (``judge.pid``) is gone: what a judge killed before it could clean up left behind. Returns how many."""
    root = root or tempfile.gettempdir()
    removed = 0
    with contextlib.suppress(OSError):
        for name in os.listdir(root):
            path = os.path.join(root, name)
            if not name.startswith("argus-sandbox-") or time.time() - os.stat(path).st_mtime < min_age_s:
                continue
            try:
                with open(os.path.join(path, "judge.pid")) as f:
                    os.kill(int(f.read().strip()), 0)
                continue  # its judge is alive
            except PermissionError:
                continue  # alive, another user's
            except (OSError, ValueError):
                pass
            shutil.rmtree(path, ignore_errors=True)
            removed += not os.path.exists(path)
    return removed


def _real_uid(pid: int) -> int | None:
    """The real user id of `pid` (from ``/proc/PID/status``: the owner of ``/proc/PID`` is root for a process
    that changed its user)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("Uid:"))
    except (OSError, StopIteration, ValueError, IndexError):
        return None


def _root_read_only(pid: int) -> bool | None:
    """Whether ``/`` is mounted read-only in `pid`'s mount namespace (None: unreadable)."""
    try:
        with open(f"/proc/{pid}/mountinfo") as f:
            roots = [line.split() for line in f if line.split()[4] == "/"]
    except (OSError, IndexError):
        return None
    return bool(roots) and "ro" in roots[-1][5].split(",")


def _capabilities(pid: int) -> dict[str, int] | None:
    """``CapEff`` and ``CapBnd`` of `pid` (0: none)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            caps = {k: int(v, 16) for k, v in (line.split(":") for line in f if line.startswith(("CapEff", "CapBnd")))}
    except (OSError, ValueError):
        return None
    return {"effective": caps.get("CapEff", -1), "bounding": caps.get("CapBnd", -1)}


def _describe(code: int | None) -> str:
    if code is None:
        return "did not exit and was killed"
    if code < 0:
        try:
            return f"was killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with status {code}"


def tensors_nbytes(values: Sequence[Any]) -> int:
    """Bytes of the tensors in `values` (for frame limits)."""
    import torch

    return sum(v.numel() * v.element_size() for v in values if isinstance(v, torch.Tensor))
