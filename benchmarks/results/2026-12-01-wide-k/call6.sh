#!/usr/bin/env bash
# device call 6 (session 32, one H200): the plan with 64-row swap tiles in swap_choice (matmul.swap_tiles), on
# every suite and on skinny shapes outside them, with the other swap plans timed beside it (--swap)
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"; date -u; } > $OUT/env6.txt 2>&1
SHAPES="48,1024,65536 104,4096,4096 16,2048,2048 96,1024,4096 64,4096,8192 24,8192,2048 80,14336,4096 8,28672,8192"
CUDA_VISIBLE_DEVICES=0 timeout -k 10 200 python3 benchmarks/gemm_shapes.py --shapes $SHAPES --sweep 0 --budget 0.4 \
  --swap --json $OUT/skinny6.json > $OUT/skinny6.txt 2>&1
echo "exit $?" >> $OUT/skinny6.txt; grep -v "^compile" $OUT/skinny6.txt | cut -c1-220 | tail -n 12
CUDA_VISIBLE_DEVICES=0 timeout -k 10 240 python3 benchmarks/gemm_shapes.py --suite all --sweep 0 --budget 0.5 \
  --json $OUT/suite6.json > $OUT/suite6.txt 2>&1
echo "exit $?" >> $OUT/suite6.txt; grep -E "geometric|exit| swap" $OUT/suite6.txt | cut -c1-200
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> $OUT/env6.txt; date -u >> $OUT/env6.txt
