"""The two blocks of a cluster do the same thing (`PIPELINE_CLUSTER_ASYMMETRIC`).

In a kernel of 2-block clusters (``T.grid(..., cluster=2)``, `Kernel.cluster`) two statements act on both blocks:

* a multicast TMA load (`Copy.multicast`): each block issues half of the box (`argus.atoms.tma.multicast_half`),
  landing in both blocks' destination and completing on the mbarrier at the same offset in each;
* an arrival on a cluster mbarrier (`MbarrierInit.cluster`): made on this block's barrier and on the peer's, whose
  phase completes after both blocks' `arrive_count` arrivals.

The other checks see one block: a multicast load as the whole box loaded into its own destination, a cluster
barrier as its own barrier with `arrive_count` arrivals. That view is the hardware's exactly when the two blocks of
every cluster execute these statements the same number of times with the same values: the same box (the halves
then make it whole in each block), into the same stage, on the same barriers. This check proves it. With the
grid's first index ``b = 2c + r`` (r the cluster rank), for every multicast load and every arrival on a cluster
barrier: the extents and starts of the loops around it, the conditions of the branches around it, and (where it
runs) its source box, destination and barrier index are equal at ``r = 0`` and ``r = 1``, for every cluster c,
every problem size the assumptions allow and every iteration of the loops (Z3). A difference is `violated`, with
the cluster, the sizes and the iteration where the two blocks part.

Under that symmetry, the reuse of a multicast stage is the single block's proof: a producer refills stage s only
after waiting on a barrier that the pipeline check proved its own consumers release s on, and a cluster barrier's
phase also needs the peer's consumers' releases of the same iteration (their same statements). So the role that
issues multicast loads must wait on cluster barriers only; another wait there is `unknown` (the stage's reuse in
the peer is not proved). A multicast load completing on a cluster barrier, TMA bytes announced on one, or either
statement in a kernel without clusters is `violated`: the code generator refuses them.
"""

from __future__ import annotations

import time
from typing import Any

import z3

from argus.ir.expr import Expr
from argus.ir.nodes import Copy, MbarrierArrive, MbarrierWait, Role
from argus.verify import smt
from argus.verify.context import Context
from argus.verify.program import Site, first_thread, loop_name, user_name
from argus.verify.report import Counterexample, Finding, ThreadPoint, Verdict

CODE = "PIPELINE_CLUSTER_ASYMMETRIC"


def _paired_sites(ctx: Context, pair: set[int]) -> list[Site]:
    out = []
    for x in ctx.analysis.program.sites:
        s = x.stmt
        if isinstance(s, Copy) and s.multicast:
            out.append(x)
        elif isinstance(s, MbarrierArrive) and id(s.barrier.buffer) in pair:
            out.append(x)
    return out


def _values(s: Any) -> list[tuple[str, Any]]:
    """The statement's expressions both blocks must agree on, each with what it is."""
    out: list[tuple[str, Any]] = []
    if isinstance(s, Copy):
        out += [(f"the box's origin along dimension {i}", o) for i, o in enumerate(s.src.origin)]
        out += [(f"the destination's origin along dimension {i}", o) for i, o in enumerate(s.dst.origin)]
        if s.mbarrier is not None:
            out += [("the mbarrier index", o) for o in s.mbarrier.origin]
    else:
        out += [("the mbarrier index", o) for o in s.barrier.origin]
    return out


def _finding(site: Site, message: str, verdict: Verdict = Verdict.VIOLATED, cex: Any = None) -> Finding:
    code = CODE if verdict == Verdict.VIOLATED else "UNKNOWN_STATEMENT"
    return Finding(code, verdict, message, loc=site.loc, counterexample=cex, reason=None if cex else message)


def check_cluster_symmetry(ctx: Context) -> list[Finding]:
    k = ctx.kernel
    pair = ctx.kernel.cluster_barriers()
    sites = _paired_sites(ctx, pair)
    if not sites:
        return []
    findings: list[Finding] = []
    if k.cluster != 2:
        return [
            _finding(
                sites[0],
                f"a multicast TMA load or a cluster mbarrier in a kernel that is not launched in 2-block clusters "
                f"(clusters of {k.cluster})",
            )
        ]
    extent = _first_extent(ctx)
    odd = ctx.solve([], smt.mod(extent, smt.val(2)) != 0)
    if odd.verdict != Verdict.VERIFIED:
        message = f"the grid's first extent {k.grid[0]} is not always even: a block would have no cluster peer"
        if odd.verdict == Verdict.UNKNOWN:
            return [_finding(sites[0], message, Verdict.UNKNOWN)]
        cex = Counterexample(code=CODE, message=message, op_loc=k.grid_loc, shapes=ctx.shape_values(odd.model))
        return [Finding(CODE, Verdict.VIOLATED, message, loc=k.grid_loc, counterexample=cex)]
    issuers: set[int] = set()
    for x in sites:
        s = x.stmt
        if isinstance(s, Copy) and s.mbarrier is not None and id(s.mbarrier.buffer) in pair:
            findings.append(
                _finding(
                    x,
                    f"the multicast load into {user_name(s.dst.buffer)} completes on a cluster mbarrier: each "
                    "block's bytes complete on its own barrier",
                )  # fmt: skip
            )
        if isinstance(s, MbarrierArrive) and s.expect_bytes:
            findings.append(_finding(x, "TMA bytes announced on a cluster mbarrier"))
        if isinstance(s, Copy) and x.role is not None:
            issuers.add(id(x.role))
    for x in ctx.analysis.program.sites:  # the multicast stages' reuse: waited for on the pair's barriers alone
        s = x.stmt
        if (
            isinstance(s, MbarrierWait)
            and x.role is not None
            and id(x.role) in issuers
            and id(s.barrier.buffer) not in pair
        ):
            findings.append(
                _finding(
                    x,
                    f"role {x.role.name} issues multicast TMA loads and waits on {user_name(s.barrier.buffer)}, which "
                    "is not a cluster mbarrier: the verifier proves a multicast stage free in the peer block only "
                    "where its issuing role waits on cluster barriers alone",
                    Verdict.UNKNOWN,
                )
            )
    outside = next((x for x in sites if isinstance(x.stmt, Copy) and x.role is None), None)
    if outside is not None:
        x = outside
        findings.append(
            _finding(
                x,
                "a multicast TMA load outside a warp role: the verifier proves multicast stages' reuse for "
                "a producer role",
                Verdict.UNKNOWN,
            )  # fmt: skip
        )
    if findings:
        return findings
    for x in sites:
        start = time.perf_counter()
        finding = _symmetric(ctx, x, extent)
        ctx.record("cluster symmetry", str(x.loc), Verdict.VERIFIED if finding is None else finding.verdict, start)
        if finding is not None:
            findings.append(finding)
    return findings


def _first_extent(ctx: Context) -> Any:
    """The grid's first extent as a Z3 term."""
    g = ctx.kernel.grid[0]
    return smt.evaluate(g, ctx.base_env) if isinstance(g, Expr) else smt.val(g)


def _symmetric(ctx: Context, site: Site, extent: Any) -> Finding | None:
    """None where both blocks of every cluster (`extent` blocks in the grid's first dimension) run `site` alike;
    else the finding."""
    k = ctx.kernel
    first = k.block_vars[0]
    c = z3.BitVec("cluster", smt.WIDTH)
    envs = []
    for rank in (0, 1):
        env = dict(ctx.base_env)
        env[first] = c * 2 + rank
        env[k.thread_var] = z3.BitVec("tid", smt.WIDTH)
        envs.append(env)
    cons = [smt.in_range(c, 0, smt.floordiv(extent, smt.val(2))), smt.in_range(envs[0][k.thread_var], 0, k.threads)]
    differences: list[tuple[str, Any]] = []
    path: list[Any] = []
    loops: dict[str, Any] = {}

    def both(e: Expr | int) -> tuple[Any, Any]:
        return tuple(smt.evaluate(e, env) if isinstance(e, Expr) else smt.val(e) for env in envs)  # type: ignore[return-value]

    for f in site.frames:
        owner = f.owner
        if owner is None or isinstance(owner, Role):
            continue
        if hasattr(owner, "extent"):  # a loop: the same trip count and start, then one shared iteration variable
            for what, e in (("trip count", owner.extent), ("start", owner.start)):
                a, b = both(e)
                differences.append((f"loop {loop_name(owner)}'s {what}", z3.And(*path, a != b) if path else a != b))
            t = z3.BitVec(f"loop.{owner.var.name}.cluster", smt.WIDTH)
            ctx.loop_terms.append(t)
            cons.append(z3.Implies(z3.And(*path) if path else z3.BoolVal(True), ctx.loop_range(owner, t, envs[0])))
            for env in envs:
                env[owner.var] = t
            loops[loop_name(owner)] = t
        else:  # a branch: taken by both or by neither
            a, b = (smt.boolean(v) for v in both(owner.cond))
            differences.append(("a branch's condition", z3.And(*path, a != b) if path else a != b))
            path.append(a if f.branch else z3.Not(a))
    for what, e in _values(site.stmt):
        a, b = both(e)
        differences.append((what, z3.And(*path, a != b) if path else a != b))
    out = ctx.solve(cons, z3.Or(*[d for _, d in differences]))
    if out.verdict == Verdict.VERIFIED:
        return None
    if out.verdict == Verdict.UNKNOWN:
        return Finding(
            "UNKNOWN_SOLVER" if out.code == "UNKNOWN_SOLVER" else "UNKNOWN_STATEMENT",
            Verdict.UNKNOWN,
            "the two blocks of a cluster could not be proved to run this statement alike",
            loc=site.loc,
            reason=out.reason,
        )
    model = out.model
    what = next((w for w, d in differences if smt.model_bool(model, d)), differences[0][0])
    kind = "multicast TMA load" if isinstance(site.stmt, Copy) else "arrival on a cluster mbarrier"
    cluster = smt.model_int(model, c)
    message = (
        f"the two blocks of cluster {cluster} (blocks {2 * cluster} and {2 * cluster + 1}) differ in {what} at this "
        f"{kind}: each block's half of a multicast box lands in both, and a cluster barrier counts both blocks' "
        "arrivals, so both must issue the same ones"
    )
    cex = Counterexample(
        code=CODE,
        message=message,
        op_loc=site.loc,
        program_point=str(site.loc),
        block={**ctx.block_values(model), first.name: 2 * cluster},
        thread=ThreadPoint(first_thread(site.role), site.role.name if site.role is not None else None),
        shapes=ctx.shape_values(model),
        loops={name: smt.model_int(model, t) for name, t in loops.items()},
    )
    return Finding(CODE, Verdict.VIOLATED, message, loc=site.loc, counterexample=cex)
