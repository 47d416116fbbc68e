"""The restriction on LLM-generated kernel code: an allowlist over its syntax tree, checked before a gate worker
imports it.

This is a first filter. It refuses the mistakes and the known ways out of a DSL module so that they fail early with
a message the LLM can act on; it is not the defence. The defence is the process that runs the candidate, the sandbox
of `argus.eval.sandbox`: generated code is never imported in the agent's own process, and a candidate that gets past
this filter is contained there.

What a generated module may contain (everything else is a `Violation`):

* **Size.** At most `MAX_SOURCE_CHARS` characters and `MAX_LINES` lines, checked before parsing; a syntax tree at
  most `MAX_AST_DEPTH` nodes deep. Input the parser cannot build a tree for (a reply of thousands of ``(`` or
  ``-``) is a violation, never a `RecursionError` or `MemoryError`.
* **Imports.** ``import argus``, ``import argus.lang [as T]``, ``import argus.layout [as L]``, ``import math``;
  ``from argus import kernel, lang, layout``; ``from argus.lang | argus.layout | math import <public name>``;
  ``from __future__ import <feature>``. No other module, no relative import, no ``*``.
* **Modules.** A name bound to a module by an import (``T``, ``argus``, ``math``, ``L``) may only be the root of an
  attribute chain, and the attribute after a module must be one of its public names that is not itself a module:
  ``argus`` offers ``kernel``, ``lang`` and ``layout``; ``argus.lang`` its ``__all__`` (not ``T.errors``,
  ``T.decorator``, ...); ``argus.layout`` its ``__all__`` (not ``argus.layout.arith``, ...); ``math`` its public
  functions and constants. A chain that ends at a module (``x = T``, ``f(argus.lang)``) is refused. The sets are
  read from the modules at check time.
* **Attributes.** Any attribute of a value (``acc.shape``, ``A.tile(...)``) except one that starts with ``_`` or
  is in `FORBIDDEN_ATTRIBUTES` / starts with a prefix of `FORBIDDEN_ATTRIBUTE_PREFIXES`: frame, code, generator,
  coroutine, traceback and function internals (``gi_frame``, ``f_globals``, ``tb_frame``, ``co_consts``, ...),
  ``mro``, the formatting methods (``format``, ``format_map``), and import machinery and module names. No
  attribute is assigned (``T.copy = ...``, ``acc.shape = ...``), and nothing taken from a module is assigned into
  (``T.SOME_TABLE[k] = ...``): a gate worker may check more than one candidate.
* **Names.** No name that starts with ``_`` (the throwaway ``_`` alone is allowed: ``for _ in T.unroll(3):``;
  attributes get no such exception). A name that resolves to a built-in must be one of `ALLOWED_BUILTINS`;
  any other built-in (``open``, ``getattr``, ``type``, ``vars``, ``chr``, ``print``, ...) may be used only where a
  function, lambda or comprehension of the file binds that name itself (a parameter or local). A module-level
  binding does not count: a module-level use can run before it.
* **Statements and expressions.** Functions, lambdas, assignments, ``for``/``while``/``if``, ``try``/``except``,
  ``raise``, ``assert``, ``return``, comprehensions (list, set, dict) and the DSL's expressions. ``with`` only over a
  call of the DSL (``with T.grid(...) as (bm, bn):``); decorators only from the DSL (``@argus.kernel``,
  ``@argus.kernel(...)``, ``@T.macro``). No classes, ``global``/``nonlocal``, ``del``, ``async``/``await``,
  ``yield``, generator expressions (a generator exposes its frame), ``match``, ``except*`` or ``type`` aliases.
* **Strings.** No string constant (any line, docstrings included) that contains ``__``, and none that is a format
  template whose field reaches an attribute or an index (``"{0.gi_frame}"``, ``"{x[0]}"``); no bytes literals.
  ``str.format`` is unreachable (``format`` is a forbidden attribute); f-string fields are expressions and are
  checked like any other.

What the rules buy together: strings built from pieces (``"_" * 2 + "import" + "_" * 2``, ``chr(95)``) name
nothing, because nothing turns a string into an attribute or a module (no ``getattr``, ``vars``, ``__import__``,
``str.format``, imports outside the list).
"""

from __future__ import annotations
import __future__

import ast
import builtins
import math
import string
import types
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import argus.lang
import argus.layout
from argus.agent.errors import AgentError

MAX_SOURCE_CHARS = 200_000
MAX_LINES = 5_000
MAX_AST_DEPTH = 100

ALLOWED_MODULES = ("argus", "argus.lang", "argus.layout", "math", "__future__")
ARGUS_ATTRIBUTES = ("kernel", "lang", "layout")

# The built-ins a DSL module may name: types and pure functions over values, and the exceptions a kernel raises.
# Not here, on purpose: open, eval, exec, compile, __import__, getattr/setattr/delattr/hasattr, globals, locals,
# vars, dir, type, object, super, classmethod, staticmethod, property, memoryview, bytes, bytearray, chr, ord,
# format, input, print (a kernel module has no output of its own), breakpoint, help, exit, quit, iter, next, id,
# hash, BaseException.
ALLOWED_BUILTINS = frozenset(
    {
        "abs", "all", "any", "bool", "dict", "divmod", "enumerate", "filter", "float", "frozenset", "int",
        "isinstance", "len", "list", "map", "max", "min", "pow", "range", "repr", "reversed", "round", "set", "slice",
        "sorted", "str", "sum", "tuple", "zip",
        "ArithmeticError", "AssertionError", "Exception", "IndexError", "KeyError", "NotImplementedError",
        "RuntimeError", "TypeError", "ValueError", "ZeroDivisionError",
    }
)  # fmt: skip

# Attributes no DSL value needs: introspection of frames, code, generators, coroutines, tracebacks and functions;
# the formatting methods (format fields reach attributes without an attribute node); import machinery; and the
# names of modules and functions that reach outside, in case some value holds one.
FORBIDDEN_ATTRIBUTES = frozenset(
    {
        "gi_frame", "gi_code", "gi_yieldfrom", "gi_running", "gi_suspended",
        "cr_frame", "cr_code", "cr_await", "cr_origin", "cr_running", "cr_suspended",
        "ag_frame", "ag_code", "ag_await", "ag_running",
        "f_globals", "f_locals", "f_builtins", "f_back", "f_code", "f_trace", "f_lasti", "f_lineno",
        "tb_frame", "tb_next", "tb_lasti", "tb_lineno", "with_traceback",
        "co_code", "co_consts", "co_names", "co_varnames", "co_cellvars", "co_freevars", "co_filename",
        "func_globals", "func_code", "func_closure", "func_defaults", "func_dict", "im_func", "im_self", "im_class",
        "cell_contents", "gen", "mro", "format", "format_map", "vformat",
        "modules", "builtins", "import_module", "load_module", "exec_module", "find_spec", "find_module",
        "get_source", "get_code", "get_data", "loader",
        "os", "sys", "subprocess", "importlib", "inspect", "ctypes", "pickle", "marshal", "socket", "shutil",
        "system", "popen", "spawn", "attrgetter", "methodcaller", "get_referrers", "get_referents", "get_objects",
        "eval", "exec", "compile", "getattr", "setattr", "delattr", "globals", "locals", "vars",
    }
)  # fmt: skip
FORBIDDEN_ATTRIBUTE_PREFIXES = ("_", "gi_", "cr_", "ag_", "f_", "tb_", "co_", "func_", "im_")

# The node types a DSL module is made of. Operators, comparison operators and expression contexts are allowed as
# a group (`ast.operator`, `ast.unaryop`, `ast.cmpop`, `ast.boolop`, `ast.expr_context`).
_ALLOWED_NODES: tuple[type[ast.AST], ...] = (
    ast.Module, ast.FunctionDef, ast.Return, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For, ast.While, ast.If,
    ast.With, ast.Raise, ast.Try, ast.Assert, ast.Import, ast.ImportFrom, ast.Expr, ast.Pass, ast.Break,
    ast.Continue,
    ast.BoolOp, ast.NamedExpr, ast.BinOp, ast.UnaryOp, ast.Lambda, ast.IfExp, ast.Dict, ast.Set, ast.ListComp,
    ast.SetComp, ast.DictComp, ast.Call, ast.Compare, ast.Constant, ast.JoinedStr, ast.FormattedValue,
    ast.Attribute, ast.Subscript, ast.Starred, ast.Name, ast.List, ast.Tuple, ast.Slice,
    ast.comprehension, ast.arguments, ast.arg, ast.keyword, ast.alias, ast.withitem, ast.ExceptHandler,
    ast.operator, ast.unaryop, ast.cmpop, ast.boolop, ast.expr_context,
)  # fmt: skip
_REFUSED_NODES: dict[type[ast.AST], str] = {
    ast.ClassDef: "defines a class",
    ast.AsyncFunctionDef: "defines an async function",
    ast.Global: "declares global or nonlocal names",
    ast.Nonlocal: "declares global or nonlocal names",
    ast.Delete: "deletes names with del",
    ast.GeneratorExp: "uses a generator expression (a generator exposes its frame; use a list comprehension)",
    ast.Yield: "uses yield (a generator exposes its frame)",
    ast.YieldFrom: "uses yield from (a generator exposes its frame)",
    ast.Await: "uses await",
    ast.AsyncFor: "uses async for",
    ast.AsyncWith: "uses async with",
    ast.Match: "uses a match statement",
    ast.TryStar: "uses except*",
}
_REFUSED_TYPES = tuple(_REFUSED_NODES)
_KNOWN_NODES = (*_ALLOWED_NODES, ast.match_case, ast.pattern)  # parts of a refused `match` are reported as the match
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_BUILTIN_NAMES = frozenset(dir(builtins))


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
            "write a DSL module: import only argus, argus.lang, argus.layout and math, use only the public DSL "
            "names after T., and no files, processes, eval/exec/getattr, underscore names, classes or generators",
        )


def check_source(source: str) -> list[Violation]:
    """Every violation of the allowlist in `source`, sorted by line (empty: a gate worker may import it).

    Never raises for any `str`: input too large, too deep or unparsable is itself a violation."""
    try:
        tree = _parse(source)
    except _OverLimit as e:
        return [Violation(e.lineno or 0, e.msg)]
    except SyntaxError as e:
        return [Violation(e.lineno or 0, f"does not parse: {e.msg}")]
    checker = _Checker(_module_surfaces(), tree)
    try:
        checker.check(tree)
    except (RecursionError, MemoryError):  # not expected within the depth limit; refused all the same
        return [Violation(checker.line, "the code is too complex to check")]
    return sorted(set(checker.violations), key=lambda v: (v.line, v.message))


def require_restricted(source: str) -> None:
    """Raise `RestrictedCodeError` when `check_source` finds anything."""
    violations = check_source(source)
    if violations:
        raise RestrictedCodeError(violations)


def kernel_functions(source: str) -> list[str]:
    """The names of the ``@argus.kernel`` functions `source` defines, in order; `SyntaxError` when `source` does
    not parse or is over the size and depth limits."""
    tree = _parse(source)
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
    """How many ``T.assert_tag`` calls `source` makes (tag assertions an LLM rewrite may add); 0 when it does not
    parse."""
    try:
        tree = _parse(source)
    except SyntaxError:
        return 0
    return sum(
        1
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "assert_tag"
    )


# --- parsing within limits --------------------------------------------------------------------------------------


class _OverLimit(SyntaxError):
    """Source over a size or depth limit (a `SyntaxError`, so that callers that catch those refuse it too)."""

    def __init__(self, message: str, line: int = 0) -> None:
        super().__init__(message, ("<generated>", line, 0, ""))


def _parse(source: str) -> ast.Module:
    """`ast.parse(source)` within the size and depth limits; every failure is a `SyntaxError` (`_OverLimit` for
    the limits and for the parser's own `RecursionError` and `MemoryError`)."""
    if len(source) > MAX_SOURCE_CHARS:
        raise _OverLimit(f"the source is {len(source)} characters, over the limit of {MAX_SOURCE_CHARS}")
    lines = source.count("\n") + 1
    if lines > MAX_LINES:
        raise _OverLimit(f"the source has {lines} lines, over the limit of {MAX_LINES}")
    try:
        tree = ast.parse(source)
    except (RecursionError, MemoryError):
        raise _OverLimit("the source is nested too deeply for the parser") from None
    except ValueError as e:  # null bytes
        raise SyntaxError(str(e), ("<generated>", 0, 0, "")) from None
    depth, line = _depth(tree)
    if depth > MAX_AST_DEPTH:
        raise _OverLimit(f"the code nests {depth} levels deep, over the limit of {MAX_AST_DEPTH}", line)
    return tree


def _depth(tree: ast.AST) -> tuple[int, int]:
    """The depth of `tree` and a line at that depth, computed without recursion."""
    deepest, at = 0, 0
    stack: list[tuple[ast.AST, int, int]] = [(tree, 1, 0)]
    while stack:
        node, depth, line = stack.pop()
        line = getattr(node, "lineno", line)
        if depth > deepest:
            deepest, at = depth, line
            if deepest > MAX_AST_DEPTH:
                break
        stack.extend((child, depth + 1, line) for child in ast.iter_child_nodes(node))
    return deepest, at


# --- the modules generated code may reach -------------------------------------------------------------------------


@dataclass(frozen=True)
class _Surface:
    """The attributes a generated module may take from one allowed module: name -> the module it is (an allowed
    one, for ``argus.lang`` and ``argus.layout``), or None for a value."""

    module: str
    names: dict[str, str | None]
    submodules: frozenset[str] = frozenset()


def _public_surface(module: types.ModuleType) -> _Surface:
    """`module`'s ``__all__`` (else its public names), less every name whose value is a module."""
    names: Iterable[str] = getattr(module, "__all__", None) or [n for n in dir(module) if not n.startswith("_")]
    inside = {n for n in dir(module) if isinstance(getattr(module, n), types.ModuleType)}
    values = {n: None for n in names if not n.startswith("_") and n not in inside}
    return _Surface(module.__name__, values, frozenset(inside))


def _module_surfaces() -> dict[str, _Surface]:
    """The surface of each importable module, read from the modules now."""
    return {
        "argus": _Surface("argus", {a: (None if a == "kernel" else f"argus.{a}") for a in ARGUS_ATTRIBUTES}),
        "argus.lang": _public_surface(argus.lang),
        "argus.layout": _public_surface(argus.layout),
        "math": _public_surface(math),
        "__future__": _Surface("__future__", {n: None for n in __future__.all_feature_names}),
    }


# --- the checker ----------------------------------------------------------------------------------------------------


def _forbidden_attribute(name: str) -> bool:
    return name in FORBIDDEN_ATTRIBUTES or name.startswith(FORBIDDEN_ATTRIBUTE_PREFIXES)


def _underscore(name: str | None) -> bool:
    """Whether `name` starts with an underscore; the throwaway name ``_`` alone does not count."""
    return name is not None and name.startswith("_") and name != "_"


def _format_fields(text: str, levels: int = 2) -> Iterator[str]:
    """The field names of `text` read as a ``str.format`` template, those nested in its format specs included
    (``str.format`` itself nests at most two levels); none when it is not a template."""
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError:
        return
    for _, field, spec, _ in parsed:
        if field:
            yield field
        if spec and "{" in spec and levels > 1:
            yield from _format_fields(spec, levels - 1)


def _arg_names(args: ast.arguments) -> set[str]:
    every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
    return {a.arg for a in every if a is not None}


def _scope_bindings(roots: Iterable[ast.AST]) -> set[str]:
    """The names a function scope binds in the statements or expression `roots`: stores, imports, ``except ... as``
    names, nested function names, walrus targets. Nested scopes are not entered, except for the parts Python
    evaluates in this scope (defaults, decorators, annotations, a comprehension's first iterable); names a
    comprehension binds are its own."""
    bound: set[str] = set()
    stack = list(roots)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            if not isinstance(node, ast.Lambda):
                bound.add(node.name)
                stack += node.decorator_list
                stack += [a.annotation for a in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]]
                stack += [node.returns]
            stack += [*node.args.defaults, *node.args.kw_defaults]
        elif isinstance(node, _COMPREHENSIONS):
            stack.append(node.generators[0].iter)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            bound.update((a.asname or a.name.split(".")[0]) for a in node.names)
        elif isinstance(node, ast.ExceptHandler):
            if node.name:
                bound.add(node.name)
            stack += ast.iter_child_nodes(node)
        elif node is not None:
            stack += ast.iter_child_nodes(node)
    return bound


class _Checker:
    """One pass over a parsed module, collecting `Violation`s. The scope stack holds, per enclosing function,
    lambda or comprehension, the names it binds (the module scope counts as binding nothing)."""

    def __init__(self, surfaces: dict[str, _Surface], tree: ast.Module) -> None:
        self.surfaces = surfaces
        self.violations: list[Violation] = []
        self.scopes: list[set[str]] = []
        self.line = 0  # the line of the innermost node being checked that has one
        self.modules: dict[str, set[str]] = {}  # a name -> the modules imports bind it to
        self.imported: set[str] = set()  # names bound by `from <allowed> import <value>`
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    bound = a.asname or a.name.split(".")[0]
                    self.modules.setdefault(bound, set()).add(a.name if a.asname else a.name.split(".")[0])
            elif isinstance(node, ast.ImportFrom) and not node.level:
                surface = surfaces.get(node.module or "")
                for a in node.names:
                    target = surface.names.get(a.name) if surface else None
                    if target is not None:
                        self.modules.setdefault(a.asname or a.name, set()).add(target)
                    else:
                        self.imported.add(a.asname or a.name)

    def add(self, node: ast.AST, message: str) -> None:
        self.violations.append(Violation(getattr(node, "lineno", self.line), message))

    # the module a name or attribute chain is, if any

    def module_of(self, node: ast.expr) -> str | None:
        """The allowed module `node` evaluates to (``T`` -> ``argus.lang``, ``argus.layout``), else None."""
        if isinstance(node, ast.Name):
            bound = self.modules.get(node.id)
            return next(iter(bound)) if bound and len(bound) == 1 else None
        if isinstance(node, ast.Attribute):
            parent = self.module_of(node.value)
            surface = self.surfaces.get(parent) if parent else None
            return surface.names.get(node.attr) if surface else None
        return None

    def rooted_at_module(self, node: ast.expr) -> bool:
        """Whether `node` is a DSL callable: an attribute chain from an imported module, or a name imported from
        an allowed module."""
        while isinstance(node, ast.Attribute):
            node = node.value
        return isinstance(node, ast.Name) and (node.id in self.modules or node.id in self.imported)

    # the walk

    def check(self, node: ast.AST, *, root: bool = False) -> None:
        """Check `node` and its children; `root`: `node` is the object of an attribute access."""
        outer = self.line
        self.line = getattr(node, "lineno", outer)
        if isinstance(node, _REFUSED_TYPES):
            name = getattr(node, "name", None)
            self.add(node, _REFUSED_NODES[type(node)] + (f" {name}" if name else ""))
        elif not isinstance(node, _KNOWN_NODES):
            self.add(node, f"uses {type(node).__name__}, which a DSL module does not need")
        visit = getattr(self, f"visit_{type(node).__name__}", None)
        if visit is not None:
            visit(node, root)
        else:
            self.children(node)
        self.line = outer

    def children(self, node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            self.check(child)

    def name(self, node: ast.AST, name: str | None, what: str = "defines the underscore name") -> None:
        if _underscore(name):
            self.add(node, f"{what} {name}")

    # imports

    def visit_Import(self, node: ast.Import, root: bool) -> None:
        for a in node.names:
            if a.name not in ALLOWED_MODULES or a.name == "__future__":
                self.add(node, f"imports {a.name}")
            self.name(node, a.asname)
            self.module_alias(node, a.asname or a.name.split(".")[0])

    def module_alias(self, node: ast.AST, bound: str) -> None:
        """An import binds `bound`: to one module at most, and never under a built-in's name (a use before the
        import runs would reach the built-in)."""
        if len(self.modules.get(bound, ())) > 1:
            self.add(node, f"binds {bound} to more than one module")
        if bound in self.modules and bound in _BUILTIN_NAMES:
            self.add(node, f"binds a module to the built-in name {bound}")

    def visit_ImportFrom(self, node: ast.ImportFrom, root: bool) -> None:
        module = "." * node.level + (node.module or "")
        surface = None if node.level else self.surfaces.get(module)
        if surface is None:
            self.add(node, f"imports from {module or '.'}")
            return
        for a in node.names:
            if a.name == "*":
                self.add(node, f"imports * from {module}")
            elif a.name not in surface.names:
                self.add(node, f"imports {a.name} from {module}, which is not one of its public DSL names")
            elif surface.names[a.name] is not None:
                self.module_alias(node, a.asname or a.name)
            self.name(node, a.asname)

    # names and attributes

    def visit_Name(self, node: ast.Name, root: bool) -> None:
        if _underscore(node.id):
            self.add(node, f"uses {node.id}: names starting with an underscore are not allowed")
            return
        if not isinstance(node.ctx, ast.Load):
            return
        if node.id in self.modules and not root:
            self.add(node, f"uses the module {node.id} as a value (only {node.id}.<name>-style access is allowed)")
        elif (
            node.id in _BUILTIN_NAMES
            and node.id not in ALLOWED_BUILTINS
            and node.id not in self.modules
            and not any(node.id in scope for scope in self.scopes)
        ):
            self.add(node, f"uses {node.id}, a built-in outside the allowlist")

    def visit_Attribute(self, node: ast.Attribute, root: bool) -> None:
        if _forbidden_attribute(node.attr):
            self.add(node, f"accesses the attribute {node.attr}")
        if not isinstance(node.ctx, ast.Load):
            self.add(node, f"assigns to the attribute {ast.unparse(node)} (attributes are read-only in a DSL module)")
        parent = self.module_of(node.value)
        surface = self.surfaces.get(parent) if parent else None
        if surface is not None:
            if node.attr not in surface.names:
                text = ast.unparse(node)
                if parent == "argus":
                    self.add(node, f"uses {text} (only argus.kernel, argus.lang, argus.layout)")
                elif node.attr in surface.submodules:
                    self.add(node, f"uses {text}, a module inside {parent} (only its public DSL names)")
                else:
                    self.add(node, f"uses {text}, which is not a public name of {parent}")
            elif surface.names[node.attr] is not None and not root:
                text = ast.unparse(node)
                self.add(node, f"uses the module {text} as a value (only {text}.<name>-style access is allowed)")
        self.check(node.value, root=True)

    def visit_Subscript(self, node: ast.Subscript, root: bool) -> None:
        if not isinstance(node.ctx, ast.Load) and self.rooted_at_module(node.value):
            self.add(node, f"assigns into {ast.unparse(node.value)}, which belongs to an imported module")
        self.children(node)

    def visit_keyword(self, node: ast.keyword, root: bool) -> None:
        self.name(node, node.arg, "passes the underscore keyword")
        self.children(node)

    def visit_arg(self, node: ast.arg, root: bool) -> None:
        self.name(node, node.arg)
        self.children(node)

    def visit_ExceptHandler(self, node: ast.ExceptHandler, root: bool) -> None:
        self.name(node, node.name)
        self.children(node)

    def visit_Constant(self, node: ast.Constant, root: bool) -> None:
        if isinstance(node.value, bytes):
            self.add(node, "a bytes literal")
        elif isinstance(node.value, str):
            if "__" in node.value:
                self.add(node, "a string containing '__' (interpreter internals)")
            for field in _format_fields(node.value):
                if "." in field or "[" in field:
                    self.add(node, f"a string with a format field that reaches an attribute or index: {{{field}}}")

    # scopes: what Python evaluates in the enclosing scope is checked there, the rest in the new scope

    def visit_FunctionDef(self, node: ast.FunctionDef, root: bool) -> None:
        self.name(node, node.name)
        for d in node.decorator_list:
            if not self.rooted_at_module(d.func if isinstance(d, ast.Call) else d):
                self.add(d, f"decorates {node.name} with {ast.unparse(d)} (only DSL decorators such as @argus.kernel)")
            self.check(d)
        self.outer_parts(node.args)
        if node.returns is not None:
            self.check(node.returns)
        self.scopes.append(_arg_names(node.args) | _scope_bindings(node.body))
        self.inner_parts(node.args)
        for statement in node.body:
            self.check(statement)
        self.scopes.pop()

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef, root: bool) -> None:
        self.name(node, node.name)
        self.children(node)

    def visit_Lambda(self, node: ast.Lambda, root: bool) -> None:
        self.outer_parts(node.args)
        self.scopes.append(_arg_names(node.args) | _scope_bindings([node.body]))
        self.inner_parts(node.args)
        self.check(node.body)
        self.scopes.pop()

    def outer_parts(self, args: ast.arguments) -> None:
        """Defaults and annotations: evaluated where the function is defined."""
        for default in [*args.defaults, *args.kw_defaults]:
            if default is not None:
                self.check(default)
        for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
            if a is not None and a.annotation is not None:
                self.check(a.annotation)

    def inner_parts(self, args: ast.arguments) -> None:
        for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
            if a is not None:
                self.name(a, a.arg)

    def comprehension(self, node: ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp) -> None:
        first, *rest = node.generators
        self.check(first.iter)
        self.scopes.append(_scope_bindings(g.target for g in node.generators))
        self.check(first.target)
        for condition in first.ifs:
            self.check(condition)
        for generator in rest:
            self.check(generator)
        for part in (node.key, node.value) if isinstance(node, ast.DictComp) else (node.elt,):
            self.check(part)
        self.scopes.pop()

    def visit_ListComp(self, node: ast.ListComp, root: bool) -> None:
        self.comprehension(node)

    def visit_SetComp(self, node: ast.SetComp, root: bool) -> None:
        self.comprehension(node)

    def visit_DictComp(self, node: ast.DictComp, root: bool) -> None:
        self.comprehension(node)

    def visit_GeneratorExp(self, node: ast.GeneratorExp, root: bool) -> None:
        self.comprehension(node)

    # statements with a shape

    def visit_With(self, node: ast.With, root: bool) -> None:
        for item in node.items:
            ctx = item.context_expr
            if not (isinstance(ctx, ast.Call) and self.rooted_at_module(ctx.func)):
                self.add(ctx, f"uses with on {ast.unparse(ctx)} (only a DSL call such as with T.grid(...))")
        self.children(node)

    def visit_ClassDef(self, node: ast.ClassDef, root: bool) -> None:
        self.name(node, node.name)
        self.children(node)
