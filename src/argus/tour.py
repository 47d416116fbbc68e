"""The short tour that the README's first command runs: what argus can do today, shown on real
objects, and a plain statement of what does not exist yet."""

from __future__ import annotations

from rich.console import Console
from rich.panel import Panel

import argus
import argus.lang as T
from argus._version import __version__
from argus.atoms.swizzle import hopper_swizzle
from argus.layout import Layout, composition, zipped_divide
from argus.layout.render import format_layout
from argus.layout.symbolic import injectivity_counterexample

#: What later issues add; printed so the tour never claims more than exists.
NOT_YET = [
    "attention at FlashAttention-3 speed everywhere (`argus.kernels.sdpa` on an H200, bf16, against cuDNN's SDPA: "
    "non-causal 0.87-1.00x at head dim 128 for S = 1k-16k, 0.95-0.99x at 256, 0.87-0.98x at 64; causal 1.06-1.15x at "
    "128 and 256 from S = 4k, but 0.87-0.89x on grids of many blocks and 0.87-0.97x at 64; decoding 0.89-1.00x; no "
    "persistent scheduler yet: docs/attention.md)",
    "the agent's and KLineage's runs on a GPU (on a CPU, `argus optimize` and `argus lineage walk` rank candidates "
    "by the static cost model's estimates)",
    "a GEMM at cuBLAS parity on every shape (argus.kernels.matmul chooses tiles, split-K and 64-row tiles by shape: "
    "1.02x cuBLAS geometric mean over the 22 bf16 shapes of issue #20 on an H200, but 0.59-0.92x on decode, "
    "small and wave-quantized shapes; f32 by split precision at 2.7-4.3x strict fp32 cuBLAS; fused epilogues of "
    "vectors free, of residual tiles at 0.46-0.71x; an untuned batched GEMM; f32 decode and matrix-vector products "
    "on the CUDA-core GEMV at 1.09x strict fp32 cuBLAS; FP8 per tensor at 1.015x torch._scaled_mm on the issue's "
    "shapes, block-scaled FP8 at about half the per-tensor speed; but no bf16 GEMV or stream-K yet: "
    "benchmarks/results/2026-11-28-gemm-shapes.md, 2026-11-28-gemm-epilogue.md, 2026-11-29-gemv/, "
    "2026-11-30-gemm-fp8/)",
    "convolution at cuDNN speed everywhere (1-d and 2-d convolutions without groups run on the verified "
    "implicit-GEMM and flattened-position kernels: bf16 at 0.944x cuDNN on an H200, geometric mean over ResNet-50's "
    "layers at batch 32, 0.965x over 15 held-out layers, short-K layers at 0.63-0.85x; f32 by split precision at "
    "0.06-1.01x cuDNN's TF32 and 0.06-7.6x its strict fp32; depthwise ones on a direct kernel at 0.75-4.5x cuDNN; "
    "grouped, 3-d and transposed ones take the im2col path; level 1's 27 convolutions judged on an H200: 26 solved, "
    "0.81x eager; level 2's 52 at their own sizes: 51 covered, 28 of 31 judged correct at 0.77x eager, eight of them "
    "flagged for unsynced work: docs/conv.md), a fully fused MoE layer (the grouped GEMM and its SwiGLU epilogue "
    "exist; the gather and the combine are PyTorch's: docs/moe.md), and `argus solve` beyond its families "
    "(pointwise, reduction, softmax, scan, pooling, normalization, mm/addmm/bmm with their elementwise tails and "
    "reductions with their elementwise prologues fused, and convolution; gathers and data movement are reported as "
    "not covered; level 1's 39 problems of these families judged on an H200: fast_1 over eager 0.62, 1.39x eager: "
    "docs/solve.md)",
]


def run_tour(console: Console | None = None) -> int:
    """Print the tour; return 0 when every step behaved as documented (the exit status)."""
    console = console or Console(soft_wrap=True)
    console.print(Panel.fit(f"argus {__version__}: verified, agent-driven GPU kernel optimization for Hopper"))

    console.rule("1. A CuTe layout: a 4x8 row-major tile, L(m, n) = 8m + n")
    row_major = Layout((4, 8), (8, 1))
    console.print(format_layout(row_major), markup=False, highlight=False)

    console.rule("2. Tiling: a 128x64 tile divided into 64x16 pieces, ((tile), (rest))")
    tiled = zipped_divide(Layout((128, 64), (64, 1)), (64, 16))
    console.print(f"zipped_divide((128,64):(64,1), (64,16)) = {tiled}", markup=False, highlight=False)
    console.print(f"element (1, 2) of tile (1, 3) is at offset {tiled((1, 2), (1, 3))}", highlight=False)

    console.rule("3. Hopper's 128-byte shared-memory swizzle for bf16 (rows 0-7, first 16 columns)")
    swizzled = composition(hopper_swizzle(128, 16), Layout((8, 64), (64, 1)))
    window = composition(hopper_swizzle(128, 16), Layout((8, 16), (64, 1)))  # the same function, 16 columns
    console.print(format_layout(window), markup=False, highlight=False)

    console.rule("4. Z3 over all coordinates: is the swizzled tile free of collisions?")
    ok = True
    proof = injectivity_counterexample(swizzled)
    if proof is None:
        console.print(f"proved: {swizzled} maps the 512 elements to 512 distinct offsets", markup=False)
    else:
        ok = False
        console.print(f"unexpected collision in {swizzled}: {proof}", markup=False)
    broken = composition(hopper_swizzle(128, 16), Layout((8, 64), (32, 1)))
    witness = injectivity_counterexample(broken)
    if witness is None:
        ok = False
        console.print("the broken layout was not caught", style="red")
    else:
        c1, c2, offset = witness
        console.print(
            f"counterexample for the broken {broken}: elements {c1} and {c2} both land at offset {offset}",
            markup=False,
        )

    console.rule("5. A DSL kernel on the lane-level CPU interpreter")
    from argus.ir.printer import format_kernel
    from argus.kernels import get_kernel
    from argus.kernels.registry import check_on_interpreter

    entry = get_kernel("gemm_cp_async")
    ir_lines = format_kernel(entry.kernel.trace()).splitlines()
    console.print("\n".join(ir_lines[:4] + ["  ..."]), markup=False, highlight=False)
    shape = entry.partial_shape
    error = check_on_interpreter(entry, shape)
    dims = ", ".join(f"{n}={v}" for n, v in shape.items())
    if error <= entry.tolerance:
        console.print(f"{entry.name} [{dims}] matches A @ B on the interpreter (max error {error:.2g})", markup=False)
    else:
        ok = False
        console.print(f"{entry.name} [{dims}] does NOT match its reference (error {error:.2g})", markup=False)

    console.rule("6. The verifier: a transpose through shared memory, without and with its barrier")
    from argus.verify import verify

    racy = verify(staged_transpose)
    console.print(racy.render_text(), markup=False, highlight=False)
    fixed = verify(staged_transpose, BARRIER=True)
    console.print(f"with T.barrier(): {fixed.verdict.value}", markup=False)
    if racy.verdict.value != "violated" or fixed.verdict.value != "verified":
        ok = False

    console.rule("7. Compile the Hopper GEMM for sm_90a (NVRTC, no GPU needed)")
    ok = _compile_step(console) and ok

    console.rule("8. The agent: a short `argus optimize gemm_naive` (bandit planner, transform coder, cost model)")
    ok = _optimize_step(console) and ok

    console.rule("Not built yet (later issues)")
    for item in NOT_YET:
        console.print(f"  - {item}", markup=False)
    return 0 if ok else 1


@argus.kernel
def staged_transpose(X: T.Tensor[("M", 32), T.f32], Y: T.Tensor[(32, "M"), T.f32], BARRIER: bool = False):
    """Transpose 32-row panels through shared memory; with BARRIER=False the threads read elements
    other threads wrote, with nothing ordering the two."""
    with T.grid(T.cdiv(M, 32), threads=128) as (bm,):  # noqa: F821 - M is X's shape symbol
        s = T.alloc_shared((32, 32), T.f32)
        T.copy(X.tile((bm, 0), (32, 32)), s)
        if BARRIER:
            T.barrier()
        r = T.alloc_fragment((32, 32), T.f32)
        T.copy(s.T, r)
        T.copy(r, Y.tile((0, bm), (32, 32)))


def _compile_step(console: Console) -> bool:
    """Compile gemm_warp_specialized and show what its SASS holds; False only if compiling fails for a
    reason other than a missing toolchain (which the tour reports and skips)."""
    from argus.diagnostics import ArgusError

    try:
        from argus.backend.cuda.codegen import compile_kernel
        from argus.kernels import get_kernel

        compiled = compile_kernel(get_kernel("gemm_warp_specialized").kernel)
    except ImportError as e:
        console.print(f"skipped: the CUDA toolchain wheels are not installed ({e}); pip install 'argus-kernels[cuda]'")
        return True
    except ArgusError as e:
        if getattr(e, "code", "").startswith("COMPILE_TOOLCHAIN"):
            console.print(f"skipped: {e}", markup=False)
            return True
        console.print(f"compile failed: {e}", markup=False)
        return False
    r = compiled.resources
    mix = compiled.instruction_mix()
    key = ", ".join(f"{op} x{mix[op]}" for op in ("UTMALDG", "HGMMA", "SYNCS", "USETMAXREG") if mix.get(op))
    console.print(
        f"{compiled.entry}: {r.registers} registers, {r.spill_stores} spill stores; SASS has {key}", markup=False
    )
    return True


def _optimize_step(console: Console, budget: int = 3) -> bool:
    """Run the optimization loop on the naive GEMM for `budget` candidates with the embedded defaults (no GPU, no
    LLM: every candidate goes through the gate, and its time is the cost model's estimate); True when the run
    finished and its best kernel is faster than the start under the estimate."""
    import importlib.util
    import tempfile

    from argus.agent.loop import Budget, StepEvent, optimize

    if importlib.util.find_spec("torch") is None:  # the gate's references are PyTorch functions
        console.print(
            "skipped: the gate needs PyTorch, which is not installed here. Install it with the extra "
            '`pip install -e ".[cuda,torch]"` (a CPU build), or your own CUDA build of PyTorch on a GPU machine',
            markup=False,
        )
        return False

    def on_step(e: StepEvent) -> None:
        if e.kind == "gating" and e.step == 0:
            console.print("start: gemm_naive, gated like every candidate", markup=False)
        elif e.kind == "planned":
            console.print(f"step {e.step}: {e.arm} ({e.rationale})", markup=False, highlight=False)
        elif e.kind == "finished":
            speed = f"{e.speedup:.2f}x" if e.speedup else "-"
            ms = f"{e.ms:.3g} ms" if e.ms else "-"
            console.print(f"  gate: {e.verdict}; estimated {ms} at 4096^3 on an H100 ({speed})", markup=False)

    with tempfile.TemporaryDirectory() as tmp:
        result = optimize(
            "gemm_naive", budget=Budget(candidates=budget), store=f"{tmp}/runs.db", isolate=False, on_step=on_step
        )
    best = result.best or {}
    console.print(
        f"best: {best.get('kernel')} ({best.get('action')}), {result.speedup or 0:.2f}x the naive GEMM -- an estimate "
        "of the static cost model (argus.eval.costmodel), not a measurement; `argus optimize NAME --budget N` runs "
        "longer searches and records them in the run store",
        markup=False,
    )
    return result.status == "finished" and (result.speedup or 0) > 1.0
