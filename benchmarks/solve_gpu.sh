#!/usr/bin/env bash
# argus solve's pointwise solutions at KernelBench's own sizes on a GPU: the ModelNew files `argus solve` generated
# (on the CPU, at small sizes: the kernels take any size) judged by `argus kernelbench`: correctness with argus's
# defences, then timed interleaved with PyTorch eager and torch.compile in the same process.
#
#   [ARGUS_LEVEL=2] bash benchmarks/solve_gpu.sh SOLUTIONS_DIR OUT_DIR   (level 1 by default)
set -uo pipefail
solutions="${1:?usage: solve_gpu.sh SOLUTIONS_DIR OUT_DIR}"
out="${2:?usage: solve_gpu.sh SOLUTIONS_DIR OUT_DIR}"
mkdir -p "$out"
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu --format=csv
  python3 -c "import torch, sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"
  git log -1 --format='commit %H' 2>/dev/null || true
} > "$out/env.txt" 2>&1
export PYTHONPATH="$PWD/src:${PYTHONPATH:-}"
only="$(ls "$solutions" | sed -E 's/^([0-9]+)_.*/\1/' | sort -n | paste -sd, -)"
timeout 560 python3 -m argus kernelbench --level "${ARGUS_LEVEL:-1}" --problems "${ARGUS_KERNELBENCH_DIR:-.kbdata/kernelbench}" --solutions "$solutions" \
  --only "$only" --trials 3 --reps 30 --baselines eager,compile --csv "$out/kernelbench.csv" \
  --markdown "$out/kernelbench.md" > "$out/kernelbench.log" 2>&1
echo "kernelbench: exit $?" | tee -a "$out/summary.txt"
cat "$out/kernelbench.md" 2>/dev/null | head -40
