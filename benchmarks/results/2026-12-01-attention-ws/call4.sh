#!/usr/bin/env bash
# device call 4 (session 34, single H200): rungs 6 and 7 at D = 128 (rung 6 keeps two blocks per SM there by shared
# memory, rung 7 two by its default), interleaved with SDPA
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1
mkdir -p $OUT/c4
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; date -u; } > $OUT/c4/env.txt 2>&1
timeout -k 5 -s INT 200 python3 benchmarks/attention_lineage_tiles.py --d 128 --rounds 15 --shapes 16,2048 32,4096 8,8192 \
  --variants attention_tma_wgmma: attention_tma_wgmma:BM=128 attention_warp_specialized: attention_warp_specialized:BLOCKS_PER_SM=1 attention_warp_specialized:BM=128 attention_warp_specialized:BM=128,STAGES=3 \
  --json $OUT/c4/tiles_d128.json > $OUT/c4/tiles_d128.txt 2>&1
echo "exit $?" >> $OUT/c4/tiles_d128.txt
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> $OUT/c4/env.txt; date -u >> $OUT/c4/env.txt
grep -v Warning $OUT/c4/tiles_d128.txt | grep -v "sdpa(\*qkv)" | cut -c1-200
