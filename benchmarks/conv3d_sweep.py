"""3-d convolutions (issue #21): the implicit kernel's 3-d form (`conv_implicit_gemm(DEPTH=True)`, for transposed
ones through the stride phases), which `argus.kernels.conv.IMPLICIT_3D` keeps off until this sweep has run on a GPU,
against the path 3-d convolutions take today (the gather path: `LibraryConv(implicit=False)`) and torch's
`conv3d` / `conv_transpose3d` (cuDNN, strict fp32 and TF32), interleaved in one process, L2 flushed before every
launch, CUDA events (`gemm_parity.interleaved_times`). A call of ours includes its host work.

    PYTHONPATH=src ARGUS_KERNELBENCH_DIR=... python benchmarks/conv3d_sweep.py [--rounds 10] [--json F] [--only L,...]

Rows: the first 3-d convolution without groups (forward or transposed) of each KernelBench problem in `PROBLEMS`,
at the problem's own sizes and inputs (f32). Every output of both argus paths is checked first against torch in
float64 on the first image (relative max error 1e-4); a wrong row is marked and not timed. The plan's tile and
whether its kernels verify are printed per row (`--verify`: the verifier on each kernel of the 3-d plan first).
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

from conv_transposed_sweep import conv_of, cudnn, finish, kernelbench_rows, start  # noqa: E402
from gemm_parity import interleaved_times  # noqa: E402

#: (level, problem id): KernelBench's 3-d convolutions without groups
PROBLEMS = [
    (1, 54), (1, 58), (1, 59), (1, 60), (1, 61), (1, 66), (1, 77),
    (2, 3), (2, 6), (2, 7), (2, 8), (2, 13), (2, 15), (2, 20), (2, 23), (2, 24), (2, 26), (2, 27), (2, 38), (2, 47),
    (2, 48), (2, 50), (2, 60), (2, 61), (2, 72), (2, 74), (2, 78), (2, 89), (2, 90), (2, 96), (2, 100),
]  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--only", default="")
    parser.add_argument("--verify", action="store_true")
    args = parser.parse_args()
    only = [o for o in args.only.split(",") if o]

    import torch
    import torch.nn.functional as F

    import argus.kernels.conv as lib
    from argus.kernels.conv import LibraryConv, conv_plan, run_implicit_on_gpu, run_transposed_on_gpu

    scratch = start(torch)
    kinds = (torch.nn.Conv3d, torch.nn.ConvTranspose3d)
    results = []
    print(
        "\n| row | 3-d plan | argus 3-d ms | gather ms | x gather | cuDNN fp32 ms | x fp32 | cuDNN TF32 ms | x TF32 "
        "| err |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---|"
    )
    for label, m, x in kernelbench_rows(torch, only, PROBLEMS, kinds):
        conv = conv_of(m, x, "f32")
        wt, b = m.weight.detach(), (m.bias.detach() if m.bias is not None else None)
        inputs = [x, wt] + ([b] if b is not None else [])
        lib.IMPLICIT_3D = True
        conv_plan.cache_clear()
        try:
            plan = conv_plan(conv)
        finally:
            lib.IMPLICIT_3D = False
            conv_plan.cache_clear()
        row = {"row": label, "conv": str(conv), "plan": plan.describe()}
        if plan.implicit is None and plan.phases is None:
            print(f"| {label} | not on the 3-d form: {plan.describe()} |")
            results.append(row)
            continue
        if args.verify:
            from argus.verify import verify

            row["verdicts"] = [verify(k).verdict.value for k in plan.kernels()]
        transposed = plan.phases is not None
        fn = F.conv_transpose3d if transposed else F.conv3d
        kw = {"stride": m.stride, "padding": m.padding, "dilation": m.dilation}
        if transposed:
            kw["output_padding"] = m.output_padding

        def ours(plan=plan, conv=conv, x=x, wt=wt, b=b, out=None) -> torch.Tensor:  # noqa: ANN001
            y = out if out is not None else torch.empty((conv.batch, conv.filters, *conv.out), device=x.device)
            if plan.phases is not None:
                run_transposed_on_gpu(conv, plan.phases, x, wt, b, y)
            else:
                run_implicit_on_gpu(conv, plan.implicit, x, wt, b, y)
            return y

        gather = LibraryConv("conv", conv, implicit=False)
        try:
            out = ours()
            o2 = gather.empty_output(*inputs)
            gather(*inputs, o2)
            ref = fn(x[:1].double(), wt.double(), None if b is None else b.double(), **kw)
            torch.cuda.synchronize()
            scale = ref.abs().max().clamp_min(1.0)
            err = ((out[:1].double() - ref).abs().max() / scale).item()
            err_gather = ((o2[:1].double() - ref).abs().max() / scale).item()
            row.update(err=err, err_gather=err_gather)
        except Exception as e:  # noqa: BLE001 - a row that fails is reported, the sweep goes on
            row["error"] = f"{type(e).__name__}: {str(e)[:300]}"
            print(f"| {label} | {row['plan']} | FAILED: {row['error']} |")
            results.append(row)
            continue
        if err > 1e-4:
            print(f"| {label} | {row['plan']} | WRONG: err {err:.2e} (gather {err_gather:.1e}) |")
            results.append(row)
            continue

        launches = {
            "argus": lambda ours=ours, out=out: ours(out=out),
            "gather": lambda gather=gather, inputs=inputs, o2=o2: gather(*inputs, o2),
            "fp32": lambda x=x, wt=wt, b=b, fn=fn, kw=kw: cudnn(torch, fn, False, x, wt, b, **kw),
            "tf32": lambda x=x, wt=wt, b=b, fn=fn, kw=kw: cudnn(torch, fn, True, x, wt, b, **kw),
        }
        times = interleaved_times(torch, launches, args.rounds, scratch)
        torch.backends.cudnn.allow_tf32 = True
        ms = {name: statistics.median(t) for name, t in times.items()}
        row.update({f"{k}_ms": v for k, v in ms.items()})
        cells = [f"{ms[k]:.3f} | {ms[k] / ms['argus']:.2f}" for k in ("gather", "fp32", "tf32")]
        print(f"| {label} | {row['plan']} | {ms['argus']:.3f} | {' | '.join(cells)} | {err:.1e} |")
        results.append(row)
    return finish(torch, results, args.json)


if __name__ == "__main__":
    raise SystemExit(main())
