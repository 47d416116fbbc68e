"""The Hopper pipeline in the code generator: warp roles with setmaxnreg, mbarriers, TMA loads and wgmma on
shared-memory operands. Both library kernels that use them generate, compile for sm_90a, and their SASS
shows the instructions they were meant to use (UTMALDG, HGMMA, SYNCS, USETMAXREG) with no spills."""

from __future__ import annotations

import dataclasses

import pytest

from argus.atoms.swizzle import hopper_swizzle
from argus.backend.cuda.codegen import CodegenError, compile_kernel, generate
from argus.ir.nodes import Alloc, Copy, Gemm, Role, Space, walk
from argus.kernels.attention import flash_attention_fwd
from argus.kernels.gemm import gemm_warp_specialized
from argus.layout import ComposedLayout, Layout

HOPPER_KERNELS = {"gemm_warp_specialized": gemm_warp_specialized, "flash_attention_fwd": flash_attention_fwd}


@pytest.fixture(scope="module", params=sorted(HOPPER_KERNELS))
def compiled(request):
    return compile_kernel(HOPPER_KERNELS[request.param])


def test_hopper_kernels_use_tma_wgmma_mbarriers_and_setmaxnreg_without_spills(compiled) -> None:
    mix = compiled.instruction_mix()
    for opcode in ("UTMALDG", "HGMMA", "SYNCS", "USETMAXREG"):
        assert mix.get(opcode, 0) > 0, (compiled.entry, opcode, mix)
    r = compiled.resources
    assert r.spill_stores == 0 and r.spill_loads == 0, r
    assert "setmaxnreg' ignored" not in (compiled.module.log or "")


def test_gemm_wgmma_tma_structure() -> None:
    g = generate(gemm_warp_specialized.trace(STAGES=4))
    src = g.source
    assert "__launch_bounds__(384, 1)" in src  # fixes the register count at entry for setmaxnreg
    assert "setmaxnreg.dec.sync.aligned.u32 40;" in src and "setmaxnreg.inc.sync.aligned.u32 232;" in src
    assert "if (tid < 128) {  // role producer" in src and "const int consumer_tid = tid - 128;" in src
    # one TMA box per operand and stage, from one thread, completing on the stage's full barrier
    assert src.count("argus::tma_load_2d(") == 2 and "if (producer_tid == 0) argus::tma_load_2d" in src
    assert [(m.tensor, m.box, m.swizzle) for m in g.tensor_maps] == [("A", (64, 128), 128), ("B", (64, 128), 128)]
    assert "const __grid_constant__ argus::TensorMap tmap_A" in src
    # four k16 steps, both operands K-major (B given as (N, K) through the transposed view), 128-byte swizzle
    assert src.count("argus::wgmma_m64n128k16_f32_bf16_bf16<0, 0>(") == 4
    assert "const unsigned long long a_desc = argus::wgmma_descriptor(a_base, 16, 1024, 1);" in src
    assert "argus::wgmma_m64n128k16_f32_bf16_bf16<0, 0>(acc, a_desc + 6ull, b_desc + 6ull);" in src  # 96 bytes on
    assert "const int warpgroup = consumer_tid / 128;" in src
    # one wgmma group in flight: iteration k waits for k-1's MMAs, then releases stage k-1; the last after the loop
    commit = src.index("argus::wgmma_commit();")
    assert commit < src.index("argus::wgmma_wait<1>();") < src.index("if (k_1 > 0) {")
    assert src.index("const int k_1 = k_1_released;") < src.index("argus::wgmma_wait<0>();  // the last iteration")
    assert "const int k_1 = (K + 63) / 64 - 1;  // the arrival of the last iteration" in src
    # each consumer warpgroup releases for itself: the empty barriers count 1 x 2 arrivals, no bar.sync among them
    assert src.count("if (consumer_tid % 128 == 0) argus::mbarrier_arrive(argus::smem_u32(&empty[k_1 % 4]));") == 2
    assert "argus::mbarrier_init(argus::smem_u32(&empty[i]), 2);" in src
    assert "argus::mbarrier_init(argus::smem_u32(&full[i]), 1);" in src
    assert '"r"(256)' not in src
    assert "if (producer_tid == 0) argus::mbarrier_arrive_expect_tx(argus::smem_u32(&full[k % 4]), 32768);" in src


def test_a_three_stage_pipeline_keeps_the_release_as_written() -> None:
    # with 3 stages a one-iteration-late release would leave the producer one tile of look-ahead (measured slower)
    src = generate(gemm_warp_specialized.trace(STAGES=3)).source
    assert "wgmma_wait<1>" not in src and "argus::wgmma_wait<0>();" in src
    assert '"r"(2), "r"(256)' in src and "if (consumer_tid == 0) argus::mbarrier_arrive(" in src


def test_only_a_wait_gemm_arrive_loop_is_lowered_with_deferred_release() -> None:
    from argus.ir.nodes import Gemm, WgmmaWait, walk

    passed = gemm_warp_specialized.trace(STAGES=4)
    assert [s.pending for s in walk(passed.body) if isinstance(s, Gemm)] == [1]
    # flash attention's consumer loop does more than wait/gemm/arrive (softmax, a second MMA): written order kept
    kernel = flash_attention_fwd.trace()
    assert kernel.body == flash_attention_fwd.trace_as_written().body
    assert not any(isinstance(s, WgmmaWait) or getattr(s, "pending", 0) for s in walk(kernel.body))
    src = generate(kernel).source
    assert "wgmma_wait<1>" not in src and "argus::wgmma_wait<0>();" in src


def test_output_dtype_is_a_trace_parameter() -> None:
    for out, ctype in (("bf16", "__nv_bfloat16"), ("f16", "__half"), ("f32", "float")):
        g = generate(gemm_warp_specialized.trace(OUT=out))
        assert f"{ctype}* __restrict__ C" in g.source, out


def test_flash_attention_reads_v_mn_major_and_fences_the_p_tile() -> None:
    src = generate(flash_attention_fwd.trace()).source
    assert src.count("argus::tma_load_3d(") == 3  # Q once, K and V per stage; the head dimension is squeezed
    assert src.count("<0, 1>(o,") == 4  # O += P V: V is (K, N) with N contiguous: MN-major
    fence = src.index("fence.proxy.async.shared::cta")
    assert src.index("argus::store_shared") < fence < src.index("<0, 1>(o,")


def test_a_tma_destination_that_tma_cannot_write_is_refused() -> None:
    kernel = gemm_warp_specialized.trace()
    s_a = next(s.buffer for s in walk(kernel.body) if isinstance(s, Alloc) and s.buffer.space == Space.SHARED)
    column_major = dataclasses.replace(
        s_a, layout=ComposedLayout(hopper_swizzle(0), 0, Layout((3, 128, 64), (8192, 1, 128)))
    )

    def change(ref):
        return dataclasses.replace(ref, buffer=column_major) if ref.buffer is s_a else ref

    def rebuild(stmts):
        out = []
        for s in stmts:
            if isinstance(s, Alloc) and s.buffer is s_a:
                s = dataclasses.replace(s, buffer=column_major)
            elif isinstance(s, Copy):
                s = dataclasses.replace(s, src=change(s.src), dst=change(s.dst))
            elif isinstance(s, Gemm):
                s = dataclasses.replace(s, a=change(s.a))
            if hasattr(s, "body") and isinstance(s.body, tuple):
                s = dataclasses.replace(s, body=rebuild(s.body))
            out.append(s)
        return tuple(out)

    with pytest.raises(CodegenError, match="TMA copy into") as info:
        generate(dataclasses.replace(kernel, body=rebuild(kernel.body)))
    assert info.value.location.startswith("gemm.py:")


def test_roles_are_consecutive_warpgroups() -> None:
    kernel = gemm_warp_specialized.trace()
    roles = [s for s in walk(kernel.body) if isinstance(s, Role)]
    assert [r.warpgroups for r in roles] == [(0,), (1, 2)]
