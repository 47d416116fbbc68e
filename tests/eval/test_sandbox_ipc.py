"""CUDA IPC on the sandbox wire (`argus.eval.sandbox.IpcExporter`, `IpcReceiver`): large outputs on the judge's own
GPU come back by handle and are copied device to device, every field of a handle's descriptor checked by the judge.

On the CPU the driver is `FakeDriver`, which plays ``cuda.bindings.driver`` over host memory (an "allocation" is a
host buffer, a handle names one), so the judge's checks, the handles it closes, the negotiation and the fallback to
memory files are all exercised without a GPU. The GPU tier runs two processes on one GPU: a real sandbox and this
judge (``-m gpu``)."""

from __future__ import annotations

import contextlib
import ctypes
import enum
import json
import os
import secrets
import socket
import struct
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch
from cuda.bindings import driver as bindings

from argus.eval import sandbox as wire
from argus.eval import sandbox_runner
from argus.eval.sandbox import (
    IPC_ENV,
    SHARED_MEMORY_BYTES,
    IpcExporter,
    IpcReceiver,
    IpcUnavailable,
    Sandbox,
    SandboxError,
    recv_frame,
    send_frame,
)

UUID = bytes(range(16))
OTHER_UUID = bytes(range(1, 17))


class FakeDriver:
    """``cuda.bindings.driver`` as the wire uses it, over host memory: `allocate` makes an "allocation" (a host
    buffer) that `cuIpcGetMemHandle` exports and `cuIpcOpenMemHandle` maps again (to the same address). It records
    every handle opened and not yet closed (`opened`), and can fail any one call (`fail`)."""

    class CUresult(enum.IntEnum):
        CUDA_SUCCESS = 0
        CUDA_ERROR_INVALID_VALUE = 1
        CUDA_ERROR_MAP_FAILED = 205
        CUDA_ERROR_INVALID_HANDLE = 400

    class CUipcMem_flags(enum.IntEnum):
        CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS = 1

    class CUipcMemHandle:
        def __init__(self) -> None:
            self.raw = ctypes.create_string_buffer(64)

        def getPtr(self) -> int:
            return ctypes.addressof(self.raw)

    def __init__(self, uuid: bytes = UUID) -> None:
        self.uuid = uuid
        self.allocations: dict[bytes, torch.Tensor] = {}
        self.opened: list[int] = []
        self.fail: set[str] = set()
        self.flags: list[int] = []

    def allocate(self, data: torch.Tensor) -> torch.Tensor:
        """`data`'s bytes in a fresh allocation (kept alive here)."""
        buffer = data.detach().reshape(-1).view(torch.uint8).clone()
        self.allocations[secrets.token_bytes(64)] = buffer
        return buffer

    def handle_of(self, buffer: torch.Tensor) -> str:
        return next(k for k, v in self.allocations.items() if v is buffer).hex()

    def _status(self, name: str) -> CUresult:
        return self.CUresult.CUDA_ERROR_INVALID_VALUE if name in self.fail else self.CUresult.CUDA_SUCCESS

    def cuDeviceGet(self, index: int) -> tuple[Any, int]:
        return self._status("cuDeviceGet"), index

    def cuDeviceGetUuid(self, device: int) -> tuple[Any, Any]:
        return self._status("cuDeviceGetUuid"), SimpleNamespace(bytes=self.uuid)

    def cuMemGetAddressRange(self, pointer: int) -> tuple[Any, int, int]:
        for buffer in self.allocations.values():
            base, size = buffer.data_ptr(), buffer.numel()
            if base <= pointer < base + size and "cuMemGetAddressRange" not in self.fail:
                return self.CUresult.CUDA_SUCCESS, base, size
        return self.CUresult.CUDA_ERROR_INVALID_VALUE, 0, 0

    def cuIpcGetMemHandle(self, base: int) -> tuple[Any, Any]:
        handle = self.CUipcMemHandle()
        key = next((k for k, v in self.allocations.items() if v.data_ptr() == base), None)
        if key is None or "cuIpcGetMemHandle" in self.fail:
            return self.CUresult.CUDA_ERROR_INVALID_VALUE, handle
        ctypes.memmove(handle.getPtr(), key, 64)
        return self.CUresult.CUDA_SUCCESS, handle

    def cuIpcOpenMemHandle(self, handle: Any, flags: int) -> tuple[Any, int]:
        self.flags.append(flags)
        buffer = self.allocations.get(ctypes.string_at(handle.getPtr(), 64))
        if buffer is None or "cuIpcOpenMemHandle" in self.fail:
            return self.CUresult.CUDA_ERROR_INVALID_HANDLE, 0
        self.opened.append(buffer.data_ptr())
        return self.CUresult.CUDA_SUCCESS, buffer.data_ptr()

    def cuIpcCloseMemHandle(self, base: int) -> tuple[Any]:
        self.opened.remove(base)
        return (self.CUresult.CUDA_SUCCESS,)

    def cuMemcpyDtoDAsync(self, destination: int, source: int, size: int, stream: int) -> tuple[Any]:
        if "cuMemcpyDtoDAsync" not in self.fail:
            ctypes.memmove(destination, source, size)
        return (self._status("cuMemcpyDtoDAsync"),)

    def cuStreamSynchronize(self, stream: int) -> tuple[Any]:
        return (self._status("cuStreamSynchronize"),)


def test_the_fake_driver_speaks_the_bindings_names() -> None:
    names = [n for n in vars(FakeDriver) if n.startswith(("cu", "CU"))]
    assert len(names) == 11 and [n for n in names if not hasattr(bindings, n)] == []
    for enum_type in (FakeDriver.CUresult, FakeDriver.CUipcMem_flags):
        real = getattr(bindings, enum_type.__name__)
        assert all(int(getattr(real, member.name)) == member.value for member in enum_type)
    assert bindings.CU_IPC_HANDLE_SIZE == wire.IPC_HANDLE_BYTES


@pytest.fixture
def host_as_device(monkeypatch: pytest.MonkeyPatch) -> None:
    """PyTorch's CUDA device guard and current stream, as no-ops on this CPU (the fake driver copies host memory)."""
    monkeypatch.setattr(torch.cuda, "device", lambda device: contextlib.nullcontext())
    monkeypatch.setattr(torch.cuda, "current_stream", lambda device=None: SimpleNamespace(cuda_stream=0))


def receiver(driver: FakeDriver) -> IpcReceiver:
    return IpcReceiver(driver, torch.device("cpu"), UUID.hex())


def descriptor(driver: FakeDriver, buffer: torch.Tensor, offset: int = 0, **changes: Any) -> dict[str, Any]:
    return {"handle": driver.handle_of(buffer), "offset": offset, "device": UUID.hex(), **changes}


# ---------------------------------------------------------------------------------------------------------------
# the judge's checks


def test_a_shared_tensor_is_copied_from_its_offset_and_the_handle_closed() -> None:
    driver = FakeDriver()
    buffer = driver.allocate(torch.randint(0, 256, (4096,), dtype=torch.uint8))
    out = torch.zeros(256, dtype=torch.uint8)
    receiver(driver).copy(descriptor(driver, buffer, offset=1000), 256, out.data_ptr(), 0)
    assert torch.equal(out, buffer[1000:1256])
    assert driver.opened == []
    assert driver.flags == [FakeDriver.CUipcMem_flags.CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS]


@pytest.mark.parametrize(
    ("changes", "size", "opens"),
    [
        ({"offset": 4096 - 255}, 256, True),  # one byte past the allocation's end
        ({"offset": 0}, 4097, True),  # more bytes than the allocation holds
        ({"offset": 2**70}, 256, True),
        ({"offset": -1}, 256, False),
        ({"offset": "0"}, 256, False),
        ({"offset": 0.0}, 256, False),
        ({"offset": True}, 256, False),
        ({"offset": None}, 256, False),
        ({"device": OTHER_UUID.hex()}, 256, False),  # another GPU than the judge's
        ({"device": None}, 256, False),
        ({"handle": "zz" * 64}, 256, False),
        ({"handle": "00" * 63}, 256, False),
        ({"handle": "00" * 65}, 256, False),
        ({"handle": 123}, 256, False),
    ],
)
def test_a_hostile_descriptor_is_a_protocol_violation_and_leaves_no_handle_open(
    changes: dict[str, Any], size: int, opens: bool
) -> None:
    driver = FakeDriver()
    buffer = driver.allocate(torch.zeros(4096, dtype=torch.uint8))
    out = torch.full((4097,), 7, dtype=torch.uint8)
    with pytest.raises(SandboxError) as refused:
        receiver(driver).copy(descriptor(driver, buffer, **changes), size, out.data_ptr(), 0)
    assert refused.value.code == "SANDBOX_PROTOCOL"
    assert len(driver.flags) == opens  # the fields are checked before the handle is opened where they can be
    assert driver.opened == []  # and a handle opened is closed
    assert bool((out == 7).all())  # nothing was copied


@pytest.mark.parametrize(
    "call", ["cuIpcOpenMemHandle", "cuMemGetAddressRange", "cuMemcpyDtoDAsync", "cuStreamSynchronize"]
)
def test_a_mapping_that_fails_is_unavailable_not_a_violation(call: str) -> None:
    driver = FakeDriver()
    buffer = driver.allocate(torch.zeros(64, dtype=torch.uint8))
    driver.fail.add(call)
    out = torch.zeros(64, dtype=torch.uint8)
    with pytest.raises(IpcUnavailable, match=call):
        receiver(driver).copy(descriptor(driver, buffer), 64, out.data_ptr(), 0)
    assert driver.opened == []


# ---------------------------------------------------------------------------------------------------------------
# frames that mix the three ways a tensor travels


def send_outputs(
    sock: socket.socket,
    outputs: list[torch.Tensor],
    ipc: dict[int, dict[str, Any]],
    *,
    spec: Callable[[int, torch.Tensor], dict[str, Any]] | None = None,
    header: dict[str, Any] | None = None,
) -> None:
    """Send ``{"outputs": outputs}`` as the runner's `send_frame` would, with output ``i`` shared by the descriptor
    ``ipc[i]`` (its bytes are not sent), the others in memory files or on the socket by size. `spec` overrides an
    output's ``{"dtype", "shape"}`` and `header` the header's fields, to forge frames."""
    forged = spec or (lambda i, t: {})
    body = {
        "outputs": [
            {"__tensor__": i, "dtype": str(t.dtype).removeprefix("torch."), "shape": list(t.shape), **forged(i, t)}
            for i, t in enumerate(outputs)
        ]
    }
    sizes = [t.numel() * t.element_size() for t in outputs]
    shared = [i for i, n in enumerate(sizes) if i not in ipc and n >= SHARED_MEMORY_BYTES]
    fds = [wire._memory_file(outputs[i].contiguous()) for i in shared]
    head = {"body": body, "sizes": sizes, "shared": shared, "ipc": [{"tensor": i, **d} for i, d in ipc.items()]}
    data = json.dumps({**head, **(header or {})}).encode()
    data = struct.pack("<Q", len(data)) + data
    if fds:
        socket.send_fds(sock, [data], fds)
        for fd in fds:
            os.close(fd)
    else:
        sock.sendall(data)
    for i, (t, n) in enumerate(zip(outputs, sizes, strict=True)):
        if i not in ipc and 0 < n < SHARED_MEMORY_BYTES:
            sock.sendall(t.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    a, b = socket.socketpair()
    yield a, b
    a.close()
    b.close()


def in_thread(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> threading.Thread:
    thread = threading.Thread(target=fn, args=args, kwargs=kwargs)
    thread.start()
    return thread


@pytest.mark.usefixtures("host_as_device")
def test_one_frame_carries_ipc_memory_file_and_socket_tensors(pair: tuple[socket.socket, socket.socket]) -> None:
    driver = FakeDriver()
    shared = torch.randn(3, 5, SHARED_MEMORY_BYTES // 4)  # by IPC, from 12 bytes into its allocation
    allocation = driver.allocate(torch.cat([torch.randn(3), shared.reshape(-1)]))
    in_file = torch.randn(SHARED_MEMORY_BYTES // 8 + 3, dtype=torch.float64)
    small = torch.arange(10, dtype=torch.int16)
    thread = in_thread(send_outputs, pair[0], [shared, in_file, small], {0: descriptor(driver, allocation, 12)})
    got = recv_frame(pair[1], 10, ipc=receiver(driver))["outputs"]
    thread.join()
    assert torch.equal(got[0], shared) and torch.equal(got[1], in_file) and torch.equal(got[2], small)
    assert got[0].dtype == torch.float32 and got[0].shape == shared.shape
    assert driver.opened == []


@pytest.mark.parametrize(
    ("forge", "reason"),
    [
        ({"spec": lambda i, t: {"dtype": "object"}}, "dtype"),
        ({"spec": lambda i, t: {"shape": [-4, -16]}}, "shape"),
        ({"spec": lambda i, t: {"shape": [8]}}, "sent as"),  # sizes that disagree with the shape
        ({"header": {"ipc": [{"tensor": 5, "offset": 0}]}}, "do not match"),
        ({"header": {"ipc": [{"tensor": True}]}}, "do not match"),
        ({"header": {"ipc": {"tensor": 0}}}, "do not match"),
        ({"header": {"ipc": [{"tensor": 0}, {"tensor": 0}]}}, "twice"),
    ],
)
@pytest.mark.usefixtures("host_as_device")
def test_a_forged_frame_with_a_handle_is_refused_before_the_handle_is_opened(
    pair: tuple[socket.socket, socket.socket], forge: dict[str, Any], reason: str
) -> None:
    driver = FakeDriver()
    allocation = driver.allocate(torch.zeros(64))
    thread = in_thread(send_outputs, pair[0], [torch.zeros(16)], {0: descriptor(driver, allocation)}, **forge)
    with pytest.raises(SandboxError, match=reason) as refused:
        recv_frame(pair[1], 10, ipc=receiver(driver))
    thread.join()
    assert refused.value.code == "SANDBOX_PROTOCOL"
    assert driver.flags == []


@pytest.mark.usefixtures("host_as_device")
def test_the_limit_on_a_reply_counts_tensors_shared_by_ipc(pair: tuple[socket.socket, socket.socket]) -> None:
    driver = FakeDriver()
    allocation = driver.allocate(torch.zeros(1000))
    thread = in_thread(send_outputs, pair[0], [torch.zeros(1000)], {0: descriptor(driver, allocation)})
    with pytest.raises(SandboxError, match="limit") as refused:
        recv_frame(pair[1], 10, max_bytes=3999, ipc=receiver(driver))
    thread.join()
    assert refused.value.code == "SANDBOX_PROTOCOL" and driver.flags == []


def test_a_handle_the_judge_did_not_offer_to_take_is_refused(pair: tuple[socket.socket, socket.socket]) -> None:
    driver = FakeDriver()
    allocation = driver.allocate(torch.zeros(64))
    thread = in_thread(send_outputs, pair[0], [torch.zeros(16)], {0: descriptor(driver, allocation)})
    with pytest.raises(SandboxError, match="did not offer") as refused:
        recv_frame(pair[1], 10)
    thread.join()
    assert refused.value.code == "SANDBOX_PROTOCOL" and driver.flags == []


@pytest.mark.usefixtures("host_as_device")
def test_a_handle_that_does_not_open_is_reported_after_the_whole_frame_is_read(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    driver = FakeDriver()
    allocation = driver.allocate(torch.zeros(64))
    driver.fail.add("cuIpcOpenMemHandle")
    outputs = [torch.zeros(16), torch.randn(SHARED_MEMORY_BYTES // 4 + 1), torch.arange(7)]
    thread = in_thread(send_outputs, pair[0], outputs, {0: descriptor(driver, allocation)})
    with pytest.raises(IpcUnavailable):
        recv_frame(pair[1], 10, ipc=receiver(driver))
    thread.join()
    # the socket is still in step: the next frame reads whole
    thread = in_thread(send_frame, pair[0], {"next": torch.arange(3)})
    assert torch.equal(recv_frame(pair[1], 10)["next"], torch.arange(3))
    thread.join()


# ---------------------------------------------------------------------------------------------------------------
# the sandbox's side


@pytest.fixture
def fake_cuda_tensor() -> Callable[[FakeDriver, torch.Tensor, int], Any]:
    def make(driver: FakeDriver, allocation: torch.Tensor, offset: int) -> Any:
        return SimpleNamespace(device=torch.device("cuda", 0), data_ptr=lambda: allocation.data_ptr() + offset)

    return make


@pytest.mark.usefixtures("host_as_device")
def test_the_sandbox_shares_a_tensor_on_the_judges_gpu_and_holds_it(fake_cuda_tensor: Any) -> None:
    driver = FakeDriver()
    allocation = driver.allocate(torch.randint(0, 256, (4096,), dtype=torch.uint8))
    tensor = fake_cuda_tensor(driver, allocation, 512)
    exporter = IpcExporter(UUID.hex(), driver)
    entry = exporter.export(tensor)
    assert entry == {"handle": driver.handle_of(allocation), "offset": 512, "device": UUID.hex()}
    assert exporter.held == [tensor]
    out = torch.zeros(100, dtype=torch.uint8)  # what the judge makes of it
    receiver(driver).copy(entry, 100, out.data_ptr(), 0)
    assert torch.equal(out, allocation[512:612])
    exporter.release()
    assert exporter.held == []


@pytest.mark.parametrize("failing", ["another GPU", "cuIpcGetMemHandle", "cuMemGetAddressRange", "cuDeviceGetUuid"])
@pytest.mark.usefixtures("host_as_device")
def test_a_tensor_the_sandbox_cannot_share_goes_in_a_memory_file(fake_cuda_tensor: Any, failing: str) -> None:
    driver = FakeDriver(uuid=OTHER_UUID if failing == "another GPU" else UUID)
    driver.fail.add(failing)
    allocation = driver.allocate(torch.zeros(64, dtype=torch.uint8))
    exporter = IpcExporter(UUID.hex(), driver)
    assert exporter.export(fake_cuda_tensor(driver, allocation, 0)) is None
    assert exporter.held == []


# ---------------------------------------------------------------------------------------------------------------
# negotiation and fallback


def test_ipc_is_offered_only_for_a_cuda_device_with_a_driver(monkeypatch: pytest.MonkeyPatch) -> None:
    driver = FakeDriver()
    monkeypatch.setattr(wire, "ipc_driver", lambda: driver)
    monkeypatch.delenv(IPC_ENV, raising=False)
    offered = IpcReceiver.create("cuda:0")
    assert offered is not None and offered.identity == UUID.hex() and offered.device == torch.device("cuda", 0)
    assert IpcReceiver.create(None) is None and IpcReceiver.create("cpu") is None
    monkeypatch.setenv(IPC_ENV, "0")
    assert IpcReceiver.create("cuda:0") is None
    monkeypatch.delenv(IPC_ENV)
    driver.fail.add("cuDeviceGetUuid")
    assert IpcReceiver.create("cuda:0") is None
    monkeypatch.setattr(wire, "ipc_driver", lambda: None)  # no cuda.bindings, no driver or no GPU here
    assert IpcReceiver.create("cuda:0") is None


def test_the_runner_takes_the_offer_only_with_a_driver(monkeypatch: pytest.MonkeyPatch) -> None:
    state = sandbox_runner._State()
    monkeypatch.setattr(sandbox_runner, "ipc_driver", lambda: FakeDriver())
    assert sandbox_runner._op_wire(state, {"op": "wire", "ipc_device": UUID.hex()}) == {"ipc": True}
    assert isinstance(state.ipc, IpcExporter) and state.ipc.accepts == UUID.hex()
    assert sandbox_runner._op_wire(state, {"op": "wire", "ipc_device": 7}) == {"ipc": False} and state.ipc is None
    monkeypatch.setattr(sandbox_runner, "ipc_driver", lambda: None)
    assert sandbox_runner._op_wire(state, {"op": "wire", "ipc_device": UUID.hex()}) == {"ipc": False}
    assert state.ipc is None


def test_a_cpu_sandbox_is_not_offered_ipc() -> None:
    with Sandbox() as sandbox:
        assert sandbox.ipc is None and sandbox.ipc_status == "not offered"
        assert sandbox.call("hello", timeout_s=30)["pid"]


def test_a_sandbox_without_a_cuda_driver_declines_the_offer(monkeypatch: pytest.MonkeyPatch) -> None:
    # the judge offers (as on a GPU); the runner, on this machine without a CUDA driver, declines
    offer = receiver(FakeDriver())
    monkeypatch.setattr(IpcReceiver, "create", staticmethod(lambda device: offer))
    with Sandbox(gpu=True, device="cuda:0") as sandbox:
        assert sandbox.ipc is None and sandbox.ipc_status.startswith("declined")
        assert sandbox.call("hello", timeout_s=30)["pid"]


def test_the_runner_resends_its_last_reply(pair: tuple[socket.socket, socket.socket]) -> None:
    thread = in_thread(sandbox_runner.runner_main, pair[0])
    hello = recv_frame(pair[1], 30)
    send_frame(pair[1], {"op": "resend"})
    assert recv_frame(pair[1], 30) == hello
    send_frame(pair[1], {"op": "hello"})
    answer = recv_frame(pair[1], 30)
    send_frame(pair[1], {"op": "resend"})
    assert recv_frame(pair[1], 30) == answer == {"pid": os.getpid()}
    send_frame(pair[1], {"op": "exit"})
    thread.join(10)
    assert not thread.is_alive()


@pytest.mark.usefixtures("host_as_device")
def test_a_reply_that_cannot_be_mapped_comes_again_in_memory_files(pair: tuple[socket.socket, socket.socket]) -> None:
    driver = FakeDriver()
    output = torch.randn(SHARED_MEMORY_BYTES // 4 + 5)
    allocation = driver.allocate(output)
    driver.fail.add("cuIpcOpenMemHandle")  # CUDA, the container or the users rule IPC out between the two
    requests: list[str] = []

    def runner() -> None:
        requests.append(recv_frame(pair[0], 10)["op"])
        send_outputs(pair[0], [output], {0: descriptor(driver, allocation)})
        requests.append(recv_frame(pair[0], 10)["op"])
        send_frame(pair[0], {"outputs": [output]})
        requests.append(recv_frame(pair[0], 10)["op"])  # a runner that shares again, after IPC went off
        send_outputs(pair[0], [output], {0: descriptor(driver, allocation)})

    sandbox = Sandbox(device="cpu")
    sandbox.sock, sandbox.ipc, sandbox.ipc_status = pair[1], receiver(driver), "on"
    thread = in_thread(runner)
    got = sandbox.call("last_outputs", timeout_s=10)["outputs"]
    assert torch.equal(got[0], output)
    assert requests == ["last_outputs", "resend"]
    assert sandbox.ipc is None and sandbox.ipc_status.startswith("off after a failure (cuIpcOpenMemHandle")
    with pytest.raises(SandboxError, match="did not offer") as refused:
        sandbox.call("last_outputs", timeout_s=10)
    thread.join()
    assert refused.value.code == "SANDBOX_PROTOCOL" and requests[-1] == "last_outputs"
    assert driver.opened == []


# ---------------------------------------------------------------------------------------------------------------
# GPU: a real sandbox and this judge on one GPU

CANDIDATE = """
import torch
from torch import nn
{tamper}

class ModelNew(nn.Module):
    def forward(self, x):
        return torch.arange({numel}, device=x.device, dtype=torch.float32) * x
"""

#: A candidate that moves every offset it shares past the end of the allocation.
TAMPER = """
import argus.eval.sandbox as wire

_export = wire.IpcExporter.export


def export(self, t):
    entry = _export(self, t)
    if entry is not None:
        entry["offset"] += 1 << 40
    return entry


wire.IpcExporter.export = export
"""

NUMEL = 75 * 2**20  # 300 MiB of float32


def run_candidate(tmp_path: Path, tamper: str = "") -> tuple[Sandbox, Any]:
    """(the sandbox, its reply to one ``run``) for the candidate above, on this process's GPU."""
    path = tmp_path / "candidate.py"
    path.write_text(CANDIDATE.format(tamper=tamper, numel=NUMEL))
    sandbox = Sandbox(gpu=True, device="cuda")
    sandbox.start()
    try:
        sandbox.call("load_module", timeout_s=300, path=sandbox.share_file(path), attr="ModelNew", device="cuda")
        x = torch.tensor([0.5], device="cuda")
        return sandbox, sandbox.call("run", timeout_s=300, inputs=[x])
    except BaseException:
        sandbox.close()
        raise


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU visible to torch")
def test_gpu_a_large_output_comes_back_by_ipc_exactly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copied: list[int] = []
    tensor = IpcReceiver.tensor

    def counted(self: IpcReceiver, entry: dict[str, Any], size: int, dtype: str, shape: list[int]) -> Any:
        copied.append(size)
        return tensor(self, entry, size, dtype, shape)

    monkeypatch.setattr(IpcReceiver, "tensor", counted)
    monkeypatch.delenv(IPC_ENV, raising=False)
    sandbox, reply = run_candidate(tmp_path)
    with contextlib.closing(sandbox):
        assert sandbox.ipc_status == "on", sandbox.ipc_status
        (out,) = reply["outputs"]
        assert type(out) is torch.Tensor and out.is_cuda and out.is_contiguous()
        assert torch.equal(out, torch.arange(NUMEL, device="cuda", dtype=torch.float32) * 0.5)
        assert copied == [NUMEL * 4]
        assert sandbox.call("hello", timeout_s=30)["pid"]  # the next request frees what the reply shared


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU visible to torch")
def test_gpu_an_offset_past_the_allocation_is_a_protocol_violation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(IPC_ENV, raising=False)
    with pytest.raises(SandboxError) as refused:
        run_candidate(tmp_path, TAMPER)  # closes the sandbox as it raises
    assert refused.value.code == "SANDBOX_PROTOCOL" and "shared allocation" in refused.value.message


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU visible to torch")
def test_gpu_with_ipc_switched_off_outputs_come_in_memory_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(IPC_ENV, "0")
    sandbox, reply = run_candidate(tmp_path)
    with contextlib.closing(sandbox):
        assert sandbox.ipc is None and sandbox.ipc_status == "not offered"
        assert torch.equal(reply["outputs"][0], torch.arange(NUMEL, device="cuda", dtype=torch.float32) * 0.5)
