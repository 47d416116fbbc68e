"""The allowlist of `argus.agent.restricted` against known ways out of a DSL module: each escape is refused with a
message that names it, honest DSL kernels (the library's, the generated fixtures of the agent tests) pass, and
oversized or deeply nested input is a violation returned quickly, never an exception."""

from __future__ import annotations

import ast
import time
from pathlib import Path

import pytest

from argus.agent.arms import KernelRef, kernel_source
from argus.agent.restricted import (
    ALLOWED_MODULES,
    MAX_AST_DEPTH,
    MAX_LINES,
    MAX_SOURCE_CHARS,
    check_source,
    kernel_functions,
    require_restricted,
    tag_assertions,
)
from argus.kernels.registry import all_kernels
from tests.agent import test_llm_loop, test_restricted

REPO = Path(__file__).resolve().parents[2]

PRELUDE = """import math
import argus
import argus.lang as T
import argus.layout as L
from argus.layout import Layout


"""

# (name, snippet appended to PRELUDE, a substring some violation's message must contain)
ESCAPES: list[tuple[str, str, str]] = [
    # attribute chains through allowed modules into the modules they import
    ("lang-errors-os", 'T.errors.os.system("id")', "uses T.errors, a module inside argus.lang"),
    ("lang-errors-os-attr", 'T.errors.os.system("id")', "accesses the attribute os"),
    ("lang-decorator-os", 'T.decorator.os.system("id")', "uses T.decorator, a module"),
    ("lang-tags", "x = T.tags.current", "uses T.tags, a module inside argus.lang"),
    ("lang-fragments", "x = T.fragments.np", "uses T.fragments, a module inside argus.lang"),
    ("argus-lang-errors-sys", "m = argus.lang.errors.sys.modules", "uses argus.lang.errors, a module"),
    ("argus-layout-submodule", "x = argus.layout.arith.math", "uses argus.layout.arith, a module inside argus.layout"),
    ("layout-alias-submodule", "x = L.int_tuple", "uses L.int_tuple, a module inside argus.layout"),
    ("argus-private-module", "x = argus.eval.sandbox", "uses argus.eval (only argus.kernel, argus.lang, argus.layout)"),
    ("argus-atoms", "x = argus.atoms", "uses argus.atoms (only argus.kernel"),
    ("math-not-public", "x = math.sys", "accesses the attribute sys"),
    ("math-unknown", "x = math.nope", "uses math.nope, which is not a public name of math"),
    # a module used as a value escapes attribute tracking
    ("module-assigned", "M = T\ny = M.frontend", "uses the module T as a value"),
    ("module-in-list", "y = [T][0].errors", "uses the module T as a value"),
    ("module-passed", "f = max(argus, key=len)", "uses the module argus as a value"),
    ("submodule-assigned", "M = argus.lang", "uses the module argus.lang as a value"),
    ("module-subscript", "y = math[0]", "uses the module math as a value"),
    # imports
    ("import-os", "import os", "imports os"),
    ("import-lang-submodule", "import argus.lang.decorator", "imports argus.lang.decorator"),
    ("from-lang-module", "from argus.lang import decorator", "imports decorator from argus.lang"),
    ("from-argus-eval", "from argus import eval", "imports eval from argus"),
    ("from-layout-module", "from argus.layout import arith", "imports arith from argus.layout"),
    ("from-star", "from math import *", "imports * from math"),
    ("relative", "from .. import x", "imports from .."),
    ("import-future-module", "import __future__", "imports __future__"),
    ("operator-attrgetter", "import operator\ng = operator.attrgetter('f_globals')", "imports operator"),
    ("attrgetter-attribute", "g = T.attrgetter('f_globals')", "accesses the attribute attrgetter"),
    ("alias-two-modules", "import math as M\nimport argus.lang as M", "binds M to more than one module"),
    ("underscore-alias", "import argus.lang as _T", "defines the underscore name _T"),
    # frame, code, generator, coroutine and traceback introspection (no underscore needed)
    ("genexp-frame", "b = (i for i in ()).gi_frame.f_builtins['open']", "uses a generator expression"),
    ("gi-frame", "def f(g):\n    return g.gi_frame", "accesses the attribute gi_frame"),
    ("gi-code", "def f(g):\n    return g.gi_code.co_consts", "accesses the attribute gi_code"),
    ("gi-yieldfrom", "def f(g):\n    return g.gi_yieldfrom", "accesses the attribute gi_yieldfrom"),
    ("f-globals", "def f(fr):\n    return fr.f_globals['os']", "accesses the attribute f_globals"),
    ("f-locals", "def f(fr):\n    return fr.f_locals", "accesses the attribute f_locals"),
    ("f-builtins", "def f(fr):\n    return fr.f_builtins", "accesses the attribute f_builtins"),
    ("f-back", "def f(fr):\n    return fr.f_back.f_back", "accesses the attribute f_back"),
    ("tb-frame", "def f(tb):\n    return tb.tb_frame", "accesses the attribute tb_frame"),
    ("tb-next", "def f(tb):\n    return tb.tb_next", "accesses the attribute tb_next"),
    ("cr-frame", "def f(c):\n    return c.cr_frame", "accesses the attribute cr_frame"),
    ("ag-frame", "def f(a):\n    return a.ag_frame", "accesses the attribute ag_frame"),
    ("func-globals", "def f(g):\n    return g.func_globals", "accesses the attribute func_globals"),
    ("co-consts", "def f(c):\n    return c.co_consts", "accesses the attribute co_consts"),
    ("co-names", "def f(c):\n    return c.co_names", "accesses the attribute co_names"),
    ("f-prefix", "def f(c):\n    return c.f_trace_opcodes", "accesses the attribute f_trace_opcodes"),
    ("cell-contents", "def f(c):\n    return c.cell_contents", "accesses the attribute cell_contents"),
    ("contextmanager-gen", "g = T.grid(1, threads=32).gen", "accesses the attribute gen"),
    ("mro", "x = T.Tensor.mro()", "accesses the attribute mro"),
    ("yield", "def g():\n    yield 1", "uses yield"),
    ("yield-from", "def g(x):\n    yield from x", "uses yield from"),
    ("yield-in-lambda", "g = lambda: (yield)", "uses yield"),
    ("async-def", "async def f():\n    pass", "defines an async function f"),
    ("await", "async def f(x):\n    await x", "uses await"),
    # dunder strings, built from pieces or not, and on the first line
    ("dunder-string-first-line", None, "a string containing '__'"),
    ("dunder-concat", 'n = "__" + "import__"', "a string containing '__'"),
    ("dunder-pieces-getattr", 'x = getattr(T, "_" * 2 + "class" + "_" * 2)', "uses getattr"),
    ("dunder-join-eval", 'x = eval("".join(["_", "_imp", "ort_", "_"]))', "uses eval"),
    ("chr", "n = chr(95) * 2 + 'import' + chr(95) * 2", "uses chr"),
    ("ord", "n = ord('_')", "uses ord"),
    ("bytes-builtin", "n = bytes([95, 95]).decode()", "uses bytes"),
    ("bytearray", "n = bytearray(b'x')", "uses bytearray"),
    ("bytes-literal", "n = b'_' + b'_'", "a bytes literal"),
    ("fstring-attribute", 'n = f"{T.copy.__globals__}"', "accesses the attribute __globals__"),
    ("fstring-dunder-piece", 'n = f"__{1}"', "a string containing '__'"),
    # getattr-like access through other built-ins and methods
    ("str-format-field", 'n = "{0.gi_frame}".format(g)', "accesses the attribute format"),
    ("format-template-attribute", 'n = "{0.gi_frame}"', "a string with a format field that reaches an attribute"),
    ("format-template-index", 'n = "{0[os]}"', "a string with a format field that reaches an attribute or index"),
    ("format-template-nested", 'n = "{0:{1.x}}"', "a string with a format field that reaches an attribute"),
    ("format-map", 'n = "{x}".format_map(d)', "accesses the attribute format_map"),
    ("format-builtin", "n = format(T, 'x')", "uses format"),
    ("getattribute", 'x = T.copy.__getattribute__("x")', "accesses the attribute __getattribute__"),
    ("vars", 'x = vars(T)["frontend"]', "uses vars"),
    ("type", "x = type(T.copy)", "uses type"),
    ("object-subclasses", "x = object.__subclasses__()", "uses object"),
    ("hasattr", "x = hasattr(T, 'frontend')", "uses hasattr"),
    ("setattr", "setattr(T, 'copy', 1)", "uses setattr"),
    ("dir", "x = dir(T)", "uses dir"),
    ("globals", "x = globals()", "uses globals"),
    ("locals-in-function", "def f():\n    return locals()", "uses locals"),
    ("super", "def f():\n    return super()", "uses super"),
    ("breakpoint", "breakpoint()", "uses breakpoint"),
    ("input", "x = input()", "uses input"),
    ("print", "print('hi')", "uses print"),
    ("memoryview", "x = memoryview(b'')", "uses memoryview"),
    ("import-builtin", "m = __import__('os')", "uses __import__"),
    ("builtins-name", "m = __builtins__", "uses __builtins__"),
    ("underscore-name", "_x = 1", "uses _x"),
    ("underscore-keyword", "T.copy(a, b, _hook=1)", "passes the underscore keyword _hook"),
    # a built-in's own name bound somewhere that does not cover the use
    ("shadow-other-function", 'def f(open):\n    return open\nx = open("/etc/passwd")', "uses open"),
    ("shadow-module-later", 'x = open("/etc/passwd")\nopen = 1', "uses open"),
    ("shadow-module-def", 'def g():\n    return open("/etc/passwd")\ndef open(p):\n    return p', "uses open"),
    ("shadow-comprehension", 'def f():\n    return [1 for open in range(2)] and open("/x")', "uses open"),
    ("shadow-first-iterable", 'def f():\n    return [open for open in open("/etc/passwd")]', "uses open"),
    ("shadow-default", 'def f(x=open("/etc/passwd")):\n    open = 1', "uses open"),
    ("shadow-walrus-comprehension", "x = [(open := i) for i in range(2)]\ny = open", "uses open"),
    # monkeypatching what the worker shares with other candidates
    ("attribute-store-module", "T.copy = lambda *a: None", "assigns to the attribute T.copy"),
    ("attribute-store-class", "F = T.Fragment\nF.tile = None", "assigns to the attribute F.tile"),
    ("attribute-augassign", "def f(acc):\n    acc.shape += (1,)", "assigns to the attribute acc.shape"),
    ("subscript-store-module", "L.Layout.cache[0] = 1", "assigns into L.Layout.cache, which belongs to an imported"),
    ("module-alias-builtin", "x = open.sin(1)\nimport math as open", "binds a module to the built-in name open"),
    # statements
    ("class", "class Evil:\n    pass", "defines a class Evil"),
    ("global", "def f():\n    global X", "declares global or nonlocal names"),
    ("nonlocal", "def f():\n    x = 1\n    def g():\n        nonlocal x", "declares global or nonlocal names"),
    ("del", "x = 1\ndel x", "deletes names with del"),
    ("with-open", 'with open("/etc/passwd") as fh:\n    pass', "uses with on open"),
    ("with-name", "def f(cm):\n    with cm:\n        pass", "uses with on cm"),
    ("with-attribute", "def f(cm):\n    with cm.x():\n        pass", "uses with on cm.x()"),
    ("decorator-builtin", "@staticmethod\ndef f():\n    pass", "decorates f with staticmethod"),
    ("decorator-lambda", "@(lambda f: f)\ndef f():\n    pass", "decorates f with lambda f: f"),
    ("decorator-local", "def d(f):\n    return f\n@d\ndef f():\n    pass", "decorates f with d"),
    ("match", "match T.copy:\n    case object(gi_frame=f):\n        pass", "uses a match statement"),
    ("except-star", "try:\n    pass\nexcept* ValueError:\n    pass", "uses except*"),
]


def _source(snippet: str | None) -> str:
    if snippet is None:  # the first line of the file
        return 'NAME = "__class__"\n' + PRELUDE
    return PRELUDE + snippet + "\n"


@pytest.mark.parametrize(("snippet", "says"), [(s, m) for _, s, m in ESCAPES], ids=[n for n, _, _ in ESCAPES])
def test_each_escape_is_refused_with_a_message_that_names_it(snippet: str | None, says: str):
    source = _source(snippet)
    violations = check_source(source)
    assert any(says in v.message for v in violations), violations
    assert all(v.line >= 1 for v in violations)


def test_the_escapes_are_many_and_distinct():
    assert len({n for n, _, _ in ESCAPES}) == len(ESCAPES) >= 20
    assert check_source(PRELUDE) == []  # the prelude itself is fine: each escape is its snippet's


def test_the_first_line_is_checked():
    (v,) = check_source('NAME = "__class__"\n')
    assert v.line == 1 and "'__'" in v.message


# --- honest DSL code passes -----------------------------------------------------------------------------------------

HONEST = '''
from __future__ import annotations

import math

import argus
from argus import lang as T
from argus.lang import copy, grid
from argus.layout import make_layout

LOG2E = 1.4426950408889634
SHAPES = {name: size for name, size in [("BM", 64), ("BN", 64)]}


@T.macro
def load(src, dst, rows: int = 4):
    """Copy one tile: ``(rows, BN)``, the same layout as {name} in the prompt."""
    copy(src, dst)
    return [r * 2 for r in range(rows) if r % 2 == 0]


@argus.kernel(policies={"tile_shape": ("BM", "BN")})
def scale(X: T.Tensor[("N",), T.f32], Y: T.Tensor[("N",), T.f32], BLOCK: int = 128, input: int = 0):
    assert BLOCK % 32 == 0, f"BLOCK = {BLOCK!r} must be a multiple of 32"
    layout = make_layout((BLOCK,), (1,))
    with grid(T.cdiv(N, BLOCK), threads=BLOCK) as (b,):
        r = T.alloc_fragment((BLOCK,), T.f32)
        load(X.tile((b,), (BLOCK,)), r)
        for _ in T.unroll(2):
            T.assert_tag(lambda x: x[0] // BLOCK == b, r)
        with T.if_(b < 4):
            T.copy(r, Y.tile((b,), (BLOCK,)))
        try:
            width = int(math.sqrt(BLOCK)) + input + len(layout.shape)
        except (ValueError, ZeroDivisionError) as err:
            raise ValueError("bad block") from err
        scaled = {k: v * LOG2E for k, v in SHAPES.items()}
        total = sum(sorted(scaled.values(), key=lambda v: -v)) + width
        if isinstance(total, float) and (n := round(total)) > 0:
            T.fill(r, float(n) % 3)
'''


def test_a_dsl_module_with_every_allowed_form_passes():
    assert check_source(HONEST) == []
    assert kernel_functions(HONEST) == ["scale"] and tag_assertions(HONEST) == 1


@pytest.mark.parametrize("name", [k.name for k in all_kernels()])
def test_every_library_kernel_as_the_coder_sees_it_passes(name: str):
    """Every library kernel (the GEMMs, softmax, layer norm, attention, ...) in the form the LLM coder is shown and
    rewrites: its function's source with the DSL imports."""
    assert check_source(kernel_source(KernelRef(library=name))) == []


def _normalized(source: str) -> str:
    """`source` with every import a generated module may not make blanked out (line numbers kept) and the DSL
    imports put in front: the helpers it took from other modules become free names, as in a generated module."""
    lines = source.splitlines()
    for node in ast.parse(source).body:
        if isinstance(node, ast.Import):
            allowed = all(a.name in ALLOWED_MODULES and a.name != "__future__" for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            allowed = node.module == "__future__"
        else:
            continue
        if not allowed:
            end = node.end_lineno or node.lineno
            lines[node.lineno - 1 : end] = [""] * (end - node.lineno + 1)
    return "import argus; import argus.lang as T\n" + "\n".join(lines) + "\n"


# What the allowlist refuses in honest library code, on purpose: module-private helper names (an underscore) and
# generator expressions (a generator exposes its frame). A generated module writes `major` and a list comprehension.
DOCUMENTED_REFUSALS = ("names starting with an underscore are not allowed", "defines the underscore name",
                       "uses a generator expression")  # fmt: skip
KERNEL_FILES = sorted(p for p in (REPO / "src/argus/kernels").glob("*.py") if kernel_functions(p.read_text()))


@pytest.mark.parametrize("path", KERNEL_FILES, ids=[p.name for p in KERNEL_FILES])
def test_library_kernel_files_break_only_the_import_rule(path: Path):
    source = path.read_text()
    raw = check_source(source)
    normalized = check_source(_normalized(source))
    others = [v for v in normalized if not any(r in v.message for r in DOCUMENTED_REFUSALS)]
    assert others == [], others
    assert {v.message for v in raw} - {v.message for v in normalized} <= {
        v.message for v in raw if v.message.startswith("imports")
    }


@pytest.mark.parametrize("name", ["softmax.py", "elementwise.py", "attention.py", "gemm.py"])
def test_whole_library_modules_pass_after_their_imports_are_normalized(name: str):
    assert check_source(_normalized((REPO / "src/argus/kernels" / name).read_text())) == []


@pytest.mark.parametrize(
    "source",
    [
        test_llm_loop.SOURCE,
        test_llm_loop.CORRECT,
        test_llm_loop.BUGGY,
        test_llm_loop.SWIZZLED,
        test_llm_loop.SOURCE + "\nwhile True:\n    pass\n",
        test_restricted.KERNEL,
    ],
    ids=["source", "correct", "buggy", "swizzled", "hangs", "restricted-kernel"],
)
def test_the_generated_fixtures_of_the_agent_tests_pass(source: str):
    assert check_source(source) == []
    require_restricted(source)


def test_a_builtin_name_the_function_binds_itself_is_fine():
    assert check_source(PRELUDE + "def f(open, type=1):\n    return open + type\n") == []
    assert check_source(PRELUDE + "def f(x):\n    return [iter for iter in x]\n") == []
    assert check_source(PRELUDE + "def f():\n    vars = 1\n    return vars\n") == []


# --- size and depth -------------------------------------------------------------------------------------------------


HUGE_OR_DEEP: list[tuple[str, str, str]] = [
    ("open-parens", "(" * 5000, "does not parse"),
    ("open-brackets", "[" * 5000, "does not parse"),
    ("closed-parens", "x = " + "(" * 3000 + "1" + ")" * 3000, "does not parse"),
    ("unary-minus", "x = " + "-" * 100_000 + "1", "nested too deeply for the parser"),
    ("not", "x = " + "not " * 40_000 + "y", "nested too deeply for the parser"),
    ("huge", "x = " + "1 + " * 100_000 + "1", "characters, over the limit"),
    ("plus", "x = " + "1 + " * 40_000 + "1", "nested too deeply for the parser"),
    ("deep-plus", "x = " + "1 + " * 500 + "1", f"over the limit of {MAX_AST_DEPTH}"),
    ("subscripts", "x = y" + "[0]" * 500, f"over the limit of {MAX_AST_DEPTH}"),
    ("attributes", "x = y" + ".a" * 500, f"over the limit of {MAX_AST_DEPTH}"),
    ("lambdas", "x = " + "lambda: " * 500 + "1", f"over the limit of {MAX_AST_DEPTH}"),
    ("lines", "x = 1\n" * (MAX_LINES + 1), "lines, over the limit"),
    ("characters", "x = '" + "a" * MAX_SOURCE_CHARS + "'", "characters, over the limit"),
    ("null-byte", "x = 1\0", "does not parse"),
]


def test_a_deeply_nested_format_template_is_read_without_recursion():
    start = time.perf_counter()
    assert check_source('x = "' + "{:" * 30_000 + "}" * 30_000 + '"') == []  # str.format nests 2 levels at most
    assert time.perf_counter() - start < 2.0


@pytest.mark.parametrize(("source", "says"), [(s, m) for _, s, m in HUGE_OR_DEEP], ids=[n for n, _, _ in HUGE_OR_DEEP])
def test_huge_or_deep_input_is_a_violation_returned_quickly(source: str, says: str):
    start = time.perf_counter()
    violations = check_source(source)
    assert time.perf_counter() - start < 2.0
    assert len(violations) == 1 and says in violations[0].message, violations
    with pytest.raises(SyntaxError):  # the coder catches SyntaxError from kernel_functions: never anything else
        kernel_functions(source)
    assert tag_assertions(source) == 0
