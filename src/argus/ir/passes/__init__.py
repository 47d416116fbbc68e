"""The pass pipeline: what the traced IR goes through before anything reads it.

`run_passes` is the one linear list of passes, top to bottom. The tracer (`argus.lang.decorator`) runs it once on
every kernel it traces, and the verifier, the interpreter and the code generator all read its output: so the program
the verifier proves is the program that is emitted, not the loop as written before a lowering rewrote it.

Each pass is a function ``Kernel -> Kernel`` that returns a new kernel (IR nodes are frozen; statements a pass does
not touch stay the same objects) and is idempotent (running the pipeline on its own output changes nothing, so a
kernel decoded from data after a trace elsewhere may go through it again).

This package sits one layer above `argus.ir` and `argus.atoms` (`docs/architecture.md`): a pass reads hardware facts
of the atoms (is this MMA a ``wgmma``?) that the IR records only by name.
"""

from __future__ import annotations

from argus.ir.nodes import Kernel
from argus.ir.passes.deferred_release import DEFERRED_RELEASE, DEFERRED_RELEASE_MIN_STAGES, defer_releases

__all__ = ["DEFERRED_RELEASE", "DEFERRED_RELEASE_MIN_STAGES", "PASSES", "defer_releases", "run_passes"]


def run_passes(kernel: Kernel) -> Kernel:
    """The kernel after every pass, in order."""
    # Pipelining (prologue, steady state, stage rotation) is expressed by the DSL itself today: `T.pipeline` traces
    # the rotated loop, and barrier insertion is the kernel author's (`T.mbarrier_*`); no pass runs for them yet.
    # Deferred release: a consumer loop that waits, issues its wgmma from shared memory and releases the stage keeps
    # one wgmma group in flight and releases stage k-1 instead. It runs last because it lowers the loop as the
    # hardware will run it (asynchronous MMAs, per-warpgroup arrivals): nothing after it may reorder the loop.
    kernel = defer_releases(kernel)
    return kernel


#: The passes `run_passes` runs, in order, by name (for the documentation and the tests).
PASSES: tuple[str, ...] = (DEFERRED_RELEASE,)
