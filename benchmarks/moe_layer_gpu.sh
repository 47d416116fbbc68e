#!/usr/bin/env bash
# The MoE layer on a GPU (issue #23, second slice), in one call: the GPU tests of the grouped kernels, the layer
# and the device-side task draw; the SwiGLU grouped GEMM against torch (benchmarks/swiglu_sweep.py); the layer
# against the composed PyTorch layer and its torch.compile (benchmarks/moe_layer_bench.py); with BENCH=1 `argus bench
# $BENCH_TASK` (grouped_gemm or grouped_swiglu) at the issue's three shapes. STEPS picks steps (default "tests swiglu
# layer").
#
#   [BENCH=1 [BENCH_TASK=grouped_swiglu]] [STEPS="tests swiglu layer"] bash benchmarks/moe_layer_gpu.sh OUT_DIR [layer arguments]
#
# On the lent GPU machine z3 travels as a wheel (.whl, see the device README) and PYTHONPATH must hold it.
set -uo pipefail
out="${1:?usage: moe_layer_gpu.sh OUT_DIR [layer arguments]}"
shift
steps="${STEPS:-tests swiglu layer}"
mkdir -p "$out"
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu --format=csv
  python3 -c "import torch, sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"
  git log -1 --format='commit %H' 2>/dev/null || true
  git status --short 2>/dev/null | head -20
} > "$out/env.txt" 2>&1
cat "$out/env.txt"
export PYTHONPATH="$PWD/src:${PYTHONPATH:-}" PYTHONUNBUFFERED=1
if [[ " $steps " == *" tests "* ]]; then
  timeout 240 python3 -m pytest -q -p no:cacheprovider -o addopts="" -m gpu tests/kernels/test_grouped.py \
    tests/kernels/test_moe_layer.py tests/tasks/test_builtin.py > "$out/gpu_tests.log" 2>&1
  echo "gpu tests: exit $?" | tee -a "$out/summary.txt"
  tail -4 "$out/gpu_tests.log"
fi
if [[ " $steps " == *" swiglu "* ]]; then
  timeout 200 python3 benchmarks/swiglu_sweep.py --rounds 12 --json "$out/swiglu.json" > "$out/swiglu.md" 2>&1
  echo "swiglu sweep: exit $?" | tee -a "$out/summary.txt"
  cat "$out/swiglu.md"
fi
if [[ " $steps " == *" layer "* ]]; then
  timeout 420 python3 benchmarks/moe_layer_bench.py --json "$out/layer.json" "$@" > "$out/layer.md" 2>&1
  echo "layer: exit $?" | tee -a "$out/summary.txt"
  cat "$out/layer.md"
fi
if [ "${BENCH:-0}" = 1 ]; then
  task="${BENCH_TASK:-grouped_gemm}"
  if [ "$task" = grouped_swiglu ]; then
    shapes="R=8192,E=8,K=4096,N=14336,N2=28672;R=65536,E=128,K=2048,N=768,N2=1536;R=32768,E=256,K=7168,N=2048,N2=4096"
  else
    shapes="R=8192,E=8,K=4096,N=28672;R=65536,E=128,K=2048,N=1536;R=32768,E=256,K=7168,N=4096"
  fi
  timeout 540 python3 -m argus bench "$task" --trials 2 --reps 20 --shapes "$shapes" \
    --json "$out/bench-$task.json" --markdown "$out/bench-$task.md" > "$out/bench-$task.log" 2>&1
  echo "argus bench $task: exit $?" | tee -a "$out/summary.txt"
  grep -v Warning "$out/bench-$task.log" | tail -20
fi
