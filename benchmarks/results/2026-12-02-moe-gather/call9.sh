#!/usr/bin/env bash
# device call 9 (session 44, issue #20): `pad_copy` with 16 bytes of accesses per thread (several 2-byte ones where
# rows are an odd number of bf16 elements; before, one 2-byte access per thread: 512-byte blocks). The GEMM GPU tests
# of the padded paths, then the products with an odd K (every row of A and B copied) interleaved with cuBLAS; call 8
# and session 43 timed the same shapes with the narrow copies.
set -u
python3 -m pip install -q --upgrade --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl-z3/*.whl
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=index,name,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; python3 -c "import torch; print('torch', torch.__version__)"; date -u; } > $OUT/env9.txt 2>&1
timeout -k 10 200 python3 -m pytest -q -p no:cacheprovider -n 8 tests/kernels/test_gemm_pitch.py tests/kernels/test_gemm_matmul.py \
  tests/kernels/test_conv.py -k gpu -rfE > $OUT/tests9.txt 2>&1
echo "exit $?" >> $OUT/tests9.txt; tail -n 4 $OUT/tests9.txt
timeout -k 10 300 python3 benchmarks/gemm_shapes.py --shapes 123,8620,50345 98,220,20221 91,476,16847 2049,3071,4097 \
  777,1999,3001 8205,5921,2949 4095,4095,4095 1001,1001,1001 --sweep 0 --json $OUT/oddk9.json > $OUT/oddk9.txt 2>&1
echo "exit $?" >> $OUT/oddk9.txt; grep -v "^compile" $OUT/oddk9.txt | cut -c1-200 | tail -n 14
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> $OUT/env9.txt; date -u >> $OUT/env9.txt
