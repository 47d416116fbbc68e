"""Launch the GEMV kernels a few times at one shape, for a profiler (`ncu -k regex:gemv python
benchmarks/gemv_profile.py`): bf16 and f32, the columns and the rows kernel, M = 1, N = K = 4096."""

from __future__ import annotations

import sys
from pathlib import Path

try:
    import argus  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))


def main() -> None:
    import torch

    from argus.kernels import matmul as mm

    for name in ("bf16", "f32"):
        dtype = mm.torch_dtype(name)
        a = torch.randn(1, 4096, device="cuda", dtype=dtype)
        for b in (
            torch.randn(4096, 4096, device="cuda", dtype=dtype),
            torch.randn(4096, 4096, device="cuda", dtype=dtype).t(),
        ):
            config = mm.gemv_config(mm.problem_of(a, b), dtypes=mm.INPUTS)
            _, launches = mm.prepare(a, b, config=config)
            for _ in range(3):
                for launch in launches:
                    launch.launch()
            torch.cuda.synchronize()
            print(name, config.label, flush=True)


if __name__ == "__main__":
    main()
