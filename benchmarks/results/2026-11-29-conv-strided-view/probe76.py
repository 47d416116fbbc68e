"""Level 1's 76 (conv1d 64 -> 128, k 3, stride 3, dilation 4, f32) on the implicit kernel's 5-d strided view: the
call timed and checked at a few batches of its full length, to tell a slow call from a stuck one."""

import sys
import time

import torch
import torch.nn.functional as F

from argus.kernels.conv import Conv, LibraryConv, conv_plan

for batch in [int(b) for b in sys.argv[1:]] or [1, 4, 16]:
    conv = Conv(1, batch, 64, 128, 1, (1, 1, 524280), (1, 1, 3), (1, 1, 3), (0, 0, 0), (1, 1, 4), False, "f32")
    x = torch.randn(batch, 64, 524280, device="cuda")
    w = torch.randn(128, 64, 3, device="cuda") / 8
    call = LibraryConv("c", conv)
    out = call.empty_output(x, w)
    t0 = time.perf_counter()
    call(x, w, out)
    torch.cuda.synchronize()
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    call(x, w, out)
    torch.cuda.synchronize()
    second = time.perf_counter() - t0
    want = F.conv1d(x.double(), w.double(), stride=3, dilation=4)
    err = ((out.double() - want).abs().max() / want.abs().max()).item()
    print(f"batch {batch}: plan {conv_plan(conv).implicit}, first call {first:.2f} s, second {second * 1e3:.2f} ms, "
          f"rel err {err:.2e}", flush=True)
