"""Capture fallback: a problem ``torch.export`` cannot capture, solved as the graphs ``torch._dynamo`` splits its
forward into.

``torch.export`` needs one graph for the whole forward; a forward that branches on a tensor's value
(``if y.sum() > 0:``) or calls something PyTorch cannot trace has none. ``torch._dynamo`` (``torch.compile``'s
front end) runs such a forward as straight-line graphs with Python between them: it breaks the graph where it cannot
trace, runs that part in Python, and starts a new graph after it (a branch's two sides are two resume functions,
each compiled when it is first taken). Each of those graphs exports, so each is solved by the usual pipeline.

1. `capture_graphs`: the model runs under ``torch.compile(model, backend=collector, dynamic=False)`` on `DRAWS`
   draws of ``get_inputs()`` (the first the one `argus.frontend.capture` draws; real data: which graphs compile
   depends on the values), and the collector keeps each new graph (`Graph`: its FX module, the inputs it ran on,
   its `graph_key`). Parameters and buffers reach a dynamo graph as inputs (PyTorch inlines ``nn.Module`` calls);
   a tensor the graph reads as an attribute (``get_attr``) is made one more input. Then `PROBE_DRAWS` fresh draws
   run: a graph they compile that the capture did not see (another branch, a value read with ``.item()`` and
   folded into the next graph as a constant) is reported as not covered, since the solution would run it in
   PyTorch. Inputs too large to draw (`capture.REAL_CAPTURE_ELEMENTS`) cannot be captured so: control flow needs
   the values.
2. `solve_graphs`: each graph is written as a KernelBench problem of its own (`problem_source`: a ``Model`` whose
   forward is the graph's code, ``get_inputs`` loading the inputs it ran on, saved beside it) in a temporary
   directory and handed to `argus.frontend.solve.solve` unjudged: partition, kernels, verification and checks are
   the ones every problem gets, with nothing repeated here.
3. `stitch`: one solution file. Each graph's kernels (renamed ``g0_pointwise_0``: graph, then kernel) and a
   ``Graph0`` module whose forward is that graph's solved forward; a ``ModelNew`` that builds the problem's own
   ``Model`` (its parameters, and its Python between the graphs) and runs it through
   ``torch.compile(..., backend=Router(_GRAPHS))``: each graph dynamo compiles is routed by its `graph_key` to
   its module. A graph no key matches runs as dynamo traced it, in PyTorch (`Router.eager` records it and a
   warning says so): not covered, but never wrong.
4. The gate judges that file against the problem, as any solution.

A graph's identity is `graph_key`: a hash of its code (devices written out of it: a graph captured on the CPU is
the same graph on a GPU) and of each input's shape and dtype. The order in which graphs compile is not part of it:
which branch a run takes first changes the order, not the graphs; two graphs with one code and one signature are
one computation, and one solved module serves both.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import hashlib
import inspect
import re
import tempfile
import types
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from argus.frontend.capture import (
    REAL_CAPTURE_ELEMENTS,
    SEED,
    _draw,
    _first_lines,
    _input_elements,
    _quiet,
    capture,
    graph_breaks,
)
from argus.frontend.emit import _literal
from argus.frontend.errors import FrontendError
from argus.tasks.kernelbench import load_problem

#: Draws of the inputs the forward runs on while its graphs are collected (seeds `SEED`, `SEED` + 1, ...): a
#: branch whose side depends on the values is taken both ways by some draw, as the judge's draws take it.
DRAWS = 8

#: Fresh draws run after the capture (seeds from `PROBE_SEED`): a graph only they compile is one the solution
#: would run in PyTorch, and the problem is then not covered.
PROBE_DRAWS = 4
PROBE_SEED = 1000

#: Names torch.fx's generated code may use, and the lines a problem file defines them with.
_FX_GLOBALS = {
    "torch": "import torch",
    "inf": "from math import inf",
    "nan": "from math import nan",
    "NoneType": "NoneType = type(None)",
    "device": "from torch import device",
    "fx_pytree": "import torch.fx._pytree as fx_pytree",
    "pytree": "import torch.utils._pytree as pytree",
}


def graph_key(graph_module: Any, example_inputs: Sequence[Any]) -> str:
    """The identity of a dynamo graph: a hash of its code, with every device literal written as ``device(...)``
    (a graph that names the device it was traced on is the same graph elsewhere), and of each input's shape and
    dtype (a number's type and value). Equal keys: one computation."""
    import torch

    code = re.sub(r"device\(type='[a-z]+'(, index=\d+)?\)", "device(...)", graph_module.code)
    digest = hashlib.sha256(code.encode())
    for x in example_inputs:
        if isinstance(x, torch.Tensor):
            digest.update(f"{tuple(x.shape)}:{x.dtype};".encode())
        else:
            digest.update(f"{type(x).__name__}:{x!r};".encode())
    return digest.hexdigest()[:16]


def _attribute(graph_module: Any, target: str) -> Any:
    """The value of ``get_attr`` `target` on `graph_module` (a dotted path)."""
    value = graph_module
    for name in target.split("."):
        value = getattr(value, name)
    return value


class Router:
    """A ``torch.compile`` backend that runs each graph dynamo compiles in the module solved for it.

    `graphs`: `graph_key` -> (label, the module class solved for that graph, the ``get_attr`` targets it takes as
    extra inputs, in order). A graph whose key is not there runs as dynamo traced it (``graph_module.forward``, in
    PyTorch) and is recorded in `eager` (with a warning): not covered. `routed` lists the labels of the graphs
    matched, in the order dynamo compiled them."""

    def __init__(self, graphs: Mapping[str, tuple[str, Callable[[], Any], Sequence[str]]]) -> None:
        self.graphs = dict(graphs)
        self.routed: list[str] = []
        self.eager: list[str] = []

    def __call__(self, graph_module: Any, example_inputs: Sequence[Any]) -> Callable[..., Any]:
        key = graph_key(graph_module, example_inputs)
        entry = self.graphs.get(key)
        if entry is None:
            self.eager.append(key)
            warnings.warn(
                f"torch._dynamo compiled a graph argus solve did not capture (key {key}: a branch not taken when "
                "the problem was captured, or a value folded into the graph); it runs in PyTorch, not in argus "
                "kernels",
                stacklevel=2,
            )
            return graph_module.forward
        label, module_class, attributes = entry
        self.routed.append(label)
        module = module_class()
        values = [_attribute(graph_module, target) for target in attributes]

        def run(*args: Any) -> Any:
            return module(*args, *values)

        return run


@dataclass
class Graph:
    """One graph dynamo compiled: its position in the order of compilation (`index`, its label ``g<index>``), its
    `graph_key`, the FX module with every ``get_attr`` turned into a trailing input (`module`; the targets in
    `attributes`), and the inputs it ran on, attributes last (`example`)."""

    index: int
    key: str
    module: Any
    attributes: list[str]
    example: list[Any]
    #: why the graph cannot be written as a problem ('' when it can)
    refused: str = ""

    @property
    def label(self) -> str:
        return f"g{self.index}"

    def ops(self) -> list[str]:
        """The graph's calls, as torch names them (``relu``, ``sum``, ``gt``)."""
        return _ops(self.module)


def _ops(graph_module: Any) -> list[str]:
    """The calls of a dynamo graph, as torch names them (`argus.frontend.partition.op_name`)."""
    from argus.frontend.partition import op_name

    return [op_name(n) for n in graph_module.graph.nodes if n.op in ("call_function", "call_method")]


@dataclass
class GraphCapture:
    """A problem captured as dynamo's graphs: the loaded problem (`task`), its constructor's arguments, the graphs
    in the order of compilation, where dynamo broke the forward (`breaks`, `capture.graph_breaks`' sentence), the
    keys and operators of the graphs only the probe draws compiled (`unseen`), and why ``torch.export`` refused it
    (`refused`)."""

    problem: Path
    task: Any
    init_inputs: list[Any]
    graphs: list[Graph]
    breaks: str
    refused: FrontendError
    unseen: list[tuple[str, str]] = field(default_factory=list)

    def summary(self) -> str:
        """The report's line: how the problem was captured, graph by graph, and where its graph broke."""
        graphs = "; ".join(f"{g.label}: {' -> '.join(g.ops()) or 'no operator'}" for g in self.graphs)
        return (
            f"captured by torch._dynamo as {len(self.graphs)} graph(s) (torch.export cannot capture it): {graphs}"
            + (f"; {self.breaks}" if self.breaks else "")
        )


def _not_captured(refused: FrontendError, why: str) -> FrontendError:
    """torch.export's refusal, with why the dynamo fallback cannot take the problem either."""
    return FrontendError(
        "SOLVE_EXPORT",
        f"{refused.message}; the torch._dynamo fallback cannot take it either: {why}",
        "argus solve needs a forward that torch.export can trace, or one that torch._dynamo splits into graphs of "
        "torch operators (a branch on a tensor's value is fine; NumPy or Python on the data is not): compute that "
        "part with torch operators",
    )


class _Collector:
    """The capture's ``torch.compile`` backend: keeps each graph with a new key and runs it as traced."""

    def __init__(self) -> None:
        self.graphs: list[Graph] = []
        self.unseen: list[tuple[str, str]] = []  # (key, operators) of the graphs only the probe compiled
        self.probing = False

    def __call__(self, graph_module: Any, example_inputs: Sequence[Any]) -> Callable[..., Any]:
        import torch

        key = graph_key(graph_module, example_inputs)
        if all(g.key != key for g in self.graphs):
            if self.probing:
                self.unseen.append((key, " -> ".join(_ops(graph_module)) or "no operator"))
            else:
                example = [x.detach().clone() if isinstance(x, torch.Tensor) else x for x in example_inputs]
                self.graphs.append(_graph(len(self.graphs), key, graph_module, example))
        return graph_module.forward


def _graph(index: int, key: str, graph_module: Any, example: list[Any]) -> Graph:
    """`graph_module` with each ``get_attr`` made a trailing input (a problem file has no attributes to read):
    the copy the solution runs, and the values it ran with. A graph that calls a submodule or reads a non-tensor
    attribute is kept with the reason (`Graph.refused`)."""
    import torch
    import torch.fx

    graph = torch.fx.Graph()
    env: dict[Any, Any] = {}
    nodes = list(graph_module.graph.nodes)
    attributes: list[str] = []
    values: list[Any] = []
    refused = ""
    for node in nodes:
        if node.op == "placeholder":
            env[node] = graph.node_copy(node, env.__getitem__)
    for node in nodes:
        if node.op != "get_attr":
            continue
        value = _attribute(graph_module, node.target)
        if not isinstance(value, torch.Tensor):
            refused = f"it reads {node.target}, a {type(value).__name__}, not a tensor"
            continue
        env[node] = graph.placeholder(f"attribute_{len(attributes)}")
        env[node].meta = dict(node.meta)
        attributes.append(node.target)
        values.append(value.detach().clone())
    for node in nodes:
        if node.op in ("placeholder", "get_attr"):
            continue
        if node.op == "call_module":
            refused = refused or f"it calls the submodule {node.target}"
        if refused:
            break
        env[node] = graph.node_copy(node, env.__getitem__)
    module = graph_module if refused else torch.fx.GraphModule(torch.nn.Module(), graph)
    return Graph(index, key, module, attributes if not refused else [], [*example, *values], refused)


def capture_graphs(problem: Path, sizes: Mapping[str, Any] | None, refused: FrontendError) -> GraphCapture:
    """The problem's dynamo graphs (see the module docstring, step 1). `refused`: torch.export's error, raised
    again with the reason when this fallback cannot take the problem either (inputs too large to draw here, dynamo
    failing, no graph)."""
    import torch
    import torch._dynamo

    task = load_problem(problem, dict(sizes or {}), strict=True)
    elements = _input_elements(task)
    if elements is not None and elements > REAL_CAPTURE_ELEMENTS:
        raise _not_captured(
            refused,
            f"which graphs it runs depends on the inputs' values, and its inputs ({elements:.3g} elements; at most "
            f"{REAL_CAPTURE_ELEMENTS:.3g} are drawn with data) are too large to draw here; capture it at smaller "
            "sizes (--shape)",
        )
    model, init, args = _draw(task)
    collector = _Collector()
    try:
        with _quiet(), torch.no_grad():
            torch._dynamo.reset()
            compiled = torch.compile(model, backend=collector, dynamic=False)
            for draw in range(DRAWS):
                compiled(*(args if draw == 0 else task.sample(SEED + draw)))
            # compiled afresh: past its recompile limit dynamo runs a frame in Python without asking the backend,
            # and a graph the probe would find new must reach it
            torch._dynamo.reset()
            collector.probing = True
            compiled = torch.compile(model, backend=collector, dynamic=False)
            for draw in range(PROBE_DRAWS):
                compiled(*task.sample(PROBE_SEED + draw))
    except Exception as e:  # noqa: BLE001 - the user's model: any failure is reported, never a crash
        raise _not_captured(
            refused, f"torch._dynamo cannot run it: {type(e).__name__}: {_first_lines(str(e))}"
        ) from None
    finally:
        with contextlib.suppress(Exception):
            torch._dynamo.reset()
    if not collector.graphs:
        raise _not_captured(refused, "torch._dynamo ran its forward as Python, with no graph of tensor operators")
    breaks = graph_breaks(model, args, problem)
    return GraphCapture(problem, task, init, collector.graphs, breaks, refused, collector.unseen)


def problem_source(graph: Graph, name: str, inputs_file: str) -> str:
    """A KernelBench problem whose ``Model.forward`` is `graph`'s code and whose ``get_inputs()`` loads the inputs
    it ran on from `inputs_file` (beside the problem). `FrontendError` ``SOLVE_EXPORT`` when the code needs a name
    no import gives (dynamo's own wrappers, as for NumPy calls it traces)."""
    code = graph.module.graph.python_code("self")
    imports = {"torch": _FX_GLOBALS["torch"]}
    for global_name, value in code.globals.items():
        if global_name in _FX_GLOBALS:
            imports[global_name] = _FX_GLOBALS[global_name]
        elif isinstance(value, types.ModuleType):
            imports[global_name] = f"import {value.__name__} as {global_name}"
        else:
            raise FrontendError(
                "SOLVE_EXPORT",
                f"graph {graph.label} of {name} calls {global_name} ({value!r}), which no import names",
                "torch._dynamo traced that call through its own wrapper (NumPy on tensors, say); compute it with "
                "torch operators",
            )
    forward = "\n".join(f"    {line}" if line.strip() else "" for line in code.src.strip("\n").splitlines())
    return "\n".join(
        [
            f'"""Graph {graph.label} of {name}, as torch._dynamo traced it (argus solve\'s capture fallback): '
            "straight-line",
            f"PyTorch, parameters and attributes passed as arguments; get_inputs() loads the inputs it ran on "
            f'({inputs_file})."""',
            "",
            "from pathlib import Path",
            "",
            *sorted(set(imports.values())),
            "",
            "",
            "class Model(torch.nn.Module):",
            forward,
            "",
            "",
            "def get_inputs():",
            f"    return list(torch.load(Path(__file__).with_name({inputs_file!r})))",
            "",
            "",
            "def get_init_inputs():",
            "    return []",
            "",
        ]
    )


def _write_problem(graph: Graph, name: str, directory: Path) -> Path:
    """`graph` as a problem file in `directory`, its inputs beside it."""
    import torch

    inputs_file = f"{graph.label}_inputs.pt"
    source = problem_source(graph, name, inputs_file)
    plain = [x.detach().clone() if isinstance(x, torch.Tensor) else x for x in graph.example]
    torch.save(plain, directory / inputs_file)
    path = directory / f"{graph.label}.py"
    path.write_text(source)
    return path


def _exportable(path: Path) -> str:
    """Why the graph's problem cannot be solved by the usual pipeline ('' when it can): it does not export, or it
    writes into its inputs (which a solution, computing fresh outputs, would not do)."""
    from argus.diagnostics import ArgusError

    try:
        cap = capture(path)
    except ArgusError as e:
        return f"[{e.code}] {e.message}"
    mutated = cap.program.graph_signature.user_inputs_to_mutate
    if mutated:
        return f"it writes into its inputs ({', '.join(sorted(mutated.values()))}), which dynamo passes on"
    return ""


@dataclass
class _Solved:
    """One graph's part of the solution: its `solve` result and its solution's text, or why it has none."""

    graph: Graph
    result: Any = None
    text: str = ""
    refused: str = ""


def _sections(text: str) -> tuple[str, str]:
    """(the kernels and their references, the ``forward`` method) of a solution file `emit` wrote."""
    from argus.frontend.emit import LAUNCH

    launch = LAUNCH.rstrip("\n")
    start = text.find(launch)
    end = text.find("\n\n\nclass ModelNew(")
    forward = text.find("    def forward(", max(end, 0))
    if start < 0 or end < 0 or forward < 0 or "def _problem_model(" in text:
        raise FrontendError(
            "SOLVE_EMIT",
            "cannot stitch a graph's solution: its file is not laid out as argus.frontend.emit writes it",
            "a bug in argus: report it with the problem file",
        )
    return text[start + len(launch) : end].strip("\n"), text[forward:].rstrip("\n")


def _renamed(kernels: str, forward: str, prefix: str) -> tuple[str, str]:
    """(`kernels`, `forward`) with every top-level name `kernels` defines (kernels, references, constants)
    prefixed by `prefix`: the graphs' kernels share one file."""
    defined: set[str] = set()
    for stmt in ast.parse(kernels).body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            defined.add(stmt.name)
        elif isinstance(stmt, ast.Assign | ast.AnnAssign):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for target in targets:
                defined |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
    if not defined:
        return kernels, forward
    pattern = re.compile(r"(?<![\w.])(" + "|".join(map(re.escape, sorted(defined, key=len, reverse=True))) + r")(?!\w)")
    return pattern.sub(rf"{prefix}\1", kernels), pattern.sub(rf"{prefix}\1", forward)


def _signature(model_class: type) -> tuple[str, str]:
    """(the parameters of `model_class`'s forward, as a ``def`` writes them after ``self``, without annotations;
    the call that passes them on)."""
    params = list(inspect.signature(model_class.forward).parameters.values())[1:]
    written, passed = [], []
    star = False
    for p in params:
        default = "" if p.default is inspect.Parameter.empty else f"={p.default!r}"
        if p.kind is p.VAR_POSITIONAL:
            written.append(f"*{p.name}")
            passed.append(f"*{p.name}")
            star = True
        elif p.kind is p.VAR_KEYWORD:
            written.append(f"**{p.name}")
            passed.append(f"**{p.name}")
        elif p.kind is p.KEYWORD_ONLY:
            if not star:
                written.append("*")
                star = True
            written.append(f"{p.name}{default}")
            passed.append(f"{p.name}={p.name}")
        else:
            written.append(f"{p.name}{default}")
            passed.append(p.name)
    return ", ".join(written), ", ".join(passed)


def stitch(graphs: GraphCapture, parts: Sequence[_Solved]) -> str:
    """The solution file's text (see the module docstring, step 3)."""
    from argus.frontend.emit import GENERATED_MARK, LAUNCH, STATE

    name = graphs.task.name
    header = [
        f'"""ModelNew for {name}, {GENERATED_MARK} from the graphs torch._dynamo splits its forward into',
        "(torch.export cannot capture it as one). The problem's own Model runs under torch.compile with a",
        "backend that routes each graph dynamo compiles, by its key (argus.frontend.dynamo.graph_key), to the",
        "module solved for it; a graph no key matches (a branch not taken when the problem was captured) runs",
        "in PyTorch: not covered.",
    ]
    if graphs.breaks:
        header += ["", _first_lines(graphs.breaks, 1) + "."]
    header += ["", "Graphs:"]
    for part in parts:
        g = part.graph
        header.append(f"  {g.label} (key {g.key}): {' -> '.join(g.ops()) or 'no operator'}")
        if part.result is None:
            header.append(f"    runs in PyTorch: {part.refused}")
            continue
        for group in part.result.groups:
            header.append(f"    {g.label}_{group['kernel']}: {group['family']} ({' -> '.join(group['ops'])})")
        for u in part.result.uncovered:
            header.append(f"    {g.label}_{u['node']}: not covered: {u['family']} ({u['op']}): {u['reason']}")
    sizes = graphs.task.sizes
    if sizes:
        header += ["", "Captured at " + ", ".join(f"{k}={v!r}" for k, v in sizes.items()) + "."]
    header.append('"""')
    init = _literal(graphs.init_inputs)
    lines = [
        *header,
        "",
        "import torch",
        "",
        "import argus",
        "import argus.lang as T",
        "from argus.frontend.dynamo import Router",
        "",
        f"PROBLEM = {str(graphs.problem.resolve())!r}",
        f"CAPTURED_INIT_INPUTS = {init if init is not None else 'None'}",
        LAUNCH.rstrip("\n"),
        STATE.rstrip("\n"),
    ]
    table = []
    for part in parts:
        g = part.graph
        if part.result is None:
            continue
        kernels, forward = _renamed(*_sections(part.text), f"{g.label}_")
        class_name = f"Graph{g.index}"
        lines += ["", "", f"# graph {g.label}: {' -> '.join(g.ops()) or 'no operator'}"]
        if kernels:
            lines += ["", "", kernels]
        lines += [
            "",
            "",
            f"class {class_name}(torch.nn.Module):",
            f'    """Graph {g.label} (key {g.key}) as argus kernels: its inputs are dynamo\'s, in its order."""',
            "",
            forward,
        ]
        table.append(f"    {g.key!r}: ({g.label!r}, {class_name}, {tuple(g.attributes)!r}),")
    params, passed = _signature(graphs.task.model)
    lines += [
        "",
        "",
        "# graph key -> (label, the module solved for it, the attributes it takes as trailing inputs)",
        "_GRAPHS = {",
        *table,
        "}",
        "",
        "",
        "class ModelNew(torch.nn.Module):",
        f'    """{name} as argus kernels, graph by graph (see the module docstring)."""',
        "",
        "    def __init__(self, *init_inputs):",
        "        super().__init__()",
        "        if CAPTURED_INIT_INPUTS is not None and list(init_inputs) != CAPTURED_INIT_INPUTS:",
        "            raise ValueError(",
        "                f'this solution was generated for init inputs {CAPTURED_INIT_INPUTS}, '",
        "                f'got {list(init_inputs)}'",
        "            )",
        "        # the problem's Model: its parameters, and its Python between the graphs",
        "        self.reference = _problem_model(init_inputs)",
        "        self.router = Router(_GRAPHS)",
        "        compiled = torch.compile(self.reference, backend=self.router, dynamic=False)",
        "        # not a submodule (the reference is one already): its state is the reference's",
        "        object.__setattr__(self, '_compiled', compiled)",
        "",
        f"    def forward(self, {params}):",
        f"        return self._compiled({passed})",
    ]
    text = "\n".join(lines) + "\n"
    if "operator.getitem" in text:
        text = text.replace("import torch\n", "import operator\n\nimport torch\n", 1)
    return text


def solve_graphs(
    problem: Path,
    refused: FrontendError,
    *,
    sizes: Mapping[str, Any] | None = None,
    out: Path | str | None = None,
    judge: bool = True,
    options: Any = None,
    on_step: Any = None,
    tune: Any = None,
    writer: Any = None,
) -> Any:
    """Solve `problem`, which ``torch.export`` refused with `refused`, as dynamo's graphs (see the module
    docstring); the arguments are `argus.frontend.solve.solve`'s, passed to each graph's solve. Returns a
    `SolveResult` whose kernels and uncovered operators are named by graph (``g0_pointwise_0``), with a graph no
    sub-solution serves, and a graph only the probe draws compiled, listed as not covered. `FrontendError`
    ``SOLVE_EXPORT`` when the fallback cannot take the problem (nothing captured, no graph solvable)."""
    import time

    from argus.diagnostics import ArgusError
    from argus.eval.candidates import ModuleCandidate
    from argus.eval.gate import GateOptions, gate_module
    from argus.frontend.solve import SolveResult, default_solution_path, solve

    start = time.perf_counter()
    options = options or GateOptions(trials=5)
    device = options.resolved_device()
    step = on_step or (lambda text: None)
    step("capturing with torch._dynamo (torch.export cannot)")
    graphs = capture_graphs(problem, sizes, refused)
    name = graphs.task.name
    target = Path(out) if out is not None else default_solution_path(problem)
    parts: list[_Solved] = []
    with tempfile.TemporaryDirectory(prefix="argus-graphs-") as directory:
        for g in graphs.graphs:
            if g.refused:
                parts.append(_Solved(g, refused=g.refused))
                continue
            try:
                path = _write_problem(g, name, Path(directory))
            except FrontendError as e:
                parts.append(_Solved(g, refused=e.message))
                continue
            why = _exportable(path)  # checked first: solve's own capture then succeeds, and never falls back here
            if why:
                parts.append(_Solved(g, refused=why))
                continue
            step(f"{g.label}: solving its graph")
            try:
                result = solve(
                    path,
                    out=Path(directory) / f"{g.label}_solution.py",
                    judge=False,
                    options=options,
                    on_step=lambda text, label=g.label: step(f"{label}: {text}"),
                    tune=tune,
                    writer=writer,
                )
            except ArgusError as e:  # this graph stays in PyTorch; the others are still solved
                parts.append(_Solved(g, refused=f"[{e.code}] {e.message}"))
                continue
            parts.append(_Solved(g, result, Path(result.solution).read_text()))
    if all(p.result is None for p in parts):
        why = "; ".join(f"{p.graph.label}: {p.refused}" for p in parts)
        raise _not_captured(refused, f"no graph of the {len(parts)} it captured can be solved ({why})")
    text = stitch(graphs, parts)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    except OSError as e:
        raise FrontendError("SOLVE_WRITE", f"cannot write the solution to {target}: {e}", None) from None

    groups, uncovered, kernels = [], [], []
    for part in parts:
        label = part.graph.label
        if part.result is None:
            uncovered.append(
                {"node": label, "op": f"graph {label}", "family": "graph", "reason": f"runs in PyTorch: {part.refused}"}
            )
            continue
        groups += [{**group, "kernel": f"{label}_{group['kernel']}", "graph": label} for group in part.result.groups]
        uncovered += [{**u, "node": f"{label}_{u['node']}", "graph": label} for u in part.result.uncovered]
        kernels += [dataclasses.replace(k, name=f"{label}_{k.name}") for k in part.result.kernels]
    for key, ops in graphs.unseen:
        uncovered.append(
            {
                "node": f"unseen_{key}",
                "op": f"graph ({ops})",
                "family": "graph",
                "reason": f"a fresh draw of the inputs made torch._dynamo compile a graph (key {key}) the capture's "
                f"{DRAWS} draws did not (another branch, or a value folded into the graph): the solution runs it "
                "in PyTorch",
            }
        )

    gate = None
    not_judged = "" if judge else "--no-judge"
    if judge and device == "cpu" and any(k.skipped for k in kernels):
        not_judged = "a kernel is too large for the interpreter: judge the solution on a GPU (argus kernelbench)"
    elif judge:
        step("judging the solution")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            gate = gate_module(graphs.task, ModuleCandidate(target.name, path=target), options)
    return SolveResult(
        problem=name,
        sizes=dict(graphs.task.sizes),
        groups=groups,
        uncovered=uncovered,
        kernels=kernels,
        solution=str(target),
        gate=gate,
        seconds=time.perf_counter() - start,
        not_judged=not_judged,
        captured=graphs.summary(),
    )
