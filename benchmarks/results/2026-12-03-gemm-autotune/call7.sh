#!/usr/bin/env bash
# device call 7 (session 48): after the L2 promotion switch became bytes (tensor maps encoded from the enum's value):
# two GEMM shapes through the plan, checked and timed against cuBLAS, and the grouped GEMM and GEMM GPU tests.
set -u
python3 -m pip install -q --upgrade --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl-z3/*.whl > /dev/null 2>&1
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1
mkdir -p $OUT/call7
timeout -k 5 -s INT 200 python3 benchmarks/gemm_shapes.py --shapes 4096,4096,4096 1000,1000,1000 6000,6000,3000 --sweep 0 > $OUT/call7/shapes.txt 2>&1
echo "exit $?" >> $OUT/call7/shapes.txt
timeout -k 5 300 python3 -m pytest -q -p no:cacheprovider -n 0 -o addopts="" tests/kernels/test_grouped.py tests/kernels/test_gemm_matmul.py tests/kernels/test_gemm_pitch.py -k gpu > $OUT/call7/gpu_tests.txt 2>&1
echo "exit $?" >> $OUT/call7/gpu_tests.txt
tail -n 8 $OUT/call7/shapes.txt | cut -c1-200; tail -n 4 $OUT/call7/gpu_tests.txt
