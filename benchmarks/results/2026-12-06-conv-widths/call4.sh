#!/usr/bin/env bash
# Session 65, call 4 (for the next slice, not for this one's numbers): Nsight Compute on the H100 for the two
# 64-filter rows still far from cuDNN, argus's planned kernel and cuDNN's, one profiled launch each
# (benchmarks/conv_ncu_target.py), with the launch statistics (grid, block, shared memory, registers), speed of
# light, warp states and the memory workload.
export PYTHONPATH=$PWD/.z3:$PWD/src
for row in "r50 3x3 64->64 56" "r50 1x1 64->256 56"; do
  f=$OUT/ncu_$(echo "$row" | tr -c 'a-z0-9' '_').txt
  timeout 200 ncu --clock-control none --profile-from-start off --section LaunchStats --section SpeedOfLight \
    --section WarpStateStats --section Occupancy --section MemoryWorkloadAnalysis \
    python3 benchmarks/conv_ncu_target.py --row "$row" > "$f" 2>&1
  grep -E "^  [a-z_]|Duration|Grid Size|Block Size|Registers|Shared Memory Config|Dynamic Shared|Compute \(SM\) Th|Memory Th" "$f" | head -40
done
