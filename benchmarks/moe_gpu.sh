#!/usr/bin/env bash
# The MoE grouped GEMM on a GPU in one call (issue #23): its GPU test against torch; the SASS of the compiled kernel
# (wgmma, TMA, registers); the sweep against torch._grouped_mm (benchmarks/grouped_sweep.py), interleaved; with
# BENCH=1, `argus bench grouped_gemm` (the task's gate and its baselines) at the issue's three shapes.
#
#   [BENCH=1] bash benchmarks/moe_gpu.sh OUT_DIR [sweep arguments]
#
# On the lent GPU machine z3 travels as a wheel (.whl, see the device README) and PYTHONPATH must hold it.
set -uo pipefail
out="${1:?usage: moe_gpu.sh OUT_DIR [sweep arguments]}"
shift
mkdir -p "$out"
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu --format=csv
  python3 -c "import torch, sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"
  git log -1 --format='commit %H' 2>/dev/null || true
} > "$out/env.txt" 2>&1
cat "$out/env.txt"
export PYTHONPATH="$PWD/src:${PYTHONPATH:-}" PYTHONUNBUFFERED=1
timeout 120 python3 -m pytest -q -p no:cacheprovider -o addopts="" -k "gpu" tests/kernels/test_grouped.py \
  > "$out/gpu_tests.log" 2>&1
echo "gpu tests: exit $?" | tee -a "$out/summary.txt"
tail -4 "$out/gpu_tests.log"
timeout 60 python3 - > "$out/sass.txt" 2>&1 <<'PY'
from argus.backend.cuda.codegen import compile_kernel
from argus.kernels.grouped import grouped_gemm_persistent
from argus.kernels.moe import CONFIGS
for bm, bn, bk, st in CONFIGS:
    c = compile_kernel(grouped_gemm_persistent.trace(BM=bm, BN=bn, BK=bk, STAGES=st))
    print(bm, bn, bk, st, "resources", c.resources)
    print("instruction mix", {k: v for k, v in sorted(c.instruction_mix().items()) if "GMMA" in k or "UTMA" in k or "SYNCS" in k})
PY
echo "sass: exit $?" | tee -a "$out/summary.txt"
cat "$out/sass.txt" | head -12
timeout 420 python3 benchmarks/grouped_sweep.py --json "$out/grouped.json" "$@" > "$out/grouped.md" 2>&1
echo "grouped sweep: exit $?" | tee -a "$out/summary.txt"
cat "$out/grouped.md"
if [ "${BENCH:-0}" = 1 ]; then
  timeout 400 python3 -m argus bench grouped_gemm --trials 2 --reps 20 \
    --shapes "R=8192,E=8,K=4096,N=28672;R=65536,E=128,K=2048,N=1536;R=32768,E=256,K=7168,N=4096" \
    --json "$out/bench-grouped.json" --markdown "$out/bench-grouped.md" > "$out/bench-grouped.log" 2>&1
  echo "argus bench: exit $?" | tee -a "$out/summary.txt"
  grep -v Warning "$out/bench-grouped.log" | tail -20
fi
