#!/usr/bin/env bash
# device call 3 (session 30): gemv_rows_tma with PARTIAL (per-lane f32 sums kept across stages, one shuffle sum at the end), against cuBLAS and
# against the plan's choice (the tensor-core GEMM for bf16 today) at decode and matrix-vector shapes, bf16
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=index,name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"; date -u; } > $OUT/env.txt 2>&1
SHAPES="1,4096,4096 1,8192,8192 2,4096,14336 4,11008,4096 8,8192,8192 8,4096,14336 1,14336,4096 6,5120,5120 4,128256,4096 4096,1,4096 8192,1,8192"
CUDA_VISIBLE_DEVICES=0 timeout -k 10 ${RUN_S:-500} python3 benchmarks/gemm_shapes.py --shapes $SHAPES --sweep 1 --budget 0.4 \
  --gemv-tma --json $OUT/shapes.json > $OUT/shapes.txt 2>&1
echo "exit $?" >> $OUT/shapes.txt; timeout -k 10 200 python3 -m pytest -q -p no:cacheprovider -n 0 --tb=short tests/kernels/test_gemv.py -k gpu > $OUT/tests.log 2>&1; echo "tests exit $?" >> $OUT/tests.log; tail -n 3 $OUT/tests.log; grep -v "^compile" $OUT/shapes.txt | cut -c1-400 | tail -n 45
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> $OUT/env.txt; date -u >> $OUT/env.txt
