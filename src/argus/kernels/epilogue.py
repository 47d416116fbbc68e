"""Fused GEMM epilogues: ``C = f(A @ B, operands)`` for any elementwise `f` of the f32 accumulator with per-column
vectors (a bias), per-row vectors, tensors of C's shape (a residual), one-element tensors (a scale held on the
device) and constants, computed in registers before C is stored, so that the product never makes a round trip
through memory.

An `Epilogue` is data: the DSL statements of `f`, over the name ``acc`` (the accumulator tile) and the names of
its operands (each an `EpilogueOperand`: a per-column vector ``(N,)``, a per-row vector ``(M,)``, a tile
``(M, N)`` or a scalar ``(1,)``), and the name of the result. `fused_kernels` writes the three kernels that apply it,
as source text:

* ``gemm_fused_<key>``: `argus.kernels.gemm.persistent_gemm` (the persistent warp-specialized Hopper GEMM) whose
  consumers apply `f` to each tile's accumulator before the store; every operand is one more tensor parameter
  (``epi_<name>``), loaded for the tile in the accumulator's layout by `argus.kernels.gemm.epilogue_columns` and its
  two siblings, with a tag
  assertion that element (i, j) of the tile is given the operand's element of the tile's row i and column j.
* ``gemm_split_reduce_fused_<key>``: `argus.kernels.gemm.split_reduce` applying `f` to the summed slices of a
  split-K product (split-K stores f32 partial products; the epilogue runs once, on the sum).
* ``gemm_tail_reduce_fused_<key>``: `argus.kernels.gemm.tail_reduce` applying `f` to the summed splits of a split
  tail's tiles (the whole waves' tiles get it from ``gemm_fused_<key>`` with PART="whole").

A reducing epilogue (`Epilogue.reduce`: a sum, mean, max, min or logsumexp of each row of the result) stores no C:
its main and split-K kernels take the partials P (M, NP) in C's place and end the epilogue with
`argus.kernels.gemm.epilogue_reduce` (each tile's rows reduced in registers, the padding masked out by index, one
partial per row and column tile), which `argus.kernels.gemm.gemm_reduce_partials` combines; it has no split-tail
kernel.

The kernels are ordinary DSL kernels: traced, verified, interpreted and compiled like the library's own, their
source registered with `linecache` under ``<argus epilogue KEY>`` so that errors, the IR's names and the
verifier's counterexamples point at the epilogue's own lines. `key` is a hash of the epilogue, so one epilogue
always gives the same kernels (and kernel names).

The statements are trusted code, run when the kernels are traced: an `Epilogue` comes from argus's own front end
(`argus solve`) or from the user's program, never from a candidate under judgement.
"""

from __future__ import annotations

import functools
import hashlib
import keyword
import linecache
import re
from dataclasses import dataclass, replace
from typing import Any

from argus.kernels.gemm import REDUCTIONS, gemm_split_reduce, gemm_tail_reduce, gemm_warp_specialized_persistent

#: operand kind -> (its global shape, the loader in `argus.kernels.gemm` that reads it)
KINDS: dict[str, tuple[tuple[str, ...], str]] = {
    "columns": (("N",), "epilogue_columns"),
    "rows": (("M",), "epilogue_rows"),
    "tile": (("M", "N"), "epilogue_tile"),
    "scalar": ((1,), "epilogue_scalar"),
}
DTYPES = ("f32", "bf16", "f16")

#: Names an epilogue may not give its values: the kernels' own parameters and shape symbols, and the DSL.
RESERVED = frozenset(
    {"acc", "tile", "epilogue", "T", "argus", "A", "B", "C", "W", "P", "M", "N", "K", "S", "L", "RT", "WM", "WN", "NP"}
    | set(gemm_warp_specialized_persistent.defaults)
    | set(gemm_split_reduce.defaults)
    | set(gemm_tail_reduce.defaults)
)


class EpilogueError(ValueError):
    """An epilogue that cannot be built, with the reason."""


@dataclass(frozen=True)
class EpilogueOperand:
    """A tensor the epilogue reads: `name` (the value's name in the statements), `kind` (``"columns"`` (N,),
    ``"rows"`` (M,), ``"tile"`` (M, N) or ``"scalar"`` (1,): one value, read on the device when the kernel runs) and
    `dtype` (``"f32"``, ``"bf16"`` or ``"f16"``; read as f32)."""

    name: str
    kind: str
    dtype: str = "f32"


@dataclass(frozen=True)
class Epilogue:
    """``C = result`` after `statements` (DSL lines such as ``"y = T.maximum(acc + bias, 0.0)"``) over ``acc`` (the
    f32 accumulator tile) and the `operands`' names. `Epilogue.of` builds one from a single expression."""

    statements: tuple[str, ...]
    result: str
    operands: tuple[EpilogueOperand, ...] = ()
    #: a reduction of each row of the result (over the product's N columns), one of `REDUCTIONS`: the call then
    #: returns the (M,) vector of them instead of the (M, N) result, which is never stored (`gemm.epilogue_reduce`)
    reduce: str | None = None

    @classmethod
    def of(cls, expression: str, reduce: str | None = None, **operands: str | tuple[str, str]) -> Epilogue:
        """The epilogue ``C = expression``; each keyword names an operand and gives its kind, or (kind, dtype):
        ``Epilogue.of("T.maximum(acc + bias, 0.0)", bias="columns")``; `reduce`: a reduction of each of its rows
        (``Epilogue.of("T.sigmoid(acc + bias)", reduce="sum", bias="columns")``)."""
        found = tuple(
            EpilogueOperand(name, *((spec,) if isinstance(spec, str) else spec)) for name, spec in operands.items()
        )
        return cls((f"out = {expression}",), "out", found, reduce)

    def reducing(self, op: str | None) -> Epilogue:
        """This epilogue with the row reduction `op` (None: without one)."""
        return replace(self, reduce=op)

    def transposed(self) -> Epilogue:
        """The epilogue of the transposed product ``C^T = B^T A^T``: per-row and per-column operands trade places
        (a tile operand is then read transposed: the caller passes its transpose). A reduction of C's columns is
        the reduction of this epilogue's rows."""
        swap = {"rows": "columns", "columns": "rows"}
        ops = tuple(replace(o, kind=swap.get(o.kind, o.kind)) for o in self.operands)
        return replace(self, operands=ops)

    def __post_init__(self) -> None:
        object.__setattr__(self, "statements", tuple(self.statements))
        object.__setattr__(self, "operands", tuple(self.operands))
        names = [o.name for o in self.operands]
        for o in self.operands:
            if not (o.name.isidentifier() and not keyword.iskeyword(o.name)) or o.name in RESERVED:
                raise EpilogueError(
                    f"epilogue operand name {o.name!r} is not a usable identifier "
                    f"(reserved: {', '.join(sorted(RESERVED))})"
                )
            if o.kind not in KINDS:
                raise EpilogueError(f"epilogue operand {o.name!r}: kind {o.kind!r} is not one of {', '.join(KINDS)}")
            if o.dtype not in DTYPES:
                raise EpilogueError(f"epilogue operand {o.name!r}: dtype {o.dtype!r} is not one of {', '.join(DTYPES)}")
        if len(set(names)) != len(names):
            raise EpilogueError(f"epilogue operands named twice: {names}")
        if self.reduce is not None and self.reduce not in REDUCTIONS:
            raise EpilogueError(f"an epilogue's row reduction is one of {', '.join(REDUCTIONS)}, not {self.reduce!r}")
        if not self.result.isidentifier():
            raise EpilogueError(f"the epilogue's result {self.result!r} is not a name")
        for line in self.statements:
            if "\n" in line:
                raise EpilogueError(f"an epilogue statement is one line: {line!r}")
            try:
                compile(line, "<epilogue>", "exec")
            except SyntaxError as e:
                raise EpilogueError(f"epilogue statement {line!r} is not Python: {e.msg}") from None

    @property
    def holds_tiles(self) -> bool:
        """Whether a second tile-sized value must stay live beside the one being computed: a tile operand (a
        residual), a row reduction, or a value used by two later statements or twice in one (``y * T.sigmoid(y)``). Such
        epilogues take twice the accumulator's registers (`argus.kernels.matmul.EPILOGUE_TILES`)."""
        # a reduction: its index masks take a tile of registers (at 128 x 256 the consumers spill, also for a sum)
        if any(o.kind == "tile" for o in self.operands) or self.reduce is not None:
            return True
        names = ["acc"] + [line.split("=", 1)[0].strip() for line in self.statements]
        later = [line.split("=", 1)[1] if "=" in line else line for line in self.statements]
        for i, name in enumerate(names):
            pattern = re.compile(rf"\b{re.escape(name)}\b")
            if sum(len(pattern.findall(text)) for text in later[i:]) > 1:
                return True
        return False

    @property
    def key(self) -> str:
        """A short hash of the epilogue: the suffix of its kernels' names."""
        text = repr((self.statements, self.result, self.operands) + ((self.reduce,) if self.reduce else ()))
        return hashlib.sha256(text.encode()).hexdigest()[:10]

    @property
    def params(self) -> list[str]:
        """The kernels' tensor parameters of the operands, in order."""
        return [f"epi_{o.name}" for o in self.operands]


def _signature(ep: Epilogue) -> list[str]:
    return [f"    epi_{o.name}: T.Tensor[{KINDS[o.kind][0]!r}, T.{o.dtype}]," for o in ep.operands]


def _function(ep: Epilogue) -> list[str]:
    """``epilogue(acc, tile)``: each operand loaded just before the first statement that reads it (a residual tile
    loaded first would hold its registers through the whole chain)."""
    lines = ["    def epilogue(acc, tile):"]
    pending = list(ep.operands)
    for line in [*ep.statements, ep.result]:
        for o in [o for o in pending if re.search(rf"\b{re.escape(o.name)}\b", line)]:
            lines.append(f"        {o.name} = gemm.{KINDS[o.kind][1]}(acc, tile, epi_{o.name})")
            pending.remove(o)
        if line is not ep.result:
            lines.append(f"        {line}")
    if ep.reduce is not None:  # the tile's share of each row's reduction, stored into P; nothing else is stored
        lines.append(f"        gemm.epilogue_reduce({ep.result}, tile, P, {ep.reduce!r}, COLS or N)")
        lines.append("        return None")
    else:
        lines.append(f"        return {ep.result}")
    return lines


def _partials_assumptions() -> list[str]:
    """A reducing kernel's contract on P: a partial per column tile; COLS (the real columns) within the kernel's N."""
    return [
        '    T.assume(f"NP == (N + {BN - 1}) // {BN}")',
        "    if COLS:",
        '        T.assume(f"N >= {COLS}")',
    ]


def source(ep: Epilogue) -> str:
    """The module text of `ep`'s two kernels (see the module docstring)."""
    main_defaults = {
        k: v for k, v in gemm_warp_specialized_persistent.defaults.items() if k not in ("SPLITS", "BATCH", "EPILOGUE")
    }
    # a reducing epilogue writes each tile's partial row reductions into P (M, NP) instead of C; COLS: the
    # product's real column count where the kernel's N is padded (0: N)
    out = '    P: T.Tensor[("M", "NP"), T.f32],' if ep.reduce else '    C: T.Tensor[("M", "N"), "OUT"],'
    cols = ["    COLS: int = 0,"] if ep.reduce else []
    c = "None" if ep.reduce else "C"
    main = [
        '@argus.kernel(policies={"tile_shape": ("BM", "BN", "BK"), "stages": "STAGES", "persistent": True, '
        '"tile_order": "ORDER"})',
        f"def gemm_fused_{ep.key}(",
        '    A: T.Tensor[gemm.a_shape, "IN"],',
        '    B: T.Tensor[gemm.b_shape, "IN"],',
        out,
        *_signature(ep),
        *[f"    {k}: {type(v).__name__} = {v!r}," for k, v in main_defaults.items()],
        '    EPILOGUE: str = "direct",',
        *cols,
        "):",
        '    """The persistent Hopper GEMM with the fused epilogue below (argus.kernels.epilogue)."""',
        *(_partials_assumptions() if ep.reduce else []),
        *_function(ep),
        "",
        "    gemm.persistent_gemm(",
        f"        A, B, {c}, SPLITS=1, BATCH=False, epilogue=epilogue, EPILOGUE=EPILOGUE,",
        *[f"        {k}={k}," for k in main_defaults if k not in ("IN", "OUT")],  # dtypes: the tensors carry them
        "    )",
    ]
    reduce = [
        '@argus.kernel(policies={"tile_shape": ("BN",)})',
        f"def gemm_split_reduce_fused_{ep.key}(",
        '    W: T.Tensor[("S", "M", "N"), T.f32],',
        out,
        *_signature(ep),
        *[f"    {k}: {type(v).__name__} = {v!r}," for k, v in gemm_split_reduce.defaults.items()],
        *cols,
        "):",
        '    """The split-K reduction with the fused epilogue below (argus.kernels.epilogue)."""',
        *(_partials_assumptions() if ep.reduce else []),
        *_function(ep),
        "",
        f"    gemm.split_reduce(W, {c}, SPLITS=SPLITS, BN=BN, epilogue=epilogue, ROWS=ROWS)",
    ]
    tail = [
        '@argus.kernel(policies={"tile_shape": ("BM", "BN")})',
        f"def gemm_tail_reduce_fused_{ep.key}(",
        '    W: T.Tensor[("S", "RT", "WM", "WN"), T.f32],',
        '    C: T.Tensor[("M", "N"), "OUT"],',
        *_signature(ep),
        *[f"    {k}: {type(v).__name__} = {v!r}," for k, v in gemm_tail_reduce.defaults.items()],
        "):",
        '    """The split tail\'s reduction with the fused epilogue below (argus.kernels.epilogue)."""',
        *_function(ep),
        "",
        "    gemm.tail_reduce(W, C, epilogue=epilogue,",
        *[f"        {k}={k}," for k in gemm_tail_reduce.defaults if k != "OUT"],
        "    )",
    ]
    head = [
        f'"""The fused epilogue {ep.key}: {" ; ".join(ep.statements)} -> {ep.result}."""',
        "import argus",
        "import argus.lang as T",
        "from argus.kernels import gemm",
        "",
    ]
    if ep.reduce:  # a split tail's pieces are not planned for a reducing epilogue (`matmul.GemmPlan`)
        tail = []
    return "\n".join([*head, "", *main, "", "", *reduce, "", "", *tail, ""])


def applied(ep: Epilogue, acc: Any, operands: dict[str, Any]) -> Any:
    """`ep`'s result over the tile value `acc` and its `operands` (values by name), its statements run at trace
    time: for a kernel that applies an epilogue in its own body (`argus.kernels.conv_implicit.conv_implicit_gemm`)
    rather than through generated source. The statements are trusted code (the module docstring)."""
    import argus.lang as T  # noqa: N812 - the DSL's name in the statements

    scope: dict[str, Any] = {"T": T, "acc": acc, **operands}
    for line in ep.statements:
        exec(line, scope)  # noqa: S102 - an Epilogue's statements are argus's or the user's, never a candidate's
    return scope[ep.result]


@functools.lru_cache(maxsize=128)
def fused_kernels(ep: Epilogue) -> tuple[Any, Any, Any]:
    """(the fused GEMM, the fused split-K reduction, the fused split-tail reduction) of `ep`, as `@argus.kernel`
    functions."""
    text = source(ep)
    filename = f"<argus epilogue {ep.key}>"
    lines = text.splitlines(keepends=True)
    linecache.cache[filename] = (len(text), None, lines, filename)  # no mtime: never checked against a file
    namespace: dict[str, Any] = {"__name__": f"argus_epilogue_{ep.key}"}
    exec(compile(text, filename, "exec"), namespace)  # noqa: S102 - argus's own generated kernel text
    return (
        namespace[f"gemm_fused_{ep.key}"],
        namespace[f"gemm_split_reduce_fused_{ep.key}"],
        namespace.get(f"gemm_tail_reduce_fused_{ep.key}"),  # none for a reducing epilogue
    )


__all__ = ["Epilogue", "EpilogueError", "EpilogueOperand", "applied", "fused_kernels", "source"]
