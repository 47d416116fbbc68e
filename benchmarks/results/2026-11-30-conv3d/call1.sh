#!/usr/bin/env bash
# device call 1 (session 24): the f32 implicit kernel's split planes laid out image by image (commit 52c3227, never
# run on a GPU) checked by the GPU tests and timed by conv_implicit_sweep's f32 table; then the 3-d form's sweep
# (conv3d_sweep.py: the 3-d implicit form against the gather path and cuDNN on KernelBench's 3-d convolutions)
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site ARGUS_KERNELBENCH_DIR=$PWD/.kbdata/kernelbench
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; date -u; } > $OUT/env.txt 2>&1
timeout -k 10 170 python3 -m pytest -q -p no:cacheprovider -n 0 tests/kernels/test_conv.py tests/kernels/test_conv_implicit.py \
  tests/kernels/test_conv_transposed.py tests/kernels/test_conv_depthwise.py -k gpu > $OUT/tests.log 2>&1
echo "tests exit $?" >> $OUT/tests.log; tail -3 $OUT/tests.log
timeout -k 10 90 python3 benchmarks/conv_implicit_sweep.py --only-f32 --rounds 10 --json $OUT/f32.json > $OUT/f32.log 2>&1
echo "f32 exit $?" >> $OUT/f32.log; tail -12 $OUT/f32.log
timeout -k 10 300 python3 benchmarks/conv3d_sweep.py --rounds 10 --json $OUT/conv3d.json > $OUT/conv3d.log 2>&1
echo "conv3d exit $?" >> $OUT/conv3d.log; tail -40 $OUT/conv3d.log
date -u >> $OUT/env.txt
