"""Tuning the kernels `argus solve` generates: each kernel's declared policies searched by the agent's bandit
(`argus.agent.loop.optimize`, transform coder, no LLM) with measured times, the best parameters launched by the
solution (`argus.frontend.solve`'s ``tune`` hook).

A generated kernel is an ``@argus.kernel`` with a reference and the captured sizes, so the agent takes it as a task
of its own (``SOLUTION.py:KERNEL``): every candidate is gated (verified, checked against the reference) and, on a
GPU, timed at the captured sizes; the cost model only orders the arms. Without a GPU the loop's times are the
cost model's estimates, which do not decide here: the kernels keep their defaults and the outcome says so
(``allow_estimates`` takes them anyway, for tests of the plumbing).

Results are cached per (kernel, sizes, GPU): the key is the kernel's self-contained source
(`argus.kernels.source.module_source`, whose decorator holds the captured sizes) and the GPU's name; a measured
result is written to ``$ARGUS_CACHE_DIR/tuned`` (else ``~/.cache/argus/tuned``) and a second solve of the same
kernel on the same GPU takes it without searching again.

**GEMMs** (`tune_gemm`: `argus tune`, and the solution's library GEMMs under `argus solve --tune`): the policy space
is the GEMM library's configurations (`argus.kernels.matmul.ranked`: tile shape, pipeline depth, split-K, split
tail, epilogue), the model's order deciding which `budget` are measured; each is verified (every kernel of its
plan, no finding) and checked against a float64 product on the GPU before it is timed, interleaved with the others
(L2 flushed, order rotating); the fastest is written to the same cache directory (`argus.kernels.gemm_tuning`, by
GPU, dtype, layout and shape bucket), where every later call of `matmul` on that GPU finds it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from argus.agent.errors import AgentError


def default_cache_dir() -> Path:
    from argus.backend.cuda.cache import cache_root

    return cache_root("tuned")


@dataclass
class Tuned:
    """One kernel's tuning: the parameters chosen (empty: its defaults), the start's and the best time (ms,
    measured when `metric` is ``gpu``), the agent's run, whether it came from the cache, and a note."""

    kernel: str
    params: dict[str, Any] = field(default_factory=dict)
    start_ms: float | None = None
    best_ms: float | None = None
    metric: str | None = None
    run_id: str | None = None
    cached: bool = False
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


class Tuner:
    """The ``tune`` hook of `argus.frontend.solve.solve` (see the module docstring): ``tuner(solution, kernels)``
    returns kernel -> parameters and keeps each kernel's `Tuned` in `outcomes`.

    `executor` and `parallel` are the optimization loop's (`argus.agent.loop.optimize`): each kernel's search gates
    its candidates through `executor` (e.g. a Ray cluster; the caller's, not closed here) and keeps `parallel` in
    flight (default 1; more without an executor: a local pool of that many worker processes); a library GEMM's
    configurations are verified through them too (`tune_gemm`). The kernels are searched one after the other."""

    def __init__(
        self,
        budget: int,
        *,
        store: str | Path,
        allow_estimates: bool = False,
        cache_dir: str | Path | None = None,
        timeout_s: float = 600.0,
        on_step: Callable[[str], Any] | None = None,
        executor: Any = None,
        parallel: int | None = None,
        learn_across: bool = False,
    ) -> None:
        if budget < 1:
            raise ValueError("a tuning budget is at least one candidate per kernel")
        self.budget = budget
        self.store = Path(store)
        self.allow_estimates = allow_estimates
        self.cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        self.timeout_s = timeout_s
        self.on_step = on_step or (lambda text: None)
        self.executor = executor
        self.parallel = parallel
        #: each search starts from what the store's earlier runs of its family and shape class learned
        self.learn_across = learn_across
        self.outcomes: list[Tuned] = []

    def __call__(self, solution: Path, kernels: list[str]) -> dict[str, dict[str, Any]]:
        from argus.eval.candidates import import_file
        from argus.eval.device import has_gpu
        from argus.kernels.source import module_source

        gpu = has_gpu()
        if not gpu and not self.allow_estimates:
            for k in kernels:
                self.outcomes.append(
                    Tuned(k, note="not tuned: no GPU here (the cost model's estimates order the arms, they do not "
                          "choose); its defaults are kept")
                )  # fmt: skip
            return {}
        device = _gpu_name() if gpu else "cost model"
        module = import_file(Path(solution), "argus_tune_solution")
        chosen: dict[str, dict[str, Any]] = {}
        for name in kernels:
            if getattr(getattr(module, name), "library", False):  # a library GEMM: its configuration, measured
                self.outcomes.append(self._gemm(name, getattr(module, name), gpu))
                continue
            key = hashlib.sha256((module_source(getattr(module, name)) + "\0" + device).encode()).hexdigest()[:24]
            hit = self._read(key)
            if hit is not None:
                outcome = Tuned(name, cached=True, **hit)
                outcome.note = f"from the cache ({device})"
            else:
                self.on_step(f"tuning {name} ({self.budget} candidates)")
                outcome = self._search(solution, name)
                if outcome.metric == "gpu":
                    self._write(key, outcome)
            self.outcomes.append(outcome)
            if outcome.params:
                chosen[name] = dict(outcome.params)
        return chosen

    def _gemm(self, name: str, call: Any, gpu: bool) -> Tuned:
        """A solution's library GEMM (`argus.kernels.matmul.LibraryGemm`): `tune_gemm` on its captured problem, whose
        result the GEMM cache keeps for the solution's calls (no parameters to pass)."""
        problem = getattr(call, "problem", None)
        if problem is None or not hasattr(problem, "K"):
            return Tuned(name, note="not tuned: a library call without a GEMM problem")
        if not gpu:
            return Tuned(name, note="not tuned: no GPU here (its configuration is the model's)")
        self.on_step(f"tuning {name}'s GEMM configuration ({self.budget} candidates)")
        try:
            got = tune_gemm(problem, budget=self.budget, on_step=self.on_step, executor=self.executor,
                            parallel=self.parallel)  # fmt: skip
        except AgentError as err:
            return Tuned(name, note=f"not tuned: {err.message}")
        return Tuned(
            name,
            start_ms=got.heuristic_ms,
            best_ms=got.ms,
            metric="gpu",
            note=f"GEMM {got.config} (the model's: {got.heuristic}), recorded for {got.gpu}",
        )

    def _search(self, solution: Path, name: str) -> Tuned:
        from argus.agent.loop import Budget, optimize

        result = optimize(
            f"{solution}:{name}",
            planner="bandit",
            coder="transform",
            budget=Budget(candidates=self.budget),
            store=self.store,
            seed=0,
            timeout_s=self.timeout_s,
            executor=self.executor,
            parallel=self.parallel,
            priors=self.learn_across,
        )
        best = result.best or {}
        outcome = Tuned(name, start_ms=result.start_ms, metric=result.metric, run_id=result.run_id)
        outcome.best_ms = best.get("ms")
        same_kernel = str(best.get("kernel", "")).endswith(f":{name}")
        if best and best.get("step", 0) != 0 and same_kernel:
            outcome.params = dict(best.get("params") or {})
            outcome.note = f"best of {len(result.trajectory)} candidates ({result.metric})"
        else:
            outcome.note = f"the defaults were the best of {len(result.trajectory)} candidates ({result.metric})"
        return outcome

    def _read(self, key: str) -> dict[str, Any] | None:
        try:
            data = json.loads((self.cache_dir / f"{key}.json").read_text())
        except (OSError, ValueError):
            return None
        fields = set(Tuned.__dataclass_fields__) - {"kernel", "cached"}
        return {k: v for k, v in data.items() if k in fields} if isinstance(data, dict) else None

    def _write(self, key: str, outcome: Tuned) -> None:
        try:
            self.cache_dir.mkdir(parents=True, exist_ok=True)
            (self.cache_dir / f"{key}.json").write_text(json.dumps(outcome.to_json(), default=str))
        except OSError:
            pass  # a cache that cannot be written costs a search next time, nothing else


def _gpu_name() -> str:
    """The GPU's name as the caches key it (`argus.kernels.gemm_tuning.gpu_name`: one source for both)."""
    from argus.kernels.gemm_tuning import gpu_name

    return gpu_name()


@dataclass
class TunedGemm:
    """One GEMM's tuning (`tune_gemm`): the configuration measured fastest and the model's choice, with their median
    times (ms) over `rounds` interleaved rounds, every configuration timed, those left out and why, and the cache
    file written."""

    problem: dict[str, Any]
    gpu: str
    config: str
    params: dict[str, Any]
    ms: float
    heuristic: str
    heuristic_ms: float
    timed: dict[str, float]
    skipped: dict[str, str]
    rounds: int
    cache: str

    @property
    def speedup(self) -> float:
        """The model's choice's time over the tuned one's (1.0: the model's choice was the fastest)."""
        return self.heuristic_ms / self.ms

    def to_json(self) -> dict[str, Any]:
        return {**{k: getattr(self, k) for k in self.__dataclass_fields__}, "speedup": self.speedup}


#: `tune_gemm`'s budget where the shipped calibration has no record of the GEMM planner's model
FALLBACK_GEMM_BUDGET = 6


def default_gemm_budget() -> int:
    """How many of the GEMM planner model's top configurations `tune_gemm` measures when not told: that model's
    held-out ``trust_k`` in the shipped calibration (the fewest top-ranked configurations that held one within 2 %
    of the measured best in 90 % of the recorded problems; `argus.eval.calibration`, docs/agent.md
    "Calibration"), at least 2; `FALLBACK_GEMM_BUDGET` without a record."""
    from argus.eval.calibration import shipped

    cal = shipped()
    k = cal.trust_k("gemm", model="library") if cal is not None else None
    return FALLBACK_GEMM_BUDGET if k is None else max(2, k)


def tune_gemm(
    problem: Any,
    *,
    budget: int | None = None,
    rounds: int = 30,
    verify: bool = True,
    cache_dir: str | Path | None = None,
    on_step: Callable[[str], Any] | None = None,
    seed: int = 0,
    executor: Any = None,
    parallel: int | None = None,
) -> TunedGemm:
    """Measure the `budget` configurations the model ranks first for `problem` (an `argus.kernels.matmul.GemmProblem`;
    the model's own choice always among them; default `default_gemm_budget`: as many as the model's measured
    ranking error says are needed) on this process's CUDA GPU and record the fastest in the GEMM cache
    (`argus.kernels.gemm_tuning`). Each is verified (with `verify`: every kernel of its plan, no finding) and checked
    against a float64 product of the same operands (normal values in the problem's dtype and layout) before it is
    timed; one that fails either is left out, with the reason. `AgentError` ``AGENT_TUNE`` without a GPU, for FP8
    inputs and for GEMV-class plans (which have no configurations to tune yet): `check_tunable`.

    The verification and compilation run in worker processes (`_verified_and_compiled`): through `executor` when one
    is given (e.g. a Ray cluster: one CPU job per configuration), else in a local pool of `parallel` workers when
    `parallel` is given, else one process per configuration (at most one per CPU). The correctness check and the
    timing always run here, in this process, on its GPU: the configurations are timed interleaved with each other
    (`time_interleaved_cuda`), which compares them only when every one runs in the same process on the same GPU."""
    import datetime

    from argus.eval.timing import Contender, time_interleaved_cuda
    from argus.eval.tolerance import compare, tolerance_for
    from argus.kernels import gemm_tuning
    from argus.kernels import matmul as mm

    step = on_step or (lambda text: None)
    budget = default_gemm_budget() if budget is None else budget
    check_tunable(problem, budget)
    what = _gemm_named(problem)
    import torch

    gpu = gemm_tuning.gpu_name()
    a, b = _gemm_operands(torch, problem, seed)
    reference = torch.matmul(a.double(), b.double())
    tolerance = tolerance_for(mm.torch_dtype(problem.out))
    configs = mm.tuning_configs(problem, budget)  # the model's choice first, then its cluster twin, then the ranking
    heuristic = configs[0]
    contenders: dict[str, Contender] = {}
    by_label: dict[str, Any] = {}
    skipped: dict[str, str] = {}
    keep: list[Any] = []
    step(f"{'verifying and ' if verify else ''}compiling {len(configs)} configurations")
    ready = _verified_and_compiled(problem, configs, verify, executor=executor, parallel=parallel)
    for config in configs:
        label = config.label
        step(f"{label}: checking")
        why = ready[label]
        if why is None:
            try:
                c, launches = mm.prepare(a, b, out_dtype=mm.torch_dtype(problem.out), config=config)
                for launch in launches:
                    launch.launch()
                torch.cuda.synchronize()
                check = compare(c, reference, tolerance, name=label)
                why = None if check.ok else f"{check.code}: {check.message}"
            except Exception as err:  # noqa: BLE001 - a configuration that does not run is left out, with the reason
                why = f"{type(err).__name__}: {err}"
        if why is not None:
            skipped[label] = why
            continue
        keep.append((c, launches))
        by_label[label] = config
        contenders[label] = Contender(lambda launches=launches: [launch.launch() for launch in launches])
    if heuristic.label not in contenders:
        raise AgentError(
            "AGENT_TUNE", f"cannot tune {what}: the model's own configuration failed ({skipped[heuristic.label]})"
        )
    step(f"timing {len(contenders)} configurations, {rounds} interleaved rounds")
    timing = time_interleaved_cuda(contenders, rounds=rounds, graph=False)
    medians = {label: timing.timings[label].median_ms for label in contenders}
    best = min(medians, key=medians.get)
    entry = {
        "config": by_label[best],
        "shape": [problem.M, problem.N, problem.K],
        "ms": medians[best],
        "heuristic": heuristic.label,
        "heuristic_ms": medians[heuristic.label],
        "timed": medians,
        "skipped": skipped,
        "verified": verify,
        "rounds": rounds,
        "when": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }
    path = gemm_tuning.record(problem, gpu, entry, cache_dir)
    return TunedGemm(
        problem={"M": problem.M, "N": problem.N, "K": problem.K, "dtype": problem.dtype, "out": problem.out,
                 "layout": problem.layout, "batch": problem.batch},
        gpu=gpu,
        config=best,
        params=asdict(by_label[best]),
        ms=medians[best],
        heuristic=heuristic.label,
        heuristic_ms=medians[heuristic.label],
        timed=medians,
        skipped=skipped,
        rounds=rounds,
        cache=str(path),
    )  # fmt: skip


def check_tunable(problem: Any, budget: int) -> None:
    """Raise `AgentError` ``AGENT_TUNE`` with the reason where `tune_gemm` cannot tune `problem` with `budget`: a
    budget below one, FP8 inputs, a GEMV-class plan, no CUDA GPU here (a command checks every problem with it before
    it starts any worker)."""
    from argus.eval.device import has_gpu
    from argus.kernels import matmul as mm

    what = _gemm_named(problem)
    if budget < 1:
        raise AgentError("AGENT_TUNE", f"cannot tune {what}: a budget is at least one configuration")
    if problem.dtype in mm.FP8_INPUTS:
        raise AgentError("AGENT_TUNE", f"cannot tune {what}: FP8 GEMMs have no tuned configurations yet")
    if mm.plan(problem).is_gemv:
        raise AgentError(
            "AGENT_TUNE", f"cannot tune {what}: its plan is a GEMV-class kernel (argus.kernels.gemv), not tuned yet"
        )
    if not has_gpu():
        raise AgentError("AGENT_TUNE", f"cannot tune {what}: no CUDA GPU here (tuning measures)")


def _gemm_named(problem: Any) -> str:
    """How `tune_gemm`'s refusals name `problem`."""
    return f"the GEMM {problem.M}x{problem.N}x{problem.K} ({problem.dtype}, {problem.layout})"


def _gemm_operands(torch: Any, problem: Any, seed: int) -> tuple[Any, Any]:
    """a (M, K) and b (K, N) (batched: a leading extent) of normal values in the problem's dtype, each stored as its
    layout says (a transposed view of a row-major tensor where the layout is T)."""
    from argus.kernels import matmul as mm

    g = torch.Generator(device="cuda").manual_seed(seed)
    dtype = mm.torch_dtype(problem.dtype)
    lead = (problem.batch,) if problem.batch > 1 else ()
    m, n, k = problem.M, problem.N, problem.K
    a = torch.randn(*lead, *((m, k) if problem.a_major == "K" else (k, m)), generator=g, device="cuda").to(dtype)
    b = torch.randn(*lead, *((k, n) if problem.b_major == "N" else (n, k)), generator=g, device="cuda").to(dtype)
    a = a if problem.a_major == "K" else a.transpose(-1, -2)
    return a, (b if problem.b_major == "N" else b.transpose(-1, -2))


def _verified_and_compiled(
    problem: Any, configs: list[Any], verify: bool, *, executor: Any = None, parallel: int | None = None
) -> dict[str, str | None]:
    """Each configuration's plan verified (with `verify`) and its kernels compiled into the on-disk cache, in
    worker processes: label -> None, or why it is left out. Through `executor` (`argus.eval.executor`; the caller's)
    when given, else through a local pool of `parallel` workers (`LocalExecutor`) when given, else in one process per
    configuration (at most one per CPU), as before there was an executor. Through an executor each configuration is
    a CPU job (`verify_and_compile_job`, plain data both ways); a job that crashes, hangs or raises leaves its
    configuration out with the worker's code. On another machine (Ray) the compiled kernels land in that node's
    cache: this process compiles them again when it prepares them for the timing."""
    import multiprocessing
    import os
    from concurrent.futures import ProcessPoolExecutor

    if executor is not None or parallel is not None:
        return _verified_through(problem, configs, verify, executor, parallel or 1)
    workers = max(1, min(len(configs), os.cpu_count() or 1))
    if workers == 1:
        return {c.label: _verify_and_compile(problem, c, verify) for c in configs}
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {c.label: pool.submit(_verify_and_compile, problem, c, verify) for c in configs}
        return {label: future.result() for label, future in futures.items()}


def _verified_through(problem: Any, configs: list[Any], verify: bool, executor: Any, parallel: int) -> dict:
    """`_verified_and_compiled` through `executor`, or through a local pool of `parallel` workers opened and closed
    here (their secret variables emptied, `worker_environment`)."""
    from argus.agent.providers.secrets import worker_environment
    from argus.eval.executor import GateJob, LocalExecutor, Resource

    shape = f"{problem.M}x{problem.N}x{problem.K}"
    jobs = [
        GateJob(f"{shape}/{c.label}", "argus.agent.tune:verify_and_compile_job",
                {"problem": asdict(problem), "config": asdict(c), "verify": verify}, Resource.CPU)
        for c in configs
    ]  # fmt: skip
    own = executor is None
    runner = LocalExecutor(parallel, job_env=worker_environment()) if own else executor
    try:
        got = {r.key: (r.value if r.ok else f"{r.code}: {r.reason.splitlines()[0] if r.reason else ''}")
               for r in runner.run(jobs)}  # fmt: skip
    finally:
        if own:
            runner.close()
    return {c.label: got[f"{shape}/{c.label}"] for c in configs}


def verify_and_compile_job(problem: dict[str, Any], config: dict[str, Any], verify: bool) -> str | None:
    """The gate job of one GEMM configuration (`_verified_and_compiled` through an executor): the problem and the
    configuration as plain data (`dataclasses.asdict`); returns None, or why the configuration is left out."""
    from argus.kernels import matmul as mm

    return _verify_and_compile(mm.GemmProblem(**problem), mm.GemmConfig(**config), verify)


def _verify_and_compile(problem: Any, config: Any, verify: bool) -> str | None:
    """`_verified_and_compiled`'s work for one configuration (a module-level function: a worker process runs it)."""
    from argus.backend.cuda.codegen import compile_kernel
    from argus.kernels import matmul as mm

    try:
        the_plan = mm.plan(problem, config)
        why = _gemm_verify(the_plan) if verify else None
        if why is None:
            for kernel in the_plan.kernels():
                compile_kernel(kernel, dependent=mm.DEPENDENT_LAUNCHES)
        return why
    except Exception as err:  # noqa: BLE001 - a configuration that does not build is left out, with the reason
        return f"{type(err).__name__}: {err}"


def _gemm_verify(the_plan: Any) -> str | None:
    """None when every kernel of the plan verifies with no finding, else the first finding."""
    from argus.verify import verify_kernel

    for kernel in the_plan.kernels():
        report = verify_kernel(kernel)
        if report.findings:
            f = report.findings[0]
            return f"{kernel.name}: {f.code} ({f.verdict.value}): {f.message}"
    return None
