#!/usr/bin/env bash
# device call (session 32, one H200): batched GEMM with the 3-D TMA-store epilogue against torch.bmm and against
# the same tiles with direct stores, interleaved (benchmarks/gemm_bmm.py); the bmm GPU tests first
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"; date -u; } > $OUT/env.txt 2>&1
timeout -k 10 200 python3 -m pytest -q -p no:cacheprovider -n 0 --tb=short tests/kernels/test_gemm_matmul.py -k "gpu" > $OUT/gpu_tests.log 2>&1
echo "tests exit $?" >> $OUT/gpu_tests.log; tail -n 4 $OUT/gpu_tests.log
timeout -k 10 240 python3 benchmarks/gemm_bmm.py > $OUT/bmm.txt 2>&1; echo "exit $?" >> $OUT/bmm.txt; grep -v "^compile" $OUT/bmm.txt | cut -c1-260
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> $OUT/env.txt; date -u >> $OUT/env.txt
