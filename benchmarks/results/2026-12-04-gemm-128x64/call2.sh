#!/usr/bin/env bash
# device call 2 (session 51, issue #20): Nsight Compute at the small products below 0.90x (1000^3, 768x1536x1024):
# cuBLAS's kernel against the heuristic's (no programmatic dependent launches): duration, throughput against the
# ceilings, warp states, launch and occupancy.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
mkdir -p $OUT/call2
timeout -k 10 300 ncu --clock-control none --kernel-name regex:"gemm_warp|nvjet|gemm_" --launch-skip 0 --launch-count 8 \
  --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section LaunchStats --section Occupancy \
  python3 benchmarks/gemm_kernel_times.py --shapes 1000,1000,1000 768,1536,1024 --top 0 --launch-only --no-pdl > $OUT/call2/ncu.txt 2>&1
echo "ncu exit $?" >> $OUT/call2/ncu.txt
grep -E "^  [a-z_]|nvjet|gemm_|Duration|Throughput|Stall|Issued Warp|Eligible|Active Warps|No Eligible|Registers|Warp Cycles|Block Size|Grid Size|Cluster|Dynamic Shared|Elapsed Cycles|SM Active" $OUT/call2/ncu.txt | cut -c1-150 | head -160
