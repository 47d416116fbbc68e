"""One convolution row of `conv_implicit_sweep.py` run for a profiler: the argus call (`LibraryConv`, channels-last
tensors) and cuDNN (`torch.nn.functional.conv2d` on the same tensors), each warmed up, then once each between
``cudaProfilerStart`` and ``cudaProfilerStop``, so that

    ncu --clock-control none --profile-from-start off --section SpeedOfLight --section WarpStateStats \\
        python benchmarks/conv_ncu_target.py --row "r50 3x3 256->256 14"

profiles exactly the kernels of one argus call and one cuDNN call (the split-K reduction and the weight staging
included where the call has them; the staging runs only in the warm-up).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

try:
    import argus  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

sys.path.insert(0, str(Path(__file__).resolve().parent))

from conv_implicit_sweep import EXTRA_ROWS, ROWS  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--row", required=True, help="the label of a row of conv_implicit_sweep.py (its start)")
    args = parser.parse_args()
    rows = [r for r in ROWS + EXTRA_ROWS if r[0].startswith(args.row)]
    if len(rows) != 1:
        names = ", ".join(r[0] for r in ROWS + EXTRA_ROWS)
        raise SystemExit(f"--row {args.row!r} names {len(rows)} rows; the rows: {names}")
    import torch
    import torch.nn.functional as F  # noqa: N812

    from argus.kernels.conv import Conv, LibraryConv, conv_plan

    label, n, c, f, h, w, k, s, p, dt = rows[0]
    dtype = {"bf16": torch.bfloat16, "f16": torch.float16}[dt]
    conv = Conv(2, n, c, f, 1, (1, h, w), (1, k, k), (1, s, s), (0, p, p), (1, 1, 1), False, dt)
    x = torch.randn(n, c, h, w, device="cuda").to(dtype).to(memory_format=torch.channels_last)
    wt = (torch.randn(f, c, k, k, device="cuda") / math.sqrt(c * k * k)).to(dtype).to(memory_format=torch.channels_last)
    call = LibraryConv("conv", conv)
    out = call.empty_output(x, wt).to(memory_format=torch.channels_last)
    for _ in range(3):
        call(x, wt, out)
        F.conv2d(x, wt, stride=s, padding=p)
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    call(x, wt, out)
    F.conv2d(x, wt, stride=s, padding=p)
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    print(f"{label}: argus {conv_plan(conv).describe()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
