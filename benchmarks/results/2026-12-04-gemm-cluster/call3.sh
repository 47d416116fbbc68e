#!/usr/bin/env bash
# device call 3 (session 54, issue #20): the planner with 2-block clusters (`matmul.cluster_choice`: rows 16 bytes past
# a multiple of 32, split-K of >= 16 splits, 128x256-class tiles over >= 2 waves) against the same planner without
# them (--unclustered), interleaved with cuBLAS: the issue's suite, the table, held-out, mid and layout suites, and
# 36 shapes drawn at random (seed 54; M, N, K log-uniform in [128, 8192], multiples of 8) whose choice it changes.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
mkdir -p $OUT/call3
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.sm,clocks.mem,driver_version,power.draw,temperature.gpu --format=csv > $OUT/call3/env.txt
date -u >> $OUT/call3/env.txt
for suite in issue table heldout mid layouts; do
  timeout -k 5 -s INT 100 python3 benchmarks/gemm_shapes.py --suite $suite --sweep 0 --unclustered \
      --json $OUT/call3/$suite.json > $OUT/call3/$suite.txt 2>&1
  echo "exit $?" >> $OUT/call3/$suite.txt
done
timeout -k 5 -s INT 150 python3 benchmarks/gemm_shapes.py --sweep 0 --unclustered --json $OUT/call3/random.json --shapes \
    5720,224,1288 952,6904,616 5672,4936,2592 2352,816,1416 7624,344,1768 5272,576,136 4160,5944,4256 432,552,3096 \
    176,160,1048 328,872,248 6976,1008,536 448,400,3304 3520,3424,6144 4168,1520,1976 728,408,3592 3184,1296,6120 \
    3856,2336,192 208,264,2344 2816,472,312 1744,272,4760 176,144,1032 1000,240,200 2072,6176,440 144,232,5224 \
    2840,8152,7664 496,2176,3032 2648,3080,2328 1072,7176,840 1216,776,296 392,648,3576 744,464,232 152,2472,552 \
    576,480,440 3464,6480,1152 5408,6744,192 1304,1736,4216 > $OUT/call3/random.txt 2>&1
echo "exit $?" >> $OUT/call3/random.txt
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv >> $OUT/call3/env.txt
cd $OUT && tar czf call3.tgz call3 && rm -rf call3/*.json
for f in issue table heldout mid layouts random; do grep "geometric\|WRONG\|exit\|Error" $OUT/call3/$f.txt | cut -c1-230; done
