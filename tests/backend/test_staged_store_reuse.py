"""The staged TMA store's reuse of its two chunk buffers (`argus.backend.cuda.codegen.epilogue`): before a warpgroup
writes a chunk buffer, its TMA store that last read that buffer must have read it. A thread's bulk groups complete in
order, so ``wait_group.read 1`` is enough only where its last store read the *other* buffer: chunk c >= 1 of a
tile (its last store is chunk c - 1). Chunk 0's last store is the previous tile's last chunk, which read buffer 0
too where a tile has an odd count of chunks (a 64-column tile has one): it waits for every store (``read 0``).

Session 52 found this on an H200: 64x64 tiles with the TMA-store epilogue computed wrong products (relative error
0.7-1.4 at 672x3104x232, 4096x4096x232; `benchmarks/results/2026-12-04-gemm-cluster-small/`, calls 6-7) while the
interpreter and the verifier, which take the staged store as one store, saw nothing: the wait was the code
generator's alone. The test reads the generated source, as the hardware will run it: its waits and buffers are
`argus.atoms.tma`'s protocol, the one the verifier proves (`tests/verify/test_staged_store.py`)."""

import re

import pytest

from argus.atoms.tma import staged_store_buffer, staged_store_wait
from argus.backend.cuda.codegen import generate
from argus.kernels import matmul as mm

_CHUNK = re.compile(r"// chunk (\d+): tile columns \[\d+, \d+\), staging buffer (\d)\n\s*(.*)")


@pytest.mark.parametrize("bn", [64, 128, 192, 256])
def test_each_chunk_waits_until_its_buffer_was_read(bn: int) -> None:
    problem = mm.GemmProblem(1024, 1024, 1024)
    plan = mm.plan(problem, mm.GemmConfig(128 if bn > 64 else 64, bn, 2 if bn > 64 else 1, 4, 1, "tma"))
    source = generate(plan.main_kernel()).source
    chunks = _CHUNK.findall(source)
    assert len(chunks) == bn // 64, source  # one 128-byte chunk of columns each
    for index, buffer, wait in chunks:
        assert int(buffer) == int(index) % 2 == staged_store_buffer(int(index))
        want = "read<0>" if index == "0" else "read<1>"
        assert f"tma_store_wait_{want}" in wait, (index, wait)
        assert f"tma_store_wait_read<{staged_store_wait(int(index))}>" in wait, (index, wait)
