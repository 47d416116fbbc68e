"""The optimization loop: start kernel -> plan -> materialize -> gate -> reward -> update -> ... until the budget.

    from argus.agent.loop import optimize, Budget
    result = optimize("gemm_naive", planner="bandit", coder="transform", budget=Budget(candidates=8),
                      store="runs.db")
    result.best, result.speedup, result.trajectory

One step:

1. **plan** — the arms for the current kernel (the fastest accepted candidate that still has an untried arm, the
   start at first:
   `argus.agent.arms.available_arms`, with its profile and verifier findings feeding retrieval), minus those
   already tried on it; the planner (`argus.agent.planner`) picks one, with a rationale;
2. **materialize** — the coder (`argus.agent.coder`) builds the candidate; one that is identical to a candidate
   already recorded (same fingerprint) is not gated again: the planner picks another arm. One that cannot be
   built is recorded as ``invalid``, with a penalty;
3. **gate** — `argus.eval.gate.gate_kernel` in a worker process (`argus.eval.isolation.WorkerPool`, with a time
   limit; generated code never runs in this process) on the kernel's task: compile, verify, correct (on the CPU:
   the interpreter at the task's small sizes), profile (on the CPU: the static cost model, `argus.eval.costmodel`,
   at the task's benchmark sizes — an estimate, and every report says so);
4. **reward** — ``ln(t_start / t)`` for an accepted candidate (its time, measured or estimated, against the
   starting kernel's), a penalty by the stage that rejected it (`PENALTIES`); the failure and the verifier's
   counterexamples become the next LLM prompt's feedback;
5. **update** the planner; record everything in the run store (`argus.agent.store`) as it happens.

Secrets: the feedback built from a gate result is scrubbed (`argus.agent.providers.secrets.scrub_secrets`) before
it reaches a prompt, and the gate's worker processes start with every secret variable of this process (the key
variables, ``*_API_KEY``, ``*_TOKEN``, ...) set to the empty string
(`argus.agent.providers.secrets.worker_environment`): generated code that reads ``os.environ`` finds no key there.

The budget (`Budget`) caps gated candidates, wall time, LLM tokens and cost; the run stops at the first cap
reached, or when no arm is left. ``resume=RUN`` reopens a run: finished candidates are never gated again (their
rewards replay into the planner), an interrupted or recorded-but-ungated one is gated, and planning continues at
the next step.

``parallel=K`` keeps up to K candidates in flight (through the executor, else a local pool of K worker processes)
and stays reproducible with the seed: results are *applied* (recorded, rewarded, fed to the planner) in the order
their candidates were submitted — the loop waits for the oldest in flight, and a later result that finishes first
waits its turn in `_Gater` — and a candidate is planned only from the applied results plus the record of what is in
flight (its arm counts as tried on its base, its fingerprint as taken, the history lists it as ``gating``). The
planner therefore sees results up to K - 1 candidates late. Candidates in flight count against the budget; once a
cap is reached nothing more is submitted and those in flight are waited for and recorded (docs/scale-out.md).
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from argus.agent.arms import START, AgentError, Arm, KernelRef, available_arms, kernel_source, parse_target, task_for
from argus.agent.providers.secrets import scrub_secrets, worker_environment
from argus.agent.store import RunStore, RunWriter, candidate_fingerprint

#: Reward of a candidate rejected at each stage (an accepted one gets ln(t_start / t)).
PENALTIES: dict[str, float] = {
    "static": -2.0,
    "compile": -1.0,
    "verify": -1.0,
    "correct": -1.5,
    "profile": -1.5,
    "isolation": -1.5,
}
ERROR_PENALTY = -0.5  # the harness could not decide
INVALID_PENALTY = -0.5  # the coder could not build it
RESTRICTED_PENALTY = -2.0  # generated code broke the restriction


@dataclass(frozen=True)
class Budget:
    """What a run may spend; None: no cap. `candidates` counts gated candidates after the start kernel (invalid
    ones included); `wall_s` is this session's wall time; `tokens` and `cost_usd` the LLM's, over the whole run."""

    candidates: int | None = 20
    wall_s: float | None = None
    tokens: int | None = None
    cost_usd: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {"candidates": self.candidates, "wall_s": self.wall_s, "tokens": self.tokens, "cost_usd": self.cost_usd}

    @classmethod
    def of(cls, value: Budget | int | Mapping[str, Any] | None) -> Budget:
        if value is None:
            return cls()
        if isinstance(value, Budget):
            return value
        if isinstance(value, int):
            return cls(candidates=value)
        return cls(**{k: v for k, v in value.items() if k in ("candidates", "wall_s", "tokens", "cost_usd")})


@dataclass
class StepEvent:
    """What `on_step` receives: ``start`` (the starting kernel was gated), ``planned``, ``gating``, ``finished``
    (a candidate's verdict and reward), ``invalid``, ``done`` (the run stopped: `message` says why)."""

    kind: str
    step: int
    candidate: str | None = None
    arm: str | None = None
    verdict: str | None = None
    reward: float | None = None
    ms: float | None = None
    speedup: float | None = None
    best_ms: float | None = None
    best_speedup: float | None = None
    rationale: str | None = None
    source: str | None = None
    message: str | None = None


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C during `optimize`: the run is in the store, unfinished, and `--resume` continues it (gating again
    only what was interrupted)."""

    def __init__(self, run_id: str, store: str) -> None:
        super().__init__(run_id)
        self.run_id = run_id
        self.store = store

    @property
    def resume_command(self) -> str:
        return f"argus optimize --resume {self.run_id} --store {self.store}"


@dataclass
class OptimizeResult:
    """A run's outcome. Times are estimates when `metric` is ``cost_model`` (no GPU), measurements when ``gpu``."""

    run_id: str
    store: str
    target: str
    metric: str | None
    start_ms: float | None
    best: dict[str, Any] | None
    trajectory: list[dict[str, Any]]
    stop_reason: str
    status: str = "finished"
    #: with cross-problem priors: the problem class and each action's learned (mean advantage, weight, runs)
    priors: dict[str, Any] | None = None

    @property
    def best_ms_by_step(self) -> list[float | None]:
        """The best accepted time after each step (index 0: the start kernel's), None before any."""
        out: list[float | None] = []
        best: float | None = None
        for row in sorted(self.trajectory, key=lambda r: r["step"]):
            if row["status"] == "accepted" and row["ms"] is not None:
                best = row["ms"] if best is None else min(best, row["ms"])
            out.append(best)
        return out

    @property
    def speedup(self) -> float | None:
        if self.best is None or not self.start_ms or not self.best.get("ms"):
            return None
        return self.start_ms / self.best["ms"]

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "store": self.store,
            "target": self.target,
            "metric": self.metric,
            "start_ms": self.start_ms,
            "best": self.best,
            "speedup": self.speedup,
            "trajectory": self.trajectory,
            "stop_reason": self.stop_reason,
            "status": self.status,
            "priors": self.priors,
        }


# ---------------------------------------------------------------------------------------------------------------
# reading gate results


def gate_time(result: Mapping[str, Any]) -> tuple[float | None, str | None]:
    """(milliseconds, ``gpu`` | ``cost_model``) of a gate result's JSON: the measured median when the profile
    stage timed it, else the cost model's estimate, else (None, None)."""
    for stage in result.get("stages", []):
        if stage.get("stage") != "profile":
            continue
        details = stage.get("details") or {}
        if stage.get("status") == "passed" and isinstance(details.get("timing"), dict):
            return float(details["timing"]["median_ms"]), "gpu"
        est = details.get("cost_model")
        if isinstance(est, dict) and est.get("ms"):
            return float(est["ms"]), "cost_model"
    return None, None


def _stage(result: Mapping[str, Any], name: str) -> dict[str, Any] | None:
    return next((s for s in result.get("stages", []) if s.get("stage") == name), None)


def failure_feedback(result: Mapping[str, Any], limit: int = 4) -> list[str]:
    """The lines a rejected candidate feeds to the next prompt: the failing stage and its reason, then each
    violated verifier check with its counterexample."""
    lines = []
    failed = next((s for s in result.get("stages", []) if s.get("status") in ("failed", "error")), None)
    if failed is not None:
        lines.append(f"rejected at {failed.get('stage')} [{failed.get('code')}]: {failed.get('reason')}")
        details = failed.get("details") or {}
        for key in ("failure", "first_failure", "mismatch"):
            if key in details:
                lines.append(f"{key}: {json.dumps(details[key], default=str)[:600]}")
    verify = _stage(result, "verify")
    report = (verify or {}).get("details", {}).get("report") or {}
    shown = 0
    for f in report.get("findings", []) or []:
        if f.get("verdict") == "violated" and f.get("severity", "error") == "error" and shown < limit:
            cex = f.get("counterexample")
            text = f"{f.get('code')}: {f.get('message')}"
            if cex:
                text += f"; counterexample: {json.dumps(cex, default=str)[:800]}"
            lines.append(text)
            shown += 1
    return lines


def perf_findings(result: Mapping[str, Any]) -> tuple[list[dict[str, Any]], list[str]]:
    """(the verifier's findings as JSON, one line per warning) of a gate result: for retrieval and the prompt."""
    verify = _stage(result, "verify")
    report = (verify or {}).get("details", {}).get("report") or {}
    findings = [f for f in report.get("findings", []) or [] if isinstance(f, dict) and f.get("code")]
    lines = [f"{f['code']}: {f.get('message')}" for f in findings if f.get("verdict") == "violated"]
    return findings, lines


def reward_of(result: Mapping[str, Any], start_ms: float | None) -> tuple[float, dict[str, Any]]:
    """The reward of a gate result and its details (see `PENALTIES`)."""
    verdict = result.get("verdict")
    if verdict == "accepted":
        ms, metric = gate_time(result)
        if ms and start_ms:
            speedup = start_ms / ms
            return math.log(speedup), {"speedup": speedup, "ms": ms, "metric": metric}
        return 0.0, {"note": "accepted but not timed or estimated"}
    if verdict == "rejected":
        failed = next((s for s in result.get("stages", []) if s.get("status") == "failed"), {})
        stage = str(failed.get("stage"))
        return PENALTIES.get(stage, -1.0), {"penalty": stage, "code": failed.get("code")}
    return ERROR_PENALTY, {"penalty": "error"}


def _isolation_result(outcome: Any, name: str, task: str) -> dict[str, Any]:
    from argus.eval.isolation import failure_status

    status = str(failure_status(outcome))
    return {
        "candidate": name,
        "task": task,
        "verdict": "rejected" if status == "failed" else "error",
        "trusted": False,
        "stages": [
            {
                "stage": "isolation",
                "status": status,
                "code": outcome.code,
                "reason": outcome.reason.splitlines()[0] if outcome.reason else "",
                "details": {"traceback": outcome.details.get("traceback", "")[-3000:]},
            }
        ],
        "flags": [],
        "environment": {},
    }


# ---------------------------------------------------------------------------------------------------------------
# gating


class _Gater:
    """Runs gate jobs in a worker pool (isolate) or in this process (library and transform candidates only), or
    through an executor when one is given (`argus.eval.executor`: e.g. a Ray cluster). The workers' environment has
    every secret variable emptied (`worker_environment`; an executor's job processes get it from its caller).

    Several jobs may be outstanding at once (`submit`, then `result` by candidate: the batch-parallel loop keeps up
    to ``workers`` candidates in flight). An outcome that arrives before the one waited for is kept until it is
    asked for, so the caller decides the order in which results are read, whatever the order in which they finish.
    The local pool has ``workers`` processes (one by default: the serial loop's single worker).

    The stage split (`devices` given for the local pool, or an executor with CPU workers, `Executor.cpu_workers`):
    a candidate's gate is two jobs. A CPU job runs its static, compile and verify stages (``stop_after="verify"``:
    Z3 and NVRTC on a worker that sees no GPU; the cubin lands in the on-disk cache); when it passes, a GPU job
    runs the whole gate on one GPU's worker, reusing that verify stage (`GateOptions.prepared_verify`, checked by
    the kernel's fingerprint) and the cached cubin. Then K candidates verify in parallel while each GPU times one
    candidate at a time: K workers timing on one GPU at once would disturb each other's timings. A candidate that
    fails the CPU job is decided by it (its static, compile or verify failure is the verdict)."""

    #: The key suffix of a candidate's CPU job in the stage split.
    PREPARE = "#prepare"

    def __init__(
        self,
        isolate: bool,
        timeout_s: float,
        executor: Any = None,
        workers: int = 1,
        devices: list[int] | None = None,
    ) -> None:
        self.isolate = isolate
        self.timeout_s = timeout_s
        self.pool: Any = None
        self.executor = executor
        self.workers = workers
        self.devices = list(devices or []) if executor is None else []
        self.split = bool(self.devices) or (executor is not None and executor.cpu_workers() > 0)
        self._second: dict[str, tuple[str, dict[str, Any]]] = {}  # CPU job key -> (candidate, its GPU job's kwargs)
        self._submitted: dict[str, str] = {}  # key -> the candidate's task (gates) or "" (other jobs), until read
        self._arrived: dict[str, Any] = {}  # outcomes (or in-process gate results) that are not read yet, by key
        self._jobs = 0  # worker jobs other than gates, numbered for their keys

    def __call__(self, ref: KernelRef, task: str, options: dict[str, Any], name: str, generated: bool) -> dict:
        """Gate one candidate and wait for its result (`submit`, then `result`)."""
        self.submit(ref, task, options, name, generated)
        return self.result(name)

    def submit(self, ref: KernelRef, task: str, options: dict[str, Any], name: str, generated: bool) -> None:
        """Start the gate of candidate `name` (its key for `result`). A library or transform candidate with neither
        isolation nor an executor is gated here and now, in this process."""
        from argus.agent.gatejob import gate_candidate

        self._submitted[name] = task
        if not self.isolate and not generated and self.executor is None:
            self._arrived[name] = _InProcess(gate_candidate(ref.to_json(), task, options, name, False))
            return
        kwargs = {"ref": ref.to_json(), "task": task, "options": options, "name": name, "generated": generated}
        if self.split:  # the CPU half first; `_outcome` submits the GPU half when it passes
            self._second[name + self.PREPARE] = (name, kwargs)
            first = {**kwargs, "options": {**options, "stop_after": "verify", "device": "cpu"}}
            self._submit(name + self.PREPARE, "argus.agent.gatejob:gate_candidate", first, gpu=False)
            return
        self._submit(name, "argus.agent.gatejob:gate_candidate", kwargs, gpu=True)

    def result(self, name: str) -> dict:
        """The gate result of candidate `name` (submitted before), waiting for it if need be. A job that failed
        (its process crashed or hung, or it raised) is the candidate's ``isolation`` failure."""
        task = self._submitted[name]
        outcome = self._outcome(name)
        if isinstance(outcome, _InProcess):
            return outcome.result
        if outcome.ok:
            return outcome.value
        return _isolation_result(outcome, name, task)

    def job(self, target: str, kwargs: dict[str, Any], name: str = "job") -> Any:
        """Run ``target(**kwargs)`` in the worker (always: it may import generated code) and wait for it; raise
        `AgentError` ``AGENT_WORKER`` when the job fails."""
        self._jobs += 1
        key = f"{name}#{self._jobs}"
        self._submitted[key] = ""
        self._submit(key, target, kwargs, gpu=False)
        outcome = self._outcome(key)
        if not outcome.ok:
            raise AgentError("AGENT_WORKER", f"{target} failed in the worker: [{outcome.code}] {outcome.reason}")
        return outcome.value

    def _submit(self, key: str, target: str, kwargs: dict[str, Any], gpu: bool) -> None:
        """Hand one job to the executor (a GPU job when it has GPUs and `gpu`), else to the worker pool."""
        if self.executor is not None:
            from argus.eval.executor import GateJob, Resource

            resource = Resource.GPU if gpu and self.executor.gpus() > 0 else Resource.CPU
            self.executor.submit(GateJob(key, target, kwargs, resource))
            return
        from argus.eval.isolation import Job

        if self.pool is None:
            self.pool = self._pool()
        self.pool.submit(Job(key, target, kwargs, "gpu" if gpu else "cpu"))

    def _outcome(self, key: str) -> Any:
        """The outcome of the job `key`: read from what arrived already, else the next ones to finish are read
        (and kept) until it comes."""
        while key not in self._arrived:
            finished = self.executor.as_completed() if self.executor is not None else self.pool.run()
            outcome = next(iter(finished), None)
            if outcome is None:
                raise AgentError("AGENT_WORKER", f"{key} failed in the worker: [WORKER_LOST] its result never came")
            if outcome.key in self._second:  # a CPU half: the GPU half next, unless it decided the candidate
                name, kwargs = self._second.pop(outcome.key)
                if outcome.ok and _continues(outcome.value):
                    verify = [st for st in outcome.value.get("stages", []) if st.get("stage") == "verify"]
                    options = {**kwargs["options"], "prepared_verify": verify[0] if verify else None}
                    self._submit(name, "argus.agent.gatejob:gate_candidate", {**kwargs, "options": options}, gpu=True)
                    continue
                outcome = dataclasses.replace(outcome, key=name)
            self._arrived[outcome.key] = outcome
        del self._submitted[key]
        return self._arrived.pop(key)

    def _pool(self) -> Any:
        from argus.eval.isolation import WorkerPool

        preload = ("torch", "argus.eval.gate", "argus.agent.gatejob")
        if self.devices:  # the stage split: one worker per GPU, `workers` CPU workers beside them
            return WorkerPool(self.workers, self.timeout_s, preload=preload, env=worker_environment(),
                              devices=self.devices, cpu_workers=self.workers)  # fmt: skip
        return WorkerPool(self.workers, self.timeout_s, preload=preload, env=worker_environment())

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()
            self.pool = None


def _split_devices(executor: Any, parallel: int) -> list[int] | None:
    """The GPUs of the local pool's stage split (`_Gater`): every GPU here when K > 1 candidates are in flight
    without an executor; None otherwise (the serial loop gates in its one worker; an executor splits by itself
    where it has CPU workers)."""
    if executor is not None or parallel <= 1:
        return None
    from argus.eval.device import has_gpu

    if not has_gpu():
        return None
    import torch

    return list(range(torch.cuda.device_count()))


def _continues(gate: Any) -> bool:
    """Whether a stage split's CPU half (a gate result's JSON, ``stop_after="verify"``) leaves the candidate to its
    GPU half: no stage failed (as in `gate_kernel`, an unknown or errored verification goes on)."""
    return isinstance(gate, dict) and not any(st.get("status") == "failed" for st in gate.get("stages", []))


@dataclass(frozen=True)
class _InProcess:
    """A gate result computed in this process (no worker): it is ready when its gate is submitted."""

    result: dict[str, Any]


# ---------------------------------------------------------------------------------------------------------------
# the loop


@dataclass
class _Node:
    """A candidate the loop knows: its record, kernel, time and what it offers."""

    id: str
    step: int
    arm: Arm
    ref: KernelRef
    task: str
    generated: bool
    source: str
    status: str = "proposed"
    reward: float | None = None
    ms: float | None = None
    result: dict[str, Any] | None = None
    arms: list[Arm] | None = None
    tried: set[str] = field(default_factory=set)
    parent: str | None = None


def advantage(status: str, reward: float | None, parent_reward: float | None) -> float:
    """What the bandit learns from a candidate: its reward less its parent's (how much the action improved the
    kernel it was applied to), or the penalty of a failed candidate. The stored reward stays ln(t_start / t).
    (`argus.agent.priors` reads the same from the run store.)"""
    if status == "accepted" and parent_reward is not None and reward is not None:
        return reward - parent_reward
    return float(reward or 0.0)


def _advantage(n: _Node, nodes: Mapping[str, _Node]) -> float:
    parent = nodes.get(n.parent) if n.parent else None
    return advantage(n.status, n.reward, parent.reward if parent is not None else None)


def _node_params(arm: Arm, ref: KernelRef, task: str, generated: bool, extra: Mapping[str, Any]) -> dict[str, Any]:
    return {"arm": arm.to_json(), "ref": ref.to_json(), "task": task, "generated": generated, **dict(extra)}


def _identity(ref: KernelRef, source: str, generated: bool) -> str:
    return source if generated else (ref.library or f"{ref.file}:{ref.function}")


def optimize(
    target: str | None,
    *,
    planner: Any = "bandit",
    coder: Any = "transform",
    budget: Budget | int | Mapping[str, Any] | None = None,
    store: RunStore | str | Path | None = None,
    resume: str | None = None,
    provider: Any = None,
    seed: int = 0,
    on_step: Callable[[StepEvent], Any] | None = None,
    gate_options: Any = None,
    isolate: bool = True,
    timeout_s: float = 600.0,
    candidates_dir: str | Path | None = None,
    entries: Any = None,
    force: bool = False,
    sizes: Mapping[str, int] | None = None,
    reference: str | None = None,
    executor: Any = None,
    parallel: int | None = None,
    priors: bool = False,
) -> OptimizeResult:
    """Optimize `target` (a library kernel name or ``FILE.py:function``; None with `resume`) and return the
    result; see the module docstring. `planner`/`coder`: ``"bandit"``/``"llm"`` and ``"transform"``/``"llm"``
    (or objects with their interfaces); `provider`: the LLM provider the llm planner and coder use;
    `gate_options`: `argus.eval.gate.GateOptions` (default: 5 correctness trials, no baselines, the cost model's
    sizes the start task's first benchmark sizes); `isolate`: gate in a worker process (generated code always is);
    `candidates_dir`: where generated modules are written (default: beside the store); `entries`: the
    knowledge-base entries to plan from (`argus.kb.Entry` objects, e.g. curated + mined skills; default: the shipped
    ones) — retrieval, the arms and the transforms use only these (pass them again on resume). `force`: with
    `resume`, take over a run whose lease is held by a writer that is gone but cannot be checked (a process on
    another machine). `sizes` and `reference` (a ``FILE.py:function``) define the task of a kernel of your own
    (`argus.tasks.user`), over the decorator's ``sizes=`` and ``reference=``. `executor`: gate every candidate
    through it (`argus.eval.executor`, e.g. a Ray cluster; the caller's, not closed here) instead of a local worker
    process; give its job processes `worker_environment()`. `parallel`: how many candidates are in flight at once
    (default 1, the serial loop; a resumed run keeps its own unless one is given): more than one gates through the
    executor, else through a local pool of that many worker processes (even without `isolate`), and the run is
    still reproducible with its seed (see `parallel` in docs/scale-out.md). `priors`: start the planner from what
    the store's other runs of the same family and shape class learned (`argus.agent.priors`; recorded in the run's
    config, so a resumed run starts the same way; a resumed run keeps its own choice)."""
    from argus.agent.coder import make_coder
    from argus.agent.planner import PlanContext, make_planner
    from argus.eval.gate import GateOptions

    started = time.monotonic()
    if parallel is not None and (isinstance(parallel, bool) or not isinstance(parallel, int) or parallel < 1):
        raise ValueError(f"parallel must be a whole number of candidates in flight, at least 1; got {parallel!r}")
    budget_given = budget is not None
    budget = Budget.of(budget)
    entries = tuple(entries) if entries is not None else None
    own_store = not isinstance(store, RunStore)
    db = store if isinstance(store, RunStore) else RunStore(store)

    def emit(event: StepEvent) -> None:
        if on_step is not None:
            on_step(event)

    start_task = None  # a new run's task (a resumed run keeps its candidates' own)
    if resume is not None:
        writer = db.open_run(resume, force=force)
        config = dict(writer.state.run.get("config") or {})
        target = config["target"]
        seed = int(config.get("seed", seed))
        planner_kind = config.get("planner", "bandit")
        coder_kind = config.get("coder", "transform")
        options = GateOptions.from_dict(config["gate"])
        if not budget_given and writer.state.run.get("budget"):
            budget = Budget.of(writer.state.run["budget"])  # no new budget given: the run's own
        isolate = bool(config.get("isolate", isolate))
        candidates_dir = config.get("candidates_dir") or candidates_dir
        prior_info = config.get("priors")
        parallel = parallel if parallel is not None else int(config.get("parallel") or 1)
    else:
        if target is None:
            raise AgentError("AGENT_TARGET", "no kernel to optimize", "name a library kernel or FILE.py:function")
        planner_kind = planner if isinstance(planner, str) else getattr(planner, "name", "custom")
        coder_kind = coder if isinstance(coder, str) else getattr(coder, "name", "custom")
        start_ref = parse_target(target)
        start_task = task_for(start_ref.load(), start_ref.params, sizes=sizes, reference=reference)
        # rewards compare candidates with the start kernel: no baselines are timed for every candidate
        options = gate_options or GateOptions(trials=5, baselines=())
        if options.cost_sizes is None and start_task.bench_sizes:
            options = dataclasses.replace(options, cost_sizes=dict(start_task.bench_sizes[0]))
        model = getattr(getattr(provider, "config", None), "model", None)
        prior_info = None
        if priors:  # what the store's earlier runs of this family and shape class learned, before this run exists
            from argus.agent.priors import learn, problem_class

            family, shape = problem_class(target, options.cost_sizes)
            learned_now = learn(db, family, shape)
            prior_info = {"family": family, "shape": shape, "arms": {k: v.to_json() for k, v in learned_now.items()}}
        writer = db.start_run(
            target,
            planner=planner_kind,
            coder=coder_kind,
            model=model,
            budget=budget.to_json(),
            config={
                "target": target,
                "planner": planner_kind,
                "coder": coder_kind,
                "seed": seed,
                "gate": options.to_dict(),
                "isolate": isolate,
                "parallel": parallel or 1,
                "candidates_dir": str(candidates_dir) if candidates_dir else None,
                "entries": [getattr(e, "id", str(e)) for e in entries] if entries is not None else None,
                "llm": provider.describe() if provider is not None and hasattr(provider, "describe") else None,
                "priors": prior_info,
            },
        )
    run_id = writer.run_id
    parallel = parallel or 1
    if candidates_dir is None:
        base_dir = Path(db.path).parent if getattr(db, "path", None) else Path.cwd()
        candidates_dir = base_dir / f"argus-run-{run_id}"
    plan = planner if not isinstance(planner, str) else make_planner(planner_kind, provider=provider, seed=seed)
    learned: dict[str, Any] = {}
    if prior_info:
        from argus.agent.priors import Learned, warm_start

        learned = {k: Learned.from_json(v) for k, v in (prior_info.get("arms") or {}).items()}
        warm_start(plan, learned)
    code = (
        coder
        if not isinstance(coder, str)
        else make_coder(coder_kind, provider=provider, directory=candidates_dir, entries=entries)
    )
    devices = _split_devices(executor, parallel)
    gater = _Gater(isolate or parallel > 1, timeout_s, executor, workers=parallel, devices=devices)
    options_dict = options.to_dict()

    def remote_transform(arm: Arm, base_ref: KernelRef) -> dict[str, Any]:
        from argus.agent.coder import CoderError

        got = gater.job("argus.agent.gatejob:transform_params",
                        {"ref": base_ref.to_json(), "arm": arm.to_json(), "entries": entries})  # fmt: skip
        if "error" in got:
            raise CoderError(got["error"]["code"], got["error"]["message"], got["error"].get("hint"))
        return dict(got["params"])

    for transformer in (code, getattr(code, "fallback", None)):
        if transformer is not None and hasattr(transformer, "remote") and transformer.remote is None:
            transformer.remote = remote_transform

    def record_llm(step: int) -> Callable[..., Any]:
        secrets = [getattr(getattr(provider, "config", None), "api_key", None)]

        def record(messages: Any, completion: Any = None, *, error: Any = None, purpose: str | None = None) -> Any:
            return writer.record_llm_exchange(messages, completion, error=error, purpose=purpose, step=step,
                                              secrets=secrets)  # fmt: skip

        return record

    nodes: dict[str, _Node] = {}
    fingerprints: set[str] = set(writer.state.fingerprints)
    metric: str | None = None
    start_ms: float | None = None
    feedback: list[str] = []
    trajectory: list[dict[str, Any]] = []

    def node_from_record(c: Any) -> _Node:
        p = c.params or {}
        ref = KernelRef.from_json(p.get("ref") or {})
        generated = bool(p.get("generated"))
        if generated and c.source and not Path(str(ref.file)).exists():
            Path(str(ref.file)).parent.mkdir(parents=True, exist_ok=True)
            Path(str(ref.file)).write_text(scrub_secrets(c.source))  # resume on another machine or after cleanup
        arm = Arm.from_json(p["arm"]) if p.get("arm") else START
        n = _Node(
            c.id,
            c.step,
            arm,
            ref,
            str(p.get("task")),
            generated,
            c.source or "",
            c.status,
            c.reward,
            parent=c.parent_id,
        )
        summary = c.summary if isinstance(c.summary, dict) else {}
        n.ms = summary.get("ms")
        n.result = summary.get("result")
        return n

    def best_node() -> _Node | None:
        timed = [n for n in nodes.values() if n.status == "accepted" and n.ms]
        return min(timed, key=lambda n: (n.ms, n.step)) if timed else None

    def ensure_arms(base: _Node) -> None:
        """The arms of an accepted kernel, computed once."""
        if base.arms is not None:
            return
        findings, lines = perf_findings(base.result or {})
        est = _estimate_profile(base.result or {})
        rewrites = getattr(code, "name", "") == "llm"
        if base.generated:  # its code is imported only in the worker
            try:
                kwargs = {"ref": base.ref.to_json(), "profile": est, "findings": findings or None,
                          "rewrites": rewrites, "entries": entries}  # fmt: skip
                got = gater.job("argus.agent.gatejob:arms_for", kwargs)
                base.arms = [Arm.from_json(a) for a in got]
            except AgentError:
                base.arms = []
        else:
            base.arms = available_arms(base.ref, profile=est, findings=findings or None, rewrites=rewrites,
                                       entries=entries)  # fmt: skip

    def ranked_nodes() -> list[_Node]:
        """The accepted, timed kernels, fastest first: the loop plans on the first that has an untried arm, so
        that a kernel whose arms are spent hands over to the next best instead of ending the run."""
        timed = [n for n in nodes.values() if n.status == "accepted" and n.ms]
        return sorted(timed, key=lambda n: (n.ms, n.step))

    def has_untried(n: _Node) -> bool:
        ensure_arms(n)
        return any(a.id not in n.tried for a in n.arms or ())

    def row(n: _Node) -> dict[str, Any]:
        return {
            "step": n.step,
            "candidate": n.id,
            "action": n.arm.id,
            "kernel": n.ref.name,
            "params": n.ref.params,
            "status": n.status,
            "reward": n.reward,
            "ms": n.ms,
            "speedup": (start_ms / n.ms) if start_ms and n.ms else None,
        }

    inflight: deque[_Node] = deque()  # submitted to the gater, not yet applied: in submission order

    def submit_node(n: _Node) -> None:
        """Start `n`'s gate (recorded ``gating``); its result is applied by `apply_oldest`, in submission order."""
        writer.start_gate(n.id)
        emit(StepEvent("gating", n.step, n.id, n.arm.id, message=f"{len(inflight) + 1} in flight" if parallel > 1
                       else None))  # fmt: skip
        inflight.append(n)
        gater.submit(n.ref, n.task, options_dict, n.id, n.generated)

    def apply_oldest() -> None:
        """Wait for the gate result of the oldest candidate in flight (results of later ones that finish first are
        kept by the gater), record it, reward it and update the planner: results reach the store and the planner in
        the order their candidates were submitted, whatever the order in which they finish."""
        nonlocal metric, start_ms, feedback
        n = inflight[0]
        result = gater.result(n.id)
        inflight.popleft()
        writer.record_gate_result(n.id, result)
        ms, source = gate_time(result)
        if n.arm.kind == "start":
            start_ms = ms if result.get("verdict") == "accepted" else None
        metric = metric or source
        reward, details = reward_of(result, start_ms)
        if n.arm.kind == "start":
            reward = 0.0
        n.status = {"accepted": "accepted", "rejected": "rejected"}.get(str(result.get("verdict")), "error")
        n.reward, n.ms, n.result = reward, ms, result
        if ms is not None:
            writer.record_timing(n.id, "estimate" if source == "cost_model" else "gpu", ms, {"metric": source})
        summary = {"ms": ms, "metric": source, "verdict": result.get("verdict"), "result": _slim(result)}
        writer.finish_candidate(n.id, n.status, reward=reward, reward_details=details, summary=summary)
        if n.arm.kind != "start":
            plan.update(n.arm.id, _advantage(n, nodes))
        feedback = scrub_secrets(failure_feedback(result)) if n.status != "accepted" else []
        best = best_node()
        trajectory.append(row(n))
        emit(StepEvent("finished", n.step, n.id, n.arm.id, n.status, reward, ms,
                       (start_ms / ms) if start_ms and ms else None,
                       best.ms if best else None, (start_ms / best.ms) if best and start_ms else None))  # fmt: skip

    def history() -> list[dict[str, Any]]:
        """The planner's history: the applied candidates (from the store), then those in flight (``gating``, no
        reward yet) — the same at a step whatever the order in which the gates finish."""
        rows = writer.read().history()
        for n in inflight:
            rows.append({"step": n.step, "candidate": n.id, "parent": n.parent, "action": n.arm.id,
                         "params": None, "status": "gating", "reward": None, "code": None})  # fmt: skip
        return rows

    def budget_spent() -> str:
        """Why no further candidate may be submitted (a cap of `budget` is reached), or ``""``. Candidates in flight
        count as spent."""
        spent = sum(1 for n in nodes.values() if n.arm.kind != "start")
        usage = writer.read().usage
        if budget.candidates is not None and spent >= budget.candidates:
            return f"budget: {spent} candidates"
        if budget.wall_s is not None and time.monotonic() - started >= budget.wall_s:
            return f"budget: {budget.wall_s:g} s of wall time"
        tokens = int(usage.get("input_tokens") or 0) + int(usage.get("output_tokens") or 0)
        if budget.tokens is not None and tokens >= budget.tokens:
            return f"budget: {tokens} LLM tokens"
        if budget.cost_usd is not None and float(usage.get("cost_usd") or 0.0) >= budget.cost_usd:
            return f"budget: ${budget.cost_usd:g} of LLM cost"
        return ""

    # ---- replay what is done, gate what was interrupted
    for c in writer.state.candidates:
        n = node_from_record(c)
        nodes[n.id] = n
    parents = {c.id: c.parent_id for c in writer.state.candidates}
    for n in sorted(nodes.values(), key=lambda n: n.step):
        if n.status in ("accepted", "rejected", "error", "invalid"):
            if n.arm.kind == "start":
                start_ms = n.ms if n.status == "accepted" else None
            elif n.reward is not None:
                plan.update(n.arm.id, _advantage(n, nodes))
            if parents.get(n.id) in nodes:
                nodes[parents[n.id]].tried.add(n.arm.id)
            trajectory.append(row(n))
            if n.result:
                metric = metric or gate_time(n.result)[1]
    step = writer.state.next_step if writer.state.candidates else 0

    stop_reason = ""
    status = "finished"
    try:
        for c in writer.state.to_gate:  # interrupted or never gated: gated (again), `parallel` at a time
            while len(inflight) >= parallel:
                apply_oldest()
            if isinstance(c.params, dict) and c.params.get("error"):  # recorded as unbuildable, the writer died
                _finish_invalid(writer, c.id, c.params["error"])
                n = nodes[c.id]
                n.status, n.reward = "invalid", _invalid_penalty(c.params["error"])
                plan.update(n.arm.id, n.reward)
                trajectory.append(row(n))
                continue
            submit_node(nodes[c.id])
        while inflight:  # planning continues from all of them (the start kernel among them, perhaps)
            apply_oldest()
        if not nodes:  # a new run: gate the starting kernel
            ref = parse_target(str(target))
            task = start_task.name if start_task is not None else task_for(ref.load(), ref.params).name
            source = kernel_source(ref)
            fp = candidate_fingerprint(_identity(ref, source, False), ref.params)
            cid = writer.add_candidate(0, action=START.id, params=_node_params(START, ref, task, False, {}),
                                       source=source, kernel_params=ref.params, fingerprint=fp)  # fmt: skip
            fingerprints.add(fp)
            nodes[cid] = _Node(cid, 0, START, ref, task, False, source)
            submit_node(nodes[cid])
            apply_oldest()  # planning starts from the start kernel's verdict, time and arms
            step = 1
        start = next((n for n in nodes.values() if n.arm.kind == "start"), None)
        if start is None or start.status != "accepted" or not start_ms:
            stop_reason = "the starting kernel was not accepted by the gate (or not timed): nothing to improve on"
            status = "failed"
        # Up to `parallel` candidates in flight. Results are applied in submission order (`apply_oldest`), and
        # a candidate is planned only from applied results plus the record of what is in flight (its arm counts
        # as tried on its base, its fingerprint as taken), so the candidates proposed do not depend on the order
        # in which gates finish. With `parallel` = 1 this is the serial loop: plan, gate, apply, plan ...
        while True:
            if inflight and (len(inflight) >= parallel or stop_reason):
                apply_oldest()  # a slot is needed, or the run is stopping: it drains what is in flight
                continue
            if stop_reason:
                break
            stop_reason = budget_spent()
            if stop_reason:
                continue
            base = next((n for n in ranked_nodes() if has_untried(n)), None)
            if base is None and inflight:
                apply_oldest()  # a result in flight may be a new kernel to plan on
                continue
            if base is None:
                stop_reason = "no untried action left on any accepted kernel"
                start_node = next((n for n in nodes.values() if n.arm.kind == "start"), None)
                if (
                    start_node is not None
                    and start_node.arms == []
                    and len(nodes) == 1
                    and start_node.ref.library is None
                ):
                    declared = getattr(start_node.ref.load(), "policy_params", {})
                    stop_reason = (
                        f"nothing to try on {start_node.ref.name}: no knowledge-base entry's transform applies to "
                        "it, and it declares "
                        + (f"the policies {', '.join(declared)}, none of whose neighbouring values traces and fits"
                           if declared else "no policy to search (name the parameters that carry them: "
                           "@argus.kernel(policies={'tile_shape': ('BM', 'BN'), 'stages': 'STAGES'}))")
                    )  # fmt: skip
                continue
            findings, lines = perf_findings(base.result or {})
            made = None
            while made is None:
                arms = [a for a in base.arms if a.id not in base.tried]
                if not arms:
                    break
                ctx = PlanContext(
                    step=step, arms=arms, kernel=base.ref.name, params=dict(base.ref.params),
                    history=history(), profile=_estimate_profile(base.result or {}),
                    findings=lines, feedback=list(feedback), record=record_llm(step),
                    learned={a.id: learned[a.id] for a in arms if a.id in learned},
                )  # fmt: skip
                choice = plan.choose(ctx)
                base.tried.add(choice.arm.id)
                emit(StepEvent("planned", step, None, choice.arm.id, rationale=choice.rationale, source=choice.source,
                               message=choice.fallback_reason))  # fmt: skip
                extra = {"choice": choice.to_json()}
                try:
                    if getattr(code, "name", "") == "llm":
                        m = code.materialize(choice.arm, base.ref, base_source=base.source if base.generated else None,
                                             feedback=list(feedback), record=record_llm(step))  # fmt: skip
                    else:
                        m = code.materialize(choice.arm, base.ref)
                except AgentError as e:
                    penalty = _invalid_penalty({"code": e.code})
                    error = {"code": e.code, "message": e.message}
                    params = {**_node_params(choice.arm, base.ref, base.task, False, extra), "error": error}
                    cid = writer.add_candidate(step, parent=base.id, action=choice.arm.id, params=params,
                                               fingerprint=f"invalid-{step}")  # fmt: skip
                    _finish_invalid(writer, cid, error)
                    plan.update(choice.arm.id, penalty)
                    n = _Node(cid, step, choice.arm, base.ref, base.task, False, "", "invalid", penalty, parent=base.id)
                    nodes[cid] = n
                    trajectory.append(row(n))
                    feedback = [scrub_secrets(f"the candidate could not be built: [{e.code}] {e.message}")]
                    emit(StepEvent("invalid", step, cid, choice.arm.id, "invalid", penalty, message=e.message))
                    step += 1
                    made = False
                    break
                fp = candidate_fingerprint(_identity(m.ref, m.source, m.generated), m.ref.params)
                if fp in fingerprints:
                    continue  # the same kernel was gated already: plan again, on another arm
                try:
                    same = (m.ref.file, m.ref.function) == (base.ref.file, base.ref.function) and m.ref.file
                    task = base.task if m.generated or same else task_for(m.ref.load(), m.ref.params).name
                except AgentError:
                    task = base.task
                extra.update(m.notes and {"notes": m.notes} or {})
                cid = writer.add_candidate(step, parent=base.id, action=choice.arm.id,
                                           params=_node_params(choice.arm, m.ref, task, m.generated, extra),
                                           source=m.source, kernel_params=m.ref.params, fingerprint=fp)  # fmt: skip
                fingerprints.add(fp)
                n = _Node(cid, step, choice.arm, m.ref, task, m.generated, m.source, parent=base.id)
                nodes[cid] = n
                submit_node(n)
                step += 1
                made = True
            # made is None: every arm of this kernel is tried; the next round plans on the next-best kernel
    except BaseException as e:
        gater.close()
        writer.release()
        if own_store:
            db.close()
        if isinstance(e, KeyboardInterrupt) and not isinstance(e, RunInterrupted):
            raise RunInterrupted(run_id, str(db.path)) from None
        raise
    gater.close()
    best = best_node()
    best_json = None
    if best is not None:
        best_json = {
            "candidate": best.id,
            "step": best.step,
            "kernel": best.ref.name,
            "params": best.ref.params,
            "action": best.arm.id,
            "ms": best.ms,
            "generated": best.generated,
            "source": best.source if best.generated else None,
        }
    result = OptimizeResult(run_id, str(db.path), str(target), metric, start_ms, best_json,
                            sorted(trajectory, key=lambda r: r["step"]), stop_reason, status, prior_info)  # fmt: skip
    writer.finish(status, {k: v for k, v in result.to_json().items() if k != "trajectory"})
    emit(StepEvent("done", step, best.id if best else None, message=stop_reason, best_ms=best.ms if best else None,
                   best_speedup=result.speedup))  # fmt: skip
    if own_store:
        db.close()
    return result


def _invalid_penalty(error: Mapping[str, Any]) -> float:
    return RESTRICTED_PENALTY if error.get("code") == "CODER_RESTRICTED" else INVALID_PENALTY


def _finish_invalid(writer: RunWriter, cid: str, error: Mapping[str, Any]) -> None:
    """Finish a candidate the coder could not build: ``invalid``, with its penalty."""
    writer.finish_candidate(cid, "invalid", reward=_invalid_penalty(error), reward_details={"code": error.get("code")},
                            summary={"error": error.get("code"), "message": error.get("message")})  # fmt: skip


def _estimate_profile(result: Mapping[str, Any]) -> dict[str, Any] | None:
    """The profile facts retrieval reads (`argus.kb.kernel_features(profile=...)`): on a GPU the measured fractions
    of the ceilings, else the cost model's estimate of them; None when there is neither."""
    profile = _stage(result, "profile")
    details = (profile or {}).get("details") or {}
    measured = details.get("fraction_of_ceiling")
    if profile is not None and profile.get("status") == "passed" and isinstance(measured, dict):
        known = {k: v for k, v in measured.items() if k in ("compute", "memory", "roofline") and v is not None}
        return known or None
    est = details.get("cost_model")
    return dict(est["profile"]) if isinstance(est, dict) and isinstance(est.get("profile"), dict) else None


def _slim(result: Mapping[str, Any]) -> dict[str, Any]:
    """What the loop keeps of a gate result in the candidate's summary to rebuild its state on resume: the verdict
    and the verify and profile stages (their findings, the cost model's estimate); the full result is in the
    gate_results rows."""
    keep = {"verify", "profile", "correct"}
    return {
        "verdict": result.get("verdict"),
        "task": result.get("task"),
        "stages": [s for s in result.get("stages", []) if s.get("stage") in keep],
    }
