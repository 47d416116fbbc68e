#!/usr/bin/env bash
# device call 3 (session 34, single H200): rung 7 at its new default (blocks per SM from shared memory and the
# consumers' registers: three at D = 64) through the gate beside rung 6, the shapes of call 1
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1
mkdir -p $OUT/c3
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; date -u; } > $OUT/c3/env.txt 2>&1
for k in attention_warp_specialized attention_tma_wgmma; do
  timeout -k 5 -s INT 150 python3 -m argus bench $k --shapes "BH=16,S=2048;BH=32,S=4096" --trials 1 --reps 7 --markdown $OUT/c3/$k.md > $OUT/c3/$k.log 2>&1
  echo "exit $?" >> $OUT/c3/$k.log
done
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> $OUT/c3/env.txt; date -u >> $OUT/c3/env.txt
tail -n 3 $OUT/c3/*.md | cut -c1-330; grep -h exit $OUT/c3/*.log
