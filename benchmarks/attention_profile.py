"""One attention call under Nsight Compute (issue #22): the launch `ncu` profiles, for the profile the
attention notes cite (docs/attention.md).

    ncu --kernel-name flash_attention --launch-skip 3 --launch-count 1 --section SpeedOfLight \\
        --section WarpStateStats --section InstructionStats python benchmarks/attention_profile.py D [causal|full] [S] \
        [FIELD=VALUE,...]

Runs `argus.kernels.sdpa.sdpa` five times at (B, H, S) = (16384 / S, 16, S) (S = 4096 by default: B = 4), head dim
D, bf16, on `choose`'s configuration with the AttentionConfig fields of the fourth argument set (``PERSISTENT=1``).
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

try:
    import argus  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))


def main() -> int:
    import torch

    from argus.kernels import sdpa as S

    d = int(sys.argv[1]) if len(sys.argv) > 1 else 128
    causal = len(sys.argv) > 2 and sys.argv[2] == "causal"
    s = int(sys.argv[3]) if len(sys.argv) > 3 else 4096
    fields = {}
    for item in filter(None, (sys.argv[4] if len(sys.argv) > 4 else "").split(",")):
        key, _, value = item.partition("=")
        fields[key] = int(value)
    q, k, v = (torch.randn(max(1, 16384 // s), 16, s, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    config = replace(S.choose(S.problem_of(q, k, v, causal=causal)), **fields)
    for _ in range(5):
        o, lse, launches = S.prepare(q, k, v, causal=causal, config=config)
        for launch in launches:
            launch.launch()
    torch.cuda.synchronize()
    print(config.label())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
