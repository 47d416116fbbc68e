"""``T.wgmma_wait(P, after=fragment)``: the wait kept behind a fragment's computation in the emitted code.

A ``wgmma.wait_group`` names no register, and ptxas schedules it as early as the previous wait allows: in the
attention kernel's overlapped loop it put the wait for O += P V right after the first row maximum, and the softmax
meant to run while the MMA does ran after it (SASS of 2026-12-02). `after=` emits the wait behind a warp-uniform
vote over the fragment's last value; the interpreter and the verifier see the same wait."""

import re
from dataclasses import replace

import pytest

import argus.lang as T
from argus.backend.cuda.codegen import compile_kernel, generate
from argus.ir.nodes import WgmmaWait, walk
from argus.ir.printer import format_kernel
from argus.kernels import sdpa as S
from argus.lang import DSLError


def _overlapped(d: int = 128, causal: bool = False):  # noqa: ANN202
    problem = S.AttentionProblem(4, 16, 16, 4096, 4096, d, d, causal)
    return S.plan(problem, replace(S.choose(problem), OVERLAP=True, CONSUMERS=2, BM=128)).kernel()


def test_the_wait_is_emitted_behind_the_fragment_and_printed() -> None:
    kernel = _overlapped()
    waits = [s for s in walk(kernel.body) if isinstance(s, WgmmaWait) and s.after is not None]
    assert len(waits) == 1 and waits[0].after.buffer.name == "l"
    source = generate(kernel).source
    assert re.search(r"argus::wgmma_wait_after<0>\(l\[1\]\);", source)
    assert "__all_sync" in source  # the prelude's helper: a vote over the value, then the wait both ways
    assert "wgmma.wait_group 0 after l" in format_kernel(kernel)


@pytest.mark.parametrize("d, causal", [(64, False), (128, False), (128, True), (256, False)])
def test_the_softmax_runs_between_the_p_v_issue_and_its_wait(d: int, causal: bool) -> None:
    kernel = _overlapped(d, causal)
    compiled = compile_kernel(kernel)
    scores = dict(kernel.params)["BN"] // 2  # a thread's scores of a 64-row warpgroup tile: one exponential each
    assert not compiled.module.warnings  # no serialized wgmma
    lines = compiled.module.sass.splitlines()
    # the loop's P V: its last HGMMA with a register A operand (B transposed from shared memory) that closes a group
    pv = [
        i for i, line in enumerate(lines) if re.search(r"HGMMA\.\S+ R\d+, R\d+, gdesc\[\w+\]\.tnspB, R\d+, gsb0", line)
    ]
    assert pv, "no register-A HGMMA group"
    loop_pv = pv[0] if len(pv) == 1 else pv[-2]  # the last group is the epilogue's, waited for at once
    wait = next(i for i in range(loop_pv + 1, len(lines)) if "WARPGROUP.DEPBAR.LE gsb0, 0x0" in lines[i])
    between = sum("MUFU.EX2" in line for line in lines[loop_pv:wait])
    # every exponential of the tile's softmax is issued while the MMA runs; behind a bare wait ptxas placed 0 of
    # 66 there (the loop with the rescale after the wait), 14-27 (the loop as it is now)
    assert between >= scores, f"{between} MUFU.EX2 of {scores} between the P V issue and its wait"


def test_after_takes_an_f32_fragment() -> None:
    import argus

    @argus.kernel
    def bad(X: T.Tensor[("N",), T.f32]):
        with T.grid(1, threads=128):
            T.wgmma_wait(0, after=X.tile((0,), (8,)))

    with pytest.raises(DSLError, match="f32 register fragment"):
        bad.trace()
