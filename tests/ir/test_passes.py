"""The pass pipeline (`argus.ir.passes`): structural before/after comparisons of the deferred-release pass, the
printed IR it produces, and that what it produces is what the verifier proves and the interpreter runs."""

from __future__ import annotations

import numpy as np
import pytest

from argus.ir.expr import BinaryOp, BinOp
from argus.ir.nodes import For, Gemm, If, Let, LoopKind, MbarrierArrive, MbarrierInit, MbarrierWait, Role, WgmmaWait
from argus.ir.passes import DEFERRED_RELEASE, PASSES, run_passes
from argus.ir.printer import format_stmts
from argus.ir.rewrite import inline_lets
from argus.ir.tags import AssertTag, AssertTagEq, Tag
from argus.kernels.attention import flash_attention_fwd
from argus.kernels.gemm import gemm_warp_specialized, gemm_warp_specialized_persistent

_ANNOTATIONS = (Tag, AssertTag, AssertTagEq)


def _consumer(kernel) -> Role:
    return next(s for s in kernel.body if isinstance(s, Role) and s.name == "consumer")


def _pipelined(stmts) -> tuple[int, For]:
    return next((i, s) for i, s in enumerate(stmts) if isinstance(s, For) and s.kind == LoopKind.PIPELINED)


def _init(kernel, name: str) -> MbarrierInit:
    return next(s for s in kernel.body if isinstance(s, MbarrierInit) and s.barriers.buffer.name == name)


def test_the_pipeline_is_one_list_and_the_tracer_runs_it() -> None:
    assert PASSES == (DEFERRED_RELEASE,)
    written = gemm_warp_specialized.trace_as_written(STAGES=4)
    passed = gemm_warp_specialized.trace(STAGES=4)
    assert passed is not written and passed is gemm_warp_specialized.trace(STAGES=4)  # once per trace
    assert run_passes(passed) is passed  # idempotent: the rewritten loop no longer matches


def test_deferred_release_before_and_after() -> None:
    written = gemm_warp_specialized.trace_as_written(STAGES=4)
    passed = gemm_warp_specialized.trace(STAGES=4)
    # before: the loop as written, wait / gemm / arrive on the current stage
    pos, loop = _pipelined(_consumer(written).body)
    wait, gemm, arrive = [s for s in loop.body if not isinstance(s, _ANNOTATIONS)]
    assert isinstance(wait, MbarrierWait) and isinstance(gemm, Gemm) and isinstance(arrive, MbarrierArrive)
    assert gemm.pending == 0 and not arrive.per_warpgroup
    assert _init(written, "empty").arrive_count == 1 and _init(written, "empty").warpgroups == 1
    # after: the same loop object's statements, the gemm asynchronous, the release one iteration behind
    body = _consumer(passed).body
    new_pos, new_loop = _pipelined(body)
    assert new_pos == pos and new_loop.var is loop.var and new_loop.extent is loop.extent
    wait2, gemm2, behind = [s for s in new_loop.body if not isinstance(s, _ANNOTATIONS)]
    assert wait2 is wait  # untouched statements are the same objects
    assert gemm2.pending == 1 and gemm2.a is gemm.a and gemm2.loc == gemm.loc and gemm2.made_by is None
    assert isinstance(behind, If) and behind.made_by == DEFERRED_RELEASE and behind.loc == arrive.loc
    assert isinstance(behind.cond, BinOp) and behind.cond.op == BinaryOp.LT and behind.cond.rhs is loop.var
    (let,) = behind.then
    assert isinstance(let, Let) and let.var is loop.var and str(let.value) == f"({loop.var} - 1)"
    (release,) = let.body
    assert release.barrier is arrive.barrier and release.per_warpgroup and release.loc == arrive.loc
    # after the loop: wait for the last MMAs, then release the last stage
    drain, last = body[new_pos + 1], body[new_pos + 2]
    assert isinstance(drain, WgmmaWait) and drain.pending == 0
    assert isinstance(last, If) and isinstance(last.then[0], Let) and last.then[0].value is not None
    assert last.then[0].body[0].barrier is arrive.barrier and last.then[0].body[0].per_warpgroup
    assert len(body) == len(_consumer(written).body) + 2
    # the count of the released barrier: one arrival per consumer warpgroup
    assert _init(passed, "empty").arrive_count == 2 and _init(passed, "empty").warpgroups == 2
    assert _init(passed, "full") is _init(written, "full")


GOLDEN_CONSUMER_LOOP = """\
for k_1 in range(((K + 63) // 64)) [pipelined, stages=4]:
  mbarrier.wait full[(k_1 % 4)] phase=((k_1 // 4) % 2)
  gemm acc += sA[(k_1 % 4), :128, :64] @ sB[(k_1 % 4), :128, :64].T atom=wgmma.m64n128k16.f32.bf16.bf16.ss wait_group=1
  if (0 < k_1):  # [deferred release]
    let k_1 = (k_1 - 1):  # [deferred release]
      mbarrier.arrive empty[(k_1 % 4)] per_warpgroup  # [deferred release]
wgmma.wait_group 0  # [deferred release]
if (0 < ((K + 63) // 64)):  # [deferred release]
  let k_1 = (((K + 63) // 64) - 1):  # [deferred release]
    mbarrier.arrive empty[(k_1 % 4)] per_warpgroup  # [deferred release]"""


def test_the_printed_ir_of_the_lowered_loop() -> None:
    body = _consumer(gemm_warp_specialized.trace(STAGES=4)).body
    pos, _ = _pipelined(body)
    lines = format_stmts(body[pos : pos + 3], indent=0)
    text = "\n".join(
        line.split("  # ")[0] + (f"  # [{DEFERRED_RELEASE}]" if DEFERRED_RELEASE in line else "")
        for line in lines
        if not line.strip().startswith("assert_tag")
    )
    assert text == GOLDEN_CONSUMER_LOOP


@pytest.mark.parametrize(
    "trace",
    [
        lambda: gemm_warp_specialized.trace(STAGES=3),  # 3 stages: a late release starves the producer (measured)
        lambda: flash_attention_fwd.trace(),  # the loop does more than wait / gemm / arrive
    ],
    ids=["three_stages", "flash_attention"],
)
def test_loops_the_pass_leaves_as_written(trace) -> None:
    kernel = trace()
    assert run_passes(kernel) is kernel
    assert not any(getattr(s, "made_by", None) for s in _walk(kernel.body))


def _walk(stmts):
    from argus.ir.nodes import walk

    return walk(stmts)


def test_a_persistent_kernel_releases_the_global_stage() -> None:
    passed = gemm_warp_specialized_persistent.trace(BN=256, STAGES=4, OUT="bf16")
    flat = inline_lets(passed)
    text = "\n".join(format_stmts(_consumer(flat).body))
    # the release of iteration k - 1 and of the tile's last iteration, in the pipeline's global numbering
    assert "mbarrier.arrive empty[(((k_1 - 1) + (it_1 * ((K + 63) // 64))) % 4)] per_warpgroup" in text
    assert "mbarrier.arrive empty[(((((K + 63) // 64) - 1) + (it_1 * ((K + 63) // 64))) % 4)] per_warpgroup" in text
    assert not any(isinstance(s, Let) for s in _walk(flat.body))


def test_inline_lets_keeps_untouched_statements() -> None:
    passed = gemm_warp_specialized.trace(STAGES=4)
    flat = inline_lets(passed)
    assert inline_lets(gemm_warp_specialized.trace_as_written(STAGES=4)) is gemm_warp_specialized.trace_as_written(
        STAGES=4
    )
    producer = next(s for s in passed.body if isinstance(s, Role) and s.name == "producer")
    assert producer in flat.body  # no Let inside: the same object


def test_the_verifier_proves_the_lowered_library_gemm() -> None:
    from argus.kernels.registry import all_kernels
    from argus.verify import Verdict, verify

    entry = next(e for e in all_kernels() if e.name == "gemm_hopper")
    kernel = entry.kernel.trace(**entry.params)
    assert any(isinstance(s, Gemm) and s.pending == 1 for s in _walk(kernel.body))
    assert any(isinstance(s, WgmmaWait) for s in _walk(kernel.body))
    result = verify(kernel)
    assert result.verdict == Verdict.VERIFIED, [f.message for f in result.findings]
    assert not [f for f in result.findings if f.code.startswith(("PIPELINE", "MBARRIER", "MMA", "UNKNOWN"))]


def test_the_interpreter_runs_the_lowered_loop_with_the_same_results() -> None:
    from argus.interp.machine import run_kernel

    rng = np.random.default_rng(7)
    m, n, k = 70, 130, 320  # 5 K-tiles over 4 stages: the rotation wraps, the last tile is partial in M and N
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((n, k)).astype(np.float32)
    outputs = []
    for kernel in (gemm_warp_specialized.trace_as_written(STAGES=4), gemm_warp_specialized.trace(STAGES=4)):
        c = np.zeros((m, n), dtype=np.float32)
        run_kernel(kernel, {"A": a.copy(), "B": b.copy(), "C": c})
        outputs.append(c)
    assert np.array_equal(outputs[0], outputs[1])
    ref = a.astype(np.float64) @ b.astype(np.float64).T
    assert np.allclose(outputs[1], ref, rtol=2e-2, atol=2e-1)


def test_the_passed_ir_crosses_a_process_boundary_unchanged() -> None:
    from argus.ir.printer import format_kernel
    from argus.ir.serialize import kernel_from_json, kernel_to_json
    from argus.lang.decorator import TracedKernel

    passed = gemm_warp_specialized_persistent.trace(BN=256, STAGES=4, OUT="bf16")
    decoded = kernel_from_json(kernel_to_json(passed))
    assert format_kernel(decoded) == format_kernel(passed)
    again = TracedKernel(decoded).trace()  # the passes run again on decoded IR: nothing left to rewrite
    assert format_kernel(again) == format_kernel(passed)
