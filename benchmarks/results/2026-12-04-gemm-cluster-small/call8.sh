#!/usr/bin/env bash
# device call 8 (session 52): the staged TMA store's chunk 0 waits for every earlier store (wait_group.read 0; it was
# read 1, and a 64-column tile's one chunk reused the buffer its previous store was still reading: call 7). Are the
# products right now (k_tail_check.py), and is the TMA-store epilogue as fast (gemm_shapes.py, the heuristic with
# every tile's best candidate, interleaved with cuBLAS, at shapes earlier calls timed)?
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
mkdir -p $OUT/call8
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.sm,clocks.mem,driver_version,power.draw,temperature.gpu --format=csv > $OUT/call8/env.txt
date -u >> $OUT/call8/env.txt
timeout -k 5 -s INT 200 python3 benchmarks/results/2026-12-04-gemm-cluster-small/k_tail_check.py > $OUT/call8/check.txt 2>&1
echo "exit $?" >> $OUT/call8/check.txt
timeout -k 5 -s INT 340 python3 benchmarks/gemm_shapes.py --shapes 4096,4096,4096 2048,2048,2048 1024,1024,1024 \
    1536,1536,2048 768,1536,1024 672,3104,232 1112,2064,232 4096,4096,232 --sweep 2 --every-tile \
    --json $OUT/call8/tiles.json > $OUT/call8/tiles.txt 2>&1
echo "exit $?" >> $OUT/call8/tiles.txt
cut -c1-300 $OUT/call8/check.txt
grep -v "^    " $OUT/call8/tiles.txt | tail -n 14 | cut -c1-200
