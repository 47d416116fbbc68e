#!/usr/bin/env bash
# device call 5 (session 25): the convolution lineage's four rungs timed against cuDNN at KLineage's sizes
# (`argus bench conv2d_nhwc`: each rung and its baselines interleaved in one worker), then where the slowest level-2
# and level-1 convolution rows spend their GPU time, kernel by kernel beside eager (benchmarks/solution_kernels_gpu.py)
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site ARGUS_KERNELBENCH_DIR=$PWD/.kbdata/kernelbench
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; date -u;
  python3 -c "import torch; print(torch.__version__, torch.version.cuda, torch.backends.cudnn.version())"; } > $OUT/env.txt 2>&1
timeout -k 10 -s INT ${B_S:-130} python3 -m argus bench conv2d_nhwc --baselines cudnn,eager --trials 2 --reps 30 \
  --json $OUT/lineage.json > $OUT/lineage.log 2>&1
echo "bench exit $?" >> $OUT/lineage.log; tail -12 $OUT/lineage.log
timeout -k 10 -s INT ${P_S:-110} python3 benchmarks/solution_kernels_gpu.py 2 .gen23/slow ${IDS2:-6,8,7,90,48} --iters 3 \
  > $OUT/profile.log 2>&1
timeout -k 10 -s INT ${P1_S:-50} python3 benchmarks/solution_kernels_gpu.py 1 benchmarks/results/2026-11-29-conv-level1/solutions \
  ${IDS1:-72,81} --iters 3 >> $OUT/profile.log 2>&1
echo "profile exit $?" >> $OUT/profile.log; grep -E "^## |ms of GPU" $OUT/profile.log | head -40
date -u >> $OUT/env.txt
