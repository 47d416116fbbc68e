"""A kernel's source as one self-contained module: what a reader (the LLM coder, the run store) needs to run it.

`module_source(kernel)` is the ``@argus.kernel`` function's source preceded by what it uses from its module and
from the modules it came from: the module-level constants it reads (``LOG2E = 1.4426950408889634``), the helper
functions and ``@T.macro``s it calls (their own source, with what *they* use, in dependency order), ``import math``
when it uses ``math``, and the argus imports. A kernel's function alone, as the coder was shown it before, did not
run: its softmax read ``LOG2E`` and its GEMMs call the macros of `argus.kernels.gemm`, so a faithful rewrite
failed to trace (``COMPILE_TRACE``).

What cannot be written as source (an object that is neither a literal constant, a module nor a function with
source) is named in a comment at the top, so the reader knows the module is not complete.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
import types
from typing import Any

#: The imports every module starts with (the names a DSL module may use without defining them).
HEADER = "from __future__ import annotations\n\nimport argus\nimport argus.lang as T\nfrom argus.layout import Layout\n"

#: Module-level names the header provides.
PROVIDED = {"argus", "T", "Layout"}

#: Modules a module may import by name (`argus.agent.restricted`'s list, less the argus ones the header has).
IMPORTABLE = {"math"}

_LITERALS = (bool, int, float, str, type(None))

#: The DSL's implementation: what comes from here is imported from `argus.lang` / `argus.layout`, not copied.
DSL_MODULES = ("argus.lang", "argus.layout", "argus.ir")


def _exports(module: str, name: str, value: Any) -> bool:
    import importlib

    return getattr(importlib.import_module(module), name, None) is value


def _literal(value: Any) -> bool:
    if isinstance(value, _LITERALS):
        return not (isinstance(value, float) and value != value)  # NaN has no literal
    if isinstance(value, tuple | list):
        return all(_literal(v) for v in value)
    if isinstance(value, dict):
        return all(_literal(k) and _literal(v) for k, v in value.items())
    return False


def _names(fn: types.FunctionType, *, annotations: bool) -> set[str]:
    """Every name `fn`'s source loads, its decorators and defaults included; its annotations too with
    `annotations` (a kernel's ``T.Tensor[...]`` annotations are evaluated in its module's globals; a helper's are
    not, under ``from __future__ import annotations``)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return set(fn.__code__.co_names)
    kept: set[int] = set()  # the function's own signature's annotations, with `annotations`
    top = tree.body[0] if tree.body and isinstance(tree.body[0], ast.FunctionDef) else None
    if annotations and top is not None:
        a = top.args
        for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]:
            if arg is not None and arg.annotation is not None:
                kept.add(id(arg.annotation))
    skipped: set[int] = set()
    for node in ast.walk(tree):
        for hint in (getattr(node, "annotation", None), getattr(node, "returns", None)):
            if isinstance(hint, ast.AST) and id(hint) not in kept:
                skipped |= {id(n) for n in ast.walk(hint)}
    return {
        n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and id(n) not in skipped
    }


def _function_of(value: Any) -> Any:
    """The Python function behind `value`: itself, or an ``@argus.kernel``'s ``fn``; None otherwise."""
    fn = getattr(value, "fn", value)
    return fn if isinstance(fn, types.FunctionType) else None


def module_source(kernel: Any) -> str:
    """`kernel` (an ``@argus.kernel``) and everything it uses, as one module's source (see the module docstring)."""
    root = _function_of(kernel)
    if root is None:
        raise TypeError(f"{kernel!r} is not an @argus.kernel or a Python function")
    constants: dict[str, str] = {}
    imports: set[str] = set()
    from_imports: set[tuple[str, str]] = set()
    functions: list[tuple[str, str]] = []  # (name, source), dependencies first
    missing: dict[str, str] = {}
    seen: set[int] = set()

    def visit(fn: types.FunctionType) -> None:
        seen.add(id(fn))
        scope = fn.__globals__
        for name in sorted(_names(fn, annotations=fn is root)):
            if name in PROVIDED or name not in scope:
                continue  # a builtin, an attribute name, or what the header imports
            value = scope[name]
            if isinstance(value, types.ModuleType):
                if value.__name__ in IMPORTABLE and name == value.__name__:
                    imports.add(name)
                elif not value.__name__.startswith("argus"):
                    missing.setdefault(name, f"the module {value.__name__}")
                continue
            if _literal(value):
                text = f"{name} = {value!r}"
                if constants.setdefault(name, text) != text:
                    missing.setdefault(name, "two different constants of this name in the modules it came from")
                continue
            helper = _function_of(value)
            module = getattr(value, "__module__", "") or ""
            if module.startswith(DSL_MODULES):  # the DSL's own: imported from its public modules, never copied
                public = next((m for m in ("argus.lang", "argus.layout") if _exports(m, name, value)), None)
                if public is not None:
                    from_imports.add((public, name))
                else:
                    missing.setdefault(name, f"an internal of {module}")
                continue
            if helper is None:
                missing.setdefault(name, f"a {type(value).__name__} from {module or '?'}")
                continue
            if id(helper) in seen:
                continue
            visit(helper)
            try:
                text = inspect.getsource(helper)
            except (OSError, TypeError):
                missing.setdefault(name, "a function whose source is not available")
                continue
            if any(n == name for n, _ in functions):
                missing.setdefault(name, "two different functions of this name in the modules it came from")
                continue
            functions.append((name, inspect.cleandoc("\n" + text) if text.startswith((" ", "\t")) else text))

    visit(root)
    try:
        body = inspect.getsource(root)
    except (OSError, TypeError):
        return HEADER + f"\n# the source of {root.__name__} is not available\n"
    parts = [
        HEADER
        + "".join(f"import {m}\n" for m in sorted(imports))
        + "".join(f"from {m} import {n}\n" for m, n in sorted(from_imports))
    ]
    if missing:
        parts.append(
            "# not shown (not a literal constant, a function with source or an importable module):\n"
            + "".join(f"#   {n}: {why}\n" for n, why in sorted(missing.items()))
        )
    if constants:
        parts.append("\n".join(constants[n] for n in sorted(constants)) + "\n")
    parts += [text.rstrip() + "\n" for _, text in functions]
    parts.append(body.rstrip() + "\n")
    return "\n\n".join(p.rstrip("\n") + "\n" for p in parts)
