"""`argus kernels list`, `argus interpret`, `argus ir`: the kernel library from the command line."""

from __future__ import annotations

import typer
from rich.console import Console
from rich.table import Table

from argus.diagnostics import ArgusError

app = typer.Typer(help="The kernel library.", no_args_is_help=True)
err = Console(stderr=True, soft_wrap=True)
out = Console(soft_wrap=True)


@app.command("list")
def list_kernels() -> None:
    """Name, description and default shapes of every library kernel."""
    from argus.kernels import all_kernels

    table = Table("name", "description", "default shape", "partial-tile shape")
    for k in all_kernels():
        table.add_row(
            k.name,
            k.description,
            ", ".join(f"{n}={v}" for n, v in k.default_shape.items()),
            ", ".join(f"{n}={v}" for n, v in k.partial_shape.items()),
        )
    out.print(table)


def interpret(
    name: str = typer.Argument(..., help="a library kernel, or FILE.py:NAME naming a LibraryKernel"),
    shape: str = typer.Option("", "--shape", help="problem size, e.g. M=100,N=72,K=80 (default: the kernel's)"),
    seed: int = typer.Option(0, "--seed", help="seed of the random inputs"),
) -> None:
    """Run a kernel on the lane-level CPU interpreter against its reference; exit 1 on mismatch."""
    from argus.kernels.registry import LibraryKernel, check_on_interpreter, load, parse_shape

    try:
        entry = load(name)
        if not isinstance(entry, LibraryKernel):
            raise typer.BadParameter(f"{name} is not a LibraryKernel (it needs a reference to compare with)")
        sizes = {**entry.default_shape, **parse_shape(shape)}
        error = check_on_interpreter(entry, sizes, seed=seed)
    except ArgusError as e:
        err.print(str(e), markup=False, highlight=False)
        raise typer.Exit(2) from None
    dims = ", ".join(f"{n}={v}" for n, v in sizes.items())
    verdict = "match" if error <= entry.tolerance else "MISMATCH"
    out.print(
        f"{entry.name} [{dims}] on the interpreter: {verdict} (max error {error:.3g}, tolerance {entry.tolerance:g})"
    )
    raise typer.Exit(0 if error <= entry.tolerance else 1)


def ir(
    name: str = typer.Argument(..., help="a library kernel, or FILE.py:NAME naming an @argus.kernel"),
) -> None:
    """Print a kernel's IR."""
    from argus.ir.printer import format_kernel
    from argus.kernels.registry import LibraryKernel, load

    try:
        entry = load(name)
        fn = entry.kernel if isinstance(entry, LibraryKernel) else entry
        params = entry.params if isinstance(entry, LibraryKernel) else {}
        if not hasattr(fn, "trace"):
            raise typer.BadParameter(f"{name} is not an @argus.kernel")
        out.print(format_kernel(fn.trace(**params)), markup=False, highlight=False)
    except ArgusError as e:
        err.print(str(e), markup=False, highlight=False)
        raise typer.Exit(2) from None
