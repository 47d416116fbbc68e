#!/usr/bin/env bash
# device call 1 (session 26): the FP8 GEMM's GPU tests, then the FP8 benchmark against torch._scaled_mm (per-tensor
# scales, then row-wise scales on the shapes), then the bf16 GEMM's GPU tests (nothing there may have moved)
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; date -u;
  python3 -c "import torch; print(torch.__version__, torch.version.cuda)"; } > $OUT/env.txt 2>&1
timeout -k 10 ${T1:-150} python3 -m pytest -q -p no:cacheprovider -n 0 --tb=short tests/kernels/test_gemm_fp8.py -k gpu > $OUT/tests.log 2>&1
echo "fp8 tests exit $?" >> $OUT/tests.log; grep -E "^E |Error|^FAILED|passed|failed|exit" $OUT/tests.log | cut -c1-400 | head -30
timeout -k 10 ${T2:-260} python3 benchmarks/gemm_fp8.py --sweep ${SWEEP:-3} --json $OUT/fp8_tensor.json > $OUT/fp8_tensor.txt 2>&1
echo "bench exit $?" >> $OUT/fp8_tensor.txt; grep -v "^  " $OUT/fp8_tensor.txt | cut -c1-250
timeout -k 10 ${T3:-100} python3 benchmarks/gemm_fp8.py --sweep 0 --scaling row --shapes 4096,4096,4096 8192,8192,8192 8192,28672,8192 8192,8192,28672 --json $OUT/fp8_row.json > $OUT/fp8_row.txt 2>&1
echo "bench exit $?" >> $OUT/fp8_row.txt; tail -8 $OUT/fp8_row.txt | cut -c1-250
date -u >> $OUT/env.txt
