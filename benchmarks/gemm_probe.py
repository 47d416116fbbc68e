"""Where the expert GEMM's time goes: time the generated kernel with parts of it switched off.

Usage (from the repository root on a GPU machine)::

    PYTHONPATH=src python benchmarks/gemm_probe.py [--shapes 4096,4096,4096 8192,7168,2048] [--params JSON]

A diagnostic, not a kernel: the expert's generated CUDA is edited as text so that one part never runs
(guarded by ``M < 0``, which the compiler cannot prove false), compiled, and timed like `gemm_variants.py`
(median of CUDA events, L2 flushed), next to the unmodified kernel and cuBLAS in the same process:

* ``no store``: the epilogue's global stores of C are skipped (the main loop and the conversions stay);
* ``no mma``: the consumers wait for every stage and release it, but issue no ``wgmma`` (TMA-and-pipeline bound);
* ``no load``: the producer arrives on each stage's barrier without TMA bytes (wgmma on stale shared memory:
  MMA-and-pipeline bound);
* ``no load, no store``: the MMAs alone.

* ``one producer warp``: an experiment, not a switch-off: the producer warpgroup's warps 1-3 return after
  ``setmaxnreg`` (only its thread 0 issues TMA; warp 0 keeps the waits), so they stop polling mbarriers.

Only the unmodified kernel's and the one-producer-warp variant's results are checked (against ``torch.matmul``);
the others compute garbage by design.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
from pathlib import Path

try:
    import argus  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gemm_variants import _flush, environment, time_ms  # noqa: E402

NEVER = "if (M < 0) "


def _no_store(src: str) -> str:
    out = re.sub(r"argus::store_global<(\d+)>\(C,", lambda m: NEVER + f"argus::store_global<{m.group(1)}>(C,", src)
    if out == src:
        raise SystemExit("no store_global of C found in the generated source")
    return out


def _no_mma(src: str) -> str:
    out = re.sub(r"argus::wgmma_m64n(\d+)k16_", lambda m: NEVER + f"argus::wgmma_m64n{m.group(1)}k16_", src)
    if out == src:
        raise SystemExit("no wgmma found in the generated source")
    return out


def _no_load(src: str) -> str:
    out = re.sub(r"argus::mbarrier_arrive_expect_tx\(([^;]*?), \d+\);", r"argus::mbarrier_arrive(\1);", src)
    out = out.replace("argus::tma_load_2d(", NEVER + "argus::tma_load_2d(")
    if out == src:
        raise SystemExit("no TMA load found in the generated source")
    return out


def _one_producer_warp(src: str) -> str:
    """The producer warpgroup's warps 1-3 leave after setmaxnreg (only thread 0 issues; warp 0 keeps the waits)."""
    out = re.sub(r"(const int producer_tid = tid;[^\n]*\n)", r"\1    if (producer_tid >= 32) return;\n", src, count=1)
    if out == src:
        raise SystemExit("no producer role found in the generated source")
    return out


VARIANTS = {
    "expert": lambda s: s,
    "no store": _no_store,
    "no mma": _no_mma,
    "no load": _no_load,
    "no load, no store": lambda s: _no_store(_no_load(s)),
    "one producer warp": _one_producer_warp,
}


def main() -> int:
    import torch

    from argus.backend.cuda.codegen import generate
    from argus.backend.cuda.codegen.source import CompiledKernel
    from argus.backend.cuda.toolchain import compile_cuda
    from argus.kernels.registry import get_kernel
    from argus.runtime import load

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shapes", nargs="+", default=["4096,4096,4096", "8192,7168,2048", "8192,8192,8192"])
    p.add_argument("--params", default=None, help="JSON of the kernel's parameters (default: the library entry's)")
    p.add_argument(
        "--kernel", default="gemm_hopper", help="library entry: gemm_hopper (2-D grid) or gemm_hopper_persistent"
    )
    p.add_argument("--json", default=None)
    args = p.parse_args()
    entry = get_kernel(args.kernel)
    params = json.loads(args.params) if args.params else dict(entry.params)
    for line in environment(torch):
        print(line)
    print(f"kernel {args.kernel} ({entry.kernel.name}) {params}")
    generated = generate(entry.kernel.trace(**params))
    loaded = {}
    for name, edit in VARIANTS.items():
        g = dataclasses.replace(generated, source=edit(generated.source))
        module = compile_cuda(g.source, g.program_name, cache=False)
        loaded[name] = load(CompiledKernel(g, module))
    flush = _flush(torch)
    rows = []
    print("| M×N×K | variant | ms | TFLOP/s | × expert time | cuBLAS ms |")
    print("|---|---|---|---|---|---|")
    for text in args.shapes:
        m, n, k = (int(x) for x in text.split(","))
        a = torch.randn(m, k, device="cuda").to(torch.bfloat16)
        b = (torch.rand(n, k, device="cuda") * 2 - 1).to(torch.bfloat16)
        dtype = {"f32": torch.float32, "bf16": torch.bfloat16}[params.get("OUT", "f32")]
        c = torch.full((m, n), float("nan"), device="cuda", dtype=dtype)
        nn = params.get("B_MAJOR") == "N"  # B given as (K, N): C = A @ B, against torch.matmul(A, B)
        if nn:
            b = b.T.contiguous()
        ref = a.float() @ (b.float() if nn else b.float().T)
        for checked in ("expert", "one producer warp"):
            c.fill_(float("nan"))
            loaded[checked](a, b, c)
            torch.cuda.synchronize()
            err = float((c.float() - ref).abs().max() / ref.abs().max())
            if not err <= 1e-2:
                print(f"{checked} WRONG at {m}x{n}x{k}: relative error {err}")
                return 1
        cublas = time_ms(torch, lambda a=a, b=b, nn=nn: torch.matmul(a, b if nn else b.T), flush)
        base = None
        for name, kern in loaded.items():
            ms = time_ms(torch, kern.prepare(a, b, c).launch, flush)
            base = base or ms
            row = {"shape": [m, n, k], "variant": name, "ms": ms, "cublas_ms": cublas}
            rows.append(row)
            tf = 2 * m * n * k / ms / 1e9
            print(f"| {m}×{n}×{k} | {name} | {ms:.4f} | {tf:.0f} | {ms / base:.3f} | {cublas:.4f} |")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
