"""Your own kernel as a first-class citizen: an ``@argus.kernel`` with a reference becomes a `LibraryKernel`
(inputs, reference, sizes, tolerance), so every command that takes a library kernel takes it too —
``argus interpret|verify|compile|bench|optimize FILE.py:NAME`` — with no built-in task.

The reference is a plain Python/PyTorch function of the kernel's *input* tensors (the tensors the kernel does not
write), matched by parameter name when its parameters carry those names, else by position in the kernel's order.
It returns the outputs (the tensors the kernel writes): one tensor, a tuple in parameter order, or a dict by name.
It runs on float64 CPU tensors (the correctness reference) and, in `argus bench`, on the task's own dtypes (the
eager baseline). Give it on the decorator (``@argus.kernel(reference=fn, sizes={"N": 1000})``) or on the command
line (``--reference FILE.py:fn``). On the command line it may also be a ``torch.nn.Module`` class in a
KernelBench-style problem file (``--reference problem.py:Model``): built from the file's ``get_init_inputs()``,
called with the kernel's inputs (`module_reference`); and when that file has ``get_inputs()``, its tensors give the
sizes (`example_sizes`: each input's extents bind the size names of the kernel's input of the same position) that
``--shape`` does not, before the decorator's.

Inputs are drawn from a standard normal distribution rounded to each input's dtype (integers: uniform in
[-64, 64)); a reference outside its domain there (``log`` of a negative) gives NaN and the check says so.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from argus.diagnostics import ArgusError
from argus.ir.expr import evaluate
from argus.ir.nodes import Buffer, Kernel, written_tensors
from argus.ir.types import round_to
from argus.kernels.registry import LibraryKernel, load

#: Largest error allowed relative to the reference's scale, by the least precise floating dtype of the tensors.
TOLERANCE_BY_DTYPE = {"f32": 1e-4, "f16": 5e-3, "bf16": 2e-2}


class UserKernelError(ArgusError, ValueError):
    """Your kernel or its reference cannot be used as given (code ``KERNEL_REFERENCE_*`` / ``KERNEL_SIZES``)."""


def describe(kernel: Kernel) -> tuple[tuple[Buffer, ...], tuple[Buffer, ...]]:
    """(inputs, outputs) of a traced kernel, each in parameter order: outputs are the tensors it writes."""
    outputs = written_tensors(kernel)
    if not outputs:
        raise UserKernelError(
            "KERNEL_REFERENCE_NO_OUTPUT",
            f"kernel {kernel.name} writes none of its tensors, so there is nothing to compare with a reference",
            "copy the result into an output tensor (T.copy(fragment, Y.tile(...)))",
        )
    inputs = tuple(t for t in kernel.tensors if all(t is not o for o in outputs))
    return inputs, outputs


def resolve_shape(buffer: Buffer, kernel: Kernel, sizes: Mapping[str, int]) -> tuple[int, ...]:
    """The extents of `buffer` at `sizes` (``KERNEL_SIZES`` naming what is missing)."""
    env = {v: int(sizes[v.name]) for v in kernel.shape_vars if v.name in sizes}
    missing = sorted(v.name for v in kernel.shape_vars if v.name not in sizes)
    if missing:
        raise UserKernelError(
            "KERNEL_SIZES",
            f"kernel {kernel.name} needs the problem size{'s' if len(missing) > 1 else ''} {', '.join(missing)}",
            f"give them with --shape {','.join(f'{m}=...' for m in missing)} or sizes= on @argus.kernel",
        )
    return tuple(int(evaluate(e, env)) if not isinstance(e, int) else e for e in buffer.shape)


def call_reference(reference: Callable[..., Any], kernel: Kernel, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """Run `reference` on the kernel's `inputs` (by name; torch tensors) and return its outputs by name, checked:
    one per output tensor, each a tensor of the output's shape."""
    import torch

    ins, outs = describe(kernel)
    names = [t.name for t in ins]
    try:
        params = list(inspect.signature(reference).parameters)
    except (TypeError, ValueError):
        params = []
    try:
        if params and set(params) >= set(names) and len(params) == len(names):
            got = reference(**{n: inputs[n] for n in names})
        else:
            got = reference(*[inputs[n] for n in names])
    except ArgusError:
        raise
    except Exception as e:  # the user's code: reported with its own message, not a traceback
        raise UserKernelError(
            "KERNEL_REFERENCE_FAILED",
            f"the reference of {kernel.name} raised {type(e).__name__}: {e}",
            f"it is called as reference({', '.join(names)}) with CPU tensors; run it on its own to see why",
        ) from e
    if isinstance(got, Mapping):
        unknown = sorted(set(got) - {o.name for o in outs})
        if unknown or len(got) != len(outs):
            raise UserKernelError(
                "KERNEL_REFERENCE_OUTPUTS",
                f"the reference of {kernel.name} returned {sorted(got)}; the kernel writes {[o.name for o in outs]}",
                "return one tensor per output, by name",
            )
        values = [got[o.name] for o in outs]
    else:
        values = list(got) if isinstance(got, tuple | list) else [got]
    if len(values) != len(outs):
        raise UserKernelError(
            "KERNEL_REFERENCE_OUTPUTS",
            f"the reference of {kernel.name} returned {len(values)} value(s); the kernel writes "
            f"{len(outs)} tensor(s): {', '.join(o.name for o in outs)}",
            "return one tensor per output, in parameter order (or a dict by name)",
        )
    out: dict[str, Any] = {}
    for o, v in zip(outs, values, strict=True):
        if not isinstance(v, torch.Tensor):
            v = torch.as_tensor(np.asarray(v, dtype=np.float64))
        want = tuple(inputs[o.name].shape) if o.name in inputs else None
        if want is not None and tuple(v.shape) != want:
            raise UserKernelError(
                "KERNEL_REFERENCE_OUTPUTS",
                f"the reference of {kernel.name} returned {o.name} of shape {tuple(v.shape)}; the kernel writes {want}",
                "return the output with the kernel tensor's shape",
            )
        out[o.name] = v
    return out


def default_tolerance(kernel: Kernel) -> float:
    names = {t.dtype.name for t in kernel.tensors}
    return max((TOLERANCE_BY_DTYPE[n] for n in names if n in TOLERANCE_BY_DTYPE), default=1e-4)


def user_kernel(
    fn: Any,
    *,
    reference: Callable[..., Any] | None = None,
    sizes: Mapping[str, int] | None = None,
    name: str | None = None,
    params: Mapping[str, Any] | None = None,
) -> LibraryKernel:
    """A `LibraryKernel` for the ``@argus.kernel`` `fn` with `reference` (default: the decorator's) at `sizes`
    (default: the decorator's), so the interpreter check, the verifier, the compiler and the gate take it like a
    library kernel. `name`: how it is shown (default: the kernel's name)."""
    import torch

    reference = reference if reference is not None else getattr(fn, "reference", None)
    if reference is None:
        raise UserKernelError(
            "KERNEL_REFERENCE_MISSING",
            f"kernel {getattr(fn, 'name', fn)} has no reference to compare with",
            "give one: @argus.kernel(reference=my_reference) in the kernel's file, or --reference FILE.py:function",
        )
    params = dict(params or {})
    traced = fn.trace(**params)
    shape = {**getattr(fn, "sizes", {}), **dict(sizes or {})}
    inputs, outputs = describe(traced)

    def make(at: Mapping[str, int], rng: np.random.Generator) -> dict[str, np.ndarray]:
        arrays: dict[str, np.ndarray] = {}
        for t in traced.tensors:
            extents = resolve_shape(t, traced, at)
            if any(t is o for o in outputs):
                arrays[t.name] = np.zeros(extents)
            elif t.dtype.kind.value == "float":
                arrays[t.name] = np.asarray(round_to(t.dtype, rng.standard_normal(extents)), dtype=np.float64)
            else:
                arrays[t.name] = rng.integers(-64, 64, extents).astype(np.int64)
        return arrays

    def numpy_reference(arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        tensors = {t.name: torch.from_numpy(np.asarray(arrays[t.name], dtype=np.float64)) for t in inputs}
        tensors.update({t.name: torch.from_numpy(np.asarray(arrays[t.name])) for t in outputs})
        got = call_reference(reference, traced, tensors)
        return {k: v.detach().to(torch.float64).cpu().numpy() for k, v in got.items()}

    def torch_reference(tensors: dict[str, Any]) -> dict[str, Any]:
        return call_reference(reference, traced, tensors)

    tolerance = getattr(fn, "tolerance", None)
    return LibraryKernel(
        name or traced.name,
        (inspect.getdoc(reference) or "").split("\n")[0] or f"your kernel {traced.name}, checked against its reference",
        fn,
        dict(shape),
        dict(shape),
        make,
        numpy_reference,
        tolerance=float(tolerance) if tolerance is not None else default_tolerance(traced),
        params=params,
        torch_reference=torch_reference,
    )


def resolve(spec: str, *, reference: str | None = None, sizes: Mapping[str, int] | None = None) -> Any:
    """What a command line's kernel argument names: a `LibraryKernel` for a library kernel's name, for a
    ``FILE.py:NAME`` that is a `LibraryKernel`, and for an ``@argus.kernel`` with a reference (on its decorator, or
    `reference` = ``FILE.py:function``); an ``@argus.kernel`` without one as is (verify, compile and ir need no
    reference)."""
    target = load(spec)
    if isinstance(target, LibraryKernel):
        return target
    if not hasattr(target, "trace"):
        raise UserKernelError(
            "KERNEL_NOT_A_KERNEL",
            f"{spec} is a {type(target).__name__}, neither an @argus.kernel nor a LibraryKernel",
            "name the function decorated with @argus.kernel",
        )
    ref = None
    if reference:
        ref, problem = load_reference(reference)
        examples = getattr(problem, "get_inputs", None)
        if callable(examples):  # a problem file's example inputs give the sizes the command line leaves open
            sizes = {**example_sizes(target, examples, reference), **dict(sizes or {})}
    if ref is None and getattr(target, "reference", None) is None:
        return target
    return user_kernel(target, reference=ref, sizes=sizes, name=spec)


def load_reference(spec: str) -> tuple[Callable[..., Any], Any]:
    """The reference ``FILE.py:NAME`` names, and the module of its file: a function as it is, a ``torch.nn.Module``
    class as `module_reference` builds it."""
    ref = load(spec)
    if not callable(ref):
        raise UserKernelError("KERNEL_REFERENCE_MISSING", f"{spec} is not a function")
    problem = sys.modules.get(getattr(ref, "__module__", ""), None)
    if isinstance(ref, type):
        ref = module_reference(ref, problem, spec)
    return ref, problem


def module_reference(cls: type, problem: Any, where: str) -> Callable[..., Any]:
    """A ``torch.nn.Module`` class as a reference: built once from its file's ``get_init_inputs()`` (no arguments
    without one) in eval mode, as KernelBench builds a problem's ``Model``; called under ``no_grad`` on the kernel's
    inputs with its parameters and buffers in the first floating input's dtype and device (a copy per dtype: the
    check runs it in float64, `argus bench` in the task's dtypes)."""
    import copy

    import torch

    if not issubclass(cls, torch.nn.Module):
        raise UserKernelError(
            "KERNEL_REFERENCE_MISSING",
            f"{where} is a class but not a torch.nn.Module",
            "give a function, or a torch.nn.Module subclass whose forward takes the kernel's inputs",
        )
    init = getattr(problem, "get_init_inputs", None)
    try:
        model = cls(*(list(init()) if callable(init) else [])).eval()
    except Exception as e:  # the user's code: reported with its own message
        raise UserKernelError(
            "KERNEL_REFERENCE_FAILED",
            f"building {where} raised {type(e).__name__}: {e}",
            "its constructor is called with the file's get_init_inputs() (no arguments when the file has none)",
        ) from e
    copies: dict[tuple[Any, Any], Any] = {}

    def reference(*tensors: Any) -> Any:
        dtype = next((t.dtype for t in tensors if isinstance(t, torch.Tensor) and t.is_floating_point()), None)
        device = next((t.device for t in tensors if isinstance(t, torch.Tensor)), torch.device("cpu"))
        if (dtype, device) not in copies:
            copies[dtype, device] = copy.deepcopy(model).to(device=device, dtype=dtype) if dtype else model
        with torch.no_grad():
            return copies[dtype, device](*tensors)

    reference.__doc__ = inspect.getdoc(cls) or f"{cls.__name__}.forward"
    return reference


def example_sizes(fn: Any, get_inputs: Callable[[], Any], where: str) -> dict[str, int]:
    """The sizes that make `fn`'s input tensors (the ones it does not write, in parameter order) the shapes of
    ``get_inputs()``'s tensors, read from every extent that is one size name; ``KERNEL_SIZES`` where the two lists
    do not pair up (their counts, ranks, a literal extent, or one name given two values)."""
    import torch

    from argus.ir.expr import Var

    traced = fn.trace()
    inputs, _ = describe(traced)
    try:
        examples = [x for x in get_inputs() if isinstance(x, torch.Tensor)]
    except Exception as e:  # the user's code
        raise UserKernelError(
            "KERNEL_REFERENCE_FAILED", f"get_inputs() of {where} raised {type(e).__name__}: {e}"
        ) from e
    hint = "the file's get_inputs() must return the kernel's input tensors in its parameter order"
    if len(examples) != len(inputs):
        raise UserKernelError(
            "KERNEL_SIZES",
            f"get_inputs() of {where} returns {len(examples)} tensor(s); kernel {traced.name} reads {len(inputs)}: "
            + ", ".join(t.name for t in inputs),
            hint,
        )
    sizes: dict[str, int] = {}
    for buffer, x in zip(inputs, examples, strict=True):
        if len(buffer.shape) != x.dim():
            raise UserKernelError(
                "KERNEL_SIZES", f"{buffer.name} has {len(buffer.shape)} dimensions, its example {tuple(x.shape)}", hint
            )
        for extent, n in zip(buffer.shape, x.shape, strict=True):
            if isinstance(extent, Var):
                if sizes.setdefault(extent.name, int(n)) != int(n):
                    raise UserKernelError(
                        "KERNEL_SIZES",
                        f"the examples give {extent.name} two values: {sizes[extent.name]} and {int(n)} "
                        f"({buffer.name} {tuple(x.shape)})",
                        hint,
                    )
            elif isinstance(extent, int) and extent != int(n):
                raise UserKernelError(
                    "KERNEL_SIZES", f"{buffer.name} has extent {extent} where its example has {int(n)}", hint
                )
    return sizes
