"""Kernels with group barriers (`T.group_barrier`) for `test_group_barrier.py`: blocks that exchange rows through
global memory in one launch, and the protocol mistakes the interpreter reports."""

from __future__ import annotations

import argus
from argus import lang as T


@argus.kernel
def ring(
    X: T.Tensor[("N", 128), T.f32],
    F: T.Tensor[("NF",), T.i32],
    Y: T.Tensor[("N", 128), T.f32],
    G: int = 4,
    MISTAKE: str = "",
):
    """Groups of G consecutive blocks: each block stores 2 x its row of X into Y, meets its group at counter F[b // G],
    then reads the next block's row of Y (in a ring within the group) and stores X[b] + 2 X[next] into X."""
    T.assume(f"NF >= (N + {G - 1}) // {G}")
    with T.grid(N, threads=32) as (b,):
        x = T.alloc_fragment((1, 128), T.f32)
        T.copy(X.tile((b, 0), (1, 128)), x)
        T.copy(x * 2.0, Y.tile((b, 0), (1, 128)))
        if MISTAKE == "":
            T.group_barrier(F, b // G, b % G, G)
        elif MISTAKE == "count":  # one block more than the group has: nobody is ever released
            T.group_barrier(F, b // G, b % G, G + 1)
        elif MISTAKE == "rank":  # every block of a group arrives as rank 0
            T.group_barrier(F, b // G, 0, G)
        elif MISTAKE == "range":
            T.group_barrier(F, b // G, b % G + 1, G)
        y = T.alloc_fragment((1, 128), T.f32)
        T.copy(Y.tile((b // G * G + (b + 1) % G, 0), (1, 128)), y)
        T.copy(y + x, X.tile((b, 0), (1, 128)))


@argus.kernel
def roles_exchange(
    X: T.Tensor[("N", 512), T.f32], F: T.Tensor[("NF",), T.i32], Y: T.Tensor[("N", 512), T.f32], G: int = 2
):
    """The barrier inside a warp role (its scope: the role's threads): each block's second warpgroup stores its row,
    meets the group, and reads its partner's."""
    with T.grid(N, threads=256) as (b,):
        with T.role("idle", warpgroups=(0,)):
            pass
        with T.role("worker", warpgroups=(1,)):
            x = T.alloc_fragment((1, 512), T.f32)
            T.copy(X.tile((b, 0), (1, 512)), x)
            T.copy(x + 1.0, Y.tile((b, 0), (1, 512)))
            T.group_barrier(F, b // G, b % G, G)
            y = T.alloc_fragment((1, 512), T.f32)
            T.copy(Y.tile((b // G * G + (b + 1) % G, 0), (1, 512)), y)
            T.copy(y, X.tile((b, 0), (1, 512)))


@argus.kernel
def barrier_misuse(X: T.Tensor[("N", 128), T.f32], F: T.Tensor[("NF",), T.i32], H: T.Tensor[("NF", 2), T.i32],
                   FF: T.Tensor[("NF",), T.f32], MISTAKE: str = ""):  # fmt: skip
    with T.grid(N, threads=32) as (b,):
        if MISTAKE == "float counters":
            T.group_barrier(FF, b, 0, 1)
        if MISTAKE == "2-d counters":
            T.group_barrier(H, b, 0, 1)
        if MISTAKE == "count":
            T.group_barrier(F, b, 0, 2.5)
        if MISTAKE == "thread rank":
            T.group_barrier(F, b, T.thread_id() % 2, 2)
        if MISTAKE == "rank past count":
            T.group_barrier(F, b, 3, 2)
        if MISTAKE == "counters read":
            with T.if_(F[b] > 0):
                T.group_barrier(F, b, 0, 1)


@argus.kernel
def ring_variants(
    X: T.Tensor[("N", 128), T.f32],
    F: T.Tensor[("NF",), T.i32],
    Y: T.Tensor[("N", 128), T.f32],
    G: int = 4,
    MISTAKE: str = "",
):
    """`ring` with the protocol mistakes the verifier catches (the interpreter catches some of them too, at the sizes
    it runs): no barrier at all, a barrier whose counters split the group, ranks that repeat, a counter past the
    tensor."""
    T.assume(f"N % {G} == 0")
    T.assume(f"NF >= N // {G}")
    with T.grid(N, threads=32) as (b,):
        x = T.alloc_fragment((1, 128), T.f32)
        T.copy(X.tile((b, 0), (1, 128)), x)
        T.copy(x * 2.0, Y.tile((b, 0), (1, 128)))
        if MISTAKE == "":
            T.group_barrier(F, b // G, b % G, G)
        elif MISTAKE == "split counters":  # the group's blocks 0, 1 at one counter, 2, 3 at another
            T.group_barrier(F, b // 2, b % 2, 2)
        elif MISTAKE == "rank twice":
            T.group_barrier(F, b // G, b % 2, G)
        elif MISTAKE == "counter past the end":
            T.group_barrier(F, b // G + 1, b % G, G)
        elif MISTAKE == "barrier before the store":
            pass
        y = T.alloc_fragment((1, 128), T.f32)
        T.copy(Y.tile((b // G * G + (b + 1) % G, 0), (1, 128)), y)
        T.copy(y + x, X.tile((b, 0), (1, 128)))
