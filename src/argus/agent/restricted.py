"""The restriction on LLM-generated kernel code, checked on its syntax tree before anything runs it.

Generated code may only be a DSL module: imports of ``argus``, ``argus.lang``, ``argus.layout`` and ``math``
(and ``from __future__ import annotations``); functions (the ``@argus.kernel``), constants, and the DSL's
expressions. It may not name ``os``, ``sys``, ``subprocess``, ``socket``, ``open``, ``eval``, ``exec``,
``compile``, ``__import__``, ``getattr``/``setattr`` and the other built-ins that reach outside the kernel, nor
any attribute or name that starts with an underscore (``__class__``, ``__globals__``, ``_private``), nor an
attribute of ``argus`` other than ``kernel``, ``lang`` and ``layout``. It never runs in the agent's own process:
the gate's worker processes import it (and check it again first), with their time limits.

This is a filter against mistakes and the obvious escapes, not a sandbox proof; the worker process boundary is
what contains a candidate that gets past it.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from argus.agent.arms import AgentError

ALLOWED_MODULES = ("argus", "argus.lang", "argus.layout", "math", "__future__")
ARGUS_ATTRIBUTES = ("kernel", "lang", "layout")
FORBIDDEN_NAMES = frozenset(
    {
        "os", "sys", "subprocess", "socket", "shutil", "pathlib", "importlib", "ctypes", "builtins", "pickle",
        "marshal", "signal", "threading", "multiprocessing", "open", "eval", "exec", "compile", "__import__",
        "getattr", "setattr", "delattr", "globals", "locals", "vars", "dir", "input", "breakpoint", "exit", "quit",
        "memoryview", "help", "type", "object", "super", "classmethod", "staticmethod", "property",
    }
)  # fmt: skip


@dataclass(frozen=True)
class Violation:
    """One reason the code is refused: its line and what it does."""

    line: int
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}"


class RestrictedCodeError(AgentError):
    """Generated code that breaks the restriction (code ``CODER_RESTRICTED``)."""

    def __init__(self, violations: list[Violation]) -> None:
        self.violations = violations
        shown = "; ".join(str(v) for v in violations[:5])
        more = f" (and {len(violations) - 5} more)" if len(violations) > 5 else ""
        super().__init__(
            "CODER_RESTRICTED",
            f"generated code refused: {shown}{more}",
            "only argus, argus.lang, argus.layout and math may be imported; no files, processes, sockets, "
            "eval/exec, or underscore names",
        )


def check_source(source: str) -> list[Violation]:
    """Every violation of the restriction in `source` (empty: it may be imported by a gate worker)."""
    try:
        tree = ast.parse(source)
    except SyntaxError as e:
        return [Violation(e.lineno or 0, f"does not parse: {e.msg}")]
    out: list[Violation] = []
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name not in ALLOWED_MODULES:
                    out.append(Violation(line, f"imports {alias.name}"))
        elif isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            if node.level or module not in ALLOWED_MODULES:
                out.append(Violation(line, f"imports from {module or '.'}"))
            for alias in node.names:
                if alias.name == "*" or alias.name.startswith("_") and module != "__future__":
                    out.append(Violation(line, f"imports {alias.name} from {module}"))
        elif isinstance(node, ast.Name):
            if node.id in FORBIDDEN_NAMES:
                out.append(Violation(line, f"uses {node.id}"))
            elif node.id.startswith("_"):
                out.append(Violation(line, f"uses the underscore name {node.id}"))
        elif isinstance(node, ast.Attribute):
            if node.attr.startswith("_"):
                out.append(Violation(line, f"accesses the attribute {node.attr}"))
            elif isinstance(node.value, ast.Name) and node.value.id == "argus" and node.attr not in ARGUS_ATTRIBUTES:
                out.append(Violation(line, f"uses argus.{node.attr} (only argus.kernel, argus.lang, argus.layout)"))
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            if node.name.startswith("_"):
                out.append(Violation(line, f"defines the underscore name {node.name}"))
            if isinstance(node, ast.AsyncFunctionDef | ast.ClassDef):
                what = "an async function" if isinstance(node, ast.AsyncFunctionDef) else "a class"
                out.append(Violation(line, f"defines {what} {node.name}"))
        elif isinstance(node, ast.Global | ast.Nonlocal):
            out.append(Violation(line, "declares global or nonlocal names"))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and "__" in node.value and line > 1:
            if any(word in node.value for word in ("__import__", "__builtins__", "__globals__", "__class__")):
                out.append(Violation(line, "a string naming an interpreter internal"))
        elif isinstance(node, ast.arg) and node.arg.startswith("_"):
            out.append(Violation(line, f"uses the underscore name {node.arg}"))
    return sorted(set(out), key=lambda v: (v.line, v.message))


def require_restricted(source: str) -> None:
    """Raise `RestrictedCodeError` when `check_source` finds anything."""
    violations = check_source(source)
    if violations:
        raise RestrictedCodeError(violations)


def kernel_functions(source: str) -> list[str]:
    """The names of the ``@argus.kernel`` functions `source` defines, in order."""
    tree = ast.parse(source)
    names = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            for d in node.decorator_list:
                target = d.func if isinstance(d, ast.Call) else d
                if isinstance(target, ast.Attribute) and target.attr == "kernel":
                    names.append(node.name)
                    break
                if isinstance(target, ast.Name) and target.id == "kernel":
                    names.append(node.name)
                    break
    return names


def tag_assertions(source: str) -> int:
    """How many ``T.assert_tag`` calls `source` makes (tag assertions an LLM rewrite may add)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return 0
    return sum(
        1
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "assert_tag"
    )
