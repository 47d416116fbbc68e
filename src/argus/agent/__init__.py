"""The agent (DESIGN §7): LLM providers (`argus.agent.providers`) and the run store (`argus.agent.store`).

The planner, the coder and the optimization loop build on these two: every LLM call goes through
`providers.Provider.complete` (retries, timeouts, token and cost accounting, an on-disk response cache so a run
replays exactly), and every run, candidate, gate result, timing, counterexample, reward and LLM exchange is written
to the run store as it happens, so a run resumes after a crash (`store.RunStore.open_run`).
"""
