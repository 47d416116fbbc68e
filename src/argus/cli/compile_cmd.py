"""`argus compile NAME`: generate CUDA C++ for a kernel, compile it for sm_90a with NVRTC (no GPU
needed) and show its resources, SASS instruction mix, and on request the CUDA, PTX or SASS."""

from __future__ import annotations

import typer
from rich.console import Console

from argus.cli.errors import user_error
from argus.cli.output import Column, print_table
from argus.diagnostics import ArgusError

out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)

#: The SASS opcodes worth showing first: the ones each kind of kernel is written for.
KEY_OPCODES = ("HGMMA", "HMMA", "UTMALDG", "UTMASTG", "LDSM", "STSM", "LDGSTS", "SHFL", "LDG", "STG", "LDS", "STS")


def compile_kernel_cli(
    name: str = typer.Argument(..., help="a library kernel, or FILE.py:NAME naming an @argus.kernel"),
    cuda: bool = typer.Option(False, "--cuda", help="print the generated CUDA C++"),
    ptx: bool = typer.Option(False, "--ptx", help="print the PTX"),
    sass: bool = typer.Option(False, "--sass", help="print the SASS"),
) -> None:
    """Compile a kernel for sm_90a and report registers, spills, shared memory and the SASS mix."""
    from argus.backend.cuda.codegen import compile_kernel
    from argus.kernels.registry import LibraryKernel, load

    try:
        entry = load(name)
        fn = entry.kernel if isinstance(entry, LibraryKernel) else entry
        params = entry.params if isinstance(entry, LibraryKernel) else {}
        compiled = compile_kernel(fn, **params)
        if cuda:
            out.print(compiled.generated.source, markup=False, highlight=False)
        if ptx:
            out.print(compiled.module.ptx, markup=False, highlight=False)
        if sass:
            out.print(compiled.module.sass, markup=False, highlight=False)
        resources = compiled.resources
        mix = compiled.instruction_mix()
    except ArgusError as e:
        user_error(e)
    columns = [Column("kernel", identifier=True)] + [
        Column(h, justify="right", min_width=6)
        for h in ("registers", "spill stores", "spill loads", "stack", "static smem", "dynamic smem")
    ]
    row = [compiled.entry, resources.registers, resources.spill_stores, resources.spill_loads, resources.stack_frame,
           resources.static_shared, compiled.generated.shared_bytes]  # fmt: skip
    print_table(columns, [row], console=out)
    key = [f"{op} {mix[op]}" for op in KEY_OPCODES if mix.get(op)]
    out.print("SASS: " + (", ".join(key) if key else "none of " + ", ".join(KEY_OPCODES)), markup=False)
    out.print(f"{sum(mix.values())} instructions, {len(mix)} distinct opcodes", markup=False)
