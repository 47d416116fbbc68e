"""The agent (DESIGN §7): the optimization loop (`argus.agent.loop.optimize`, ``argus optimize``) and its parts —
planners that choose the next arm (`planner`: a bandit, or an LLM), the arms and the kernels they act on (`arms`),
coders that turn an arm into a candidate kernel (`coder`: knowledge-base transforms and lineage moves, or LLM
rewrites held to the restriction of `restricted`), the gate job a worker process runs (`gatejob`), LLM providers
(`argus.agent.providers`) and the run store (`argus.agent.store`).

Every LLM call goes through
`providers.Provider.complete` (retries, timeouts, token and cost accounting, an on-disk response cache so a run
replays exactly), and every run, candidate, gate result, timing, counterexample, reward and LLM exchange is written
to the run store as it happens, so a run resumes after a crash (`store.RunStore.open_run`). See docs/agent.md.
"""
