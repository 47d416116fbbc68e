"""The diagnostics catalog (`argus.diagnostics.Code`) is complete, has no dead entries, and is what the docs say.

The source scan. Every string constant under src/argus that has the shape of a code (``WORD_WORD...``, upper case)
is either a catalog code or a name that is not a code (`NOT_CODES`: environment variables, CUDA's and NVRTC's own
names, module constants; names listed in an ``__all__`` are skipped). That covers codes passed straight to an error,
codes passed through variables, dicts and tuples (``STORE_CODES``, ``_BOX_CODES``, ``code = "A" if ... else "B"``)
and codes only compared against (``err.code == "DSL_SMEM_BUDGET"``). Codes built at run time are f-strings with a
code-shaped prefix; each such prefix must be a known family (`FAMILIES`), whose members are computed from the
source the way the raise site computes them and must all be catalogued.

An entry is live when the scan finds it reported: a constant outside the catalogs that define codes
(`DEFINITIONS`) and not inside a comparison, a ``Code.X`` reference, or a member of a family.

The docs. docs/diagnostics.md is `argus.diagnostics.catalog.markdown()`'s output; regenerate it with

    ARGUS_UPDATE_GOLDEN=1 python -m pytest tests/test_diagnostics_catalog.py
"""

from __future__ import annotations

import ast
import functools
import os
import pickle
import re
import string
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from argus.diagnostics import ArgusError, Category, Code, LocatedError, lookup
from argus.diagnostics.catalog import codes, markdown

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "argus"
DOC = ROOT / "docs" / "diagnostics.md"

#: The shape of a code.
CODE_SHAPE = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$")

#: Modules that define codes rather than report them: the catalog itself, the verifier's catalog of findings and
#: the gate's catalog of outcome codes.
DEFINITIONS = ("diagnostics/catalog.py", "verify/catalog.py", "eval/codes.py")

#: Code-shaped names that are not argus codes.
NOT_CODE_FAMILIES = re.compile(
    r"^(ARGUS|CUDA|CU|NVRTC|EIATTR|XDG|LC|SC|LD|OMP|MKL|NCCL|NVSHMEM|NVIDIA|TORCH|TRITON|OPENAI|ANTHROPIC)_"
)
NOT_CODES = {
    "READ_ELEMENT": "the key of the element reader in an expression environment (argus.ir.expr)",
    "TOP_GROUPS": "a parameter of moe_route_select (the groups of experts a token's choices are taken from)",
    "A_MAJOR": "a parameter of the Hopper GEMMs",
    "B_MAJOR": "a parameter of the Hopper GEMMs",
    "C_MAJOR": "a parameter of the Hopper GEMMs",
    "CUDNN_ATTENTION": "an SDPA backend a task forbids",
    "EFFICIENT_ATTENTION": "an SDPA backend a task forbids",
    "FLASH_ATTENTION": "an SDPA backend a task forbids",
    "PRODUCER_REGS": "a parameter of the Hopper persistent GEMM (the producer's register budget)",
    "PER_THREAD": "a parameter of pad_copy (accesses per thread)",
    "EXP2_FMA": "a parameter of flash_attention (every how many exponentials on the FMA pipe)",
    "CONSUMER_REGS": "a parameter of the Hopper persistent GEMM and flash_attention (a consumer's register budget)",
    "BLOCKS_PER_SM": "a parameter of the Hopper GEMMs and the implicit-GEMM convolution (resident blocks per SM)",
    "P_REGISTERS": "a parameter of flash_attention (P kept in registers)",
    "Q_BUFFERS": "a parameter of flash_attention (Q's shared-memory buffers of a persistent block)",
    "MASK_TAIL": "a parameter of flash_attention (whether a key tile may have a tail)",
    "KV_LAYOUT": "a parameter of flash_attention (K's and V's layout where it differs from Q's)",
    "PAGE_SIZE": "a parameter of flash_attention_paged (tokens per page of the KV cache)",
    "SEQ_Q": "a tensor of flash_attention_varlen (the sequences' cumulative query ends)",
    "SEQ_K": "a tensor of flash_attention_varlen (the sequences' cumulative key ends)",
    "QF_BV": "a Z3 logic",
    "RUNNING_MEAN": "an operand of the normalization template's batch-norm kernels",
    "RUNNING_VAR": "an operand of the normalization template's batch-norm kernels",
}

#: Codes that the verifier's catalog lists and nothing reports (argus.verify.catalog.NOT_PRODUCED says why), and
#: codes the gate's catalog lists and nothing reports. The catalog leaves them out (no dead entries); when one is
#: reported again, it moves into the catalog and out of this list.
VERIFY_NOT_REPORTED = {"OOB_GLOBAL"}
GATE_NOT_REPORTED = {"PROFILE_ERROR": "listed in argus.eval.codes; no stage produces it"}

#: Codes of category GATE that argus.eval.codes does not list: the errors of the gate's harness (not outcomes),
#: and an outcome the gate's catalog lacks.
GATE_NOT_IN_EVAL_CODES = {
    "SANDBOX_CONFIG": "a SandboxError from reading ARGUS_SANDBOX_NAMESPACES, not a stage outcome",
    "STORE_READ_ONLY": "a StoreError of the results store",
    "STORE_CORRUPT": "a StoreError of the results store",
    "STORE_DISK_FULL": "a StoreError of the results store",
    "STORE_LOCKED": "a StoreError of the results store",
    "STORE_IO": "a StoreError of the results store",
    "STORE_NOT_FOUND": "a StoreError of the results store",
    "STORE_CANNOT_OPEN": "a StoreError of the results store",
    "EXECUTOR_RAY_MISSING": "an ExecutorError: Ray was asked for and is not installed",
    "EXECUTOR_RAY_CONNECT": "an ExecutorError: no Ray cluster at the address",
    "EXECUTOR_NO_GPU": "an ExecutorError: a GPU job on an executor without GPUs",
    "COSTMODEL_GPU": "a CostModelError",
    "CALIBRATION_ROW": "a CalibrationError of the cost model's calibration",
    "CALIBRATION_PLAN": "a CalibrationError of the cost model's calibration",
    "CALIBRATION_DATA": "a CalibrationError of the cost model's calibration",
    "CALIBRATION_FILE": "a CalibrationError of the cost model's calibration",
    "COSTMODEL_SIZES": "a CostModelError",
    "COSTMODEL_TARGET": "a CostModelError",
    "COSTMODEL_UNSUPPORTED": "a CostModelError",
    "PROFILE_NO_GENERATOR": "a profile outcome of the judge (eval/judge.py) that argus.eval.codes lacks",
}


# --- the scan ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Occurrence:
    code: str
    where: str  # "path:line", relative to src/argus
    reported: bool  # False inside a comparison, or in a module that defines codes


@dataclass(frozen=True)
class Prefix:
    """An f-string that builds a code: its constant prefix and where it is."""

    prefix: str
    where: str


def _parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def _in_all(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    while node in parents:
        node = parents[node]
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            return any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets)
    return False


def _in_comparison(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    while node in parents and not isinstance(node, ast.stmt):
        node = parents[node]
        if isinstance(node, ast.Compare):
            return True
    return False


def scan_source(text: str, where: str, defines: bool = False) -> tuple[list[Occurrence], list[Prefix]]:
    """The code-shaped constants, ``Code.X`` references and code-building f-strings of one module's source."""
    tree = ast.parse(text)
    parents = _parents(tree)
    found: list[Occurrence] = []
    prefixes: list[Prefix] = []
    for node in ast.walk(tree):
        at = f"{where}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and CODE_SHAPE.match(node.value):
            if parents.get(node) is not None and isinstance(parents[node], ast.JoinedStr):
                continue  # a piece of an f-string: handled below
            if not _in_all(node, parents):
                found.append(Occurrence(node.value, at, not defines and not _in_comparison(node, parents)))
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "Code":
            found.append(Occurrence(node.attr, at, not _in_comparison(node, parents)))
        elif isinstance(node, ast.JoinedStr) and len(node.values) >= 2:
            head, tail = node.values[0], node.values[1]
            if (
                isinstance(head, ast.Constant)
                and isinstance(head.value, str)
                and re.fullmatch(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*_", head.value)
                and isinstance(tail, ast.FormattedValue)
            ):
                prefixes.append(Prefix(head.value, at))
    return found, prefixes


def _modules() -> Iterator[tuple[str, str]]:
    for path in sorted(SRC.rglob("*.py")):
        yield path.relative_to(SRC).as_posix(), path.read_text()


@functools.cache
def scan() -> tuple[list[Occurrence], list[Prefix]]:
    """Every module of src/argus but the catalog, scanned (once per test session)."""
    occurrences: list[Occurrence] = []
    prefixes: list[Prefix] = []
    for where, text in _modules():
        if where == "diagnostics/catalog.py":
            continue
        found, built = scan_source(text, where, defines=where in DEFINITIONS)
        occurrences += found
        prefixes += built
    return occurrences, prefixes


def _constants(module: str, pattern: str) -> set[str]:
    tree = ast.parse((SRC / module).read_text())
    return {
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and re.fullmatch(pattern, n.value)
    }


def _driver_call_codes() -> set[str]:
    """``RUNTIME_CUDA_<CALL>`` (runtime/driver.py: ``f"RUNTIME_CUDA_{call.removeprefix('cu').upper()}"``) for every
    CUDA driver function the runtime calls through `argus.runtime.driver.call` or checks with ``_check``."""
    calls: set[str] = set()
    for path in sorted((SRC / "runtime").glob("*.py")):
        calls |= _constants(f"runtime/{path.name}", r"cu[A-Z][A-Za-z0-9]+")
    return {"RUNTIME_CUDA_" + call.removeprefix("cu").upper() for call in calls}


def _coder_kb_codes() -> set[str]:
    """``CODER_<KB code>`` (agent/coder.py wraps the `KBError` of `argus.kb.apply`): the codes kb/transforms.py
    raises, and ``KB_UNKNOWN_ENTRY`` from `argus.kb.get_entry`, which apply calls for an entry given by id."""
    return {"CODER_" + c for c in _constants("kb/transforms.py", r"KB_[A-Z_]+") | {"KB_UNKNOWN_ENTRY"}}


#: The codes built at run time: the f-string's prefix, and its members.
FAMILIES: dict[str, Callable[[], set[str]]] = {
    "RUNTIME_CUDA_": _driver_call_codes,
    "CODER_": _coder_kb_codes,
}


def _not_a_code(name: str) -> bool:
    return bool(NOT_CODE_FAMILIES.match(name)) or name in NOT_CODES


def _reported() -> set[str]:
    occurrences, _ = scan()
    live = {o.code for o in occurrences if o.reported}
    for members in FAMILIES.values():
        live |= members()
    return live


# --- the scan itself --------------------------------------------------------------------------------------------


def test_the_scan_tells_reports_from_comparisons_and_finds_built_codes() -> None:
    source = (
        'raise DSLError("DSL_SOME_CODE", "message")\n'
        'if err.code == "DSL_OTHER_CODE" or code in ("DSL_THIRD",): pass\n'
        '__all__ = ["SOME_NAME"]\n'
        'raise LaunchError(f"RUNTIME_CUDA_{call.upper()}", "failed")\n'
        "x = Code.DSL_UNKNOWN_PARAM\n"
        'message = f"PREFIX_{x} is not a code-building f-string" if False else f"{x}_SUFFIX"\n'
    )
    found, prefixes = scan_source(source, "probe.py")
    assert {(o.code, o.reported) for o in found} == {
        ("DSL_SOME_CODE", True),
        ("DSL_OTHER_CODE", False),
        ("DSL_THIRD", False),
        ("DSL_UNKNOWN_PARAM", True),
    }
    assert [p.prefix for p in prefixes] == ["RUNTIME_CUDA_", "PREFIX_"]


def test_the_scan_sees_the_tree() -> None:
    occurrences, prefixes = scan()
    where = {o.code: o.where for o in occurrences if o.reported}
    assert where["DSL_UNKNOWN_PARAM"].startswith("lang/")
    assert "STORE_LOCKED" in where and "ALIGN_ASSUMPTION" in where  # through a dict and a conditional expression
    assert {p.prefix for p in prefixes} == set(FAMILIES)
    assert {"RUNTIME_CUDA_LAUNCHKERNEL", "RUNTIME_CUDA_MODULELOADDATA"} <= _driver_call_codes()
    assert {"CODER_KB_TRANSFORM_TRACE", "CODER_KB_UNKNOWN_ENTRY"} <= _coder_kb_codes()


# --- the catalog against the source -----------------------------------------------------------------------------


def test_every_code_in_the_source_is_catalogued() -> None:
    occurrences, _ = scan()
    listed_elsewhere = VERIFY_NOT_REPORTED | set(GATE_NOT_REPORTED)
    missing = sorted(
        {
            f"{o.code} ({o.where})"
            for o in occurrences
            if lookup(o.code) is None and not _not_a_code(o.code) and o.code not in listed_elsewhere
        }
    )
    assert not missing, (
        "codes used in the source but not in argus.diagnostics.Code (add an entry in argus/diagnostics/catalog.py, "
        "or, for a name that is not a code, to NOT_CODES here):\n  " + "\n  ".join(missing)
    )


def test_every_code_built_at_run_time_is_catalogued() -> None:
    _, prefixes = scan()
    unknown = sorted({f"{p.prefix}... ({p.where})" for p in prefixes if p.prefix not in FAMILIES})
    assert not unknown, "f-strings that build codes from an unknown family (add it to FAMILIES):\n  " + "\n  ".join(
        unknown
    )
    for prefix, members in FAMILIES.items():
        missing = sorted(c for c in members() if lookup(c) is None)
        assert not missing, f"codes of the family {prefix}... that the catalog lacks: {missing}"


def test_no_dead_entries() -> None:
    reported = _reported()
    dead = sorted(c.value for c in Code if c.value not in reported)
    assert not dead, f"catalog entries that nothing in the source reports (remove them): {dead}"


def test_not_codes_are_not_codes() -> None:
    assert not [c for c in Code if _not_a_code(c.value)]
    occurrences, _ = scan()
    seen = {o.code for o in occurrences}
    assert set(NOT_CODES) <= seen, f"NOT_CODES lists names the source no longer has: {set(NOT_CODES) - seen}"


def test_codes_are_unique_and_well_formed() -> None:
    values = [c.value for c in Code]
    assert len(values) == len(set(values)) == len({v.upper() for v in values})
    for c in Code:
        assert c.name == c.value and CODE_SHAPE.match(c.value), c
        assert c == c.value and Code(c.value) is c and lookup(c.value) is c
        assert isinstance(c.category, Category), c
        for text in (c.message, c.fix):
            assert text and text == text.strip() and "\n" not in text and not text.endswith("."), (c, text)
        fields = [f for _, f, _, _ in string.Formatter().parse(c.message) if f is not None]
        assert all(f.isidentifier() for f in fields), (c, fields)
    assert lookup("NO_SUCH_CODE") is None
    assert [c for c in Code if c.category is Category.LAYOUT] == codes("LAYOUT")


def test_fixes_are_specific() -> None:
    filler = re.compile(r"^(fix (it|the (input|error|problem|file))|see (the )?(error|traceback)|report it)$", re.I)
    assert not [c for c in Code if filler.match(c.fix)]
    assert len({c.fix for c in Code}) > 0.9 * len(Code)


# --- the catalog against the verifier's and the gate's catalogs -------------------------------------------------


def test_verifier_findings_are_catalogued_with_the_verifier_hint() -> None:
    from argus.verify.catalog import CATALOG, NOT_PRODUCED

    assert set(NOT_PRODUCED) == VERIFY_NOT_REPORTED
    findings = {c.value for c in Code if c.category is Category.VERIFY} - {"VERIFY_PINNED_SHAPE"}
    assert findings == set(CATALOG) - VERIFY_NOT_REPORTED
    for code in findings:
        assert Code(code).fix == CATALOG[code].hint, code


def test_gate_outcomes_are_catalogued() -> None:
    from argus.eval.codes import CODES

    gate = {c.value for c in Code if c.category is Category.GATE}
    assert set(CODES) - gate == set(GATE_NOT_REPORTED)
    assert gate - set(CODES) == set(GATE_NOT_IN_EVAL_CODES)
    assert not [c for c in Code if c.value in CODES and c.category is not Category.GATE]


# --- the catalog at work ----------------------------------------------------------------------------------------


def test_an_error_without_a_hint_shows_the_catalog_fix() -> None:
    err = ArgusError("DSL_TWO_GRIDS", "a kernel has exactly one T.grid")
    assert err.hint == Code.DSL_TWO_GRIDS.fix
    assert str(err) == f"[DSL_TWO_GRIDS] a kernel has exactly one T.grid\n  hint: {Code.DSL_TWO_GRIDS.fix}"
    assert ArgusError("DSL_TWO_GRIDS", "m", "merge them").hint == "merge them"
    assert ArgusError("NOT_IN_THE_CATALOG", "m").hint is None
    located = LocatedError(Code.DSL_NO_GRID, "kernel k never opened a grid")
    assert located.code == "DSL_NO_GRID" and str(located).startswith("error[DSL_NO_GRID]: kernel k")
    assert located.render().endswith(f"hint: {Code.DSL_NO_GRID.fix}")
    back = pickle.loads(pickle.dumps(located))
    assert back.code is Code.DSL_NO_GRID and str(back) == str(located)


def test_a_traced_error_carries_the_fix() -> None:
    from argus.lang.errors import DSLError

    err = DSLError("DSL_OUTSIDE_KERNEL", "T.grid can only be used inside an @argus.kernel function")
    assert err.hint == Code.DSL_OUTSIDE_KERNEL.fix and "hint: call it from the body of a kernel" in str(err)


# --- the docs ---------------------------------------------------------------------------------------------------


def test_the_docs_are_the_catalog() -> None:
    text = markdown()
    if os.environ.get("ARGUS_UPDATE_GOLDEN"):
        DOC.write_text(text)
    assert DOC.read_text() == text, (
        "docs/diagnostics.md is not the catalog's markdown(); regenerate it:\n"
        "  ARGUS_UPDATE_GOLDEN=1 python -m pytest tests/test_diagnostics_catalog.py"
    )
    for code in Code:
        assert f"\n### {code.value}\n" in text


@pytest.mark.parametrize("category", list(Category))
def test_every_category_has_codes_and_a_description(category: Category) -> None:
    assert codes(category) and category.description
