#!/usr/bin/env bash
# device call 7 (session 52): which configurations are wrong at K = 232 (call 6's WRONG rows)? k_tail_check.py.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
mkdir -p $OUT/call7
date -u > $OUT/call7/env.txt
timeout -k 5 -s INT 560 python3 benchmarks/results/2026-12-04-gemm-cluster-small/k_tail_check.py > $OUT/call7/check.txt 2>&1
echo "exit $?" >> $OUT/call7/check.txt
cut -c1-600 $OUT/call7/check.txt
