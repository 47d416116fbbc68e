"""The plain-data form of a traced kernel: `kernel_to_data` and its inverse `kernel_from_data`.

Owns the one wire format in which IR crosses a process boundary. A candidate kernel's Python runs
(is traced) in a sandboxed process; the judging process receives the IR as JSON and verifies,
compiles and cost-models exactly that IR without running candidate code, so the decoder treats its
input as hostile: it builds only classes of an allowlist fixed at import time, calls nothing the
data names, and bounds size and depth. Never pickle.

The format (``FORMAT``): ``{"format": "argus.ir/1", "kernel": VALUE}``, where a VALUE is

* a JSON string, integer, bool or null, or a finite float, as itself;
* a tuple as a JSON array (tuples are the IR's sequences, so they take the short form);
* ``{"$float": "inf" | "-inf" | "nan"}`` — a non-finite float (the output is strict JSON);
* ``{"$list": [...]}`` and ``{"$dict": [[KEY, VALUE], ...]}`` — a list, a dict (only in ``Any`` fields);
* ``{"$enum": "argus.ir.nodes.Space", "value": "shared"}`` — an IR enum member, by class and value;
* ``{"$dtype": "bf16"}`` — one of the registered dtypes of `argus.ir.types`, decoded to that very object;
* ``{"$np": "int64", "value": 8}`` — a numpy scalar of a plain numeric type;
* ``{"$type": "argus.ir.nodes.Buffer", "$id": 7, FIELD: VALUE, ...}`` — an instance of an allowlisted
  class with every one of its constructor fields; ``{"$ref": 7}`` — that same object again.

Every object (IR dataclass or layout) is memoized by identity: ids count up from 0 in the order
objects are first met (pre-order), and a later occurrence is a ``$ref``. So an object referenced from
several places (a `Buffer` by its `Alloc` and by every `TileRef`, a loop `Var` by the expressions of its
body) decodes to one object again, as identity-compared nodes (``eq=False``) need.

The allowlist (`ALLOWED_CLASSES`) is every dataclass and enum defined in `argus.ir.expr`,
`argus.ir.nodes` and `argus.ir.tags` (but the abstract `Stmt`), `DTypeKind`, and the layout classes
`Layout`, `Swizzle` and `ComposedLayout` (built through their validating constructors). Dataclass
fields are checked against their annotations on both sides (an ``int`` field holds an int, not a
bool or a string; a ``tuple[Expr | int, ...]`` holds a tuple of those; `_ANNOTATION_OVERRIDES` lists
the one annotation the tracer outgrows), then the object is built with ``cls(**fields)``, so
``__post_init__`` validation runs; fields with ``init=False`` are derived and never sent.

Bounds, on both sides (so whatever encodes also decodes): `MAX_NODES` values, `MAX_DEPTH` levels of
nesting, and `MAX_EXPANDED` values with shared objects counted at every reference (a small DAG must not
stand for an exponentially large tree that the printer or the code generator would walk).

What the IR can hold that is refused (`IRSerializeError` ``IR_SERIALIZE_UNSUPPORTED``): Python
callables (a trace-time parameter whose default is a function ends up in `Kernel.params`), numpy
arrays, sets, Z3 terms, fractions, dtypes that are not registered, subclasses of IR classes, and
anything else not listed above. Malformed input raises ``IR_SERIALIZE_MALFORMED`` with a path to the
offending value (``kernel.body[3].dst.buffer``).
"""

from __future__ import annotations

import dataclasses
import json
import math
import reprlib
import types
import typing
from collections.abc import Callable
from enum import Enum
from typing import Any

import numpy as np

from argus.diagnostics import ArgusError
from argus.ir import expr as ir_expr
from argus.ir import nodes as ir_nodes
from argus.ir import tags as ir_tags
from argus.ir.nodes import Kernel
from argus.ir.types import DType, DTypeKind, all_dtypes
from argus.layout import ComposedLayout, Layout, Swizzle

#: The format tag of `kernel_to_data`'s output; `kernel_from_data` accepts this one only.
FORMAT = "argus.ir/1"
#: At most this many values (objects, containers and scalars) in one kernel's data.
MAX_NODES = 2_000_000
#: At most this much nesting of JSON arrays and objects.
MAX_DEPTH = 200
#: At most this many values with shared objects counted at every reference: the size of the tree that a
#: printer or an expression walk visits, bounded so that a small DAG (``e = e + e`` forty times) cannot
#: stand for an exponentially large one. The library's kernels are under 10,000.
MAX_EXPANDED = 20_000_000
#: `kernel_from_json` refuses longer texts before parsing them.
MAX_JSON_CHARS = 64 * 1024 * 1024

UNSUPPORTED = "IR_SERIALIZE_UNSUPPORTED"
MALFORMED = "IR_SERIALIZE_MALFORMED"


class IRSerializeError(ArgusError, ValueError):
    """The IR could not be encoded (code ``IR_SERIALIZE_UNSUPPORTED``: it holds a value the format has
    no form for) or decoded (code ``IR_SERIALIZE_MALFORMED``: the data is not what `kernel_to_data`
    writes). `path` says where, e.g. ``kernel.body[3].src`` (also part of the message)."""

    def __init__(
        self,
        code: str,
        message: str,
        hint: str | None = None,
        *,
        path: str = "",
        requirement: str | None = None,
        actual: Any = None,
    ) -> None:
        self.path = path
        super().__init__(code, message, hint, requirement=requirement, actual=actual)

    def __reduce__(self) -> tuple:
        return (_rebuild, (type(self), self.code, self.message, self.hint, self.path, self.requirement, self.actual))


def _rebuild(cls: type, code: str, message: str, hint: Any, path: str, requirement: Any, actual: Any) -> Any:
    return cls(code, message, hint, path=path, requirement=requirement, actual=actual)


# --- the allowlist, built from the IR modules at import time ---------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _ClassSpec:
    """How one allowlisted class is sent: its wire name, its constructor fields in order, and a check
    per field (None: the constructor itself validates)."""

    name: str
    cls: type
    fields: tuple[str, ...]
    checks: tuple[Callable[[Any], bool] | None, ...]
    expected: tuple[str, ...]  # each field's annotation, as text for messages
    keys: frozenset[str] = frozenset()  # the keys of its wire object: "$type", "$id" and the fields

    def __post_init__(self) -> None:
        object.__setattr__(self, "keys", frozenset((*self.fields, "$type", "$id")))


def _wire_name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _any(_: Any) -> bool:
    return True


def _is_int(v: Any) -> bool:
    return type(v) is int or isinstance(v, np.integer)


def _is_float(v: Any) -> bool:
    return type(v) in (float, int) or isinstance(v, np.floating | np.integer)


def _is_bool(v: Any) -> bool:
    return type(v) is bool or isinstance(v, np.bool_)


def _is_none(v: Any) -> bool:
    return v is None


def _is_str(v: Any) -> bool:
    return isinstance(v, str)


def _annotation_check(tp: Any) -> Callable[[Any], bool] | None:
    """A predicate for values of annotation `tp`, or None for a form it does not know."""
    if tp is Any:
        return _any
    if tp is type(None) or tp is None:
        return _is_none
    if tp is int:
        return _is_int
    if tp is float:
        return _is_float
    if tp is bool:
        return _is_bool
    if tp is str:
        return _is_str
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Union or origin is types.UnionType:
        parts = [_annotation_check(a) for a in args]
        if any(p is None for p in parts):
            return None
        options = tuple(p for p in parts if p is not None)
        return lambda v: any(p(v) for p in options)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            each = _annotation_check(args[0])
            if each is None:
                return None
            return lambda v: type(v) is tuple and all(each(e) for e in v)
        parts = [_annotation_check(a) for a in args]
        if any(p is None for p in parts):
            return None
        checks = tuple(p for p in parts if p is not None)

        def fixed(v: Any) -> bool:
            return type(v) is tuple and len(v) == len(checks) and all(p(e) for p, e in zip(checks, v, strict=True))

        return fixed
    if origin is typing.Literal:
        allowed = args
        return lambda v: any(type(v) is type(a) and v == a for a in allowed)
    if isinstance(tp, type) and origin is None:
        return lambda v: isinstance(v, tp)
    return None


def _annotation_text(tp: Any) -> str:
    if tp is type(None) or tp is None:
        return "None"
    if tp is Any:
        return "Any"
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Union or origin is types.UnionType:
        return " | ".join(_annotation_text(a) for a in args)
    if origin is tuple:
        inner = ", ".join("..." if a is Ellipsis else _annotation_text(a) for a in args)
        return f"tuple[{inner}]"
    if isinstance(tp, type):
        return tp.__name__
    return str(tp)


#: Fields whose annotation in the IR understates what the tracer stores there: the type checked instead.
#: Drop an entry once the node's own annotation says it.
_ANNOTATION_OVERRIDES: dict[tuple[type, str], Any] = {
    # a tag on a whole global tensor (argus.ir.tags.Tag) has its symbolic extents: (M, K)
    (ir_nodes.TileRef, "extent"): tuple[ir_expr.Expr | int, ...],
}


def _dataclass_spec(cls: type) -> _ClassSpec:
    hints = typing.get_type_hints(cls)
    for (owner, name), tp in _ANNOTATION_OVERRIDES.items():
        if owner is cls:
            hints[name] = tp
    fields = tuple(f for f in dataclasses.fields(cls) if f.init)
    return _ClassSpec(
        name=_wire_name(cls),
        cls=cls,
        fields=tuple(f.name for f in fields),
        checks=tuple(_annotation_check(hints[f.name]) for f in fields),
        expected=tuple(_annotation_text(hints[f.name]) for f in fields),
    )


def _layout_spec(cls: type, fields: tuple[str, ...]) -> _ClassSpec:
    """A layout class (not a dataclass): its slots are its constructor's arguments, which it validates."""
    return _ClassSpec(_wire_name(cls), cls, fields, tuple(None for _ in fields), tuple("" for _ in fields))


#: Abstract bases defined in the IR modules that no traced kernel holds an instance of.
_ABSTRACT = (ir_nodes.Stmt,)


def _build_registry() -> tuple[dict[str, _ClassSpec], dict[str, type[Enum]]]:
    classes: dict[str, _ClassSpec] = {}
    enums: dict[str, type[Enum]] = {_wire_name(DTypeKind): DTypeKind}
    for module in (ir_expr, ir_nodes, ir_tags):
        for obj in vars(module).values():
            if not isinstance(obj, type) or obj.__module__ != module.__name__ or obj in _ABSTRACT:
                continue
            if issubclass(obj, Enum):
                enums[_wire_name(obj)] = obj
            elif dataclasses.is_dataclass(obj):
                classes[_wire_name(obj)] = _dataclass_spec(obj)
    for cls, fields in ((Layout, ("shape", "stride")), (Swizzle, ("bits", "base", "shift"))):
        classes[_wire_name(cls)] = _layout_spec(cls, fields)
    classes[_wire_name(ComposedLayout)] = _layout_spec(ComposedLayout, ("inner", "offset", "outer"))
    return classes, enums


_CLASSES, _ENUMS = _build_registry()
_SPEC_OF: dict[type, _ClassSpec] = {spec.cls: spec for spec in _CLASSES.values()}
_ENUM_NAME: dict[type, str] = {cls: name for name, cls in _ENUMS.items()}
_DTYPES: dict[str, DType] = {d.name: d for d in all_dtypes()}
_NUMPY_SCALARS: dict[str, type] = {
    np.dtype(t).name: t
    for t in (
        np.bool_,
        np.int8,
        np.int16,
        np.int32,
        np.int64,
        np.uint8,
        np.uint16,
        np.uint32,
        np.uint64,
        np.float16,
        np.float32,
        np.float64,
    )
}
_NUMPY_NAME: dict[type, str] = {t: name for name, t in _NUMPY_SCALARS.items()}

#: The wire names of every class and enum `kernel_from_data` may build, sorted.
ALLOWED_CLASSES: tuple[str, ...] = tuple(sorted([*_CLASSES, *_ENUMS]))

_NONFINITE = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}


# --- errors with paths ------------------------------------------------------------------------------------------


class _Fail(Exception):
    """An encoding or decoding failure on its way up; each level appends its path component."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.path: list[str] = []  # innermost first


def _format_path(components: list[str]) -> str:
    parts = list(reversed(components))
    if len(parts) > 24:
        parts = [*parts[:12], "...", *parts[-12:]]
    return "kernel" + "".join(p if p.startswith("[") or p == "..." else f".{p}" for p in parts)


def _error(code: str, fail: _Fail, hint: str) -> IRSerializeError:
    path = _format_path(fail.path)
    return IRSerializeError(code, f"{fail.reason} (at {path})", hint, path=path)


# --- encoding ---------------------------------------------------------------------------------------------------


class _Walk:
    """What the encoder and the decoder count alike: values (`MAX_NODES`), values with shared objects counted once
    per reference (`expanded`, for `MAX_EXPANDED`; `sizes`: id -> values in that object's tree) and depth."""

    def __init__(self, has: str, nests: str) -> None:
        self.sizes: list[int] = []
        self.nodes = 0
        self.expanded = 0
        self._has, self._nests = has, nests

    def value(self, x: Any, depth: int) -> Any:
        raise NotImplementedError

    def sequence(self, x: tuple | list, depth: int) -> list:
        """Each element's `value`, a failure naming the element's index in its path."""
        out = []
        i = 0
        try:
            for i, e in enumerate(x):  # noqa: B007 - `i` names the failing element
                out.append(self.value(e, depth + 1))
        except _Fail as fail:
            fail.path.append(f"[{i}]")
            raise
        return out

    def count(self, depth: int) -> None:
        """One more value at `depth`; `_Fail` past a limit."""
        self.nodes += 1
        self.expanded += 1
        if self.nodes > MAX_NODES:
            raise _Fail(f"{self._has} more than {MAX_NODES} values")
        if depth > MAX_DEPTH:
            raise _Fail(f"{self._nests} deeper than {MAX_DEPTH} levels")


class _Encoder(_Walk):
    def __init__(self) -> None:
        super().__init__("the kernel has", "the IR nests")
        self.ids: dict[int, int] = {}  # id(object) -> wire id
        self.open: set[int] = set()  # wire ids of objects being encoded (a reference to one is a cycle)

    def value(self, x: Any, depth: int) -> Any:
        self.count(depth)
        t = type(x)
        if t is str or t is int or t is bool or x is None:
            return x
        if t is float:
            if math.isfinite(x):
                return x
            return {"$float": "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")}
        if t is tuple:
            return self.sequence(x, depth)
        spec = _SPEC_OF.get(t)
        if spec is not None:
            return self.instance(x, spec, depth)
        enum_name = _ENUM_NAME.get(t)
        if enum_name is not None:
            return {"$enum": enum_name, "value": x.value}
        if t is DType:
            if _DTYPES.get(x.name) != x:
                raise _Fail(f"dtype {x.name!r} is not one of argus's registered dtypes ({', '.join(_DTYPES)})")
            return {"$dtype": x.name}
        if t is list:
            return {"$list": self.sequence(x, depth)}
        if t is dict:
            return {"$dict": self.mapping(x, depth)}
        if t in _NUMPY_NAME:
            return {"$np": _NUMPY_NAME[t], "value": self.value(x.item(), depth + 1)}
        raise _Fail(_unsupported_reason(x))

    def mapping(self, x: dict, depth: int) -> list:
        out = []
        i = 0
        try:
            for i, (k, v) in enumerate(x.items()):  # noqa: B007 - `i` names the failing entry
                out.append([self.value(k, depth + 2), self.value(v, depth + 2)])
        except _Fail as fail:
            fail.path.append(f"[{i}]")
            raise
        return out

    def instance(self, x: Any, spec: _ClassSpec, depth: int) -> dict:
        known = self.ids.get(id(x))
        if known is not None:
            if known in self.open:
                raise _Fail(f"{spec.cls.__name__} object #{known} contains itself (a cycle)")
            self.expanded += self.sizes[known]
            if self.expanded > MAX_EXPANDED:
                raise _Fail(f"the kernel's shared objects expand to more than {MAX_EXPANDED} values")
            return {"$ref": known}
        ident = len(self.ids)
        self.ids[id(x)] = ident
        self.open.add(ident)
        self.sizes.append(0)
        start = self.expanded
        out: dict[str, Any] = {"$type": spec.name, "$id": ident}
        for name, check, expected in zip(spec.fields, spec.checks, spec.expected, strict=True):
            v = getattr(x, name)
            try:
                if check is not None and not check(v):
                    raise _Fail(f"{spec.cls.__name__}.{name} holds {_describe(v)}, but its annotation says {expected}")
                out[name] = self.value(v, depth + 1)
            except _Fail as fail:
                fail.path.append(name)
                raise
        self.open.discard(ident)
        self.sizes[ident] = self.expanded - start
        return out


_SHORT = reprlib.Repr()
_SHORT.maxstring = _SHORT.maxother = 60


def _describe(v: Any) -> str:
    """A short text for a value in a message (bounded: hostile strings and lists may be huge)."""
    return f"{_SHORT.repr(v)} ({type(v).__name__})"


def _unsupported_reason(x: Any) -> str:
    t = type(x)
    if any(issubclass(t, known) for known in _SPEC_OF) or t.__module__.startswith("argus."):
        return f"{_describe(x)} is of class {_wire_name(t)}, which is not in the IR allowlist"
    if callable(x):
        return (
            f"{_describe(x)} is a Python callable: IR crosses processes as plain data and the judge never runs "
            "candidate code"
        )
    if isinstance(x, np.ndarray):
        return f"a numpy array {_describe(x)} has no plain-data form in the IR"
    return f"{_describe(x)} has no plain-data form in the IR"


_ENCODE_HINT = (
    "IR holds only argus IR nodes, layouts, registered dtypes, Python scalars, tuples, lists and dicts; trace-time "
    "parameters must be such values too (a function or an array cannot be one)"
)


def kernel_to_data(kernel: Kernel) -> dict[str, Any]:
    """JSON-safe data for a traced kernel: dicts, lists, str, int, float (finite), bool and None only,
    so ``json.dumps(data, allow_nan=False)`` succeeds. ``kernel_from_data(json.loads(json.dumps(data)))``
    is a kernel that prints, generates and verifies as `kernel` does, with the same objects shared.

    Raises `IRSerializeError` (``IR_SERIALIZE_UNSUPPORTED``) naming the path of a value the format has
    no form for (a Python callable, a numpy array, an unregistered dtype...), of a field whose value does
    not match its annotation, of a cycle, or when the IR exceeds `MAX_NODES` values, `MAX_DEPTH` levels or
    `MAX_EXPANDED` values counting shared objects at every reference."""
    if type(kernel) is not Kernel:
        raise IRSerializeError(
            UNSUPPORTED,
            f"kernel_to_data takes a traced argus Kernel, got {type(kernel).__name__}",
            "trace it first: fn.trace(**params)",
        )
    try:
        return {"format": FORMAT, "kernel": _Encoder().value(kernel, 1)}
    except _Fail as fail:
        raise _error(UNSUPPORTED, fail, _ENCODE_HINT) from None
    except RecursionError:
        raise IRSerializeError(UNSUPPORTED, "the IR nests too deeply to encode", _ENCODE_HINT) from None


def kernel_to_json(kernel: Kernel) -> str:
    """`kernel_to_data` as strict JSON text (no NaN or Infinity literals)."""
    return json.dumps(kernel_to_data(kernel), allow_nan=False, separators=(",", ":"))


# --- decoding ---------------------------------------------------------------------------------------------------

_PENDING = object()  # the slot of an object whose fields are still being decoded


class _Decoder(_Walk):
    def __init__(self) -> None:
        super().__init__("the data has", "the data nests")
        self.objects: list[Any] = []

    def value(self, x: Any, depth: int) -> Any:
        self.count(depth)
        t = type(x)
        if t is str or t is int or t is bool or t is float or x is None:
            return x
        if t is list:
            return tuple(self.sequence(x, depth))
        if t is dict:
            return self.tagged(x, depth)
        raise _Fail(f"unexpected value of type {t.__name__}: the data may hold only JSON values")

    def tagged(self, x: dict, depth: int) -> Any:
        if "$type" in x:
            return self.instance(x, depth)
        if "$ref" in x:
            _keys(x, ("$ref",))
            ident = x["$ref"]
            if type(ident) is not int or not 0 <= ident < len(self.objects):
                raise _Fail(f"reference {_describe(ident)} names no object decoded before it")
            obj = self.objects[ident]
            if obj is _PENDING:
                raise _Fail(f"reference to object #{ident} from inside that object (a cycle)")
            self.expanded += self.sizes[ident]
            if self.expanded > MAX_EXPANDED:
                raise _Fail(f"the data's shared objects expand to more than {MAX_EXPANDED} values")
            return obj
        if "$enum" in x:
            _keys(x, ("$enum", "value"))
            name = x["$enum"]
            cls = _ENUMS.get(name) if type(name) is str else None
            if cls is None:
                raise _Fail(f"unknown enum {_describe(name)}: not in the IR allowlist")
            try:
                return cls(x["value"])
            except (ValueError, TypeError):
                raise _Fail(f"{_describe(x['value'])} is not a value of {cls.__name__}") from None
        if "$dtype" in x:
            _keys(x, ("$dtype",))
            name = x["$dtype"]
            dtype = _DTYPES.get(name) if type(name) is str else None
            if dtype is None:
                raise _Fail(f"unknown dtype {_describe(name)}; known: {', '.join(_DTYPES)}")
            return dtype
        if "$float" in x:
            _keys(x, ("$float",))
            text = x["$float"]
            if type(text) is not str or text not in _NONFINITE:
                raise _Fail(f"$float must be 'inf', '-inf' or 'nan', got {_describe(text)}")
            return _NONFINITE[text]
        if "$list" in x:
            _keys(x, ("$list",))
            items = x["$list"]
            if type(items) is not list:
                raise _Fail(f"$list holds {_describe(items)}, expected an array")
            return self.sequence(items, depth)
        if "$dict" in x:
            _keys(x, ("$dict",))
            return self.mapping(x["$dict"], depth)
        if "$np" in x:
            _keys(x, ("$np", "value"))
            return self.numpy_scalar(x["$np"], self.value(x["value"], depth + 1))
        raise _Fail(f"an object with keys {sorted(map(str, x))[:6]} is none of the format's forms")

    def mapping(self, entries: Any, depth: int) -> dict:
        if type(entries) is not list:
            raise _Fail(f"$dict holds {_describe(entries)}, expected an array of [key, value] pairs")
        out: dict = {}
        i = 0
        try:
            for i, entry in enumerate(entries):  # noqa: B007 - `i` names the failing entry
                if type(entry) is not list or len(entry) != 2:
                    raise _Fail(f"a $dict entry must be a [key, value] pair, got {_describe(entry)}")
                key = self.value(entry[0], depth + 2)
                try:
                    hash(key)
                except TypeError:
                    raise _Fail(f"a $dict key must be hashable, got {_describe(key)}") from None
                out[key] = self.value(entry[1], depth + 2)
        except _Fail as fail:
            fail.path.append(f"[{i}]")
            raise
        return out

    def numpy_scalar(self, name: Any, v: Any) -> Any:
        t = _NUMPY_SCALARS.get(name) if type(name) is str else None
        if t is None:
            raise _Fail(f"unknown numpy scalar type {_describe(name)}; known: {', '.join(_NUMPY_SCALARS)}")
        if t is np.bool_:
            ok = type(v) is bool
        elif issubclass(t, np.integer):
            info = np.iinfo(t)
            ok = type(v) is int and info.min <= v <= info.max
        else:
            ok = type(v) is float
        if not ok:
            raise _Fail(f"{_describe(v)} is not a value of numpy {name}")
        return t(v)

    def instance(self, x: dict, depth: int) -> Any:
        name = x["$type"]
        spec = _CLASSES.get(name) if type(name) is str else None
        if spec is None:
            raise _Fail(f"unknown class {_describe(name)}: not in the IR allowlist")
        ident = x.get("$id")
        if type(ident) is not int or ident != len(self.objects):
            raise _Fail(f"{spec.cls.__name__} has $id {_describe(ident)}, expected {len(self.objects)} (ids count up)")
        if len(x) != len(spec.keys) or not spec.keys.issuperset(x):
            unknown = [k for k in x if k not in spec.keys]
            if unknown:
                raise _Fail(f"{spec.cls.__name__} has no field {_describe(unknown[0])}")
            missing = [f for f in spec.fields if f not in x]
            raise _Fail(f"{spec.cls.__name__} is missing its field {missing[0]!r}")
        self.objects.append(_PENDING)
        self.sizes.append(0)
        start = self.expanded
        kwargs: dict[str, Any] = {}
        for field, check, expected in zip(spec.fields, spec.checks, spec.expected, strict=True):
            try:
                v = self.value(x[field], depth + 1)
                if check is not None and not check(v):
                    raise _Fail(f"{spec.cls.__name__}.{field} holds {_describe(v)}, but its annotation says {expected}")
            except _Fail as fail:
                fail.path.append(field)
                raise
            kwargs[field] = v
        try:
            obj = spec.cls(**kwargs)
        except Exception as err:  # the allowlisted constructor's own validation (LayoutError, DTypeError, ...)
            raise _Fail(f"{spec.cls.__name__} refused its fields: {err}") from None
        self.objects[ident] = obj
        self.sizes[ident] = self.expanded - start
        return obj


def _keys(x: dict, allowed: tuple[str, ...]) -> None:
    if len(x) != len(allowed) or any(k not in x for k in allowed):
        raise _Fail(f"a {allowed[0]} object has keys {sorted(map(str, x))[:6]}, expected exactly {list(allowed)}")


_DECODE_HINT = "pass the output of argus.ir.serialize.kernel_to_data (through JSON) unchanged"


def kernel_from_data(data: dict[str, Any]) -> Kernel:
    """The kernel `data` describes (the inverse of `kernel_to_data`); safe for hostile input.

    Builds only allowlisted classes (`ALLOWED_CLASSES`), with exactly their declared constructor fields,
    each checked against its annotation, then through the class's constructor; references only objects
    decoded before; at most `MAX_NODES` values, `MAX_DEPTH` levels and `MAX_EXPANDED` values counting shared
    objects at every reference. Anything else raises
    `IRSerializeError` (``IR_SERIALIZE_MALFORMED``) with the path of the offending value."""
    try:
        if type(data) is not dict:
            raise _Fail(f"the data must be an object, got {_describe(data)}")
        _keys(data, ("format", "kernel"))
        if data["format"] != FORMAT:
            raise _Fail(f"format {_describe(data['format'])} is not {FORMAT!r}")
        kernel = _Decoder().value(data["kernel"], 1)
        if type(kernel) is not Kernel:
            raise _Fail(f"the top-level object is {_describe(kernel)}, not a Kernel")
        return kernel
    except _Fail as fail:
        raise _error(MALFORMED, fail, _DECODE_HINT) from None
    except RecursionError:  # only from a caller already deep in the stack: MAX_DEPTH bounds our own recursion
        raise IRSerializeError(MALFORMED, "the data nests too deeply to decode", _DECODE_HINT) from None


def kernel_from_json(text: str | bytes) -> Kernel:
    """`kernel_from_data` of JSON text, with the parse bounded too (at most `MAX_JSON_CHARS` characters;
    JSON too deep for the parser is malformed, not a `RecursionError`)."""
    if len(text) > MAX_JSON_CHARS:
        raise IRSerializeError(MALFORMED, f"the JSON text has {len(text)} characters, more than {MAX_JSON_CHARS}")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as err:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise IRSerializeError(MALFORMED, f"not JSON: {str(err)[:200]}", _DECODE_HINT) from None
    return kernel_from_data(data)


__all__ = [
    "ALLOWED_CLASSES",
    "FORMAT",
    "MALFORMED",
    "MAX_DEPTH",
    "MAX_EXPANDED",
    "MAX_JSON_CHARS",
    "MAX_NODES",
    "UNSUPPORTED",
    "IRSerializeError",
    "kernel_from_data",
    "kernel_from_json",
    "kernel_to_data",
    "kernel_to_json",
]
