#!/usr/bin/env bash
# device call 4 (session 48, issue #20): Nsight Compute on 512x512x65536's GEMM kernels (no programmatic dependent
# launches): cuBLAS's split-K kernel against argus's heuristic (128x256 split16) and the same decomposition as
# cuBLAS's (128x128x128 split8): throughput against the ceilings, stall reasons.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
mkdir -p $OUT/call4
timeout -k 10 300 ncu --clock-control none --kernel-name regex:"gemm_warp|nvjet" --launch-skip 0 --launch-count 12 \
  --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section LaunchStats --section Occupancy \
  python3 benchmarks/gemm_kernel_times.py --shapes 512,512,65536 --top 3 --launch-only --no-pdl > $OUT/call4/ncu.txt 2>&1
echo "ncu exit $?" >> $OUT/call4/ncu.txt
grep -E "^  [a-z_]|nvjet|gemm_|Duration|Throughput|Stall|Issued Warp|Eligible|Registers|Warp Cycles|Hit Rate|Block Size|Grid Size|Shared Memory Config|Dynamic Shared|L2 Compression|Busy|Bandwidth" $OUT/call4/ncu.txt | cut -c1-150 | head -150
