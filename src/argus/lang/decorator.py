"""``@argus.kernel``: a Python function becomes a `KernelFunction`, which traces it to IR (`KernelFunction.trace`,
one `argus.ir.nodes.Kernel` per specialization) and runs it when called; `TracedKernel` is a kernel that is IR
already. The policies a kernel declares (`POLICY_NAMES`) are recorded with its IR."""

from __future__ import annotations

import inspect
import os
import types
from typing import Any

from argus.atoms.swizzle import swizzle_width
from argus.diagnostics import ArgusError
from argus.ir import types as irtypes
from argus.ir.expr import Expr, Var, VarKind
from argus.ir.nodes import Alloc, Buffer, For, Kernel, LoopKind, Policies, Role, Space, TileOrder, walk
from argus.ir.passes import run_passes
from argus.lang.call import run_traced
from argus.lang.errors import DSLError, def_loc, raise_loc
from argus.lang.memory import check_elements, check_tma_stores
from argus.lang.names import SourceNames
from argus.lang.tiles import GlobalTensor, TensorSpec
from argus.lang.trace import CURRENT, Trace
from argus.layout import ComposedLayout


class KernelFunction:
    """A Python function decorated with `@argus.kernel`: trace it with `trace(**params)`."""

    def __init__(self, fn: types.FunctionType) -> None:
        self.fn = fn
        self.name = fn.__name__
        self.__doc__ = fn.__doc__
        self.signature = inspect.signature(fn, eval_str=True)
        self._cache: dict[tuple, Kernel] = {}
        self._passed_cache: dict[int, tuple[Kernel, Kernel]] = {}  # id(traced) -> (traced, after the passes)
        self._source_names = SourceNames()  # the IR names its source gives (each file parsed once)
        self.policy_params: dict[str, Any] = {}
        self.reference: Any = None  # `@argus.kernel(reference=...)`: the kernel's own reference (see `kernel`)
        self.sizes: dict[str, int] = {}
        self.tolerance: float | None = None
        self.tensor_specs: dict[str, TensorSpec] = {}
        self.defaults: dict[str, Any] = {}
        for p in self.signature.parameters.values():
            if isinstance(p.annotation, TensorSpec):
                self.tensor_specs[p.name] = p.annotation
            elif p.default is not inspect.Parameter.empty:
                self.defaults[p.name] = p.default
            else:
                raise DSLError(
                    "DSL_KERNEL_SIGNATURE",
                    f"parameter {p.name!r} of kernel {self.name} is neither a T.Tensor[...] nor has a default",
                    "annotate tensors with T.Tensor[shape, dtype]; give trace-time parameters defaults",
                    loc=def_loc(fn),
                )
        for pname, spec in self.tensor_specs.items():
            unknown = [p for p in spec.shape_params if p not in self.defaults]
            if unknown:
                raise DSLError(
                    "DSL_KERNEL_SIGNATURE",
                    f"the shape function of tensor {pname!r} of kernel {self.name} takes {unknown[0]!r}, which is not "
                    "a trace-time parameter of the kernel",
                    "name the shape function's arguments after parameters with defaults, e.g. lambda B_MAJOR: ...",
                    loc=def_loc(fn),
                )
            if isinstance(spec.dtype, str) and spec.dtype not in self.defaults:
                raise DSLError(
                    "DSL_KERNEL_SIGNATURE",
                    f"tensor {pname!r} of kernel {self.name} has dtype {spec.dtype!r}, which is neither a dtype nor "
                    "a parameter of the kernel",
                    f"a dtype (T.bf16, 'f32', ...) or a parameter with a default, e.g. {spec.dtype}: str = 'f32'",
                    loc=def_loc(fn),
                )

    def __repr__(self) -> str:
        return f"<argus kernel {self.name}>"

    def __call__(self, *tensors: Any, device: str | None = None, **params: Any) -> None:
        """Run the kernel on `tensors` (in parameter order), writing outputs in place.

        ``device="cpu"`` (or the environment variable ``ARGUS_INTERPRET=1``) runs it on the
        lane-level interpreter, with numpy arrays or CPU torch tensors.
        """
        if device is None and os.environ.get("ARGUS_INTERPRET", "") not in ("", "0"):
            device = "cpu"
        if device != "cpu":
            raise DSLError(
                "DSL_NO_GPU_PATH",
                f"kernel {self.name}: launching on a GPU from a kernel call is not available yet",
                "call it with device='cpu' (or set ARGUS_INTERPRET=1) to run it on the interpreter",
                loc=def_loc(self.fn),
            )
        run_traced(self.trace(**params), tensors, "cpu", loc=def_loc(self.fn))

    def trace(self, **params: Any) -> Kernel:
        """The IR of this kernel specialized with `params` (defaults for the rest), after the pass pipeline
        (`argus.ir.passes.run_passes`): the program the verifier proves, the interpreter runs and the code generator
        emits. `trace_as_written` gives the IR before the passes."""
        try:
            written = self.trace_as_written(**params)
        except DSLError as err:  # the traceback cut at this call, as trace_as_written cuts it at its own
            raise err.with_traceback(None) from None
        return self._passed(written)

    def _passed(self, kernel: Kernel) -> Kernel:
        key = id(kernel)
        if key not in self._passed_cache:
            self._passed_cache[key] = (kernel, run_passes(kernel))  # the traced kernel stays alive with its key
        return self._passed_cache[key][1]

    def trace_as_written(self, **params: Any) -> Kernel:
        """The IR the tracer recorded for `params`, before any pass (`trace` is what everything else reads)."""
        unknown = set(params) - set(self.defaults)
        if unknown:
            raise DSLError(
                "DSL_UNKNOWN_PARAM",
                f"kernel {self.name} has no parameter {sorted(unknown)[0]!r}",
                requirement=f"one of {sorted(self.defaults)}",
                loc=def_loc(self.fn),
            )
        values = {**self.defaults, **params}
        key = tuple(sorted((k, repr(v)) for k, v in values.items()))
        if key not in self._cache:
            try:
                self._cache[key] = self._trace(values)
            except DSLError as err:
                raise err.with_traceback(None) from None
            except (ArgusError, KeyboardInterrupt, SystemExit, MemoryError):
                raise  # a typed error of argus's own (an atom's, a layout's) keeps its code
            except Exception as err:  # a Python error in the kernel's own code: its line, not the tracer's frames
                raise DSLError(
                    "DSL_KERNEL_RAISED",
                    f"tracing kernel {self.name} raised {type(err).__name__}: {err}",
                    "fix the kernel's Python at this line (it runs once, while tracing, with the sizes as symbols)",
                    loc=raise_loc(err, self.fn),
                ) from None
        return self._cache[key]

    def _trace(self, values: dict[str, Any]) -> Kernel:
        """Run the function once with proxies for its tensors and `values` for its parameters, recording IR."""
        shape_vars: dict[str, Var] = {}
        tensors = [self._tensor(pname, spec, values, shape_vars) for pname, spec in self.tensor_specs.items()]
        reserved = tuple(t.name for t in tensors) + tuple(shape_vars)
        st = Trace(self.name, reserved=reserved, source=self._source_names)
        st.shape_vars = dict(shape_vars)
        fn = types.FunctionType(  # the shape symbols are globals of the kernel's body: `T.cdiv(M, BM)`
            self.fn.__code__,
            {**self.fn.__globals__, **shape_vars},
            self.fn.__name__,
            self.fn.__defaults__,
            self.fn.__closure__,
        )
        token = CURRENT.set(st)
        try:
            fn(**{t.name: GlobalTensor(t) for t in tensors}, **values)
        finally:
            CURRENT.reset(token)
        if st.grid is None or st.threads is None:
            raise DSLError(
                "DSL_NO_GRID",
                f"kernel {self.name} never opened `with T.grid(...)`",
                "put the kernel body under `with T.grid(n_blocks, threads=128) as (bx,):`",
                loc=def_loc(self.fn),
            )
        check_tma_stores(self.name, tuple(st.stack[0]))
        check_elements(self.name, tuple(st.stack[0]))
        return Kernel(
            name=self.name,
            tensors=tuple(tensors),
            shape_vars=tuple(shape_vars.values()),
            grid=st.grid,
            block_vars=st.block_vars,
            threads=st.threads,
            thread_var=st.thread_var,
            body=tuple(st.stack[0]),
            params=tuple(sorted(values.items())),
            policies=_policies(self.policy_params, values, st),
            assumptions=tuple(v >= 1 for v in shape_vars.values()) + tuple(st.assumptions),
            loc=def_loc(self.fn),
            blocks_per_sm=st.blocks_per_sm,
            cluster=st.cluster,
            assumption_locs=(None,) * len(shape_vars) + tuple(st.assumption_locs),
            grid_loc=st.grid_loc,
            value_assumptions=tuple(st.value_assumptions),
            partial_outputs=tuple(st.partial_outputs),
            partial_sums=tuple(st.partial_sums),
        )

    def _tensor(self, pname: str, spec: TensorSpec, values: dict[str, Any], shape_vars: dict[str, Var]) -> Buffer:
        """The global buffer of tensor parameter `pname` (row-major), adding its size symbols to `shape_vars`."""
        dims: list[Expr | int] = []
        try:
            shape = spec.resolve_shape(values)
        except DSLError:
            raise  # the shape function's own refusal (e.g. a parameter value it does not know)
        except ValueError as err:
            raise DSLError(
                "DSL_TENSOR_SHAPE",
                f"tensor {pname}: {err}",
                "return a tuple such as ('K', 'N') from the shape function",
                loc=def_loc(self.fn),
            ) from None
        for d in shape:
            if isinstance(d, str):
                dims.append(shape_vars.setdefault(d, Var(d, VarKind.SHAPE)))
            else:
                dims.append(d)
        strides: list[Expr | int] = []
        acc: Expr | int = 1
        for d in reversed(dims):
            strides.append(acc)
            acc = acc * d if isinstance(acc, Expr) or isinstance(d, Expr) else acc * d
        strides.reverse()
        try:
            dtype = spec.resolve_dtype(values)
        except irtypes.DTypeError:
            raise DSLError(
                "DSL_TENSOR_DTYPE",
                f"tensor {pname}: parameter {spec.dtype} = {values[spec.dtype]!r} does not name a dtype",
                "a dtype name such as 'f32', 'bf16' or 'f16'",
                loc=def_loc(self.fn),
            ) from None
        return Buffer(pname, Space.GLOBAL, dtype, tuple(dims), strides=tuple(strides))


def _policies(declared: dict[str, Any], values: dict[str, Any], st: Trace) -> Policies:
    """The policy values of one specialization: declared ones from the parameters, the rest read
    off the trace."""

    def resolve(ref: Any) -> Any:
        if isinstance(ref, tuple):
            return tuple(resolve(r) for r in ref)
        return values[ref] if isinstance(ref, str) else ref

    found: dict[str, Any] = {k: resolve(v) for k, v in declared.items()}
    body = tuple(st.stack[0])
    roles = [s for s in walk(body) if isinstance(s, Role)]
    if roles and "warp_roles" not in found:
        found["warp_roles"] = tuple(r.name for r in roles)
    if roles and "register_split" not in found and any(r.registers for r in roles):
        found["register_split"] = tuple(r.registers or 0 for r in roles)
    swizzles = [
        s.buffer.layout.inner.bits
        for s in walk(body)
        if isinstance(s, Alloc) and s.buffer.space == Space.SHARED and isinstance(s.buffer.layout, ComposedLayout)
    ]
    if swizzles and "swizzle" not in found:
        found["swizzle"] = swizzle_width(max(swizzles))
    pipelined = [s.stages for s in walk(body) if isinstance(s, For) and s.kind == LoopKind.PIPELINED]
    if pipelined and "stages" not in found:
        found["stages"] = max(pipelined)
    if st.persistent is not None:
        found.setdefault("persistent", True)
        found.setdefault("tile_order", st.persistent[0])
    if "tile_order" in found and isinstance(found["tile_order"], str):
        found["tile_order"] = TileOrder(found["tile_order"])
    return Policies(**found)


class TracedKernel:
    """A kernel that is already IR (traced elsewhere, e.g. in a sandbox, and decoded from data): it answers
    `trace` with that IR (for the parameters it was traced with, and no others) and runs on the CPU interpreter
    like an ``@argus.kernel`` call, so that the gate, the verifier, the code generator and the cost model take it
    as they take a kernel function, without running any of its Python."""

    def __init__(self, kernel: Kernel, params: dict[str, Any] | None = None) -> None:
        self.kernel = run_passes(kernel)  # a no-op on IR that was traced (and so passed) elsewhere
        self.name = kernel.name
        self.params = dict(params or {})
        self.tensor_specs = {t.name: t for t in kernel.tensors}

    def __repr__(self) -> str:
        return f"<traced argus kernel {self.name}>"

    def trace(self, **params: Any) -> Kernel:
        """The IR; `params` must be empty or those it was traced with."""
        differs = {k: v for k, v in params.items() if k not in self.params or self.params[k] != v}
        if differs:
            raise DSLError(
                "DSL_TRACED_PARAMS",
                f"kernel {self.name} was traced with {self.params}; it cannot be specialized again with {differs}",
                "trace the kernel function itself with these parameters",
            )
        return self.kernel

    def __call__(self, *tensors: Any, device: str | None = None, **params: Any) -> None:
        if device not in (None, "cpu"):
            raise DSLError("DSL_NO_GPU_PATH", f"kernel {self.name}: a traced kernel runs on the CPU interpreter")
        run_traced(self.trace(**params), tensors, "cpu")


POLICY_NAMES = ("tile_shape", "stages", "swizzle", "warp_roles", "register_split", "tile_order", "persistent", "unroll")


def kernel(
    fn: types.FunctionType | None = None,
    *,
    policies: dict[str, Any] | None = None,
    reference: Any = None,
    sizes: dict[str, int] | None = None,
    tolerance: float | None = None,
) -> Any:
    """Decorate a Python function as an argus kernel: ``@argus.kernel`` or
    ``@argus.kernel(policies={"stages": "STAGES", "tile_shape": ("BM", "BN", "BK")})``, which names
    the parameters that carry each compiler policy (so a planner can change one at a time). Policies
    the kernel's IR shows (swizzle, warp roles and their register split, persistence and tile
    order) are recorded from the trace as well.

    `reference` makes the kernel self-describing, so ``argus interpret|verify|compile|bench|optimize FILE.py:NAME``
    need no built-in task: a plain Python/PyTorch function of the kernel's *input* tensors (matched by parameter
    name) that returns its outputs (one tensor, a tuple in parameter order, or a dict by name).
    `sizes` gives the problem sizes used when the command line gives none (``{"M": 100, "N": 72}``);
    `tolerance` the largest error allowed relative to the reference's scale (default: by the tensors' dtypes)."""
    if policies is not None:
        unknown = set(policies) - set(POLICY_NAMES)
        if unknown:
            raise DSLError(
                "DSL_UNKNOWN_POLICY",
                f"unknown policy {sorted(unknown)[0]!r}",
                requirement=f"one of {', '.join(POLICY_NAMES)}",
            )

    def wrap(f: types.FunctionType) -> KernelFunction:
        kf = KernelFunction(f)
        kf.policy_params = dict(policies or {})
        if isinstance(kf.policy_params.get("tile_shape"), str):  # one tiled dimension: a tile shape of one
            kf.policy_params["tile_shape"] = (kf.policy_params["tile_shape"],)
        if reference is not None and not callable(reference):
            raise DSLError(
                "DSL_KERNEL_REFERENCE",
                f"reference= of kernel {kf.name} is a {type(reference).__name__}, not a function",
                "pass a function of the kernel's input tensors that returns its outputs",
                loc=def_loc(f),
            )
        if sizes is not None and not (
            isinstance(sizes, dict) and all(isinstance(v, int) and not isinstance(v, bool) for v in sizes.values())
        ):
            raise DSLError(
                "DSL_KERNEL_SIZES", f"sizes= of kernel {kf.name} must map size names to ints", loc=def_loc(f)
            )
        kf.reference = reference
        kf.sizes = dict(sizes or {})
        kf.tolerance = tolerance
        for name, ref in kf.policy_params.items():
            for p in ref if isinstance(ref, tuple) else (ref,):
                if isinstance(p, str) and p not in kf.defaults:
                    raise DSLError(
                        "DSL_UNKNOWN_POLICY",
                        f"policy {name!r} names parameter {p!r}, which kernel {kf.name} does not have",
                        loc=def_loc(f),
                    )
        return kf

    return wrap(fn) if fn is not None else wrap
