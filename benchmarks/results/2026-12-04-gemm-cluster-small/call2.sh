#!/usr/bin/env bash
# device call 2 (session 52, issue #20): why is 1000^3 40 % slower than 1024^3 for the planner (call 1: 0.0131 vs
# 0.0094 ms, the same 64x128x128 tile and 128 tiles) where cuBLAS is 20 % slower? Each dimension made 1000 apart:
# the heuristic and the 6 next-ranked configurations timed interleaved with cuBLAS (gemm_shapes.py).
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
mkdir -p $OUT/call2
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.sm,clocks.mem,driver_version,power.draw,temperature.gpu --format=csv > $OUT/call2/env.txt
date -u >> $OUT/call2/env.txt
timeout -k 5 -s INT 540 python3 benchmarks/gemm_shapes.py --shapes 1024,1024,1024 1000,1000,1000 1000,1024,1024 \
    1024,1000,1024 1024,1024,1000 1000,1000,1024 1024,1024,1008 1008,1008,1008 --sweep 6 --json $OUT/call2/shapes.json \
    > $OUT/call2/shapes.txt 2>&1
echo "exit $?" >> $OUT/call2/shapes.txt
tail -n 60 $OUT/call2/shapes.txt | cut -c1-200
