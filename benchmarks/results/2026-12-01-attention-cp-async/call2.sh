#!/usr/bin/env bash
# device call 2 (session 32, single H200): the attention lineage's swizzle rung through the gate against SDPA (bf16
# in, D = 64), the cp.async rung below it in the same call
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; python3 -c "import torch,sys,typer; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version(), 'typer', typer.__version__, 'python', sys.version.split()[0])"; date -u; } > $OUT/env.txt 2>&1
for k in attention_swizzle attention_cp_async; do
  timeout -k 5 -s INT 100 python3 -m argus bench $k --shapes "BH=16,S=2048" --trials 1 --reps 5 --markdown $OUT/$k.md > $OUT/$k.log 2>&1
  echo "exit $?" >> $OUT/$k.log
done
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> $OUT/env.txt; date -u >> $OUT/env.txt
tail -n 8 $OUT/*.md $OUT/*.log | cut -c1-250
