"""Which launch of level 1's 83 (depthwise 3x1 on (64, 8, 512, 512), f32) faults: each launch of the plan run and
synchronized on its own, at the problem's batch and at smaller ones."""

import sys
import traceback

import torch

from argus.kernels import conv as cv
from argus.kernels.matmul import prepare

batch = int(sys.argv[1]) if len(sys.argv) > 1 else 64
c = cv.Conv(2, batch, 8, 8, 8, (1, 512, 512), (1, 3, 1), (1, 1, 1), (0, 0, 0), (1, 1, 1), False, "f32")
p = cv.conv_plan(c)
print("batch", batch, "images per chunk", p.images, "gemm", p.gemm, "per_group", p.per_group, flush=True)
x = torch.randn(batch, 8, 512, 512, device="cuda")
w = torch.randn(8, 1, 3, 1, device="cuda")
cols = torch.empty((8, 1, 3, p.images, *c.out), device="cuda")
cv._loaded("im2col", cv._key(c.gather_params()))(x[: p.images].view(p.images, 8, 1, 512, 512), cols)
torch.cuda.synchronize()
print("im2col ok", flush=True)
a = w.view(8, 1, 3)
b = cols.view(8, 3, -1)
y, launches = prepare(a, b, out_dtype=torch.float32)
for launch in launches:
    name = getattr(launch, "name", None) or getattr(getattr(launch, "kernel", None), "name", repr(launch)[:80])
    try:
        launch.launch()
        torch.cuda.synchronize()
        print("ok", name, flush=True)
    except Exception:
        print("FAILED", name, flush=True)
        traceback.print_exc()
        break
want = torch.nn.functional.conv2d(x[: p.images], w, groups=8)
got = y.view(8, p.images, -1).permute(1, 0, 2).reshape(want.shape)
print("max err", ((got - want).abs().max() / want.abs().max()).item(), flush=True)
