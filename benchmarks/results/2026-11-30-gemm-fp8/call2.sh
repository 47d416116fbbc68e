#!/usr/bin/env bash
# device call 2 (session 26): call 1 found per-tensor scales read as ints (C all zeros); fixed. The FP8 GPU tests
# again, then the benchmark with per-tensor scales (the heuristic, GROUP 16 on it, and the 3 configurations ranked
# next), then the bf16 GEMM's GPU tests (nothing there may have moved)
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; date -u;
  python3 -c "import torch; print(torch.__version__, torch.version.cuda)"; } > $OUT/env.txt 2>&1
timeout -k 10 ${T1:-150} python3 -m pytest -q -p no:cacheprovider -n 0 --tb=short tests/kernels/test_gemm_fp8.py -k gpu > $OUT/tests.log 2>&1
echo "fp8 tests exit $?" >> $OUT/tests.log; grep -E "^E |Error|^FAILED|passed|failed|exit" $OUT/tests.log | cut -c1-300 | head -20
timeout -k 10 ${T2:-300} python3 benchmarks/gemm_fp8.py --sweep ${SWEEP:-3} --groups 16 --json $OUT/fp8_tensor.json > $OUT/fp8_tensor.txt 2>&1
echo "bench exit $?" >> $OUT/fp8_tensor.txt; grep -v "^  " $OUT/fp8_tensor.txt | cut -c1-250
timeout -k 10 ${T3:-150} python3 -m pytest -q -p no:cacheprovider -n 0 --tb=short tests/kernels/test_gemm_matmul.py tests/kernels/test_gemm_epilogue.py -k gpu > $OUT/tests_bf16.log 2>&1
echo "bf16 tests exit $?" >> $OUT/tests_bf16.log; grep -E "^FAILED|passed|failed|exit" $OUT/tests_bf16.log | cut -c1-300 | head
date -u >> $OUT/env.txt
