#!/usr/bin/env bash
# Session 40, call 4: every convolution GPU test (-k gpu) with the flattened tiles planned (and the code generator's
# drained K loops), and the GEMM library's GPU tests of the matmul entry point.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit
export PYTHONPATH=$PWD/src:/tmp/site
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu --format=csv > $OUT/env.txt
timeout 400 python3 -m pytest -q -p no:cacheprovider -n 4 -k gpu tests/kernels/test_conv_im2col.py tests/kernels/test_conv.py tests/kernels/test_conv_implicit.py tests/kernels/test_conv_epilogue.py tests/kernels/test_conv_transposed.py tests/kernels/test_conv_depthwise.py tests/kernels/test_gemm_matmul.py 2>&1 | tail -25 > $OUT/gpu_tests.log
cat $OUT/gpu_tests.log
