#!/usr/bin/env bash
# device call 5 (session 32, one H200): the GEMM library's GPU tests with this session's plans (wide K-blocks,
# swap-AB with a fused epilogue through the split reduction), then the 64-row swap tiles (one consumer) with wide
# K-blocks against the planner's 128-row ones at the skinny shapes (gemm_shapes --swap --swap-narrow)
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"; date -u; } > $OUT/env5.txt 2>&1
timeout -k 10 240 python3 -m pytest -q -p no:cacheprovider -n 0 --tb=short tests/kernels/test_gemm_epilogue.py \
  tests/kernels/test_gemm_swap.py tests/kernels/test_gemm_matmul.py tests/kernels/test_gemm_wide_k.py -k gpu > $OUT/gpu_tests.log 2>&1
echo "tests exit $?" >> $OUT/gpu_tests.log; tail -n 6 $OUT/gpu_tests.log
SHAPES="8,8192,8192 32,4096,14336 64,8192,8192 96,7168,7168 128,4096,4096"
CUDA_VISIBLE_DEVICES=0 timeout -k 10 200 python3 benchmarks/gemm_shapes.py --shapes $SHAPES --sweep 0 --budget 0.4 \
  --swap --swap-narrow --json $OUT/narrow.json > $OUT/narrow.txt 2>&1
echo "exit $?" >> $OUT/narrow.txt; grep -v "^compile" $OUT/narrow.txt | cut -c1-220 | tail -n 9
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> $OUT/env5.txt; date -u >> $OUT/env5.txt
