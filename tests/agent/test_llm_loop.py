"""The LLM planner and coder in the loop, against the scripted OpenAI-compatible server: a correct rewrite (after a
malformed answer), a rewrite with a race the verifier catches (its counterexample must reach the next prompts),
malformed planner output (retried once, then the bandit decides), and a coder timeout (the transform coder
materializes the arm) — the loop recovers from each."""

from __future__ import annotations

import json
from pathlib import Path

from argus.agent.arms import KernelRef, kernel_source
from argus.agent.coder import LLMCoder, extract_code
from argus.agent.loop import Budget, optimize
from argus.agent.planner import BanditPlanner, LLMPlanner, PlanContext, parse_choice
from argus.agent.store import RunStore
from tests.agent.llm_server import ok, slow

SOURCE = kernel_source(KernelRef(library="gemm_mma_sync"))
TAG = "            T.assert_tag(lambda a: (a[1] // BK == k) & (a[0] // BM == bm), rA)\n"
# a correct rewrite: one more tag assertion (a true one), nothing else changed
CORRECT = SOURCE.replace(TAG, TAG + TAG.replace("rA)", "rA)  # restated"), 1)
# a rewrite with a bug the verifier catches: the barrier that protects the shared tiles from the next iteration's
# copies is gone (a read-write race on sA and sB)
BUGGY = SOURCE.replace(
    "            T.gemm(rA, rB, acc)\n            T.barrier()\n", "            T.gemm(rA, rB, acc)\n"
)


def _block(code: str) -> str:
    return f"Here is the kernel.\n```python\n{code}```\nIt keeps the semantics."


def test_the_loop_recovers_from_each_llm_failure(make, server, tmp_path: Path):
    assert CORRECT != SOURCE and BUGGY != SOURCE
    server.script += [
        # step 1: the planner answers well; the coder first forgets the code block, then writes a correct rewrite
        ok(json.dumps({"action": "lineage:gemm_cp_async", "rationale": "overlap the loads with the MMAs"})),
        ok("I would restate the K-block invariant as a tag assertion."),
        ok(_block(CORRECT)),
        # step 2: the planner rambles twice (the bandit decides); the coder's rewrite drops a barrier
        ok("Swizzling seems like the right call here, since the verifier reports conflicts."),
        ok(json.dumps({"action": "no-such-action", "rationale": "?"})),
        ok(_block(BUGGY)),
        # step 3: the planner answers well; the coder times out (the transform coder applies the arm)
        ok(json.dumps({"action": "tile-shape:tile_shape=[128,128,32]", "rationale": "larger tiles"})),
        slow(5.0),
    ]
    provider = make(max_retries=0, timeout=0.5)
    db = tmp_path / "runs.db"
    result = optimize(
        "gemm_mma_sync",
        planner="llm",
        coder="llm",
        budget=Budget(candidates=3),
        store=db,
        provider=provider,
        candidates_dir=tmp_path / "generated",
    )
    assert result.status == "finished" and result.stop_reason == "budget: 3 candidates"
    assert len(server.requests) == 8
    with RunStore(db) as store:
        state = store.read_run(result.run_id)
        by_step = {c.step: c for c in state.candidates}
        assert sorted(by_step) == [0, 1, 2, 3]
        # step 1: the correct rewrite was gated in a worker and accepted; its added tag assertion was verified
        one = by_step[1]
        assert one.status == "accepted" and one.params["generated"] and one.source == CORRECT
        assert one.params["notes"]["tag_assertions_added"] == 1 and one.gate["verify"]["status"] == "passed"
        assert one.params["choice"]["source"] == "llm"
        # step 2: the planner's answers were malformed twice: the bandit chose; the race was caught by the verifier
        two = by_step[2]
        assert two.params["choice"]["source"] == "bandit-fallback"
        assert "malformed" in two.params["choice"]["fallback_reason"]
        assert two.status == "rejected" and two.gate["verify"]["code"] == "VERIFY_VIOLATED"
        (cex,) = {c["check_code"] for c in store.counterexamples(result.run_id)}
        assert cex == "RACE_READ_WRITE"
        race = next(c["text"] for c in store.counterexamples(result.run_id))
        # step 3: the counterexample reached both next prompts; the coder timed out and the transform coder built it
        assert race in server.requests[6].prompt_text() and race in server.requests[7].prompt_text()
        assert "counterexample" in server.requests[7].prompt_text()
        three = by_step[3]
        assert three.action == "tile-shape:tile_shape=[128,128,32]" and not three.params["generated"]
        assert "LLM_TIMEOUT" in three.params["notes"]["fallback"] and three.status == "accepted"
        assert three.kernel_params["BM"] == 128 and three.kernel_params["BK"] == 32
        exchanges = store.llm_exchanges(result.run_id)
        assert [e["purpose"] for e in exchanges] == ["planner", "coder", "coder", "planner", "planner", "coder",
                                                     "planner", "coder"]  # fmt: skip
        assert exchanges[-1]["error"] and "LLM_TIMEOUT" in exchanges[-1]["error"]
        assert all(e["error"] is None for e in exchanges[:-1])
    # the generated modules were written beside the run, never imported here
    assert len(list((tmp_path / "generated").glob("candidate_*.py"))) == 2
    # the key went to the server's authorization header only, never into the run store
    from tests.agent.conftest import KEY

    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"
    stored = b"".join(p.read_bytes() for p in tmp_path.glob("runs.db*"))
    assert KEY.encode() not in stored


def test_parse_choice_reads_json_fenced_or_a_line():
    from argus.agent.arms import Arm

    arms = [Arm("policy", "pipeline-stages", "stages", 3), Arm("lineage", "cp-async-pipeline", kernel="gemm_cp_async")]
    assert parse_choice('{"action": "lineage:gemm_cp_async", "rationale": "r"}', arms)[0].kernel == "gemm_cp_async"
    fenced = 'Sure.\n```json\n{"action": "pipeline-stages:stages=3", "rationale": "deeper"}\n```'
    assert parse_choice(fenced, arms) == (arms[0], "deeper")
    assert parse_choice("action: pipeline-stages:stages=3\nrationale: hide latency", arms)[1] == "hide latency"
    for bad in ("no idea", '{"rationale": "x"}', '{"action": "pipeline-stages:stages=9"}'):
        try:
            parse_choice(bad, arms)
        except Exception as e:  # noqa: BLE001
            assert getattr(e, "code", None) == "PLANNER_MALFORMED"
        else:
            raise AssertionError(f"{bad!r} was accepted")


def test_the_llm_planner_prompt_and_its_fallback_on_provider_failure(make, server):
    from argus.agent.arms import Arm
    from tests.agent.llm_server import status

    server.script += [status(503), ok('{"action": "pipeline-stages:stages=4", "rationale": "more stages"}')]
    arms = [Arm("policy", "pipeline-stages", "stages", v, prior=2.5) for v in (3, 4)]
    history = [{"step": 1, "action": "pipeline-stages:stages=3", "reward": 0.25, "status": "accepted", "code": None}]
    findings, feedback = ["PERF_BANK_CONFLICT: 8-way on sB"], ["rejected at verify: race on sA[4]"]
    ctx = PlanContext(2, arms, "gemm_cp_async", {"STAGES": 2}, history, findings=findings, feedback=feedback)
    planner = LLMPlanner(make(max_retries=0), fallback=BanditPlanner(0))
    first = planner.choose(ctx)  # the server fails: the bandit decides
    assert first.source == "bandit-fallback" and "LLM_SERVER_ERROR" in first.fallback_reason
    second = planner.choose(ctx)
    assert second.source == "llm" and second.arm.value == 4 and second.rationale == "more stages"
    prompt = server.requests[1].prompt_text()
    for needle in ("pipeline-stages:stages=3 | +0.250 | accepted", "8-way on sB", "race on sA[4]", "prior 2.50"):
        assert needle in prompt


def test_the_llm_coder_refuses_restricted_code(make, server, tmp_path: Path):
    from argus.agent.arms import Arm
    from argus.agent.restricted import RestrictedCodeError

    evil = SOURCE + "\nimport os\nos.system('true')\n"
    server.script += [ok(_block(evil))]
    coder = LLMCoder(make(), tmp_path / "gen")
    try:
        coder.materialize(Arm("rewrite", "tma-loads"), KernelRef(library="gemm_mma_sync"))
    except RestrictedCodeError as e:
        assert "imports os" in e.message
    else:
        raise AssertionError("restricted code was accepted")
    assert not (tmp_path / "gen").exists()  # nothing was written, let alone run
    assert extract_code("```py\nx = 1\n```") == "x = 1\n"


SWIZZLED = SOURCE.replace(
    "sA = T.alloc_shared((BM, BK), T.bf16)", "sA = T.alloc_shared((BM, BK), T.bf16, swizzle=BK * 2)"
).replace("sB = T.alloc_shared((BK, BN), T.bf16)", "sB = T.alloc_shared((BK, BN), T.bf16, swizzle=min(BN * 2, 128))")


def test_a_generated_kernel_becomes_the_base_and_runs_only_in_workers(make, server, tmp_path: Path, monkeypatch):
    """A faster LLM rewrite becomes the kernel the next step starts from: its arms and its policy transform are
    computed in the worker, and this process never imports it. Restricted code in the loop is an invalid
    candidate with its penalty."""
    import argus.kernels.registry as registry

    generated = tmp_path / "generated"
    real_load = registry.load

    def guarded_load(spec: str):
        assert not spec.startswith(str(generated)), f"generated code imported in the agent's process: {spec}"
        return real_load(spec)

    monkeypatch.setattr(registry, "load", guarded_load)
    assert SWIZZLED != SOURCE
    server.script += [
        ok(json.dumps({"action": "rewrite:swizzle-shared-128b", "rationale": "the verifier counts 8-way conflicts"})),
        ok(_block(SWIZZLED)),
        ok(json.dumps({"action": "tile-shape:tile_shape=[64,64,64]", "rationale": "fewer iterations"})),
        slow(5.0),  # the coder times out: the transform coder applies the tile shape, in the worker
        ok(json.dumps({"action": "rewrite:wgmma-instead-of-mma-sync", "rationale": "tensor cores of Hopper"})),
        ok(_block(SWIZZLED + "\nimport subprocess\n")),
    ]
    db = tmp_path / "runs.db"
    result = optimize("gemm_mma_sync", planner="llm", coder="llm", budget=3, store=db,
                      provider=make(max_retries=0, timeout=0.5), candidates_dir=generated)  # fmt: skip
    assert result.status == "finished" and len(server.requests) == 6
    with RunStore(db) as store:
        by_step = {c.step: c for c in store.read_run(result.run_id).candidates}
    one, two, three = by_step[1], by_step[2], by_step[3]
    assert one.status == "accepted" and one.params["ref"]["generated"] and one.source == SWIZZLED
    assert one.reward > 1.0  # no bank conflicts: several times faster under the cost model
    assert two.parent_id == one.id and two.params["ref"]["generated"] and two.source == SWIZZLED
    assert two.kernel_params == {"BM": 64, "BN": 64, "BK": 64} and "fallback" in two.params["notes"]
    assert two.status == "accepted"
    assert three.status == "invalid" and three.reward == -2.0
    assert three.params["error"]["code"] == "CODER_RESTRICTED" and "subprocess" in three.params["error"]["message"]
    assert result.best["generated"] and result.best["source"] == SWIZZLED


def test_a_generated_kernel_that_hangs_fails_in_its_worker(make, server, tmp_path: Path):
    """Generated code runs only in the gate's worker: a module that never finishes importing is killed at the time
    limit (an isolation failure with its penalty) and the run goes on. (The library start kernel is gated in this
    process, `isolate=False`; generated code never is.)"""
    server.script += [
        ok(json.dumps({"action": "rewrite:swizzle-shared-128b", "rationale": "conflicts"})),
        ok(_block(SOURCE + "\nwhile True:\n    pass\n")),
    ]
    result = optimize("gemm_mma_sync", planner="llm", coder="llm", budget=1, store=tmp_path / "runs.db",
                      provider=make(max_retries=0), candidates_dir=tmp_path / "gen", timeout_s=3.0,
                      isolate=False)  # fmt: skip
    assert result.status == "finished" and result.stop_reason == "budget: 1 candidates"
    with RunStore(tmp_path / "runs.db") as store:
        (hung,) = [c for c in store.read_run(result.run_id).candidates if c.step == 1]
    assert hung.status == "rejected" and hung.reward == -1.5
    assert hung.gate["isolation"]["code"] == "WORKER_TIMEOUT"


def test_token_cost_and_wall_budgets_stop_the_run(make, server, tmp_path: Path):
    server.script += [ok(json.dumps({"action": "lineage:gemm_cp_async", "rationale": "r"}), input_tokens=900)]
    db = tmp_path / "runs.db"
    result = optimize("gemm_mma_sync", planner="llm", budget=Budget(candidates=5, tokens=500), store=db,
                      provider=make(), isolate=False)  # fmt: skip
    assert result.stop_reason == "budget: 907 LLM tokens" and [r["step"] for r in result.trajectory] == [0, 1]
    server.script += [ok(json.dumps({"action": "lineage:gemm_cp_async", "rationale": "r"}), input_tokens=10**6)]
    priced = optimize("gemm_mma_sync", planner="llm", budget=Budget(candidates=5, cost_usd=1.0), store=db,
                      provider=make(model="gpt-4o"), isolate=False)  # fmt: skip
    assert priced.stop_reason == "budget: $1 of LLM cost" and len(priced.trajectory) == 2
    timed = optimize("gemm_mma_sync", budget=Budget(candidates=5, wall_s=0.0), store=db, isolate=False)
    assert timed.stop_reason == "budget: 0 s of wall time" and len(timed.trajectory) == 1


def test_a_reply_that_would_crash_the_parser_is_refused_by_the_coder(make, server, tmp_path: Path):
    """A reply of a few thousand characters once escaped the coder as RecursionError (and since replies are cached,
    every --resume crashed again). Now it is a `CoderError`, which the loop records as an invalid candidate (a
    terminal status: a resumed run never materializes it again)."""
    from argus.agent.arms import Arm
    from argus.agent.coder import CoderError

    nested = "x = " + "(" * 5000 + "1" + ")" * 5000 + "\n"
    server.script += [ok(_block(SOURCE + nested)), ok(_block(SOURCE + nested))]  # the answer and the one retry
    coder = LLMCoder(make(max_retries=0), tmp_path / "gen")
    try:
        coder.materialize(Arm("rewrite", "tma-loads"), KernelRef(library="gemm_mma_sync"))
    except CoderError as e:
        assert e.code.startswith("CODER_"), e.code
    else:
        raise AssertionError("a reply nested 5000 deep was accepted")
    assert not (tmp_path / "gen").exists()
