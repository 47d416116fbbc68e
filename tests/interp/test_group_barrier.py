"""`T.group_barrier`: blocks that meet at a counter in global memory and then read what the others stored, in one
launch. The interpreter runs every block of such a kernel together, adds to the counter as the generated code does
(so the counter is left at the next generation and a relaunch needs no reset), and reports protocols that break:
a group that never completes (`INTERP_DEADLOCK`), a rank that arrives twice or outside 0 .. count - 1
(`INTERP_GROUP_BARRIER`). The code generator's arrival is an atomic add and an acquire spin (SASS checked); the
DSL refuses counters it cannot use; the verifier proves the protocol (`tests/verify/test_global_reads.py`)."""

from __future__ import annotations

import numpy as np
import pytest

from argus.backend.cuda.codegen import compile_kernel
from argus.interp.machine import InterpError
from argus.lang.errors import DSLError
from argus.verify import Verdict, verify
from tests.interp import kernels_group_barrier as K


def _ring(n: int, g: int, mistake: str = "", counters: np.ndarray | None = None):
    x = np.arange(n * 128, dtype=np.float32).reshape(n, 128) % 97
    f = np.zeros(n // g + 1, np.int32) if counters is None else counters
    out = x.copy()
    K.ring(out, f, np.zeros_like(x), G=g, MISTAKE=mistake, device="cpu")
    return x, out, f


@pytest.mark.parametrize(("n", "g"), [(8, 4), (6, 3), (5, 1)])
def test_each_block_reads_what_its_neighbour_stored_before_the_barrier(n: int, g: int) -> None:
    x, out, f = _ring(n, g)
    neighbour = [b // g * g + (b + 1) % g for b in range(n)]
    np.testing.assert_array_equal(out, x + 2 * x[neighbour])
    # every group's counter flipped its top bit once: left at the next generation, no reset needed
    assert (f[: n // g] == np.int32(-(2**31))).all() and (f[n // g :] == 0).all()


def test_a_relaunch_on_the_same_counters_waits_again() -> None:
    _, _, f = _ring(8, 4)
    x, out, f = _ring(8, 4, counters=f)
    neighbour = [b // 4 * 4 + (b + 1) % 4 for b in range(8)]
    np.testing.assert_array_equal(out, x + 2 * x[neighbour])
    assert (f[:2] == 0).all()  # the second generation flipped the bit back


def test_a_barrier_inside_a_warp_role() -> None:
    x = np.arange(4 * 512, dtype=np.float32).reshape(4, 512)
    out = x.copy()
    K.roles_exchange(out, np.zeros(2, np.int32), np.zeros_like(x), device="cpu")
    np.testing.assert_array_equal(out, x[[1, 0, 3, 2]] + 1)


@pytest.mark.parametrize(
    ("mistake", "code"),
    [("count", "INTERP_DEADLOCK"), ("rank", "INTERP_GROUP_BARRIER"), ("range", "INTERP_GROUP_BARRIER")],
)
def test_broken_protocols_are_reported(mistake: str, code: str) -> None:
    with pytest.raises(InterpError) as err:
        _ring(8, 4, mistake)
    assert err.value.code == code, err.value


@pytest.mark.parametrize(
    ("mistake", "code"),
    [
        ("float counters", "DSL_GROUP_BARRIER"),
        ("2-d counters", "DSL_GROUP_BARRIER"),
        ("count", "DSL_GROUP_BARRIER"),
        ("thread rank", "DSL_GROUP_BARRIER"),
        ("rank past count", "DSL_GROUP_BARRIER"),
        ("counters read", "DSL_ELEMENT"),
    ],
)
def test_the_dsl_refuses_counters_it_cannot_use(mistake: str, code: str) -> None:
    with pytest.raises(DSLError) as err:
        K.barrier_misuse.trace(MISTAKE=mistake)
    assert err.value.code == code, err.value


def test_the_arrival_is_an_atomic_add_and_an_acquire_spin() -> None:
    compiled = compile_kernel(K.ring.trace())
    mix = compiled.instruction_mix(modifiers=True)
    assert mix["ATOMG.E.ADD.STRONG.GPU"] == 1, mix
    assert mix["LDG.E.STRONG.GPU"] == 1, mix  # ld.acquire.gpu
    assert mix["MEMBAR.SC.GPU"] == 1, mix  # the fence before the arrival
    assert compiled.generated.cooperative  # launched cooperatively: all blocks resident at once, or refused
    assert not compile_kernel(K.barrier_misuse.trace()).generated.cooperative
    source = compiled.generated.source
    assert "if (tid == 0) argus::group_barrier(F + (b / 4), (b % 4) == 0, 4u);" in source, source


def test_the_verifier_proves_the_protocol() -> None:
    # the protocol's proofs and mistakes: tests/verify/test_global_reads.py
    result = verify(K.ring.trace())
    assert result.verdict == Verdict.VERIFIED, result.render_text()


def test_inside_a_role_the_barrier_synchronizes_the_role_s_threads() -> None:
    source = compile_kernel(K.roles_exchange.trace()).generated.source
    arrive = "if (worker_tid == 0) argus::group_barrier(F + (b / 2), (b % 2) == 0, 2u);"
    assert arrive in source, source
    before, after = source.split(arrive)
    assert before.rstrip().endswith("(every thread's stores are issued before the arrival)")
    assert "bar.sync" in after.splitlines()[1] and "no thread reads before the group has arrived" in after
