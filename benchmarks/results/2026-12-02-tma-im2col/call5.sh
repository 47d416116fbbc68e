#!/usr/bin/env bash
# device call 5 (session 39): the start bound once (T.let of X.im2col_pixel) again: the GPU tests
# of the im2col load, then conv_im2col_probe.py again (the 3x3 and 1x1 rows at batch 32).
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/src:/tmp/site CUDA_VISIBLE_DEVICES=0
{ nvidia-smi --query-gpu=index,name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; date -u; } > $OUT/env5.txt 2>&1
timeout -k 10 200 python3 -m pytest -q -p no:cacheprovider -n 0 --tb=short tests/kernels/test_im2col_load.py \
  tests/runtime/test_tma_im2col.py -k "gpu or hardware" > $OUT/gpu_tests5.log 2>&1
echo "tests exit $?" >> $OUT/gpu_tests5.log; tail -n 3 $OUT/gpu_tests5.log
timeout -k 10 300 python3 benchmarks/conv_im2col_probe.py --json $OUT/probe5.json > $OUT/probe5.txt 2>&1
echo "exit $?" >> $OUT/probe5.txt
grep -E "^\| r50|^\| KL|ResNet|exit" $OUT/probe5.txt | cut -c1-200
