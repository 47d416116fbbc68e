"""Assembly: a partitioned graph as a readable solution file — the generated kernels with their references, and
a ``ModelNew`` whose ``forward`` walks the captured graph: each group is one kernel launch on its tensors viewed as
its template says (`KernelSource.shapes`; flattened by default), each operator no template covers is its ATen
call, marked ``# not covered`` (a solution is *solved* only when there is none).

The file imports argus and torch only. ``_launch`` runs a kernel on the lane-level CPU interpreter for CPU tensors
and, for CUDA tensors, compiles it once per parameter set (`argus.runtime.build`) and launches it. The solution is
specialized as the capture was (a call of argus's kernel library excepted: it plans for the tensors it is given):
its constructor refuses init inputs other than the captured ones, a scalar
argument the graph folded refuses other values, and a model with parameters or buffers rebuilds the problem's own
``Model`` from its file (same seed, so the same weights, as KernelBench constructs both) to take them. A flattened
kernel whose outputs have its first input's shape (a pointwise group) takes any size; any other kernel's views and
output shapes are the captured ones, and the solution refuses other input shapes with a clear error
(``_expect_shape``) rather than computing on wrong views.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from argus.frontend.errors import FrontendError
from argus.frontend.families.base import KernelSource, aten_call, format_arg
from argus.frontend.partition import Partition


def _literal(values: Sequence[Any]) -> str | None:
    """`values` as a Python literal, or None when it is not one (then the constructor does not check them)."""
    import ast

    text = repr(list(values))
    try:
        ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return None
    return text


def _call_with(node: Any, rebinds: dict[int, str], names: dict[str, str]) -> str:
    """`aten_call(node)` with the positional arguments in `rebinds` replaced by names, and every node operand by
    the local variable that holds it (`names`)."""
    fn = aten_call(node).split("(", 1)[0].replace("_operator.", "operator.")
    parts = [rebinds[i] if i in rebinds else format_arg(a, names) for i, a in enumerate(node.args)]
    parts += [f"{k}={format_arg(v, names)}" for k, v in node.kwargs.items()]
    return f"{fn}({', '.join(parts)})"


LAUNCH = '''
_COMPILED: dict = {}


def _expect_shape(tensor, shape, kernel, name):
    """Refuse a tensor of another shape than the one `kernel` was generated for (its views are the captured ones)."""
    if tuple(tensor.shape) != shape:
        raise ValueError(
            f"{kernel} was generated for {name} of shape {shape}, got {tuple(tensor.shape)}: "
            "run argus solve at these sizes (--shape)"
        )


def _launch(kernel, tensors, shapes=None, **params):
    """Run `kernel` on `tensors` (inputs, then outputs; outputs are fresh contiguous tensors, so the kernel writes
    them in place), each viewed as its entry of `shapes` (default: flattened): compiled once per parameter set on
    CUDA tensors, the CPU interpreter otherwise. A call of argus's kernel library takes the tensors as they are."""
    if getattr(kernel, "library", False):
        kernel(*tensors)
        return
    flat = [t.contiguous().view(s) for t, s in zip(tensors, shapes or [(-1,)] * len(tensors), strict=True)]
    if flat[0].is_cuda:
        import argus.runtime
        from argus.runtime.arguments import MAX_EXTENT

        key = (kernel.name, tuple(sorted(params.items())))
        if key not in _COMPILED:
            _COMPILED[key] = argus.runtime.build(kernel, **params)
        n = flat[0].numel()
        # a kernel's extents stay below MAX_EXTENT (its tile coordinates are 32-bit): longer operands of one
        # length (elementwise) run in chunks, each a contiguous slice starting at a multiple of MAX_EXTENT
        step = MAX_EXTENT if shapes is None and all(t.numel() == n for t in flat) else max(n, 1)
        for start in range(0, n, step):
            _COMPILED[key](*[t[start : start + step] for t in flat])
    else:
        kernel(*flat, device="cpu", **params)
'''

STATE = '''

def _problem_file():
    """The problem file: the one the judge names (its copy, where this solution runs), else where it was captured."""
    import os
    from pathlib import Path

    from argus.tasks.kernelbench import PROBLEM_ENV

    named = os.environ.get(PROBLEM_ENV)
    for path in (named, PROBLEM):
        if path and Path(path).name == Path(PROBLEM).name and Path(path).is_file():
            return path
    raise FileNotFoundError(
        f"this solution takes its parameters from the problem's own Model, in {Path(PROBLEM).name}: not found at "
        f"{PROBLEM}; set {PROBLEM_ENV} to its path"
    )


def _problem_model(init_inputs):
    """The problem's own Model, built from its file: the parameters and buffers the captured graph reads."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("argus_solve_problem", _problem_file())
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.Model(*init_inputs)
'''


def emit(partition: Partition, kernels: dict[str, KernelSource]) -> str:
    """The solution file's text (see the module docstring). `kernels`: group kernel name -> its source."""
    capture = partition.capture
    graph = partition.fused.graph
    groups = {g.module: g for g in partition.groups}
    uncovered = {u.node: u for u in partition.uncovered}
    scalar_rebinds: dict[str, dict[int, str]] = {}
    for arg, uses in capture.scalar_uses.items():
        for node_name, index in uses:
            scalar_rebinds.setdefault(node_name, {})[index] = arg

    header = [
        f'"""ModelNew for {capture.name}, generated by `argus solve` from its captured graph (torch.export, core',
        "ATen decompositions).",
        "",
        "Partition:",
    ]
    for g in partition.groups:
        header.append(f"  {g.kernel}: {g.family} ({' -> '.join(g.ops)})")
    for u in partition.uncovered:
        header.append(f"  {u.node}: {u.line()}")
    if capture.sizes:
        header.append("")
        header.append("Captured at " + ", ".join(f"{k}={v!r}" for k, v in capture.sizes.items()) + ".")
    header.append('"""')
    lines = [*header, "", "import torch", "", "import argus", "import argus.lang as T", ""]
    if capture.state:
        lines.append(f"PROBLEM = {str(capture.problem.resolve())!r}")
    init = _literal(capture.init_inputs)
    lines.append(f"CAPTURED_INIT_INPUTS = {init if init is not None else 'None'}")
    lines.append(LAUNCH.rstrip("\n"))
    if capture.state:
        lines.append(STATE.rstrip("\n"))
    for g in partition.groups:
        src = kernels[g.kernel]
        lines += ["", "", src.reference.rstrip("\n"), "", "", src.kernel.rstrip("\n")]

    params = [s.name for s in capture.inputs]
    body: list[str] = []
    for s in capture.inputs:
        if s.kind == "scalar" and s.name in capture.specialized:
            body.append(f"        if {s.name} != {s.value!r}:  # torch.export folded it into the graph")
            message = f"this solution was generated for {s.name}={s.value!r}, got {{{s.name}!r}}"
            body.append(f"            raise ValueError(f{message!r})")
    if capture.state:
        body.append("        state = self.reference.state_dict(keep_vars=True)  # the problem's parameters and buffers")
    names: dict[str, str] = {}  # graph node -> the forward's local variable holding it
    # a local must not shadow a kernel (graph nodes ``convolution_1`` and kernels ``convolution_1`` both occur)
    kernel_names = {g.kernel for g in partition.groups}

    def local(name: str) -> str:
        while name in kernel_names:
            name += "_v"
        return name

    for node in graph.nodes:
        if node.op == "placeholder":
            names[node.name] = node.name
            if node.name in capture.state:
                body.append(f"        {node.name} = state[{capture.state[node.name]!r}]")
            continue
        if node.op == "call_module" and node.target in groups:
            g = groups[node.target]
            src = kernels[g.kernel]
            inputs = [names[a.name] for a in node.args]
            placeholders = [n for n in g.subgraph.graph.nodes if n.op == "placeholder"]
            outs = [next(n.meta["val"] for n in g.subgraph.graph.nodes if n.name == o) for o in src.outputs]
            first = tuple(placeholders[0].meta["val"].shape) if placeholders else None
            # a flattened kernel whose outputs have its first input's shape takes any size; any other kernel was
            # written for the captured shapes (its views and output shapes), and refuses others
            generic = not src.shapes and all(tuple(v.shape) == first for v in outs)
            if src.library:  # a library call plans for the tensors it is given: any size, its output sized by it
                (out_name,) = map(local, src.outputs)
                body.append(f"        {out_name} = {g.kernel}.empty_output({', '.join(inputs)})")
                body.append(f"        _launch({g.kernel}, [{', '.join([*inputs, out_name])}])")
                names[node.name] = out_name
                names[f"{node.name}[0]"] = out_name
                continue
            if not generic:
                for arg, ph in zip(inputs, placeholders, strict=True):
                    shape = tuple(ph.meta["val"].shape)
                    body.append(f"        _expect_shape({arg}, {shape!r}, {g.kernel.__repr__()}, {arg!r})")
            outputs = [local(o) for o in src.outputs]
            for out_name, val in zip(outputs, outs, strict=True):
                shape = f"{inputs[0]}.shape" if generic else repr(tuple(val.shape))
                body.append(f"        {out_name} = torch.empty({shape}, dtype={val.dtype}, device={inputs[0]}.device)")
            scalars = "".join(f", {p}=float({a})" for p, a in src.scalars.items())
            views = [src.shapes.get(n, (-1,)) for n in [p.name for p in placeholders] + src.outputs]
            shaped = "" if not src.shapes else f", {views!r}"
            body.append(f"        _launch({g.kernel}, [{', '.join(inputs + outputs)}]{shaped}{scalars})")
            names[node.name] = outputs[0]
            for i, out_name in enumerate(outputs):
                names[f"{node.name}[{i}]"] = out_name
            continue
        if node.op == "call_function":
            if getattr(node.target, "__name__", "") == "getitem" and f"{node.args[0].name}[0]" in names:
                names[node.name] = names[f"{node.args[0].name}[{node.args[1]}]"]
                continue
            try:
                call = _call_with(node, scalar_rebinds.get(node.name, {}), names)
            except Exception as e:  # noqa: BLE001 - an argument Python cannot spell
                raise FrontendError(
                    "SOLVE_EMIT", f"cannot write {node.name} ({node.target}) as Python: {e}", None
                ) from None
            note = f"  # {uncovered[node.name].line()}" if node.name in uncovered else "  # view: no compute"
            body.append(f"        {local(node.name)} = {call}{note}")
            names[node.name] = local(node.name)
            continue
        if node.op == "output":
            results = [names[n.name] for n in node.args[0]]
            single = capture.single_output
            body.append(f"        return {results[0] if single else '(' + ', '.join(results) + ',)'}")

    check = [
        "        if CAPTURED_INIT_INPUTS is not None and list(init_inputs) != CAPTURED_INIT_INPUTS:",
        "            raise ValueError(",
        "                f'this solution was generated for init inputs {CAPTURED_INIT_INPUTS}, '",
        "                f'got {list(init_inputs)}'",
        "            )",
    ]
    state = (
        [
            "        self.reference = _problem_model(init_inputs)  # its parameters and buffers (moved with .to())",
        ]
        if capture.state
        else []
    )
    lines += [
        "",
        "",
        "class ModelNew(torch.nn.Module):",
        f'    """{capture.name} as argus kernels (see the module docstring for the partition)."""',
        "",
        "    def __init__(self, *init_inputs):",
        "        super().__init__()",
        *check,
        *state,
        "",
        f"    def forward(self, {', '.join(params)}):",
        *body,
    ]
    text = "\n".join(lines) + "\n"
    if "operator.getitem" in text:
        text = text.replace("import torch\n", "import operator\n\nimport torch\n", 1)
    return text
