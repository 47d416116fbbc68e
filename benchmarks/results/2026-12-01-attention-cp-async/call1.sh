#!/usr/bin/env bash
# device call (session 32, single H200): the attention lineage's cp.async rung through the gate against SDPA (bf16
# in, D = 64), the mma.sync rung below it in the same call; then the GEMM suites with WIDE_K_MIN_STAGES = 3
# (../2026-12-01-wide-k/, call 4)
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; python3 -c "import torch,sys,typer; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version(), 'typer', typer.__version__, 'python', sys.version.split()[0])"; date -u; } > $OUT/env.txt 2>&1
for k in attention_cp_async attention_mma_sync; do
  timeout -k 5 -s INT 100 python3 -m argus bench $k --shapes "BH=16,S=2048" --trials 1 --reps 5 --markdown $OUT/$k.md > $OUT/$k.log 2>&1
  echo "exit $?" >> $OUT/$k.log
done
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> $OUT/env.txt; date -u >> $OUT/env.txt
tail -n 8 $OUT/*.md $OUT/*.log | cut -c1-250
CUDA_VISIBLE_DEVICES=0 timeout -k 10 300 python3 benchmarks/gemm_shapes.py --suite all --sweep 0 --budget 0.5 \
  --wide-k --json $OUT/suite4.json > $OUT/suite4.txt 2>&1
echo "exit $?" >> $OUT/suite4.txt; grep -E "geometric|exit" $OUT/suite4.txt
