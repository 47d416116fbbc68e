#!/usr/bin/env bash
# device call 3 (session 26): the FP8 GPU tests (per-tensor and row-wise bounds fixed after call 2; the block-scaled
# kernel's test new), then the block-scaled benchmark (DeepSeek-V3's 1x128 / 128x128 scales) on every shape
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; date -u;
  python3 -c "import torch; print(torch.__version__, torch.version.cuda)"; } > $OUT/env.txt 2>&1
timeout -k 10 ${T1:-200} python3 -m pytest -q -p no:cacheprovider -n 0 --tb=short tests/kernels/test_gemm_fp8.py -k gpu > $OUT/tests.log 2>&1
echo "fp8 tests exit $?" >> $OUT/tests.log; grep -E "^E  .{0,200}|^FAILED|passed|failed|exit" $OUT/tests.log | cut -c1-300 | head -20
timeout -k 10 ${T2:-300} python3 benchmarks/gemm_fp8.py --scaling block --json $OUT/fp8_block.json > $OUT/fp8_block.txt 2>&1
echo "bench exit $?" >> $OUT/fp8_block.txt; cut -c1-250 $OUT/fp8_block.txt
date -u >> $OUT/env.txt
