#!/usr/bin/env bash
# device call 2 (session 34, single H200): rung 7 at BM = 64 ran 1.7x slower than rung 6 (call 1: one block per SM,
# its launch at 255 registers a thread); rungs 6 and 7 at several tiles and blocks per SM, interleaved with SDPA
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; date -u; } > $OUT/env2.txt 2>&1
timeout -k 5 -s INT 300 python3 benchmarks/attention_lineage_tiles.py --rounds 15 --json $OUT/tiles.json > $OUT/tiles.txt 2>&1
echo "exit $?" >> $OUT/tiles.txt
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> $OUT/env2.txt; date -u >> $OUT/env2.txt
cut -c1-200 $OUT/tiles.txt
