#!/usr/bin/env bash
# device call 4 (session 52, issue #20): the planner with tiles narrowed to fill the SMs' waves (`matmul.wave_tiles`,
# MMA_EFFICIENCY fitted at 64x160 and 64x224 from call 3), at shapes call 3 did not time (held out) and at call 3's,
# against the heuristic without them (--unwaved), every tile's best candidate and cuBLAS, interleaved.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
mkdir -p $OUT/call4
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.sm,clocks.mem,driver_version,power.draw,temperature.gpu --format=csv > $OUT/call4/env.txt
date -u >> $OUT/call4/env.txt
timeout -k 5 -s INT 560 python3 benchmarks/gemm_shapes.py --shapes 384,3072,1024 768,3072,2048 1152,1152,2048 \
    512,2304,1536 1024,2048,1024 320,5120,2048 1920,1536,1024 960,1920,1920 576,4608,1024 1408,2816,1024 \
    768,1536,1024 1536,1536,2048 256,7168,2048 640,2560,2048 4096,4096,4096 --sweep 4 --every-tile --unwaved \
    --json $OUT/call4/tiles.json > $OUT/call4/tiles.txt 2>&1
echo "exit $?" >> $OUT/call4/tiles.txt
grep -v "^    " $OUT/call4/tiles.txt | tail -n 30 | cut -c1-220
