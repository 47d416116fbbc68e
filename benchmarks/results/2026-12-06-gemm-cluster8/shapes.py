"""The held-out shapes of call 1 (seed 64): bf16 NT products whose plan is a 128-row tile on two consumer
warpgroups split 8-15 ways, unclustered, at five K, up to three a K; printed as ``M,N,K:config:config[:config]``
rows for `benchmarks/gemm_config_probe.py` (the plan's configuration in 2-block clusters, unfused, and where the
plan fuses its split, in clusters fused)."""

import random

from argus.kernels import matmul as mm


def main() -> None:
    random.seed(64)
    found: dict[int, list] = {}
    for _ in range(20000):
        if sum(len(v) for v in found.values()) >= 12:
            break
        k = random.choice([16384, 24576, 32768, 49152, 98304])
        m, n = random.choice(range(128, 2049, 64)), random.choice(range(128, 2049, 64))
        p = mm.plan(mm.GemmProblem(m, n, k, "bf16", "bf16", "K", "K"))
        c = p.config
        if p.is_gemv or c.SWAP or not (c.BM == 128 and c.CONSUMERS == 2 and 8 <= c.SPLITS < 16):
            continue
        if c.CLUSTER != 1 or c.TAIL != 1 or len(found.get(k, [])) >= 3:
            continue
        if any(abs(m - m2) <= 100 for m2, _, _ in found.get(k, [])):
            continue
        if mm.cluster_refusal(mm.kernel_problem(p.problem), mm.replace(c, CLUSTER=2)) is not None:
            continue
        found.setdefault(k, []).append((m, n, c))
    for k, rows in sorted(found.items()):
        for m, n, c in rows:
            base = f"{c.BM},{c.BN},{c.BK},{c.STAGES},{c.CONSUMERS},{c.SPLITS}"
            configs = [f"{base},2,{c.EPILOGUE}"] + ([f"{base},2,{c.EPILOGUE},fused"] if c.FUSE else [])
            print(":".join([f"{m},{n},{k}", *configs]))


if __name__ == "__main__":
    main()
