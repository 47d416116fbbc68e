"""The DSL's tracer stays readable: no module of `argus.lang` is over 800 lines and no function in it is over 100
lines (from its ``def`` to the end of its body, docstring included). A module that grows past the limit is split by
concern (`argus.lang.__init__` lists the modules); a function, into helpers."""

from __future__ import annotations

import ast
import pathlib

import pytest

import argus.lang

LANG = pathlib.Path(argus.lang.__file__).parent
MODULES = sorted(LANG.glob("*.py"))
MAX_MODULE_LINES = 800
MAX_FUNCTION_LINES = 100


def _functions(tree: ast.AST) -> list[tuple[str, int]]:
    """(qualified name, lines) of every function and method in `tree`, nested ones included."""
    out: list[tuple[str, int]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = f"{prefix}{child.name}"
                out.append((name, child.end_lineno - child.lineno + 1))
                visit(child, f"{name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(tree, "")
    return out


def test_the_modules_are_found() -> None:
    names = {p.stem for p in MODULES}
    assert {"decorator", "trace", "tiles", "fragment", "memory", "control"} <= names
    assert "frontend" not in names  # split by concern (issue #18)


@pytest.mark.parametrize("path", MODULES, ids=[p.name for p in MODULES])
def test_no_module_is_over_800_lines(path: pathlib.Path) -> None:
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_MODULE_LINES, f"argus/lang/{path.name} has {lines} lines; split it by concern"


@pytest.mark.parametrize("path", MODULES, ids=[p.name for p in MODULES])
def test_no_function_is_over_100_lines(path: pathlib.Path) -> None:
    long = [(n, k) for n, k in _functions(ast.parse(path.read_text())) if k > MAX_FUNCTION_LINES]
    assert not long, f"argus/lang/{path.name}: {', '.join(f'{n} ({k} lines)' for n, k in long)}"


def test_the_limits_can_fail() -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(100))
    assert _functions(ast.parse(f"class K:\n  def f(self):\n{body}\n"))[0] == ("K.f", 101)
    assert _functions(ast.parse("def g():\n    def h():\n        pass\n")) == [("g", 3), ("g.h", 2)]
