"""The verifier's entry point: trace, interpret abstractly, run every check, collect one `Result`.

Order: statements the verifier does not model become `unknown` findings first (and anything that
depends on them is unknown, never verified); then the built-in invariants (MMA alignment, races,
pipeline, mbarrier arrive counts, proxy fences, masked reductions, coverage, the scales of online-softmax
partial sums, alignment of vector and TMA copies, budgets), the user's tag assertions, and the performance warnings.
"""

from __future__ import annotations

import collections
import copy
import dataclasses
import hashlib
import time
from typing import Any

from argus.diagnostics import ArgusError
from argus.ir.nodes import Copy, Kernel, walk
from argus.ir.rewrite import inline_lets
from argus.layout import LayoutError
from argus.verify import smt
from argus.verify.blame import lookback_blame
from argus.verify.catalog import entry
from argus.verify.checks.align import check_alignment
from argus.verify.checks.asserts import check_assertion
from argus.verify.checks.barriers import check_barrier_threads
from argus.verify.checks.budget import check_register_budget, check_shared_budget
from argus.verify.checks.cluster import check_cluster_symmetry
from argus.verify.checks.coverage import (
    check_contraction_coverage,
    check_output_coverage,
    check_tiled_contraction_coverage,
)
from argus.verify.checks.fence import check_proxy_fences
from argus.verify.checks.global_reads import check_global_reads
from argus.verify.checks.mbarrier import check_arrive_counts
from argus.verify.checks.mma import check_gemm
from argus.verify.checks.once import (
    check_accumulator_reset,
    check_contraction_across_slices,
    check_contraction_once,
    check_output_once,
)
from argus.verify.checks.oob import check_masked_mmas, check_masked_reductions, check_shared_views
from argus.verify.checks.perf import check_performance
from argus.verify.checks.pipeline import check_stale_reads
from argus.verify.checks.races import check_races
from argus.verify.checks.scale import check_value_scales
from argus.verify.checks.smem_layout import check_smem_layouts
from argus.verify.checks.staged import check_staged_stores
from argus.verify.checks.tma_order import check_tma_program_order
from argus.verify.checks.wgmma import check_wgmma_in_flight
from argus.verify.context import SOLVER_RLIMIT, SOLVER_TIMEOUT_MS, Context
from argus.verify.model import analyze
from argus.verify.program import Unsupported
from argus.verify.report import Finding, Result, Verdict
from argus.verify.roles import check_protocol

#: The checks `verify_kernel` runs, by name.
CHECKS = ("mma", "races", "pipeline", "fence", "oob", "coverage", "scale", "align", "budget", "asserts", "perf")


#: The look-back `verify_kernel` uses when none is given: at least `LOOKBACK`, and for a kernel with a deeper
#: pipelined loop (`T.pipeline(..., stages=S)`) S - 1, the iterations between a stage's load and its use (a ring of 8
#: stages is read 7 iterations after it was written), up to `LOOKBACK_MOST` (a deeper ring's checks may stay
#: `UNKNOWN_LOOKBACK`, whose blame says which look-back decides them). Each check still starts at one iteration and
#: looks further back only while it is undecided, so a kernel whose checks are decided within 4 costs nothing more.
LOOKBACK = 4
LOOKBACK_MOST = 8


def default_lookback(kernel: Kernel) -> int:
    """The look-back `verify_kernel` uses for `kernel` when none is given (`LOOKBACK`, `LOOKBACK_MOST`)."""
    from argus.ir.nodes import For, LoopKind, walk

    pipelined = (s.stages for s in walk(kernel.body) if isinstance(s, For) and s.kind == LoopKind.PIPELINED)
    return max(LOOKBACK, min(LOOKBACK_MOST, max(pipelined, default=1) - 1))


def verify_kernel(
    kernel: Kernel,
    *,
    checks: tuple[str, ...] = CHECKS,
    lookback: int | None = None,
    timeout_ms: int = SOLVER_TIMEOUT_MS,
    rlimit: int = SOLVER_RLIMIT,
    shapes: dict[str, int] | None = None,
) -> Result:
    """Verify a traced kernel: every built-in invariant and tag assertion, for all blocks, threads, loop iterations and
    problem sizes allowed by the kernel's assumptions (or the sizes pinned in `shapes`). `lookback` bounds how many
    loop iterations back a value is traced (each check starts at one and looks further back only while that leaves
    it undecided; default `default_lookback`). Each Z3 query gets `rlimit` resource units (deterministic: the same
    kernel gets the same answer on a loaded machine) and `timeout_ms` as a backstop; a query that exhausts them is
    ``UNKNOWN_SOLVER``. The verification runs on a Z3 state of its own (`smt.isolated`), so its answers do not
    depend on what this process verified before.

    The same kernel verified again in this process with the same options gets the answer of the first time
    (`MEMO_SIZE` answers are kept, keyed by the kernel's wire form, `argus.ir.serialize`, which holds every field
    of every node with shared objects numbered in the order they are met: two kernels with the same key are the
    same program, up to the identity of their objects); a kernel the wire form cannot hold is verified anew."""
    from argus.verify.model import MAX_READS  # read when called: a budget set by a caller (or a test) counts

    if lookback is None:
        lookback = default_lookback(kernel)
    key = _memo_key(kernel, checks, lookback, timeout_ms, rlimit, shapes, MAX_READS)
    if key is not None and key in _MEMO:
        _MEMO.move_to_end(key)
        return copy.deepcopy(_MEMO[key])
    with smt.isolated():
        result = _verify_kernel(kernel, checks, lookback, timeout_ms, rlimit, shapes)
    if key is not None:
        try:
            kept = copy.deepcopy(result)
        except Exception:  # an answer holding what cannot be copied is not kept (the next call verifies anew)  # noqa: BLE001
            return result
        _MEMO[key] = kept
        while len(_MEMO) > MEMO_SIZE:
            _MEMO.popitem(last=False)
    return result


#: How many verification answers `verify_kernel` keeps for a kernel verified again (least recently used first out).
MEMO_SIZE = 256
_MEMO: collections.OrderedDict[str, Result] = collections.OrderedDict()


def _memo_key(kernel: Kernel, *options: Any) -> str | None:
    """The digest of `kernel`'s wire form and the verification `options`; None when the wire form cannot hold the
    kernel (a callable or an array among its parameters, or past its size bounds)."""
    from argus.ir.serialize import IRSerializeError, kernel_to_json

    try:
        text = kernel_to_json(kernel)
    except IRSerializeError:
        return None
    extra = repr(tuple(sorted(o.items()) if isinstance(o, dict) else o for o in options))
    return hashlib.sha256((text + "\0" + extra).encode()).hexdigest()


def _verify_kernel(
    kernel: Kernel,
    checks: tuple[str, ...],
    lookback: int,
    timeout_ms: int,
    rlimit: int,
    shapes: dict[str, int] | None,
) -> Result:
    start = time.perf_counter()
    _check_pinned(kernel, dict(shapes or {}))
    kernel = inline_lets(kernel)  # the passes' bindings, as the index expressions they stand for
    im2col = next((s for s in walk(kernel.body) if isinstance(s, Copy) and _im2col_unmodelled(s)), None)
    if im2col is not None:  # a source whose rows are not the traversal from its position's pixel
        reason = (
            "a TMA im2col load's window origin is not the pixel of its traversal position (Im2col.pixel), as X.im2col "
            "builds it: the verifier models the rows from the position, the hardware starts at the origin"
        )
        return Result(
            kernel.name,
            dict(kernel.params),
            (Finding("UNKNOWN_STATEMENT", Verdict.UNKNOWN, reason, loc=im2col.loc, reason=reason),),
            (),
            time.perf_counter() - start,
        )
    analysis = analyze(kernel)
    ctx = Context(analysis, timeout_ms=timeout_ms, lookback=lookback, pinned=dict(shapes or {}), rlimit=rlimit)
    findings: list[Finding] = []
    for site, code, reason in analysis.unknown:
        findings.append(Finding(code, Verdict.UNKNOWN, reason, loc=site.loc, reason=reason, pin=entry(code).hint))

    def run(check: str, fn: Any, *args: Any, loc: Any = None) -> None:
        """Run one check; what the encoding cannot express makes it unknown, never verified."""
        try:
            got = fn(*args)
            findings.extend(_explain_lookback(ctx, got, fn, args))
        except (smt.EncodingError, Unsupported, LayoutError) as err:
            text = str(err)
            code = "UNKNOWN_LAYOUT_INVERSE" if text.startswith("UNKNOWN_LAYOUT_INVERSE") else "UNKNOWN_STATEMENT"
            findings.append(
                Finding(
                    code,
                    Verdict.UNKNOWN,
                    f"the {check} check could not be encoded",
                    loc=loc,
                    reason=text,
                    pin=entry(code).hint,
                )
            )

    if "mma" in checks:
        for site in analysis.gemms:
            run("MMA", check_gemm, ctx, site, loc=site.loc)
    protocol: list[Finding] = []
    proved: set[int] = set()
    try:
        protocol, proved = check_protocol(ctx, analysis.pairings)
    except (smt.EncodingError, Unsupported, LayoutError) as err:
        protocol = [
            Finding(
                "UNKNOWN_WARP_ROLES", Verdict.UNKNOWN, "the mbarrier protocol could not be encoded", reason=str(err)
            )
        ]
    if "pipeline" in checks:
        findings += protocol
    if "races" in checks:
        ordered = {(id(p.producer), id(p.consumer), p.buffer) for p in analysis.pairings if id(p) in proved}
        run("race", check_races, ctx, ordered)
        run("barrier threads", check_barrier_threads, ctx)
    if "pipeline" in checks:
        run("stale-read", check_stale_reads, ctx)
        run("TMA read order", check_tma_program_order, ctx)
        run("mbarrier arrive count", check_arrive_counts, ctx)
        run("wgmma in flight", check_wgmma_in_flight, ctx)
        run("staged store buffers", check_staged_stores, ctx)
        run("cluster symmetry", check_cluster_symmetry, ctx)
    if "fence" in checks:
        run("proxy fence", check_proxy_fences, ctx)
    if "oob" in checks:
        run("masked-reduction", check_masked_reductions, ctx)
        run("masked MMA", check_masked_mmas, ctx)
        run("shared view bounds", check_shared_views, ctx)
    if "coverage" in checks:
        run("contraction coverage", check_contraction_coverage, ctx)
    if "scale" in checks:
        run("value scale", check_value_scales, ctx)
    if "align" in checks:
        run("alignment", check_alignment, ctx)
        run("shared-memory layout", check_smem_layouts, ctx)
    if "budget" in checks:
        run("shared-memory budget", check_shared_budget, ctx)
        run("register budget", check_register_budget, ctx)
    if "asserts" in checks:
        for site in analysis.asserts:
            run("tag assertion", check_assertion, ctx, site, loc=site.loc)
    if "coverage" in checks:
        # after the tag assertions: Z3's time on a query moves with the terms built before it in the process, and the
        # exactly-once checks build many (a tile order's lemma, its witness searches); the assertions were measured
        # and budgeted without them; output coverage too, which proves a tile order's lemma for a persistent store
        run("output coverage", check_output_coverage, ctx)
        run("output written once", check_output_once, ctx)
        run("contraction accumulated once", check_contraction_once, ctx, proved)
        run("contraction accumulated once across slices", check_contraction_across_slices, ctx, proved)
        run("accumulator reset per tile", check_accumulator_reset, ctx)
        # last: it reads output coverage's proved covers, and its projections (data-placed segments' encodings)
        # would move the exactly-once queries' budgets (a grouped TMA-store kernel's once proof ran out of its
        # budget with them built first)
        run("contraction coverage", check_tiled_contraction_coverage, ctx)
    if "races" in checks:
        # after the exactly-once checks, whose budgets were measured without its queries; it reuses their tile lemmas
        run("reads of other blocks' stores", check_global_reads, ctx)
    if "perf" in checks:
        run("performance", check_performance, ctx)
    return Result(
        kernel.name,
        dict(kernel.params),
        tuple(_dedupe(findings)),
        tuple(ctx.records),
        time.perf_counter() - start,
    )


def _same_expr(a: Any, b: Any) -> bool:
    """`a` and `b` are the same expression tree: the same node types and operators, equal constants, the very same
    variables (identity: two variables of one name are different ones)."""
    from argus.ir.expr import Const, Var

    a = a.value if isinstance(a, Const) else a
    b = b.value if isinstance(b, Const) else b
    if isinstance(a, Var) or isinstance(b, Var):
        return a is b
    if type(a) is not type(b):
        return False
    if not dataclasses.is_dataclass(a):
        return bool(a == b)
    return all(
        _same_expr(getattr(a, f.name), getattr(b, f.name))
        if not isinstance(getattr(a, f.name), tuple)
        else len(getattr(a, f.name)) == len(getattr(b, f.name))
        and all(_same_expr(x, y) for x, y in zip(getattr(a, f.name), getattr(b, f.name), strict=True))
        for f in dataclasses.fields(a)
    )


def _im2col_unmodelled(s: Copy) -> bool:
    """An im2col load whose origin is not `Im2col.pixel` of its position (the same expression trees, after the
    kernel's `T.let` bindings are inlined): the verifier's model of its rows (`program.buffer_coords`) counts from the
    position, the generated code from the origin."""
    ref = s.src
    if ref.im2col is None:
        return False
    if s.atom != "tma" or s.dst.im2col is not None:
        return True
    want = ref.im2col.pixel(ref.im2col.position, ref.buffer.shape)
    return len(want) != len(ref.origin) - 1 or not all(
        _same_expr(o, w) for o, w in zip(ref.origin[:-1], want, strict=True)
    )


def _explain_lookback(ctx: Context, got: list[Finding], fn: Any, args: tuple) -> list[Finding]:
    """`got`, each ``UNKNOWN_LOOKBACK`` finding with the blame that names its loop and the look-back that decides it
    (the same check run again with larger look-backs, `argus.verify.blame.lookback_blame`)."""
    if not any(f.code == "UNKNOWN_LOOKBACK" and f.blame is None for f in got):
        return got

    def rerun(n: int) -> list[Finding]:
        again = dataclasses.replace(ctx, lookback=n, records=[], loop_terms=[])
        return list(fn(again, *args[1:]))

    out = []
    for f in got:
        if f.code == "UNKNOWN_LOOKBACK" and f.blame is None and args and args[0] is ctx:
            f = dataclasses.replace(f, blame=lookback_blame(ctx, f, rerun))
        out.append(f)
    return out


class PinnedShapeError(ArgusError, ValueError):
    """Sizes pinned for verification that the kernel does not have, or that violate its assumptions (every
    query would be vacuously true)."""


def _check_pinned(kernel: Kernel, shapes: dict[str, int]) -> None:
    """Refuse pinned sizes the kernel does not have, or that no problem allowed by its assumptions has: with the
    pins, the assumptions (`T.assume`) must still be satisfiable, or every query would be vacuously true. An
    assumption that mentions sizes left free (``K % 8 == 0 and N % 8 == 0`` with only ``K`` pinned) is decided for
    some value of the free ones, by Z3."""
    import z3

    names = {v.name: v for v in kernel.shape_vars}
    unknown = sorted(set(shapes) - set(names))
    if unknown:
        raise PinnedShapeError(
            "VERIFY_PINNED_SHAPE",
            f"kernel {kernel.name} has no problem size {unknown[0]!r}",
            requirement=f"one of {', '.join(names) or '(none)'}",
        )
    terms = {v: z3.BitVec(v.name, smt.WIDTH) for v in kernel.shape_vars}
    solver = z3.Solver()
    solver.set("rlimit", SOLVER_RLIMIT)
    for v, t in terms.items():
        solver.add(smt.in_range(t, 1, smt.MAX_EXTENT + 1))
        if v.name in shapes:
            solver.add(t == int(shapes[v.name]))
    for a in kernel.assumptions:
        condition = smt.boolean(smt.evaluate(a, terms))
        solver.add(condition, *smt.definitions([condition]))  # a division's quotient and remainder, defined
        if solver.check() == z3.unsat:
            raise PinnedShapeError(
                "VERIFY_PINNED_SHAPE",
                f"the pinned sizes {shapes} violate kernel {kernel.name}'s assumption {a}: nothing to verify",
                "pin sizes the kernel allows (its T.assume declarations), or verify for all sizes",
            )


def _dedupe(findings: list[Finding]) -> list[Finding]:
    """One finding per (code, source line): the first found; the others are counted."""
    out: dict[tuple, Finding] = {}
    counts: dict[tuple, int] = {}
    for f in findings:
        key = (f.code, f.loc.file if f.loc else None, f.loc.line if f.loc else None)
        counts[key] = counts.get(key, 0) + 1
        out.setdefault(key, f)
    result = []
    for key, f in out.items():
        if counts[key] > 1:
            from dataclasses import replace

            f = replace(f, details={**f.details, "instances": counts[key]})
        result.append(f)
    return result


def verify(target: Any, *, shapes: dict[str, int] | None = None, **options: Any) -> Result:
    """Verify an ``@argus.kernel`` (traced with `params`), a library kernel (`LibraryKernel`, traced
    with its parameters) or a traced `Kernel`. Keyword options other than those of `verify_kernel`
    are trace-time parameters."""
    verify_opts = {k: options.pop(k) for k in ("checks", "lookback", "timeout_ms", "rlimit") if k in options}
    kernel = _trace(target, options)
    return verify_kernel(kernel, shapes=shapes, **verify_opts)


def _trace(target: Any, params: dict[str, Any]) -> Kernel:
    """The IR to verify. A library entry is taken by its shape — an ``@argus.kernel`` as `kernel` and its trace-time
    `params` (`argus.kernels.registry.LibraryKernel` and a kernel of your own are) — so the verifier does not
    import the layers above it."""
    if isinstance(target, Kernel):
        return target
    if hasattr(getattr(target, "kernel", None), "trace") and isinstance(getattr(target, "params", None), dict):
        return target.kernel.trace(**{**target.params, **params})
    if hasattr(target, "trace"):
        return target.trace(**params)
    raise TypeError(f"cannot verify {target!r}: expected an @argus.kernel, a LibraryKernel or a traced Kernel")
