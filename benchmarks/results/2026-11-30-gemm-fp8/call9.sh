#!/usr/bin/env bash
# device call 9 (session 26): the FP8 grouped GEMM (row-wise scales) for MoE: its GPU tests, then against
# torch._scaled_grouped_mm on the MoE shapes and routings
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; date -u;
  python3 -c "import torch; print(torch.__version__, torch.version.cuda)"; } > $OUT/env.txt 2>&1
timeout -k 10 150 python3 -m pytest -q -p no:cacheprovider -n 0 --tb=short tests/kernels/test_grouped.py -k gpu > $OUT/tests.log 2>&1
echo "tests exit $?" >> $OUT/tests.log; grep -E "^E  .{0,200}|^FAILED|passed|failed|exit" $OUT/tests.log | cut -c1-300 | head -20
timeout -k 10 380 python3 benchmarks/grouped_fp8.py --json $OUT/grouped_fp8.json > $OUT/grouped_fp8.txt 2>&1
echo "bench exit $?" >> $OUT/grouped_fp8.txt; cut -c1-260 $OUT/grouped_fp8.txt
date -u >> $OUT/env.txt
