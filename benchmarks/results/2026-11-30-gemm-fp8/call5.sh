#!/usr/bin/env bash
# device call 5 (session 26): the block-scaled kernel after call 4's profile (issue-bound: ~400 instructions per warp
# per K-block): B's scale one scalar per tile and K-block (was a 128-column vector), the scales loaded while the
# K-block's MMAs run. Times beside the per-tensor GEMM, the block-scaled benchmark, the FP8 GPU tests
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; date -u;
  python3 -c "import torch; print(torch.__version__, torch.version.cuda)"; } > $OUT/env.txt 2>&1
timeout -k 10 150 python3 benchmarks/gemm_fp8_profile.py --configs 128,2,4,8 128,2,6,16 > $OUT/profile_times.txt 2>&1; cut -c1-200 $OUT/profile_times.txt
timeout -k 10 300 python3 benchmarks/gemm_fp8.py --scaling block --json $OUT/fp8_block.json > $OUT/fp8_block.txt 2>&1
echo "bench exit $?" >> $OUT/fp8_block.txt; grep -v "^  \|^- " $OUT/fp8_block.txt | cut -c1-250
timeout -k 10 150 python3 -m pytest -q -p no:cacheprovider -n 0 --tb=short tests/kernels/test_gemm_fp8.py -k gpu > $OUT/tests.log 2>&1
echo "fp8 tests exit $?" >> $OUT/tests.log; grep -E "^E  .{0,200}|^FAILED|passed|failed|exit" $OUT/tests.log | cut -c1-300 | head -20
date -u >> $OUT/env.txt
