#!/usr/bin/env bash
# device call 6 (session 44): the convolution and GEMM GPU tests since session 43's change (a plan's padding copies
# are pad_copy launches of the plan: convolutions whose GEMM has an unaligned K take them), and the MoE ones again
# on this commit.
set -u
python3 -m pip install -q --upgrade --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl-z3/*.whl
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=index,name,driver_version,clocks.max.sm --format=csv; python3 -c "import torch; print('torch', torch.__version__)"; date -u; } > $OUT/env6.txt 2>&1
timeout -k 10 480 python3 -m pytest -q -p no:cacheprovider -n 8 tests/kernels/test_conv.py tests/kernels/test_conv_implicit.py \
  tests/kernels/test_conv_im2col.py tests/kernels/test_conv_depthwise.py tests/kernels/test_gemm_pitch.py \
  tests/kernels/test_gemm_matmul.py tests/kernels/test_moe_gather.py tests/kernels/test_moe_layer.py \
  tests/kernels/test_grouped.py -k gpu -rfE > $OUT/tests6.txt 2>&1
echo "exit $?" >> $OUT/tests6.txt; tail -n 25 $OUT/tests6.txt
