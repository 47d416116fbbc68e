"""The held-out shapes of call 2 (seed 65): bf16 NT products whose plan `matmul.fused_cluster` put in 2-block
clusters (a fused split of 8 or more on 128-row tiles of two consumers), printed as ``M,N,K:config`` rows for
`benchmarks/gemm_config_probe.py`, the config being the same plan unclustered (the rule off)."""

import random

from argus.kernels import matmul as mm


def main() -> None:
    random.seed(65)
    rows: list[str] = []
    for _ in range(40000):
        if len(rows) >= 10:
            break
        k = random.choice(range(8192, 131073, 1024))
        m, n = random.choice(range(64, 2049, 32)), random.choice(range(64, 2049, 32))
        c = mm.plan(mm.GemmProblem(m, n, k, "bf16", "bf16", "K", "K")).config
        if getattr(c, "CLUSTER", 1) != 2 or not getattr(c, "FUSE", False):
            continue
        mm.FUSED_CLUSTERS = False  # the same plan with the rule off (`_plan` itself: `plan` remembers plans)
        plain = mm._plan(mm.GemmProblem(m, n, k, "bf16", "bf16", "K", "K"), None, mm.DEFAULT_TARGET, None).config
        mm.FUSED_CLUSTERS = True
        if plain.CLUSTER != 1:
            continue  # clustered by another rule (the narrow split's)
        rows.append(f"{m},{n},{k}:{plain.BM},{plain.BN},{plain.BK},{plain.STAGES},{plain.CONSUMERS},{plain.SPLITS},1,"
                    f"{plain.EPILOGUE},fused")  # fmt: skip
    print("\n".join(rows))


if __name__ == "__main__":
    main()
