#!/usr/bin/env bash
# Session 73, call 3: KLineage's walk of the convolution expert rung (conv_tma_store_epilogue) on the GPU, each of
# its twelve steps checked to remove one mechanism, gated (verified, correct) and timed at the conv2d_nhwc task's
# first benchmark size (KLineage's N = 8, 56x56, 64 -> 128), and the skills it mines with their measured effects.
set -u
export PYTHONPATH=$PWD/.z3:$PWD/src PYTHONUNBUFFERED=1
R=$OUT
mkdir -p $R/walk
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv > $R/walk/env.txt 2>&1
timeout 380 python3 benchmarks/lineage_walk.py conv_tma_store_epilogue $R/walk --steps 12 --reps 10 \
  > $R/walk/walk.log 2>&1
echo "exit $?" >> $R/walk/walk.log
grep -v "^  try" $R/walk/walk.log | tail -n 20 | cut -c1-220
cd $R && tar czf walk.tgz walk && rm -rf walk
