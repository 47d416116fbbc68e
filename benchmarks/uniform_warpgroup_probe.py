"""A/B of the code generator's `Emitter.uniform_warpgroup` switch (a wgmma's warpgroup index read through
``__shfl_sync``, so that ptxas may keep the shared-memory descriptors in uniform registers), interleaved with cuDNN
(attention) and cuBLAS (GEMM) in one process, L2 flushed, every output checked first.

Usage (from the repository root on a GPU machine)::

    PYTHONPATH=src python benchmarks/uniform_warpgroup_probe.py [--rounds 12]

Each row builds `choose`'s configuration twice, with the switch off and on (the kernels' source differs, so the
compile cache holds both), and prints both ratios to the baseline and their quotient.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

try:
    import argus  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gemm_parity import interleaved_times  # noqa: E402
from gemm_variants import environment  # noqa: E402

ATTENTION = [  # (B, H, S, D, causal)
    (64, 16, 1024, 64, False), (4, 16, 4096, 64, False), (64, 16, 1024, 64, True), (4, 16, 4096, 64, True),
    (64, 16, 1024, 128, False), (4, 16, 4096, 128, False), (64, 16, 1024, 128, True), (4, 16, 4096, 128, True),
    (4, 16, 4096, 256, False), (4, 16, 4096, 256, True),
]  # fmt: skip
GEMM = [(4096, 4096, 4096), (1536, 1536, 2048), (768, 3072, 2048), (1152, 1152, 2048), (8192, 8192, 8192)]


def _both(torch, prepare, cache) -> dict:  # noqa: ANN001
    """{"off": launch, "on": launch} and their outputs: `prepare()` -> (output, launches) with the switch each way."""
    from argus.backend.cuda.codegen.emitter import Emitter

    out = {}
    for name, value in (("off", False), ("on", True)):
        Emitter.uniform_warpgroup = value
        cache.cache_clear()
        result, launches = prepare()

        def launch(launches=launches) -> None:  # noqa: ANN001
            for one in launches:
                one.launch()

        launch()
        torch.cuda.synchronize()
        out[name] = (launch, result, launches)
    Emitter.uniform_warpgroup = False
    cache.cache_clear()
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=12)
    args = parser.parse_args()
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.functional import scaled_dot_product_attention as torch_sdpa

    from argus.kernels import matmul as mm
    from argus.kernels import sdpa as S

    for line in environment(torch):
        print(line)
    scratch = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    print("\n| row | config | off TFLOP/s | on TFLOP/s | off x base | on x base | on / off | err off, on |")
    print("|---|---|---|---|---|---|---|---|")
    for b, h, s, d, causal in ATTENTION:
        q, k, v = (torch.randn(b, h, s, d, device="cuda").to(torch.bfloat16) for _ in range(3))
        with sdpa_kernel([SDPBackend.MATH]):
            ref = torch_sdpa(q.float(), k.float(), v.float(), is_causal=causal)
        both = _both(torch, lambda: S.prepare(q, k, v, causal=causal)[::2], S._loaded_for)  # noqa: B023
        errs = [(both[n][1].float() - ref).abs().max().item() for n in ("off", "on")]

        def cudnn(q=q, k=k, v=v, causal=causal) -> None:  # noqa: ANN001
            with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
                torch_sdpa(q, k, v, is_causal=causal)

        times = interleaved_times(torch, {"off": both["off"][0], "on": both["on"][0], "base": cudnn}, args.rounds,
                                  scratch)  # fmt: skip
        ms = {n: statistics.median(t) for n, t in times.items()}
        flops = S.problem_of(q, k, v, causal=causal).flops()
        label = f"attention d{d} {'causal' if causal else 'full'} S={s}"
        config = S.choose(S.problem_of(q, k, v, causal=causal)).label()
        print(f"| {label} | {config} | {flops / ms['off'] / 1e9:.0f} | {flops / ms['on'] / 1e9:.0f} | "
              f"{ms['base'] / ms['off']:.3f} | {ms['base'] / ms['on']:.3f} | {ms['off'] / ms['on']:.3f} | "
              f"{errs[0]:.1e}, {errs[1]:.1e} |")  # fmt: skip
        del both, ref
    for m, n, kk in GEMM:
        a = torch.randn(m, kk, device="cuda").to(torch.bfloat16)
        bt = torch.randn(n, kk, device="cuda").to(torch.bfloat16)
        ref = a.float() @ bt.float().T
        both = _both(torch, lambda: mm.prepare(a, bt.T), mm._loaded_for)  # noqa: B023
        errs = [((both[x][1].float() - ref).abs().max() / ref.abs().max()).item() for x in ("off", "on")]

        def cublas(a=a, bt=bt) -> None:  # noqa: ANN001
            torch.matmul(a, bt.T)

        times = interleaved_times(torch, {"off": both["off"][0], "on": both["on"][0], "base": cublas}, args.rounds * 4,
                                  scratch)  # fmt: skip
        ms = {x: statistics.median(t) for x, t in times.items()}
        flops = 2.0 * m * n * kk
        config = mm.plan(mm.problem_of(a, bt.T)).config
        print(f"| gemm {m}x{n}x{kk} | {config.BM}x{config.BN} s{config.STAGES} | {flops / ms['off'] / 1e9:.0f} | "
              f"{flops / ms['on'] / 1e9:.0f} | {ms['base'] / ms['off']:.3f} | {ms['base'] / ms['on']:.3f} | "
              f"{ms['off'] / ms['on']:.3f} | {errs[0]:.1e}, {errs[1]:.1e} |")  # fmt: skip
        del both
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
