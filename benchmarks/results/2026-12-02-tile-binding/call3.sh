#!/usr/bin/env bash
# device call 3 (session 39): the GPU tests of the persistent GEMM and the implicit convolution with the tile bindings;
# then conv_implicit_sweep.py --variants with the bindings (is one block per tile still right for the rows that take
# it, now that the persistent producer is lean?), cuDNN interleaved.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/src:/tmp/site CUDA_VISIBLE_DEVICES=0
{ nvidia-smi --query-gpu=index,name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; date -u; } > $OUT/env3.txt 2>&1
timeout -k 10 150 python3 -m pytest -q -p no:cacheprovider -n 0 --tb=short tests/kernels/test_gemm_persistent_ws.py \
  tests/kernels/test_gemm_matmul.py tests/kernels/test_conv_implicit.py -k gpu > $OUT/gpu_tests.log 2>&1
echo "tests exit $?" >> $OUT/gpu_tests.log; tail -n 3 $OUT/gpu_tests.log
timeout -k 10 380 python3 benchmarks/conv_implicit_sweep.py --variants --json $OUT/conv_variants.json > $OUT/conv_variants.txt 2>&1
echo "exit $?" >> $OUT/conv_variants.txt
grep -E "geomean|^exit" $OUT/conv_variants.txt
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> $OUT/env3.txt; date -u >> $OUT/env3.txt
