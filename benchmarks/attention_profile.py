"""One attention call under Nsight Compute (issue #22): the launch `ncu` profiles, for the profile the
attention notes cite (docs/attention.md).

    ncu --kernel-name flash_attention --launch-skip 3 --launch-count 1 --section SpeedOfLight \\
        --section WarpStateStats --section InstructionStats python benchmarks/attention_profile.py D [causal|full] [S]

Runs `argus.kernels.sdpa.sdpa` five times at (B, H, S) = (16384 / S, 16, S) (S = 4096 by default: B = 4), head dim
D, bf16.
"""

from __future__ import annotations

import sys
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
    q, k, v = (torch.randn(max(1, 16384 // s), 16, s, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    for _ in range(5):
        S.sdpa(q, k, v, causal=causal)
    torch.cuda.synchronize()
    print(S.choose(S.problem_of(q, k, v, causal=causal)).label())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
