"""Random attention problems: the plan `sdpa` would launch, verified and compiled (no GPU). Any finding, unknown or
spill on a random problem is a lead."""
import json, random, sys, time, traceback
sys.path.insert(0, "/work/main/benchmarks")
from random_configs import attention_config
from argus.kernels import sdpa as S
from argus.verify import verify_kernel
from argus.backend.cuda.codegen import compile_kernel

seed, budget = int(sys.argv[1]), float(sys.argv[2])
rng = random.Random(seed)
start = time.time()
while time.time() - start < budget:
    c = attention_config(rng)
    row = {"config": c}
    t = time.time()
    try:
        p = S.AttentionProblem(c["b"], c["h"], c["hkv"], c["sq"], c["sk"], c["d"], c["dv"], causal=c["causal"],
                               dtype=c["dtype"], out=c["dtype"], scale=c["scale"], layout=c["layout"], window=c["window"])
        plan = S.plan(p)
        row["config_chosen"] = str(plan.config)
        for i, kern in enumerate(plan.kernels()):
            rep = verify_kernel(kern)
            row[f"k{i}"] = {"name": kern.name, "verdict": rep.verdict.value,
                            "findings": [(f.code, str(f.details.get("buffer"))) for f in rep.findings][:6],
                            "unknown": [c2.check for c2 in rep.checks if c2.verdict.value == "unknown"][:6]}
            res = compile_kernel(kern).resources
            row[f"k{i}"]["spills"] = (res.spill_stores, res.spill_loads)
    except Exception as e:
        row["error"] = f"{type(e).__name__}: {e}"[:500]
        row["tb"] = traceback.format_exc()[-800:]
    row["s"] = round(time.time() - t, 1)
    print(json.dumps(row), flush=True)
