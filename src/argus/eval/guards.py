"""Defences against reward hacking that do not depend on timing: each is a small, separately testable piece
that `argus.eval.correctness` and `argus.eval.gate` put together.

* `PrecisionState` — PyTorch's precision switches (TF32 for matmul and cuDNN, reduced-precision reductions,
  ``set_float32_matmul_precision``, the ``fp32_precision`` settings): captured before and after a candidate
  runs, compared, restored; `strict_precision` pins them to full fp32 for fp32 tasks.
* `scan_source` — a static check of the candidate's source: calls to library routines the task forbids
  (through any import alias, ``getattr(torch, "matmul")``, the ``@`` operator, tensor methods, C++ strings
  naming cuBLAS/cuDNN), and precision toggles on fp32 tasks.
* `OpRecorder` — the PyTorch operators a candidate dispatches while it runs (a dynamic check that catches what
  the static one cannot see, e.g. a name assembled at run time).
* `scrub_memory`, `poison_` — freed memory and output buffers filled with NaN, so a candidate that returns
  memory it never wrote (an uninitialised ``torch.empty``, or memory the reference just freed) reads NaN.
* `changed_inputs` — which input tensors differ bit for bit from their pristine copy.
"""

from __future__ import annotations

import ast
import contextlib
import fnmatch
import warnings
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

# --------------------------------------------------------------------------------------------------------------
# precision switches

_BOOL_SWITCHES = (
    "cuda.matmul.allow_tf32",
    "cudnn.allow_tf32",
    "cuda.matmul.allow_fp16_reduced_precision_reduction",
    "cuda.matmul.allow_bf16_reduced_precision_reduction",
    "cuda.matmul.allow_fp16_accumulation",
)
_PRECISION_SWITCHES = (
    "fp32_precision",
    "cuda.matmul.fp32_precision",
    "cudnn.fp32_precision",
    "cudnn.conv.fp32_precision",
    "cudnn.rnn.fp32_precision",
    "mkldnn.fp32_precision",
    "mkldnn.matmul.fp32_precision",
    "mkldnn.conv.fp32_precision",
    "mkldnn.rnn.fp32_precision",
)


def _resolve(path: str) -> tuple[Any, str]:
    import torch

    obj: Any = torch.backends
    *parents, leaf = path.split(".")
    for p in parents:
        obj = getattr(obj, p)
    return obj, leaf


@dataclass(frozen=True)
class PrecisionState:
    """The values of PyTorch's precision switches (only those this PyTorch has), by name."""

    values: tuple[tuple[str, Any], ...]

    @classmethod
    def capture(cls) -> PrecisionState:
        import torch

        try:
            matmul = torch.get_float32_matmul_precision()
        except RuntimeError:  # PyTorch refuses to answer when the legacy and new APIs were mixed
            matmul = "mixed"
        values: list[tuple[str, Any]] = [("float32_matmul_precision", matmul)]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for path in _BOOL_SWITCHES + _PRECISION_SWITCHES:
                try:
                    obj, leaf = _resolve(path)
                    values.append((path, getattr(obj, leaf)))
                except (AttributeError, RuntimeError):
                    continue
        return cls(tuple(values))

    def as_dict(self) -> dict[str, Any]:
        return dict(self.values)

    def diff(self, other: PrecisionState) -> dict[str, tuple[Any, Any]]:
        """Switches whose value differs: name -> (value here, value in `other`)."""
        mine, theirs = self.as_dict(), other.as_dict()
        return {
            k: (mine.get(k), theirs.get(k)) for k in sorted(set(mine) | set(theirs)) if mine.get(k) != theirs.get(k)
        }

    def restore(self) -> None:
        """Set every switch back to its captured value. The legacy switches (``allow_tf32``) and the newer
        ``fp32_precision`` settings alias each other, so this sets the global matmul precision, then the
        ``fp32_precision`` settings, then whatever legacy switch still differs, and checks again."""
        import torch

        values = self.as_dict()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for _ in range(3):
                current = PrecisionState.capture().as_dict()
                if current == values:
                    return
                matmul = values.get("float32_matmul_precision")
                if current.get("float32_matmul_precision") != matmul and matmul in ("highest", "high", "medium"):
                    torch.set_float32_matmul_precision(matmul)
                for group in (_PRECISION_SWITCHES, _BOOL_SWITCHES):
                    current = PrecisionState.capture().as_dict()
                    for path in group:
                        if path in values and current.get(path) != values[path]:
                            with contextlib.suppress(AttributeError, RuntimeError, ValueError, TypeError):
                                obj, leaf = _resolve(path)
                                setattr(obj, leaf, values[path])


@contextlib.contextmanager
def strict_precision(fp32: bool) -> Iterator[PrecisionState]:
    """Within the block, fp32 matmuls and convolutions run in full fp32 (no TF32, ``highest`` matmul precision)
    when `fp32` is true; on exit every switch is as it was. Yields the state inside the block."""
    import torch

    before = PrecisionState.capture()
    try:
        if fp32:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                torch.set_float32_matmul_precision("highest")
                torch.backends.cuda.matmul.allow_tf32 = False
                torch.backends.cudnn.allow_tf32 = False
        yield PrecisionState.capture()
    finally:
        before.restore()


# --------------------------------------------------------------------------------------------------------------
# static checks


@dataclass(frozen=True)
class StaticFinding:
    """One thing the static check found: its code, the source line, and whether it rejects the candidate."""

    code: str
    message: str
    line: int
    col: int
    text: str
    blocking: bool = True

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "message": self.message,
            "line": self.line,
            "col": self.col,
            "text": self.text,
            "blocking": self.blocking,
        }


#: C++/CUDA strings that name vendor libraries; a candidate that forbids library calls may not hide them in
#: inline extension source either.
VENDOR_STRINGS = ("cublas", "cudnn", "at::matmul", "at::mm", "at::bmm", "at::addmm", "torch::matmul", "at::conv")

_HALF_NAMES = {"torch.float16", "torch.half", "torch.bfloat16", "torch.autocast", "torch.cuda.amp.autocast"}
_HALF_METHODS = {"half", "bfloat16"}


class _Scanner(ast.NodeVisitor):
    def __init__(self, lines: list[str], forbidden: Sequence[str], fp32: bool, matmul_operator: bool) -> None:
        self.lines = lines
        self.forbidden = tuple(forbidden)
        self.methods = {p.rsplit(".", 1)[-1] for p in forbidden if "*" not in p.rsplit(".", 1)[-1]}
        self.fp32 = fp32
        self.matmul_operator = matmul_operator
        self.aliases: dict[str, str] = {}
        self.findings: list[StaticFinding] = []
        self._seen: set[tuple[int, int, str]] = set()

    # helpers
    def _add(self, node: ast.AST, code: str, message: str, blocking: bool = True) -> None:
        line, col = getattr(node, "lineno", 0), getattr(node, "col_offset", 0)
        key = (line, col, code)
        if key in self._seen:
            return
        self._seen.add(key)
        text = self.lines[line - 1].rstrip() if 0 < line <= len(self.lines) else ""
        self.findings.append(StaticFinding(code, message, line, col, text, blocking))

    def _dotted(self, node: ast.AST) -> str | None:
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr":
            # getattr(torch, "matmul").x
            if len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str):
                base = self._dotted(node.args[0])
                if base is None:
                    return None
                return ".".join([base, node.args[1].value, *reversed(parts)])
            return None
        if not isinstance(node, ast.Name):
            return None
        head = self.aliases.get(node.id)
        if head is None:
            return None
        return ".".join([head, *reversed(parts)])

    def _is_forbidden(self, dotted: str) -> str | None:
        return next((p for p in self.forbidden if fnmatch.fnmatchcase(dotted, p)), None)

    # imports
    def visit_Import(self, node: ast.Import) -> None:
        for a in node.names:
            if a.asname:
                self.aliases[a.asname] = a.name
            else:
                self.aliases[a.name.split(".")[0]] = a.name.split(".")[0]

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.module is None or node.level:
            return
        for a in node.names:
            full = f"{node.module}.{a.name}"
            self.aliases[a.asname or a.name] = full
            if self.forbidden and self._is_forbidden(full):
                self._add(node, "STATIC_FORBIDDEN_CALL", f"imports {full}, which this task forbids")

    # names, attributes, calls
    def visit_Attribute(self, node: ast.Attribute) -> None:
        dotted = self._dotted(node)
        if dotted is not None:
            self._check_name(node, dotted)
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load) and node.id in self.aliases:
            self._check_name(node, self.aliases[node.id])

    def _check_name(self, node: ast.AST, dotted: str) -> None:
        if self.forbidden:
            pattern = self._is_forbidden(dotted)
            if pattern:
                self._add(node, "STATIC_FORBIDDEN_CALL", f"uses {dotted}, which this task forbids ({pattern})")
        if self.fp32 and dotted in _HALF_NAMES:
            self._add(node, "FLAG_PRECISION_CAST", f"uses {dotted} on an fp32 task", blocking=False)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id == "getattr":  # getattr(torch, "matmul")
            dotted = self._dotted(node)
            if dotted is not None:
                self._check_name(node, dotted)
        if isinstance(func, ast.Name) and func.id == "setattr" and len(node.args) >= 2:
            attr = node.args[1]
            if isinstance(attr, ast.Constant) and isinstance(attr.value, str):
                self._check_toggle(node, attr.value, node.args[2] if len(node.args) > 2 else None)
        if isinstance(func, ast.Attribute):
            base_dotted = self._dotted(func.value)
            if base_dotted is None and func.attr in self.methods and self.forbidden:  # tensor method: x.matmul(y)
                self._add(
                    node, "STATIC_FORBIDDEN_CALL", f"calls the tensor method .{func.attr}(), which this task forbids"
                )
            if self.fp32 and base_dotted is None and func.attr in _HALF_METHODS:
                self._add(node, "FLAG_PRECISION_CAST", f"casts with .{func.attr}() on an fp32 task", blocking=False)
            if func.attr == "set_float32_matmul_precision" and self.fp32:
                arg = node.args[0] if node.args else None
                if not (isinstance(arg, ast.Constant) and arg.value == "highest"):
                    shown = ast.unparse(arg) if arg is not None else "?"
                    self._add(
                        node,
                        "STATIC_PRECISION_TOGGLE",
                        f"set_float32_matmul_precision({shown}) lowers fp32 matmul precision on an fp32 task",
                    )
        self.generic_visit(node)

    # precision toggles
    def _check_toggle(self, node: ast.AST, attr: str, value: ast.AST | None) -> None:
        if not self.fp32:
            return
        const = value.value if isinstance(value, ast.Constant) else object()
        if attr == "allow_tf32" and const is not False:
            self._add(node, "STATIC_PRECISION_TOGGLE", "enables TF32 (allow_tf32) on an fp32 task")
        elif attr.endswith("_reduced_precision_reduction") and const is not False:
            self._add(node, "STATIC_PRECISION_TOGGLE", f"enables {attr} on an fp32 task")
        elif attr == "allow_fp16_accumulation" and const is not False:
            self._add(node, "STATIC_PRECISION_TOGGLE", "enables fp16 accumulation on an fp32 task")
        elif attr == "fp32_precision" and const not in ("ieee", "none"):
            self._add(node, "STATIC_PRECISION_TOGGLE", "lowers fp32_precision on an fp32 task")

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            if isinstance(target, ast.Attribute):
                self._check_toggle(node, target.attr, node.value)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        if isinstance(node.op, ast.MatMult) and self.matmul_operator:
            self._add(node, "STATIC_FORBIDDEN_CALL", "uses the @ operator (a library matmul), which this task forbids")
        self.generic_visit(node)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        if isinstance(node.op, ast.MatMult) and self.matmul_operator:
            self._add(node, "STATIC_FORBIDDEN_CALL", "uses the @ operator (a library matmul), which this task forbids")
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if self.forbidden and isinstance(node.value, str):
            low = node.value.lower()
            hit = next((s for s in VENDOR_STRINGS if s in low), None)
            if hit:
                self._add(node, "STATIC_FORBIDDEN_CALL", f"a string in the source names {hit!r} (vendor library)")


def scan_source(
    source: str,
    *,
    forbidden: Sequence[str] = (),
    fp32: bool = False,
    matmul_operator: bool | None = None,
) -> list[StaticFinding]:
    """Static findings in `source`.

    Args:
        forbidden: dotted-name patterns (``fnmatch``) of library routines the task forbids, e.g.
            ``("torch.matmul", "torch.nn.functional.*")``; their last components also forbid the tensor methods
            of that name (``x.matmul(y)``). Non-empty also forbids strings naming cuBLAS/cuDNN.
        fp32: the task is fp32: precision toggles are blocking findings, casts to half types are warnings.
        matmul_operator: forbid ``a @ b``; default: when ``torch.matmul`` is forbidden.

    Raises `SyntaxError` when `source` does not parse.
    """
    if matmul_operator is None:
        matmul_operator = any(fnmatch.fnmatchcase("torch.matmul", p) for p in forbidden)
    tree = ast.parse(source)
    scanner = _Scanner(source.splitlines(), forbidden, fp32, matmul_operator)
    scanner.visit(tree)
    return sorted(scanner.findings, key=lambda f: (f.line, f.col))


# --------------------------------------------------------------------------------------------------------------
# dynamic operator recording


@dataclass
class OpRecorder:
    """Context manager recording the schema names (``aten::mm``) of every PyTorch operator dispatched inside.

    Usage: ``with OpRecorder() as rec: candidate(...)``; then ``rec.ops`` (name -> count) and
    ``rec.matching(patterns)``."""

    ops: dict[str, int] = field(default_factory=dict)
    _mode: Any = None

    def __enter__(self) -> OpRecorder:
        from torch.utils._python_dispatch import TorchDispatchMode

        ops = self.ops

        class _Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
                name = func._schema.name
                ops[name] = ops.get(name, 0) + 1
                return func(*args, **(kwargs or {}))

        self._mode = _Mode()
        self._mode.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._mode.__exit__(*exc)

    def matching(self, patterns: Iterable[str]) -> list[str]:
        """Recorded operators that match any of `patterns` (``fnmatch``, e.g. ``"aten::*mm"``)."""
        pats = tuple(patterns)
        return sorted(op for op in self.ops if any(fnmatch.fnmatchcase(op, p) for p in pats))


# --------------------------------------------------------------------------------------------------------------
# memory


def poison_(t: Any) -> Any:
    """Fill `t` with a value no correct kernel writes by accident: NaN for floats, the largest value for
    integers, True for booleans. Returns `t`."""
    import torch

    if t.is_floating_point() or t.is_complex():
        t.fill_(float("nan"))
    elif t.dtype == torch.bool:
        t.fill_(True)
    else:
        t.fill_(torch.iinfo(t.dtype).max)
    return t


def scrub_memory(nbytes: Iterable[int], device: Any) -> None:
    """Allocate, fill with NaN and free one buffer of each size: an allocator that hands the same block to the
    next allocation of that size (PyTorch's CUDA caching allocator, glibc's malloc) then hands out NaNs."""
    import torch

    for n in nbytes:
        if n <= 0:
            continue
        buf = torch.empty((n + 3) // 4, dtype=torch.float32, device=device)
        buf.fill_(float("nan"))
        del buf


def clone_all(values: Sequence[Any]) -> list[Any]:
    """Deep copies of the tensors in `values` (other values as they are)."""
    import torch

    return [v.detach().clone() if isinstance(v, torch.Tensor) else v for v in values]


_SAME_WIDTH_INT = {8: "int64", 4: "int32", 2: "int16", 1: "uint8"}


def _bits(t: Any) -> Any:
    """`t` viewed as integers of the same width (bit patterns; NaN and -0.0 compare as bits), on its device."""
    import torch

    c = t.detach().contiguous()
    if c.dtype == torch.bool:
        return c.to(torch.uint8)
    if c.is_complex():
        c = torch.view_as_real(c)
    return c.view(getattr(torch, _SAME_WIDTH_INT[c.element_size()]))


#: Elements per piece when `same_bits` compares a host tensor with a device tensor (bounds its scratch memory).
COMPARE_CHUNK = 1 << 26


def same_bits(a: Any, b: Any) -> bool:
    """Whether two tensors of one shape and dtype hold the same bits. On two devices (the judge's host copy of a
    large trial, the device tensor a candidate ran on) the host tensor is copied over `COMPARE_CHUNK` elements at a
    time and compared where the device tensor is, so no host copy of the device tensor is made (at KernelBench's
    full sizes, a 17 GB input copied to pageable host memory took ~12 s)."""
    import torch

    if a is b:  # one tensor (the judge's copy of an input the reference did not write into): no pass over it
        return True
    if a.device == b.device:
        return bool(torch.equal(_bits(a), _bits(b)))
    return equal_by_pieces(a, b, b.device if a.device.type == "cpu" else a.device)


def equal_by_pieces(a: Any, b: Any, where: Any, chunk: int | None = None) -> bool:
    """`same_bits` of two tensors of one shape and dtype, `chunk` (default `COMPARE_CHUNK`) elements at a time,
    each piece of both copied to `where` (a no-op for the one already there)."""
    import torch

    chunk = chunk or COMPARE_CHUNK
    fa, fb = _bits(a).reshape(-1), _bits(b).reshape(-1)
    for start in range(0, fa.numel(), chunk):
        if not torch.equal(fa[start : start + chunk].to(where), fb[start : start + chunk].to(where)):
            return False
    return True


def changed_inputs(pristine: Sequence[Any], after: Sequence[Any]) -> list[int]:
    """Indices of the tensors in `after` that differ from `pristine` bit for bit (or in shape or dtype); the two
    may be on different devices (`same_bits`)."""
    import torch

    changed: list[int] = []
    for i, (a, b) in enumerate(zip(pristine, after, strict=True)):
        if not isinstance(a, torch.Tensor):
            continue
        if not isinstance(b, torch.Tensor) or a.shape != b.shape or a.dtype != b.dtype:
            changed.append(i)
        elif not same_bits(a, b):
            changed.append(i)
    return changed


def checksums(values: Sequence[Any], chunk: int = 1 << 24) -> list[int | None]:
    """A 61-bit fingerprint of every tensor's bits in `values` (None for other values): the bits as integers, each
    weighted by a function of its position, summed with wrap-around, `chunk` elements at a time (a few hundred MB
    of scratch memory whatever the tensor's size). Exact integer arithmetic, so two processes that hold the same
    bits get the same number whatever the order of the sum; used to confirm that a sandbox drew the same inputs as
    the judge from the same seed."""
    import torch

    out: list[int | None] = []
    for v in values:
        if not isinstance(v, torch.Tensor):
            out.append(None)
            continue
        bits = _bits(v).reshape(-1)
        total = 0
        for start in range(0, bits.numel(), chunk):
            part = bits[start : start + chunk].to(torch.int64)
            weights = torch.arange(start, start + part.numel(), device=part.device, dtype=torch.int64) % 65521 + 1
            total = (total + int((part * weights).sum().item())) & (2**61 - 1)
        out.append(total)
    return out
