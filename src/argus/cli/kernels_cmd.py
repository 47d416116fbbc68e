"""`argus kernels list`, `argus interpret`, `argus ir`: the kernel library from the command line."""

from __future__ import annotations

import typer
from rich.console import Console

from argus.cli.errors import user_error
from argus.cli.output import STDOUT, Column, OptionalValueCommand, emit_json, json_option, print_table
from argus.diagnostics import ArgusError

app = typer.Typer(help="The kernel library.", no_args_is_help=True)
err = Console(stderr=True, soft_wrap=True)
out = Console(soft_wrap=True)


@app.command("list", cls=OptionalValueCommand)
def list_kernels(
    json_file: str | None = json_option(
        'a list of {"name", "description", "default_shape", "partial_shape"}, shapes as {"M": 128, ...}'
    ),
) -> None:
    """Name, description and default shapes of every library kernel. Shapes are written as --shape takes them
    (M=100,N=72,K=80). Piped, one tab-separated line per kernel after a header line."""
    from argus.kernels import all_kernels

    kernels = all_kernels()
    doc = [
        {"name": k.name, "description": k.description, "default_shape": dict(k.default_shape),
         "partial_shape": dict(k.partial_shape)}
        for k in kernels
    ]  # fmt: skip
    if json_file == STDOUT:
        emit_json(doc, json_file)
        return
    columns = [
        Column("name", identifier=True),
        Column("description"),
        Column("default shape", identifier=True, optional=True),
        Column("partial-tile shape", identifier=True, optional=True),
    ]
    shape = lambda sizes: ",".join(f"{n}={v}" for n, v in sizes.items())  # noqa: E731
    print_table(columns, [(k.name, k.description, shape(k.default_shape), shape(k.partial_shape)) for k in kernels])
    if json_file is not None:
        err.print(f"wrote {emit_json(doc, json_file)}", markup=False, highlight=False)


def interpret(
    name: str = typer.Argument(..., help="a library kernel, or FILE.py:NAME (an @argus.kernel with a reference)"),
    shape: str = typer.Option("", "--shape", help="problem size, e.g. M=100,N=72,K=80 (default: the kernel's)"),
    reference: str = typer.Option(
        "", "--reference", help="FILE.py:function computing the outputs (default: the kernel's reference=)"
    ),
    seed: int = typer.Option(0, "--seed", help="seed of the random inputs"),
) -> None:
    """Run a kernel on the lane-level CPU interpreter against its reference; exit 1 on mismatch."""
    from argus.kernels.registry import LibraryKernel, check_on_interpreter, parse_shape
    from argus.kernels.user import UserKernelError, resolve

    pinned = parse_shape(shape)
    entry = resolve(name, reference=reference or None, sizes=pinned)
    if not isinstance(entry, LibraryKernel):
        raise UserKernelError(
            "KERNEL_REFERENCE_MISSING",
            f"{name} has no reference to compare with",
            "give one: @argus.kernel(reference=my_reference) in the kernel's file, or --reference FILE.py:function",
        )
    sizes = {**entry.default_shape, **pinned}
    error = check_on_interpreter(entry, sizes, seed=seed)
    dims = ", ".join(f"{n}={v}" for n, v in sizes.items())
    verdict = "match" if error <= entry.tolerance else "MISMATCH"
    out.print(
        f"{entry.name} [{dims}] on the interpreter: {verdict} (max error {error:.3g}, tolerance {entry.tolerance:g})",
        markup=False,
        highlight=False,
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
        user_error(e)
