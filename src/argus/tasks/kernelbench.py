"""KernelBench's problems as tasks: discover and load them in KernelBench's format, and find their solution files.
The runner that gates solutions (KernelBench's protocol plus argus's defences, fast_p) is `argus.eval.kernelbench`.

A problem is a Python file defining ``Model`` (an ``nn.Module``), ``get_inputs()`` and ``get_init_inputs()``;
problems live in ``level1/``, ``level2/``, ... of a problems directory, named ``<id>_<Name>.py``. A solution is
a file defining ``ModelNew`` with the same constructor and ``forward`` signature. The problems are data: argus
reads them from a directory (`default_kernelbench_dir`: ``$ARGUS_KERNELBENCH_DIR``, else ``../shared/kernelbench``
beside the repository) and never copies them.

Sizes: KernelBench's sizes are for a GPU (a level-1 softmax input is 6 GiB). `load_problem` overrides
module-level assignments by name (``sizes={"batch_size": 8, "dim": 512}``), rewriting the statement so that
dependent assignments (``input_shape = (num_classes,)``) and ``get_inputs`` see the new value. `CPU_SAMPLE` is a
curated set of level-1 and level-2 problems with sizes small enough for a 2-core CPU; the full sweep at the
original sizes is a GPU benchmark.
"""

from __future__ import annotations

import ast
import itertools
import os
import sys
import types
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from argus.tasks.base import ModuleTask, TaskError

ENV_DIR = "ARGUS_KERNELBENCH_DIR"

#: The environment variable a judge sets, in the process where a solution runs, to the problem file the solution is
#: judged against (a copy of it there): a solution that rebuilds the problem's own Model to take its parameters
#: (`argus solve`'s, `argus.frontend.emit`) finds it there on any machine, not only at the path it was written at.
PROBLEM_ENV = "ARGUS_PROBLEM"

#: A sample of problems with sizes small enough for a CPU: ``{level: {problem id: size overrides}}``.
CPU_SAMPLE: dict[int, dict[int, dict[str, Any]]] = {
    1: {
        1: {"N": 64},
        4: {"M": 32, "K": 256},
        13: {"N": 48},
        14: {"N": 48},
        19: {"batch_size": 8, "dim": 256},
        23: {"batch_size": 8, "dim": 512},
        24: {"batch_size": 8, "dim": 512},
        26: {"batch_size": 8, "dim": 256},
        33: {"batch_size": 4, "features": 8, "dim1": 16, "dim2": 16},
        35: {"batch_size": 4, "features": 16, "num_groups": 4, "dim1": 8, "dim2": 8},
        42: {"batch_size": 2, "channels": 4, "height": 32, "width": 32},
        47: {"batch_size": 4, "dim1": 64, "dim2": 32},
        51: {"batch_size": 4, "dim1": 64, "dim2": 32},
        55: {"batch_size": 2, "height": 16, "width": 32, "in_channels": 4, "out_channels": 8},
        89: {"batch_size": 8, "input_shape": (256,)},
        93: {"batch_size": 8, "input_shape": (256,)},
        95: {"batch_size": 32, "num_classes": 16},
        97: {"batch_size": 2, "num_heads": 2, "sequence_length": 32, "embedding_dimension": 16},
        98: {"batch_size": 16, "input_shape": (64,)},
        100: {"batch_size": 32, "input_shape": (32,)},
    },
    2: {
        23: {"batch_size": 2, "in_channels": 3, "out_channels": 8, "D": 6, "H": 8, "W": 8, "num_groups": 4},
        33: {"batch_size": 16, "in_features": 32, "out_features": 64},
        37: {"batch_size": 8, "in_features": 32, "out_features": 64, "num_groups": 8},
        40: {"batch_size": 8, "in_features": 32, "out_features": 32},
        99: {"batch_size": 8, "in_features": 32, "out_features": 64},
        100: {"batch_size": 2, "in_channels": 4, "out_channels": 4, "depth": 4, "height": 8, "width": 8},
    },
}


def default_kernelbench_dir() -> Path:
    """``$ARGUS_KERNELBENCH_DIR`` if set; else the first existing ``../shared/kernelbench`` beside the repository
    this package was installed from (editable installs) or beside the working directory; else the former path
    (which then does not exist, and the caller says so)."""
    env = os.environ.get(ENV_DIR)
    if env:
        return Path(env).expanduser()
    here = Path(__file__).resolve()
    candidates = [p.parent / "shared" / "kernelbench" for p in here.parents if (p / "pyproject.toml").is_file()]
    candidates += [Path.cwd().parent / "shared" / "kernelbench", Path.cwd() / "shared" / "kernelbench"]
    for c in candidates:
        if c.is_dir():
            return c
    return candidates[0]


@dataclass(frozen=True)
class ProblemFile:
    """One KernelBench problem file: its level, id, name and path."""

    level: int
    problem_id: int
    name: str
    path: Path

    @property
    def key(self) -> str:
        return f"level{self.level}/{self.problem_id}_{self.name}"


def discover(problems_dir: Path | str, level: int, ids: Iterable[int] | None = None) -> list[ProblemFile]:
    """The problems of `level` in `problems_dir` (optionally only those with the given ids), by id."""
    root = Path(problems_dir)
    directory = root / f"level{level}"
    if not directory.is_dir():
        raise TaskError(
            "TASK_KERNELBENCH_DIR",
            f"no level{level}/ directory in {root}",
            f"point --problems (or ${ENV_DIR}) at a KernelBench problems directory",
        )
    wanted = set(ids) if ids is not None else None
    out = []
    for path in directory.glob("*.py"):
        head, _, rest = path.stem.partition("_")
        if not head.isdigit():
            continue
        pid = int(head)
        if wanted is None or pid in wanted:
            out.append(ProblemFile(level, pid, rest, path))
    out.sort(key=lambda p: p.problem_id)
    if wanted is not None:
        missing = sorted(wanted - {p.problem_id for p in out})
        if missing:
            raise TaskError("TASK_KERNELBENCH_MISSING", f"level {level} has no problem(s) {missing} in {root}")
    return out


def module_assignments(source: str) -> list[str]:
    """The names bound by module-level assignments in `source`, in order."""
    names: list[str] = []
    for node in ast.parse(source).body:
        for name in _bound_names(node):
            if name not in names:
                names.append(name)
    return names


def _bound_names(node: ast.stmt) -> list[str]:
    targets: list[ast.expr] = []
    if isinstance(node, ast.Assign):
        targets = list(node.targets)
    elif isinstance(node, ast.AnnAssign | ast.AugAssign):
        targets = [node.target]
    out: list[str] = []
    for t in targets:
        out += [n.id for n in ast.walk(t) if isinstance(n, ast.Name)]
    return out


def _override(source: str, sizes: Mapping[str, Any], strict: bool, filename: str) -> tuple[ast.Module, dict[str, Any]]:
    tree = ast.parse(source, filename=filename)
    bound = module_assignments(source)
    unknown = [n for n in sizes if n not in bound]
    if unknown and strict:
        raise TaskError(
            "TASK_SIZE_UNKNOWN",
            f"{filename} has no module-level {', '.join(map(repr, unknown))} to override",
            f"its module-level names: {', '.join(bound)}",
        )
    applied = {k: v for k, v in sizes.items() if k in bound}
    body: list[ast.stmt] = []
    for node in tree.body:
        body.append(node)
        for name in _bound_names(node):
            if name in applied:
                value = ast.parse(repr(applied[name]), mode="eval").body
                new = ast.Assign(targets=[ast.Name(name, ast.Store())], value=value)
                body.append(ast.copy_location(new, node))
    tree.body = body
    ast.fix_missing_locations(tree)
    return tree, applied


_counter = itertools.count()


def load_problem(path: Path | str, sizes: Mapping[str, Any] | None = None, *, strict: bool = True) -> ModuleTask:
    """Load a KernelBench problem file as a `ModuleTask`, with module-level `sizes` overridden (see the module
    docstring). `strict`: a name in `sizes` the file does not assign is an error (``TASK_SIZE_UNKNOWN``);
    otherwise it is ignored and `ModuleTask.sizes` lists only the overrides applied."""
    path = Path(path)
    source = path.read_text()
    tree, applied = _override(source, dict(sizes or {}), strict, str(path))
    name = f"argus_kernelbench_{''.join(c if c.isalnum() else '_' for c in path.stem)}_{next(_counter)}"
    module = types.ModuleType(name)
    module.__file__ = str(path)
    sys.modules[name] = module
    try:
        exec(compile(tree, str(path), "exec"), module.__dict__)  # noqa: S102 - the problem file is the task definition
    except Exception as err:  # noqa: BLE001 - the user's file: a missing import or a bug in it is their input's error
        sys.modules.pop(name, None)
        raise _load_error(path, err) from None
    missing = [a for a in ("Model", "get_inputs", "get_init_inputs") if not hasattr(module, a)]
    if missing:
        raise TaskError("TASK_KERNELBENCH_FORMAT", f"{path} defines no {', '.join(missing)}")
    level = path.parent.name.removeprefix("level")
    return ModuleTask(
        name=f"level{level}/{path.stem}" if level.isdigit() else path.stem,
        model=module.Model,
        get_inputs=module.get_inputs,
        get_init_inputs=module.get_init_inputs,
        path=path,
        sizes=applied,
    )


def _load_error(path: Path, err: BaseException) -> TaskError:
    """`TaskError` ``TASK_PROBLEM_LOAD`` for problem file `path` raising `err` while it loads: the exception and the
    file's line where it was raised (a module it imports that is not installed, a name it misspells)."""
    import traceback

    line = next((f.lineno for f in reversed(traceback.extract_tb(err.__traceback__)) if f.filename == str(path)), None)
    where = f" (line {line})" if line else ""
    if isinstance(err, ModuleNotFoundError):
        hint = f"install {err.name!r} in this environment (the problem imports it), or remove the import"
    else:
        hint = "run the problem file with python to see the error, and fix it"
    return TaskError("TASK_PROBLEM_LOAD", f"{path} does not load{where}: {type(err).__name__}: {err}", hint)


def find_solution(solutions_dir: Path | str, problem: ProblemFile) -> Path | None:
    """The solution file for `problem` in `solutions_dir`: the problem's own file name, or
    ``level_<L>_problem_<id>_*.py`` (KernelBench's run layout), or ``<id>_*.py``, looked for in the directory
    and in its ``level<L>/`` subdirectory."""
    root = Path(solutions_dir)
    for d in (root / f"level{problem.level}", root):
        if not d.is_dir():
            continue
        exact = d / problem.path.name
        if exact.is_file():
            return exact
        for pattern in (f"level_{problem.level}_problem_{problem.problem_id}_*.py", f"{problem.problem_id}_*.py"):
            hits = sorted(d.glob(pattern))
            if hits:
                return hits[0]
    return None
