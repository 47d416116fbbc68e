"""What every check shares: the symbolic launch (block indices, problem sizes under the kernel's
assumptions), loop variables for a program point, solving with the unknown/violated split, and
turning a model into the pieces of a counterexample."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import z3

from argus.ir.expr import Expr, Var
from argus.ir.nodes import For, Kernel
from argus.verify import smt, values
from argus.verify.model import Analysis, Query, Step
from argus.verify.program import Site
from argus.verify.report import ChainStep, CheckRecord, Verdict


@dataclass
class Outcome:
    """The answer to one query: verdict, the model when violated, and the reason when unknown."""

    verdict: Verdict
    model: Any = None
    reason: str | None = None
    code: str | None = None  # the UNKNOWN_* code
    explain: Any = None  # UNKNOWN_SOLVER: a function giving the `Blame` that says which pinned size decides it


#: Z3's budget per query, in its deterministic resource units (``rlimit``): an answer depends on the query, never on
#: how loaded the machine is. About 30 s of one core here; the heaviest library query (gemm_tma_wgmma) takes ~60M.
SOLVER_RLIMIT = 300_000_000
#: A wall-clock backstop only (a machine many times slower than expected); the resource budget decides first.
SOLVER_TIMEOUT_MS = 600_000


@dataclass
class Context:
    analysis: Analysis
    timeout_ms: int = SOLVER_TIMEOUT_MS
    lookback: int = 4
    pinned: dict[str, int] = field(default_factory=dict)
    rlimit: int = SOLVER_RLIMIT
    records: list[CheckRecord] = field(default_factory=list)
    loop_terms: list[Any] = field(default_factory=list)
    #: releases proved by the protocol check (`roles._check_tails`) as one iteration behind plus the last stage's
    #: release after the loop: id(barrier buffer) -> the ids of those two arrive statements; each iteration of the
    #: pipeline is released by exactly one of them (the arrive-count check counts them as one arrival)
    tail_releases: dict[int, frozenset[int]] = field(default_factory=dict)
    #: the tile-order lemmas of exactly-once (`checks/tiles.py`, a `tiles.Lemma`), by (id(site), id(site), id(tensor))
    tile_lemmas: dict[tuple[int, int, int], Any] = field(default_factory=dict)
    #: the store sites output coverage proved to cover their grids through a tile order (`tiles.Covered`): the
    #: persistent kernels' operand loads are projected on them (`coverage.check_tiled_contraction_coverage`)
    tile_covers: list[Any] = field(default_factory=list)
    #: the operand tensors whose loads are placed by a tile order or guarded: checked after output coverage
    tiled_loads: list[Any] = field(default_factory=list)
    #: the sites whose coverage was read at the ends of varying indices (`coverage._ends`): misses are confirmed
    longest_walks: set[int] = field(default_factory=set)
    #: the sites whose coverage readings fix a block index that also places their windows (`coverage._ends`): those
    #: readings prove coverage where they hold it; an element they miss is not reported (the index's middle values
    #: may load it, or the kernel may skip it on purpose: a triangular operand's zeros), the check is "not checked"
    proof_only_walks: set[int] = field(default_factory=set)
    pin_searches: int = 0  # solver-undecided queries searched for a deciding pin so far (`argus.verify.blame`)

    def __post_init__(self) -> None:
        k = self.kernel
        self.shape_terms: dict[Var, Any] = {v: z3.BitVec(v.name, smt.WIDTH) for v in k.shape_vars}
        self.block_terms: dict[Var, Any] = {v: z3.BitVec(v.name, smt.WIDTH) for v in k.block_vars}
        env: dict[Any, Any] = dict(self.shape_terms)
        cons: list[Any] = []
        for v, t in self.shape_terms.items():
            cons.append(smt.in_range(t, 1, smt.MAX_EXTENT + 1))
            if v.name in self.pinned:
                cons.append(t == self.pinned[v.name])
        for a in k.assumptions:
            cons.append(smt.boolean(smt.evaluate(a, env)))
        for v, g in zip(k.block_vars, k.grid, strict=True):
            t = self.block_terms[v]
            ext = smt.evaluate(g, env) if isinstance(g, Expr) else smt.val(g)
            cons.append(smt.in_range(t, 0, ext))
        env.update(self.block_terms)
        self.base_env = env
        self.base_constraints = cons

    @property
    def kernel(self) -> Kernel:
        return self.analysis.kernel

    def query(self, lookback: int | None = None) -> Query:
        return Query(self.analysis, self.lookback if lookback is None else lookback)

    def loop_env(self, site: Site, env: dict | None = None, suffix: str = "") -> tuple[dict, list[Any]]:
        """`env` extended with a fresh variable for every loop around `site` (in its range)."""
        env = dict(self.base_env if env is None else env)
        cons: list[Any] = []
        for lp in site.loops:
            t = z3.BitVec(f"loop.{lp.var.name}{suffix}", smt.WIDTH)
            self.loop_terms.append(t)
            cons.append(self.loop_range(lp, t, env))
            env[lp.var] = t
        return env, cons

    @staticmethod
    def loop_range(lp: For, t: Any, env: dict) -> Any:
        ext = smt.evaluate(lp.extent, env) if isinstance(lp.extent, Expr) else smt.val(lp.extent)
        return smt.in_range(t, 0, ext)

    # --- solving ------------------------------------------------------------------------------------------------
    def solve(self, constraints: list[Any], violation: Any, q: Query | None = None) -> Outcome:
        """Is `violation` possible under `constraints` (and the query's side conditions)? Violations
        that need a tag the verifier could not determine make the outcome unknown, not violated."""
        s = z3.SolverFor("QF_BV")
        s.set("timeout", self.timeout_ms)
        s.set("rlimit", self.rlimit)
        s.add(*self.base_constraints, *constraints)
        if q is not None:
            s.add(*q.side)
        s.add(violation)
        # the quotient and remainder variables of every term, the assumptions' included: an assumption such as
        # ``Q % 192 == 0`` is a remainder variable, and without its definition it would constrain nothing
        everything = [*self.base_constraints, *constraints, violation, *(q.side if q is not None else [])]
        s.add(*smt.definitions(everything))
        # what the kernel declares of its tensors' data (T.assume_values), on the elements this query reads
        s.add(*values.facts(self.kernel, self.base_env, everything))
        havoc = q.havoc if q is not None else []
        if not havoc:
            r = s.check()
            if r == z3.sat:
                return Outcome(Verdict.VIOLATED, self._small_model(s))
            if r == z3.unknown:
                return self._solver_unknown(s, constraints, violation, q)
            return Outcome(Verdict.VERIFIED)
        # Tags the verifier could not determine (`havoc`) are free: no violation even with them free is a proof, in
        # one query (the usual answer). Otherwise a violation that needs none of them is real; one that needs one is
        # unknown, for the reason of the undetermined tag it needs.
        r = s.check()
        if r == z3.unknown:
            return self._solver_unknown(s, constraints, violation, q)
        if r == z3.unsat:
            return Outcome(Verdict.VERIFIED)
        free = s.model()
        s.push()
        s.add(*[z3.Not(g) for g, _, _ in havoc])
        r = s.check()
        if r == z3.sat:
            return Outcome(Verdict.VIOLATED, self._small_model(s))
        if r == z3.unknown:
            return self._solver_unknown(s, constraints, violation, q)
        s.pop()
        for g, code, reason in havoc:
            if smt.model_bool(free, g):
                return Outcome(Verdict.UNKNOWN, model=free, reason=reason, code=code)
        return Outcome(Verdict.UNKNOWN, model=free, reason=havoc[0][2], code=havoc[0][1])

    def _solver_unknown(self, s: z3.Solver, constraints: list[Any], violation: Any, q: Query | None) -> Outcome:
        """UNKNOWN_SOLVER, with the search for a size whose pinning decides the query (run when reported)."""
        from argus.verify.blame import pin_blame

        def explain() -> Any:
            return pin_blame(self, constraints, violation, q)

        return Outcome(Verdict.UNKNOWN, reason=f"Z3: {s.reason_unknown()}", code="UNKNOWN_SOLVER", explain=explain)

    def _small_model(self, s: z3.Solver) -> Any:
        """A model of the satisfiable `s`, preferring small problem sizes and the first blocks (easier
        to read and to replay); falls back to any model."""
        model = s.model()
        for bound_shape, bound_block in ((256, 1), (1024, 4), (4096, 64)):
            try:
                s.push()
            except z3.Z3Exception:
                # a query whose first check ran a non-incremental tactic (seen on bit-vectors with tensor data:
                # "operator distinct not supported ... before invoking translator") takes no more assertions: its
                # model stands
                return model
            s.add(*[z3.ULE(t, bound_shape) for v, t in self.shape_terms.items() if v.name not in self.pinned])
            s.add(*[z3.ULE(t, bound_block) for t in self.block_terms.values()])
            s.add(*[z3.ULE(t, bound_block) for t in self.loop_terms])
            r = s.check()
            if r == z3.sat:
                model = s.model()
                s.pop()
                break
            s.pop()
        return model

    def record(self, check: str, target: str, verdict: Verdict, start: float) -> None:
        self.records.append(CheckRecord(check, target, verdict, time.perf_counter() - start))

    def record_not_checked(self, check: str, target: str, why: str, start: float) -> None:
        """A check outside its scope at `target` (`Result.not_checked`): recorded with the reason, never a finding."""
        self.records.append(
            CheckRecord(check, f"{target} (not checked: {why})", Verdict.UNKNOWN, time.perf_counter() - start, True)
        )

    # --- models -> counterexample pieces -------------------------------------------------------------------------
    def block_values(self, model: Any) -> dict[str, int]:
        return {v.name: smt.model_int(model, t) for v, t in self.block_terms.items()}

    def shape_values(self, model: Any) -> dict[str, int]:
        return {v.name: smt.model_int(model, t) for v, t in self.shape_terms.items()}

    @staticmethod
    def loop_values(model: Any, site: Site, env: dict) -> dict[str, int]:
        from argus.verify.program import loop_name

        return {loop_name(lp): smt.model_int(model, env[lp.var]) for lp in site.loops if lp.var in env}

    @staticmethod
    def chain(model: Any, steps: list[Step]) -> tuple[ChainStep, ...]:
        out = []
        seen: set = set()
        for st in steps:
            if not smt.model_bool(model, st.guard):
                continue
            loops = {k: smt.model_int(model, v) for k, v in st.loops.items()}
            detail = ""
            if st.describe is not None:
                try:
                    detail = st.describe(model)
                except Exception:  # noqa: BLE001 - a description must never hide a finding
                    detail = ""
            key = (st.site.index, tuple(sorted(loops.items())), detail)
            if key in seen:
                continue
            seen.add(key)
            out.append(ChainStep(st.op, st.site.loc, detail, loops))
        return tuple(out)
