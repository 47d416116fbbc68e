#!/usr/bin/env bash
# device call 5 (session 30): Nsight Compute on the plan's kernels at decode and small shapes (where argus is below
# 0.90x cuBLAS) and on cuBLAS's, for the next session: memory throughput, occupancy, stall reasons
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"; ncu --version | tail -1; date -u; } > $OUT/env.txt 2>&1
timeout -k 10 60 python3 benchmarks/gemm_decode_profile.py > $OUT/warm.txt 2>&1  # compile once outside the profiler
timeout -k 10 240 ncu --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section WarpStateStats \
  --section LaunchStats python3 benchmarks/gemm_decode_profile.py > $OUT/ncu.txt 2>&1
echo "ncu exit $?" >> $OUT/ncu.txt
grep -E "^  [a-zA-Z_].*\(|Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Registers Per|Grid Size|Block Size|Stall|Warp Cycles Per Issued" $OUT/ncu.txt | cut -c1-150 | head -150
date -u >> $OUT/env.txt
