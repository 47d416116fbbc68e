#!/usr/bin/env bash
# device call 6 (session 25): call 5's profile again (the script did not tell the solutions where their problem is:
# ARGUS_PROBLEM, as the judge does)
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site ARGUS_KERNELBENCH_DIR=$PWD/.kbdata/kernelbench
{ nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv; date -u; } > $OUT/env.txt 2>&1
timeout -k 10 -s INT ${P_S:-120} python3 benchmarks/solution_kernels_gpu.py 2 .gen23/slow ${IDS2:-6,8,7,90,48} --iters 3 \
  > $OUT/profile.log 2>&1
timeout -k 10 -s INT ${P1_S:-60} python3 benchmarks/solution_kernels_gpu.py 1 benchmarks/results/2026-11-29-conv-level1/solutions \
  ${IDS1:-72,81} --iters 3 >> $OUT/profile.log 2>&1
echo "profile exit $?" >> $OUT/profile.log; grep -E "^## |ms of GPU" $OUT/profile.log | head -40
date -u >> $OUT/env.txt
