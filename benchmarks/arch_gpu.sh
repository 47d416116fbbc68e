#!/usr/bin/env bash
# After the #18 restructuring (emitter and frontend split, DSL names in the generated CUDA, one declaration per
# workload): the GPU test tier, and the expert GEMM and attention timed against cuBLAS / cuDNN in the same run, to
# show the generated code still runs and still runs as fast.
#
#   bash benchmarks/arch_gpu.sh OUT_DIR
set -uo pipefail
out="${1:?usage: arch_gpu.sh OUT_DIR}"
mkdir -p "$out"
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu --format=csv
  python3 -c "import torch, sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version(), 'python', sys.version.split()[0])"
  git log -1 --format='commit %H' 2>/dev/null || true
} > "$out/env.txt" 2>&1
export PYTHONPATH="$PWD/src:${PYTHONPATH:-}"
timeout 400 python3 -m pytest -q -m gpu -o addopts="" -p no:cacheprovider tests/runtime/test_gpu.py \
  tests/kernels/test_gemm_residual.py tests/kernels/test_gemm_layouts.py tests/kernels/test_gemm_tma_store.py \
  tests/eval/test_gate.py tests/tasks/test_kernelbench.py > "$out/gpu_tier.txt" 2>&1
echo "gpu tier: exit $?" >> "$out/summary.txt"
tail -3 "$out/gpu_tier.txt" >> "$out/summary.txt"
bench() {  # name, shapes
  timeout 150 python3 -m argus bench "$1" --shapes "$2" --json "$out/bench-$1.json" --markdown "$out/bench-$1.md" \
    > "$out/bench-$1.log" 2>&1
  echo "bench $1: exit $?" >> "$out/summary.txt"
}
bench gemm_hopper_persistent "M=4096,N=4096,K=4096;M=8192,N=8192,K=8192"
bench flash_attention_fwd "BH=32,S=2048"
cat "$out/summary.txt"
