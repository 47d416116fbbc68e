"""The code generator stays a set of small rule modules (issue #18): no module of `argus.backend.cuda.codegen` over
800 lines, no function or method over 100 (from its ``def`` to the end of its body, docstring included), and every
entry of the rule table a function ``rule(cx, statement)`` rather than a method of a stateful emitter."""

from __future__ import annotations

import ast
import inspect
import pathlib

import pytest

import argus.backend.cuda.codegen as codegen
from argus.backend.cuda.codegen.emitter import Emitter

MAX_MODULE_LINES = 800
MAX_FUNCTION_LINES = 100
PACKAGE = pathlib.Path(codegen.__file__).resolve().parent
MODULES = sorted(PACKAGE.glob("*.py"))


def test_the_package_has_modules() -> None:
    assert len(MODULES) >= 10, [m.name for m in MODULES]


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_no_module_is_over_800_lines(path: pathlib.Path) -> None:
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_MODULE_LINES, f"{path.name} has {lines} lines (at most {MAX_MODULE_LINES})"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_no_function_is_over_100_lines(path: pathlib.Path) -> None:
    tree = ast.parse(path.read_text(), filename=str(path))
    long = [
        f"{path.name}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    ]
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines: {long}"


def test_the_measure_counts_def_to_end_of_body() -> None:
    source = 'def f(x):\n    """doc"""\n    y = x\n    return y\n'
    (node,) = ast.parse(source).body
    assert node.end_lineno - node.lineno + 1 == 4


@pytest.mark.parametrize("kind, rule", Emitter.RULES, ids=lambda x: getattr(x, "__name__", str(x)))
def test_every_rule_is_a_function_of_the_context_and_a_statement(kind: type, rule) -> None:
    assert inspect.isfunction(rule), f"the rule for {kind.__name__} is {rule!r}, not a function"
    params = list(inspect.signature(rule).parameters)
    assert params == ["cx", "s"], f"{rule.__module__}.{rule.__name__}{tuple(params)}"
    assert rule.__module__.startswith("argus.backend.cuda.codegen.")
