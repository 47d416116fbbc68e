"""Does a prepared `sdpa` call, relaunched after its query changed in place, compute the new query's attention?
(Issue #22: a decode step's launches replayed, as a captured CUDA graph is.) For each configuration form (split keys
merged in the launch, split keys with the combine kernel, unsplit) and layout: launch, check against torch's math
backend in f32, negate q in place, relaunch (with and without a synchronization between), check again, and say
whether the relaunch's output equals the first launch's (stale).

    PYTHONPATH=src python benchmarks/attention_relaunch_probe.py
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
    from torch.nn.functional import scaled_dot_product_attention as torch_sdpa

    from argus.kernels import sdpa as S

    bad = 0
    print("| problem | layout | form | first err | relaunch err | relaunch == first | synced relaunch err |")
    print("|---|---|---|---|---|---|---|")
    for b, h, hk, sq, sk, d in [(4, 8, 1, 1, 5000, 128), (2, 32, 8, 1, 30000, 128), (2, 32, 8, 4, 30000, 128)]:
        g = torch.Generator(device="cuda").manual_seed(5)
        q = torch.randn(b, h, sq, d, device="cuda", generator=g).to(torch.bfloat16)
        k = torch.randn(b, hk, sk, d, device="cuda", generator=g).to(torch.bfloat16)
        v = torch.randn(b, hk, sk, d, device="cuda", generator=g).to(torch.bfloat16)
        kk, vv = (x.float().repeat_interleave(h // hk, dim=1) for x in (k, v))
        for layout in ("bhsd", "bshd"):
            problem = S.problem_of(q, k, v, layout="bhsd")
            chosen = S.choose(problem)
            forms = {
                "chosen": chosen,
                "two launches": replace(chosen, COMBINED=False),
                "unsplit": replace(chosen, SPLITS=1, COMBINED=False),
            }
            for name, config in forms.items():
                qq, kx, vx = (
                    (x.transpose(1, 2).contiguous() for x in (q, k, v)) if layout == "bshd" else (q.clone(), k, v)
                )
                try:
                    o, _, launches = S.prepare(qq, kx, vx, layout=layout, config=config)
                except Exception as e:  # noqa: BLE001
                    print(f"| {b},{h}/{hk},{sq},{sk} | {layout} | {name} | refused: {str(e)[:80]} |")
                    continue

                def run(launches=launches) -> None:  # noqa: ANN001
                    for one in launches:
                        one.launch()

                def view(o=o, layout=layout):  # noqa: ANN001, ANN202
                    return (o.transpose(1, 2) if layout == "bshd" else o).float()

                run()
                torch.cuda.synchronize()
                first = view().clone()
                err1 = (first - torch_sdpa(q.float(), kk, vv)).abs().max().item()
                # the reference first: for one token, qq may be q's own storage (`contiguous` of a transposed
                # size-1 axis is a view), and negating it negates q
                flipped = torch_sdpa(-q.float(), kk, vv)
                qq.mul_(-1)
                run()
                torch.cuda.synchronize()
                err2 = (view() - flipped).abs().max().item()
                stale = bool(torch.equal(view(), first))
                qq.mul_(-1)  # back to q: relaunch, then negate and relaunch after a synchronization
                run()
                torch.cuda.synchronize()
                qq.mul_(-1)
                torch.cuda.synchronize()
                run()
                torch.cuda.synchronize()
                err3 = (view() - flipped).abs().max().item()
                bad += err1 > 2e-2 or err2 > 2e-2 or err3 > 2e-2
                print(
                    f"| {b},{h}/{hk},{sq},{sk} | {layout} | {name} [{config.label()}] | {err1:.1e} | {err2:.1e} | "
                    f"{stale} | {err3:.1e} |",
                    flush=True,
                )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
