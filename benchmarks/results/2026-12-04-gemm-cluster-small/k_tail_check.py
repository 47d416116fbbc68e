"""Which GEMM configurations compute a wrong product at K = 232 on the GPU (call 6: 64x64x128 s6 c1 tma, relative
error 1.1-1.3 at 672x3104x232 and 1112x2064x232)? Each configuration is prepared with `matmul.prepare`, launched
once and compared with the f32 product; prints the relative max error per (shape, configuration)."""

import itertools
import sys

import torch

sys.path.insert(0, "src")
from argus.kernels import matmul as mm  # noqa: E402

SHAPES = [(672, 3104, 232), (1112, 2064, 232), (128, 128, 232), (672, 3104, 256), (672, 3104, 240), (672, 3104, 200),
          (672, 3104, 104), (672, 3104, 360), (64, 64, 232), (4096, 4096, 232)]  # fmt: skip
CONFIGS = [mm.GemmConfig(bm, bn, c, s, 1, e, BK=bk) for (bm, bn, c), s, e, bk in itertools.product(
    [(64, 64, 1), (64, 128, 1), (128, 128, 2)], [2, 4, 6], ["tma", "direct"], [64, 128])]  # fmt: skip

torch.manual_seed(0)
for m, n, k in SHAPES:
    a = torch.randn(m, k, device="cuda").to(torch.bfloat16)
    b = torch.randn(n, k, device="cuda").to(torch.bfloat16).T
    ref = a.float() @ b.float()
    scale = float(ref.abs().max())
    bad = []
    for config in CONFIGS:
        try:
            c, prepared = mm.prepare(a, b, config=config)
        except Exception as err:  # noqa: BLE001 - a refused configuration is listed, not fatal
            bad.append(f"{config.label}: refused ({type(err).__name__})")
            continue
        for p in prepared:
            p.launch()
        torch.cuda.synchronize()
        err = float((c.float() - ref).abs().max()) / scale
        if not err <= 1e-2:
            bad.append(f"{config.label}: {err:.3f}")
    print(f"{m}x{n}x{k}: {len(CONFIGS) - len(bad)} of {len(CONFIGS)} right; wrong: {bad}", flush=True)
