#!/usr/bin/env bash
# device call 5 (session 54, issue #20): held-out check of the cluster rule as committed (after call 3's refinement):
# 40 shapes drawn at random with seed 55 (M, N, K log-uniform in [128, 8192], multiples of 8; 165 drawn, the 40 whose
# choice the rule changes), the heuristic against the same planner without clusters (--unclustered), interleaved
# with cuBLAS; then the GPU tests of the clustered plans and the GEMM library.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
mkdir -p $OUT/call5
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.sm,clocks.mem,driver_version,power.draw,temperature.gpu --format=csv > $OUT/call5/env.txt
date -u >> $OUT/call5/env.txt
timeout -k 5 -s INT 200 python3 benchmarks/gemm_shapes.py --sweep 0 --unclustered --json $OUT/call5/random55.json --shapes \
    2768,4232,2856 7096,2008,1208 2408,1368,4168 1568,192,3832 2336,440,392 208,320,1304 7504,3544,2624 352,1208,2168 1520,368,936 3680,920,6568 656,4728,488 1944,3864,392 2712,2544,1040 1216,160,920 200,160,1336 448,3824,424 3120,6400,4552 2600,1488,2584 3440,4440,1976 2400,7728,1992 4472,328,2568 4032,6240,3296 808,320,1736 1128,4976,3064 360,4008,1448 392,7600,5272 3560,864,3624 1200,1416,1576 3304,400,5176 400,5112,2872 456,240,1048 400,272,4776 1544,344,3192 6840,3352,7096 7760,1776,2440 200,3800,4920 2528,6472,2880 2392,224,5448 4888,256,904 600,136,3064 > $OUT/call5/random55.txt 2>&1
echo "exit $?" >> $OUT/call5/random55.txt
timeout -k 5 -s INT 300 python3 -m pytest -q -p no:cacheprovider -o addopts="" -m gpu tests/kernels/test_gemm_cluster.py \
    > $OUT/call5/gpu_tests.txt 2>&1
echo "exit $?" >> $OUT/call5/gpu_tests.txt
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv >> $OUT/call5/env.txt
grep "geometric\|WRONG\|exit\|Error" $OUT/call5/random55.txt | cut -c1-230; tail -3 $OUT/call5/gpu_tests.txt
