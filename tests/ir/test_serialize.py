"""The IR's plain-data form (`argus.ir.serialize`): every library kernel round-trips through JSON to a kernel
that prints, generates CUDA and verifies as the original does, with its shared objects shared again; hostile
data is refused with ``IR_SERIALIZE_MALFORMED`` and a path, and IR without a plain-data form with
``IR_SERIALIZE_UNSUPPORTED``."""

from __future__ import annotations

import builtins
import copy
import dataclasses
import importlib
import json
import math
import os
import pickle
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
import z3

from argus.backend.cuda.codegen import generate
from argus.ir import serialize
from argus.ir.expr import BinaryOp, BinOp, Const, SourceLoc, Var, VarKind
from argus.ir.nodes import Alloc, Buffer, For, If, Kernel, Space, TileRef, walk
from argus.ir.printer import format_kernel
from argus.ir.serialize import (
    FORMAT,
    MALFORMED,
    MAX_DEPTH,
    UNSUPPORTED,
    IRSerializeError,
    kernel_from_data,
    kernel_from_json,
    kernel_to_data,
    kernel_to_json,
)
from argus.ir.types import DType, DTypeKind, bf16, f32, i32
from argus.kernels.registry import all_kernels
from argus.layout import ComposedLayout, Layout, Swizzle
from argus.verify import verify

ENTRIES = {e.name: e for e in all_kernels()}


def _traced(name: str) -> Kernel:
    entry = ENTRIES[name]
    return entry.kernel.trace(**entry.params)


def _through_json(kernel: Kernel) -> tuple[dict[str, Any], Kernel]:
    data = kernel_to_data(kernel)
    text = json.dumps(data, allow_nan=False)  # strict JSON: non-finite floats are encoded explicitly
    return data, kernel_from_data(json.loads(text))


def _generated(kernel: Kernel) -> str:
    try:
        return generate(kernel).source
    except Exception as err:  # a construct the generator refuses: the decoded kernel must be refused alike
        return f"{type(err).__name__}: {err}"


def _same_graph(a: Any, b: Any, a_to_b: dict[int, Any], b_to_a: dict[int, Any], path: str = "kernel") -> None:
    """`b` is `a` rebuilt: the same classes, field values and container types (tuples stay tuples, floats stay
    floats), and the same sharing: an object of `a` corresponds to exactly one object of `b` and back."""
    assert type(a) is type(b), f"{path}: {type(a).__name__} became {type(b).__name__}"
    if isinstance(a, DType | VarKind | Space | DTypeKind | BinaryOp) or a is None or isinstance(a, bool):
        assert a is b, path  # registered dtypes and enum members decode to the very same objects
        return
    if type(a) in (int, str):
        assert a == b, path
        return
    if type(a) is float:
        assert a == b or (math.isnan(a) and math.isnan(b)), path
        return
    if type(a) in (tuple, list):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _same_graph(x, y, a_to_b, b_to_a, f"{path}[{i}]")
        return
    if type(a) is dict:
        assert list(a) == list(b), path
        for k in a:
            _same_graph(a[k], b[k], a_to_b, b_to_a, f"{path}[{k!r}]")
        return
    if hasattr(type(a), "__members__"):  # any other enum
        assert a is b, path
        return
    if isinstance(a, np.generic):
        assert a == b or (np.isnan(a) and np.isnan(b)), path
        return
    assert a is not b, f"{path}: the decoded kernel reuses an object of the original"
    if id(a) in a_to_b or id(b) in b_to_a:
        assert a_to_b.get(id(a)) is b and b_to_a.get(id(b)) is a, f"{path}: sharing differs"
        return
    a_to_b[id(a)], b_to_a[id(b)] = b, a
    names = [f.name for f in dataclasses.fields(a)] if dataclasses.is_dataclass(a) else list(type(a).__slots__)
    for name in names:
        _same_graph(getattr(a, name), getattr(b, name), a_to_b, b_to_a, f"{path}.{name}")


def _refs(kernel: Kernel) -> list[TileRef]:
    out: list[TileRef] = []

    def collect(x: Any) -> None:
        if isinstance(x, TileRef):
            out.append(x)
        elif isinstance(x, tuple):
            for e in x:
                collect(e)
        elif dataclasses.is_dataclass(x) and not isinstance(x, Buffer):
            for f in dataclasses.fields(x):
                collect(getattr(x, f.name))

    for s in walk(kernel.body):
        for f in dataclasses.fields(s):
            if f.name not in ("body", "then", "orelse"):
                collect(getattr(s, f.name))
    return out


# --- every library kernel ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(ENTRIES))
def test_library_kernel_round_trips_through_json(name: str) -> None:
    kernel = _traced(name)
    data, back = _through_json(kernel)
    assert type(back) is Kernel and back is not kernel
    assert format_kernel(back) == format_kernel(kernel)
    assert _generated(back) == _generated(kernel)
    # encoding the decoded kernel gives the same data: nothing was lost, added or reordered
    assert kernel_to_data(back) == data
    # the same object graph, sharing included
    _same_graph(kernel, back, {}, {})
    # and, said plainly: every window of a global tensor is a window of the kernel's own parameter object,
    # every shared/fragment window one of a buffer that an Alloc of the body brings into existence
    allocated = [s.buffer for s in walk(back.body) if isinstance(s, Alloc)]
    refs = _refs(back)
    assert refs
    for ref in refs:
        pool = back.tensors if ref.buffer.space == Space.GLOBAL else allocated
        assert any(ref.buffer is b for b in pool), f"{ref.buffer.name} is a copy, not the kernel's buffer"
    # loop variables used in the body are the loops' own Var objects, shape symbols the kernel's
    loop_vars = [s.var for s in walk(back.body) if isinstance(s, For)]
    assert len({id(v) for v in loop_vars}) == len(loop_vars)
    for t in back.tensors:
        for d in t.shape:
            if isinstance(d, Var):
                assert any(d is v for v in back.shape_vars)


def test_a_kernel_that_takes_turns_round_trips() -> None:
    from dataclasses import replace as with_fields

    from argus.ir.nodes import WarpgroupTurn
    from argus.kernels import sdpa

    problem = sdpa.AttentionProblem(2, 4, 4, 256, 256, 64, 64)
    kernel = sdpa.plan(problem, with_fields(sdpa.choose(problem), PINGPONG=True, OVERLAP=False)).kernel()
    data, back = _through_json(kernel)
    assert [s.kind for s in walk(back.body) if isinstance(s, WarpgroupTurn)] == [
        s.kind for s in walk(kernel.body) if isinstance(s, WarpgroupTurn)
    ]
    assert _generated(back) == _generated(kernel) and kernel_to_data(back) == data


def test_encoding_is_deterministic_and_json_safe() -> None:
    kernel = _traced("flash_attention_fwd")
    text = kernel_to_json(kernel)
    assert text == kernel_to_json(kernel) and "NaN" not in text and "Infinity" not in text
    back = kernel_from_json(text)
    assert format_kernel(back) == format_kernel(kernel)


#: Verified library kernels quick to verify (a few tenths of a second each), from small to a warp-specialized GEMM.
VERIFIED = ("vector_add", "softmax", "gemm_mma_sync", "gemm_warp_specialized")
#: Seeded bugs from the verifier's corpus: a race, a tag assertion over -inf padding, an unmasked softmax.
VIOLATED = ("kernels_race_missing_barrier", "kernels_tag_softmax_wrong_rows", "kernels_oob_softmax_unmasked")


_VERIFY_OPTIONS = ("checks", "lookback", "timeout_ms")


def _corpus_kernel(stem: str) -> tuple[Kernel, dict[str, Any]]:
    """A verifier-corpus kernel traced with its file's PARAMS, and the verifier options among them."""
    params = dict(getattr(importlib.import_module(f"tests.verify.corpus.{stem}"), "PARAMS", {}))
    options = {k: params.pop(k) for k in _VERIFY_OPTIONS if k in params}
    target = importlib.import_module(f"tests.verify.corpus.{stem}").KERNEL
    return (target if isinstance(target, Kernel) else target.trace(**params)), options  # IR, or a kernel to trace


def _findings(kernel: Kernel, **options: Any) -> tuple[str, list[tuple]]:
    """The verdict and, per finding, what is stable from run to run: code, verdict, severity, where it points,
    and the kinds and lines of the counterexample's accesses (Z3 picks the counterexample's sizes afresh each
    run, so the values in messages differ between two runs on the very same kernel)."""

    def where(loc: Any) -> str:
        return json.dumps(loc, sort_keys=True)

    result = verify(kernel, **options)
    out = []
    for f in (f.to_json() for f in result.findings):
        cex = f.get("counterexample") or {}
        accesses = tuple((a.get("kind"), where(a.get("loc"))) for a in cex.get("accesses") or ())
        out.append(
            (f["code"], f["verdict"], f["severity"], where(f["loc"]), bool(cex), where(cex.get("op_loc")), accesses)
        )
    return result.verdict.value, sorted(out)


@pytest.mark.parametrize("name", VERIFIED)
def test_decoded_library_kernel_verifies_as_the_original(name: str) -> None:
    kernel = _traced(name)
    _, back = _through_json(kernel)
    verdict, findings = _findings(kernel)
    assert verdict == "verified"
    assert _findings(back) == (verdict, findings)


@pytest.mark.parametrize("module", VIOLATED)
def test_decoded_seeded_bug_is_found_as_in_the_original(module: str) -> None:
    kernel, options = _corpus_kernel(module)
    _, back = _through_json(kernel)
    verdict, findings = _findings(kernel, **options)
    assert verdict == "violated" and findings
    assert _findings(back, **options) == (verdict, findings)  # same codes, same counterexamples, same lines


def test_verifier_corpus_round_trips() -> None:
    """The corpus covers IR the library does not: tags and tag assertions, symbolic tagged windows, padding."""
    import pathlib

    corpus = pathlib.Path(__file__).parents[1] / "verify" / "corpus"
    files = sorted(corpus.glob("kernels_*.py"))
    assert len(files) >= 40
    for path in files:
        kernel, _ = _corpus_kernel(path.stem)
        data, back = _through_json(kernel)
        assert format_kernel(back) == format_kernel(kernel), path.name
        assert kernel_to_data(back) == data, path.name


# --- values that are not IR nodes -------------------------------------------------------------------------------


def _with_params(kernel: Kernel, **extra: Any) -> Kernel:
    return dataclasses.replace(kernel, params=kernel.params + tuple(extra.items()))


def test_python_and_numpy_values_keep_their_types() -> None:
    kernel = _with_params(
        _traced("vector_add"),
        tup=(1, (2.0, "x"), ()),
        lst=[1, [2, 3]],
        dct={"a": 1, 2: (3,)},
        inf=math.inf,
        ninf=-math.inf,
        nan=math.nan,
        neg_zero=-0.0,
        big=2**80,
        i64=np.int64(-5),
        u8=np.uint8(200),
        f32=np.float32(0.5),
        f16inf=np.float16(np.inf),
        flag=np.bool_(True),
        dtype=bf16,
        layout=ComposedLayout(Swizzle(3, 3, 3), 4, Layout((8, (2, 4)), (64, (1, 8)))),
        order=BinaryOp.SHL,
    )
    _, back = _through_json(kernel)
    _same_graph(kernel, back, {}, {})
    params = dict(back.params)
    assert type(params["i64"]) is np.int64 and params["i64"] == -5
    assert type(params["f16inf"]) is np.float16 and np.isinf(params["f16inf"])
    assert math.copysign(1.0, params["neg_zero"]) == -1.0
    assert params["dtype"] is bf16 and params["dct"] == {"a": 1, 2: (3,)}


def test_unsupported_values_are_refused_with_a_path() -> None:
    kernel = _traced("vector_add")
    cases: dict[str, Any] = {
        "a Python callable": lambda x: x,
        "a Python callable (builtin)": print,
        "a numpy array": np.zeros(3),
        "a set": {1, 2},
        "a frozenset": frozenset({1}),
        "a Fraction": Fraction(1, 3),
        "a Z3 term": z3.Int("x"),
        "bytes": b"\x00",
        "a complex": 1j,
        "a numpy complex": np.complex64(1j),
    }
    for what, value in cases.items():
        with pytest.raises(IRSerializeError) as e:
            kernel_to_data(_with_params(kernel, bad=value))
        assert e.value.code == UNSUPPORTED, what
        assert e.value.path == f"kernel.params[{len(kernel.params)}][1]", what
        if "callable" in what:
            assert "callable" in e.value.message
    with pytest.raises(IRSerializeError) as e:
        kernel_to_data("vector_add")  # type: ignore[arg-type]
    assert e.value.code == UNSUPPORTED


def test_foreign_classes_and_dtypes_are_refused() -> None:
    kernel = _traced("vector_add")

    class MyConst(Const):
        pass

    for bad in (MyConst(1), DType("bf16x", 16, DTypeKind.FLOAT, exponent_bits=8, mantissa_bits=7)):
        with pytest.raises(IRSerializeError) as e:
            kernel_to_data(_with_params(kernel, bad=bad))
        assert e.value.code == UNSUPPORTED
    # a field holding what its annotation does not allow
    t0 = kernel.tensors[0]
    broken = dataclasses.replace(kernel, tensors=(dataclasses.replace(t0, threads="128"), *kernel.tensors[1:]))
    with pytest.raises(IRSerializeError) as e:
        kernel_to_data(broken)
    assert e.value.code == UNSUPPORTED and e.value.path == "kernel.tensors[0].threads"


def test_a_cycle_is_refused() -> None:
    kernel = _traced("vector_add")
    loop = If(Const(True, i32), ())
    object.__setattr__(loop, "then", (loop,))  # frozen nodes cannot make a cycle unless forced to
    with pytest.raises(IRSerializeError) as e:
        kernel_to_data(dataclasses.replace(kernel, body=(loop,)))
    assert e.value.code == UNSUPPORTED and "cycle" in e.value.message


def test_error_pickles_with_its_path() -> None:
    err = IRSerializeError(MALFORMED, "bad", "fix it", path="kernel.body[0]")
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is IRSerializeError and back.code == MALFORMED and back.path == "kernel.body[0]"
    assert str(back) == str(err)


# --- hostile data -----------------------------------------------------------------------------------------------


def _data(name: str = "vector_add") -> dict[str, Any]:
    return json.loads(kernel_to_json(_traced(name)))


def _first(data: Any, pred: Any) -> dict[str, Any]:
    """The first JSON object (pre-order) satisfying `pred`."""
    stack = [data]
    while stack:
        x = stack.pop()
        if isinstance(x, dict):
            if pred(x):
                return x
            stack.extend(reversed(list(x.values())))
        elif isinstance(x, list):
            stack.extend(reversed(x))
    raise AssertionError("no such object")


def _of_type(name: str) -> Any:
    return lambda x: x.get("$type") == name


def _malformed(data: Any) -> IRSerializeError:
    with pytest.raises(IRSerializeError) as e:
        kernel_from_data(data)
    assert e.value.code == MALFORMED, str(e.value)
    return e.value


BUFFER = "argus.ir.nodes.Buffer"


def test_valid_data_decodes() -> None:
    assert type(kernel_from_data(_data())) is Kernel


@pytest.mark.parametrize(
    "name",
    [
        "os:system",
        "builtins:eval",
        "os.system",
        "builtins.eval",
        "subprocess.Popen",
        "argus.lang.decorator.KernelFunction",
        "argus.ir.serialize.IRSerializeError",
        "argus.ir.nodes.Stmt",  # an abstract base, not a node a trace holds
        "argus.ir.types.DType",  # dtypes come by name only
        "argus.ir.nodes.Buffer.__init__",
        "",
    ],
)
def test_unknown_class_names_are_refused(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    def trap(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the decoder ran code named by the data")

    monkeypatch.setattr(os, "system", trap)
    monkeypatch.setattr(builtins, "eval", trap)
    monkeypatch.setattr(importlib, "import_module", trap)
    data = _data()
    _first(data, _of_type(BUFFER))["$type"] = name
    err = _malformed(data)
    assert "not in the IR allowlist" in err.message and err.path == "kernel.tensors[0]"


def test_unknown_and_missing_fields_are_refused() -> None:
    data = _data()
    _first(data, _of_type(BUFFER))["__class__"] = "os.system"
    err = _malformed(data)
    assert "no field '__class__'" in err.message and err.path == "kernel.tensors[0]"

    data = _data()
    del _first(data, _of_type(BUFFER))["shape"]
    err = _malformed(data)
    assert "missing its field 'shape'" in err.message

    data = _data()
    _first(data, _of_type("argus.ir.nodes.Copy"))["dtype"] = {"$dtype": "f32"}  # a property, not a field
    err = _malformed(data)
    assert "no field 'dtype'" in err.message and err.path.startswith("kernel.body[")


def test_references_must_name_objects_decoded_before() -> None:
    for bad in (10**6, -1, "0", 1.0, True, None):
        data = _data()
        _first(data, lambda x: "$ref" in x)["$ref"] = bad
        err = _malformed(data)
        assert "names no object" in err.message
    # a reference to an enclosing object (a cycle)
    data = _data("gemm_mma_sync")
    loop = _first(data, _of_type("argus.ir.nodes.For"))
    loop["body"] = [{"$ref": loop["$id"]}]
    assert "cycle" in _malformed(data).message
    # ids must count up: no gaps, no redefinition
    data = _data()
    _first(data, _of_type(BUFFER))["$id"] = 99
    assert "ids count up" in _malformed(data).message


def test_deep_nesting_is_refused_without_recursion_error() -> None:
    nested: Any = 0
    for _ in range(10_000):
        nested = [nested]
    err = _malformed({"format": FORMAT, "kernel": nested})
    assert f"deeper than {MAX_DEPTH}" in err.message and "..." in err.path
    # nested objects of the format's own forms
    plus, i32 = {"$enum": "argus.ir.expr.BinaryOp", "value": "+"}, {"$dtype": "i32"}
    for wrap in (
        lambda inner, _: {"$list": [inner]},
        lambda inner, _: {"$dict": [[1, inner]]},
        lambda inner, ident: {
            "$type": "argus.ir.expr.BinOp",
            "$id": ident,
            **{"op": plus, "lhs": inner, "rhs": 1, "dtype": i32},
        },
    ):
        nested = 0
        for level in reversed(range(10_000)):  # the outermost object is number 0
            nested = wrap(nested, level)
        assert f"deeper than {MAX_DEPTH}" in _malformed({"format": FORMAT, "kernel": nested}).message
    # JSON text too deep for Python's own parser
    with pytest.raises(IRSerializeError) as e:
        kernel_from_json("[" * 200_000 + "]" * 200_000)
    assert e.value.code == MALFORMED


def test_huge_node_count_is_refused() -> None:
    data = _data()
    data["kernel"]["params"] = [[f"p{i}", 0] for i in range(1_000_001)]  # 3,000,004 values
    assert "more than 2000000 values" in _malformed(data).message


def test_exponential_sharing_is_refused() -> None:
    """A small DAG that stands for a huge tree (``e = e + e``, 40 times): what a printer or a code generator
    walks is the tree, so the tree's size is bounded."""
    data = _data()
    ident = _first(data, _of_type("argus.ir.expr.Var"))["$id"]
    objects: list[Any] = []
    # in the kernel's last field, after every other object: ids continue from the last one
    last = max(x["$id"] for x in _all_objects(data))
    e: Any = {"$ref": ident}
    for i in range(40):
        e = {
            "$type": "argus.ir.expr.BinOp",
            "$id": last + 1 + i,
            "op": {"$enum": "argus.ir.expr.BinaryOp", "value": "+"},
            "lhs": e if i == 0 else {"$ref": last + i},
            "rhs": {"$ref": ident} if i == 0 else {"$ref": last + i},
            "dtype": {"$dtype": "i32"},
        }
        objects.append(e)
        e = {"$ref": last + 1 + i}
    data["kernel"]["blocks_per_sm"] = objects
    err = _malformed(data)
    assert "expand to more than" in err.message and err.path.startswith("kernel.blocks_per_sm[")


def _all_objects(data: Any) -> list[dict[str, Any]]:
    out, stack = [], [data]
    while stack:
        x = stack.pop()
        if isinstance(x, dict):
            if "$id" in x:
                out.append(x)
            stack.extend(x.values())
        elif isinstance(x, list):
            stack.extend(x)
    return out


def test_wrong_field_types_are_refused() -> None:
    """Fields are checked against the dataclass annotations, also where the constructor would take anything."""
    cases = [
        (BUFFER, "threads", "128"),  # a string where int | None
        (BUFFER, "threads", True),  # a bool is not an int
        (BUFFER, "threads", 128.0),  # nor is a float
        (BUFFER, "name", 3),
        (BUFFER, "shape", {"$list": [4096]}),  # a list where a tuple
        (BUFFER, "space", "global"),  # a bare string where the enum
        (BUFFER, "dtype", "f32"),  # a bare string where a dtype
        ("argus.ir.nodes.Kernel", "threads", "256"),
        ("argus.ir.nodes.Kernel", "body", [1, 2]),  # ints where statements
        ("argus.ir.nodes.Kernel", "thread_var", {"$dtype": "i32"}),
        ("argus.ir.nodes.TileRef", "extent", [1.5]),
        ("argus.ir.expr.Const", "value", "1"),
        ("argus.ir.nodes.Copy", "pad", True),
    ]
    for type_name, field, value in cases:
        data = _data()
        _first(data, _of_type(type_name))[field] = value
        err = _malformed(data)
        assert field in err.path and "annotation says" in err.message, (type_name, field, value, err)


def test_constructor_validation_is_reported_as_malformed() -> None:
    data = _data("gemm_cp_async_swizzled")
    layout = _first(data, _of_type("argus.layout.layout.Layout"))
    layout["stride"] = [1]  # not congruent with the shape
    assert "Layout refused its fields" in _malformed(data).message

    data = _data("gemm_cp_async_swizzled")
    _first(data, _of_type("argus.layout.swizzle.Swizzle"))["shift"] = "3"
    assert "Swizzle refused" in _malformed(data).message


def test_bad_scalar_forms_are_refused() -> None:
    bad_forms = [
        {"$enum": "argus.ir.nodes.Space", "value": "texture"},
        {"$enum": "os.system", "value": "ls"},
        {"$enum": "argus.ir.nodes.Space"},
        {"$dtype": "bf17"},
        {"$dtype": ["bf16"]},
        {"$float": "Infinity"},
        {"$np": "object", "value": 1},
        {"$np": "int8", "value": 300},
        {"$np": "float32", "value": "1"},
        {"$dict": [[{"$list": []}, 2]]},  # an unhashable key
        {"$dict": [1, 2]},
        {"$list": {"a": 1}},
        {"$ref": 0, "$dtype": "i32"},
        {"whatever": 1},
        {},
    ]
    for form in bad_forms:
        data = _data()
        data["kernel"]["params"] = [["x", form]]
        err = _malformed(data)
        assert err.path.startswith("kernel.params[0][1]"), (form, err.path)


def test_non_json_values_and_bad_envelopes_are_refused() -> None:
    called = []

    class Sneaky:
        def __repr__(self) -> str:
            called.append(1)
            return "sneaky"

    for value in (lambda: None, {1, 2}, (1, 2), Sneaky(), b"x", np.int64(1)):
        data = _data()
        data["kernel"]["params"] = [["x", value]]
        assert "unexpected value of type" in _malformed(data).message
    assert not called  # the decoder does not even call repr() on a foreign object
    _malformed([])
    _malformed({"format": FORMAT})
    _malformed({"format": "argus.ir/0", "kernel": _data()["kernel"]})
    _malformed({"format": FORMAT, "kernel": 5, "extra": 1})
    _malformed({"format": FORMAT, "kernel": 5})  # not a Kernel
    _malformed({"format": FORMAT, "kernel": _first(_data(), _of_type(BUFFER))})
    for text in ("", "{", "nope", b"\xff\xfe"):
        with pytest.raises(IRSerializeError) as e:
            kernel_from_json(text)
        assert e.value.code == MALFORMED


def test_decoding_does_not_mutate_its_input() -> None:
    data = _data("softmax")
    before = copy.deepcopy(data)
    kernel_from_data(data)
    assert data == before


# --- the allowlist ----------------------------------------------------------------------------------------------


def test_allowlist_is_the_ir_classes() -> None:
    assert set(serialize.ALLOWED_CLASSES) == {
        *(
            f"argus.ir.expr.{n}"
            for n in ("BinOp", "BinaryOp", "Const", "Element", "Select", "SourceLoc", "Var", "VarKind")
        ),
        *(
            f"argus.ir.nodes.{n}"
            for n in (
                "Alloc",
                "AsyncCommit",
                "AsyncWait",
                "Barrier",
                "BarrierKind",
                "Broadcast",
                "Buffer",
                "Copy",
                "Fence",
                "FenceKind",
                "Fill",
                "For",
                "GroupBarrier",
                "Gather",
                "Gemm",
                "If",
                "Im2col",
                "Kernel",
                "Let",
                "LoopKind",
                "Map",
                "MapOp",
                "MbarrierArrive",
                "MbarrierInit",
                "MbarrierWait",
                "PartialOutput",
                "PartialSums",
                "Policies",
                "Reduce",
                "ReduceOp",
                "Role",
                "Space",
                "TileOrder",
                "TileRef",
                "TurnKind",
                "ValueAssumption",
                "WarpgroupTurn",
                "WgmmaWait",
            )
        ),
        *(f"argus.ir.tags.{n}" for n in ("AssertTag", "AssertTagEq", "Tag", "TagExpr", "TagNameIs", "TagPlaceholder")),
        "argus.ir.types.DTypeKind",
        "argus.layout.layout.Layout",
        "argus.layout.swizzle.ComposedLayout",
        "argus.layout.swizzle.Swizzle",
    }


def test_every_dataclass_field_is_type_checked() -> None:
    """Each field of each allowlisted dataclass has an annotation the checker understands (a new annotation
    form would otherwise go unchecked)."""
    for spec in serialize._CLASSES.values():
        if dataclasses.is_dataclass(spec.cls):
            unchecked = [f for f, check in zip(spec.fields, spec.checks, strict=True) if check is None]
            assert not unchecked, f"{spec.name}: {unchecked}"


def test_handmade_kernel_with_every_kind_of_sharing() -> None:
    """A small kernel built by hand: one Var in the grid, the shape, a loop bound and an expression; one Buffer
    in two windows; one SourceLoc on several statements."""
    n = Var("N", VarKind.SHAPE)
    bx = Var("bx", VarKind.BLOCK)
    tx = Var("tx", VarKind.THREAD)
    i = Var("i", VarKind.LOOP)
    loc = SourceLoc("k.py", 3, 4, "    T.copy(...)")
    a = Buffer("A", Space.GLOBAL, f32, (n,), strides=(1,))
    s = Buffer("sA", Space.SHARED, f32, (128,), layout=Layout(128), loc=loc)
    body = (
        Alloc(s, loc=loc),
        For(
            i,
            BinOp(BinaryOp.FLOORDIV, n, Const(128), i32),
            (If(i < n, (Alloc(s, loc=loc),), loc=loc),),
            start=bx * 2,
            loc=loc,
        ),
    )
    kernel = Kernel("handmade", (a,), (n,), (n,), (bx,), 128, tx, body, params=(("N", None),))
    _, back = _through_json(kernel)
    _same_graph(kernel, back, {}, {})
    loop = back.body[1]
    assert isinstance(loop, For) and loop.var is loop.body[0].cond.lhs
    assert back.body[0].buffer is loop.body[0].then[0].buffer
    assert back.body[0].loc is loop.loc and back.shape_vars[0] is back.tensors[0].shape[0] is back.grid[0]


def test_the_library_gemm_has_the_expected_size() -> None:
    """The format stays compact: the expert persistent GEMM is well under 100 kB of JSON."""
    assert len(kernel_to_json(_traced("gemm_hopper_persistent"))) < 100_000
