#!/usr/bin/env bash
# device call (session 34, single H200): the attention lineage's warp-specialized rung (7) through the gate beside the
# TMA + wgmma rung (6) below it, at the rungs' default tiles (BM = BN = 64, two stages), two shapes
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; python3 -c "import torch,sys,typer,z3; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version(), 'typer', typer.__version__, 'z3', z3.get_version_string(), 'python', sys.version.split()[0])"; date -u; } > $OUT/env.txt 2>&1
for k in attention_warp_specialized attention_tma_wgmma; do
  timeout -k 5 -s INT 150 python3 -m argus bench $k --shapes "BH=16,S=2048;BH=32,S=4096" --trials 1 --reps 7 --markdown $OUT/$k.md > $OUT/$k.log 2>&1
  echo "exit $?" >> $OUT/$k.log
done
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> $OUT/env.txt; date -u >> $OUT/env.txt
tail -n 5 $OUT/*.md | cut -c1-400; grep -h exit $OUT/*.log
