"""How fast can one elementwise pass over KernelBench's level-1 tensors go on this GPU? (issue #19: the
single-operator pointwise problems run at 0.91-0.96x eager in the judge.)

Times, interleaved in one process (CUDA events around each call, the median of the rounds, order rotating every
round), over x of shape (4096, 393216) float32 (KernelBench's size for 19_ReLU .. 32_HardTanh, 6.4 GB):

* eager ``torch.relu`` / ``torch.sigmoid``;
* hand-written CUDA probes (compiled with CuPy's NVRTC, experiment only: nothing here is argus code), one launch
  over all elements, varying the elements per thread (16-byte vectors per thread), the threads per block, the
  cache policy of loads and stores (default, streaming ``.cs``, ``ld.global.nc.L1::no_allocate``) and, for the
  sigmoid, the exponential and division (``expf`` and ``/`` against ``__expf`` and ``__frcp_rn``);
* argus's generated solutions (``--solutions DIR``: the ``ModelNew`` of 19_ReLU and 21_Sigmoid as `argus solve`
  wrote them), called as the judge calls them.

Prints a table (ms, TB/s counting bytes read and written, ratio to eager) and writes JSON with ``--json``.

    PYTHONPATH=src python benchmarks/pointwise_bandwidth.py --solutions .gen29/a/solutions --json pw.json
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
from pathlib import Path

PROBE = r"""
__device__ __forceinline__ float4 load4(const float4* p) {
  if (MODE == 1) return __ldcs(p);
  if (MODE == 2) {
    float4 r;
    asm volatile("ld.global.nc.L1::no_allocate.v4.f32 {%0,%1,%2,%3}, [%4];"
                 : "=f"(r.x), "=f"(r.y), "=f"(r.z), "=f"(r.w) : "l"(p));
    return r;
  }
  return *p;
}
__device__ __forceinline__ void store4(float4* p, float4 v) {
  if (MODE >= 1) __stcs(p, v); else *p = v;
}
__device__ __forceinline__ float op(float x) {
#if OP == 0
  return fmaxf(x, 0.0f);
#elif OP == 1
  return 1.0f / (1.0f + expf(-x));
#else
  return __frcp_rn(1.0f + __expf(-x));
#endif
}
// each block: THREADS * V float4 vectors; thread t's vectors at t, t + THREADS, ... (coalesced)
extern "C" __global__ void __launch_bounds__(THREADS) probe(const float4* __restrict__ x, float4* __restrict__ y,
                                                             long long n4) {
  const long long base = (long long)blockIdx.x * (THREADS * V) + threadIdx.x;
  float4 r[V];
#pragma unroll
  for (int j = 0; j < V; ++j) {
    const long long i = base + (long long)j * THREADS;
    if (i < n4) r[j] = load4(x + i);
  }
#pragma unroll
  for (int j = 0; j < V; ++j) {
    const long long i = base + (long long)j * THREADS;
    if (i < n4) {
      float4 v = r[j];
      v.x = op(v.x); v.y = op(v.y); v.z = op(v.z); v.w = op(v.w);
      store4(y + i, v);
    }
  }
}
"""

OPS = {"relu": 0, "sigmoid": 1, "sigmoid_fast": 2}
MODES = {"default": 0, "cs": 1, "nc": 2}


def _probes(args):
    import cupy

    found = {}
    for op in args.ops:
        for threads, vec, mode in args.configs:
            name = f"{op} t{threads} v{vec} {mode}"
            src = f"#define OP {OPS[op]}\n#define THREADS {threads}\n#define V {vec}\n#define MODE {MODES[mode]}\n"
            src += PROBE
            module = cupy.RawModule(code=src, options=("-std=c++17", "--gpu-architecture=sm_90a"))
            found[name] = (op, threads, vec, module.get_function("probe"))
    return found


def _solution(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module.ModelNew()


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=4096)
    p.add_argument("--cols", type=int, default=393216)
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--solutions", type=Path, default=None)
    p.add_argument("--json", type=Path, default=None)
    args = p.parse_args()
    args.ops = ["relu", "sigmoid", "sigmoid_fast"]
    args.configs = [
        (128, 2, "default"),  # argus's generated tile today: 1024 elements, 128 threads
        (128, 4, "default"),
        (128, 8, "default"),
        (256, 4, "default"),
        (512, 2, "default"),
        (128, 4, "cs"),
        (256, 4, "cs"),
        (128, 4, "nc"),
        (128, 8, "cs"),
    ]
    import cupy
    import torch

    x = torch.randn(args.rows, args.cols, device="cuda")
    n = x.numel()
    y = torch.empty_like(x)
    gb = 2 * n * 4 / 1e9
    contenders = {"eager relu": lambda: torch.relu(x), "eager sigmoid": lambda: torch.sigmoid(x)}
    probes = _probes(args)
    cx, cy = cupy.asarray(x), cupy.asarray(y)
    for name, (_op, threads, vec, fn) in probes.items():
        blocks = -(-(n // 4) // (threads * vec))
        contenders[name] = lambda fn=fn, t=threads, b=blocks: fn((b,), (t,), (cx, cy, cupy.int64(n // 4)))
    solutions = {}
    if args.solutions:
        for stem, key in (("19_ReLU", "argus 19_ReLU ModelNew"), ("21_Sigmoid", "argus 21_Sigmoid ModelNew")):
            files = sorted(args.solutions.glob(f"{stem}*.py"))
            if files:
                solutions[key] = _solution(files[0])
                contenders[key] = lambda m=solutions[key]: m(x)
    # correctness first
    for name, (op, *_r) in probes.items():
        contenders[name]()
        torch.cuda.synchronize()
        want = torch.relu(x) if op == "relu" else torch.sigmoid(x)
        err = (y - want).abs().max().item()
        if err > 1e-5:
            raise SystemExit(f"{name}: max abs error {err}")
    for key, m in solutions.items():
        want = torch.relu(x) if "ReLU" in key else torch.sigmoid(x)
        err = (m(x) - want).abs().max().item()
        if err > 1e-5:
            raise SystemExit(f"{key}: max abs error {err}")
    names = list(contenders)
    times = {k: [] for k in names}
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for fn in contenders.values():  # warm-up
        fn()
    torch.cuda.synchronize()
    for r in range(args.rounds):
        order = names[r % len(names) :] + names[: r % len(names)]
        for k in order:
            torch.cuda.synchronize()
            start.record()
            contenders[k]()
            end.record()
            end.synchronize()
            times[k].append(start.elapsed_time(end))
    rows = []
    for k in names:
        ms = statistics.median(times[k])
        base = statistics.median(times["eager sigmoid" if "sigmoid" in k.lower() else "eager relu"])
        spread = max(times[k]) - min(times[k])
        rows.append({"name": k, "ms": ms, "tb_s": gb / ms, "x_eager": base / ms, "spread": spread})
    print(f"{'contender':<32} {'ms':>8} {'TB/s':>6} {'x eager':>8} {'spread ms':>9}")
    for row in rows:
        print(f"{row['name']:<32} {row['ms']:8.3f} {row['tb_s']:6.3f} {row['x_eager']:8.3f} {row['spread']:9.3f}")
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "n": n, "rounds": args.rounds}, indent=1))


if __name__ == "__main__":
    main()
