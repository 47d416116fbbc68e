"""The names a kernel's source gives what its DSL calls create, so that the IR, the verifier's reports and the
generated CUDA say ``sA``, ``acc``, ``full`` and ``k`` where the user wrote them, not ``s_1``, ``r_15`` or ``bar``.

A DSL call that creates a buffer or a variable asks where, in the user's source, it was called from: the innermost
frame outside the tracer (`argus.lang.errors.caller_position`) and the span of the expression or statement being
run there. The file's syntax tree, parsed once per `SourceNames` (one per kernel function), says what that span
binds:

* ``sA = T.alloc_shared(...)``, ``acc: T.Fragment = ...``, ``p = T.exp2(s * scale)``, ``acc += x``,
  ``(m := T.reduce_max(s))``, and each side of ``m, l = T.alloc_fragment(...), T.alloc_fragment(...)``: the call or
  operator whose value is assigned names it (a ``@T.macro`` call counts as the calls it makes);
* ``for k, s in T.pipeline(...)``, ``for it in T.serial(...)``: the loop's first target names its variable;
* ``with T.grid(...) as (bm, bn):``: the targets name the block indices, one per axis.

Anything else (a temporary inside an expression, ``_``, a target that is not a plain name, source that cannot be
read) has no name here, and the caller falls back to its generic base. A name is used only if it is an ASCII
identifier that C++ does not reserve (no ``__``, no leading ``_`` and capital); `argus.lang.trace.Trace.fresh`
makes it unique, and the code generator's `Names` steers clear of C++ keywords and its own identifiers.
"""

from __future__ import annotations

import ast
import linecache
import re

#: A span as Python reports one for an instruction: (first line, last line, first column, end column).
Span = tuple[int | None, int | None, int | None, int | None]
#: Where a DSL call was made: the file and the span of what that frame is running.
Where = tuple[str, Span]

_RESERVED_IN_CPP = re.compile(r"__|^_[A-Z]")
_VALUES = (ast.Call, ast.BinOp, ast.UnaryOp, ast.Compare)


def usable(name: str) -> bool:
    """Whether `name` (a Python identifier from the user's source) can name IR and C: ASCII, not ``_``, and not
    reserved in C++ (no double underscore, no leading underscore followed by a capital)."""
    return name.isascii() and name.isidentifier() and name != "_" and not _RESERVED_IN_CPP.search(name)


def _span(node: ast.AST) -> Span:
    return (node.lineno, node.end_lineno, node.col_offset, node.end_col_offset)  # type: ignore[attr-defined]


def _name(target: ast.AST) -> str | None:
    return target.id if isinstance(target, ast.Name) and usable(target.id) else None


def _callee(node: ast.AST) -> str | None:
    """``grid`` for ``T.grid(...)`` or ``grid(...)``."""
    if not isinstance(node, ast.Call):
        return None
    f = node.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None


class _FileIndex(ast.NodeVisitor):
    """What each span of one file binds: values (by the span of the expression), loops and grids (by the span of
    the ``for`` or ``with`` statement)."""

    def __init__(self) -> None:
        self.values: dict[Span, str] = {}
        self.loops: dict[Span, str] = {}
        self.grids: dict[Span, tuple[str | None, ...]] = {}

    def _bind(self, target: ast.AST, value: ast.AST | None) -> None:
        if value is None:
            return
        if isinstance(target, ast.Tuple | ast.List) and isinstance(value, ast.Tuple | ast.List):
            if len(target.elts) == len(value.elts):
                for t, v in zip(target.elts, value.elts, strict=True):
                    self._bind(t, v)
            return
        name = _name(target)
        if name is not None and isinstance(value, _VALUES):
            self.values.setdefault(_span(value), name)

    def visit_Assign(self, node: ast.Assign) -> None:  # noqa: N802 - ast.NodeVisitor's spelling
        self._bind(node.targets[0], node.value)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:  # noqa: N802
        self._bind(node.target, node.value)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:  # noqa: N802
        name = _name(node.target)
        if name is not None:  # the in-place operator runs at the statement's span
            self.values.setdefault(_span(node), name)
        self.generic_visit(node)

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:  # noqa: N802
        self._bind(node.target, node.value)
        self.generic_visit(node)

    def visit_For(self, node: ast.For) -> None:  # noqa: N802
        target = node.target
        if isinstance(target, ast.Tuple | ast.List) and target.elts:
            target = target.elts[0]  # for k, s in T.pipeline(...): the iteration variable comes first
        name = _name(target)
        if name is not None and isinstance(node.iter, ast.Call):
            self.loops[_span(node)] = name
        self.generic_visit(node)

    def visit_With(self, node: ast.With) -> None:  # noqa: N802
        grids = [item for item in node.items if _callee(item.context_expr) == "grid"]
        if len(grids) == 1 and isinstance(grids[0].optional_vars, ast.Tuple | ast.List):
            self.grids[_span(node)] = tuple(_name(t) for t in grids[0].optional_vars.elts)
        self.generic_visit(node)


class SourceNames:
    """The names of one kernel function's source files, each file parsed once, when first asked about."""

    def __init__(self) -> None:
        self._files: dict[str, _FileIndex | None] = {}

    def _index(self, filename: str) -> _FileIndex | None:
        if filename not in self._files:
            index: _FileIndex | None = None
            text = "".join(linecache.getlines(filename))
            if text:
                try:
                    tree = ast.parse(text)
                except (SyntaxError, ValueError):
                    tree = None
                if tree is not None:
                    index = _FileIndex()
                    index.visit(tree)
            self._files[filename] = index
        return self._files[filename]

    def value(self, where: Where | None) -> str | None:
        """The variable the value made at `where` is assigned to, if it is one plain name."""
        index = self._index(where[0]) if where is not None else None
        return index.values.get(where[1]) if index is not None and where is not None else None

    def loop(self, where: Where | None) -> str | None:
        """The variable of the ``for`` loop running at `where`."""
        index = self._index(where[0]) if where is not None else None
        return index.loops.get(where[1]) if index is not None and where is not None else None

    def grid(self, where: Where | None) -> tuple[str | None, ...]:
        """The names the ``with T.grid(...) as (...)`` running at `where` gives the block indices (None: no name)."""
        index = self._index(where[0]) if where is not None else None
        return index.grids.get(where[1], ()) if index is not None and where is not None else ()
