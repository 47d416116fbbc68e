"""The short tour that the README's first command runs: what argus can do today, shown on real
objects, and a plain statement of what does not exist yet."""

from __future__ import annotations

from rich.console import Console
from rich.panel import Panel

from argus._version import __version__
from argus.layout import Layout, composition, hopper_swizzle, zipped_divide
from argus.layout.render import format_layout
from argus.layout.symbolic import injectivity_counterexample

#: What later issues add; printed so the tour never claims more than exists.
NOT_YET = [
    "Hopper pipelines in the DSL and interpreter: TMA, mbarriers, warp roles, wgmma kernels, flash attention",
    "the data-flow verifier with counterexamples (`argus verify`)",
    "CUDA C++/PTX generation from the IR and launching on the GPU (`argus compile`)",
    "the gate and benchmarks against cuBLAS/cuDNN (`argus bench`)",
    "the optimizing agent and KLineage skill mining (`argus optimize`, `argus lineage`)",
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

    console.rule("Not built yet (later issues)")
    for item in NOT_YET:
        console.print(f"  - {item}", markup=False)
    return 0 if ok else 1
