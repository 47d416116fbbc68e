#!/usr/bin/env bash
# device call 1 (session 54, issue #20): the persistent GEMM in 2-block clusters sharing B (GemmConfig.CLUSTER = 2:
# multicast TMA loads of B, the pair's empty barriers) against the same configurations without, on the issue's bf16
# suite and the opening table, interleaved with cuBLAS; every contender checked against the f32 product first.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
mkdir -p $OUT/call1
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.sm,clocks.mem,driver_version,power.draw,temperature.gpu --format=csv > $OUT/call1/env.txt
date -u >> $OUT/call1/env.txt
timeout -k 5 -s INT 540 python3 benchmarks/gemm_shapes.py --suite issue --sweep 1 --cluster \
    --json $OUT/call1/issue.json > $OUT/call1/issue.txt 2>&1
echo "exit $?" >> $OUT/call1/issue.txt
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv >> $OUT/call1/env.txt
grep -v "^    " $OUT/call1/issue.txt | tail -n 40 | cut -c1-250
