# ruff: noqa: F821  (the DSL binds shape symbols named in annotations)
"""Turns among the warpgroups of a role (`T.turn_wait` / `T.turn_pass`, FlashAttention-3's ping-pong): the tracer
refuses every protocol that could deadlock; the code generator gives the role one named barrier per warpgroup, the
first turn to warpgroup 0 and collects the last pass; the interpreter and the verifier see no effect."""

import re
from dataclasses import replace

import pytest

import argus
import argus.lang as T
from argus.backend.cuda.codegen import generate
from argus.kernels import sdpa as S
from argus.lang import DSLError


def _kernel(body):  # noqa: ANN001, ANN202
    """A two-consumer kernel whose consumer role runs `body(n)` (n: a loop extent)."""

    @argus.kernel
    def turns(X: T.Tensor[("N",), T.f32], CONSUMERS: int = 2):
        with T.grid(1, threads=128 * (1 + CONSUMERS)):
            with T.role("producer", warpgroups=(0,)):
                pass
            with T.role("consumer", warpgroups=tuple(range(1, 1 + CONSUMERS))):
                body(N)

    return turns


def _balanced(n) -> None:  # noqa: ANN001
    T.turn_wait()
    for _ in T.serial(n):
        T.turn_pass()
        T.turn_wait()
    T.turn_pass()


def test_a_balanced_ring_traces() -> None:
    kernel = _kernel(_balanced).trace()
    src = generate(kernel).source
    # waits: before and in the loop, and the drain; passes: the start, in the loop and after it
    assert src.count("bar.sync") == 3 and src.count("bar.arrive") == 3


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (lambda n: T.turn_pass(), "does not hold"),
        (lambda n: T.turn_wait(), "ends holding the turn"),
        (lambda n: (T.turn_wait(), T.turn_wait()), "while the warpgroup holds the turn"),
        (lambda n: [T.turn_wait() for _ in T.serial(n)], "does not leave the turn as it found it"),
        (lambda n: [(T.turn_wait(), T.turn_pass()) for _ in T.serial(T.thread_id() % 3 + n)], "depends on the thread"),
    ],
    ids=["pass-first", "ends-holding", "wait-twice", "loop-unbalanced", "thread-trip-count"],
)
def test_a_protocol_that_could_deadlock_is_refused(body, why: str) -> None:  # noqa: ANN001
    with pytest.raises(DSLError, match=why) as info:
        _kernel(body).trace()
    assert info.value.code == "DSL_TURN"


def test_turns_need_two_warpgroups_in_one_role() -> None:
    with pytest.raises(DSLError, match="among the warpgroups of one warp role") as info:
        _kernel(_balanced).trace(CONSUMERS=1)
    assert info.value.code == "DSL_TURN"


def test_the_attention_kernel_takes_turns_on_barriers_of_its_own() -> None:
    problem = S.AttentionProblem(4, 16, 16, 4096, 4096, 128, 128, causal=True)
    the_plan = S.plan(problem, replace(S.choose(problem), PINGPONG=True))
    src = generate(the_plan.kernel()).source
    role_ids = {int(x) for x in re.findall(r'bar\.sync %0, %1;\\n" :: "r"\((\d+)\), "r"\(', src)}
    turn_first = {int(x) for x in re.findall(r'"r"\((\d+) \+ consumer_tid / 128\)', src)}
    assert len(turn_first) == 1 and not role_ids & {next(iter(turn_first)), next(iter(turn_first)) + 1}
    # one turn to warpgroup 0 before the loop; in the loop a pass after S = Q K^T, a wait before O += P V
    start, drain = src.index("the first turn goes to warpgroup 0"), src.index("the ring's last pass")
    loop = src.index("for (int j_1")
    assert start < loop < src.index("pass the turn on") < src.index("rs<1>(o") < drain
    with pytest.raises(S.AttentionError, match="keeps P in registers"):  # (ping-pong over it is allowed)
        S.plan(problem, S.AttentionConfig(128, 128, 2, 2, P_REGISTERS=False, PINGPONG=True, OVERLAP=True))
    with pytest.raises(S.AttentionError, match="two consumer warpgroups"):
        S.plan(S.AttentionProblem(1, 1, 1, 64, 64, 64, 64), S.AttentionConfig(64, 128, 2, 1, PINGPONG=True))
