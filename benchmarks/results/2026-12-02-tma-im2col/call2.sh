#!/usr/bin/env bash
# device call 2 (session 39): a DSL kernel's im2col load (X.im2col, tests/kernels/test_im2col_load.py) on the H200
# against the interpreter, and the raw probe again (tests/runtime/test_tma_im2col.py, its hardware test).
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/src:/tmp/site CUDA_VISIBLE_DEVICES=0
{ nvidia-smi --query-gpu=index,name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; date -u; } > $OUT/env2.txt 2>&1
timeout -k 10 240 python3 -m pytest -q -p no:cacheprovider -n 0 --tb=long tests/kernels/test_im2col_load.py \
  tests/runtime/test_tma_im2col.py -k "gpu or hardware" > $OUT/im2col_dsl_tests.log 2>&1
echo "tests exit $?" >> $OUT/im2col_dsl_tests.log; tail -n 30 $OUT/im2col_dsl_tests.log
