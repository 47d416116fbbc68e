"""Capture: a KernelBench-style problem (``Model``, ``get_inputs``, ``get_init_inputs``) as one FX graph of core
ATen operators, with every tensor's shape and dtype known.

`capture` loads the problem (`argus.tasks.kernelbench.load_problem`, module-level sizes overridden by name, so
that ``get_inputs`` draws smaller tensors on a CPU), builds the model from ``get_init_inputs()`` and draws the
forward's arguments with PyTorch's generator seeded, then runs ``torch.export.export`` and
``run_decompositions(core_aten_decompositions())``, except that ``aten.scaled_dot_product_attention`` stays one
node (the attention family takes it whole), with argus's own decompositions added (`argus.frontend.decompositions`:
float products and cumulative products as sums of logarithms). Parameters and buffers are lifted to graph inputs by
``torch.export``; their names are kept (`Capture.state`).

The model is captured as the judge runs its reference (`argus.eval.correctness.module_reference`, like
KernelBench's): built by `ModuleTask.build` and left in the training mode its constructor sets, called under
``torch.no_grad()``. So BatchNorm normalizes with the batch's statistics and a dropout stays a (random) dropout;
the buffer updates a module makes in training mode (BatchNorm's running statistics) are dropped from the graph's
outputs, which the forward's result does not depend on and a judge does not compare.

Python scalars among the forward's arguments (``forward(self, A, s)`` with ``s = 3.14``) are specialized by
``torch.export``: the graph holds the number. To tell which graph constants *are* that argument, the problem is
exported a second time with the scalar moved; a constant that followed the scalar exactly is bound to it
(`Capture.scalar_uses`), so a solution takes the value at run time; a scalar that changed the graph in any other
way (folded into another constant, or into the graph's structure) is reported as specialized
(`Capture.specialized`), and the solution refuses other values rather than compute something else.

A problem that does not export (data-dependent control flow, an operator ``torch.export`` cannot trace) raises
`FrontendError` ``SOLVE_EXPORT`` with the reason and the problem's line where PyTorch names one; nothing here
crashes on a user's model. `argus.frontend.solve` then captures it as the graphs ``torch._dynamo`` splits its
forward into (`argus.frontend.dynamo`), each of which this module captures as a problem of its own.
"""

from __future__ import annotations

import contextlib
import io
import logging
import re
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from argus.frontend.errors import FrontendError
from argus.tasks.base import ModuleTask
from argus.tasks.kernelbench import load_problem

#: The seed PyTorch's generator is set to before the model is built and its inputs drawn.
SEED = 0


@dataclass(frozen=True)
class InputSpec:
    """One argument of the forward, in order: a tensor (`shape`, `dtype` a torch dtype) or a Python scalar
    (`value`)."""

    name: str
    kind: str  # "tensor" | "scalar"
    shape: tuple[int, ...] = ()
    dtype: Any = None
    value: Any = None


@dataclass
class Capture:
    """A problem captured as a decomposed FX graph.

    Attributes:
        problem: the problem file; `sizes` the module-level overrides applied; `task` the loaded problem.
        program: the exported program after the core ATen decompositions; `graph_module` its graph.
        inputs: the forward's arguments (`InputSpec`), by graph placeholder name, in order.
        init_inputs: what ``get_init_inputs()`` returned (the constructor's arguments the graph was built with).
        state: parameter, buffer and tensor-attribute placeholders -> their paths on the model.
        constants: placeholders of tensors the forward itself creates from literals (``torch.tensor(0.0)``, which
            ``torch.export`` lifts to graph inputs named ``lifted_tensor_*``) -> their values (CPU tensors).
        scalar_uses: scalar argument -> the (node name, argument index) positions whose constant is that argument.
        specialized: scalar arguments the graph depends on in a way a run-time value cannot replace.
        example: the drawn arguments themselves (tensors and scalars), for checks at the captured shapes; empty
            when `fake`.
        fake: captured without data (`REAL_CAPTURE_ELEMENTS`): the shapes and dtypes are the problem's, no tensor
            was allocated.
    """

    problem: Path
    sizes: dict[str, Any]
    task: ModuleTask
    program: Any
    graph_module: Any
    inputs: list[InputSpec]
    init_inputs: list[Any]
    state: dict[str, str] = field(default_factory=dict)
    constants: dict[str, Any] = field(default_factory=dict)
    scalar_uses: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    specialized: list[str] = field(default_factory=list)
    example: list[Any] = field(default_factory=list)
    single_output: bool = True
    fake: bool = False

    @property
    def name(self) -> str:
        return self.task.name


def _first_lines(text: str, n: int = 3) -> str:
    lines = [line.rstrip() for line in text.strip().splitlines() if line.strip()]
    return " / ".join(lines[:n])


def _user_line(error: BaseException, problem: Path) -> str:
    """``FILE:LINE`` of the problem's own frame in `error`'s traceback or message, or ''."""
    import traceback

    for frame in reversed(traceback.extract_tb(error.__traceback__)):
        if Path(frame.filename).resolve() == problem.resolve():
            return f"{problem.name}:{frame.lineno}"
    hit = re.search(re.escape(problem.name) + r"[\"']?, line (\d+)|" + re.escape(problem.name) + r":(\d+)", str(error))
    if hit:
        return f"{problem.name}:{hit.group(1) or hit.group(2)}"
    return ""


def kept_whole(graph_module: Any) -> list[Any]:
    """The operators of the exported (not yet decomposed) graph that stay whole: scaled dot-product attention (the
    attention family takes it), and logsumexp when the softmax family takes every one of them (decomposed,
    logsumexp is amax, a guard for infinities, exp, sum and log: a pointwise group of two output shapes, which no
    kernel takes; one over several dimensions, which the softmax family refuses, is decomposed for the reduction
    and pointwise families), roll when the layout family takes every one of them (decomposed, a roll is an
    arange, a remainder and an index_select, which no template takes), and pad unless the layout family refuses a
    constant one (decomposed, a reflect or replicate pad is an index by integer arithmetic on an arange, which no
    template takes: kept whole, one the layout family refuses stays with PyTorch with its reason)."""
    import torch

    from argus.frontend.families import layout, softmax

    kept = [torch.ops.aten.scaled_dot_product_attention.default]
    lse = torch.ops.aten.logsumexp.default
    found = [n for n in graph_module.graph.nodes if n.op == "call_function" and n.target is lse]
    if found and all(softmax.unsupported(n) is None for n in found):
        kept.append(lse)
    roll = torch.ops.aten.roll.default
    found = [n for n in graph_module.graph.nodes if n.op == "call_function" and n.target is roll]
    if found and all(layout.unsupported(n) is None for n in found):
        kept.append(roll)
    pad = torch.ops.aten.pad.default
    found = [n for n in graph_module.graph.nodes if n.op == "call_function" and n.target is pad]
    if found and all(layout.unsupported(n) is None or pad_mode(n) != "constant" for n in found):
        kept.append(pad)
    return kept


def pad_mode(node: Any) -> str:
    """The mode of an ``aten.pad`` node ("constant", "reflect", "replicate", "circular")."""
    mode = node.args[2] if len(node.args) > 2 else node.kwargs.get("mode", "constant")
    return str(mode)


def export_model(model: Any, args: Sequence[Any], problem: Path) -> Any:
    """``torch.export.export(model, args)`` with the core ATen decompositions, under ``torch.no_grad()`` as the
    judge calls its reference; `FrontendError` ``SOLVE_EXPORT`` when PyTorch cannot capture it."""
    import torch
    from torch._decomp import core_aten_decompositions

    from argus.frontend.decompositions import argus_decompositions

    try:
        with _quiet(), torch.no_grad():
            program = torch.export.export(model, tuple(args))
            table = core_aten_decompositions()
            for op in kept_whole(program.graph_module):
                table.pop(op, None)
            table.update(argus_decompositions(program.graph_module))
            program = program.run_decompositions(table)
    except Exception as e:  # noqa: BLE001 - the user's model: any failure is reported, never a crash
        where = _user_line(e, problem)
        breaks = graph_breaks(model, args, problem)
        raise FrontendError(
            "SOLVE_EXPORT",
            f"torch.export cannot capture {problem.name}{f' ({where})' if where else ''}: "
            f"{type(e).__name__}: {_first_lines(str(e))}{f'; {breaks}' if breaks else ''}",
            "argus solve needs a forward that torch.export can trace: no control flow on tensor values, no "
            "operator without a tracing rule; rewrite that part (torch.where, torch.cond) or leave it to PyTorch",
        ) from None
    _drop_buffer_mutations(program)
    return program


#: What torch._dynamo's graph-break reasons mean, by a prefix of the reason.
_BREAKS = {
    "generic_jump": "a branch on a tensor's value",
    "data dependent": "an operator whose output shape depends on the data",
    "call_function": "a call dynamo cannot trace",
}


def graph_breaks(model: Any, args: Sequence[Any], problem: Path) -> str:
    """Where ``torch._dynamo`` (which, unlike ``torch.export``, may split a forward into several graphs) breaks
    `model`'s forward, as a sentence naming each break's line of `problem` and its reason; "" when it cannot say
    (it ran into another error, or found no break). Said when a model does not export, and in the report of the
    capture fallback (`argus.frontend.dynamo`), which solves those graphs."""
    import torch

    try:
        with _quiet(), torch.no_grad():
            import torch._dynamo

            torch._dynamo.reset()
            out = torch._dynamo.explain(model)(*args)
    except Exception:  # noqa: BLE001 - a report of a report: nothing more to say
        return ""
    finally:
        with contextlib.suppress(Exception):
            torch._dynamo.reset()
    found = []
    for b in getattr(out, "break_reasons", []) or []:
        lines = [f.lineno for f in getattr(b, "user_stack", []) or [] if Path(f.filename).name == problem.name]
        reason = _first_lines(str(getattr(b, "reason", "")), 1)
        meaning = next((m for k, m in _BREAKS.items() if reason.startswith(k)), "")
        at = f"{problem.name}:{lines[-1]}" if lines else "outside the problem's file"
        found.append(f"{at} ({meaning}: {reason})" if meaning else f"{at} ({reason})")
    if not found:
        return ""
    return "torch._dynamo breaks its graph at " + ", ".join(dict.fromkeys(found))


def _drop_buffer_mutations(program: Any) -> None:
    """Keep only the forward's own outputs in `program`'s graph (in place): a module in training mode returns its
    buffers' updates too (BatchNorm's running statistics), which the forward's result does not depend on and a
    KernelBench judge does not compare. The operators that only fed them go with them."""
    from torch.export.graph_signature import OutputKind

    graph_module = program.graph_module
    output = next(n for n in graph_module.graph.nodes if n.op == "output")
    specs = program.graph_signature.output_specs
    values = list(output.args[0])
    keep = [v for v, spec in zip(values, specs, strict=True) if spec.kind == OutputKind.USER_OUTPUT]
    if len(keep) == len(values):
        return
    output.args = (tuple(keep),)
    graph_module.graph.eliminate_dead_code()
    graph_module.recompile()


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """PyTorch's own logging, printed graphs and deprecation warnings silenced while exporting: a failure is
    reported once, as `FrontendError`, not as the graphs torch prints on the way."""
    logger = logging.getLogger("torch")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        with (
            warnings.catch_warnings(),
            contextlib.redirect_stdout(io.StringIO()),
            contextlib.redirect_stderr(io.StringIO()),
        ):
            warnings.simplefilter("ignore")
            yield
    finally:
        logger.setLevel(level)


#: Forward arguments of more elements than this (all tensors together) are captured without data: the model is
#: built and its inputs drawn under PyTorch's fake-tensor mode (shapes and dtypes only), so a problem at
#: KernelBench's own sizes (1.6e9 elements, 6.4 GB a tensor, 17 GB for level 1's 2-d average pooling) is captured
#: in a second on any machine.
REAL_CAPTURE_ELEMENTS = 1 << 24


def _fake_mode() -> Any:
    from torch._subclasses.fake_tensor import FakeTensorMode

    return FakeTensorMode(allow_non_fake_inputs=True)


def _input_elements(task: ModuleTask) -> int | None:
    """The elements of the forward's tensor arguments, drawn without data; None when the draw cannot run so."""
    import torch

    try:
        with _quiet(), _fake_mode():
            torch.manual_seed(SEED)
            args = task.sample(SEED)
    except Exception:  # noqa: BLE001 - a generator that needs real values: draw it for real
        return None
    return sum(a.numel() for a in args if isinstance(a, torch.Tensor))


def _draw(task: ModuleTask, fake: bool = False) -> tuple[Any, list[Any], list[Any]]:
    """(model, init inputs, forward arguments), built and drawn with the generator at `SEED` (`fake`: under the
    fake-tensor mode, where a module is built in place, not moved)."""
    import torch

    try:
        torch.manual_seed(SEED)
        init = list(task.get_init_inputs())
        if fake:
            torch.manual_seed(SEED)
            model = task.model(*task.get_init_inputs())
        else:
            model = task.build(task.model, SEED, "cpu")
        args = task.sample(SEED)
    except Exception as e:  # noqa: BLE001 - the problem's own code
        raise FrontendError(
            "SOLVE_INPUTS",
            f"{task.name}: building the model or drawing its inputs raised {type(e).__name__}: {_first_lines(str(e))}",
            "run the problem's get_init_inputs(), Model(...) and get_inputs() on their own to see why",
        ) from None
    # the model stays in the mode its constructor left it in (training), built as the judge builds its reference
    # (`ModuleTask.build`, `argus.eval.correctness.module_reference`) and as KernelBench runs it: BatchNorm
    # normalizes with the batch's statistics there and a dropout drops (both differ in eval mode)
    return model, init, args


def _moved(value: Any) -> Any:
    """A scalar unlike `value` and unlikely to collide with any constant of the graph."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value + 7919
    return value * 1.6180339887 + 0.1234567


def _call_nodes(graph_module: Any) -> list[Any]:
    return [n for n in graph_module.graph.nodes if n.op == "call_function"]


def _bind_scalars(
    capture_gm: Any, model: Any, args: list[Any], scalars: list[tuple[int, str]], problem: Path
) -> tuple[dict[str, list[tuple[str, int]]], list[str]]:
    """Which graph constants follow each scalar argument (see the module docstring)."""
    uses: dict[str, list[tuple[str, int]]] = {}
    specialized: list[str] = []
    base = _call_nodes(capture_gm)
    for position, name in scalars:
        value = args[position]
        if isinstance(value, bool):
            specialized.append(name)
            continue
        moved = list(args)
        moved[position] = _moved(value)
        try:
            other = _call_nodes(export_model(model, moved, problem).graph_module)
        except FrontendError:
            specialized.append(name)
            continue
        same_shape = len(other) == len(base) and all(
            a.target == b.target and len(a.args) == len(b.args) and a.kwargs.keys() == b.kwargs.keys()
            for a, b in zip(base, other, strict=True)
        )
        if not same_shape:
            specialized.append(name)
            continue
        found: list[tuple[str, int]] = []
        folded = False
        for a, b in zip(base, other, strict=True):
            for i, (x, y) in enumerate(zip(a.args, b.args, strict=True)):
                if _same_constant(x, y):
                    continue
                if x == value and y == moved[position]:
                    found.append((a.name, i))
                else:
                    folded = True
            if any(not _same_constant(a.kwargs[k], b.kwargs[k]) for k in a.kwargs):
                folded = True
        if folded:
            specialized.append(name)
        elif found:
            uses[name] = found
    return uses, specialized


def _same_constant(x: Any, y: Any) -> bool:
    import torch.fx

    if isinstance(x, torch.fx.Node) or isinstance(y, torch.fx.Node):
        return isinstance(x, torch.fx.Node) and isinstance(y, torch.fx.Node) and x.name == y.name
    if isinstance(x, list | tuple) and isinstance(y, list | tuple):
        return len(x) == len(y) and all(_same_constant(a, b) for a, b in zip(x, y, strict=True))
    return type(x) is type(y) and x == y


def _export(task: ModuleTask, path: Path, inputs: Sequence[Any] | None, fake: bool) -> tuple[Any, ...]:
    """(init inputs, arguments, exported program, input specs, scalar uses, specialized scalars) of `task`,
    drawn and exported with data or, `fake`, under the fake-tensor mode."""
    import torch
    from torch.export.graph_signature import InputKind

    with _fake_mode() if fake else contextlib.nullcontext():
        model, init, args = _draw(task, fake)
        if inputs is not None:
            args = list(inputs)
        program = export_model(model, args, path)
        signature = program.graph_signature
        user = [s.arg.name for s in signature.input_specs if s.kind == InputKind.USER_INPUT]
        if len(user) != len(args):
            raise FrontendError(
                "SOLVE_INPUTS",
                f"{task.name}: the exported graph takes {len(user)} argument(s), get_inputs() gives {len(args)}",
                "the forward should take exactly the arguments get_inputs() returns, in order",
            )
        specs: list[InputSpec] = []
        scalars: list[tuple[int, str]] = []
        for i, (name, value) in enumerate(zip(user, args, strict=True)):
            if isinstance(value, torch.Tensor):
                specs.append(InputSpec(name, "tensor", tuple(value.shape), value.dtype))
            elif isinstance(value, bool | int | float):
                specs.append(InputSpec(name, "scalar", value=value))
                scalars.append((i, name))
            else:
                raise FrontendError(
                    "SOLVE_INPUTS",
                    f"{task.name}: forward argument {i} ({name}) is a {type(value).__name__}; argus solve takes "
                    "tensors and Python numbers",
                    "pass tensors (or ints and floats) from get_inputs()",
                )
        uses, specialized = _bind_scalars(program.graph_module, model, args, scalars, path) if scalars else ({}, [])
    return init, args, program, specs, uses, specialized


def capture(
    problem: Path | str,
    sizes: Mapping[str, Any] | None = None,
    *,
    inputs: Sequence[Any] | None = None,
) -> Capture:
    """Capture the problem file `problem` (see the module docstring). `sizes`: module-level overrides by name
    (``{"batch_size": 8, "dim": 256}``; an unknown name is ``TASK_SIZE_UNKNOWN``). `inputs`: the forward's
    arguments to capture at, instead of a draw of ``get_inputs()``. Large inputs are captured without data
    (`REAL_CAPTURE_ELEMENTS`)."""
    from torch.export.graph_signature import InputKind

    path = Path(problem)
    task = load_problem(path, dict(sizes or {}), strict=True)
    elements = _input_elements(task) if inputs is None else None
    fake = elements is not None and elements > REAL_CAPTURE_ELEMENTS
    try:
        init, args, program, specs, uses, specialized = _export(task, path, inputs, fake)
    except FrontendError:
        if not fake:
            raise
        # a model that needs real values to be built or traced (an .item() in its constructor, say): captured with
        # data after all, as slowly as its size makes it
        fake = False
        init, args, program, specs, uses, specialized = _export(task, path, inputs, fake)
    signature = program.graph_signature
    state, constants = {}, {}
    for s in signature.input_specs:
        if s.kind == InputKind.CONSTANT_TENSOR and str(s.target).startswith("lifted_"):
            constants[s.arg.name] = _lifted_constant(program, str(s.target))
        elif s.kind in (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR):
            state[s.arg.name] = str(s.target)
    return Capture(
        problem=path,
        sizes=dict(task.sizes),
        task=task,
        program=program,
        graph_module=program.graph_module,
        inputs=specs,
        init_inputs=init,
        state=state,
        constants=constants,
        scalar_uses=uses,
        specialized=specialized,
        example=[] if fake else list(args),
        single_output=_single_output(program),
        fake=fake,
    )


#: The most elements of a constant the forward creates from literals that a solution carries as a literal.
CONSTANT_ELEMENTS = 4096


def _lifted_constant(program: Any, target: str) -> Any:
    """The value of a constant the forward creates from literals (lifted by ``torch.export``), as a CPU tensor; a
    larger one than `CONSTANT_ELEMENTS` is refused (a solution carries it as a literal)."""
    value = program.constants[target]
    if value.numel() > CONSTANT_ELEMENTS:
        raise FrontendError(
            "SOLVE_CONSTANT",
            f"the forward creates a constant tensor of {value.numel()} elements ({target}); a solution carries such "
            f"constants as literals, at most {CONSTANT_ELEMENTS} elements",
            "make it a buffer of the model (register_buffer), which the solution reads from the problem's Model",
        )
    return value.detach().cpu().clone()


def _single_output(program: Any) -> bool:
    """Whether the forward returns one tensor (not a tuple of them); other output structures are refused."""
    spec = program.call_spec.out_spec
    if spec is None or spec.is_leaf():
        return True
    children = spec.children() if hasattr(spec, "children") else spec.children_specs  # torch 2.13 renamed it
    if spec.type in (tuple, list) and all(child.is_leaf() for child in children):
        return False
    raise FrontendError(
        "SOLVE_OUTPUTS",
        f"the forward returns a {spec.type.__name__} of outputs; argus solve takes a tensor or a tuple of tensors",
        "return a tensor or a tuple of tensors",
    )
