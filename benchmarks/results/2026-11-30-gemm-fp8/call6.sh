#!/usr/bin/env bash
# device call 6 (session 26): a zero fill right before a wgmma is now folded into it (scale-d = 0): the block-scaled
# kernel's per-K-block fill and attention's scores fill. Times of the block-scaled kernel, its Nsight Compute profile,
# and the GPU tests of every kernel the fold changed (FP8, attention, the GEMMs)
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; date -u;
  python3 -c "import torch; print(torch.__version__, torch.version.cuda)"; } > $OUT/env.txt 2>&1
timeout -k 10 150 python3 benchmarks/gemm_fp8_profile.py --configs 128,2,4,8 > $OUT/profile_times.txt 2>&1; cut -c1-200 $OUT/profile_times.txt
timeout -k 10 150 ncu --kernel-name regex:"gemm_fp8" --launch-count 1 --section SpeedOfLight --section WarpStateStats \
  --section SchedulerStats --section InstructionStats python3 benchmarks/gemm_fp8_profile.py --launch-only > $OUT/ncu.txt 2>&1
echo "ncu exit $?" >> $OUT/ncu.txt; grep -E "Duration|Issued Warp|Eligible Warps|Warp Cycles Per Issued|Executed Instructions  |Issued Instructions  |SM Frequency" $OUT/ncu.txt | cut -c1-160 | head -20
timeout -k 10 250 python3 -m pytest -q -p no:cacheprovider -n 0 --tb=short tests/kernels/test_gemm_fp8.py tests/kernels/test_sdpa.py tests/kernels/test_gemm_matmul.py -k gpu > $OUT/tests.log 2>&1
echo "tests exit $?" >> $OUT/tests.log; grep -E "^E  .{0,200}|^FAILED|passed|failed|exit" $OUT/tests.log | cut -c1-300 | head -20
date -u >> $OUT/env.txt
