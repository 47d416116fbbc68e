#!/usr/bin/env bash
# device call 4 (session 32, one H200): the GEMM library's GPU tests with the session's final plans (bmm with
# 3-D TMA stores and the L2 rule, swap-AB with 64-row tiles and epilogues, wide K-blocks), then KernelBench level 1
# problem 3 (Batched_matrix_multiplication, f32, 128x512x1024 @ 128x1024x2048) solved by argus solve and judged
# through the gate, against eager (strict fp32) and torch.compile
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"; date -u; } > $OUT/env.txt 2>&1
timeout -k 10 200 python3 -m pytest -q -p no:cacheprovider -n 0 --tb=short tests/kernels/test_gemm_matmul.py \
  tests/kernels/test_gemm_epilogue.py tests/kernels/test_gemm_swap.py -k gpu > $OUT/gpu_tests.log 2>&1
echo "tests exit $?" >> $OUT/gpu_tests.log; tail -n 4 $OUT/gpu_tests.log
timeout -k 10 240 python3 -m argus kernelbench --level 1 --only 3 --generate --solutions $OUT/solutions --trials 3 \
  --reps 20 --timeout 200 --problems .kbdata/kernelbench --csv $OUT/kb3.csv --markdown $OUT/kb3.md > $OUT/kb3.log 2>&1
echo "kernelbench exit $?" >> $OUT/kb3.log; tail -n 12 $OUT/kb3.log | cut -c1-220
date -u >> $OUT/env.txt
