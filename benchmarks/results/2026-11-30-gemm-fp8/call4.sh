#!/usr/bin/env bash
# device call 4 (session 26): the block-scaled kernel ran at 0.28x the per-tensor FP8 GEMM in call 3: time it beside
# the per-tensor GEMM on the same 128x128 tiles and with more stages / one consumer, then profile one launch of each
# with Nsight Compute; and the FP8 GPU tests again (call 3's per-tensor test compared torch at a size it refuses)
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; date -u;
  python3 -c "import torch; print(torch.__version__, torch.version.cuda)"; } > $OUT/env.txt 2>&1
timeout -k 10 150 python3 benchmarks/gemm_fp8_profile.py --configs 128,2,4,8 64,1,8,8 > $OUT/profile_times.txt 2>&1; cat $OUT/profile_times.txt | cut -c1-200
timeout -k 10 200 ncu --kernel-name regex:"gemm_fp8|gemm_fused" --launch-count 3 --section SpeedOfLight --section WarpStateStats \
  --section SchedulerStats --section LaunchStats --section Occupancy python3 benchmarks/gemm_fp8_profile.py --launch-only > $OUT/ncu.txt 2>&1
echo "ncu exit $?" >> $OUT/ncu.txt; grep -E "gemm_|Duration|Throughput|Stall|Issued Warp|Eligible|No Eligible|Registers|Warp Cycles" $OUT/ncu.txt | cut -c1-160 | head -60
timeout -k 10 150 python3 -m pytest -q -p no:cacheprovider -n 0 --tb=short tests/kernels/test_gemm_fp8.py -k gpu > $OUT/tests.log 2>&1
echo "fp8 tests exit $?" >> $OUT/tests.log; grep -E "^E  .{0,200}|^FAILED|passed|failed|exit" $OUT/tests.log | cut -c1-300 | head -20
date -u >> $OUT/env.txt
