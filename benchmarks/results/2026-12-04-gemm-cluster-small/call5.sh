#!/usr/bin/env bash
# device call 5 (session 52, issue #20): every choice `matmul.wave_tiles` changes among shapes drawn at random (seed
# 52, M, N, K log-uniform in [128, 8192], multiples of 8: 24 changed of 171 drawn), the heuristic with and without
# them (--unwaved), interleaved with cuBLAS.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
mkdir -p $OUT/call5
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.sm,clocks.mem,driver_version,power.draw,temperature.gpu --format=csv > $OUT/call5/env.txt
date -u >> $OUT/call5/env.txt
timeout -k 5 -s INT 560 python3 benchmarks/gemm_shapes.py --shapes 720,4528,5368 2088,5008,1232 1952,1160,856 \
    2240,7992,488 1432,4232,2296 352,3368,3512 696,1888,3088 968,5136,5408 248,5472,456 504,7040,6496 1360,7720,4608 \
    6672,2448,632 168,152,792 2352,7560,2784 128,2912,1128 1400,1760,6944 296,3896,352 1280,2568,984 2928,664,2128 \
    2656,2608,1952 160,160,1936 2968,4504,4840 1040,5840,472 1696,312,696 --sweep 2 --unwaved \
    --json $OUT/call5/tiles.json > $OUT/call5/tiles.txt 2>&1
echo "exit $?" >> $OUT/call5/tiles.txt
grep -v "^    " $OUT/call5/tiles.txt | tail -n 32 | cut -c1-220
